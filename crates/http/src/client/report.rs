//! What the exit door reports as it goes, beside the request it serves: the governor's
//! readings of an identity (throttled) and every rate-limit event. Reports never fail the
//! request.

use headroom_core::QuotaKey;
use headroom_core::clock::Clock as _;
use headroom_core::signal::RateLimitSignal;

use super::Client;
use crate::error::{ApiError, RateLimitReason};
use crate::request::ApiRequest;
use crate::sinks::{RateLimitEvent, RateLimitEventKind, ReadingThrottle};

impl Client {
    /// Hands the governor's reading of `key` to the readings sink when one is due (a second
    /// since the last) and it changed. A governor that cannot be read is skipped: a reading
    /// is a report, never a reason to fail the request.
    pub(super) async fn report_reading(&self, key: &QuotaKey) {
        let parts = self.parts();
        let now = parts.clock.now();
        if !self.throttle().due(key, now) {
            return;
        }
        let Ok(snapshot) = parts.governor.snapshot(key).await else {
            return;
        };
        if self.throttle().admit(&snapshot, now) {
            parts
                .readings
                .record(parts.config.provider, snapshot, now)
                .await;
        }
    }

    /// Hands over the reading of every identity this client reported on whose reading changed
    /// since the last one handed over, the spacing notwithstanding. Called when a process goes
    /// quiet (a sync run hibernates or ends, a feed tick is done) and before it exits, so the
    /// last word of a burst — remaining 0, nothing in flight — reaches the dashboard instead
    /// of the reading a second before it.
    pub async fn flush_readings(&self) {
        let parts = self.parts();
        // A permit dropped rather than released (a request cut short) is freed on a task of
        // its own: the last word must not count it, nor may the process exit before it lands.
        parts.governor.settled().await;
        let keys = self.throttle().keys();
        for key in keys {
            let Ok(snapshot) = parts.governor.snapshot(&key).await else {
                continue;
            };
            let now = parts.clock.now();
            if self.throttle().admit_changed(&snapshot, now) {
                parts
                    .readings
                    .record(parts.config.provider, snapshot, now)
                    .await;
            }
        }
    }

    fn throttle(&self) -> std::sync::MutexGuard<'_, ReadingThrottle> {
        self.inner
            .throttle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Hands a rate-limit error to the rate-limit log, with the origin's reading if any.
    pub(super) async fn log_rate_limit(
        &self,
        key: &QuotaKey,
        request: &ApiRequest,
        kind: RateLimitEventKind,
        error: &ApiError,
        signal: Option<&RateLimitSignal>,
    ) {
        let ApiError::RateLimited {
            until,
            bucket,
            reason,
            request_id,
            ..
        } = error
        else {
            return;
        };
        let parts = self.parts();
        let reset_at = signal.and_then(|s| s.reset_at).or(match reason {
            RateLimitReason::Governor(headroom_core::governor::WaitReason::Exhausted {
                reset_at,
                ..
            }) => Some(*reset_at),
            _ => None,
        });
        parts
            .rate_limits
            .record(RateLimitEvent {
                provider: parts.config.provider,
                key: key.clone(),
                credential_fingerprint: request
                    .credential
                    .as_ref()
                    .map(|c| c.fingerprint().to_owned()),
                bucket: bucket.clone(),
                route_family: request.route_family.to_string(),
                dimension: request.dimension,
                kind,
                reason: reason.clone(),
                until: *until,
                retry_after: signal.and_then(|s| s.retry_after),
                reset_at,
                limit: signal.and_then(|s| s.limit),
                remaining: signal.and_then(|s| s.remaining),
                used: signal.and_then(|s| s.used),
                request_id: request_id.clone(),
                at: parts.clock.now(),
            })
            .await;
    }
}
