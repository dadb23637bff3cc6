//! The core and search ledger rows, and the rate-limit observations that feed them.

use super::rows::*;
use super::*;

pub(super) async fn core_ledger(
    pools: Pools<'_>,
    host: &str,
    subject: &str,
) -> Result<Option<CoreLedger>> {
    on_each_pool!(pools, |pool| {
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

pub(super) async fn save_core_ledger(
    pools: Pools<'_>,
    l: &CoreLedger,
    now: Timestamp,
) -> Result<()> {
    on_each_pool!(pools, |pool| {
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
            .bind(l.window_status.as_str())
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

pub(super) async fn search_ledger(
    pools: Pools<'_>,
    host: &str,
    subject: &str,
) -> Result<Option<SearchLedger>> {
    on_each_pool!(pools, |pool| {
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

pub(super) async fn save_search_ledger(
    pools: Pools<'_>,
    l: &SearchLedger,
    now: Timestamp,
) -> Result<()> {
    on_each_pool!(pools, |pool| {
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

pub(super) async fn record_observation(
    pools: Pools<'_>,
    kind: EntityKind,
    github_id: i64,
    source: &str,
    outcome: &str,
    batch_id: Option<i64>,
    raw: &serde_json::Value,
    now: Timestamp,
) -> Result<()> {
    on_each_pool!(pools, |pool| {
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
