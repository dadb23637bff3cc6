//! The door's cooldown gate: before a unit of work's first attempt acquires from the
//! governor, the refusals every process recorded for its identity are read (one query per
//! identity a second, cached here) and the pure rule of `headroom_core::cooldown` says
//! whether one still holds the request's route family. A broken read fails open with a log
//! line: a diagnostic store never blocks work.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use headroom_core::QuotaKey;
use headroom_core::clock::{Clock, SignedDuration, Timestamp};
use headroom_core::cooldown::{self, Cooldown, Refusal};
use headroom_core::signal::{Dimension, Provider};
use headroom_core::telemetry;

use super::Client;
use crate::error::{ApiError, RateLimitReason};
use crate::request::ApiRequest;
use crate::sinks::{RateLimitEventKind, RefusalSource};

/// How long a read of one identity's refusals is reused: the "dispatch pass" of a door that
/// serves many requests a second.
const REFRESH: SignedDuration = SignedDuration::from_secs(1);

/// An identity's refusals as last read, and when.
type Read = (Timestamp, Arc<Vec<Refusal>>);

/// Each identity's refusals, as last read, and when.
#[derive(Debug, Default)]
pub(super) struct CooldownGate {
    read: Mutex<HashMap<QuotaKey, Read>>,
}

impl CooldownGate {
    /// The cooldown holding a request of `family` and `dimension` back at `now`, if any.
    pub(super) async fn check(
        &self,
        source: &dyn RefusalSource,
        provider: Provider,
        key: &QuotaKey,
        family: &str,
        dimension: Dimension,
        now: Timestamp,
    ) -> Option<Cooldown> {
        let refusals = self.refusals(source, key, now).await;
        cooldown::blocking(&refusals, provider, key, family, dimension, now)
    }

    async fn refusals(
        &self,
        source: &dyn RefusalSource,
        key: &QuotaKey,
        now: Timestamp,
    ) -> Arc<Vec<Refusal>> {
        if let Some((at, refusals)) = self.lock().get(key)
            && *at <= now
            && now.duration_since(*at) < REFRESH
        {
            return Arc::clone(refusals);
        }
        let since = now.checked_sub(cooldown::LOOKBACK).unwrap_or(now);
        let refusals = match source.refusals(key, since).await {
            Ok(refusals) => refusals,
            Err(error) => {
                tracing::warn!(event = telemetry::COOLDOWN_READ_FAILED, identity = %key, error = %error,
                    "Could not read the recorded refusals; sending as if none held.");
                Vec::new()
            }
        };
        let refusals = Arc::new(refusals);
        self.lock()
            .insert(key.clone(), (now, Arc::clone(&refusals)));
        refusals
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<QuotaKey, Read>> {
        self.read.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Client {
    /// [`ApiError::RateLimited`], with nothing sent, while a refusal another request of this
    /// identity and route family met still holds (see this module).
    pub(super) async fn cooled_down(
        &self,
        key: &QuotaKey,
        request: &ApiRequest,
    ) -> Result<(), ApiError> {
        let parts = self.parts();
        let Some(cooldown) = self
            .inner
            .cooldowns
            .check(
                parts.refusals.as_ref(),
                parts.config.provider,
                key,
                request.route_family.name,
                request.dimension,
                parts.clock.now(),
            )
            .await
        else {
            return Ok(());
        };
        tracing::info!(
            event = telemetry::COOLDOWN_DEFERRED,
            identity = %key,
            route_family = %request.route_family,
            until = %cooldown.until,
            reason = cooldown.reason.as_str(),
            "A cooldown held a request back."
        );
        let error = ApiError::RateLimited {
            until: cooldown.until,
            bucket: request.bucket.clone(),
            dimension: request.dimension,
            request_id: None,
            reason: RateLimitReason::Cooldown(cooldown.reason),
        };
        self.log_rate_limit(key, request, RateLimitEventKind::Deferred, &error, None)
            .await;
        Err(error)
    }
}
