//! The feed service's state: event sources and their five-component schedule, the source
//! lease, ingestion runs, the core ledger row, and the figures of the state summary.
//!
//! A separate trait from [`crate::Store`] so the feed's queries live together; both backends
//! implement it with the same SQL ([`feed_state_impl!`]). [`open_feed`] opens a store and its
//! feed state over one pool.

use std::sync::Arc;

use async_trait::async_trait;
use headroom_core::clock::Timestamp;
use serde::Serialize;

use crate::error::Result;
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

macro_rules! feed_state_impl {
    ($store:ty, $db:ty) => {
        const _: () = {
            use headroom_core::redact::redact;
            use sqlx::Row as _;

            use crate::model::{from_ms, from_opt_ms, ms, to_i64, to_u64};

            type DbRow = <$db as sqlx::Database>::Row;

            fn get<T>(row: &DbRow, column: &'static str) -> Result<T>
            where
                T: for<'r> sqlx::Decode<'r, $db> + sqlx::Type<$db>,
            {
                Ok(row.try_get::<T, _>(column)?)
            }

            fn opt_ts(row: &DbRow, column: &'static str) -> Result<Option<Timestamp>> {
                from_opt_ms(column, get::<Option<i64>>(row, column)?)
            }

            fn opt_u64(row: &DbRow, column: &'static str) -> Result<Option<u64>> {
                get::<Option<i64>>(row, column)?
                    .map(|v| to_u64(column, v))
                    .transpose()
            }

            fn source_from(row: &DbRow) -> Result<EventSource> {
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
                    consecutive_failures: to_u64(
                        "consecutive_failures",
                        get(row, "consecutive_failures")?,
                    )?,
                    last_error: get(row, "last_error")?,
                    last_polled_at: opt_ts(row, "last_polled_at_ms")?,
                })
            }

            fn ledger_from(row: &DbRow) -> Result<CoreLedger> {
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
            impl FeedState for $store {
                async fn ensure_event_source(
                    &self,
                    source_type: &str,
                    url: &str,
                    now: Timestamp,
                ) -> Result<EventSource> {
                    sqlx::query::<$db>(
                        "INSERT INTO event_sources (source_type, url, created_at_ms, updated_at_ms) \
                         VALUES ($1, $2, $3, $3) ON CONFLICT (source_type) DO NOTHING",
                    )
                    .bind(source_type.to_owned())
                    .bind(url.to_owned())
                    .bind(ms(now))
                    .execute(self.pool())
                    .await?;
                    let sql = format!(
                        "SELECT {SOURCE_COLUMNS} FROM event_sources WHERE source_type = $1"
                    );
                    let row = sqlx::query::<$db>(sqlx::AssertSqlSafe(sql))
                        .bind(source_type.to_owned())
                        .fetch_one(self.pool())
                        .await?;
                    source_from(&row)
                }

                async fn try_lock_event_source(
                    &self,
                    id: i64,
                    holder: &str,
                    now: Timestamp,
                    until: Timestamp,
                ) -> Result<bool> {
                    let done = sqlx::query::<$db>(
                        "UPDATE event_sources SET lock_token = $2, lock_expires_at_ms = $4 \
                         WHERE id = $1 AND (lock_token IS NULL OR lock_token = $2 \
                         OR lock_expires_at_ms IS NULL OR lock_expires_at_ms <= $3)",
                    )
                    .bind(id)
                    .bind(holder.to_owned())
                    .bind(ms(now))
                    .bind(ms(until))
                    .execute(self.pool())
                    .await?;
                    Ok(done.rows_affected() == 1)
                }

                async fn unlock_event_source(&self, id: i64, holder: &str) -> Result<()> {
                    sqlx::query::<$db>(
                        "UPDATE event_sources SET lock_token = NULL, lock_expires_at_ms = NULL \
                         WHERE id = $1 AND lock_token = $2",
                    )
                    .bind(id)
                    .bind(holder.to_owned())
                    .execute(self.pool())
                    .await?;
                    Ok(())
                }

                async fn save_event_source(
                    &self,
                    s: &EventSource,
                    now: Timestamp,
                ) -> Result<()> {
                    sqlx::query::<$db>(
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
                    .execute(self.pool())
                    .await?;
                    Ok(())
                }

                async fn start_ingestion_run(
                    &self,
                    run_id: &str,
                    event_source_id: Option<i64>,
                    origin: &str,
                    started_at: Timestamp,
                ) -> Result<i64> {
                    let row = sqlx::query::<$db>(
                        "INSERT INTO ingestion_runs (run_id, event_source_id, source, status, \
                         started_at_ms) VALUES ($1, $2, $3, 'running', $4) RETURNING id",
                    )
                    .bind(run_id.to_owned())
                    .bind(event_source_id)
                    .bind(origin.to_owned())
                    .bind(ms(started_at))
                    .fetch_one(self.pool())
                    .await?;
                    get(&row, "id")
                }

                async fn finish_ingestion_run(
                    &self,
                    id: i64,
                    e: &IngestionRunEnd,
                ) -> Result<()> {
                    let summary = serde_json::to_string(e).unwrap_or_default();
                    sqlx::query::<$db>(
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
                    .execute(self.pool())
                    .await?;
                    Ok(())
                }

                async fn core_ledger(
                    &self,
                    host: &str,
                    subject: &str,
                ) -> Result<Option<CoreLedger>> {
                    let sql = format!(
                        "SELECT {LEDGER_COLUMNS} FROM core_budget_ledger \
                         WHERE host = $1 AND subject = $2"
                    );
                    let row = sqlx::query::<$db>(sqlx::AssertSqlSafe(sql))
                        .bind(host.to_owned())
                        .bind(subject.to_owned())
                        .fetch_optional(self.pool())
                        .await?;
                    row.as_ref().map(ledger_from).transpose()
                }

                async fn save_core_ledger(&self, l: &CoreLedger, now: Timestamp) -> Result<()> {
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
                    sqlx::query::<$db>(sqlx::AssertSqlSafe(sql))
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
                        .execute(self.pool())
                        .await?;
                    Ok(())
                }

                async fn feed_overview(&self) -> Result<FeedOverview> {
                    let row = sqlx::query::<$db>(
                        "SELECT (SELECT COUNT(*) FROM push_events) AS push_events, \
                         (SELECT COUNT(*) FROM actors WHERE enrichment_status IN \
                             ('pending', 'retryable_failure')) AS pending_actors, \
                         (SELECT COUNT(*) FROM repositories WHERE enrichment_status IN \
                             ('pending', 'retryable_failure')) AS pending_repositories, \
                         (SELECT COUNT(*) FROM quarantined_events) AS quarantined",
                    )
                    .fetch_one(self.pool())
                    .await?;
                    let latest = sqlx::query::<$db>(
                        "SELECT run_id, finished_at_ms FROM ingestion_runs \
                         WHERE status = 'completed' AND finished_at_ms IS NOT NULL \
                         ORDER BY finished_at_ms DESC, id DESC LIMIT 1",
                    )
                    .fetch_optional(self.pool())
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
                }
            }
        };
    };
}

feed_state_impl!(SqliteStore, sqlx::Sqlite);
feed_state_impl!(PgStore, sqlx::Postgres);
