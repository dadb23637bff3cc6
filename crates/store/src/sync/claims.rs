//! Who drives a sync run: claims that lapse, and the runs due for a worker.
//!
//! A claim outlives a killed holder by its TTL (two minutes by default), which a restarted
//! `sync org` would otherwise spend refused behind its own ghost. A claim whose holder is a
//! [`ProcessMark`] of this machine and pid namespace naming a process that no longer runs is
//! free at once — as the governor's leases of such a holder are — for the next claimer, and
//! such a run is due for a worker. A claim from another machine or container, or under a
//! holder string that is not a mark, keeps its TTL: nothing here can tell it is gone.

use headroom_core::clock::Timestamp;

use super::{SYNC_RUN_COLUMNS, sync_run_from};
use crate::db::{Pools, on_each_pool};
use crate::error::Result;
use crate::model::{SyncRun, ms};
use crate::quota::ProcessMark;

/// Claims run `id` for `holder` until `until`: when it is unclaimed, already `holder`'s, its
/// claim lapsed, or its holder provably no longer runs. Never a finished run.
pub(crate) async fn claim_sync_run(
    pools: Pools<'_>,
    id: i64,
    holder: &str,
    now: Timestamp,
    until: Timestamp,
) -> Result<bool> {
    let claimed = on_each_pool!(pools, |pool| {
        let done = sqlx::query(
            "UPDATE sync_runs SET claimed_by = $2, claim_expires_at_ms = $4 \
             WHERE id = $1 AND status NOT IN ('done', 'failed') \
             AND (claimed_by IS NULL OR claimed_by = $2 OR claim_expires_at_ms <= $3)",
        )
        .bind(id)
        .bind(holder.to_owned())
        .bind(ms(now))
        .bind(ms(until))
        .execute(pool)
        .await?;
        Ok::<bool, crate::error::StoreError>(done.rows_affected() == 1)
    })?;
    if claimed {
        return Ok(true);
    }
    let current: Option<Option<String>> = on_each_pool!(pools, |pool| {
        sqlx::query_scalar(
            "SELECT claimed_by FROM sync_runs WHERE id = $1 AND status NOT IN ('done', 'failed')",
        )
        .bind(id)
        .fetch_optional(pool)
        .await
    })?;
    let Some(gone) = current.flatten().filter(|h| ProcessMark::holder_is_gone(h)) else {
        return Ok(false);
    };
    // Taken from that holder only: a live claimer that got there first keeps it.
    on_each_pool!(pools, |pool| {
        let done = sqlx::query(
            "UPDATE sync_runs SET claimed_by = $2, claim_expires_at_ms = $4 \
             WHERE id = $1 AND status NOT IN ('done', 'failed') AND claimed_by = $3",
        )
        .bind(id)
        .bind(holder.to_owned())
        .bind(gone.clone())
        .bind(ms(until))
        .execute(pool)
        .await?;
        Ok(done.rows_affected() == 1)
    })
}

/// The runs a worker may take up at `now`, oldest wake first, at most `limit`: pending ones,
/// hibernating ones whose wake time has come, and running ones whose claim lapsed or whose
/// holder provably no longer runs.
pub(crate) async fn due_sync_runs(
    pools: Pools<'_>,
    now: Timestamp,
    limit: u32,
) -> Result<Vec<SyncRun>> {
    let sql = format!(
        "SELECT {SYNC_RUN_COLUMNS} FROM sync_runs \
         WHERE status = 'pending' \
            OR (status = 'hibernating' AND (not_before_at_ms IS NULL OR not_before_at_ms <= $1)) \
            OR (status = 'running' AND (claimed_by IS NULL OR claim_expires_at_ms <= $1)) \
         ORDER BY COALESCE(not_before_at_ms, created_at_ms), id LIMIT $2"
    );
    let mut due: Vec<SyncRun> = on_each_pool!(pools, |pool| {
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(ms(now))
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?;
        rows.iter().map(sync_run_from).collect::<Result<Vec<_>>>()
    })?;
    let held = format!(
        "SELECT {SYNC_RUN_COLUMNS} FROM sync_runs \
         WHERE status = 'running' AND claimed_by IS NOT NULL AND claim_expires_at_ms > $1"
    );
    let held: Vec<SyncRun> = on_each_pool!(pools, |pool| {
        let rows = sqlx::query(sqlx::AssertSqlSafe(held))
            .bind(ms(now))
            .fetch_all(pool)
            .await?;
        rows.iter().map(sync_run_from).collect::<Result<Vec<_>>>()
    })?;
    let abandoned = held.into_iter().filter(|r| {
        r.claimed_by
            .as_deref()
            .is_some_and(ProcessMark::holder_is_gone)
    });
    due.extend(abandoned);
    due.sort_by_key(|r| (r.not_before.unwrap_or(r.created_at), r.id));
    due.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    Ok(due)
}
