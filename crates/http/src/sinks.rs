//! Where the exit door writes what it learns: ETags for conditional requests, usage records
//! for calibration, and the credential → owner registry. Each is a trait so the store can
//! back it; in-memory implementations serve tests and single runs.

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
