//! What the exit door reports as it goes, beside the request it serves: the governor's
//! readings of an identity (throttled), one usage record per round trip and every rate-limit
//! event. Reports never fail the request.
//!
//! What is reported under a credential's provisional key (its owner being learned, see
//! `identity`) is held back instead: no reading is handed over at all (the owner's, fed the
//! same response, is), and usage records and events go over once the discovery ends — as the
//! owner's when it was learned, else as the credential's own.

use std::collections::HashMap;

use headroom_core::QuotaKey;
use headroom_core::clock::Clock as _;
use headroom_core::signal::RateLimitSignal;

use super::Client;
use super::identity::is_provisional;
use crate::error::{ApiError, RateLimitReason};
use crate::request::ApiRequest;
use crate::sinks::{RateLimitEvent, RateLimitEventKind, ReadingThrottle, UsageRecord};

/// Usage records and rate-limit events held back per provisional key.
#[derive(Debug, Default)]
pub(super) struct Held {
    by_key: HashMap<QuotaKey, (Vec<UsageRecord>, Vec<RateLimitEvent>)>,
}

impl Client {
    /// Hands the governor's reading of `key` to the readings sink when one is due (a second
    /// since the last) and it changed. A governor that cannot be read is skipped: a reading
    /// is a report, never a reason to fail the request.
    pub(super) async fn report_reading(&self, key: &QuotaKey) {
        if is_provisional(key) {
            return;
        }
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

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.inner.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hands one round trip's usage record to the usage sink (held back under a provisional
    /// key).
    pub(super) async fn report_usage(&self, record: UsageRecord) {
        if is_provisional(&record.key) {
            let mut held = self.held();
            held.by_key
                .entry(record.key.clone())
                .or_default()
                .0
                .push(record);
            return;
        }
        self.parts().usage.record(record).await;
    }

    async fn report_event(&self, event: RateLimitEvent) {
        if is_provisional(&event.key) {
            let mut held = self.held();
            held.by_key
                .entry(event.key.clone())
                .or_default()
                .1
                .push(event);
            return;
        }
        self.parts().rate_limits.record(event).await;
    }

    /// Ends a discovery under `provisional`: hands over what was held back under it, as
    /// `owner`'s when the owner was learned, else under the provisional key itself (nobody
    /// else's quota can be named for it).
    pub(super) async fn settle_provisional(
        &self,
        provisional: &QuotaKey,
        owner: Option<&QuotaKey>,
    ) {
        let Some((usage, events)) = self.held().by_key.remove(provisional) else {
            return;
        };
        let key = owner.unwrap_or(provisional);
        let parts = self.parts();
        for mut record in usage {
            record.key = key.clone();
            parts.usage.record(record).await;
        }
        for mut event in events {
            event.key = key.clone();
            parts.rate_limits.record(event).await;
        }
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
        self.report_event(RateLimitEvent {
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
