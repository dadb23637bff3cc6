//! What the feed state's queries share: column lists, stage predicates, row mappers and the
//! dialect's JSON expressions.

use super::*;

pub(crate) const SOURCE_COLUMNS: &str = "id, source_type, url, enabled, status, etag, cadence_due_at_ms, \
    poll_floor_until_at_ms, retry_not_before_at_ms, next_poll_at_ms, consecutive_failures, \
    last_error, last_polled_at_ms";

pub(super) const LEDGER_COLUMNS: &str = "host, subject, window_status, window_limit, remaining, reserve, \
    poll_used, poll_allowance, enrichment_used, enrichment_allowance, actor_share_used, \
    repository_share_used, co_tenant_usage, global_blocked_until_at_ms, \
    consecutive_secondary_limits, window_started_at_ms, reset_at_ms";

/// The stages a lane claims from, and the stage a claim moves to.
/// The batch lane is the backlog only: a complete row re-enters a batch solely as a refresh
/// candidate ([`REFRESH_PREDICATE`]), so a refresh can never be taken as backlog.
pub(super) fn lane_stages(lane: Lane) -> (&'static str, &'static str) {
    match lane {
        Lane::Batch => (
            "enrichment_stage IN ('batch_pending', 'retry_scheduled', 'batch_in_flight') \
             AND enrichment_status <> 'complete'",
            "batch_in_flight",
        ),
        Lane::Detail => (
            "enrichment_stage IN ('detail_pending', 'detail_in_flight')",
            "detail_in_flight",
        ),
    }
}

/// Refresh candidates ($1 now, $2 stale_before, $3 active_since): TTL-stale recently active
/// complete rows, and complete rows a refresh left mid-way (failed batch, lapsed lease).
pub(super) const REFRESH_PREDICATE: &str = "enrichment_status = 'complete' AND ( \
    (enrichment_stage = 'contract_complete' AND fetched_at_ms IS NOT NULL \
        AND fetched_at_ms <= $2 AND last_seen_at_ms IS NOT NULL AND last_seen_at_ms >= $3) \
    OR (enrichment_stage = 'retry_scheduled' AND (next_retry_at_ms IS NULL OR next_retry_at_ms <= $1)) \
    OR enrichment_stage = 'batch_in_flight') \
    AND (lease_token IS NULL OR lease_expires_at_ms IS NULL OR lease_expires_at_ms <= $1)";

pub(super) fn opt_ts(row: &impl ReadRow, column: &'static str) -> Result<Option<Timestamp>> {
    from_opt_ms(column, get::<Option<i64>>(row, column)?)
}

pub(super) fn opt_u64(row: &impl ReadRow, column: &'static str) -> Result<Option<u64>> {
    get::<Option<i64>>(row, column)?
        .map(|v| to_u64(column, v))
        .transpose()
}

pub(crate) fn source_from(row: &impl ReadRow) -> Result<EventSource> {
    Ok(EventSource {
        id: get(row, "id")?,
        source_type: get(row, "source_type")?,
        url: get(row, "url")?,
        enabled: get(row, "enabled")?,
        status: SourceStatus::parse(&get::<String>(row, "status")?)?,
        etag: get(row, "etag")?,
        cadence_due_at: opt_ts(row, "cadence_due_at_ms")?,
        poll_floor_until: opt_ts(row, "poll_floor_until_at_ms")?,
        retry_not_before_at: opt_ts(row, "retry_not_before_at_ms")?,
        next_poll_at: opt_ts(row, "next_poll_at_ms")?,
        consecutive_failures: to_u64("consecutive_failures", get(row, "consecutive_failures")?)?,
        last_error: get(row, "last_error")?,
        last_polled_at: opt_ts(row, "last_polled_at_ms")?,
    })
}

pub(super) fn ledger_from(row: &impl ReadRow) -> Result<CoreLedger> {
    let u = |c: &'static str| -> Result<u64> { to_u64(c, get::<i64>(row, c)?) };
    Ok(CoreLedger {
        host: get(row, "host")?,
        subject: get(row, "subject")?,
        window_status: WindowStatus::parse(&get::<String>(row, "window_status")?)?,
        limit: opt_u64(row, "window_limit")?,
        remaining: opt_u64(row, "remaining")?,
        reserve: u("reserve")?,
        poll_used: u("poll_used")?,
        poll_allowance: u("poll_allowance")?,
        enrichment_used: u("enrichment_used")?,
        enrichment_allowance: u("enrichment_allowance")?,
        actor_share_used: u("actor_share_used")?,
        repository_share_used: u("repository_share_used")?,
        co_tenant_usage: u("co_tenant_usage")?,
        global_blocked_until: opt_ts(row, "global_blocked_until_at_ms")?,
        consecutive_secondary_limits: u("consecutive_secondary_limits")?,
        window_started_at: opt_ts(row, "window_started_at_ms")?,
        reset_at: opt_ts(row, "reset_at_ms")?,
    })
}

pub(super) fn opt_i64(field: &'static str, v: Option<u64>) -> Result<Option<i64>> {
    v.map(|v| to_i64(field, v)).transpose()
}

/// The dialect's expression for an entity's detail URL inside an event's raw JSON (alias
/// `e`), used when the reconciler restores a missing entity row.
pub(super) fn actor_url(pools: Pools<'_>) -> &'static str {
    match pools {
        Pools::Sqlite(_) => "json_extract(e.raw_json, '$.actor.url')",
        Pools::Pg(_) => "(e.raw_json -> 'actor' ->> 'url')",
    }
}

/// As [`actor_url`], for the repository.
pub(super) fn repository_url(pools: Pools<'_>) -> &'static str {
    match pools {
        Pools::Sqlite(_) => "json_extract(e.raw_json, '$.repo.url')",
        Pools::Pg(_) => "(e.raw_json -> 'repo' ->> 'url')",
    }
}
