//! Where the exit door writes what it learns: ETags for conditional requests, usage records
//! for calibration, and the credential → owner registry; and what it reads back before
//! sending, the origin's refusals every process recorded (`RefusalSource`, for cooldowns).
//! Each is a trait so the store can back it; in-memory implementations serve tests and
//! single runs.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use headroom_core::clock::Timestamp;
use headroom_core::governor::BoxFuture;
use headroom_core::signal::Dimension;
use headroom_core::{Bucket, QuotaKey, Subject};

/// Remembers ETags per (credential fingerprint, URL): GitHub's ETags differ per token.
pub trait EtagStore: Send + Sync + fmt::Debug {
    /// The ETag last seen for this URL with this credential.
    fn get<'a>(&'a self, fingerprint: &'a str, url: &'a str) -> BoxFuture<'a, Option<String>>;
    /// Remembers an ETag.
    fn put<'a>(&'a self, fingerprint: &'a str, url: &'a str, etag: &'a str) -> BoxFuture<'a, ()>;
}

/// ETags in memory.
#[derive(Debug, Default)]
pub struct MemoryEtags {
    map: Mutex<HashMap<(String, String), String>>,
}

impl EtagStore for MemoryEtags {
    fn get<'a>(&'a self, fingerprint: &'a str, url: &'a str) -> BoxFuture<'a, Option<String>> {
        let value = self
            .map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(fingerprint.to_owned(), url.to_owned()))
            .cloned();
        Box::pin(std::future::ready(value))
    }

    fn put<'a>(&'a self, fingerprint: &'a str, url: &'a str, etag: &'a str) -> BoxFuture<'a, ()> {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((fingerprint.to_owned(), url.to_owned()), etag.to_owned());
        Box::pin(std::future::ready(()))
    }
}

/// One physical round trip (retries and redirect hops each count once).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UsageRecord {
    /// The quota identity that spent it.
    pub key: QuotaKey,
    /// The provider-specific group of endpoints.
    pub route_family: String,
    /// The budget dimension.
    pub dimension: Dimension,
    /// The bucket the response named (or the one estimated).
    pub bucket: Bucket,
    /// The HTTP status, or `None` for a timeout or connection failure.
    pub status: Option<u16>,
    /// The cost estimated before sending.
    pub estimated_cost: u32,
    /// The cost the provider reported (GraphQL), if it did.
    pub actual_cost: Option<u64>,
    /// When the round trip ended.
    pub at: Timestamp,
    /// The sync run that sent it, if one did.
    pub sync_run_id: Option<i64>,
    /// The reset of the window the response counted in (`x-ratelimit-reset`), if it said:
    /// what ties the record to the provider's `used` of that window.
    pub reset_at: Option<Timestamp>,
}

/// Receives usage records.
pub trait UsageSink: Send + Sync + fmt::Debug {
    /// Records one round trip.
    fn record(&self, record: UsageRecord) -> BoxFuture<'_, ()>;
}

/// Usage records kept in memory, in order.
#[derive(Debug, Default)]
pub struct MemoryUsage {
    records: Mutex<Vec<UsageRecord>>,
}

impl MemoryUsage {
    /// Every record so far.
    pub fn records(&self) -> Vec<UsageRecord> {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl UsageSink for MemoryUsage {
    fn record(&self, record: UsageRecord) -> BoxFuture<'_, ()> {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(record);
        Box::pin(std::future::ready(()))
    }
}

/// Remembers which quota subject each credential belongs to, by fingerprint. Never a token.
pub trait CredentialRegistry: Send + Sync + fmt::Debug {
    /// The subject recorded for this credential on `host`.
    fn lookup<'a>(&'a self, host: &'a str, fingerprint: &'a str) -> BoxFuture<'a, Option<Subject>>;
    /// Records (host, fingerprint) → subject.
    fn record<'a>(
        &'a self,
        host: &'a str,
        fingerprint: &'a str,
        subject: &'a Subject,
    ) -> BoxFuture<'a, ()>;
    /// Fingerprints of every credential recorded for `subject` on `host`.
    fn sharing<'a>(&'a self, host: &'a str, subject: &'a Subject) -> BoxFuture<'a, Vec<String>>;
}

/// The registry in memory.
#[derive(Debug, Default)]
pub struct MemoryCredentials {
    map: Mutex<HashMap<(String, String), Subject>>,
}

impl CredentialRegistry for MemoryCredentials {
    fn lookup<'a>(&'a self, host: &'a str, fingerprint: &'a str) -> BoxFuture<'a, Option<Subject>> {
        let found = self
            .map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(host.to_owned(), fingerprint.to_owned()))
            .cloned();
        Box::pin(std::future::ready(found))
    }

    fn record<'a>(
        &'a self,
        host: &'a str,
        fingerprint: &'a str,
        subject: &'a Subject,
    ) -> BoxFuture<'a, ()> {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((host.to_owned(), fingerprint.to_owned()), subject.clone());
        Box::pin(std::future::ready(()))
    }

    fn sharing<'a>(&'a self, host: &'a str, subject: &'a Subject) -> BoxFuture<'a, Vec<String>> {
        let mut fps: Vec<String> = self
            .map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|((h, _), s)| h == host && *s == subject)
            .map(|((_, fp), _)| fp.clone())
            .collect();
        fps.sort();
        Box::pin(std::future::ready(fps))
    }
}

/// How a rate-limit event came about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateLimitEventKind {
    /// The governor deferred the request before anything was sent.
    Deferred,
    /// The origin refused the request with a rate limit (a 403 or 429 it qualified).
    Refused,
}

/// One rate-limit event worth keeping: normalized fields only, never a message text or a
/// header dump.
#[derive(Debug, Clone, PartialEq)]
pub struct RateLimitEvent {
    /// The provider.
    pub provider: headroom_core::signal::Provider,
    /// The quota identity.
    pub key: QuotaKey,
    /// The credential's fingerprint, if the request carried one.
    pub credential_fingerprint: Option<String>,
    /// The bucket it concerns.
    pub bucket: Bucket,
    /// The request's route family.
    pub route_family: String,
    /// The request's dimension.
    pub dimension: Dimension,
    /// Deferred before sending, or refused by the origin.
    pub kind: RateLimitEventKind,
    /// Why, typed.
    pub reason: crate::RateLimitReason,
    /// Until when the work waits.
    pub until: Timestamp,
    /// The origin's `Retry-After`, if it sent one.
    pub retry_after: Option<headroom_core::clock::SignedDuration>,
    /// The window's reset, if known.
    pub reset_at: Option<Timestamp>,
    /// The origin's reading, if the response carried one.
    pub limit: Option<u64>,
    /// What remained.
    pub remaining: Option<u64>,
    /// What was used.
    pub used: Option<u64>,
    /// The origin's request id.
    pub request_id: Option<String>,
    /// When it happened.
    pub at: Timestamp,
}

/// Receives rate-limit events. Recording must never fail the request: a sink logs its own
/// failures.
pub trait RateLimitLog: Send + Sync + fmt::Debug {
    /// Records one event.
    fn record(&self, event: RateLimitEvent) -> BoxFuture<'_, ()>;
}

/// Rate-limit events kept in memory, in order.
#[derive(Debug, Default)]
pub struct MemoryRateLimitLog {
    events: Mutex<Vec<RateLimitEvent>>,
}

impl MemoryRateLimitLog {
    /// Every event so far.
    pub fn events(&self) -> Vec<RateLimitEvent> {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl RateLimitLog for MemoryRateLimitLog {
    fn record(&self, event: RateLimitEvent) -> BoxFuture<'_, ()> {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(event);
        Box::pin(std::future::ready(()))
    }
}

/// Receives the governor's reading of an identity after the exit door used it: at most once
/// a second per identity, and only when it changed since the last one handed over.
pub trait QuotaReadings: Send + Sync + fmt::Debug {
    /// Records one reading of an identity of `provider`, taken at `at`.
    fn record(
        &self,
        provider: headroom_core::signal::Provider,
        snapshot: headroom_core::governor::IdentitySnapshot,
        at: Timestamp,
    ) -> BoxFuture<'_, ()>;
}

/// Readings kept in memory, in order.
#[derive(Debug, Default)]
pub struct MemoryQuotaReadings {
    readings: Mutex<Vec<(headroom_core::governor::IdentitySnapshot, Timestamp)>>,
}

impl MemoryQuotaReadings {
    /// Every reading so far.
    pub fn readings(&self) -> Vec<(headroom_core::governor::IdentitySnapshot, Timestamp)> {
        self.readings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl QuotaReadings for MemoryQuotaReadings {
    fn record(
        &self,
        _provider: headroom_core::signal::Provider,
        snapshot: headroom_core::governor::IdentitySnapshot,
        at: Timestamp,
    ) -> BoxFuture<'_, ()> {
        self.readings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((snapshot, at));
        Box::pin(std::future::ready(()))
    }
}

/// Decides which readings are handed over: the pure throttle behind [`QuotaReadings`].
#[derive(Debug, Default)]
pub struct ReadingThrottle {
    last: HashMap<QuotaKey, (Timestamp, headroom_core::governor::IdentitySnapshot)>,
}

impl ReadingThrottle {
    /// The shortest spacing of two readings of one identity.
    pub const SPACING: headroom_core::clock::SignedDuration =
        headroom_core::clock::SignedDuration::from_secs(1);

    /// Whether a reading of `key` at `now` may be taken at all (the last one handed over is
    /// at least [`Self::SPACING`] old).
    pub fn due(&self, key: &QuotaKey, now: Timestamp) -> bool {
        self.last
            .get(key)
            .is_none_or(|(at, _)| now.duration_since(*at) >= Self::SPACING)
    }

    /// Whether `snapshot`, taken at `now`, is handed over: due and different from the last
    /// one. Remembers it when it is.
    pub fn admit(
        &mut self,
        snapshot: &headroom_core::governor::IdentitySnapshot,
        now: Timestamp,
    ) -> bool {
        if !self.due(&snapshot.key, now) {
            return false;
        }
        if let Some((_, last)) = self.last.get(&snapshot.key)
            && last == snapshot
        {
            return false;
        }
        self.last
            .insert(snapshot.key.clone(), (now, snapshot.clone()));
        true
    }

    /// Every identity a reading was handed over for.
    pub fn keys(&self) -> Vec<QuotaKey> {
        self.last.keys().cloned().collect()
    }

    /// Whether `snapshot` is handed over by a flush: whenever it differs from the last one
    /// handed over, however recent that was (what the spacing held back is not lost when the
    /// process goes quiet or exits). Remembers it when it is.
    pub fn admit_changed(
        &mut self,
        snapshot: &headroom_core::governor::IdentitySnapshot,
        now: Timestamp,
    ) -> bool {
        if let Some((_, last)) = self.last.get(&snapshot.key)
            && last == snapshot
        {
            return false;
        }
        self.last
            .insert(snapshot.key.clone(), (now, snapshot.clone()));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_core::clock::SignedDuration;
    use headroom_core::governor::IdentitySnapshot;
    use proptest::prelude::*;

    fn snapshot(login: &str, in_flight: u32) -> IdentitySnapshot {
        IdentitySnapshot {
            key: QuotaKey::user("api.github.com", login),
            in_flight,
            ceiling: 10,
            buckets: Vec::new(),
            rest_points_used: 0,
            graphql_points_used: 0,
        }
    }

    proptest! {
        /// Over any sequence of readings, two handed over for one identity are at least a
        /// second apart, and never the same reading twice in a row; a changed reading that
        /// is due is always handed over.
        #[test]
        fn the_throttle_spaces_and_deduplicates(
            steps in proptest::collection::vec((0u8..2, 0u32..3, 0i64..1500), 1..80)
        ) {
            let mut throttle = ReadingThrottle::default();
            let mut at = Timestamp::UNIX_EPOCH;
            let mut admitted: HashMap<String, (Timestamp, u32)> = HashMap::new();
            for (who, in_flight, step_ms) in steps {
                at += SignedDuration::from_millis(step_ms);
                let login = format!("u{who}");
                let reading = snapshot(&login, in_flight);
                let expected = match admitted.get(&login) {
                    None => true,
                    Some((last_at, last)) => {
                        at.duration_since(*last_at) >= ReadingThrottle::SPACING && *last != in_flight
                    }
                };
                prop_assert_eq!(throttle.admit(&reading, at), expected);
                if expected {
                    admitted.insert(login, (at, in_flight));
                }
            }
        }
    }
}

/// The origin's rate-limit refusals of one identity that every process on the database
/// recorded, read back for cooldown gating.
pub trait RefusalSource: Send + Sync + fmt::Debug {
    /// The refusals for `key` observed since `since`. An error is reported, and the door
    /// goes on as if there were none (a diagnostic store must never block work).
    fn refusals<'a>(
        &'a self,
        key: &'a QuotaKey,
        since: Timestamp,
    ) -> BoxFuture<'a, Result<Vec<headroom_core::cooldown::Refusal>, String>>;
}

/// No shared refusals: a lone process, whose own refusals its governor already holds.
#[derive(Debug, Default)]
pub struct NoRefusals;

impl RefusalSource for NoRefusals {
    fn refusals<'a>(
        &'a self,
        _key: &'a QuotaKey,
        _since: Timestamp,
    ) -> BoxFuture<'a, Result<Vec<headroom_core::cooldown::Refusal>, String>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }
}
