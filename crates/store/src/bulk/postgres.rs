//! The bulk writer of a PostgreSQL store: one connection of its own, one transaction open
//! across batches and committed every [`BulkOptions::commit_every`] envelopes (and when the
//! window names [`MAX_WINDOW_ENTITIES`] entities), each batch's pushes sent by `COPY` into a
//! temporary staging table and written from there by set-based statements, with the page
//! path's results ([`crate::push::group`]) row for row.
//!
//! Per batch, under a savepoint:
//! - the pushes are copied into `headroom_push_stage` (COPY text, [`copy_text`]);
//! - every actor and repository the batch names that the window has not written yet gets a
//!   placeholder row (`ON CONFLICT DO NOTHING`: identity and creation instants as writing the
//!   batch as one page would give them, no activity) — push_events' foreign keys need the
//!   rows before the events, and are not deferrable;
//! - the batch's first occurrence of each event id is inserted from the stage, `ON CONFLICT
//!   DO NOTHING RETURNING` saying which were new.
//!
//! The window's [`EntityFold`] then takes the batch's events with what was new, and at the
//! commit each entity of the window is written once, with the page path's own upsert
//! ([`crate::push::group::ACTOR_UPDATE`]): identity from the last event naming it, activity
//! from its new events only. Writing the entities per window rather than per batch is most
//! of the gain: on the page path a batch of 10,000 rewrites about as many actor and
//! repository rows, each a new tuple in every index of its table.
//!
//! A batch whose set-based write fails (a foreign key, a NUL byte, JSON PostgreSQL refuses)
//! is rolled back to its savepoint and written one event at a time, each under its own, as the
//! page path does, so only the bad events fail. Any other error rolls the whole open
//! transaction back and says how many envelopes were lost ([`StoreError::RolledBack`]);
//! what was committed is kept, and importing again skips it. Durability is PostgreSQL's own
//! at each commit (`synchronous_commit` as the server has it).

use std::collections::{BTreeMap, HashSet};

use async_trait::async_trait;
use sqlx::PgConnection;

use super::{BulkItem, BulkOptions, BulkOutcome, BulkPush, BulkWriter};
use crate::PgStore;
use crate::db::Conn;
use crate::error::{Result, StoreError};
use crate::model::{PushEventWrite, ms};
use crate::push::fold::{EntityFold, Identity, Pending};
use crate::push::group::{
    ACTOR_COLUMNS, ACTOR_UPDATE, PUSH_COLUMNS, REPOSITORY_COLUMNS, REPOSITORY_UPDATE,
    insert_events, write_entities,
};
use crate::push::quarantine_on;

mod copy_text;
mod deferral;

use copy_text::CopyText;
use deferral::IndexDeferral;
pub(crate) use deferral::build_missing;

/// Actors and repositories a window may hold before it commits early, whatever
/// [`BulkOptions::commit_every`] says: the window's memory stays bounded on a file naming a new
/// entity in every envelope.
const MAX_WINDOW_ENTITIES: usize = 200_000;

/// The staging table: the batch's ordinal, then push_events' columns ([`PUSH_COLUMNS`]) with
/// the envelope as text (cast to JSONB by the insert, so JSON PostgreSQL refuses fails in the
/// set-based statement, where the fallback catches it, not in the COPY). Temporary: never
/// WAL-logged, private to the writer's session.
const STAGE_DDL: &str = "CREATE TEMP TABLE IF NOT EXISTS headroom_push_stage ( \
    n BIGINT NOT NULL, github_event_id TEXT, github_push_id BIGINT, github_actor_id BIGINT, \
    github_repository_id BIGINT, actor_login TEXT, repository_name TEXT, ref TEXT, \
    head_sha TEXT, before_sha TEXT, commit_count BIGINT, distinct_commit_count BIGINT, \
    occurred_at_ms BIGINT, ingestion_run_id BIGINT, source TEXT, created_at_ms BIGINT, \
    raw_json TEXT)";

/// Memory for the writer's session, set once: a batch's stage (about 7 MiB at 10,000
/// envelopes) held in temporary buffers rather than written out and read back, and the insert's
/// sort by batch order done in memory rather than in temporary files (both measured with
/// `EXPLAIN (ANALYZE, BUFFERS)` at the defaults of 8 MiB and 4 MiB). Neither touches
/// durability: they are the session's private working memory.
const SESSION_MEMORY_SQL: &str = "SET temp_buffers = '64MB'; SET work_mem = '64MB'";

/// The writer session's `idle_in_transaction_session_timeout` (see [`PgStore::open_bulk`]).
const IDLE_TIMEOUT_SQL: &str = "SET idle_in_transaction_session_timeout = '10min'";

impl PgStore {
    /// The bulk writer for this store: a connection of its own, taken out of the pool (a
    /// transaction stays open on it across batches, and dropping the writer closes it, which
    /// rolls back whatever was not committed).
    pub(crate) async fn open_bulk(&self, options: BulkOptions) -> Result<Box<dyn BulkWriter + '_>> {
        let mut conn = self.pool().acquire().await?.detach();
        // Before the session's first temporary table (PostgreSQL fixes temp_buffers then).
        sqlx::raw_sql(SESSION_MEMORY_SQL).execute(&mut conn).await?;
        sqlx::query(STAGE_DDL).execute(&mut conn).await?;
        // A window's transaction idles while the parser fills the next batch; the store's
        // leak guard (30 s) would end the session on a stalled input. This connection never
        // goes back to the pool, so the guard's reason does not apply to it.
        sqlx::query(IDLE_TIMEOUT_SQL).execute(&mut conn).await?;
        let deferral = IndexDeferral::open(&mut conn).await?;
        Ok(Box::new(PgBulk {
            conn,
            deferral,
            window: EntityFold::default(),
            open: false,
            pending: 0,
            commit_every: options.commit_every.max(1),
        }))
    }
}

/// The PostgreSQL writer.
struct PgBulk {
    conn: PgConnection,
    /// Whether push_events' random-key indexes wait for the end.
    deferral: IndexDeferral,
    /// The entity rows the open transaction owes.
    window: EntityFold,
    /// Whether a transaction is open.
    open: bool,
    /// Envelopes written since the last commit.
    pending: usize,
    /// Envelopes between commits.
    commit_every: usize,
}

#[async_trait]
impl BulkWriter for PgBulk {
    async fn write(&mut self, items: Vec<BulkItem>) -> Result<Vec<BulkOutcome>> {
        let lost = self.pending + items.len();
        match self.write_batch(&items).await {
            Ok(outcomes) => {
                self.pending += items.len();
                let due =
                    self.pending >= self.commit_every || self.window.len() >= MAX_WINDOW_ENTITIES;
                if due && let Err(e) = self.commit().await {
                    return Err(self.roll_back(e, lost).await);
                }
                Ok(outcomes)
            }
            Err(e) => Err(self.roll_back(e, lost).await),
        }
    }

    async fn finish(&mut self) -> Result<()> {
        let lost = self.pending;
        if self.open
            && let Err(e) = self.commit().await
        {
            return Err(self.roll_back(e, lost).await);
        }
        self.deferral.finish(&mut self.conn).await
    }
}

impl PgBulk {
    async fn execute(&mut self, sql: &'static str) -> Result<()> {
        sqlx::query(sql).execute(&mut self.conn).await?;
        Ok(())
    }

    /// One batch in the open transaction: an error is the transaction's own (the caller rolls
    /// it back); an event's own failure is its outcome.
    async fn write_batch(&mut self, items: &[BulkItem]) -> Result<Vec<BulkOutcome>> {
        if !self.open {
            self.deferral.drop_when_due(&mut self.conn).await?;
            self.execute("BEGIN").await?;
            self.open = true;
        }
        let mut outcomes: Vec<Option<BulkOutcome>> = vec![None; items.len()];
        let mut pushes: Vec<&BulkPush> = Vec::with_capacity(items.len());
        let mut slots = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item {
                BulkItem::Quarantine(e) => {
                    let row = quarantine_on(&mut Conn::Pg(&mut self.conn), e).await?;
                    outcomes[i] = Some(BulkOutcome::Quarantined {
                        occurrence_count: row.occurrence_count,
                    });
                }
                BulkItem::Push(push) => {
                    pushes.push(push);
                    slots.push(i);
                }
            }
        }
        if !pushes.is_empty() {
            self.window.batch += 1;
            self.execute("SAVEPOINT headroom_batch").await?;
            let written = match self.set_based(&pushes).await {
                Ok(new) => {
                    self.execute("RELEASE SAVEPOINT headroom_batch").await?;
                    for (push, &is_new) in pushes.iter().zip(&new) {
                        self.window.absorb(&push.event, is_new);
                    }
                    new.into_iter().map(Ok).collect()
                }
                Err(_) => {
                    self.execute("ROLLBACK TO SAVEPOINT headroom_batch").await?;
                    self.execute("RELEASE SAVEPOINT headroom_batch").await?;
                    self.one_by_one(&pushes).await?
                }
            };
            let created = written.iter().filter(|r| matches!(r, Ok(true))).count();
            self.deferral.created(created as u64);
            for (slot, result) in slots.into_iter().zip(written) {
                outcomes[slot] = Some(super::outcome_of(result));
            }
        }
        Ok(outcomes
            .into_iter()
            .map(|o| o.unwrap_or(BulkOutcome::Duplicate))
            .collect())
    }

    /// The batch's pushes by COPY and set-based statements; for each, whether it was new.
    /// Fails as a whole (the caller rolls back to the batch's savepoint).
    async fn set_based(&mut self, pushes: &[&BulkPush]) -> Result<Vec<bool>> {
        self.execute("TRUNCATE headroom_push_stage").await?;
        // Only each id's first occurrence in the batch is staged: a later one is a duplicate
        // whatever the table holds (and deduplicating here spares the server a sort).
        let mut seen: HashSet<&str> = HashSet::with_capacity(pushes.len());
        let first: Vec<bool> = pushes
            .iter()
            .map(|p| seen.insert(p.event.github_event_id.as_str()))
            .collect();
        let rows = stage_rows(pushes, &first);
        copy_in(&mut self.conn, rows.bytes()).await?;
        let events: Vec<&PushEventWrite> = pushes.iter().map(|p| &p.event).collect();
        self.placeholders(&events).await?;
        let inserted: HashSet<String> = sqlx::query_scalar::<_, String>(INSERT_FROM_STAGE)
            .fetch_all(&mut self.conn)
            .await?
            .into_iter()
            .collect();
        Ok(events
            .iter()
            .zip(first)
            .map(|(e, first)| first && inserted.contains(e.github_event_id.as_str()))
            .collect())
    }

    /// The page path's fallback: each event under its own savepoint, as a group of one (its
    /// own fold batch, so a row it creates has its instants), only the bad ones failing.
    async fn one_by_one(&mut self, pushes: &[&BulkPush]) -> Result<Vec<Result<bool>>> {
        let mut results = Vec::with_capacity(pushes.len());
        for push in pushes {
            self.window.batch += 1;
            self.execute("SAVEPOINT headroom_event").await?;
            let written = async {
                self.placeholders(&[&push.event]).await?;
                let mut conn = Conn::Pg(&mut self.conn);
                insert_events(&mut conn, &[&push.event], &[push.raw_json.as_str()]).await
            }
            .await;
            match written {
                Ok(inserted) => {
                    self.execute("RELEASE SAVEPOINT headroom_event").await?;
                    self.window.absorb(&push.event, inserted == 1);
                    results.push(Ok(inserted == 1));
                }
                Err(e) => {
                    self.execute("ROLLBACK TO SAVEPOINT headroom_event").await?;
                    self.execute("RELEASE SAVEPOINT headroom_event").await?;
                    results.push(Err(e));
                }
            }
        }
        Ok(results)
    }

    /// A row for every entity `events` name that the window has not written yet, as writing
    /// `events` as one page would create it (identity, creation instants; no activity, which
    /// the commit writes). A row already stored is left alone.
    async fn placeholders(&mut self, events: &[&PushEventWrite]) -> Result<()> {
        let fold = EntityFold::of_group(events, &vec![false; events.len()]);
        let actors = unwritten(fold.actors, &self.window.actors);
        let repositories = unwritten(fold.repositories, &self.window.repositories);
        let mut conn = Conn::Pg(&mut self.conn);
        let nothing = "ON CONFLICT (github_id) DO NOTHING";
        write_entities(&mut conn, "actors", ACTOR_COLUMNS, nothing, &actors).await?;
        write_entities(
            &mut conn,
            "repositories",
            REPOSITORY_COLUMNS,
            nothing,
            &repositories,
        )
        .await
    }

    /// Writes the window's entities and commits.
    async fn commit(&mut self) -> Result<()> {
        let window = std::mem::take(&mut self.window);
        let mut conn = Conn::Pg(&mut self.conn);
        write_entities(
            &mut conn,
            "actors",
            ACTOR_COLUMNS,
            ACTOR_UPDATE,
            &window.actors,
        )
        .await?;
        write_entities(
            &mut conn,
            "repositories",
            REPOSITORY_COLUMNS,
            REPOSITORY_UPDATE,
            &window.repositories,
        )
        .await?;
        self.execute("COMMIT").await?;
        self.open = false;
        self.pending = 0;
        // The fold's batch counter goes on: creation instants compare batches by number.
        self.window.batch = window.batch;
        Ok(())
    }

    /// After an error that is not one event's own: nothing since the last commit is kept.
    async fn roll_back(&mut self, error: StoreError, lost: usize) -> StoreError {
        self.window = EntityFold {
            batch: self.window.batch,
            ..EntityFold::default()
        };
        self.pending = 0;
        if self.open {
            self.open = false;
            if let Err(e) = self.execute("ROLLBACK").await {
                return StoreError::Database(format!(
                    "{error}; rolling the open transaction back failed too: {e}"
                ));
            }
        }
        StoreError::RolledBack {
            cause: Box::new(error),
            lost,
        }
    }
}

/// The rows of `fold` the window does not hold.
fn unwritten<I: Identity>(
    fold: BTreeMap<i64, Pending<I>>,
    window: &BTreeMap<i64, Pending<I>>,
) -> BTreeMap<i64, Pending<I>> {
    fold.into_iter()
        .filter(|(id, _)| !window.contains_key(id))
        .collect()
}

/// The staged events (each id's first occurrence in the batch), in batch order (ids are
/// assigned in the page path's order), and which were inserted. Ids already stored are filtered out before the
/// envelope's JSONB cast, which is most of a duplicate's cost; `ON CONFLICT` still takes an id
/// another writer stores meanwhile as a duplicate.
const INSERT_FROM_STAGE: &str = "INSERT INTO push_events (github_event_id, github_push_id, \
    github_actor_id, github_repository_id, actor_login, repository_name, ref, head_sha, \
    before_sha, commit_count, distinct_commit_count, occurred_at_ms, ingestion_run_id, source, \
    created_at_ms, raw_json) \
    SELECT github_event_id, github_push_id, github_actor_id, github_repository_id, \
        actor_login, repository_name, ref, head_sha, before_sha, commit_count, \
        distinct_commit_count, occurred_at_ms, ingestion_run_id, source, created_at_ms, \
        CAST(raw_json AS JSONB) \
    FROM headroom_push_stage AS s \
    WHERE NOT EXISTS (SELECT 1 FROM push_events AS p \
        WHERE p.github_event_id = s.github_event_id) \
    ORDER BY n \
    ON CONFLICT (github_event_id) DO NOTHING \
    RETURNING github_event_id";

/// The batch's pushes marked in `staged` as COPY text rows of `headroom_push_stage`.
fn stage_rows(pushes: &[&BulkPush], staged: &[bool]) -> CopyText {
    let bytes: usize = pushes.iter().map(|p| p.raw_json.len() + 256).sum();
    let mut rows = CopyText::with_capacity(bytes);
    for (n, push) in pushes.iter().enumerate() {
        if !staged.get(n).copied().unwrap_or(true) {
            continue;
        }
        let e = &push.event;
        rows.int(i64::try_from(n).ok());
        rows.text(Some(&e.github_event_id));
        rows.int(e.github_push_id);
        rows.int(Some(e.actor.github_id));
        rows.int(Some(e.repository.github_id));
        rows.text(Some(&e.actor.login));
        rows.text(Some(&e.repository.full_name));
        rows.text(Some(&e.git_ref));
        rows.text(Some(&e.head_sha));
        rows.text(e.before_sha.as_deref());
        rows.int(e.commit_count);
        rows.int(e.distinct_commit_count);
        rows.int(Some(ms(e.occurred_at)));
        rows.int(e.ingestion_run_id);
        rows.text(Some(e.origin.as_str()));
        rows.int(Some(ms(e.received_at)));
        rows.text(Some(&push.raw_json));
        rows.end_row();
    }
    rows
}

/// Sends `rows` into the stage by `COPY … FROM STDIN`. A failed send aborts the COPY, so
/// the connection stays usable (the caller rolls back to its savepoint).
async fn copy_in(conn: &mut PgConnection, rows: &[u8]) -> Result<u64> {
    let sql = format!("COPY headroom_push_stage (n, {PUSH_COLUMNS}) FROM STDIN");
    let mut copy = conn.copy_in_raw(&sql).await?;
    if let Err(e) = copy.send(rows).await {
        // The send's own error is the one to report; an abort that fails too leaves the
        // connection broken, which the next statement reports.
        let _ = copy.abort("headroom: sending the batch failed").await;
        return Err(e.into());
    }
    Ok(copy.finish().await?)
}
