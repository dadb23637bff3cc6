//! Bulk writes for archive imports: batches of judged envelopes with the same results as
//! the page path ([`crate::StoreTx::write_push_events`] plus [`crate::Store::quarantine_event`])
//! — dedup by GitHub event id, entity identity refreshed by the last event naming it, entity
//! activity moved only by events that were new, quarantine rows counted per distinct payload,
//! and a bad event failing alone.
//!
//! On an SQLite file the writer is [`sqlite`]: a dedicated `rusqlite` connection (sqlx's
//! driver hands every statement to a worker thread and back, which cost more than SQLite's own
//! work at import rates) with one transaction open across batches, committed every
//! [`BulkOptions::commit_every`] envelopes (250,000 by default) and at [`BulkWriter::finish`]. Durability is per commit (WAL, `synchronous =
//! NORMAL`, as the rest of the store): a killed import loses at most the envelopes since the
//! last commit, and importing again skips what was kept. Everywhere else (PostgreSQL, an
//! in-memory SQLite) each batch is one transaction of its own, durable when written.

use std::collections::{BTreeMap, HashSet};

use async_trait::async_trait;
use headroom_core::redact::redact;

use crate::error::{Result, StoreError};
use crate::model::{PushEventWrite, QuarantinedEvent, check_fingerprint, ms};
use crate::{PgStore, Store};

mod sqlite;

/// Envelopes per commit of a writer that keeps one transaction open across batches, by
/// default (see [`BulkOptions`]).
pub const DEFAULT_COMMIT_EVERY: usize = 250_000;

/// How a bulk writer groups its work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkOptions {
    /// Envelopes between commits where one transaction spans batches (an SQLite file): larger
    /// is faster, and a killed import loses at most this many envelopes' work. Elsewhere each
    /// batch commits by itself and this is not used.
    pub commit_every: usize,
}

impl Default for BulkOptions {
    fn default() -> Self {
        Self {
            commit_every: DEFAULT_COMMIT_EVERY,
        }
    }
}

/// One envelope to write in bulk.
#[derive(Debug, Clone)]
pub enum BulkItem {
    /// A validated PushEvent.
    Push(Box<BulkPush>),
    /// A malformed envelope.
    Quarantine(Box<QuarantinedEvent>),
}

/// A PushEvent with its envelope as JSON text (the archive's own line, or the tree written
/// out): the writer stores `raw_json` and never reads `event.raw` (which both constructors
/// empty, so a batch holds text rather than a tree of values, made on the caller's thread).
#[derive(Debug, Clone, PartialEq)]
pub struct BulkPush {
    /// The event's columns.
    pub event: PushEventWrite,
    /// The envelope, as JSON text.
    pub raw_json: String,
}

impl BulkPush {
    /// Serializes `event.raw` and keeps the text in its place.
    pub fn new(mut event: PushEventWrite) -> Result<Self> {
        let raw_json = serde_json::to_string(&event.raw).map_err(|e| StoreError::Invalid {
            field: "raw",
            problem: e.to_string(),
        })?;
        event.raw = serde_json::Value::Null;
        Ok(Self { event, raw_json })
    }

    /// Keeps `text`, the JSON text `event.raw` was parsed from, as the envelope: what the
    /// archive held, byte for byte, and no second pass over the event to write it out again
    /// (which cost an import's parser thread about a fifth of its instructions).
    pub fn from_text(mut event: PushEventWrite, text: String) -> Self {
        event.raw = serde_json::Value::Null;
        Self {
            event,
            raw_json: text,
        }
    }
}

/// What happened to one [`BulkItem`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BulkOutcome {
    /// A new push_events row.
    Created,
    /// The event id was already stored (or came earlier in the same batch).
    Duplicate,
    /// The database refused this event; the rest of the batch was still written.
    Failed(StoreError),
    /// Quarantined; the row has now been seen this often.
    Quarantined {
        /// The row's occurrence count after this write.
        occurrence_count: u64,
    },
}

/// Writes batches of envelopes. When a batch becomes durable depends on the writer (at once,
/// or at the next group commit); [`BulkWriter::finish`] makes everything written so far
/// durable.
#[async_trait]
pub trait BulkWriter: Send {
    /// Writes one batch and returns one outcome per item, in order (an event the database
    /// refuses is [`BulkOutcome::Failed`] and the rest are written). An error means none of
    /// the batch is stored, nor, on a writer with group commits, anything since its last
    /// commit ([`StoreError::RolledBack`] says how much); what was committed is kept.
    async fn write(&mut self, items: Vec<BulkItem>) -> Result<Vec<BulkOutcome>>;

    /// Commits whatever earlier batches left pending. A writer dropped without it loses at
    /// most the batches since its last commit (an import run again keeps them by dedup).
    async fn finish(&mut self) -> Result<()> {
        Ok(())
    }
}

/// The portable writer: the store's own transaction and page fast path.
#[derive(Debug)]
pub struct TxWriter<'a, S: ?Sized> {
    store: &'a S,
}

impl<'a, S: Store + ?Sized> TxWriter<'a, S> {
    /// A writer over `store`.
    pub fn new(store: &'a S) -> Self {
        Self { store }
    }
}

#[async_trait]
impl<S: Store + ?Sized> BulkWriter for TxWriter<'_, S> {
    async fn write(&mut self, items: Vec<BulkItem>) -> Result<Vec<BulkOutcome>> {
        let mut outcomes: Vec<Option<BulkOutcome>> = vec![None; items.len()];
        let mut pushes = Vec::new();
        let mut slots = Vec::new();
        for (i, item) in items.into_iter().enumerate() {
            match item {
                BulkItem::Quarantine(event) => {
                    let row = self.store.quarantine_event(&event).await?;
                    outcomes[i] = Some(BulkOutcome::Quarantined {
                        occurrence_count: row.occurrence_count,
                    });
                }
                BulkItem::Push(push) => {
                    let BulkPush {
                        mut event,
                        raw_json,
                    } = *push;
                    event.raw =
                        serde_json::from_str(&raw_json).map_err(|e| StoreError::Invalid {
                            field: "raw",
                            problem: e.to_string(),
                        })?;
                    pushes.push(event);
                    slots.push(i);
                }
            }
        }
        if !pushes.is_empty() {
            let mut tx = self.store.begin().await?;
            let written = tx.write_push_events(&pushes).await?;
            tx.commit().await?;
            for (slot, result) in slots.into_iter().zip(written) {
                outcomes[slot] = Some(match result {
                    Ok(true) => BulkOutcome::Created,
                    Ok(false) => BulkOutcome::Duplicate,
                    Err(e) => BulkOutcome::Failed(e),
                });
            }
        }
        Ok(outcomes
            .into_iter()
            .map(|o| o.unwrap_or(BulkOutcome::Duplicate))
            .collect())
    }
}

impl PgStore {
    /// The bulk writer for this store: array-bound multi-row statements on one connection.
    pub(crate) async fn open_bulk(
        &self,
        _options: BulkOptions,
    ) -> Result<Box<dyn BulkWriter + '_>> {
        Ok(Box::new(PgBulk {
            pool: self.pool().clone(),
        }))
    }
}

const QUARANTINE_SQL: &str = "INSERT INTO quarantined_events (payload_fingerprint, \
    github_event_id, event_type, error_code, error_message, occurrence_count, source, \
    first_received_at_ms, last_received_at_ms, raw_json, raw_text) \
    VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?7, ?7, ?8, ?9) \
    ON CONFLICT (payload_fingerprint) DO UPDATE SET \
    occurrence_count = quarantined_events.occurrence_count + 1, \
    last_received_at_ms = CASE WHEN excluded.last_received_at_ms > quarantined_events.last_received_at_ms \
        THEN excluded.last_received_at_ms ELSE quarantined_events.last_received_at_ms END \
    RETURNING occurrence_count";

/// The columns an entity row is written with: identity, then `event_native_at_ms`, the
/// three stage-entry/creation/update instants, then activity (first seen, last seen, latest
/// event), which is NULL when no new event named the entity and then leaves activity alone.
const ACTOR_COLUMNS: &str = "github_id, login, display_login, detail_url, avatar_url, \
    event_native_at_ms, batch_pending_at_ms, created_at_ms, updated_at_ms, \
    first_seen_at_ms, last_seen_at_ms, latest_event_at_ms";

const ACTOR_UPDATE: &str = "ON CONFLICT (github_id) DO UPDATE SET login = excluded.login, \
    display_login = excluded.display_login, \
    detail_url = COALESCE(excluded.detail_url, actors.detail_url), \
    avatar_url = COALESCE(excluded.avatar_url, actors.avatar_url), \
    updated_at_ms = excluded.updated_at_ms, \
    first_seen_at_ms = COALESCE(actors.first_seen_at_ms, excluded.first_seen_at_ms), \
    last_seen_at_ms = CASE WHEN excluded.last_seen_at_ms IS NOT NULL \
        AND (actors.last_seen_at_ms IS NULL OR actors.last_seen_at_ms < excluded.last_seen_at_ms) \
        THEN excluded.last_seen_at_ms ELSE actors.last_seen_at_ms END, \
    latest_event_at_ms = CASE WHEN excluded.latest_event_at_ms IS NOT NULL \
        AND (actors.latest_event_at_ms IS NULL OR actors.latest_event_at_ms < excluded.latest_event_at_ms) \
        THEN excluded.latest_event_at_ms ELSE actors.latest_event_at_ms END";

const REPOSITORY_COLUMNS: &str = "github_id, full_name, name, owner_login, detail_url, \
    event_native_at_ms, batch_pending_at_ms, created_at_ms, updated_at_ms, \
    first_seen_at_ms, last_seen_at_ms, latest_event_at_ms";

const REPOSITORY_UPDATE: &str = "ON CONFLICT (github_id) DO UPDATE SET \
    full_name = excluded.full_name, name = excluded.name, owner_login = excluded.owner_login, \
    detail_url = COALESCE(excluded.detail_url, repositories.detail_url), \
    updated_at_ms = excluded.updated_at_ms, \
    first_seen_at_ms = COALESCE(repositories.first_seen_at_ms, excluded.first_seen_at_ms), \
    last_seen_at_ms = CASE WHEN excluded.last_seen_at_ms IS NOT NULL \
        AND (repositories.last_seen_at_ms IS NULL OR repositories.last_seen_at_ms < excluded.last_seen_at_ms) \
        THEN excluded.last_seen_at_ms ELSE repositories.last_seen_at_ms END, \
    latest_event_at_ms = CASE WHEN excluded.latest_event_at_ms IS NOT NULL \
        AND (repositories.latest_event_at_ms IS NULL OR repositories.latest_event_at_ms < excluded.latest_event_at_ms) \
        THEN excluded.latest_event_at_ms ELSE repositories.latest_event_at_ms END";

const PUSH_COLUMNS: &str = "github_event_id, github_push_id, github_actor_id, \
    github_repository_id, actor_login, repository_name, ref, head_sha, before_sha, \
    commit_count, distinct_commit_count, occurred_at_ms, ingestion_run_id, source, \
    created_at_ms, raw_json";

fn created_or_duplicate(new: bool) -> BulkOutcome {
    if new {
        BulkOutcome::Created
    } else {
        BulkOutcome::Duplicate
    }
}

/// (first seen, last seen, latest event) over an entity's new events.
type Activity = (i64, i64, i64);

/// What one group writes for one entity: the last event naming it (its identity wins) and
/// the activity of its new events, if any.
struct EntityWrite<'a> {
    last: &'a PushEventWrite,
    activity: Option<Activity>,
}

/// Works out, from which events are new, the entity rows a group writes. Pure.
fn plan_entities<'a>(
    events: &[&'a PushEventWrite],
    new: &[bool],
) -> (
    BTreeMap<i64, EntityWrite<'a>>,
    BTreeMap<i64, EntityWrite<'a>>,
) {
    let mut actors: BTreeMap<i64, EntityWrite<'a>> = BTreeMap::new();
    let mut repositories: BTreeMap<i64, EntityWrite<'a>> = BTreeMap::new();
    for (event, &is_new) in events.iter().zip(new) {
        let (seen, occurred) = (ms(event.received_at), ms(event.occurred_at));
        for (map, id) in [
            (&mut actors, event.actor.github_id),
            (&mut repositories, event.repository.github_id),
        ] {
            let entry = map.entry(id).or_insert(EntityWrite {
                last: event,
                activity: None,
            });
            entry.last = event;
            if is_new {
                entry.activity = Some(match entry.activity {
                    None => (seen, seen, occurred),
                    Some((first, last, latest)) => {
                        (first.min(seen), last.max(seen), latest.max(occurred))
                    }
                });
            }
        }
    }
    (actors, repositories)
}

fn split(activity: Option<Activity>) -> (Option<i64>, Option<i64>, Option<i64>) {
    match activity {
        Some((first, last, latest)) => (Some(first), Some(last), Some(latest)),
        None => (None, None, None),
    }
}

// ---- PostgreSQL -------------------------------------------------------------------------

/// The PostgreSQL writer: each statement carries a whole group as arrays (`UNNEST`), so a
/// batch costs a handful of round trips whatever its size.
struct PgBulk {
    pool: sqlx::PgPool,
}

#[async_trait]
impl BulkWriter for PgBulk {
    async fn write(&mut self, items: Vec<BulkItem>) -> Result<Vec<BulkOutcome>> {
        let mut outcomes: Vec<Option<BulkOutcome>> = vec![None; items.len()];
        let mut pushes: Vec<&PushEventWrite> = Vec::with_capacity(items.len());
        let mut raws: Vec<&str> = Vec::with_capacity(items.len());
        let mut slots = Vec::with_capacity(items.len());
        let mut tx = self.pool.begin().await?;
        for (i, item) in items.iter().enumerate() {
            match item {
                BulkItem::Quarantine(e) => {
                    check_fingerprint(&e.payload_fingerprint)?;
                    let count: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(pg_quarantine_sql()))
                        .bind(&e.payload_fingerprint)
                        .bind(&e.github_event_id)
                        .bind(&e.event_type)
                        .bind(&e.error_code)
                        .bind(redact(&e.error_message))
                        .bind(e.origin.as_str())
                        .bind(ms(e.received_at))
                        .bind(e.raw.as_ref().map(sqlx::types::Json))
                        .bind(&e.raw_text)
                        .fetch_one(&mut *tx)
                        .await?;
                    outcomes[i] = Some(BulkOutcome::Quarantined {
                        occurrence_count: u64::try_from(count).unwrap_or(0),
                    });
                }
                BulkItem::Push(push) => {
                    pushes.push(&push.event);
                    raws.push(push.raw_json.as_str());
                    slots.push(i);
                }
            }
        }
        if !pushes.is_empty() {
            let results = match pg_group_in_savepoint(&mut tx, &pushes, &raws).await? {
                Ok(new) => new.into_iter().map(created_or_duplicate).collect(),
                Err(_) => {
                    let mut one_by_one = Vec::with_capacity(pushes.len());
                    for (event, raw) in pushes.iter().zip(&raws) {
                        one_by_one.push(
                            match pg_group_in_savepoint(
                                &mut tx,
                                std::slice::from_ref(event),
                                std::slice::from_ref(raw),
                            )
                            .await?
                            {
                                Ok(new) => created_or_duplicate(new[0]),
                                Err(e) => BulkOutcome::Failed(e),
                            },
                        );
                    }
                    one_by_one
                }
            };
            for (slot, outcome) in slots.into_iter().zip(results) {
                outcomes[slot] = Some(outcome);
            }
        }
        tx.commit().await?;
        Ok(outcomes
            .into_iter()
            .map(|o| o.unwrap_or(BulkOutcome::Duplicate))
            .collect())
    }
}

fn pg_quarantine_sql() -> String {
    QUARANTINE_SQL
        .replace("?1", "$1")
        .replace("?2", "$2")
        .replace("?3", "$3")
        .replace("?4", "$4")
        .replace("?5", "$5")
        .replace("?6", "$6")
        .replace("?7", "$7")
        .replace("?8", "$8")
        .replace("?9", "$9")
}

/// A group under a savepoint: the outer error is the transaction's own failure, the inner
/// one the group's (its savepoint rolled back, the transaction still usable).
async fn pg_group_in_savepoint(
    conn: &mut sqlx::PgConnection,
    events: &[&PushEventWrite],
    raws: &[&str],
) -> Result<Result<Vec<bool>>> {
    sqlx::query("SAVEPOINT headroom_bulk")
        .execute(&mut *conn)
        .await?;
    match pg_group(conn, events, raws).await {
        Ok(new) => {
            sqlx::query("RELEASE SAVEPOINT headroom_bulk")
                .execute(&mut *conn)
                .await?;
            Ok(Ok(new))
        }
        Err(error) => {
            sqlx::query("ROLLBACK TO SAVEPOINT headroom_bulk")
                .execute(&mut *conn)
                .await?;
            sqlx::query("RELEASE SAVEPOINT headroom_bulk")
                .execute(&mut *conn)
                .await?;
            Ok(Err(error))
        }
    }
}

/// `SELECT … FROM UNNEST(arrays)` for an entity table: the nine bound columns expanded to
/// the twelve written ones.
fn pg_entity_sql(table: &str, columns: &str, update: &str) -> String {
    format!(
        "INSERT INTO {table} ({columns}) \
         SELECT c1, c2, c3, c4, c5, c6, c6, c6, c6, c7, c8, c9 \
         FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], \
             $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[]) \
             AS u(c1, c2, c3, c4, c5, c6, c7, c8, c9) {update}"
    )
}

/// A group of pushes, each step one array-bound statement: which are new (not stored, not
/// earlier in the group), then each entity once, then the new events. Fails as a whole.
async fn pg_group(
    conn: &mut sqlx::PgConnection,
    events: &[&PushEventWrite],
    raws: &[&str],
) -> Result<Vec<bool>> {
    let new = pg_new_events(conn, events).await?;
    let (actors, repositories) = plan_entities(events, &new);
    for (table, columns, update, rows) in [
        ("actors", ACTOR_COLUMNS, ACTOR_UPDATE, &actors),
        (
            "repositories",
            REPOSITORY_COLUMNS,
            REPOSITORY_UPDATE,
            &repositories,
        ),
    ] {
        pg_write_entities(conn, table, columns, update, rows).await?;
    }

    let (chosen, raw): (Vec<&PushEventWrite>, Vec<&str>) = events
        .iter()
        .zip(raws)
        .zip(&new)
        .filter(|(_, is_new)| **is_new)
        .map(|((event, raw), _)| (*event, *raw))
        .unzip();
    if chosen.is_empty() {
        return Ok(new);
    }
    let inserted = pg_insert_events(conn, &chosen, raw).await?;
    if inserted != chosen.len() as u64 {
        return Err(StoreError::Conflict(
            "push events appeared during the batch".into(),
        ));
    }
    Ok(new)
}

/// For each event of the group, whether it is new: not stored yet and not earlier in the group.
async fn pg_new_events(
    conn: &mut sqlx::PgConnection,
    events: &[&PushEventWrite],
) -> Result<Vec<bool>> {
    let ids: Vec<&str> = events.iter().map(|e| e.github_event_id.as_str()).collect();
    let stored: HashSet<String> = sqlx::query_scalar::<_, String>(
        "SELECT github_event_id FROM push_events WHERE github_event_id = ANY($1)",
    )
    .bind(&ids)
    .fetch_all(&mut *conn)
    .await?
    .into_iter()
    .collect();
    let mut new = Vec::with_capacity(events.len());
    let mut fresh: HashSet<&str> = HashSet::with_capacity(events.len());
    for id in &ids {
        let is_new = !stored.contains(*id) && !fresh.contains(id);
        if is_new {
            fresh.insert(id);
        }
        new.push(is_new);
    }
    Ok(new)
}

/// One entity table's rows of the group as one `UNNEST` upsert.
async fn pg_write_entities(
    conn: &mut sqlx::PgConnection,
    table: &str,
    columns: &str,
    update: &str,
    rows: &BTreeMap<i64, EntityWrite<'_>>,
) -> Result<()> {
    let n = rows.len();
    let (mut c1, mut c2, mut c3, mut c4, mut c5) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let (mut c6, mut c7, mut c8, mut c9) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for (id, write) in rows.iter() {
        c1.push(*id);
        if table == "actors" {
            let actor = &write.last.actor;
            c2.push(Some(actor.login.as_str()));
            c3.push(actor.display_login.as_deref());
            c4.push(actor.url.as_deref());
            c5.push(actor.avatar_url.as_deref());
        } else {
            let repository = &write.last.repository;
            let (owner, name) = match repository.full_name.split_once('/') {
                Some((owner, name)) => (Some(owner), Some(name)),
                None => (None, None),
            };
            c2.push(Some(repository.full_name.as_str()));
            c3.push(name);
            c4.push(owner);
            c5.push(repository.url.as_deref());
        }
        c6.push(ms(write.last.received_at));
        let (first, last, latest) = split(write.activity);
        c7.push(first);
        c8.push(last);
        c9.push(latest);
    }
    sqlx::query(sqlx::AssertSqlSafe(pg_entity_sql(table, columns, update)))
        .bind(c1)
        .bind(c2)
        .bind(c3)
        .bind(c4)
        .bind(c5)
        .bind(c6)
        .bind(c7)
        .bind(c8)
        .bind(c9)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The group's new events as one `UNNEST` insert, in group order; returns the rows inserted.
async fn pg_insert_events(
    conn: &mut sqlx::PgConnection,
    chosen: &[&PushEventWrite],
    raw: Vec<&str>,
) -> Result<u64> {
    let column = |f: fn(&PushEventWrite) -> Option<i64>| -> Vec<Option<i64>> {
        chosen.iter().map(|e| f(e)).collect()
    };
    let text = |f: fn(&PushEventWrite) -> &str| -> Vec<&str> {
        chosen.iter().map(|e| f(e)).collect::<Vec<&str>>()
    };
    Ok(sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO push_events ({PUSH_COLUMNS}) \
         SELECT c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15, \
             CAST(c16 AS JSONB) \
         FROM UNNEST($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], \
             $6::text[], $7::text[], $8::text[], $9::text[], $10::bigint[], $11::bigint[], \
             $12::bigint[], $13::bigint[], $14::text[], $15::bigint[], $16::text[]) \
             WITH ORDINALITY AS u(c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, \
             c14, c15, c16, n) \
         ORDER BY n \
         ON CONFLICT (github_event_id) DO NOTHING"
    )))
    .bind(text(|e| &e.github_event_id))
    .bind(column(|e| e.github_push_id))
    .bind(column(|e| Some(e.actor.github_id)))
    .bind(column(|e| Some(e.repository.github_id)))
    .bind(text(|e| &e.actor.login))
    .bind(text(|e| &e.repository.full_name))
    .bind(text(|e| &e.git_ref))
    .bind(text(|e| &e.head_sha))
    .bind(
        chosen
            .iter()
            .map(|e| e.before_sha.as_deref())
            .collect::<Vec<Option<&str>>>(),
    )
    .bind(column(|e| e.commit_count))
    .bind(column(|e| e.distinct_commit_count))
    .bind(column(|e| Some(ms(e.occurred_at))))
    .bind(column(|e| e.ingestion_run_id))
    .bind(text(|e| e.origin.as_str()))
    .bind(column(|e| Some(ms(e.received_at))))
    .bind(raw)
    .execute(&mut *conn)
    .await?
    .rows_affected())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ActorRef, EventOrigin, RepositoryRef};
    use headroom_core::clock::Timestamp;
    use proptest::prelude::*;

    fn event(actor: i64, repo: i64, received: i64, occurred: i64, tag: u8) -> PushEventWrite {
        let at =
            |s: i64| Timestamp::from_second(1_800_000_000 + s).unwrap_or(Timestamp::UNIX_EPOCH);
        PushEventWrite {
            github_event_id: format!("{actor}-{repo}-{tag}"),
            github_push_id: None,
            actor: ActorRef {
                github_id: actor,
                login: format!("login{tag}"),
                display_login: None,
                url: None,
                avatar_url: None,
            },
            repository: RepositoryRef {
                github_id: repo,
                full_name: format!("o/r{tag}"),
                url: None,
            },
            git_ref: "refs/heads/main".into(),
            head_sha: String::new(),
            before_sha: None,
            commit_count: None,
            distinct_commit_count: None,
            occurred_at: at(occurred),
            received_at: at(received),
            ingestion_run_id: None,
            origin: EventOrigin::Gharchive,
            raw: serde_json::Value::Null,
        }
    }

    proptest! {
        /// The plan equals applying the events one at a time: identity from the last event
        /// naming an entity, activity folded over the new ones only.
        #[test]
        fn the_plan_is_the_one_by_one_fold(
            specs in proptest::collection::vec((0i64..4, 0i64..4, 0i64..50, 0i64..50, any::<u8>(), any::<bool>()), 1..40)
        ) {
            let events: Vec<PushEventWrite> = specs
                .iter()
                .map(|&(a, r, rec, occ, tag, _)| event(a, r, rec, occ, tag))
                .collect();
            let refs: Vec<&PushEventWrite> = events.iter().collect();
            let new: Vec<bool> = specs.iter().map(|s| s.5).collect();
            let (actors, repositories) = plan_entities(&refs, &new);
            for (plan, key) in [
                (&actors, (|e: &PushEventWrite| e.actor.github_id) as fn(&PushEventWrite) -> i64),
                (&repositories, |e: &PushEventWrite| e.repository.github_id),
            ] {
                let mut expected: BTreeMap<i64, (usize, Option<Activity>)> = BTreeMap::new();
                for (i, (e, &is_new)) in events.iter().zip(&new).enumerate() {
                    let slot = expected.entry(key(e)).or_insert((i, None));
                    slot.0 = i;
                    if is_new {
                        let (s, o) = (ms(e.received_at), ms(e.occurred_at));
                        slot.1 = Some(slot.1.map_or((s, s, o), |(f, l, x)| (f.min(s), l.max(s), x.max(o))));
                    }
                }
                prop_assert_eq!(plan.len(), expected.len());
                for (id, (last, activity)) in expected {
                    let got = &plan[&id];
                    prop_assert!(std::ptr::eq(got.last, &events[last]));
                    prop_assert_eq!(got.activity, activity);
                }
            }
        }
    }
}
