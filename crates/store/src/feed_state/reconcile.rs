//! The reconciler: restores missing entity rows, requeues and reclaims lapsed work, releases stale source locks and abandons dead runs.

use super::rows::*;
use super::*;

pub(super) async fn reconcile(
    pools: Pools<'_>,
    now: Timestamp,
    abandoned_before: Timestamp,
) -> Result<Reconciled> {
    on_each_pool!(pools, |pool| {
        let mut found = Reconciled::default();
        // Entities an event references but whose row is gone: a stub from the
        // event's own columns, pending, created at the oldest referencing event's
        // arrival so FIFO order is what it would have been.
        for (kind, id_col, name_col, url) in [
            (
                EntityKind::Actor,
                "github_actor_id",
                "actor_login",
                actor_url(pools),
            ),
            (
                EntityKind::Repository,
                "github_repository_id",
                "repository_name",
                repository_url(pools),
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
            "UPDATE ingestion_runs SET status = $3, classification = 'abandoned', \
         finished_at_ms = $1, error_message = 'the process running it stopped before it finished' \
         WHERE status = $4 AND started_at_ms <= $2",
        )
        .bind(ms(now))
        .bind(ms(abandoned_before))
        .bind(IngestionRunStatus::Failed.as_str())
        .bind(IngestionRunStatus::Running.as_str())
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
