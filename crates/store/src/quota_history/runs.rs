//! The dashboard's other reads: keyset pages of sync runs, one identity's rate-limit
//! observations, and the activity mark that tells the event stream whether anything changed.
//! Rows are read with their aggregates' own column lists and mappers.

use headroom_core::clock::Timestamp;

use crate::db::{Pools, ReadRow, on_each_pool};
use crate::error::Result;
use crate::model::{StoredObservation, SyncRun, ms};
use crate::sync::{SYNC_RUN_COLUMNS as RUN_COLUMNS, sync_run_from as run_from};
use crate::usage::{OBSERVATION_COLUMNS, observation_from};

use super::ActivityMark;

const MARK_SQL: &str = "SELECT (SELECT MAX(id) FROM quota_readings) AS reading, \
    (SELECT MAX(id) FROM rate_limit_observations) AS observation, \
    (SELECT MAX(updated_at_ms) FROM sync_runs) AS run_updated, \
    (SELECT MAX(updated_at_ms) FROM sync_checkpoints) AS checkpoint_updated";

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
