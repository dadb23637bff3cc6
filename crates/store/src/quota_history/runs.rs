//! The dashboard's other reads: keyset pages of sync runs, one identity's rate-limit
//! observations, and the activity mark that tells the event stream whether anything changed.
//!
//! JSON columns are read as text (`CAST … AS TEXT`) so one row mapper reads SQLite's TEXT and
//! PostgreSQL's JSONB alike.

use headroom_core::clock::{SignedDuration, Timestamp};

use crate::db::{Pools, ReadRow, on_each_pool};
use crate::error::{Result, StoreError};
use crate::model::{StoredObservation, SyncRun, SyncRunStatus, ms};

use super::ActivityMark;

const RUN_COLUMNS: &str = "id, kind, target, host, subject, status, \
    CAST(requested_stages AS TEXT) AS requested_stages_text, not_before_at_ms, deferral_count, \
    first_deferred_at_ms, total_wait_ms, failure_reason, CAST(summary_json AS TEXT) AS summary_text, \
    claimed_by, claim_expires_at_ms, created_at_ms, started_at_ms, finished_at_ms, updated_at_ms";

const OBSERVATION_COLUMNS: &str = "id, provider, host, subject, credential_fingerprint, \
    sync_run_id, bucket, route_family, route_family_attribution, dimension, reason, \
    retry_after_secs, reset_at_ms, rate_limit, remaining, used, request_id, observed_at_ms";

const MARK_SQL: &str = "SELECT (SELECT MAX(id) FROM quota_readings) AS reading, \
    (SELECT MAX(id) FROM rate_limit_observations) AS observation, \
    (SELECT MAX(updated_at_ms) FROM sync_runs) AS run_updated, \
    (SELECT MAX(updated_at_ms) FROM sync_checkpoints) AS checkpoint_updated";

fn json_text(row: &impl ReadRow, column: &'static str) -> Result<Option<serde_json::Value>> {
    row.opt_text(column)?
        .map(|text| serde_json::from_str(&text).map_err(|e| StoreError::corrupt(column, e)))
        .transpose()
}

fn opt_u64(row: &impl ReadRow, column: &'static str) -> Result<Option<u64>> {
    row.opt_int(column)?
        .map(|v| u64::try_from(v).map_err(|e| StoreError::corrupt(column, e)))
        .transpose()
}

fn run_from(row: &impl ReadRow) -> Result<SyncRun> {
    let stages = json_text(row, "requested_stages_text")?
        .map(|value| {
            serde_json::from_value::<Vec<String>>(value)
                .map_err(|e| StoreError::corrupt("requested_stages", e))
        })
        .transpose()?;
    let deferrals = row.int("deferral_count")?;
    Ok(SyncRun {
        id: row.int("id")?,
        kind: row.text("kind")?,
        target: row.text("target")?,
        host: row.text("host")?,
        subject: row.text("subject")?,
        status: SyncRunStatus::parse(&row.text("status")?)?,
        requested_stages: stages,
        not_before: row.opt_ts("not_before_at_ms")?,
        deferral_count: u32::try_from(deferrals)
            .map_err(|e| StoreError::corrupt("deferral_count", e))?,
        first_deferred_at: row.opt_ts("first_deferred_at_ms")?,
        total_wait: SignedDuration::from_millis(row.int("total_wait_ms")?),
        failure_reason: row.opt_text("failure_reason")?,
        summary: json_text(row, "summary_text")?,
        claimed_by: row.opt_text("claimed_by")?,
        claim_expires_at: row.opt_ts("claim_expires_at_ms")?,
        created_at: row.ts("created_at_ms")?,
        started_at: row.opt_ts("started_at_ms")?,
        finished_at: row.opt_ts("finished_at_ms")?,
        updated_at: row.ts("updated_at_ms")?,
    })
}

fn observation_from(row: &impl ReadRow) -> Result<StoredObservation> {
    Ok(StoredObservation {
        id: row.int("id")?,
        provider: row.text("provider")?,
        host: row.text("host")?,
        subject: row.text("subject")?,
        credential_fingerprint: row.opt_text("credential_fingerprint")?,
        sync_run_id: row.opt_int("sync_run_id")?,
        bucket: row.opt_text("bucket")?,
        route_family: row.opt_text("route_family")?,
        route_family_attribution: row.opt_text("route_family_attribution")?,
        dimension: row.opt_text("dimension")?,
        reason: row.opt_text("reason")?,
        retry_after_secs: opt_u64(row, "retry_after_secs")?,
        reset_at: row.opt_ts("reset_at_ms")?,
        limit: opt_u64(row, "rate_limit")?,
        remaining: opt_u64(row, "remaining")?,
        used: opt_u64(row, "used")?,
        request_id: row.opt_text("request_id")?,
        observed_at: row.ts("observed_at_ms")?,
    })
}

/// Sync runs newest first, before `before_id` when given.
pub(super) async fn sync_runs_page(
    pools: Pools<'_>,
    before_id: Option<i64>,
    limit: u32,
) -> Result<Vec<SyncRun>> {
    let sql = match before_id {
        Some(_) => {
            format!("SELECT {RUN_COLUMNS} FROM sync_runs WHERE id < $1 ORDER BY id DESC LIMIT $2")
        }
        None => format!("SELECT {RUN_COLUMNS} FROM sync_runs ORDER BY id DESC LIMIT $1"),
    };
    on_each_pool!(pools, |pool| {
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        if let Some(id) = before_id {
            query = query.bind(id);
        }
        let rows = query.bind(i64::from(limit)).fetch_all(pool).await?;
        rows.iter().map(run_from).collect()
    })
}

/// One identity's observations since `since`, newest first.
pub(super) async fn observations_of(
    pools: Pools<'_>,
    host: &str,
    subject: &str,
    since: Timestamp,
    limit: u32,
) -> Result<Vec<StoredObservation>> {
    let sql = format!(
        "SELECT {OBSERVATION_COLUMNS} FROM rate_limit_observations \
         WHERE host = $1 AND subject = $2 AND observed_at_ms >= $3 \
         ORDER BY observed_at_ms DESC, id DESC LIMIT $4"
    );
    on_each_pool!(pools, |pool| {
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(host)
            .bind(subject)
            .bind(ms(since))
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?;
        rows.iter().map(observation_from).collect()
    })
}

/// The newest ids and update instants the dashboard's snapshot depends on.
pub(super) async fn activity_mark(pools: Pools<'_>) -> Result<ActivityMark> {
    on_each_pool!(pools, |pool| {
        let row = sqlx::query(MARK_SQL).fetch_one(pool).await?;
        Ok(ActivityMark {
            quota_reading: row.opt_int("reading")?,
            observation: row.opt_int("observation")?,
            sync_run_updated: row.opt_ts("run_updated")?,
            checkpoint_updated: row.opt_ts("checkpoint_updated")?,
        })
    })
}
