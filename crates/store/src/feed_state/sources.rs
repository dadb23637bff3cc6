//! Event sources (the row, its schedule, the source lease) and ingestion runs.

use super::rows::*;
use super::*;

pub(super) async fn ensure_event_source(
    pools: Pools<'_>,
    source_type: &str,
    url: &str,
    now: Timestamp,
) -> Result<EventSource> {
    on_each_pool!(pools, |pool| {
        sqlx::query(
            "INSERT INTO event_sources (source_type, url, created_at_ms, updated_at_ms) \
         VALUES ($1, $2, $3, $3) ON CONFLICT (source_type) DO NOTHING",
        )
        .bind(source_type.to_owned())
        .bind(url.to_owned())
        .bind(ms(now))
        .execute(pool)
        .await?;
        let sql = format!("SELECT {SOURCE_COLUMNS} FROM event_sources WHERE source_type = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(source_type.to_owned())
            .fetch_one(pool)
            .await?;
        source_from(&row)
    })
}

pub(super) async fn event_source(
    pools: Pools<'_>,
    source_type: &str,
) -> Result<Option<EventSource>> {
    on_each_pool!(pools, |pool| {
        let sql = format!("SELECT {SOURCE_COLUMNS} FROM event_sources WHERE source_type = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(source_type.to_owned())
            .fetch_optional(pool)
            .await?;
        row.as_ref().map(source_from).transpose()
    })
}

pub(super) async fn try_lock_event_source(
    pools: Pools<'_>,
    id: i64,
    holder: &str,
    now: Timestamp,
    until: Timestamp,
) -> Result<bool> {
    on_each_pool!(pools, |pool| {
        let done = sqlx::query(
            "UPDATE event_sources SET lock_token = $2, lock_expires_at_ms = $4 \
         WHERE id = $1 AND (lock_token IS NULL OR lock_token = $2 \
         OR lock_expires_at_ms IS NULL OR lock_expires_at_ms <= $3)",
        )
        .bind(id)
        .bind(holder.to_owned())
        .bind(ms(now))
        .bind(ms(until))
        .execute(pool)
        .await?;
        Ok(done.rows_affected() == 1)
    })
}

pub(super) async fn unlock_event_source(pools: Pools<'_>, id: i64, holder: &str) -> Result<()> {
    on_each_pool!(pools, |pool| {
        sqlx::query(
            "UPDATE event_sources SET lock_token = NULL, lock_expires_at_ms = NULL \
         WHERE id = $1 AND lock_token = $2",
        )
        .bind(id)
        .bind(holder.to_owned())
        .execute(pool)
        .await?;
        Ok(())
    })
}

pub(super) async fn save_event_source(
    pools: Pools<'_>,
    s: &EventSource,
    now: Timestamp,
) -> Result<()> {
    on_each_pool!(pools, |pool| {
        sqlx::query(
            "UPDATE event_sources SET status = $2, etag = $3, cadence_due_at_ms = $4, \
         poll_floor_until_at_ms = $5, retry_not_before_at_ms = $6, \
         next_poll_at_ms = $7, consecutive_failures = $8, last_error = $9, \
         last_polled_at_ms = $10, updated_at_ms = $11 WHERE id = $1",
        )
        .bind(s.id)
        .bind(s.status.as_str())
        .bind(s.etag.clone())
        .bind(s.cadence_due_at.map(ms))
        .bind(s.poll_floor_until.map(ms))
        .bind(s.retry_not_before_at.map(ms))
        .bind(s.next_poll_at.map(ms))
        .bind(to_i64("consecutive_failures", s.consecutive_failures)?)
        .bind(s.last_error.as_deref().map(redact))
        .bind(s.last_polled_at.map(ms))
        .bind(ms(now))
        .execute(pool)
        .await?;
        Ok(())
    })
}

/// An ingestion run to open.
pub(super) struct NewIngestionRun<'a> {
    pub(super) run_id: &'a str,
    pub(super) event_source_id: Option<i64>,
    pub(super) origin: &'a str,
    pub(super) credential: Option<&'a crate::CredentialUsed>,
}

pub(super) async fn start_ingestion_run(
    pools: Pools<'_>,
    run: &NewIngestionRun<'_>,
    started_at: Timestamp,
) -> Result<i64> {
    let fingerprint = run.credential.and_then(|c| c.fingerprint.clone());
    if let Some(f) = &fingerprint {
        crate::model::check_fingerprint(f)?;
    }
    let owner = run.credential.map(|c| c.owner.clone());
    on_each_pool!(pools, |pool| {
        let row = sqlx::query(
            "INSERT INTO ingestion_runs (run_id, event_source_id, source, status, \
         started_at_ms, credential_fingerprint, credential_owner) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
        )
        .bind(run.run_id.to_owned())
        .bind(run.event_source_id)
        .bind(run.origin.to_owned())
        .bind(IngestionRunStatus::Running.as_str())
        .bind(ms(started_at))
        .bind(fingerprint.clone())
        .bind(owner.clone())
        .fetch_one(pool)
        .await?;
        get(&row, "id")
    })
}

pub(super) async fn finish_ingestion_run(
    pools: Pools<'_>,
    id: i64,
    e: &IngestionRunEnd,
) -> Result<()> {
    on_each_pool!(pools, |pool| {
        sqlx::query(
            "UPDATE ingestion_runs SET status = $2, classification = $3, \
         stop_reason = $4, finished_at_ms = $5, pages_fetched = $6, \
         events_received = $7, push_events_seen = $8, events_created = $9, \
         duplicates_skipped = $10, events_quarantined = $11, \
         events_ignored = $12, events_failed = $13, error_message = $14, \
         summary_json = $15 WHERE id = $1",
        )
        .bind(id)
        .bind(e.status.as_str())
        .bind(e.classification.clone())
        .bind(e.stop_reason.as_deref().map(redact))
        .bind(e.finished_at.map(ms))
        .bind(to_i64("pages_fetched", e.pages_fetched)?)
        .bind(to_i64("events_received", e.events_received)?)
        .bind(to_i64("push_events_seen", e.push_events_seen)?)
        .bind(to_i64("events_created", e.events_created)?)
        .bind(to_i64("duplicates_skipped", e.duplicates_skipped)?)
        .bind(to_i64("events_quarantined", e.events_quarantined)?)
        .bind(to_i64("events_ignored", e.events_ignored)?)
        .bind(to_i64("events_failed", e.events_failed)?)
        .bind(e.error_message.as_deref().map(redact))
        // The summary repeats the run's texts (its error among them): masked like the columns.
        .bind(sqlx::types::Json(redact_json(
            &serde_json::to_value(e).unwrap_or_default(),
        )))
        .execute(pool)
        .await?;
        Ok(())
    })
}
