//! Sync runs (their status, claims and deferral counters) and their per-stage, per-scope
//! checkpoints: what lets a collection resume exactly.

use headroom_core::clock::SignedDuration;
use headroom_core::redact::{redact, redact_json};

pub(crate) mod binding;
mod claims;

pub(crate) use claims::{claim_sync_run, due_sync_runs};

use crate::db::{Conn, Pools, ReadRow, get, on_each_conn, on_each_pool};
use crate::error::{Result, StoreError};
use crate::model::{
    self, Checkpoint, CheckpointStatus, CheckpointUpdate, NewSyncRun, SyncRun, SyncRunStatus, ms,
    to_i64,
};

/// The columns every sync-run query reads.
pub(crate) const SYNC_RUN_COLUMNS: &str = "id, kind, target, host, subject, status, \
    requested_stages, not_before_at_ms, deferral_count, first_deferred_at_ms, total_wait_ms, \
    failure_reason, summary_json, claimed_by, claim_expires_at_ms, created_at_ms, started_at_ms, \
    finished_at_ms, updated_at_ms, credential_fingerprint, credential_owner, \
    rebound_from_fingerprint, rebound_at_ms, rebind_count";
/// The columns every checkpoint query reads.
pub(crate) const CHECKPOINT_COLUMNS: &str = "sync_run_id, stage, scope, status, page_cursor, \
    pages_done, rows_written, detail, updated_at_ms";

const UPSERT_CHECKPOINT: &str = "INSERT INTO sync_checkpoints \
    (sync_run_id, stage, scope, status, page_cursor, pages_done, rows_written, detail, updated_at_ms) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
    ON CONFLICT (sync_run_id, stage, scope) DO UPDATE SET \
    status = excluded.status, page_cursor = excluded.page_cursor, \
    pages_done = sync_checkpoints.pages_done + excluded.pages_done, \
    rows_written = sync_checkpoints.rows_written + excluded.rows_written, \
    detail = excluded.detail, updated_at_ms = excluded.updated_at_ms";

pub(crate) fn sync_run_from(row: &impl ReadRow) -> Result<SyncRun> {
    let requested_stages = row
        .opt_json("requested_stages")?
        .map(serde_json::from_value::<Vec<String>>)
        .transpose()
        .map_err(|e| StoreError::corrupt("requested_stages", e))?;
    Ok(SyncRun {
        id: row.int("id")?,
        kind: row.text("kind")?,
        target: row.text("target")?,
        host: row.text("host")?,
        subject: row.text("subject")?,
        status: SyncRunStatus::parse(&row.text("status")?)?,
        requested_stages,
        not_before: row.opt_ts("not_before_at_ms")?,
        deferral_count: u32::try_from(row.int("deferral_count")?)
            .map_err(|e| StoreError::corrupt("deferral_count", e))?,
        first_deferred_at: row.opt_ts("first_deferred_at_ms")?,
        total_wait: SignedDuration::from_millis(row.int("total_wait_ms")?),
        failure_reason: row.opt_text("failure_reason")?,
        summary: row.opt_json("summary_json")?,
        claimed_by: row.opt_text("claimed_by")?,
        claim_expires_at: row.opt_ts("claim_expires_at_ms")?,
        created_at: row.ts("created_at_ms")?,
        started_at: row.opt_ts("started_at_ms")?,
        finished_at: row.opt_ts("finished_at_ms")?,
        updated_at: row.ts("updated_at_ms")?,
        credential: binding::binding_from(row)?,
    })
}

pub(crate) fn checkpoint_from(row: &impl ReadRow) -> Result<Checkpoint> {
    Ok(Checkpoint {
        sync_run_id: row.int("sync_run_id")?,
        stage: row.text("stage")?,
        scope: row.text("scope")?,
        status: CheckpointStatus::parse(&row.text("status")?)?,
        page_cursor: get(row, "page_cursor")?,
        pages_done: row.uint("pages_done")?,
        rows_written: row.uint("rows_written")?,
        detail: get(row, "detail")?,
        updated_at: row.ts("updated_at_ms")?,
    })
}

pub(crate) async fn create_sync_run(pools: Pools<'_>, run: &NewSyncRun) -> Result<SyncRun> {
    let stages = run
        .requested_stages
        .as_ref()
        .map(|s| sqlx::types::Json(serde_json::json!(s)));
    let subject = model::subject_label(&run.key.subject);
    if let Some(c) = &run.credential {
        if let Some(f) = &c.fingerprint {
            model::check_fingerprint(f)?;
        }
        // A run's quota identity is its host and subject: a credential of another owner
        // would spend another quota under this run's name.
        if c.owner != subject {
            return Err(StoreError::Invalid {
                field: "credential",
                problem: format!("its owner {} is not the run's subject {subject}", c.owner),
            });
        }
    }
    let fingerprint = run.credential.as_ref().and_then(|c| c.fingerprint.clone());
    let owner = run.credential.as_ref().map(|c| c.owner.clone());
    // The run is bound from its first row: the credential it was created with, and the owner
    // that credential resolved to.
    let sql = format!(
        "INSERT INTO sync_runs (kind, target, host, subject, status, requested_stages, \
         created_at_ms, updated_at_ms, credential_fingerprint, credential_owner) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9) \
         RETURNING {SYNC_RUN_COLUMNS}"
    );
    on_each_pool!(pools, |pool| {
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(run.kind.clone())
            .bind(run.target.clone())
            .bind(run.key.host.to_string())
            .bind(subject.clone())
            .bind(SyncRunStatus::Pending.as_str())
            .bind(stages)
            .bind(ms(run.created_at))
            .bind(fingerprint.clone())
            .bind(owner.clone())
            .fetch_one(pool)
            .await?;
        sync_run_from(&row)
    })
}

pub(crate) async fn sync_run(pools: Pools<'_>, id: i64) -> Result<Option<SyncRun>> {
    let sql = format!("SELECT {SYNC_RUN_COLUMNS} FROM sync_runs WHERE id = $1");
    on_each_pool!(pools, |pool| {
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(pool)
            .await?;
        row.as_ref().map(sync_run_from).transpose()
    })
}

pub(crate) async fn save_sync_run(pools: Pools<'_>, run: &SyncRun) -> Result<()> {
    let total_wait =
        i64::try_from(run.total_wait.as_millis()).map_err(|_| StoreError::Invalid {
            field: "total_wait",
            problem: "too long".to_owned(),
        })?;
    let affected = on_each_pool!(pools, |pool| {
        sqlx::query(
            "UPDATE sync_runs SET status = $2, not_before_at_ms = $3, deferral_count = $4, \
             first_deferred_at_ms = $5, total_wait_ms = $6, failure_reason = $7, \
             summary_json = $8, started_at_ms = $9, finished_at_ms = $10, updated_at_ms = $11 \
             WHERE id = $1",
        )
        .bind(run.id)
        .bind(run.status.as_str())
        .bind(run.not_before.map(ms))
        .bind(i64::from(run.deferral_count))
        .bind(run.first_deferred_at.map(ms))
        .bind(total_wait)
        .bind(run.failure_reason.as_deref().map(redact))
        .bind(run.summary.as_ref().map(redact_json).map(sqlx::types::Json))
        .bind(run.started_at.map(ms))
        .bind(run.finished_at.map(ms))
        .bind(ms(run.updated_at))
        .execute(pool)
        .await?
        .rows_affected()
    });
    if affected == 0 {
        return Err(StoreError::NotFound(format!("sync run {}", run.id)));
    }
    Ok(())
}

/// The oldest run of `kind` and `target` for `key` that has not finished (pending, running or
/// hibernating), if any: a second start of the same collection attaches to it or is refused,
/// never run twice on one quota.
pub(crate) async fn unfinished_sync_run(
    pools: Pools<'_>,
    kind: &str,
    target: &str,
    key: &headroom_core::QuotaKey,
) -> Result<Option<SyncRun>> {
    let sql = format!(
        "SELECT {SYNC_RUN_COLUMNS} FROM sync_runs \
         WHERE kind = $1 AND target = $2 AND host = $3 AND subject = $4 \
           AND status IN ('pending', 'running', 'hibernating') \
         ORDER BY id LIMIT 1"
    );
    on_each_pool!(pools, |pool| {
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(kind.to_owned())
            .bind(target.to_owned())
            .bind(key.host.to_string())
            .bind(model::subject_label(&key.subject))
            .fetch_optional(pool)
            .await?;
        row.as_ref().map(sync_run_from).transpose()
    })
}

pub(crate) async fn release_sync_run(pools: Pools<'_>, id: i64, holder: &str) -> Result<()> {
    on_each_pool!(pools, |pool| {
        sqlx::query(
            "UPDATE sync_runs SET claimed_by = NULL, claim_expires_at_ms = NULL \
             WHERE id = $1 AND claimed_by = $2",
        )
        .bind(id)
        .bind(holder.to_owned())
        .execute(pool)
        .await?;
        Ok(())
    })
}

pub(crate) async fn checkpoints(pools: Pools<'_>, sync_run_id: i64) -> Result<Vec<Checkpoint>> {
    let sql = format!(
        "SELECT {CHECKPOINT_COLUMNS} FROM sync_checkpoints WHERE sync_run_id = $1 \
         ORDER BY stage, scope"
    );
    on_each_pool!(pools, |pool| {
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(sync_run_id)
            .fetch_all(pool)
            .await?;
        rows.iter().map(checkpoint_from).collect()
    })
}

pub(crate) async fn checkpoint(
    pools: Pools<'_>,
    sync_run_id: i64,
    stage: &str,
    scope: &str,
) -> Result<Option<Checkpoint>> {
    let sql = format!(
        "SELECT {CHECKPOINT_COLUMNS} FROM sync_checkpoints \
         WHERE sync_run_id = $1 AND stage = $2 AND scope = $3"
    );
    on_each_pool!(pools, |pool| {
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(sync_run_id)
            .bind(stage.to_owned())
            .bind(scope.to_owned())
            .fetch_optional(pool)
            .await?;
        row.as_ref().map(checkpoint_from).transpose()
    })
}

/// Writes a checkpoint on `conn` (inside the page's transaction, or on its own).
pub(crate) async fn set_checkpoint(conn: &mut Conn<'_>, u: &CheckpointUpdate) -> Result<()> {
    let (pages, rows) = (
        to_i64("pages_added", u.pages_added)?,
        to_i64("rows_added", u.rows_added)?,
    );
    on_each_conn!(conn, |c| {
        sqlx::query(UPSERT_CHECKPOINT)
            .bind(u.sync_run_id)
            .bind(u.stage.clone())
            .bind(u.scope.clone())
            .bind(u.status.as_str())
            .bind(u.page_cursor.clone())
            .bind(pages)
            .bind(rows)
            .bind(u.detail.as_deref().map(redact))
            .bind(ms(u.at))
            .execute(&mut *c)
            .await?;
        Ok(())
    })
}

/// [`set_checkpoint`] on a connection of its own.
pub(crate) async fn set_checkpoint_alone(pools: Pools<'_>, u: &CheckpointUpdate) -> Result<()> {
    match pools {
        Pools::Sqlite(pool) => {
            let mut c = pool.acquire().await?;
            set_checkpoint(&mut Conn::Sqlite(&mut c), u).await
        }
        Pools::Pg(pool) => {
            let mut c = pool.acquire().await?;
            set_checkpoint(&mut Conn::Pg(&mut c), u).await
        }
    }
}
