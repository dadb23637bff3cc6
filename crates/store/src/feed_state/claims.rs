//! Claiming entities for enrichment (backlog lanes and refresh) and releasing a claim.

use super::rows::*;
use super::*;

/// What a claim returns of each row, `alias` naming the table; `pri`, `created_at_ms` and
/// `id` put PostgreSQL's one-statement claims back in order (`RETURNING` has none).
fn claimed_columns(kind: EntityKind, alias: &str) -> String {
    let name = kind.name_column();
    format!(
        "{alias}github_id, {alias}{name} AS name, {alias}detail_url, {alias}detail_attempts, \
         {alias}batch_attempts, \
         CAST(CASE WHEN {alias}enrichment_status = 'complete' THEN 1 ELSE 0 END AS BIGINT) AS pri, \
         {alias}created_at_ms, {alias}id"
    )
}

fn claimed(row: &impl ReadRow) -> Result<(Claimed, (i64, i64, i64))> {
    Ok((
        Claimed {
            github_id: get(row, "github_id")?,
            name: get(row, "name")?,
            detail_url: get(row, "detail_url")?,
            detail_attempts: to_u64("detail_attempts", get(row, "detail_attempts")?)?,
            batch_attempts: to_u64("batch_attempts", get(row, "batch_attempts")?)?,
        },
        (
            get(row, "pri")?,
            get(row, "created_at_ms")?,
            get(row, "id")?,
        ),
    ))
}

/// Rows taken by one statement, back in the order the pick chose.
fn in_pick_order(mut rows: Vec<(Claimed, (i64, i64, i64))>) -> Vec<Claimed> {
    rows.sort_by_key(|(_, order)| *order);
    rows.into_iter().map(|(c, _)| c).collect()
}

/// Takes up to `limit` rows of `lane` for `token` until `until`, oldest first. On PostgreSQL
/// one statement picks and takes them, skipping rows another worker is taking
/// (`FOR UPDATE SKIP LOCKED`), so concurrent workers split the backlog instead of colliding.
/// SQLite has one writer at a time: the pick, then a guarded take per row.
pub(super) async fn claim(
    pools: Pools<'_>,
    kind: EntityKind,
    lane: Lane,
    limit: u32,
    now: Timestamp,
    token: &str,
    until: Timestamp,
) -> Result<Vec<Claimed>> {
    let table = kind.table();
    let (stages, in_flight) = lane_stages(lane);
    let claimable = format!(
        "{stages} AND (next_retry_at_ms IS NULL OR next_retry_at_ms <= $1) \
         AND (lease_token IS NULL OR lease_expires_at_ms IS NULL OR lease_expires_at_ms <= $1)"
    );
    let order = "CASE WHEN enrichment_status = 'complete' THEN 1 ELSE 0 END, created_at_ms, id";
    let pool = match pools {
        Pools::Pg(pool) => {
            let sql = format!(
                "WITH picked AS (SELECT id FROM {table} WHERE {claimable} ORDER BY {order} \
                 LIMIT $2 FOR UPDATE SKIP LOCKED) \
                 UPDATE {table} t SET enrichment_stage = '{in_flight}', lease_token = $3, \
                 lease_expires_at_ms = $4, updated_at_ms = $1 FROM picked \
                 WHERE t.id = picked.id RETURNING {}",
                claimed_columns(kind, "t.")
            );
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(ms(now))
                .bind(i64::from(limit))
                .bind(token.to_owned())
                .bind(ms(until))
                .fetch_all(pool)
                .await?;
            let rows = rows.iter().map(claimed).collect::<Result<Vec<_>>>()?;
            return Ok(in_pick_order(rows));
        }
        Pools::Sqlite(pool) => pool,
    };
    let pick = format!("SELECT id FROM {table} WHERE {claimable} ORDER BY {order} LIMIT $2");
    let ids: Vec<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(pick))
        .bind(ms(now))
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?;
    // A row somebody else took in between fails the guard and is skipped.
    let take = format!(
        "UPDATE {table} SET enrichment_stage = '{in_flight}', lease_token = $3, \
         lease_expires_at_ms = $4, updated_at_ms = $1 WHERE id = $2 AND {claimable} \
         RETURNING {}",
        claimed_columns(kind, "")
    );
    let mut out = Vec::new();
    for id in ids {
        let taken = sqlx::query(sqlx::AssertSqlSafe(take.as_str()))
            .bind(ms(now))
            .bind(id)
            .bind(token.to_owned())
            .bind(ms(until))
            .fetch_optional(pool)
            .await?;
        if let Some(r) = taken {
            out.push(claimed(&r)?.0);
        }
    }
    Ok(out)
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

/// Takes up to `limit` complete rows due for a refresh, least recently fetched first; one
/// statement with `SKIP LOCKED` on PostgreSQL, as [`claim`].
pub(super) async fn claim_refresh(
    pools: Pools<'_>,
    kind: EntityKind,
    limit: u32,
    window: RefreshWindow,
    token: &str,
    until: Timestamp,
) -> Result<Vec<Claimed>> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    let table = kind.table();
    // A fresh refresh starts its own ladders; a resumed one keeps them.
    let set = "batch_attempts = CASE WHEN enrichment_stage = 'contract_complete' THEN 0 \
         ELSE batch_attempts END, \
         detail_attempts = CASE WHEN enrichment_stage = 'contract_complete' THEN 0 \
         ELSE detail_attempts END, \
         enrichment_stage = 'batch_in_flight', lease_token = $5, lease_expires_at_ms = $6, \
         updated_at_ms = $1";
    let pool = match pools {
        Pools::Pg(pool) => {
            let sql = format!(
                "WITH picked AS (SELECT id FROM {table} WHERE {REFRESH_PREDICATE} \
                 ORDER BY fetched_at_ms, id LIMIT $4 FOR UPDATE SKIP LOCKED) \
                 UPDATE {table} t SET {set} FROM picked WHERE t.id = picked.id \
                 RETURNING {}, t.fetched_at_ms AS fetched",
                claimed_columns(kind, "t.")
            );
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(ms(window.now))
                .bind(ms(window.stale_before))
                .bind(ms(window.active_since))
                .bind(i64::from(limit))
                .bind(token.to_owned())
                .bind(ms(until))
                .fetch_all(pool)
                .await?;
            let mut taken = Vec::new();
            for row in &rows {
                let (c, (_, _, id)) = claimed(row)?;
                let fetched: Option<i64> = get(row, "fetched")?;
                taken.push((c, (0, fetched.unwrap_or(i64::MIN), id)));
            }
            return Ok(in_pick_order(taken));
        }
        Pools::Sqlite(pool) => pool,
    };
    let pick = format!(
        "SELECT id FROM {table} WHERE {REFRESH_PREDICATE} ORDER BY fetched_at_ms, id LIMIT $4"
    );
    let ids: Vec<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(pick))
        .bind(ms(window.now))
        .bind(ms(window.stale_before))
        .bind(ms(window.active_since))
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?;
    let take = format!(
        "UPDATE {table} SET {set} WHERE id = $4 AND {REFRESH_PREDICATE} RETURNING {}",
        claimed_columns(kind, "")
    );
    let mut out = Vec::new();
    for id in ids {
        let taken = sqlx::query(sqlx::AssertSqlSafe(take.as_str()))
            .bind(ms(window.now))
            .bind(ms(window.stale_before))
            .bind(ms(window.active_since))
            .bind(id)
            .bind(token.to_owned())
            .bind(ms(until))
            .fetch_optional(pool)
            .await?;
        if let Some(r) = taken {
            out.push(claimed(&r)?.0);
        }
    }
    Ok(out)
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
