//! Read-only queries behind the feed's HTTP surface and `headroom status`: schema readiness,
//! the enrichment backlog by stage, batch quality, throughput counts, coverage, and keyset
//! pages of push events.
//!
//! Every function here is a plain `SELECT`: nothing in this module writes, takes a lease or
//! opens a write transaction, so a read endpoint built on it cannot spend budget or change
//! state. Both backends run the same SQL: each query is written once over [`crate::db::Pools`].

use async_trait::async_trait;
use headroom_core::clock::Timestamp;
use serde::Serialize;

use std::sync::Arc;

use crate::db::{OnPool, Pools, ReadRow, on_each_pool};
use crate::error::Result;
use crate::model::ms;

use crate::feed_state::{
    BatchStatus, EnrichmentStage, EnrichmentStatus, EntityKind, EventSource, FeedStateRead, Lane,
    RequestKind,
};
use crate::{PgStore, SqliteStore, Store};

/// Which migrations the database has applied, against the ones this build ships.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SchemaState {
    /// Versions applied successfully.
    pub applied: Vec<i64>,
    /// Versions this build expects.
    pub expected: Vec<i64>,
}

impl SchemaState {
    /// Every expected migration is applied.
    pub fn is_current(&self) -> bool {
        self.expected.iter().all(|v| self.applied.contains(v))
    }
}

/// One resting stage of a class: how many rows rest there and the oldest one's `created_at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StageCount {
    /// The stage.
    pub stage: EnrichmentStage,
    /// Rows in it.
    pub count: u64,
    /// The oldest row's `created_at` (none when empty).
    pub oldest_created_at: Option<Timestamp>,
}

/// The seven resting stages, in pipeline order.
pub const STAGES: &[EnrichmentStage] = EnrichmentStage::ALL;

/// One class's backlog, by status and by stage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntityBacklog {
    /// `pending` rows.
    pub pending: u64,
    /// `complete` rows.
    pub complete: u64,
    /// `retryable_failure` rows.
    pub retryable_failure: u64,
    /// `permanent_failure` rows.
    pub permanent_failure: u64,
    /// Oldest `created_at` among pending and retryable rows.
    pub oldest_backlog_created_at: Option<Timestamp>,
    /// Rows neither at the contract nor terminal.
    pub contract_backlog: u64,
    /// All seven stages, in [`STAGES`] order, zeros included.
    pub stages: Vec<StageCount>,
}

/// Enrichment request envelopes of one (request kind, entity kind) group over a window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct BatchGroup {
    /// Envelopes recorded.
    pub attempts: u64,
    /// Still in flight.
    pub in_flight: u64,
    /// Succeeded.
    pub succeeded: u64,
    /// Failed.
    pub failed: u64,
    /// Deferred (nothing applied; the rows went back).
    pub deferred: u64,
    /// Reclaimed after a lapsed lease.
    pub stale_lease: u64,
    /// Items asked for.
    pub requested_items: u64,
    /// Items the responses carried.
    pub returned_items: u64,
    /// Items that applied by id.
    pub valid_items: u64,
    /// Items asked for that were not applied.
    pub missing_items: u64,
    /// Items refused by validation.
    pub invalid_items: u64,
    /// Envelopes that carried `incomplete_results: true`.
    pub incomplete_results: u64,
}

/// Entity arrivals and exits of one class inside a window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct EntityFlow {
    /// Rows created (new backlog).
    pub arrivals: u64,
    /// Rows that first reached the useful-data contract.
    pub completions: u64,
    /// Rows that went terminal.
    pub terminals: u64,
}

/// Push events persisted inside a window and how many have their entities enriched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CoverageCounts {
    /// Events persisted in the window.
    pub events: u64,
    /// Of those, events whose actor is `complete`.
    pub actor_complete: u64,
    /// Of those, events whose repository is `complete`.
    pub repository_complete: u64,
    /// Of those, events whose actor and repository are both `complete`.
    pub both_complete: u64,
}

/// An actor or repository as a push event row nests it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntitySummary {
    /// GitHub's id.
    pub github_id: i64,
    /// Login or full name (the latest projection).
    pub name: String,
    /// Where its enrichment has come to.
    pub enrichment_status: EnrichmentStatus,
    /// The resting stage.
    pub enrichment_stage: EnrichmentStage,
    /// When enrichment last succeeded.
    pub fetched_at: Option<Timestamp>,
}

/// One stored push event (no raw payload), with its entities.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PushEventRow {
    /// GitHub's event id: the public identifier.
    pub github_event_id: String,
    /// `payload.push_id`.
    pub github_push_id: Option<i64>,
    /// `payload.ref`.
    pub git_ref: String,
    /// `payload.head`.
    pub head_sha: String,
    /// `payload.before`, when the event had one.
    pub before_sha: Option<String>,
    /// `payload.size`.
    pub commit_count: Option<i64>,
    /// `payload.distinct_size`.
    pub distinct_commit_count: Option<i64>,
    /// GitHub's `created_at`.
    pub occurred_at: Timestamp,
    /// When headroom persisted it.
    pub created_at: Timestamp,
    /// `feed` or `gharchive`.
    pub source: String,
    /// The actor.
    pub actor: EntitySummary,
    /// The repository.
    pub repository: EntitySummary,
}

/// A keyset position in the newest-first list: the last row served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushEventKey {
    /// Its `occurred_at`, epoch milliseconds.
    pub occurred_at_ms: i64,
    /// Its GitHub event id (the tie-break, so the surrogate key never leaves the store).
    pub github_event_id: String,
}

impl PushEventRow {
    /// The keyset position just after this row.
    pub fn key(&self) -> PushEventKey {
        PushEventKey {
            occurred_at_ms: self.occurred_at.as_millisecond(),
            github_event_id: self.github_event_id.clone(),
        }
    }
}

/// Filters of the push event list (GitHub ids).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PushEventFilter {
    /// Only this actor's events.
    pub actor_id: Option<i64>,
    /// Only this repository's events.
    pub repository_id: Option<i64>,
}

/// The feed's read-only report queries.
#[async_trait]
pub trait FeedReport: Send + Sync + std::fmt::Debug {
    /// Which migrations are applied; fails when the database does not answer, or is no
    /// longer the one opened (an SQLite file deleted or replaced since).
    async fn schema_state(&self) -> Result<SchemaState>;

    /// Every event source, by type.
    async fn event_sources(&self) -> Result<Vec<EventSource>>;

    /// One class's backlog by status and stage.
    async fn entity_backlog(&self, kind: EntityKind) -> Result<EntityBacklog>;

    /// The earliest instant after `now` at which a row of this lane that is not claimable
    /// now (backoff or live lease) becomes claimable.
    async fn next_claimable_at(
        &self,
        kind: EntityKind,
        lane: Lane,
        now: Timestamp,
    ) -> Result<Option<Timestamp>>;

    /// Whether a row of this lane is claimable at `now` (a read: claims nothing).
    async fn claimable(&self, kind: EntityKind, lane: Lane, now: Timestamp) -> Result<bool>;

    /// Enrichment envelopes started in `[since, until]`, per (request kind, entity kind):
    /// `(request_kind, entity_kind, group)`, only groups with rows.
    async fn batch_groups(
        &self,
        since: Timestamp,
        until: Timestamp,
    ) -> Result<Vec<(RequestKind, EntityKind, BatchGroup)>>;

    /// Arrivals, completions and terminals of one class in `[since, until]`.
    async fn entity_flow(
        &self,
        kind: EntityKind,
        since: Timestamp,
        until: Timestamp,
    ) -> Result<EntityFlow>;

    /// The first instant this database recorded feed activity (an ingestion run or a
    /// persisted event), if any.
    async fn first_activity_at(&self) -> Result<Option<Timestamp>>;

    /// Coverage counts over events persisted in `[since, until]`.
    async fn coverage(&self, since: Timestamp, until: Timestamp) -> Result<CoverageCounts>;

    /// Up to `limit` events, newest first by (occurred_at, github_event_id), strictly after
    /// `after` in that order.
    async fn push_events_page(
        &self,
        filter: PushEventFilter,
        after: Option<&PushEventKey>,
        limit: u32,
    ) -> Result<Vec<PushEventRow>>;

    /// One event with its raw payload.
    async fn push_event_detail(
        &self,
        github_event_id: &str,
    ) -> Result<Option<(PushEventRow, serde_json::Value)>>;
}

/// Opens the store named by `target` (as [`crate::open`]) with the read halves its reports
/// need — the feed state's reads and the report queries — all over one pool, which on
/// PostgreSQL waits only [`crate::postgres::SERVE_ACQUIRE_TIMEOUT`] for a connection
/// ([`PgStore::connect_to_serve`]): a report says the database is unreachable promptly.
pub async fn open_report(
    target: &str,
) -> Result<(Arc<dyn Store>, Arc<dyn FeedStateRead>, Arc<dyn FeedReport>)> {
    if target.starts_with("postgres://") || target.starts_with("postgresql://") {
        let store = Arc::new(PgStore::connect_to_serve(target).await?);
        Ok((store.clone(), store.clone(), store))
    } else {
        let store = Arc::new(SqliteStore::open(target).await?);
        Ok((store.clone(), store.clone(), store))
    }
}

fn table(kind: EntityKind) -> &'static str {
    match kind {
        EntityKind::Actor => "actors",
        EntityKind::Repository => "repositories",
    }
}

fn lane_stages(lane: Lane) -> &'static str {
    // The same sets the claim uses (feed_state.rs): a lapsed in-flight lease is claimable.
    match lane {
        Lane::Batch => {
            "enrichment_stage IN ('batch_pending', 'retry_scheduled', 'batch_in_flight')"
        }
        Lane::Detail => "enrichment_stage IN ('detail_pending', 'detail_in_flight')",
    }
}

const EVENT_SELECT: &str = "SELECT e.github_event_id, e.github_push_id, e.ref, e.head_sha, \
    e.before_sha, e.commit_count, e.distinct_commit_count, e.occurred_at_ms, e.created_at_ms, \
    e.source, a.github_id AS a_id, a.login AS a_name, a.enrichment_status AS a_status, \
    a.enrichment_stage AS a_stage, a.fetched_at_ms AS a_fetched, r.github_id AS r_id, \
    r.full_name AS r_name, r.enrichment_status AS r_status, r.enrichment_stage AS r_stage, \
    r.fetched_at_ms AS r_fetched";

const EVENT_FROM: &str = " FROM push_events e \
    JOIN actors a ON a.github_id = e.github_actor_id \
    JOIN repositories r ON r.github_id = e.github_repository_id";

fn event_from(row: &impl ReadRow) -> Result<PushEventRow> {
    Ok(PushEventRow {
        github_event_id: row.text("github_event_id")?,
        github_push_id: row.opt_int("github_push_id")?,
        git_ref: row.text("ref")?,
        head_sha: row.text("head_sha")?,
        before_sha: row.opt_text("before_sha")?,
        commit_count: row.opt_int("commit_count")?,
        distinct_commit_count: row.opt_int("distinct_commit_count")?,
        occurred_at: row.ts("occurred_at_ms")?,
        created_at: row.ts("created_at_ms")?,
        source: row.text("source")?,
        actor: EntitySummary {
            github_id: row.int("a_id")?,
            name: row.text("a_name")?,
            enrichment_status: EnrichmentStatus::parse(&row.text("a_status")?)?,
            enrichment_stage: EnrichmentStage::parse(&row.text("a_stage")?)?,
            fetched_at: row.opt_ts("a_fetched")?,
        },
        repository: EntitySummary {
            github_id: row.int("r_id")?,
            name: row.text("r_name")?,
            enrichment_status: EnrichmentStatus::parse(&row.text("r_status")?)?,
            enrichment_stage: EnrichmentStage::parse(&row.text("r_stage")?)?,
            fetched_at: row.opt_ts("r_fetched")?,
        },
    })
}

fn earliest(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// One (stage, status) group of a class's rows, folded into its backlog.
fn add_backlog_group(out: &mut EntityBacklog, row: &impl ReadRow) -> Result<()> {
    let stage = EnrichmentStage::parse(&row.text("stage")?)?;
    let status = EnrichmentStatus::parse(&row.text("status")?)?;
    let n = row.count("n")?;
    let oldest = row.opt_ts("oldest")?;
    match status {
        EnrichmentStatus::Pending => out.pending += n,
        EnrichmentStatus::Complete => out.complete += n,
        EnrichmentStatus::RetryableFailure => out.retryable_failure += n,
        EnrichmentStatus::PermanentFailure => out.permanent_failure += n,
    }
    if status.is_backlog() {
        out.oldest_backlog_created_at = earliest(out.oldest_backlog_created_at, oldest);
    }
    if !stage.is_settled() {
        out.contract_backlog += n;
    }
    if let Some(slot) = out.stages.iter_mut().find(|s| s.stage == stage) {
        slot.count += n;
        slot.oldest_created_at = earliest(slot.oldest_created_at, oldest);
    }
    Ok(())
}

fn empty_backlog() -> EntityBacklog {
    EntityBacklog {
        pending: 0,
        complete: 0,
        retryable_failure: 0,
        permanent_failure: 0,
        oldest_backlog_created_at: None,
        contract_backlog: 0,
        stages: STAGES
            .iter()
            .map(|&stage| StageCount {
                stage,
                count: 0,
                oldest_created_at: None,
            })
            .collect(),
    }
}

/// One (request kind, entity kind, status) group of envelopes, folded into its group.
fn add_batch_group(
    out: &mut Vec<(RequestKind, EntityKind, BatchGroup)>,
    row: &impl ReadRow,
) -> Result<()> {
    let request_kind = RequestKind::parse(&row.text("request_kind")?)?;
    let entity_kind = EntityKind::parse(&row.text("entity_kind")?)?;
    let i = match out
        .iter()
        .position(|(r, e, _)| *r == request_kind && *e == entity_kind)
    {
        Some(i) => i,
        None => {
            out.push((request_kind, entity_kind, BatchGroup::default()));
            out.len() - 1
        }
    };
    let g = &mut out[i].2;
    let n = row.count("n")?;
    g.attempts += n;
    match BatchStatus::parse(&row.text("status")?)? {
        BatchStatus::InFlight => g.in_flight += n,
        BatchStatus::Succeeded => g.succeeded += n,
        BatchStatus::Failed => g.failed += n,
        BatchStatus::Deferred => g.deferred += n,
        BatchStatus::StaleLease => g.stale_lease += n,
    }
    g.requested_items += row.count("requested")?;
    g.returned_items += row.count("returned")?;
    g.valid_items += row.count("valid")?;
    g.missing_items += row.count("missing")?;
    g.invalid_items += row.count("invalid")?;
    g.incomplete_results += row.count("incomplete")?;
    Ok(())
}

/// The keyset page's SQL: filters and the position as numbered placeholders, in bind order.
fn push_events_page_sql(filter: PushEventFilter, after: bool) -> String {
    let mut sql = format!("{EVENT_SELECT}{EVENT_FROM} WHERE 1 = 1");
    let mut n = 0;
    let mut next = || {
        n += 1;
        n
    };
    if filter.actor_id.is_some() {
        sql.push_str(&format!(" AND e.github_actor_id = ${}", next()));
    }
    if filter.repository_id.is_some() {
        sql.push_str(&format!(" AND e.github_repository_id = ${}", next()));
    }
    if after {
        let (a, b) = (next(), next());
        sql.push_str(&format!(
            " AND (e.occurred_at_ms < ${a} \
             OR (e.occurred_at_ms = ${a} AND e.github_event_id < ${b}))"
        ));
    }
    sql.push_str(&format!(
        " ORDER BY e.occurred_at_ms DESC, e.github_event_id DESC LIMIT ${}",
        next()
    ));
    sql
}

const SCHEMA_SQL: &str = "SELECT version FROM _sqlx_migrations WHERE success ORDER BY version";

/// Every source, read with the feed state's own column list and row mapper.
static EVENT_SOURCES_SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT {} FROM event_sources ORDER BY source_type",
        crate::feed_state::SOURCE_COLUMNS
    )
});

const BATCH_GROUPS_SQL: &str = "SELECT request_kind, entity_kind, status, COUNT(*) AS n, \
    CAST(SUM(requested_count) AS BIGINT) AS requested, \
    CAST(SUM(returned_count) AS BIGINT) AS returned, \
    CAST(SUM(valid_count) AS BIGINT) AS valid, \
    CAST(SUM(missing_count) AS BIGINT) AS missing, \
    CAST(SUM(invalid_count) AS BIGINT) AS invalid, \
    CAST(SUM(CASE WHEN incomplete_results THEN 1 ELSE 0 END) AS BIGINT) AS incomplete \
    FROM enrichment_batches WHERE started_at_ms >= $1 AND started_at_ms <= $2 \
    GROUP BY request_kind, entity_kind, status";

const FIRST_ACTIVITY_SQL: &str = "SELECT (SELECT MIN(started_at_ms) FROM ingestion_runs) AS runs, \
    (SELECT MIN(created_at_ms) FROM push_events) AS events";

const COVERAGE_SQL: &str = "SELECT COUNT(*) AS events, \
    CAST(SUM(CASE WHEN a.enrichment_status = 'complete' THEN 1 ELSE 0 END) AS BIGINT) AS actor_complete, \
    CAST(SUM(CASE WHEN r.enrichment_status = 'complete' THEN 1 ELSE 0 END) AS BIGINT) AS repository_complete, \
    CAST(SUM(CASE WHEN a.enrichment_status = 'complete' \
        AND r.enrichment_status = 'complete' THEN 1 ELSE 0 END) AS BIGINT) AS both_complete \
    FROM push_events e \
    JOIN actors a ON a.github_id = e.github_actor_id \
    JOIN repositories r ON r.github_id = e.github_repository_id \
    WHERE e.created_at_ms >= $1 AND e.created_at_ms <= $2";

/// The migration versions this build ships for the pool's backend.
fn expected_migrations(pools: Pools<'_>) -> Vec<i64> {
    let migrator = match pools {
        Pools::Sqlite(_) => sqlx::migrate!("./migrations/sqlite"),
        Pools::Pg(_) => sqlx::migrate!("./migrations/postgres"),
    };
    migrator.iter().map(|m| m.version).collect()
}

// Both backends answer through this one implementation: every query is written once over
// `Pools` and expanded for each pool by `on_each_pool!`.
#[async_trait]
impl<S> FeedReport for S
where
    S: OnPool + Send + Sync + std::fmt::Debug,
{
    async fn schema_state(&self) -> Result<SchemaState> {
        self.check_opened()?;
        let pools = self.pools();
        let applied = on_each_pool!(pools, |pool| {
            let rows = sqlx::query(SCHEMA_SQL).fetch_all(pool).await?;
            rows.iter()
                .map(|r| r.int("version"))
                .collect::<Result<Vec<_>>>()?
        });
        Ok(SchemaState {
            applied,
            expected: expected_migrations(pools),
        })
    }

    async fn event_sources(&self) -> Result<Vec<EventSource>> {
        on_each_pool!(self.pools(), |pool| {
            let rows = sqlx::query(sqlx::AssertSqlSafe(EVENT_SOURCES_SQL.as_str()))
                .fetch_all(pool)
                .await?;
            rows.iter().map(crate::feed_state::source_from).collect()
        })
    }

    async fn entity_backlog(&self, kind: EntityKind) -> Result<EntityBacklog> {
        let t = table(kind);
        let sql = format!(
            "SELECT enrichment_stage AS stage, enrichment_status AS status, \
             COUNT(*) AS n, MIN(created_at_ms) AS oldest FROM {t} \
             GROUP BY enrichment_stage, enrichment_status"
        );
        let mut out = empty_backlog();
        on_each_pool!(self.pools(), |pool| {
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                .fetch_all(pool)
                .await?;
            for row in &rows {
                add_backlog_group(&mut out, row)?;
            }
        });
        Ok(out)
    }

    async fn next_claimable_at(
        &self,
        kind: EntityKind,
        lane: Lane,
        now: Timestamp,
    ) -> Result<Option<Timestamp>> {
        let t = table(kind);
        let stages = lane_stages(lane);
        // A row is claimable once both its backoff and any lease on it have passed.
        let sql = format!(
            "SELECT MIN(ready) AS ready FROM (SELECT CASE \
               WHEN lease_token IS NOT NULL AND lease_expires_at_ms IS NOT NULL \
                    AND (next_retry_at_ms IS NULL OR lease_expires_at_ms > next_retry_at_ms) \
                 THEN lease_expires_at_ms \
               ELSE next_retry_at_ms END AS ready \
             FROM {t} WHERE {stages}) s WHERE ready > $1"
        );
        on_each_pool!(self.pools(), |pool| {
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(ms(now))
                .fetch_one(pool)
                .await?;
            row.opt_ts("ready")
        })
    }

    async fn claimable(&self, kind: EntityKind, lane: Lane, now: Timestamp) -> Result<bool> {
        let t = table(kind);
        let stages = lane_stages(lane);
        let sql = format!(
            "SELECT COUNT(*) AS n FROM (SELECT 1 AS one FROM {t} WHERE {stages} \
             AND (next_retry_at_ms IS NULL OR next_retry_at_ms <= $1) \
             AND (lease_token IS NULL OR lease_expires_at_ms IS NULL \
                  OR lease_expires_at_ms <= $1) LIMIT 1) s"
        );
        on_each_pool!(self.pools(), |pool| {
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(ms(now))
                .fetch_one(pool)
                .await?;
            Ok(row.count("n")? > 0)
        })
    }

    async fn batch_groups(
        &self,
        since: Timestamp,
        until: Timestamp,
    ) -> Result<Vec<(RequestKind, EntityKind, BatchGroup)>> {
        let mut out = Vec::new();
        on_each_pool!(self.pools(), |pool| {
            let rows = sqlx::query(BATCH_GROUPS_SQL)
                .bind(ms(since))
                .bind(ms(until))
                .fetch_all(pool)
                .await?;
            for row in &rows {
                add_batch_group(&mut out, row)?;
            }
        });
        Ok(out)
    }

    async fn entity_flow(
        &self,
        kind: EntityKind,
        since: Timestamp,
        until: Timestamp,
    ) -> Result<EntityFlow> {
        let t = table(kind);
        let sql = format!(
            "SELECT \
             (SELECT COUNT(*) FROM {t} WHERE created_at_ms >= $1 AND created_at_ms <= $2) AS arrivals, \
             (SELECT COUNT(*) FROM {t} WHERE contract_complete_at_ms >= $1 \
                 AND contract_complete_at_ms <= $2) AS completions, \
             (SELECT COUNT(*) FROM {t} WHERE terminal_at_ms >= $1 AND terminal_at_ms <= $2) AS terminals"
        );
        on_each_pool!(self.pools(), |pool| {
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(ms(since))
                .bind(ms(until))
                .fetch_one(pool)
                .await?;
            Ok(EntityFlow {
                arrivals: row.count("arrivals")?,
                completions: row.count("completions")?,
                terminals: row.count("terminals")?,
            })
        })
    }

    async fn first_activity_at(&self) -> Result<Option<Timestamp>> {
        on_each_pool!(self.pools(), |pool| {
            let row = sqlx::query(FIRST_ACTIVITY_SQL).fetch_one(pool).await?;
            Ok(earliest(row.opt_ts("runs")?, row.opt_ts("events")?))
        })
    }

    async fn coverage(&self, since: Timestamp, until: Timestamp) -> Result<CoverageCounts> {
        on_each_pool!(self.pools(), |pool| {
            let row = sqlx::query(COVERAGE_SQL)
                .bind(ms(since))
                .bind(ms(until))
                .fetch_one(pool)
                .await?;
            Ok(CoverageCounts {
                events: row.count("events")?,
                actor_complete: row.count("actor_complete")?,
                repository_complete: row.count("repository_complete")?,
                both_complete: row.count("both_complete")?,
            })
        })
    }

    async fn push_events_page(
        &self,
        filter: PushEventFilter,
        after: Option<&PushEventKey>,
        limit: u32,
    ) -> Result<Vec<PushEventRow>> {
        let sql = push_events_page_sql(filter, after.is_some());
        on_each_pool!(self.pools(), |pool| {
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            if let Some(id) = filter.actor_id {
                query = query.bind(id);
            }
            if let Some(id) = filter.repository_id {
                query = query.bind(id);
            }
            if let Some(key) = after {
                query = query
                    .bind(key.occurred_at_ms)
                    .bind(key.github_event_id.clone());
            }
            let rows = query.bind(i64::from(limit)).fetch_all(pool).await?;
            rows.iter().map(event_from).collect()
        })
    }

    async fn push_event_detail(
        &self,
        github_event_id: &str,
    ) -> Result<Option<(PushEventRow, serde_json::Value)>> {
        let sql = format!("{EVENT_SELECT}, e.raw_json{EVENT_FROM} WHERE e.github_event_id = $1");
        on_each_pool!(self.pools(), |pool| {
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(github_event_id.to_owned())
                .fetch_optional(pool)
                .await?;
            let Some(row) = row else { return Ok(None) };
            let raw = row.json("raw_json")?;
            Ok(Some((event_from(&row)?, raw)))
        })
    }
}
