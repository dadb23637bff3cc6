//! The `quota_readings` queries: append (with `quota_latest`, each process's newest reading
//! per bucket, in the same transaction), the latest reading per identity and bucket with the
//! live processes' in flight summed — read from `quota_latest`'s few rows, never by ranking
//! the history —, one bucket's downsampled history (from `quota_minutes`, the per-minute
//! summaries written beside each reading, when its slots are a minute or longer), and
//! retention.

use std::collections::BTreeMap;

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_core::redact::redact;

use crate::db::{Pools, ReadRow, on_each_pool};
use crate::error::{Result, StoreError};
use crate::model::{from_ms, ms, to_i64};

use super::{BucketKey, BucketNow, HistoryPoint, QuotaReading, StoredQuotaReading};

const READING_COLUMNS: &str = "id, provider, host, subject, bucket, rate_limit, remaining, \
    used, reset_at_ms, in_flight, waiting, blocked_until_ms, last_reason, process_id, \
    observed_at_ms";

const INSERT_SQL: &str = "INSERT INTO quota_readings (provider, host, subject, bucket, \
    rate_limit, remaining, used, reset_at_ms, in_flight, waiting, blocked_until_ms, \
    last_reason, process_id, observed_at_ms) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id";

const LATEST_UPSERT_SQL: &str = "INSERT INTO quota_latest (host, subject, bucket, \
    process_id, reading_id, observed_at_ms) VALUES ($1, $2, $3, $4, $5, $6) \
    ON CONFLICT (host, subject, bucket, process_id) DO UPDATE SET \
    reading_id = excluded.reading_id, observed_at_ms = excluded.observed_at_ms \
    WHERE excluded.observed_at_ms >= quota_latest.observed_at_ms";

/// The newest reading of every (host, subject, bucket): the newest of its processes' newest.
/// A credential-keyed identity whose owner is stored is left out (see `provisional`).
static LATEST_SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT {READING_COLUMNS} FROM quota_readings WHERE id IN (SELECT reading_id FROM \
         (SELECT reading_id, ROW_NUMBER() OVER (PARTITION BY host, subject, bucket \
         ORDER BY observed_at_ms DESC, reading_id DESC) AS rn FROM quota_latest l \
         WHERE NOT {}) s WHERE rn = 1) ORDER BY host, subject, bucket",
        super::provisional::owner_is_stored("l")
    )
});

/// Each live process's newest reading of every bucket it reported on since `$1` (with its
/// holder, so that a process known to have exited is left out at once).
const LIVE_SQL: &str = "SELECT r.host, r.subject, r.bucket, r.in_flight, r.waiting, \
    l.process_id FROM quota_latest l JOIN quota_readings r ON r.id = l.reading_id \
    WHERE l.observed_at_ms >= $1";

const HISTORY_SQL: &str = "SELECT (observed_at_ms - $4) / $5 AS slot, \
    MIN(remaining) AS remaining_min, MAX(remaining) AS remaining_max, \
    MAX(rate_limit) AS limit_max, COUNT(*) AS n, \
    CAST(SUM(CASE WHEN last_reason IS NULL THEN 0 ELSE 1 END) AS BIGINT) AS waits \
    FROM quota_readings WHERE host = $1 AND subject = $2 AND bucket = $3 \
    AND observed_at_ms >= $4 GROUP BY slot ORDER BY slot";

/// A minute of a bucket's readings.
const MINUTE_UPSERT_SQL: &str = "INSERT INTO quota_minutes (host, subject, bucket, \
    minute_ms, remaining_min, remaining_max, limit_max, readings, waits) \
    VALUES ($1, $2, $3, $4, $5, $5, $6, 1, $7) \
    ON CONFLICT (host, subject, bucket, minute_ms) DO UPDATE SET \
    remaining_min = CASE WHEN quota_minutes.remaining_min IS NULL \
        OR excluded.remaining_min < quota_minutes.remaining_min \
        THEN excluded.remaining_min ELSE quota_minutes.remaining_min END, \
    remaining_max = CASE WHEN quota_minutes.remaining_max IS NULL \
        OR excluded.remaining_max > quota_minutes.remaining_max \
        THEN excluded.remaining_max ELSE quota_minutes.remaining_max END, \
    limit_max = CASE WHEN quota_minutes.limit_max IS NULL \
        OR excluded.limit_max > quota_minutes.limit_max \
        THEN excluded.limit_max ELSE quota_minutes.limit_max END, \
    readings = quota_minutes.readings + 1, \
    waits = quota_minutes.waits + excluded.waits";

/// [`HISTORY_SQL`] over the per-minute summaries, for slots of a minute or more (`$4` is
/// `since` rounded down to its minute).
const MINUTES_HISTORY_SQL: &str = "SELECT (minute_ms - $4) / $5 AS slot, \
    MIN(remaining_min) AS remaining_min, MAX(remaining_max) AS remaining_max, \
    MAX(limit_max) AS limit_max, CAST(SUM(readings) AS BIGINT) AS n, \
    CAST(SUM(waits) AS BIGINT) AS waits \
    FROM quota_minutes WHERE host = $1 AND subject = $2 AND bucket = $3 \
    AND minute_ms >= $4 GROUP BY slot ORDER BY slot";

/// The summaries' granularity.
const MINUTE_MS: i64 = 60_000;

fn opt_i64(field: &'static str, value: Option<u64>) -> Result<Option<i64>> {
    value.map(|v| to_i64(field, v)).transpose()
}

fn opt_u64(row: &impl ReadRow, column: &'static str) -> Result<Option<u64>> {
    row.opt_int(column)?
        .map(|v| u64::try_from(v).map_err(|e| StoreError::corrupt(column, e)))
        .transpose()
}

fn reading_from(row: &impl ReadRow) -> Result<StoredQuotaReading> {
    Ok(StoredQuotaReading {
        id: row.int("id")?,
        reading: QuotaReading {
            provider: row.text("provider")?,
            host: row.text("host")?,
            subject: row.text("subject")?,
            bucket: row.text("bucket")?,
            limit: opt_u64(row, "rate_limit")?,
            remaining: opt_u64(row, "remaining")?,
            used: opt_u64(row, "used")?,
            reset_at: row.opt_ts("reset_at_ms")?,
            in_flight: row.count("in_flight")?,
            waiting: row.count("waiting")?,
            blocked_until: row.opt_ts("blocked_until_ms")?,
            last_reason: row.opt_text("last_reason")?,
            process_id: row.text("process_id")?,
            observed_at: row.ts("observed_at_ms")?,
        },
    })
}

/// Appends one reading.
pub(super) async fn record(pools: Pools<'_>, r: &QuotaReading) -> Result<i64> {
    let limit = opt_i64("limit", r.limit)?;
    let remaining = opt_i64("remaining", r.remaining)?;
    let used = opt_i64("used", r.used)?;
    let in_flight = to_i64("in_flight", r.in_flight)?;
    let waiting = to_i64("waiting", r.waiting)?;
    on_each_pool!(pools, |pool| {
        let mut tx = pool.begin().await?;
        let row = sqlx::query(INSERT_SQL)
            .bind(r.provider.as_str())
            .bind(r.host.as_str())
            .bind(r.subject.as_str())
            .bind(r.bucket.as_str())
            .bind(limit)
            .bind(remaining)
            .bind(used)
            .bind(r.reset_at.map(ms))
            .bind(in_flight)
            .bind(waiting)
            .bind(r.blocked_until.map(ms))
            .bind(r.last_reason.as_deref().map(redact))
            .bind(r.process_id.as_str())
            .bind(ms(r.observed_at))
            .fetch_one(&mut *tx)
            .await?;
        let id = row.int("id")?;
        sqlx::query(LATEST_UPSERT_SQL)
            .bind(r.host.as_str())
            .bind(r.subject.as_str())
            .bind(r.bucket.as_str())
            .bind(r.process_id.as_str())
            .bind(id)
            .bind(ms(r.observed_at))
            .execute(&mut *tx)
            .await?;
        let observed = ms(r.observed_at);
        sqlx::query(MINUTE_UPSERT_SQL)
            .bind(r.host.as_str())
            .bind(r.subject.as_str())
            .bind(r.bucket.as_str())
            .bind(observed - observed.rem_euclid(MINUTE_MS))
            .bind(remaining)
            .bind(limit)
            .bind(i64::from(r.last_reason.is_some()))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(id)
    })
}

/// Deletes the readings observed before `before`.
pub(super) async fn prune(pools: Pools<'_>, before: Timestamp) -> Result<u64> {
    on_each_pool!(pools, |pool| {
        let mut tx = pool.begin().await?;
        sqlx::query("DELETE FROM quota_latest WHERE observed_at_ms < $1")
            .bind(ms(before))
            .execute(&mut *tx)
            .await?;
        // A minute is dropped once all of it is older than the bound.
        sqlx::query("DELETE FROM quota_minutes WHERE minute_ms + $2 <= $1")
            .bind(ms(before))
            .bind(MINUTE_MS)
            .execute(&mut *tx)
            .await?;
        let done = sqlx::query("DELETE FROM quota_readings WHERE observed_at_ms < $1")
            .bind(ms(before))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(done.rows_affected())
    })
}

/// In flight and waiting summed over live processes, and how many there are.
#[derive(Debug, Default, Clone, Copy)]
struct LiveSum {
    in_flight: u64,
    waiting: u64,
    processes: u64,
}

type BucketId = (String, String, String);

fn add_live(out: &mut BTreeMap<BucketId, LiveSum>, row: &impl ReadRow) -> Result<()> {
    // A reading is recent but its process exited (a `quota probe` that returned): what it
    // had in flight is not in flight any more, nor is it a live process.
    if crate::quota::ProcessMark::holder_is_gone(&row.text("process_id")?) {
        return Ok(());
    }
    let key = (row.text("host")?, row.text("subject")?, row.text("bucket")?);
    let sum = out.entry(key).or_default();
    sum.in_flight += row.count("in_flight")?;
    sum.waiting += row.count("waiting")?;
    sum.processes += 1;
    Ok(())
}

/// The newest reading per identity and bucket, with the live processes' sums.
pub(super) async fn latest(pools: Pools<'_>, live_since: Timestamp) -> Result<Vec<BucketNow>> {
    let mut live = BTreeMap::new();
    let latest = on_each_pool!(pools, |pool| {
        let rows = sqlx::query(sqlx::AssertSqlSafe(LATEST_SQL.as_str()))
            .fetch_all(pool)
            .await?;
        let latest = rows.iter().map(reading_from).collect::<Result<Vec<_>>>()?;
        let rows = sqlx::query(LIVE_SQL)
            .bind(ms(live_since))
            .fetch_all(pool)
            .await?;
        for row in &rows {
            add_live(&mut live, row)?;
        }
        latest
    });
    Ok(latest
        .into_iter()
        .map(|reading| {
            let r = &reading.reading;
            let key = (r.host.clone(), r.subject.clone(), r.bucket.clone());
            let sum = live.get(&key).copied().unwrap_or_default();
            BucketNow {
                latest: reading,
                in_flight: sum.in_flight,
                waiting: sum.waiting,
                live_processes: sum.processes,
            }
        })
        .collect())
}

fn point_from(row: &impl ReadRow, since: Timestamp, step_ms: i64) -> Result<HistoryPoint> {
    let slot = row.int("slot")?;
    let at = from_ms(
        "slot",
        ms(since).saturating_add(slot.saturating_mul(step_ms)),
    )?;
    Ok(HistoryPoint {
        at,
        remaining_min: opt_u64(row, "remaining_min")?,
        remaining_max: opt_u64(row, "remaining_max")?,
        limit: opt_u64(row, "limit_max")?,
        readings: row.count("n")?,
        waits: row.count("waits")?,
    })
}

/// Where a history's slots are counted from: slots of a minute or more read the per-minute
/// summaries, so they count from `since`'s minute; shorter ones from `since` itself.
pub(super) fn slot_origin(since_ms: i64, step_ms: i64) -> i64 {
    if step_ms >= MINUTE_MS {
        since_ms - since_ms.rem_euclid(MINUTE_MS)
    } else {
        since_ms
    }
}

/// One bucket's readings since `since`, in slots of `step`.
pub(super) async fn history(
    pools: Pools<'_>,
    key: BucketKey<'_>,
    since: Timestamp,
    step: SignedDuration,
) -> Result<Vec<HistoryPoint>> {
    let step_ms = i64::try_from(step.as_millis()).unwrap_or(i64::MAX);
    if step_ms <= 0 {
        return Err(StoreError::Invalid {
            field: "step",
            problem: format!("a history slot must last at least a millisecond (got {step})"),
        });
    }
    let start = slot_origin(ms(since), step_ms);
    let sql = if step_ms >= MINUTE_MS {
        MINUTES_HISTORY_SQL
    } else {
        HISTORY_SQL
    };
    let start_at = from_ms("since", start)?;
    on_each_pool!(pools, |pool| {
        let rows = sqlx::query(sql)
            .bind(key.host)
            .bind(key.subject)
            .bind(key.bucket)
            .bind(start)
            .bind(step_ms)
            .fetch_all(pool)
            .await?;
        rows.iter()
            .map(|r| point_from(r, start_at, step_ms))
            .collect()
    })
}
