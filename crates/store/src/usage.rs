//! Usage (round trips and units per identity, route family, dimension and window) and the
//! normalized rate-limit observations: the evidence of what was spent and what was refused.

use headroom_core::QuotaKey;
use headroom_core::clock::Timestamp;
use headroom_core::redact::redact;

use crate::db::{Pools, ReadRow, get, on_each_pool};
use crate::error::Result;
use crate::model::{
    self, RateLimitObservation, StoredObservation, UsageRecord, UsageTotal, ms, to_i64,
};

/// The columns every observation query reads.
pub(crate) const OBSERVATION_COLUMNS: &str = "id, provider, host, subject, \
    credential_fingerprint, sync_run_id, bucket, route_family, route_family_attribution, \
    dimension, reason, retry_after_secs, reset_at_ms, rate_limit, remaining, used, request_id, \
    observed_at_ms, event_kind, wait_reason";

fn opt_i64(field: &'static str, v: Option<u64>) -> Result<Option<i64>> {
    v.map(|v| to_i64(field, v)).transpose()
}

pub(crate) fn observation_from(row: &impl ReadRow) -> Result<StoredObservation> {
    Ok(StoredObservation {
        id: get(row, "id")?,
        provider: get(row, "provider")?,
        host: get(row, "host")?,
        subject: get(row, "subject")?,
        credential_fingerprint: get(row, "credential_fingerprint")?,
        sync_run_id: get(row, "sync_run_id")?,
        bucket: get(row, "bucket")?,
        route_family: get(row, "route_family")?,
        route_family_attribution: get(row, "route_family_attribution")?,
        dimension: get(row, "dimension")?,
        reason: get(row, "reason")?,
        retry_after_secs: get(row, "retry_after_secs")?,
        reset_at: get(row, "reset_at_ms")?,
        limit: get(row, "rate_limit")?,
        remaining: get(row, "remaining")?,
        used: get(row, "used")?,
        request_id: get(row, "request_id")?,
        observed_at: get(row, "observed_at_ms")?,
        event_kind: get(row, "event_kind")?,
        wait_reason: get(row, "wait_reason")?,
    })
}

pub(crate) async fn record_usage(pools: Pools<'_>, record: &UsageRecord) -> Result<()> {
    let window_start = record.window_start()?;
    let (requests, units) = (
        to_i64("requests", record.requests)?,
        to_i64("units", record.units)?,
    );
    on_each_pool!(pools, |pool| {
        sqlx::query(
            "INSERT INTO usage_records (host, subject, route_family, dimension, \
             window_start_at_ms, requests, units, last_recorded_at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
             ON CONFLICT (host, subject, route_family, dimension, window_start_at_ms) \
             DO UPDATE SET requests = usage_records.requests + excluded.requests, \
             units = usage_records.units + excluded.units, \
             last_recorded_at_ms = CASE WHEN excluded.last_recorded_at_ms > usage_records.last_recorded_at_ms \
                 THEN excluded.last_recorded_at_ms ELSE usage_records.last_recorded_at_ms END",
        )
        .bind(record.key.host.to_string())
        .bind(model::subject_label(&record.key.subject))
        .bind(record.route_family.clone())
        .bind(record.dimension.as_str())
        .bind(ms(window_start))
        .bind(requests)
        .bind(units)
        .bind(ms(record.at))
        .execute(pool)
        .await?;
        Ok(())
    })
}

pub(crate) async fn usage_totals(
    pools: Pools<'_>,
    key: &QuotaKey,
    since: Timestamp,
    until: Timestamp,
) -> Result<Vec<UsageTotal>> {
    on_each_pool!(pools, |pool| {
        let rows = sqlx::query(
            "SELECT route_family, dimension, \
             CAST(SUM(requests) AS BIGINT) AS requests, CAST(SUM(units) AS BIGINT) AS units, \
             MIN(window_start_at_ms) AS first_window, MAX(last_recorded_at_ms) AS last_recorded \
             FROM usage_records \
             WHERE host = $1 AND subject = $2 AND window_start_at_ms >= $3 AND window_start_at_ms < $4 \
             GROUP BY route_family, dimension ORDER BY route_family, dimension",
        )
        .bind(key.host.to_string())
        .bind(model::subject_label(&key.subject))
        .bind(ms(since))
        .bind(ms(until))
        .fetch_all(pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(UsageTotal {
                    route_family: row.text("route_family")?,
                    dimension: row.text("dimension")?,
                    requests: row.uint("requests")?,
                    units: row.uint("units")?,
                    first_window_start: row.ts("first_window")?,
                    last_recorded_at: row.ts("last_recorded")?,
                })
            })
            .collect()
    })
}

pub(crate) async fn record_rate_limit_observation(
    pools: Pools<'_>,
    o: &RateLimitObservation,
) -> Result<i64> {
    if let Some(fp) = &o.credential_fingerprint {
        model::check_fingerprint(fp)?;
    }
    let retry_after_secs = o.retry_after.map(|d| d.as_secs().max(0));
    let (limit, remaining, used) = (
        opt_i64("limit", o.limit)?,
        opt_i64("remaining", o.remaining)?,
        opt_i64("used", o.used)?,
    );
    on_each_pool!(pools, |pool| {
        let row = sqlx::query(
            "INSERT INTO rate_limit_observations (provider, host, subject, \
             credential_fingerprint, sync_run_id, bucket, route_family, \
             route_family_attribution, dimension, reason, retry_after_secs, reset_at_ms, \
             rate_limit, remaining, used, request_id, observed_at_ms, event_kind, wait_reason) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
             $18, $19) \
             RETURNING id",
        )
        .bind(model::provider_name(o.provider))
        .bind(o.key.host.to_string())
        .bind(model::subject_label(&o.key.subject))
        .bind(o.credential_fingerprint.clone())
        .bind(o.sync_run_id)
        .bind(o.bucket.clone())
        .bind(o.route_family.clone())
        .bind(o.route_family_attribution.clone())
        .bind(o.dimension.map(|d| d.as_str()))
        .bind(o.reason.map(|r| r.as_str()))
        .bind(retry_after_secs)
        .bind(o.reset_at.map(ms))
        .bind(limit)
        .bind(remaining)
        .bind(used)
        .bind(o.request_id.as_deref().map(redact))
        .bind(ms(o.observed_at))
        .bind(o.event_kind.map(|k| k.as_str()))
        .bind(o.wait_reason.clone())
        .fetch_one(pool)
        .await?;
        row.int("id")
    })
}

pub(crate) async fn recent_rate_limit_observations(
    pools: Pools<'_>,
    host: &str,
    since: Timestamp,
    limit: u32,
) -> Result<Vec<StoredObservation>> {
    let sql = format!(
        "SELECT {OBSERVATION_COLUMNS} FROM rate_limit_observations \
         WHERE host = $1 AND observed_at_ms >= $2 \
         ORDER BY observed_at_ms DESC, id DESC LIMIT $3"
    );
    on_each_pool!(pools, |pool| {
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(host.to_owned())
            .bind(ms(since))
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?;
        rows.iter().map(observation_from).collect()
    })
}

/// The refusals the origin answered for `key` since `since`, any process's, oldest first: what
/// cooldown gating reads (the `rate_limit_observations_cooldown` index serves the host and
/// time range). A row whose stored values no longer parse is skipped and counted, never an
/// error: one bad row must not block every dispatch.
pub(crate) async fn recent_refusals(
    pools: Pools<'_>,
    key: &QuotaKey,
    since: Timestamp,
) -> Result<(Vec<headroom_core::cooldown::Refusal>, usize)> {
    let sql = format!(
        "SELECT {OBSERVATION_COLUMNS} FROM rate_limit_observations \
         WHERE host = $1 AND subject = $2 AND observed_at_ms >= $3 AND event_kind = 'refused' \
         ORDER BY observed_at_ms, id"
    );
    let rows: Vec<StoredObservation> = on_each_pool!(pools, |pool| {
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(key.host.to_string())
            .bind(model::subject_label(&key.subject))
            .bind(ms(since))
            .fetch_all(pool)
            .await?;
        rows.iter()
            .map(observation_from)
            .collect::<Result<Vec<_>>>()
    })?;
    let total = rows.len();
    let refusals: Vec<_> = rows.iter().filter_map(|row| refusal_of(key, row)).collect();
    let skipped = total - refusals.len();
    Ok((refusals, skipped))
}

/// A stored refusal as the cooldown rule reads it; `None` when a stored value does not parse.
fn refusal_of(key: &QuotaKey, row: &StoredObservation) -> Option<headroom_core::cooldown::Refusal> {
    use headroom_core::clock::SignedDuration;
    Some(headroom_core::cooldown::Refusal {
        provider: model::provider_from_name(&row.provider)?,
        key: key.clone(),
        route_family: row.route_family.clone(),
        dimension: match &row.dimension {
            Some(d) => Some(headroom_core::Dimension::from_name(d)?),
            None => None,
        },
        reason: match &row.reason {
            Some(r) => headroom_core::LimitReason::from_name(r)?,
            None => headroom_core::LimitReason::Unknown,
        },
        retry_after: match row.retry_after_secs {
            Some(secs) => Some(SignedDuration::from_secs(i64::try_from(secs).ok()?)),
            None => None,
        },
        reset_at: row.reset_at,
        observed_at: row.observed_at,
    })
}

/// Deletes the observations made before `before`; returns how many. Their counts move to
/// `rate_limit_events_pruned` as they go, so the `/metrics` counter never shrinks
/// ([`crate::metrics::prune_observations`]).
pub(crate) async fn prune_rate_limit_observations(
    pools: Pools<'_>,
    before: Timestamp,
) -> Result<u64> {
    crate::metrics::prune_observations(pools, before).await
}
