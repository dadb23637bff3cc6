//! The totals `/metrics` publishes, each one grouped query: rate-limit events by kind and
//! reason, requests by route family and dimension, sync runs by status, the pages and rows
//! sync checkpoints stored, and feed events by outcome. Plain reads.

use serde::Serialize;

use crate::db::{Pools, ReadRow, on_each_pool};
use crate::error::Result;

/// The database's counters, as `/metrics` exposes them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StoreTotals {
    /// Rate-limit observations kept, by (event kind, provider reason, governor reason).
    pub rate_limit_events: Vec<RateLimitEventCount>,
    /// Requests and units recorded, by (route family, dimension).
    pub requests: Vec<RequestCount>,
    /// Sync runs by status.
    pub sync_runs: Vec<(String, u64)>,
    /// Pages stored by sync checkpoints.
    pub sync_pages: u64,
    /// Rows written by sync checkpoints.
    pub sync_rows: u64,
    /// Feed events by outcome over every ingestion run: created, duplicate, quarantined,
    /// ignored.
    pub feed_events: Vec<(&'static str, u64)>,
}

/// Observations of one kind and reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RateLimitEventCount {
    /// `deferred`, `refused`, `hibernated`, or empty for rows older than the column.
    pub kind: String,
    /// The provider's reason (`primary`, `secondary`, …), or empty.
    pub reason: String,
    /// The governor's own reason (`in_flight_ceiling`, `local_points`, …), or empty.
    pub wait_reason: String,
    /// How many.
    pub count: u64,
}

/// Requests of one route family and dimension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestCount {
    /// The route family.
    pub route_family: String,
    /// The dimension.
    pub dimension: String,
    /// Round trips.
    pub requests: u64,
    /// Units spent.
    pub units: u64,
}

pub(crate) async fn store_totals(pools: Pools<'_>) -> Result<StoreTotals> {
    on_each_pool!(pools, |pool| {
        let events = sqlx::query(
            "SELECT COALESCE(event_kind, '') AS kind, COALESCE(reason, '') AS reason, \
             COALESCE(wait_reason, '') AS wait_reason, COUNT(*) AS n \
             FROM rate_limit_observations GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
        )
        .fetch_all(pool)
        .await?;
        let requests = sqlx::query(
            "SELECT route_family, dimension, CAST(SUM(requests) AS BIGINT) AS requests, \
             CAST(SUM(units) AS BIGINT) AS units FROM usage_records \
             GROUP BY route_family, dimension ORDER BY route_family, dimension",
        )
        .fetch_all(pool)
        .await?;
        let runs = sqlx::query(
            "SELECT status, COUNT(*) AS n FROM sync_runs GROUP BY status ORDER BY status",
        )
        .fetch_all(pool)
        .await?;
        let pages = sqlx::query(
            "SELECT CAST(SUM(pages_done) AS BIGINT) AS pages, \
             CAST(SUM(rows_written) AS BIGINT) AS rows FROM sync_checkpoints",
        )
        .fetch_one(pool)
        .await?;
        let feed = sqlx::query(
            "SELECT CAST(SUM(events_created) AS BIGINT) AS created, \
             CAST(SUM(duplicates_skipped) AS BIGINT) AS duplicate, \
             CAST(SUM(events_quarantined) AS BIGINT) AS quarantined, \
             CAST(SUM(events_ignored) AS BIGINT) AS ignored FROM ingestion_runs",
        )
        .fetch_one(pool)
        .await?;
        Ok(StoreTotals {
            rate_limit_events: events
                .iter()
                .map(|r| {
                    Ok(RateLimitEventCount {
                        kind: r.text("kind")?,
                        reason: r.text("reason")?,
                        wait_reason: r.text("wait_reason")?,
                        count: r.count("n")?,
                    })
                })
                .collect::<Result<_>>()?,
            requests: requests
                .iter()
                .map(|r| {
                    Ok(RequestCount {
                        route_family: r.text("route_family")?,
                        dimension: r.text("dimension")?,
                        requests: r.count("requests")?,
                        units: r.count("units")?,
                    })
                })
                .collect::<Result<_>>()?,
            sync_runs: runs
                .iter()
                .map(|r| Ok((r.text("status")?, r.count("n")?)))
                .collect::<Result<_>>()?,
            sync_pages: pages.count("pages")?,
            sync_rows: pages.count("rows")?,
            feed_events: ["created", "duplicate", "quarantined", "ignored"]
                .into_iter()
                .map(|outcome| Ok((outcome, feed.count(outcome)?)))
                .collect::<Result<_>>()?,
        })
    })
}
