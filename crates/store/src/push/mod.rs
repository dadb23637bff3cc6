//! What the feed stores of each envelope: a push event (with its actor and repository, see
//! [`fold`] and [`group`]) or a quarantined envelope; and the reads of one stored event or
//! entity.

pub(crate) mod fold;
pub(crate) mod group;

use headroom_core::redact::redact;

use crate::db::{Conn, Pools, ReadRow, get, on_each_conn, on_each_pool};
use crate::error::{Result, StoreError};
use crate::feed_state::{EnrichmentStage, EnrichmentStatus};
use crate::model::{
    self, FeedEntity, PushEventWrite, QuarantineRow, QuarantinedEvent, StoredPushEvent, ms,
};

/// An event's envelope as the JSON text a writer binds.
fn raw_text(event: &PushEventWrite) -> Result<String> {
    serde_json::to_string(&event.raw).map_err(|e| StoreError::Invalid {
        field: "raw",
        problem: e.to_string(),
    })
}

/// [`crate::StoreTx::write_push_event`].
pub(crate) async fn write_push_event(conn: &mut Conn<'_>, event: &PushEventWrite) -> Result<bool> {
    let raw = raw_text(event)?;
    group::write_event(conn, event, &raw).await?
}

/// [`crate::StoreTx::write_push_events`].
pub(crate) async fn write_push_events(
    conn: &mut Conn<'_>,
    events: &[PushEventWrite],
) -> Result<Vec<Result<bool>>> {
    let raws = events.iter().map(raw_text).collect::<Result<Vec<_>>>()?;
    let refs: Vec<&PushEventWrite> = events.iter().collect();
    let raws: Vec<&str> = raws.iter().map(String::as_str).collect();
    group::write_events(conn, &refs, &raws).await
}

/// The quarantine upsert, shared by the page path and the bulk writers (`?N` parameters,
/// which both backends' drivers accept as written here only for SQLite; PostgreSQL gets
/// [`quarantine_sql_numbered`]).
pub(crate) const QUARANTINE_SQL: &str = "INSERT INTO quarantined_events (payload_fingerprint, \
    github_event_id, event_type, error_code, error_message, occurrence_count, source, \
    first_received_at_ms, last_received_at_ms, raw_json, raw_text) \
    VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?7, ?7, ?8, ?9) \
    ON CONFLICT (payload_fingerprint) DO UPDATE SET \
    occurrence_count = quarantined_events.occurrence_count + 1, \
    last_received_at_ms = CASE WHEN excluded.last_received_at_ms > quarantined_events.last_received_at_ms \
        THEN excluded.last_received_at_ms ELSE quarantined_events.last_received_at_ms END \
    RETURNING payload_fingerprint, error_code, occurrence_count, \
    first_received_at_ms, last_received_at_ms";

/// [`QUARANTINE_SQL`] with `$N` parameters.
pub(crate) fn quarantine_sql_numbered() -> String {
    (1..=9).rev().fold(QUARANTINE_SQL.to_owned(), |sql, n| {
        sql.replace(&format!("?{n}"), &format!("${n}"))
    })
}

/// Quarantines one envelope on `conn` (a repeat of a payload counts another occurrence).
pub(crate) async fn quarantine_on(
    conn: &mut Conn<'_>,
    e: &QuarantinedEvent,
) -> Result<QuarantineRow> {
    model::check_fingerprint(&e.payload_fingerprint)?;
    let sql = quarantine_sql_numbered();
    on_each_conn!(conn, |c| {
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(e.payload_fingerprint.as_str())
            .bind(e.github_event_id.as_deref())
            .bind(e.event_type.as_deref())
            .bind(e.error_code.as_str())
            .bind(redact(&e.error_message))
            .bind(e.origin.as_str())
            .bind(ms(e.received_at))
            .bind(e.raw.as_ref().map(sqlx::types::Json))
            .bind(e.raw_text.as_deref())
            .fetch_one(&mut *c)
            .await?;
        Ok(QuarantineRow {
            payload_fingerprint: row.text("payload_fingerprint")?,
            error_code: row.text("error_code")?,
            occurrence_count: row.uint("occurrence_count")?,
            first_received_at: row.ts("first_received_at_ms")?,
            last_received_at: row.ts("last_received_at_ms")?,
        })
    })
}

/// [`quarantine_on`] on a connection of its own.
pub(crate) async fn quarantine_event(
    pools: Pools<'_>,
    e: &QuarantinedEvent,
) -> Result<QuarantineRow> {
    match pools {
        Pools::Sqlite(pool) => {
            let mut c = pool.acquire().await?;
            quarantine_on(&mut Conn::Sqlite(&mut c), e).await
        }
        Pools::Pg(pool) => {
            let mut c = pool.acquire().await?;
            quarantine_on(&mut Conn::Pg(&mut c), e).await
        }
    }
}

pub(crate) async fn push_event(
    pools: Pools<'_>,
    github_event_id: &str,
) -> Result<Option<StoredPushEvent>> {
    on_each_pool!(pools, |pool| {
        let row = sqlx::query(
            "SELECT github_event_id, github_actor_id, github_repository_id, actor_login, \
             repository_name, ref, head_sha, before_sha, occurred_at_ms, created_at_ms, \
             raw_json FROM push_events WHERE github_event_id = $1",
        )
        .bind(github_event_id.to_owned())
        .fetch_optional(pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        Ok(Some(StoredPushEvent {
            github_event_id: row.text("github_event_id")?,
            github_actor_id: row.int("github_actor_id")?,
            github_repository_id: row.int("github_repository_id")?,
            actor_login: row.text("actor_login")?,
            repository_name: row.text("repository_name")?,
            git_ref: row.text("ref")?,
            head_sha: row.text("head_sha")?,
            before_sha: get(&row, "before_sha")?,
            occurred_at: row.ts("occurred_at_ms")?,
            created_at: row.ts("created_at_ms")?,
            raw: row.opt_json("raw_json")?.unwrap_or(serde_json::Value::Null),
        }))
    })
}

fn feed_entity_from(row: &impl ReadRow) -> Result<FeedEntity> {
    Ok(FeedEntity {
        github_id: row.int("github_id")?,
        name: row.text("name")?,
        enrichment_status: EnrichmentStatus::parse(&row.text("enrichment_status")?)?,
        enrichment_stage: EnrichmentStage::parse(&row.text("enrichment_stage")?)?,
        first_seen_at: row.opt_ts("first_seen_at_ms")?,
        last_seen_at: row.opt_ts("last_seen_at_ms")?,
        latest_event_at: row.opt_ts("latest_event_at_ms")?,
    })
}

/// An actor (`actors`, its login as the name) or a repository (`repositories`, its full
/// name) by GitHub id.
pub(crate) async fn entity(
    pools: Pools<'_>,
    table: Entity,
    github_id: i64,
) -> Result<Option<FeedEntity>> {
    let sql = match table {
        Entity::Actor => {
            "SELECT github_id, login AS name, enrichment_status, enrichment_stage, \
             first_seen_at_ms, last_seen_at_ms, latest_event_at_ms \
             FROM actors WHERE github_id = $1"
        }
        Entity::Repository => {
            "SELECT github_id, full_name AS name, enrichment_status, enrichment_stage, \
             first_seen_at_ms, last_seen_at_ms, latest_event_at_ms \
             FROM repositories WHERE github_id = $1"
        }
    };
    on_each_pool!(pools, |pool| {
        let row = sqlx::query(sql)
            .bind(github_id)
            .fetch_optional(pool)
            .await?;
        row.as_ref().map(feed_entity_from).transpose()
    })
}

/// Which entity table [`entity`] reads.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Entity {
    /// `actors`.
    Actor,
    /// `repositories`.
    Repository,
}
