//! The feed service's state: event sources and their five-component schedule, the source
//! lease, ingestion runs, the core ledger row, and the figures of the state summary.
//!
//! Separate traits from [`crate::Store`] so the feed's queries live together, in two halves:
//! [`FeedStateRead`] (the reads) and [`FeedState`] (the writes, and through its supertrait the
//! reads), so a component handed only the read half cannot change the feed's state. Both
//! backends implement both with the same SQL, each query written once over
//! [`crate::db::Pools`]. [`open_feed`] opens a store and its feed state over one pool.

// Enrichment writes name the entity, its lease and what happened: several plain arguments read
// better than a one-use struct per call.
#![allow(clippy::too_many_arguments)]

mod claims;
mod enrichment;
mod ledgers;
mod on_pool;
mod overview;
mod reconcile;
mod rows;
mod status;
pub(crate) use rows::{SOURCE_COLUMNS, source_from};
pub use status::{
    BatchStatus, EnrichmentStage, EnrichmentStatus, IngestionRunStatus, RequestKind, SourceStatus,
    WindowStatus,
};
mod sources;

use std::sync::Arc;

use async_trait::async_trait;
use headroom_core::clock::Timestamp;
use serde::Serialize;

use headroom_core::redact::{redact, redact_json};

use crate::db::{OnPool, Pools, ReadRow, get, on_each_pool};
use crate::error::Result;
use crate::model::{from_ms, from_opt_ms, ms, to_i64, to_u64};
use crate::{PgStore, SqliteStore, Store};

/// One pollable feed and its schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventSource {
    /// Surrogate id (never leaves the process).
    #[serde(skip)]
    pub id: i64,
    /// What it is (`github_public_events`).
    pub source_type: String,
    /// The first page's URL.
    pub url: String,
    /// The operator's switch.
    pub enabled: bool,
    /// In service, or failed after a permanent 4xx.
    pub status: SourceStatus,
    /// The stored validator of the first page.
    #[serde(skip)]
    pub etag: Option<String>,
    /// Cadence: last poll + interval.
    pub cadence_due_at: Option<Timestamp>,
    /// GitHub's `X-Poll-Interval` floor.
    pub poll_floor_until: Option<Timestamp>,
    /// This source's own retry backoff after a failed poll.
    pub retry_not_before_at: Option<Timestamp>,
    /// A cache of the answer (never an input).
    pub next_poll_at: Option<Timestamp>,
    /// Failed polls in a row.
    pub consecutive_failures: u64,
    /// The last failure, redacted.
    pub last_error: Option<String>,
    /// When it was last polled.
    pub last_polled_at: Option<Timestamp>,
}

/// What one ingestion run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IngestionRunEnd {
    /// How it ended.
    pub status: IngestionRunStatus,
    /// `ok`, `not_modified`, `server_error`, `rate_limited` …
    pub classification: Option<String>,
    /// Why pagination stopped.
    pub stop_reason: Option<String>,
    /// When it ended.
    pub finished_at: Option<Timestamp>,
    /// Pages fetched.
    pub pages_fetched: u64,
    /// Envelopes received.
    pub events_received: u64,
    /// Envelopes typed PushEvent.
    pub push_events_seen: u64,
    /// New rows.
    pub events_created: u64,
    /// Already stored.
    pub duplicates_skipped: u64,
    /// Quarantined.
    pub events_quarantined: u64,
    /// Other types.
    pub events_ignored: u64,
    /// Refused by the database.
    pub events_failed: u64,
    /// What went wrong, redacted.
    pub error_message: Option<String>,
}

/// The hourly core ledger of one quota identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CoreLedger {
    /// API host.
    pub host: String,
    /// Quota subject (the outbound IP without a token, else the owner).
    pub subject: String,
    /// Where its window stands.
    pub window_status: WindowStatus,
    /// The limit the headers reported.
    pub limit: Option<u64>,
    /// Remaining, per the newest headers.
    pub remaining: Option<u64>,
    /// Never spent.
    pub reserve: u64,
    /// Poll requests this window.
    pub poll_used: u64,
    /// Poll allowance in force.
    pub poll_allowance: u64,
    /// Detail fallbacks this window.
    pub enrichment_used: u64,
    /// Detail allowance in force.
    pub enrichment_allowance: u64,
    /// Actor detail requests this window.
    pub actor_share_used: u64,
    /// Repository detail requests this window.
    pub repository_share_used: u64,
    /// Requests the headers counted that this application did not make.
    pub co_tenant_usage: u64,
    /// Only ever moves later.
    pub global_blocked_until: Option<Timestamp>,
    /// Survives window rollover.
    pub consecutive_secondary_limits: u64,
    /// When this window was initialized.
    pub window_started_at: Option<Timestamp>,
    /// The window's reset.
    pub reset_at: Option<Timestamp>,
}

impl CoreLedger {
    /// A fresh, uninitialized ledger.
    pub fn new(host: &str, subject: &str) -> Self {
        Self {
            host: host.to_owned(),
            subject: subject.to_owned(),
            window_status: WindowStatus::Uninitialized,
            limit: None,
            remaining: None,
            reserve: 0,
            poll_used: 0,
            poll_allowance: 0,
            enrichment_used: 0,
            enrichment_allowance: 0,
            actor_share_used: 0,
            repository_share_used: 0,
            co_tenant_usage: 0,
            global_blocked_until: None,
            consecutive_secondary_limits: 0,
            window_started_at: None,
            reset_at: None,
        }
    }
}

/// The persisted figures the state summary prints.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FeedOverview {
    /// Stored push events.
    pub push_events: u64,
    /// Actors pending or retryable.
    pub pending_actors: u64,
    /// Repositories pending or retryable.
    pub pending_repositories: u64,
    /// Quarantine rows.
    pub quarantined: u64,
    /// The latest completed run: (run id, finished at).
    pub latest_completed_run: Option<(String, Timestamp)>,
}

/// Actors or repositories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntityKind {
    /// `actors`.
    Actor,
    /// `repositories`.
    Repository,
}

impl EntityKind {
    /// The stored name.
    pub fn as_str(&self) -> &'static str {
        match self {
            EntityKind::Actor => "actor",
            EntityKind::Repository => "repository",
        }
    }
    /// The kind a stored name names; an unknown one is a corrupt row.
    pub(crate) fn parse(value: &str) -> Result<Self> {
        match value {
            "actor" => Ok(EntityKind::Actor),
            "repository" => Ok(EntityKind::Repository),
            other => Err(crate::StoreError::corrupt(
                "entity_kind",
                format!("unknown entity kind {other:?}"),
            )),
        }
    }
    fn table(&self) -> &'static str {
        match self {
            EntityKind::Actor => "actors",
            EntityKind::Repository => "repositories",
        }
    }
    fn name_column(&self) -> &'static str {
        match self {
            EntityKind::Actor => "login",
            EntityKind::Repository => "full_name",
        }
    }
}

/// Which enrichment lane a claim is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// Search batches: `batch_pending`, and `retry_scheduled` rows whose backoff passed.
    Batch,
    /// Detail fallback: `detail_pending` rows whose backoff passed.
    Detail,
}

/// Which complete rows count as refresh candidates at `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefreshWindow {
    /// The instant of the decision.
    pub now: Timestamp,
    /// Rows last fetched at or before this are past their TTL.
    pub stale_before: Timestamp,
    /// Only rows seen pushing at or after this are refreshed at all.
    pub active_since: Timestamp,
}

/// What one reconciler sweep found and repaired.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Reconciled {
    /// Stub actor rows created for stored events that referenced a missing actor.
    pub actors_restored: u64,
    /// Stub repository rows created likewise.
    pub repositories_restored: u64,
    /// Rows whose stage contradicted their status, put back into the batch backlog.
    pub requeued: u64,
    /// Enrichment leases that had lapsed, returned to their lane.
    pub leases_reclaimed: u64,
    /// Source locks whose holder's lease had lapsed, cleared.
    pub source_locks_released: u64,
    /// Ingestion runs left `running` by a dead process, closed as failed.
    pub runs_abandoned: u64,
    /// Backlog rows (not complete, not terminal) after the sweep.
    pub pending_actors: u64,
    /// The same for repositories.
    pub pending_repositories: u64,
}

impl Reconciled {
    /// Whether the sweep had to repair anything.
    pub fn repaired(&self) -> u64 {
        self.actors_restored
            + self.repositories_restored
            + self.requeued
            + self.leases_reclaimed
            + self.source_locks_released
            + self.runs_abandoned
    }
}

/// An entity claimed under a lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    /// GitHub's id.
    pub github_id: i64,
    /// Login or full name.
    pub name: String,
    /// The stored detail URL from the event payload.
    pub detail_url: Option<String>,
    /// Detail attempts so far.
    pub detail_attempts: u64,
    /// Batch attempts so far.
    pub batch_attempts: u64,
}

/// The useful-data contract's fields, applied from an ID-validated item.
#[derive(Debug, Clone, PartialEq)]
pub struct Enriched {
    /// The login / full name the item carries.
    pub name: String,
    /// Actors: `type`.
    pub account_type: Option<String>,
    /// Repositories: owner login.
    pub owner_login: Option<String>,
    /// Repositories: owner id.
    pub owner_github_id: Option<i64>,
    /// Repositories: fork.
    pub fork: Option<bool>,
    /// Repositories: archived.
    pub archived: Option<bool>,
    /// Repositories: default branch.
    pub default_branch: Option<String>,
    /// Repositories: created_at.
    pub github_created_at: Option<Timestamp>,
    /// The item.
    pub raw: serde_json::Value,
}

/// Enrichment status counts of one class.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EnrichmentCounts {
    /// `pending`.
    pub pending: u64,
    /// `complete`.
    pub complete: u64,
    /// `retryable_failure`.
    pub retryable_failure: u64,
    /// `permanent_failure`.
    pub permanent_failure: u64,
}

/// One enrichment request attempt, as its envelope row records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchEnvelope<'a> {
    /// Ties the row to the request's telemetry.
    pub correlation_id: &'a str,
    /// A Search batch or a detail fallback.
    pub request_kind: RequestKind,
    /// Actors or repositories.
    pub kind: EntityKind,
    /// What the attempt came to.
    pub status: BatchStatus,
    /// Members asked for.
    pub requested: u64,
    /// Items the response carried, when it was read.
    pub returned: Option<u64>,
    /// Items that applied by id, when they were judged.
    pub valid: Option<u64>,
    /// Search's `incomplete_results`, when it answered.
    pub incomplete_results: Option<bool>,
    /// The response's status, when one came.
    pub http_status: Option<u16>,
    /// What went wrong (redacted when stored).
    pub error: Option<&'a str>,
    /// When the request was sent.
    pub started_at: Timestamp,
    /// When its outcome was known.
    pub finished_at: Timestamp,
}

/// The per-minute search ledger of one identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchLedger {
    /// Host.
    pub host: String,
    /// Subject.
    pub subject: String,
    /// Limit the headers reported.
    pub limit: Option<u64>,
    /// Remaining per the headers.
    pub remaining: Option<u64>,
    /// Configured ceiling.
    pub request_ceiling: u64,
    /// Never spent.
    pub reserve: u64,
    /// Used in this minute.
    pub used: u64,
    /// Actor batches this minute.
    pub actor_used: u64,
    /// Repository batches this minute.
    pub repository_used: u64,
    /// Search-scoped block.
    pub blocked_until: Option<Timestamp>,
    /// Last request (pacing).
    pub last_request_at: Option<Timestamp>,
    /// The minute's reset.
    pub reset_at: Option<Timestamp>,
}

/// The feed state's reads. Nothing here writes, takes a lease or opens a write transaction,
/// so a holder of only this half (the HTTP server) cannot change the feed's state.
#[async_trait]
pub trait FeedStateRead: Send + Sync + std::fmt::Debug {
    /// The source of that type, if it exists (a read: never creates it).
    async fn event_source(&self, source_type: &str) -> Result<Option<EventSource>>;

    /// The core ledger row of an identity.
    async fn core_ledger(&self, host: &str, subject: &str) -> Result<Option<CoreLedger>>;

    /// The persisted figures of the state summary.
    async fn feed_overview(&self) -> Result<FeedOverview>;

    /// Whether a lane of a class has a row claimable at `now`. For the batch lane this is the
    /// backlog only (rows not yet complete); refresh candidates are [`FeedStateRead::has_refreshable`].
    async fn has_claimable(&self, kind: EntityKind, lane: Lane, now: Timestamp) -> Result<bool>;

    /// Whether [`FeedState::claim_refresh`] would find a candidate.
    async fn has_refreshable(&self, kind: EntityKind, window: RefreshWindow) -> Result<bool>;

    /// Enrichment status counts of a class.
    async fn enrichment_counts(&self, kind: EntityKind) -> Result<EnrichmentCounts>;

    /// The search ledger row.
    async fn search_ledger(&self, host: &str, subject: &str) -> Result<Option<SearchLedger>>;
}

/// The feed's state queries that write: sources and their lease, ingestion runs, ledger
/// rows, claims and enrichment outcomes. Every holder of it can read too.
#[async_trait]
pub trait FeedState: FeedStateRead {
    /// The source of that type, created (idle, enabled, nothing scheduled) if missing.
    async fn ensure_event_source(
        &self,
        source_type: &str,
        url: &str,
        now: Timestamp,
    ) -> Result<EventSource>;

    /// Takes the source's lease for `holder` until `until`: succeeds when it is free, already
    /// `holder`'s, or lapsed at `now` (its holder died).
    async fn try_lock_event_source(
        &self,
        id: i64,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<bool>;

    /// Gives the lease back (only the holder's).
    async fn unlock_event_source(&self, id: i64, holder: &str) -> Result<()>;

    /// Writes the schedule and status fields of a source.
    async fn save_event_source(&self, source: &EventSource, now: Timestamp) -> Result<()>;

    /// Opens an ingestion run (`running`) with the credential it spends (`None`: no API, as
    /// an archive import); returns its surrogate id.
    async fn start_ingestion_run(
        &self,
        run_id: &str,
        event_source_id: Option<i64>,
        origin: &str,
        credential: Option<&crate::CredentialUsed>,
        started_at: Timestamp,
    ) -> Result<i64>;

    /// Closes an ingestion run with what it did.
    async fn finish_ingestion_run(&self, id: i64, end: &IngestionRunEnd) -> Result<()>;

    /// Writes the core ledger row of an identity (insert or replace).
    async fn save_core_ledger(&self, ledger: &CoreLedger, now: Timestamp) -> Result<()>;

    /// Claims up to `limit` rows of a lane, oldest first (created_at, id), under a lease
    /// `token` until `until`. Rows whose lease lapsed are reclaimable.
    async fn claim(
        &self,
        kind: EntityKind,
        lane: Lane,
        limit: u32,
        now: Timestamp,
        token: &str,
        until: Timestamp,
    ) -> Result<Vec<Claimed>>;

    /// Claims up to `limit` refresh candidates into a Search batch: complete rows fetched at or
    /// before `stale_before` (the TTL) and seen pushing since `active_since`, plus complete rows
    /// a failed refresh batch left in `retry_scheduled` (backoff passed) or whose refresh lease
    /// lapsed. Oldest fetch first. The caller decides whether refresh may run at all (the
    /// composition rule); this only selects.
    async fn claim_refresh(
        &self,
        kind: EntityKind,
        limit: u32,
        window: RefreshWindow,
        token: &str,
        until: Timestamp,
    ) -> Result<Vec<Claimed>>;

    /// The reconciler's sweep: rebuilds pending work from committed rows. Creates stub entity
    /// rows for stored events whose actor or repository row is missing; puts rows whose stage
    /// contradicts their status back into the backlog; returns lapsed enrichment leases to
    /// their lane; clears lapsed source locks; closes ingestion runs left `running` since
    /// before `abandoned_before` as failed. Idempotent: a second sweep finds nothing.
    async fn reconcile(&self, now: Timestamp, abandoned_before: Timestamp) -> Result<Reconciled>;

    /// Gives claimed rows back to the lane they came from, untouched (a deferral).
    async fn release(
        &self,
        kind: EntityKind,
        token: &str,
        lane: Lane,
        now: Timestamp,
    ) -> Result<()>;

    /// Applies an ID-validated item (guarded by the lease token): complete,
    /// contract_complete. Returns whether the row was still held.
    async fn apply(
        &self,
        kind: EntityKind,
        github_id: i64,
        token: &str,
        item: &Enriched,
        now: Timestamp,
    ) -> Result<bool>;

    /// Admits a batch member to the detail lane (guarded by the lease token).
    async fn admit_detail(
        &self,
        kind: EntityKind,
        github_id: i64,
        token: &str,
        reason: &str,
        now: Timestamp,
    ) -> Result<bool>;

    /// Schedules a retry: the batch lane (`retry_scheduled`) or the detail lane
    /// (`detail_pending`, one more detail attempt), status `retryable_failure`.
    async fn schedule_retry(
        &self,
        kind: EntityKind,
        github_id: i64,
        token: &str,
        lane: Lane,
        next_retry_at: Timestamp,
        error: &str,
        now: Timestamp,
    ) -> Result<bool>;

    /// An entity-specific terminal fact (404/410, or the detail ladder exhausted).
    async fn mark_terminal(
        &self,
        kind: EntityKind,
        github_id: i64,
        token: &str,
        reason: &str,
        now: Timestamp,
    ) -> Result<bool>;

    /// Writes the search ledger row.
    async fn save_search_ledger(&self, ledger: &SearchLedger, now: Timestamp) -> Result<()>;

    /// Records one enrichment request attempt (its envelope); returns its id.
    async fn record_batch(&self, envelope: &BatchEnvelope<'_>) -> Result<i64>;

    /// Appends an observed item (read-only after this).
    async fn record_observation(
        &self,
        kind: EntityKind,
        github_id: i64,
        source: &str,
        outcome: &str,
        batch_id: Option<i64>,
        raw: &serde_json::Value,
        now: Timestamp,
    ) -> Result<()>;
}

/// Opens the store named by `target` (as [`crate::open`]) together with its feed state.
pub async fn open_feed(target: &str) -> Result<(Arc<dyn Store>, Arc<dyn FeedState>)> {
    if target.starts_with("postgres://") || target.starts_with("postgresql://") {
        let store = Arc::new(PgStore::connect(target).await?);
        Ok((store.clone(), store))
    } else {
        let store = Arc::new(SqliteStore::open(target).await?);
        Ok((store.clone(), store))
    }
}
