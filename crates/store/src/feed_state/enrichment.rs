//! Enrichment outcomes: applied results, detail admission, retries, terminal rows, per-class counts, and the request envelopes.

use super::rows::*;
use super::*;

pub(super) async fn apply(
    pools: Pools<'_>,
    kind: EntityKind,
    github_id: i64,
    token: &str,
    item: &Enriched,
    now: Timestamp,
) -> Result<bool> {
    on_each_pool!(pools, |pool| {
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

pub(super) async fn admit_detail(
    pools: Pools<'_>,
    kind: EntityKind,
    github_id: i64,
    token: &str,
    reason: &str,
    now: Timestamp,
) -> Result<bool> {
    on_each_pool!(pools, |pool| {
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
            .bind(redact(reason))
            .execute(pool)
            .await?;
        Ok(done.rows_affected() == 1)
    })
}

pub(super) async fn schedule_retry(
    pools: Pools<'_>,
    kind: EntityKind,
    github_id: i64,
    token: &str,
    lane: Lane,
    next_retry_at: Timestamp,
    error: &str,
    now: Timestamp,
) -> Result<bool> {
    on_each_pool!(pools, |pool| {
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

pub(super) async fn mark_terminal(
    pools: Pools<'_>,
    kind: EntityKind,
    github_id: i64,
    token: &str,
    reason: &str,
    now: Timestamp,
) -> Result<bool> {
    on_each_pool!(pools, |pool| {
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
            .bind(redact(reason))
            .execute(pool)
            .await?;
        Ok(done.rows_affected() == 1)
    })
}

pub(super) async fn enrichment_counts(
    pools: Pools<'_>,
    kind: EntityKind,
) -> Result<EnrichmentCounts> {
    on_each_pool!(pools, |pool| {
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
            match EnrichmentStatus::parse(&get::<String>(&r, "s")?)? {
                EnrichmentStatus::Pending => c.pending = n,
                EnrichmentStatus::Complete => c.complete = n,
                EnrichmentStatus::RetryableFailure => c.retryable_failure = n,
                EnrichmentStatus::PermanentFailure => c.permanent_failure = n,
            }
        }
        Ok(c)
    })
}

pub(super) async fn record_batch(pools: Pools<'_>, e: &BatchEnvelope<'_>) -> Result<i64> {
    on_each_pool!(pools, |pool| {
        let missing = match (e.returned, e.valid) {
            (Some(_), Some(v)) => Some(e.requested.saturating_sub(v)),
            _ => None,
        };
        let row = sqlx::query(
            "INSERT INTO enrichment_batches (correlation_id, request_kind, entity_kind, \
         status, requested_count, returned_count, valid_count, missing_count, \
         incomplete_results, http_status, error_message, started_at_ms, finished_at_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id",
        )
        .bind(e.correlation_id.to_owned())
        .bind(e.request_kind.as_str())
        .bind(e.kind.as_str())
        .bind(e.status.as_str())
        .bind(to_i64("requested_count", e.requested)?)
        .bind(opt_i64("returned_count", e.returned)?)
        .bind(opt_i64("valid_count", e.valid)?)
        .bind(opt_i64("missing_count", missing)?)
        .bind(e.incomplete_results)
        .bind(e.http_status.map(i64::from))
        .bind(e.error.map(redact))
        .bind(ms(e.started_at))
        .bind(ms(e.finished_at))
        .fetch_one(pool)
        .await?;
        get(&row, "id")
    })
}
