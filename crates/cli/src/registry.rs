//! The store behind the exit door's sinks: credential owners, ETags, usage records and
//! rate-limit events are written to the database, so the next run knows whose quota a token
//! spends without asking, and every process on the database sees what was refused and why.
//!
//! These are diagnostics and caches: a failed write is logged and the request goes on (a
//! broken cache must never turn into a failed collection).

use std::sync::Arc;

use headroom_core::Subject;
use headroom_core::clock::{Clock, SignedDuration, TokioClock};
use headroom_core::governor::BoxFuture;
use headroom_core::telemetry;
use headroom_http::RateLimitReason;
use headroom_http::sinks::{
    CredentialRegistry, EtagStore, QuotaReadings, RateLimitEvent, RateLimitEventKind, RateLimitLog,
    RefusalSource, UsageRecord, UsageSink,
};
use headroom_store::{
    CredentialSeen, ObservationKind, QuotaReading, QuotaRecorder, RateLimitObservation, Store,
    StoredEtag, SubjectKind,
};

use crate::config::ConfigError;

/// An open database, seen through the exit door's sinks.
#[derive(Debug, Clone)]
pub struct Opened {
    /// The exit door's sinks (which also hand out the store).
    pub sinks: Arc<StoreSinks>,
    /// What every process on this database recorded: readings, observations, run pages.
    pub history: Arc<dyn headroom_store::QuotaHistory>,
}

/// Opens the configured database (creating an SQLite file when needed).
pub async fn open(db: &str) -> Result<Opened, ConfigError> {
    let stores = headroom_store::open_quota_history(db)
        .await
        .map_err(|e| ConfigError {
            setting: "--db".into(),
            problem: e.to_string(),
        })?;
    Ok(Opened {
        history: stores.history,
        sinks: Arc::new(StoreSinks {
            store: stores.store,
            recorder: stores.recorder,
            clock: TokioClock::system(),
        }),
    })
}

/// The store, seen as the exit door's sinks.
#[derive(Debug)]
pub struct StoreSinks {
    store: Arc<dyn Store>,
    recorder: Arc<dyn QuotaRecorder>,
    clock: TokioClock,
}

impl StoreSinks {
    /// Where quota readings are written (and pruned).
    pub fn recorder(&self) -> &Arc<dyn QuotaRecorder> {
        &self.recorder
    }
}

fn subject_of(kind: SubjectKind, owner: &str) -> Subject {
    match kind {
        SubjectKind::User => Subject::User(owner.into()),
        SubjectKind::Installation => Subject::Installation(owner.parse().unwrap_or(0)),
        SubjectKind::Ip => Subject::Ip(owner.into()),
        SubjectKind::Account => Subject::Account(owner.into()),
        SubjectKind::Site => Subject::Site(owner.into()),
        SubjectKind::App => Subject::App(owner.into()),
    }
}

impl StoreSinks {
    /// The store itself.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }
}

impl CredentialRegistry for StoreSinks {
    fn lookup<'a>(&'a self, host: &'a str, fingerprint: &'a str) -> BoxFuture<'a, Option<Subject>> {
        Box::pin(async move {
            match self.store.credential(host, fingerprint).await {
                Ok(found) => found.map(|c| subject_of(c.subject_kind, &c.owner_login)),
                Err(e) => {
                    tracing::warn!(event = telemetry::STORE_READ_FAILED, error = %e, "Could not read a stored credential.");
                    None
                }
            }
        })
    }

    fn record<'a>(
        &'a self,
        host: &'a str,
        fingerprint: &'a str,
        subject: &'a Subject,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let (subject_kind, owner_login) = SubjectKind::of(subject);
            let seen = CredentialSeen {
                host: host.to_owned(),
                fingerprint: fingerprint.to_owned(),
                subject_kind,
                owner_login,
                seen_at: self.clock.now(),
            };
            if let Err(e) = self.store.upsert_credential(&seen).await {
                tracing::warn!(event = telemetry::STORE_WRITE_FAILED, error = %e, "Could not record a credential's owner.");
            }
        })
    }

    fn sharing<'a>(&'a self, host: &'a str, subject: &'a Subject) -> BoxFuture<'a, Vec<String>> {
        Box::pin(async move {
            let (kind, owner) = SubjectKind::of(subject);
            match self.store.credentials_of(host, kind, &owner).await {
                Ok(credentials) => credentials.into_iter().map(|c| c.fingerprint).collect(),
                Err(e) => {
                    tracing::warn!(event = telemetry::STORE_READ_FAILED, error = %e, "Could not list credentials.");
                    Vec::new()
                }
            }
        })
    }
}

impl EtagStore for StoreSinks {
    fn get<'a>(&'a self, fingerprint: &'a str, url: &'a str) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            match self.store.etag(fingerprint, url).await {
                Ok(found) => found.map(|e| e.etag),
                Err(e) => {
                    tracing::warn!(event = telemetry::STORE_READ_FAILED, error = %e, "Could not read an ETag.");
                    None
                }
            }
        })
    }

    fn put<'a>(&'a self, fingerprint: &'a str, url: &'a str, etag: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let stored = StoredEtag {
                credential_fingerprint: fingerprint.to_owned(),
                url: url.to_owned(),
                etag: etag.to_owned(),
                last_modified: None,
                stored_at: self.clock.now(),
            };
            if let Err(e) = self.store.put_etag(&stored).await {
                tracing::warn!(event = telemetry::STORE_WRITE_FAILED, error = %e, "Could not store an ETag.");
            }
        })
    }
}

impl UsageSink for StoreSinks {
    fn record(&self, record: UsageRecord) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(spend) = spend_of(&record)
                && let Err(e) = self.recorder.record_spend(&spend).await
            {
                tracing::warn!(event = telemetry::STORE_WRITE_FAILED, error = %e, "Could not record spend.");
            }
            let stored = headroom_store::UsageRecord {
                key: record.key,
                route_family: record.route_family,
                dimension: record.dimension,
                requests: 1,
                units: record
                    .actual_cost
                    .unwrap_or(u64::from(record.estimated_cost.max(1))),
                at: record.at,
                window: SignedDuration::from_hours(1),
            };
            if let Err(e) = self.store.record_usage(&stored).await {
                tracing::warn!(event = telemetry::STORE_WRITE_FAILED, error = %e, "Could not record usage.");
            }
        })
    }
}

/// The spend row a round trip adds to, when the response named its window (a round trip
/// without a reset cannot be set against any window's `used`). What the provider counts: its
/// reported cost, else the estimate; nothing for an authorized 304, which GitHub does not
/// charge (an unauthenticated one, keyed by IP, it does).
fn spend_of(record: &UsageRecord) -> Option<headroom_store::quota_history::spend::SpendRecord> {
    let reset_at = record.reset_at?;
    let free = record.status == Some(304) && !matches!(record.key.subject, Subject::Ip(_));
    let units = if free {
        0
    } else {
        record
            .actual_cost
            .unwrap_or(u64::from(record.estimated_cost.max(1)))
    };
    Some(headroom_store::quota_history::spend::SpendRecord {
        host: record.key.host.to_string(),
        subject: headroom_store::subject_label(&record.key.subject),
        bucket: record.bucket.as_str().to_owned(),
        route_family: record.route_family.clone(),
        sync_run_id: record.sync_run_id,
        reset_at,
        requests: 1,
        units,
        at: record.at,
    })
}

/// The row a rate-limit event becomes: the origin's reason, or the governor's wait mapped to
/// the reason it stands for (an exhausted bucket is the primary limit, a secondary block the
/// secondary one; pacing and the in-flight ceiling are the governor's own and carry only
/// their wait reason).
pub fn observation_of(event: RateLimitEvent) -> RateLimitObservation {
    use headroom_core::governor::WaitReason;
    use headroom_core::signal::LimitReason;
    let (reason, wait_reason) = match &event.reason {
        RateLimitReason::Origin(reason) | RateLimitReason::Cooldown(reason) => {
            (Some(*reason), None)
        }
        RateLimitReason::Governor(wait) => (
            match wait {
                WaitReason::Exhausted { .. } => Some(LimitReason::Primary),
                WaitReason::SecondaryBlock { .. } => Some(LimitReason::Secondary),
                _ => None,
            },
            Some(wait.as_str().to_owned()),
        ),
        _ => (Some(LimitReason::Unknown), None),
    };
    RateLimitObservation {
        provider: event.provider,
        key: event.key,
        credential_fingerprint: event.credential_fingerprint,
        sync_run_id: None,
        bucket: Some(event.bucket.to_string()),
        route_family: Some(event.route_family),
        route_family_attribution: None,
        dimension: Some(event.dimension),
        reason,
        retry_after: event.retry_after,
        reset_at: event.reset_at,
        limit: event.limit,
        remaining: event.remaining,
        used: event.used,
        request_id: event.request_id,
        observed_at: event.at,
        event_kind: Some(match event.kind {
            RateLimitEventKind::Deferred => ObservationKind::Deferred,
            RateLimitEventKind::Refused => ObservationKind::Refused,
        }),
        wait_reason,
    }
}

/// The rows one governor reading becomes: one per bucket, with this process's in-flight and
/// waiting counts and, when the bucket waits, why in the governor's words.
pub fn readings_of(
    provider: headroom_core::signal::Provider,
    snapshot: &headroom_core::governor::IdentitySnapshot,
    at: headroom_core::clock::Timestamp,
) -> Vec<QuotaReading> {
    snapshot
        .buckets
        .iter()
        .map(|b| {
            let state = &b.state;
            let blocked = state.blocked_until.filter(|until| *until > at);
            let last_reason = match (blocked, state.remaining, state.reset_at) {
                (Some(_), _, _) => Some(format!(
                    "secondary limit ({} in a row)",
                    state.secondary_strikes.max(1)
                )),
                (None, Some(0), Some(reset)) if reset > at => Some("quota exhausted".to_owned()),
                _ => None,
            };
            QuotaReading {
                provider: headroom_store::provider_name(provider).to_owned(),
                host: snapshot.key.host.to_string(),
                subject: headroom_store::subject_label(&snapshot.key.subject),
                bucket: state.bucket.to_string(),
                limit: state.limit,
                remaining: state.remaining,
                used: state.used,
                reset_at: state.reset_at,
                in_flight: u64::from(state.in_flight),
                waiting: u64::from(state.waiting),
                blocked_until: blocked,
                last_reason,
                process_id: crate::sync_cmd::holder(),
                observed_at: at,
            }
        })
        .collect()
}

impl QuotaReadings for StoreSinks {
    fn record(
        &self,
        provider: headroom_core::signal::Provider,
        snapshot: headroom_core::governor::IdentitySnapshot,
        at: headroom_core::clock::Timestamp,
    ) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            for reading in readings_of(provider, &snapshot, at) {
                if let Err(e) = self.recorder.record_quota_reading(&reading).await {
                    tracing::warn!(event = telemetry::STORE_WRITE_FAILED, error = %e, "Could not record a quota reading.");
                    return;
                }
            }
        })
    }
}

impl RefusalSource for StoreSinks {
    fn refusals<'a>(
        &'a self,
        key: &'a headroom_core::QuotaKey,
        since: headroom_core::clock::Timestamp,
    ) -> BoxFuture<'a, Result<Vec<headroom_core::cooldown::Refusal>, String>> {
        Box::pin(async move {
            let (refusals, skipped) = self
                .store
                .recent_refusals(key, since)
                .await
                .map_err(|e| e.to_string())?;
            if skipped > 0 {
                tracing::warn!(event = telemetry::COOLDOWN_ROWS_SKIPPED, identity = %key, skipped,
                    "Skipped recorded refusals whose stored values no longer parse.");
            }
            Ok(refusals)
        })
    }
}

impl RateLimitLog for StoreSinks {
    fn record(&self, event: RateLimitEvent) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let observation = observation_of(event);
            if let Err(e) = self.store.record_rate_limit_observation(&observation).await {
                tracing::warn!(event = telemetry::STORE_WRITE_FAILED, error = %e, "Could not record a rate-limit observation.");
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_core::clock::Timestamp;
    use headroom_core::governor::WaitReason;
    use headroom_core::signal::{Dimension, LimitReason, Provider};
    use headroom_core::{Bucket, QuotaKey};

    fn event(kind: RateLimitEventKind, reason: RateLimitReason) -> RateLimitEvent {
        let at = Timestamp::from_second(1_800_000_000).unwrap_or(Timestamp::UNIX_EPOCH);
        RateLimitEvent {
            provider: Provider::GitHub,
            key: QuotaKey::user("api.github.com", "alice"),
            credential_fingerprint: Some("0123456789abcdef".into()),
            bucket: Bucket::core(),
            route_family: "events".into(),
            dimension: Dimension::RestCore,
            kind,
            reason,
            until: at,
            retry_after: None,
            reset_at: Some(at),
            limit: Some(5000),
            remaining: Some(0),
            used: Some(5000),
            request_id: Some("AB:CD".into()),
            at,
        }
    }

    /// Every event lands as one observation row another process can read, with the
    /// governor's own reason beside the limit it stands for.
    #[tokio::test]
    async fn rate_limit_events_are_stored_as_observations() {
        let opened = open(":memory:").await.unwrap_or_else(|e| panic!("{e}"));
        let sinks = opened.sinks;
        let at = Timestamp::from_second(1_800_000_000).unwrap_or(Timestamp::UNIX_EPOCH);
        let exhausted = WaitReason::Exhausted {
            bucket: Bucket::core(),
            remaining: 0,
            needed: 1,
            reset_at: at,
        };
        let pacing = WaitReason::InFlightCeiling {
            in_flight: 10,
            ceiling: 10,
        };
        for e in [
            event(
                RateLimitEventKind::Refused,
                RateLimitReason::Origin(LimitReason::Secondary),
            ),
            event(
                RateLimitEventKind::Deferred,
                RateLimitReason::Governor(exhausted),
            ),
            event(
                RateLimitEventKind::Deferred,
                RateLimitReason::Governor(pacing),
            ),
        ] {
            RateLimitLog::record(sinks.as_ref(), e).await;
        }
        let rows = sinks
            .store
            .recent_rate_limit_observations("api.github.com", Timestamp::UNIX_EPOCH, 10)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut seen: Vec<(Option<String>, Option<String>, Option<String>)> = rows
            .iter()
            .map(|o| {
                (
                    o.event_kind.clone(),
                    o.reason.clone(),
                    o.wait_reason.clone(),
                )
            })
            .collect();
        seen.sort();
        let s = |v: &str| Some(v.to_owned());
        assert_eq!(
            seen,
            [
                (s("deferred"), None, s("in_flight_ceiling")),
                (s("deferred"), s("primary"), s("exhausted")),
                (s("refused"), s("secondary"), None),
            ]
        );
        assert!(rows.iter().all(|o| o.subject == "user:alice"
            && o.bucket.as_deref() == Some("core")
            && o.request_id.as_deref() == Some("AB:CD")));
    }
}
