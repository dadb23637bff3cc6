//! The feed service's state: event sources and their five-component schedule, the source
//! lease, ingestion runs, the core ledger row, and the figures of the state summary.
//!
//! A separate trait from [`crate::Store`] so the feed's queries live together; both backends
//! implement it with the same SQL, each query written once over [`crate::db::Pools`]. [`open_feed`] opens a store and its
//! feed state over one pool.

// Enrichment writes name the entity, its lease and what happened: several plain arguments read
// better than a one-use struct per call.
#![allow(clippy::too_many_arguments)]

use std::sync::Arc;

use async_trait::async_trait;
use headroom_core::clock::Timestamp;
use serde::Serialize;

use headroom_core::redact::redact;

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
    /// `idle`, or `failed` after a permanent 4xx (out of service until cleared).
    pub status: String,
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
    /// `completed`, `failed` or `deferred`.
    pub status: String,
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
    /// `uninitialized`, `active` or `globally_blocked`.
    pub window_status: String,
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
            window_status: "uninitialized".into(),
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

/// The feed's state queries.
#[async_trait]
pub trait FeedState: Send + Sync + std::fmt::Debug {
    /// The source of that type, created (idle, enabled, nothing scheduled) if missing.
    async fn ensure_event_source(
        &self,
        source_type: &str,
        url: &str,
        now: Timestamp,
    ) -> Result<EventSource>;

    /// The source of that type, if it exists (a read: never creates it).
    async fn event_source(&self, source_type: &str) -> Result<Option<EventSource>>;

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

    /// Opens an ingestion run (`running`); returns its surrogate id.
    async fn start_ingestion_run(
        &self,
        run_id: &str,
        event_source_id: Option<i64>,
        origin: &str,
        started_at: Timestamp,
    ) -> Result<i64>;

    /// Closes an ingestion run with what it did.
    async fn finish_ingestion_run(&self, id: i64, end: &IngestionRunEnd) -> Result<()>;

    /// The core ledger row of an identity.
    async fn core_ledger(&self, host: &str, subject: &str) -> Result<Option<CoreLedger>>;

    /// Writes the core ledger row of an identity (insert or replace).
    async fn save_core_ledger(&self, ledger: &CoreLedger, now: Timestamp) -> Result<()>;

    /// The persisted figures of the state summary.
    async fn feed_overview(&self) -> Result<FeedOverview>;

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

    /// Whether a lane of a class has a row claimable at `now`. For the batch lane this is the
    /// backlog only (rows not yet complete); refresh candidates are [`Self::has_refreshable`].
    async fn has_claimable(&self, kind: EntityKind, lane: Lane, now: Timestamp) -> Result<bool>;

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

    /// Whether [`Self::claim_refresh`] would find a candidate.
    async fn has_refreshable(&self, kind: EntityKind, window: RefreshWindow) -> Result<bool>;

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

    /// Enrichment status counts of a class.
    async fn enrichment_counts(&self, kind: EntityKind) -> Result<EnrichmentCounts>;

    /// The search ledger row.
    async fn search_ledger(&self, host: &str, subject: &str) -> Result<Option<SearchLedger>>;

    /// Writes the search ledger row.
    async fn save_search_ledger(&self, ledger: &SearchLedger, now: Timestamp) -> Result<()>;

    /// Records one enrichment request attempt (its envelope); returns its id.
    #[allow(clippy::too_many_arguments)]
    async fn record_batch(
        &self,
        correlation_id: &str,
        request_kind: &str,
        kind: EntityKind,
        status: &str,
        requested: u64,
        returned: Option<u64>,
        valid: Option<u64>,
        incomplete_results: Option<bool>,
        http_status: Option<u16>,
        error: Option<&str>,
        started_at: Timestamp,
        finished_at: Timestamp,
    ) -> Result<i64>;

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

const SOURCE_COLUMNS: &str = "id, source_type, url, enabled, status, etag, cadence_due_at_ms, \
    poll_floor_until_at_ms, retry_not_before_at_ms, next_poll_at_ms, consecutive_failures, \
    last_error, last_polled_at_ms";

const LEDGER_COLUMNS: &str = "host, subject, window_status, window_limit, remaining, reserve, \
    poll_used, poll_allowance, enrichment_used, enrichment_allowance, actor_share_used, \
    repository_share_used, co_tenant_usage, global_blocked_until_at_ms, \
    consecutive_secondary_limits, window_started_at_ms, reset_at_ms";

/// The stages a lane claims from, and the stage a claim moves to.
/// The batch lane is the backlog only: a complete row re-enters a batch solely as a refresh
/// candidate ([`REFRESH_PREDICATE`]), so a refresh can never be taken as backlog.
fn lane_stages(lane: Lane) -> (&'static str, &'static str) {
    match lane {
        Lane::Batch => (
            "enrichment_stage IN ('batch_pending', 'retry_scheduled', 'batch_in_flight') \
             AND enrichment_status <> 'complete'",
            "batch_in_flight",
        ),
        Lane::Detail => (
            "enrichment_stage IN ('detail_pending', 'detail_in_flight')",
            "detail_in_flight",
        ),
    }
}

/// Refresh candidates ($1 now, $2 stale_before, $3 active_since): TTL-stale recently active
/// complete rows, and complete rows a refresh left mid-way (failed batch, lapsed lease).
const REFRESH_PREDICATE: &str = "enrichment_status = 'complete' AND ( \
    (enrichment_stage = 'contract_complete' AND fetched_at_ms IS NOT NULL \
        AND fetched_at_ms <= $2 AND last_seen_at_ms IS NOT NULL AND last_seen_at_ms >= $3) \
    OR (enrichment_stage = 'retry_scheduled' AND (next_retry_at_ms IS NULL OR next_retry_at_ms <= $1)) \
    OR enrichment_stage = 'batch_in_flight') \
    AND (lease_token IS NULL OR lease_expires_at_ms IS NULL OR lease_expires_at_ms <= $1)";

fn opt_ts(row: &impl ReadRow, column: &'static str) -> Result<Option<Timestamp>> {
    from_opt_ms(column, get::<Option<i64>>(row, column)?)
}

fn opt_u64(row: &impl ReadRow, column: &'static str) -> Result<Option<u64>> {
    get::<Option<i64>>(row, column)?
        .map(|v| to_u64(column, v))
        .transpose()
}

fn source_from(row: &impl ReadRow) -> Result<EventSource> {
    Ok(EventSource {
        id: get(row, "id")?,
        source_type: get(row, "source_type")?,
        url: get(row, "url")?,
        enabled: get(row, "enabled")?,
        status: get(row, "status")?,
        etag: get(row, "etag")?,
        cadence_due_at: opt_ts(row, "cadence_due_at_ms")?,
        poll_floor_until: opt_ts(row, "poll_floor_until_at_ms")?,
        retry_not_before_at: opt_ts(row, "retry_not_before_at_ms")?,
        next_poll_at: opt_ts(row, "next_poll_at_ms")?,
        consecutive_failures: to_u64("consecutive_failures", get(row, "consecutive_failures")?)?,
        last_error: get(row, "last_error")?,
        last_polled_at: opt_ts(row, "last_polled_at_ms")?,
    })
}

fn ledger_from(row: &impl ReadRow) -> Result<CoreLedger> {
    let u = |c: &'static str| -> Result<u64> { to_u64(c, get::<i64>(row, c)?) };
    Ok(CoreLedger {
        host: get(row, "host")?,
        subject: get(row, "subject")?,
        window_status: get(row, "window_status")?,
        limit: opt_u64(row, "window_limit")?,
        remaining: opt_u64(row, "remaining")?,
        reserve: u("reserve")?,
        poll_used: u("poll_used")?,
        poll_allowance: u("poll_allowance")?,
        enrichment_used: u("enrichment_used")?,
        enrichment_allowance: u("enrichment_allowance")?,
        actor_share_used: u("actor_share_used")?,
        repository_share_used: u("repository_share_used")?,
        co_tenant_usage: u("co_tenant_usage")?,
        global_blocked_until: opt_ts(row, "global_blocked_until_at_ms")?,
        consecutive_secondary_limits: u("consecutive_secondary_limits")?,
        window_started_at: opt_ts(row, "window_started_at_ms")?,
        reset_at: opt_ts(row, "reset_at_ms")?,
    })
}

fn opt_i64(field: &'static str, v: Option<u64>) -> Result<Option<i64>> {
    v.map(|v| to_i64(field, v)).transpose()
}

#[async_trait]
impl<S> FeedState for S
where
    S: OnPool + Send + Sync + std::fmt::Debug,
{
    async fn ensure_event_source(
        &self,
        source_type: &str,
        url: &str,
        now: Timestamp,
    ) -> Result<EventSource> {
        on_each_pool!(self.pools(), |pool| {
            sqlx::query(
                "INSERT INTO event_sources (source_type, url, created_at_ms, updated_at_ms) \
             VALUES ($1, $2, $3, $3) ON CONFLICT (source_type) DO NOTHING",
            )
            .bind(source_type.to_owned())
            .bind(url.to_owned())
            .bind(ms(now))
            .execute(pool)
            .await?;
            let sql = format!("SELECT {SOURCE_COLUMNS} FROM event_sources WHERE source_type = $1");
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(source_type.to_owned())
                .fetch_one(pool)
                .await?;
            source_from(&row)
        })
    }

    async fn event_source(&self, source_type: &str) -> Result<Option<EventSource>> {
        on_each_pool!(self.pools(), |pool| {
            let sql = format!("SELECT {SOURCE_COLUMNS} FROM event_sources WHERE source_type = $1");
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(source_type.to_owned())
                .fetch_optional(pool)
                .await?;
            row.as_ref().map(source_from).transpose()
        })
    }

    async fn try_lock_event_source(
        &self,
        id: i64,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<bool> {
        on_each_pool!(self.pools(), |pool| {
            let done = sqlx::query(
                "UPDATE event_sources SET lock_token = $2, lock_expires_at_ms = $4 \
             WHERE id = $1 AND (lock_token IS NULL OR lock_token = $2 \
             OR lock_expires_at_ms IS NULL OR lock_expires_at_ms <= $3)",
            )
            .bind(id)
            .bind(holder.to_owned())
            .bind(ms(now))
            .bind(ms(until))
            .execute(pool)
            .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    async fn unlock_event_source(&self, id: i64, holder: &str) -> Result<()> {
        on_each_pool!(self.pools(), |pool| {
            sqlx::query(
                "UPDATE event_sources SET lock_token = NULL, lock_expires_at_ms = NULL \
             WHERE id = $1 AND lock_token = $2",
            )
            .bind(id)
            .bind(holder.to_owned())
            .execute(pool)
            .await?;
            Ok(())
        })
    }

    async fn save_event_source(&self, s: &EventSource, now: Timestamp) -> Result<()> {
        on_each_pool!(self.pools(), |pool| {
            sqlx::query(
                "UPDATE event_sources SET status = $2, etag = $3, cadence_due_at_ms = $4, \
             poll_floor_until_at_ms = $5, retry_not_before_at_ms = $6, \
             next_poll_at_ms = $7, consecutive_failures = $8, last_error = $9, \
             last_polled_at_ms = $10, updated_at_ms = $11 WHERE id = $1",
            )
            .bind(s.id)
            .bind(s.status.clone())
            .bind(s.etag.clone())
            .bind(s.cadence_due_at.map(ms))
            .bind(s.poll_floor_until.map(ms))
            .bind(s.retry_not_before_at.map(ms))
            .bind(s.next_poll_at.map(ms))
            .bind(to_i64("consecutive_failures", s.consecutive_failures)?)
            .bind(s.last_error.as_deref().map(redact))
            .bind(s.last_polled_at.map(ms))
            .bind(ms(now))
            .execute(pool)
            .await?;
            Ok(())
        })
    }

    async fn start_ingestion_run(
        &self,
        run_id: &str,
        event_source_id: Option<i64>,
        origin: &str,
        started_at: Timestamp,
    ) -> Result<i64> {
        on_each_pool!(self.pools(), |pool| {
            let row = sqlx::query(
                "INSERT INTO ingestion_runs (run_id, event_source_id, source, status, \
             started_at_ms) VALUES ($1, $2, $3, 'running', $4) RETURNING id",
            )
            .bind(run_id.to_owned())
            .bind(event_source_id)
            .bind(origin.to_owned())
            .bind(ms(started_at))
            .fetch_one(pool)
            .await?;
            get(&row, "id")
        })
    }

    async fn finish_ingestion_run(&self, id: i64, e: &IngestionRunEnd) -> Result<()> {
        on_each_pool!(self.pools(), |pool| {
            let summary = sqlx::types::Json(serde_json::to_value(e).unwrap_or_default());
            sqlx::query(
                "UPDATE ingestion_runs SET status = $2, classification = $3, \
             stop_reason = $4, finished_at_ms = $5, pages_fetched = $6, \
             events_received = $7, push_events_seen = $8, events_created = $9, \
             duplicates_skipped = $10, events_quarantined = $11, \
             events_ignored = $12, events_failed = $13, error_message = $14, \
             summary_json = $15 WHERE id = $1",
            )
            .bind(id)
            .bind(e.status.clone())
            .bind(e.classification.clone())
            .bind(e.stop_reason.clone())
            .bind(e.finished_at.map(ms))
            .bind(to_i64("pages_fetched", e.pages_fetched)?)
            .bind(to_i64("events_received", e.events_received)?)
            .bind(to_i64("push_events_seen", e.push_events_seen)?)
            .bind(to_i64("events_created", e.events_created)?)
            .bind(to_i64("duplicates_skipped", e.duplicates_skipped)?)
            .bind(to_i64("events_quarantined", e.events_quarantined)?)
            .bind(to_i64("events_ignored", e.events_ignored)?)
            .bind(to_i64("events_failed", e.events_failed)?)
            .bind(e.error_message.as_deref().map(redact))
            .bind(summary)
            .execute(pool)
            .await?;
            Ok(())
        })
    }

    async fn core_ledger(&self, host: &str, subject: &str) -> Result<Option<CoreLedger>> {
        on_each_pool!(self.pools(), |pool| {
            let sql = format!(
                "SELECT {LEDGER_COLUMNS} FROM core_budget_ledger \
             WHERE host = $1 AND subject = $2"
            );
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(host.to_owned())
                .bind(subject.to_owned())
                .fetch_optional(pool)
                .await?;
            row.as_ref().map(ledger_from).transpose()
        })
    }

    async fn save_core_ledger(&self, l: &CoreLedger, now: Timestamp) -> Result<()> {
        on_each_pool!(self.pools(), |pool| {
            let sql = format!(
                "INSERT INTO core_budget_ledger ({LEDGER_COLUMNS}, updated_at_ms) VALUES \
             ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, \
             $17, $18) ON CONFLICT (host, subject) DO UPDATE SET \
             window_status = excluded.window_status, window_limit = excluded.window_limit, \
             remaining = excluded.remaining, reserve = excluded.reserve, \
             poll_used = excluded.poll_used, poll_allowance = excluded.poll_allowance, \
             enrichment_used = excluded.enrichment_used, \
             enrichment_allowance = excluded.enrichment_allowance, \
             actor_share_used = excluded.actor_share_used, \
             repository_share_used = excluded.repository_share_used, \
             co_tenant_usage = excluded.co_tenant_usage, \
             global_blocked_until_at_ms = excluded.global_blocked_until_at_ms, \
             consecutive_secondary_limits = excluded.consecutive_secondary_limits, \
             window_started_at_ms = excluded.window_started_at_ms, \
             reset_at_ms = excluded.reset_at_ms, updated_at_ms = excluded.updated_at_ms"
            );
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(l.host.clone())
                .bind(l.subject.clone())
                .bind(l.window_status.clone())
                .bind(opt_i64("window_limit", l.limit)?)
                .bind(opt_i64("remaining", l.remaining)?)
                .bind(to_i64("reserve", l.reserve)?)
                .bind(to_i64("poll_used", l.poll_used)?)
                .bind(to_i64("poll_allowance", l.poll_allowance)?)
                .bind(to_i64("enrichment_used", l.enrichment_used)?)
                .bind(to_i64("enrichment_allowance", l.enrichment_allowance)?)
                .bind(to_i64("actor_share_used", l.actor_share_used)?)
                .bind(to_i64("repository_share_used", l.repository_share_used)?)
                .bind(to_i64("co_tenant_usage", l.co_tenant_usage)?)
                .bind(l.global_blocked_until.map(ms))
                .bind(to_i64(
                    "consecutive_secondary_limits",
                    l.consecutive_secondary_limits,
                )?)
                .bind(l.window_started_at.map(ms))
                .bind(l.reset_at.map(ms))
                .bind(ms(now))
                .execute(pool)
                .await?;
            Ok(())
        })
    }

    async fn feed_overview(&self) -> Result<FeedOverview> {
        on_each_pool!(self.pools(), |pool| {
            let row = sqlx::query(
                "SELECT (SELECT COUNT(*) FROM push_events) AS push_events, \
             (SELECT COUNT(*) FROM actors WHERE enrichment_status IN \
                 ('pending', 'retryable_failure')) AS pending_actors, \
             (SELECT COUNT(*) FROM repositories WHERE enrichment_status IN \
                 ('pending', 'retryable_failure')) AS pending_repositories, \
             (SELECT COUNT(*) FROM quarantined_events) AS quarantined",
            )
            .fetch_one(pool)
            .await?;
            let latest = sqlx::query(
                "SELECT run_id, finished_at_ms FROM ingestion_runs \
             WHERE status = 'completed' AND finished_at_ms IS NOT NULL \
             ORDER BY finished_at_ms DESC, id DESC LIMIT 1",
            )
            .fetch_optional(pool)
            .await?;
            let latest_completed_run = match latest {
                Some(r) => Some((
                    get::<String>(&r, "run_id")?,
                    from_ms("finished_at_ms", get(&r, "finished_at_ms")?)?,
                )),
                None => None,
            };
            Ok(FeedOverview {
                push_events: to_u64("push_events", get(&row, "push_events")?)?,
                pending_actors: to_u64("pending_actors", get(&row, "pending_actors")?)?,
                pending_repositories: to_u64(
                    "pending_repositories",
                    get(&row, "pending_repositories")?,
                )?,
                quarantined: to_u64("quarantined", get(&row, "quarantined")?)?,
                latest_completed_run,
            })
        })
    }

    async fn claim(
        &self,
        kind: EntityKind,
        lane: Lane,
        limit: u32,
        now: Timestamp,
        token: &str,
        until: Timestamp,
    ) -> Result<Vec<Claimed>> {
        on_each_pool!(self.pools(), |pool| {
            let table = kind.table();
            let (stages, in_flight) = lane_stages(lane);
            // Pick the ids first (oldest first), then take them one statement: a row
            // somebody else took in between fails the lease guard and is skipped.
            let pick = format!(
                "SELECT github_id FROM {table} WHERE {stages} \
             AND (next_retry_at_ms IS NULL OR next_retry_at_ms <= $1) \
             AND (lease_token IS NULL OR lease_expires_at_ms IS NULL OR lease_expires_at_ms <= $1) \
             ORDER BY CASE WHEN enrichment_status = 'complete' THEN 1 ELSE 0 END, \
             created_at_ms, id LIMIT $2"
            );
            let rows = sqlx::query(sqlx::AssertSqlSafe(pick))
                .bind(ms(now))
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await?;
            let name = kind.name_column();
            let mut out = Vec::new();
            for row in rows {
                let id: i64 = get(&row, "github_id")?;
                let take = format!(
                    "UPDATE {table} SET enrichment_stage = '{in_flight}', lease_token = $2, \
                 lease_expires_at_ms = $3, updated_at_ms = $4 \
                 WHERE github_id = $1 AND {stages} \
                 AND (lease_token IS NULL OR lease_expires_at_ms IS NULL OR lease_expires_at_ms <= $4) \
                 RETURNING github_id, {name} AS name, detail_url, detail_attempts, batch_attempts"
                );
                let taken = sqlx::query(sqlx::AssertSqlSafe(take))
                    .bind(id)
                    .bind(token.to_owned())
                    .bind(ms(until))
                    .bind(ms(now))
                    .fetch_optional(pool)
                    .await?;
                if let Some(r) = taken {
                    out.push(Claimed {
                        github_id: get(&r, "github_id")?,
                        name: get(&r, "name")?,
                        detail_url: get(&r, "detail_url")?,
                        detail_attempts: to_u64("detail_attempts", get(&r, "detail_attempts")?)?,
                        batch_attempts: to_u64("batch_attempts", get(&r, "batch_attempts")?)?,
                    });
                }
            }
            Ok(out)
        })
    }

    async fn has_claimable(&self, kind: EntityKind, lane: Lane, now: Timestamp) -> Result<bool> {
        on_each_pool!(self.pools(), |pool| {
            let table = kind.table();
            let (stages, _) = lane_stages(lane);
            let sql = format!(
                "SELECT COUNT(*) AS n FROM {table} WHERE {stages} \
             AND (next_retry_at_ms IS NULL OR next_retry_at_ms <= $1) \
             AND (lease_token IS NULL OR lease_expires_at_ms IS NULL OR lease_expires_at_ms <= $1)"
            );
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(ms(now))
                .fetch_one(pool)
                .await?;
            Ok(get::<i64>(&row, "n")? > 0)
        })
    }

    async fn claim_refresh(
        &self,
        kind: EntityKind,
        limit: u32,
        window: RefreshWindow,
        token: &str,
        until: Timestamp,
    ) -> Result<Vec<Claimed>> {
        on_each_pool!(self.pools(), |pool| {
            if limit == 0 {
                return Ok(Vec::new());
            }
            let table = kind.table();
            let pick = format!(
                "SELECT github_id FROM {table} WHERE {REFRESH_PREDICATE} \
             ORDER BY fetched_at_ms, id LIMIT $4"
            );
            let rows = sqlx::query(sqlx::AssertSqlSafe(pick))
                .bind(ms(window.now))
                .bind(ms(window.stale_before))
                .bind(ms(window.active_since))
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await?;
            let name = kind.name_column();
            let mut out = Vec::new();
            for row in rows {
                let id: i64 = get(&row, "github_id")?;
                // A fresh refresh starts its own ladders; a resumed one keeps them.
                let take = format!(
                    "UPDATE {table} SET \
                 batch_attempts = CASE WHEN enrichment_stage = 'contract_complete' THEN 0 ELSE batch_attempts END, \
                 detail_attempts = CASE WHEN enrichment_stage = 'contract_complete' THEN 0 ELSE detail_attempts END, \
                 enrichment_stage = 'batch_in_flight', lease_token = $4, \
                 lease_expires_at_ms = $5, updated_at_ms = $1 \
                 WHERE github_id = $6 AND {REFRESH_PREDICATE} \
                 RETURNING github_id, {name} AS name, detail_url, detail_attempts, batch_attempts"
                );
                let taken = sqlx::query(sqlx::AssertSqlSafe(take))
                    .bind(ms(window.now))
                    .bind(ms(window.stale_before))
                    .bind(ms(window.active_since))
                    .bind(token.to_owned())
                    .bind(ms(until))
                    .bind(id)
                    .fetch_optional(pool)
                    .await?;
                if let Some(r) = taken {
                    out.push(Claimed {
                        github_id: get(&r, "github_id")?,
                        name: get(&r, "name")?,
                        detail_url: get(&r, "detail_url")?,
                        detail_attempts: to_u64("detail_attempts", get(&r, "detail_attempts")?)?,
                        batch_attempts: to_u64("batch_attempts", get(&r, "batch_attempts")?)?,
                    });
                }
            }
            Ok(out)
        })
    }

    async fn has_refreshable(&self, kind: EntityKind, window: RefreshWindow) -> Result<bool> {
        on_each_pool!(self.pools(), |pool| {
            let table = kind.table();
            let sql = format!(
                "SELECT COUNT(*) AS n FROM (SELECT 1 FROM {table} WHERE {REFRESH_PREDICATE} LIMIT 1) AS c"
            );
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(ms(window.now))
                .bind(ms(window.stale_before))
                .bind(ms(window.active_since))
                .fetch_one(pool)
                .await?;
            Ok(get::<i64>(&row, "n")? > 0)
        })
    }

    async fn reconcile(&self, now: Timestamp, abandoned_before: Timestamp) -> Result<Reconciled> {
        on_each_pool!(self.pools(), |pool| {
            let mut found = Reconciled::default();
            // Entities an event references but whose row is gone: a stub from the
            // event's own columns, pending, created at the oldest referencing event's
            // arrival so FIFO order is what it would have been.
            for (kind, id_col, name_col, url) in [
                (
                    EntityKind::Actor,
                    "github_actor_id",
                    "actor_login",
                    actor_url(self.pools()),
                ),
                (
                    EntityKind::Repository,
                    "github_repository_id",
                    "repository_name",
                    repository_url(self.pools()),
                ),
            ] {
                let table = kind.table();
                let name = kind.name_column();
                let sql = format!(
                    "INSERT INTO {table} (github_id, {name}, detail_url, first_seen_at_ms, \
                 last_seen_at_ms, created_at_ms, updated_at_ms) \
                 SELECT e.{id_col}, MIN(e.{name_col}), MIN({url}), MIN(e.created_at_ms), \
                 MAX(e.created_at_ms), MIN(e.created_at_ms), $1 FROM push_events e \
                 WHERE NOT EXISTS (SELECT 1 FROM {table} t WHERE t.github_id = e.{id_col}) \
                 GROUP BY e.{id_col} ON CONFLICT (github_id) DO NOTHING"
                );
                let done = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(ms(now))
                    .execute(pool)
                    .await?;
                match kind {
                    EntityKind::Actor => found.actors_restored = done.rows_affected(),
                    EntityKind::Repository => found.repositories_restored = done.rows_affected(),
                }
                // A row still owed enrichment but resting where no lane looks.
                let sql = format!(
                    "UPDATE {table} SET enrichment_stage = 'batch_pending', lease_token = NULL, \
                 lease_expires_at_ms = NULL, updated_at_ms = $1 \
                 WHERE enrichment_status IN ('pending', 'retryable_failure') \
                 AND enrichment_stage IN ('contract_complete', 'terminal')"
                );
                found.requeued += sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(ms(now))
                    .execute(pool)
                    .await?
                    .rows_affected();
                // Lapsed leases: back to the lane they were claimed from.
                let sql = format!(
                    "UPDATE {table} SET enrichment_stage = CASE \
                     WHEN enrichment_stage = 'detail_in_flight' THEN 'detail_pending' \
                     WHEN enrichment_status = 'complete' THEN 'contract_complete' \
                     WHEN batch_attempts > 0 THEN 'retry_scheduled' \
                     ELSE 'batch_pending' END, \
                 lease_token = NULL, lease_expires_at_ms = NULL, updated_at_ms = $1 \
                 WHERE enrichment_stage IN ('batch_in_flight', 'detail_in_flight') \
                 AND (lease_token IS NULL OR lease_expires_at_ms IS NULL OR lease_expires_at_ms <= $1)"
                );
                found.leases_reclaimed += sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(ms(now))
                    .execute(pool)
                    .await?
                    .rows_affected();
            }
            found.source_locks_released = sqlx::query(
            "UPDATE event_sources SET lock_token = NULL, lock_expires_at_ms = NULL \
             WHERE lock_token IS NOT NULL AND (lock_expires_at_ms IS NULL OR lock_expires_at_ms <= $1)",
        )
        .bind(ms(now))
        .execute(pool)
        .await?
        .rows_affected();
            found.runs_abandoned = sqlx::query(
            "UPDATE ingestion_runs SET status = 'failed', classification = 'abandoned', \
             finished_at_ms = $1, error_message = 'the process running it stopped before it finished' \
             WHERE status = 'running' AND started_at_ms <= $2",
        )
        .bind(ms(now))
        .bind(ms(abandoned_before))
        .execute(pool)
        .await?
        .rows_affected();
            let row = sqlx::query(
                "SELECT (SELECT COUNT(*) FROM actors WHERE enrichment_status IN \
                 ('pending', 'retryable_failure')) AS a, \
             (SELECT COUNT(*) FROM repositories WHERE enrichment_status IN \
                 ('pending', 'retryable_failure')) AS r",
            )
            .fetch_one(pool)
            .await?;
            found.pending_actors = to_u64("pending_actors", get(&row, "a")?)?;
            found.pending_repositories = to_u64("pending_repositories", get(&row, "r")?)?;
            Ok(found)
        })
    }

    async fn release(
        &self,
        kind: EntityKind,
        token: &str,
        lane: Lane,
        now: Timestamp,
    ) -> Result<()> {
        on_each_pool!(self.pools(), |pool| {
            let table = kind.table();
            let back = match lane {
                Lane::Batch => {
                    "CASE WHEN enrichment_status = 'complete' THEN 'contract_complete' \
                WHEN batch_attempts > 0 THEN 'retry_scheduled' ELSE 'batch_pending' END"
                }
                Lane::Detail => "'detail_pending'",
            };
            let sql = format!(
                "UPDATE {table} SET enrichment_stage = {back}, lease_token = NULL, \
             lease_expires_at_ms = NULL, updated_at_ms = $2 WHERE lease_token = $1"
            );
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(token.to_owned())
                .bind(ms(now))
                .execute(pool)
                .await?;
            Ok(())
        })
    }

    async fn apply(
        &self,
        kind: EntityKind,
        github_id: i64,
        token: &str,
        item: &Enriched,
        now: Timestamp,
    ) -> Result<bool> {
        on_each_pool!(self.pools(), |pool| {
            let common = "enrichment_status = 'complete', enrichment_stage = 'contract_complete', \
             lease_token = NULL, lease_expires_at_ms = NULL, next_retry_at_ms = NULL, \
             contract_complete_at_ms = COALESCE(contract_complete_at_ms, $3), \
             batch_applied_at_ms = COALESCE(batch_applied_at_ms, $3), \
             fetched_at_ms = $3, updated_at_ms = $3, raw_json = $4, last_error = NULL";
            let done = match kind {
                EntityKind::Actor => {
                    let sql = format!(
                        "UPDATE actors SET {common}, login = $5, account_type = $6 \
                     WHERE github_id = $1 AND lease_token = $2"
                    );
                    sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(github_id)
                        .bind(token.to_owned())
                        .bind(ms(now))
                        .bind(sqlx::types::Json(item.raw.clone()))
                        .bind(item.name.clone())
                        .bind(item.account_type.clone())
                        .execute(pool)
                        .await?
                }
                EntityKind::Repository => {
                    let sql = format!(
                        "UPDATE repositories SET {common}, full_name = $5, owner_login = $6, \
                     owner_github_id = $7, fork = $8, archived = $9, default_branch = $10, \
                     github_created_at_ms = $11 WHERE github_id = $1 AND lease_token = $2"
                    );
                    sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(github_id)
                        .bind(token.to_owned())
                        .bind(ms(now))
                        .bind(sqlx::types::Json(item.raw.clone()))
                        .bind(item.name.clone())
                        .bind(item.owner_login.clone())
                        .bind(item.owner_github_id)
                        .bind(item.fork)
                        .bind(item.archived)
                        .bind(item.default_branch.clone())
                        .bind(item.github_created_at.map(ms))
                        .execute(pool)
                        .await?
                }
            };
            Ok(done.rows_affected() == 1)
        })
    }

    async fn admit_detail(
        &self,
        kind: EntityKind,
        github_id: i64,
        token: &str,
        reason: &str,
        now: Timestamp,
    ) -> Result<bool> {
        on_each_pool!(self.pools(), |pool| {
            let table = kind.table();
            let sql = format!(
                "UPDATE {table} SET enrichment_stage = 'detail_pending', lease_token = NULL, \
             lease_expires_at_ms = NULL, batch_attempts = batch_attempts + 1, \
             detail_pending_at_ms = COALESCE(detail_pending_at_ms, $3), last_error = $4, \
             updated_at_ms = $3 WHERE github_id = $1 AND lease_token = $2"
            );
            let done = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(github_id)
                .bind(token.to_owned())
                .bind(ms(now))
                .bind(reason.to_owned())
                .execute(pool)
                .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    async fn schedule_retry(
        &self,
        kind: EntityKind,
        github_id: i64,
        token: &str,
        lane: Lane,
        next_retry_at: Timestamp,
        error: &str,
        now: Timestamp,
    ) -> Result<bool> {
        on_each_pool!(self.pools(), |pool| {
            let table = kind.table();
            let (stage, counter) = match lane {
                Lane::Batch => ("retry_scheduled", "batch_attempts = batch_attempts + 1"),
                Lane::Detail => ("detail_pending", "detail_attempts = detail_attempts + 1"),
            };
            let sql = format!(
                "UPDATE {table} SET enrichment_stage = '{stage}', \
             enrichment_status = CASE WHEN enrichment_status = 'complete' THEN 'complete' \
                 ELSE 'retryable_failure' END, {counter}, next_retry_at_ms = $3, \
             retry_scheduled_at_ms = COALESCE(retry_scheduled_at_ms, $4), last_error = $5, \
             lease_token = NULL, lease_expires_at_ms = NULL, updated_at_ms = $4 \
             WHERE github_id = $1 AND lease_token = $2"
            );
            let done = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(github_id)
                .bind(token.to_owned())
                .bind(ms(next_retry_at))
                .bind(ms(now))
                .bind(redact(error))
                .execute(pool)
                .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    async fn mark_terminal(
        &self,
        kind: EntityKind,
        github_id: i64,
        token: &str,
        reason: &str,
        now: Timestamp,
    ) -> Result<bool> {
        on_each_pool!(self.pools(), |pool| {
            let table = kind.table();
            let sql = format!(
                "UPDATE {table} SET enrichment_status = 'permanent_failure', \
             enrichment_stage = 'terminal', detail_attempts = detail_attempts + 1, \
             terminal_at_ms = COALESCE(terminal_at_ms, $3), terminal_reason = $4, \
             lease_token = NULL, lease_expires_at_ms = NULL, next_retry_at_ms = NULL, \
             updated_at_ms = $3 WHERE github_id = $1 AND lease_token = $2"
            );
            let done = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(github_id)
                .bind(token.to_owned())
                .bind(ms(now))
                .bind(reason.to_owned())
                .execute(pool)
                .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    async fn enrichment_counts(&self, kind: EntityKind) -> Result<EnrichmentCounts> {
        on_each_pool!(self.pools(), |pool| {
            let table = kind.table();
            let sql = format!(
                "SELECT enrichment_status AS s, COUNT(*) AS n FROM {table} GROUP BY enrichment_status"
            );
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                .fetch_all(pool)
                .await?;
            let mut c = EnrichmentCounts::default();
            for r in rows {
                let n = to_u64("count", get(&r, "n")?)?;
                match get::<String>(&r, "s")?.as_str() {
                    "pending" => c.pending = n,
                    "complete" => c.complete = n,
                    "retryable_failure" => c.retryable_failure = n,
                    _ => c.permanent_failure = n,
                }
            }
            Ok(c)
        })
    }

    async fn search_ledger(&self, host: &str, subject: &str) -> Result<Option<SearchLedger>> {
        on_each_pool!(self.pools(), |pool| {
            let row = sqlx::query(
                "SELECT host, subject, window_limit, remaining, request_ceiling, reserve, used, \
             actor_used, repository_used, blocked_until_at_ms, last_request_at_ms, reset_at_ms \
             FROM search_budget_ledger WHERE host = $1 AND subject = $2",
            )
            .bind(host.to_owned())
            .bind(subject.to_owned())
            .fetch_optional(pool)
            .await?;
            let Some(row) = row else { return Ok(None) };
            let u = |c: &'static str| -> Result<u64> { to_u64(c, get::<i64>(&row, c)?) };
            Ok(Some(SearchLedger {
                host: get(&row, "host")?,
                subject: get(&row, "subject")?,
                limit: opt_u64(&row, "window_limit")?,
                remaining: opt_u64(&row, "remaining")?,
                request_ceiling: u("request_ceiling")?,
                reserve: u("reserve")?,
                used: u("used")?,
                actor_used: u("actor_used")?,
                repository_used: u("repository_used")?,
                blocked_until: opt_ts(&row, "blocked_until_at_ms")?,
                last_request_at: opt_ts(&row, "last_request_at_ms")?,
                reset_at: opt_ts(&row, "reset_at_ms")?,
            }))
        })
    }

    async fn save_search_ledger(&self, l: &SearchLedger, now: Timestamp) -> Result<()> {
        on_each_pool!(self.pools(), |pool| {
            sqlx::query(
                "INSERT INTO search_budget_ledger (host, subject, window_limit, remaining, \
             request_ceiling, reserve, used, actor_used, repository_used, blocked_until_at_ms, \
             last_request_at_ms, reset_at_ms, updated_at_ms) VALUES ($1, $2, $3, $4, $5, $6, \
             $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (host, subject) DO UPDATE SET \
             window_limit = excluded.window_limit, remaining = excluded.remaining, \
             request_ceiling = excluded.request_ceiling, reserve = excluded.reserve, \
             used = excluded.used, actor_used = excluded.actor_used, \
             repository_used = excluded.repository_used, \
             blocked_until_at_ms = excluded.blocked_until_at_ms, \
             last_request_at_ms = excluded.last_request_at_ms, \
             reset_at_ms = excluded.reset_at_ms, updated_at_ms = excluded.updated_at_ms",
            )
            .bind(l.host.clone())
            .bind(l.subject.clone())
            .bind(opt_i64("window_limit", l.limit)?)
            .bind(opt_i64("remaining", l.remaining)?)
            .bind(to_i64("request_ceiling", l.request_ceiling)?)
            .bind(to_i64("reserve", l.reserve)?)
            .bind(to_i64("used", l.used)?)
            .bind(to_i64("actor_used", l.actor_used)?)
            .bind(to_i64("repository_used", l.repository_used)?)
            .bind(l.blocked_until.map(ms))
            .bind(l.last_request_at.map(ms))
            .bind(l.reset_at.map(ms))
            .bind(ms(now))
            .execute(pool)
            .await?;
            Ok(())
        })
    }

    async fn record_batch(
        &self,
        correlation_id: &str,
        request_kind: &str,
        kind: EntityKind,
        status: &str,
        requested: u64,
        returned: Option<u64>,
        valid: Option<u64>,
        incomplete_results: Option<bool>,
        http_status: Option<u16>,
        error: Option<&str>,
        started_at: Timestamp,
        finished_at: Timestamp,
    ) -> Result<i64> {
        on_each_pool!(self.pools(), |pool| {
            let missing = match (returned, valid) {
                (Some(_), Some(v)) => Some(requested.saturating_sub(v)),
                _ => None,
            };
            let row = sqlx::query(
                "INSERT INTO enrichment_batches (correlation_id, request_kind, entity_kind, \
             status, requested_count, returned_count, valid_count, missing_count, \
             incomplete_results, http_status, error_message, started_at_ms, finished_at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id",
            )
            .bind(correlation_id.to_owned())
            .bind(request_kind.to_owned())
            .bind(kind.as_str())
            .bind(status.to_owned())
            .bind(to_i64("requested_count", requested)?)
            .bind(opt_i64("returned_count", returned)?)
            .bind(opt_i64("valid_count", valid)?)
            .bind(opt_i64("missing_count", missing)?)
            .bind(incomplete_results)
            .bind(http_status.map(i64::from))
            .bind(error.map(redact))
            .bind(ms(started_at))
            .bind(ms(finished_at))
            .fetch_one(pool)
            .await?;
            get(&row, "id")
        })
    }

    async fn record_observation(
        &self,
        kind: EntityKind,
        github_id: i64,
        source: &str,
        outcome: &str,
        batch_id: Option<i64>,
        raw: &serde_json::Value,
        now: Timestamp,
    ) -> Result<()> {
        on_each_pool!(self.pools(), |pool| {
            sqlx::query(
                "INSERT INTO enrichment_observations (entity_kind, entity_github_id, source, \
             validation_outcome, enrichment_batch_id, observed_at_ms, raw_json) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(kind.as_str())
            .bind(github_id)
            .bind(source.to_owned())
            .bind(outcome.to_owned())
            .bind(batch_id)
            .bind(ms(now))
            .bind(sqlx::types::Json(raw.clone()))
            .execute(pool)
            .await?;
            Ok(())
        })
    }
}
/// The dialect's expression for an entity's detail URL inside an event's raw JSON (alias
/// `e`), used when the reconciler restores a missing entity row.
fn actor_url(pools: Pools<'_>) -> &'static str {
    match pools {
        Pools::Sqlite(_) => "json_extract(e.raw_json, '$.actor.url')",
        Pools::Pg(_) => "(e.raw_json -> 'actor' ->> 'url')",
    }
}

/// As [`actor_url`], for the repository.
fn repository_url(pools: Pools<'_>) -> &'static str {
    match pools {
        Pools::Sqlite(_) => "json_extract(e.raw_json, '$.repo.url')",
        Pools::Pg(_) => "(e.raw_json -> 'repo' ->> 'url')",
    }
}
