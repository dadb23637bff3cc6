//! The totals `/metrics` publishes, each one grouped query: rate-limit events by identity, kind
//! and reason (kept rows plus what retention pruned, so the count only grows), requests by
//! route family and dimension, sync runs by every status (0 for none), the pages and rows sync
//! checkpoints stored, feed events by outcome, and the credentials' owners (to name an identity
//! first known by its credential after its owner). Also the pruning of observations that keeps
//! those counts: [`prune_observations`].

use headroom_core::clock::Timestamp;
use serde::Serialize;

use crate::db::{Pools, ReadRow, on_each_pool};
use crate::error::Result;
use crate::model::{SyncRunStatus, ms};

/// The database's counters, as `/metrics` exposes them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StoreTotals {
    /// Rate-limit observations ever recorded (kept plus pruned), by (host, subject, event
    /// kind, provider reason, governor reason).
    pub rate_limit_events: Vec<RateLimitEventCount>,
    /// Requests and units recorded, by (host, subject, route family, dimension).
    pub requests: Vec<RequestCount>,
    /// Sync runs by status: every status, in [`SYNC_RUN_STATUSES`] order, 0 when none.
    pub sync_runs: Vec<(String, u64)>,
    /// Pages stored by sync checkpoints.
    pub sync_pages: u64,
    /// Rows written by sync checkpoints.
    pub sync_rows: u64,
    /// Feed events by outcome over every ingestion run: created, duplicate, quarantined,
    /// ignored.
    pub feed_events: Vec<(&'static str, u64)>,
    /// Every stored credential's owner, by host and fingerprint.
    pub credential_owners: Vec<CredentialOwner>,
}

/// Whose a credential is: what names an identity that was first keyed by the credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CredentialOwner {
    /// The API host.
    pub host: String,
    /// The credential's fingerprint (never published; only matched).
    pub fingerprint: String,
    /// The owner as an identity's subject is stored (`user:alice`).
    pub subject: String,
}

/// Every sync run status, so that a status with no run is published at 0 rather than missing.
pub const SYNC_RUN_STATUSES: [SyncRunStatus; 5] = [
    SyncRunStatus::Pending,
    SyncRunStatus::Running,
    SyncRunStatus::Hibernating,
    SyncRunStatus::Done,
    SyncRunStatus::Failed,
];

/// Fails to compile when a status is added and [`SYNC_RUN_STATUSES`] is not told.
const _: fn(SyncRunStatus) = |s| match s {
    SyncRunStatus::Pending
    | SyncRunStatus::Running
    | SyncRunStatus::Hibernating
    | SyncRunStatus::Done
    | SyncRunStatus::Failed => {}
};

/// Observations of one kind and reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RateLimitEventCount {
    /// The identity's API host.
    pub host: String,
    /// The identity's subject as stored (`user:alice`).
    pub subject: String,
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
    /// The identity's API host.
    pub host: String,
    /// The identity's subject as stored (`user:alice`).
    pub subject: String,
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
        // One statement, so one snapshot: a prune moving rows into the pruned counts is
        // seen whole or not at all.
        let events = sqlx::query(
            "SELECT host, subject, kind, reason, wait_reason, CAST(SUM(n) AS BIGINT) AS n \
             FROM (SELECT host, subject, COALESCE(event_kind, '') AS kind, \
                   COALESCE(reason, '') AS reason, COALESCE(wait_reason, '') AS wait_reason, \
                   COUNT(*) AS n FROM rate_limit_observations GROUP BY 1, 2, 3, 4, 5 \
                   UNION ALL \
                   SELECT host, subject, event_kind, reason, wait_reason, pruned \
                   FROM rate_limit_events_pruned) AS every_event \
             GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5",
        )
        .fetch_all(pool)
        .await?;
        let requests = sqlx::query(
            "SELECT host, subject, route_family, dimension, \
             CAST(SUM(requests) AS BIGINT) AS requests, CAST(SUM(units) AS BIGINT) AS units \
             FROM usage_records GROUP BY host, subject, route_family, dimension \
             ORDER BY host, subject, route_family, dimension",
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
        let owners = sqlx::query(
            "SELECT host, fingerprint, subject_kind, owner_login FROM credentials \
             ORDER BY host, fingerprint",
        )
        .fetch_all(pool)
        .await?;
        let runs = runs
            .iter()
            .map(|r| Ok((r.text("status")?, r.count("n")?)))
            .collect::<Result<Vec<_>>>()?;
        Ok(StoreTotals {
            rate_limit_events: events
                .iter()
                .map(|r| {
                    Ok(RateLimitEventCount {
                        host: r.text("host")?,
                        subject: r.text("subject")?,
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
                        host: r.text("host")?,
                        subject: r.text("subject")?,
                        route_family: r.text("route_family")?,
                        dimension: r.text("dimension")?,
                        requests: r.count("requests")?,
                        units: r.count("units")?,
                    })
                })
                .collect::<Result<_>>()?,
            sync_runs: every_status(&runs),
            sync_pages: pages.count("pages")?,
            sync_rows: pages.count("rows")?,
            feed_events: ["created", "duplicate", "quarantined", "ignored"]
                .into_iter()
                .map(|outcome| Ok((outcome, feed.count(outcome)?)))
                .collect::<Result<_>>()?,
            credential_owners: owners
                .iter()
                .map(|r| {
                    Ok(CredentialOwner {
                        host: r.text("host")?,
                        fingerprint: r.text("fingerprint")?,
                        subject: format!("{}:{}", r.text("subject_kind")?, r.text("owner_login")?),
                    })
                })
                .collect::<Result<_>>()?,
        })
    })
}

/// Every status with its count, 0 for a status no run has; a stored status this build does
/// not know (a newer writer's) is kept after them rather than dropped.
fn every_status(counted: &[(String, u64)]) -> Vec<(String, u64)> {
    let known = SYNC_RUN_STATUSES.map(|s| s.as_str());
    let count = |status: &str| {
        counted
            .iter()
            .find(|(s, _)| s == status)
            .map_or(0, |(_, n)| *n)
    };
    known
        .iter()
        .map(|s| ((*s).to_owned(), count(s)))
        .chain(
            counted
                .iter()
                .filter(|(s, _)| !known.contains(&s.as_str()))
                .cloned(),
        )
        .collect()
}

/// Deletes the rate-limit observations made before `before` and adds their number, per
/// identity, kind and reasons, to `rate_limit_events_pruned` in the same step, so kept plus
/// pruned never goes down; returns how many rows were deleted.
pub(crate) async fn prune_observations(pools: Pools<'_>, before: Timestamp) -> Result<u64> {
    match pools {
        Pools::Pg(pool) => {
            // One statement: exactly the rows the DELETE removed are counted, even with a
            // concurrent pruner (its DELETE waits on these rows, then finds them gone).
            let row = sqlx::query(
                "WITH gone AS (DELETE FROM rate_limit_observations WHERE observed_at_ms < $1 \
                 RETURNING host, subject, COALESCE(event_kind, '') AS event_kind, \
                 COALESCE(reason, '') AS reason, COALESCE(wait_reason, '') AS wait_reason), \
                 folded AS (INSERT INTO rate_limit_events_pruned \
                 (host, subject, event_kind, reason, wait_reason, pruned) \
                 SELECT host, subject, event_kind, reason, wait_reason, COUNT(*) FROM gone \
                 GROUP BY host, subject, event_kind, reason, wait_reason \
                 ON CONFLICT (host, subject, event_kind, reason, wait_reason) \
                 DO UPDATE SET pruned = rate_limit_events_pruned.pruned + excluded.pruned) \
                 SELECT COUNT(*) AS n FROM gone",
            )
            .bind(ms(before))
            .fetch_one(pool)
            .await?;
            row.count("n")
        }
        Pools::Sqlite(pool) => {
            // SQLite has no DELETE in a WITH: count then delete under the file's write lock
            // (BEGIN IMMEDIATE), so no row can arrive between the two.
            let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
            sqlx::query(
                "INSERT INTO rate_limit_events_pruned \
                 (host, subject, event_kind, reason, wait_reason, pruned) \
                 SELECT host, subject, COALESCE(event_kind, ''), COALESCE(reason, ''), \
                 COALESCE(wait_reason, ''), COUNT(*) FROM rate_limit_observations \
                 WHERE observed_at_ms < $1 GROUP BY 1, 2, 3, 4, 5 \
                 ON CONFLICT (host, subject, event_kind, reason, wait_reason) \
                 DO UPDATE SET pruned = rate_limit_events_pruned.pruned + excluded.pruned",
            )
            .bind(ms(before))
            .execute(&mut *tx)
            .await?;
            let deleted =
                sqlx::query("DELETE FROM rate_limit_observations WHERE observed_at_ms < $1")
                    .bind(ms(before))
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
            tx.commit().await?;
            Ok(deleted)
        }
    }
}
