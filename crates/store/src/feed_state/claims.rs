//! Claiming entities for enrichment (backlog lanes and refresh) and releasing a claim.

use super::rows::*;
use super::*;

pub(super) async fn claim(
    pools: Pools<'_>,
    kind: EntityKind,
    lane: Lane,
    limit: u32,
    now: Timestamp,
    token: &str,
    until: Timestamp,
) -> Result<Vec<Claimed>> {
    on_each_pool!(pools, |pool| {
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

pub(super) async fn has_claimable(
    pools: Pools<'_>,
    kind: EntityKind,
    lane: Lane,
    now: Timestamp,
) -> Result<bool> {
    on_each_pool!(pools, |pool| {
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

pub(super) async fn claim_refresh(
    pools: Pools<'_>,
    kind: EntityKind,
    limit: u32,
    window: RefreshWindow,
    token: &str,
    until: Timestamp,
) -> Result<Vec<Claimed>> {
    on_each_pool!(pools, |pool| {
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

pub(super) async fn has_refreshable(
    pools: Pools<'_>,
    kind: EntityKind,
    window: RefreshWindow,
) -> Result<bool> {
    on_each_pool!(pools, |pool| {
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

pub(super) async fn release(
    pools: Pools<'_>,
    kind: EntityKind,
    token: &str,
    lane: Lane,
    now: Timestamp,
) -> Result<()> {
    on_each_pool!(pools, |pool| {
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
