//! The `spend_records` queries: what headroom spent per identity, bucket and provider window,
//! by route family and sync run — appended once per round trip by the exit door's usage sink,
//! summed for the dashboard's "who spends it", and pruned with the readings.
//!
//! A window is named by the reset its responses carried, so the sums of one window compare
//! with the `used` the provider reported for it, whatever the window's length.

use headroom_core::clock::Timestamp;
use serde::{Deserialize, Serialize};

use crate::db::{Pools, ReadRow, on_each_pool};
use crate::error::{Result, StoreError};
use crate::model::{ms, to_i64};

/// One or more round trips of one sender in one window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpendRecord {
    /// The API host of the identity.
    pub host: String,
    /// The identity's subject label (`user:alice`, `installation:42`, `ip:ADDR`).
    pub subject: String,
    /// The bucket the response named.
    pub bucket: String,
    /// The route family's name (`feed_poll`, `issues`, `quota_probe` …).
    pub route_family: String,
    /// The sync run that sent it, if one did.
    pub sync_run_id: Option<i64>,
    /// The reset the response carried: the window it counted in.
    pub reset_at: Timestamp,
    /// Round trips.
    pub requests: u64,
    /// What the provider counts of them (GraphQL points; 1 per REST request; 0 for an
    /// authorized 304).
    pub units: u64,
    /// When.
    pub at: Timestamp,
}

/// The sums of one sender in one window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpendTotal {
    /// The API host.
    pub host: String,
    /// The subject label.
    pub subject: String,
    /// The bucket.
    pub bucket: String,
    /// The route family.
    pub route_family: String,
    /// The sync run, if one sent it.
    pub sync_run_id: Option<i64>,
    /// The window's reset.
    pub reset_at: Timestamp,
    /// Round trips.
    pub requests: u64,
    /// Units the provider counts.
    pub units: u64,
    /// The first round trip.
    pub first_recorded_at: Timestamp,
    /// The last one.
    pub last_recorded_at: Timestamp,
}

/// The first window of a bucket headroom spent in (units counted), as far as the store keeps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpendStart {
    /// The API host.
    pub host: String,
    /// The subject label.
    pub subject: String,
    /// The bucket.
    pub bucket: String,
    /// The earliest reset of a window with counted spend.
    pub first_reset_at: Timestamp,
    /// The earliest round trip with counted spend.
    pub first_recorded_at: Timestamp,
}

const UPSERT_SQL: &str = "INSERT INTO spend_records (host, subject, bucket, route_family, \
    sync_run_id, reset_at_ms, requests, units, first_recorded_at_ms, last_recorded_at_ms) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) \
    ON CONFLICT (host, subject, bucket, reset_at_ms, route_family, sync_run_id) DO UPDATE SET \
    requests = spend_records.requests + excluded.requests, \
    units = spend_records.units + excluded.units, \
    first_recorded_at_ms = CASE WHEN excluded.first_recorded_at_ms < spend_records.first_recorded_at_ms \
        THEN excluded.first_recorded_at_ms ELSE spend_records.first_recorded_at_ms END, \
    last_recorded_at_ms = CASE WHEN excluded.last_recorded_at_ms > spend_records.last_recorded_at_ms \
        THEN excluded.last_recorded_at_ms ELSE spend_records.last_recorded_at_ms END";

const TOTALS_SQL: &str = "SELECT host, subject, bucket, route_family, sync_run_id, reset_at_ms, \
    CAST(SUM(requests) AS BIGINT) AS requests, CAST(SUM(units) AS BIGINT) AS units, \
    MIN(first_recorded_at_ms) AS first_at, MAX(last_recorded_at_ms) AS last_at \
    FROM spend_records WHERE reset_at_ms >= $1 AND reset_at_ms < $2 \
    GROUP BY host, subject, bucket, route_family, sync_run_id, reset_at_ms \
    ORDER BY host, subject, bucket, reset_at_ms, route_family, sync_run_id";

const STARTS_SQL: &str = "SELECT host, subject, bucket, MIN(reset_at_ms) AS first_reset, \
    MIN(first_recorded_at_ms) AS first_at \
    FROM spend_records WHERE units > 0 GROUP BY host, subject, bucket \
    ORDER BY host, subject, bucket";

/// Adds one record to its window's row.
pub(crate) async fn record(pools: Pools<'_>, record: &SpendRecord) -> Result<()> {
    let run = match record.sync_run_id {
        None => 0,
        Some(id) if id > 0 => id,
        Some(id) => {
            return Err(StoreError::Invalid {
                field: "sync_run_id",
                problem: format!("must be positive (got {id})"),
            });
        }
    };
    let (requests, units) = (
        to_i64("requests", record.requests)?,
        to_i64("units", record.units)?,
    );
    on_each_pool!(pools, |pool| {
        sqlx::query(UPSERT_SQL)
            .bind(record.host.clone())
            .bind(record.subject.clone())
            .bind(record.bucket.clone())
            .bind(record.route_family.clone())
            .bind(run)
            .bind(ms(record.reset_at))
            .bind(requests)
            .bind(units)
            .bind(ms(record.at))
            .execute(pool)
            .await?;
        Ok(())
    })
}

/// Every sender's sums per identity, bucket and window, for the windows whose reset is in
/// `[since, until)`.
pub(crate) async fn totals(
    pools: Pools<'_>,
    since: Timestamp,
    until: Timestamp,
) -> Result<Vec<SpendTotal>> {
    on_each_pool!(pools, |pool| {
        let rows = sqlx::query(TOTALS_SQL)
            .bind(ms(since))
            .bind(ms(until))
            .fetch_all(pool)
            .await?;
        rows.iter()
            .map(|row| {
                let run = row.int("sync_run_id")?;
                Ok(SpendTotal {
                    host: row.text("host")?,
                    subject: row.text("subject")?,
                    bucket: row.text("bucket")?,
                    route_family: row.text("route_family")?,
                    sync_run_id: (run > 0).then_some(run),
                    reset_at: row.ts("reset_at_ms")?,
                    requests: row.count("requests")?,
                    units: row.count("units")?,
                    first_recorded_at: row.ts("first_at")?,
                    last_recorded_at: row.ts("last_at")?,
                })
            })
            .collect()
    })
}

/// Each identity's and bucket's first window with counted spend.
pub(crate) async fn starts(pools: Pools<'_>) -> Result<Vec<SpendStart>> {
    on_each_pool!(pools, |pool| {
        let rows = sqlx::query(STARTS_SQL).fetch_all(pool).await?;
        rows.iter()
            .map(|row| {
                Ok(SpendStart {
                    host: row.text("host")?,
                    subject: row.text("subject")?,
                    bucket: row.text("bucket")?,
                    first_reset_at: row.ts("first_reset")?,
                    first_recorded_at: row.ts("first_at")?,
                })
            })
            .collect()
    })
}

/// Deletes the rows last written before `before`; returns how many.
pub(crate) async fn prune(pools: Pools<'_>, before: Timestamp) -> Result<u64> {
    on_each_pool!(pools, |pool| {
        Ok(
            sqlx::query("DELETE FROM spend_records WHERE last_recorded_at_ms < $1")
                .bind(ms(before))
                .execute(pool)
                .await?
                .rows_affected(),
        )
    })
}
