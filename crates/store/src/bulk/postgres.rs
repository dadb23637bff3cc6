//! The bulk writer of a PostgreSQL store: two connections of its own ([`Lane`]s), a window of
//! batches committed every [`BulkOptions::commit_every`] envelopes (and when the window names
//! [`MAX_WINDOW_ENTITIES`] entities), the window's new events sent by `COPY` into the lanes'
//! temporary staging tables and written from there by set-based statements at the commit,
//! with the page path's results ([`crate::push::group`]) row for row.
//!
//! Per batch:
//! - which events are new: not stored (one probe of push_events' unique index for the
//!   batch), not staged earlier in the window, not earlier in the batch;
//! - the new ones get their push_events ids from the table's sequence, in the batch's order
//!   (the ids the page path would give them, whichever lane writes them);
//! - they are copied into the stage of the lane holding fewer rows (COPY text,
//!   [`copy_text`]), whose `raw_json` is JSONB, so an envelope PostgreSQL refuses fails here,
//!   in its batch;
//! - the window's [`EntityFold`] takes the batch's events with what was new.
//!
//! At the commit, in two steps, each split over the two lanes so that two server backends
//! work at once (one backend's CPU is what bounds an import; the client is mostly idle):
//! 1. the window's actors (main lane) and repositories (second lane) are written once each,
//!    with the page path's own upserts ([`crate::push::group::ACTOR_UPDATE`]): identity from
//!    the last event naming it, activity from its new events only; each lane commits as soon
//!    as its own upsert is done;
//! 2. each lane inserts its staged events into push_events in one statement and commits.
//!
//! The entities come first because push_events' foreign keys need them. A stop between the
//! two steps (or between the two lanes' inserts) leaves entity rows whose activity counts
//! events not yet stored: importing again finds those events new and applies the same
//! activity again, which changes nothing (first seen keeps the earliest, last seen and latest
//! event the latest, identity the last event's). The reverse — an event stored whose
//! entity's activity is not — cannot happen, so a killed import loses nothing and counts
//! nothing twice. Writing each entity once per window rather than once per batch, as the page
//! path does, is most of the gain over it: a batch of 10,000 names about as many actors and
//! repositories, and rewriting a row puts a new tuple in every index of its table.
//!
//! A batch whose COPY fails (a NUL byte, JSON PostgreSQL refuses), or with an event naming an
//! ingestion run the store does not hold, is written one event at a time on the main lane
//! instead, each under a savepoint of its own, as the page path falls back to, so only the bad
//! events fail; a window holding events written that way writes both entity tables on the
//! main lane, in the transaction that holds those events. Any other error rolls back what is
//! open and says how many envelopes may be lost ([`StoreError::RolledBack`]); what was
//! committed is kept, and importing again skips it. Durability is PostgreSQL's own at each
//! commit (`synchronous_commit` as the server has it).
//!
//! Quarantined envelopes are written on the main lane in the window's transaction, committed
//! with its actors.

use std::collections::{BTreeMap, HashSet};

use async_trait::async_trait;
use sqlx::PgConnection;

use super::{BulkItem, BulkOptions, BulkOutcome, BulkPush, BulkWriter};
use crate::db::Conn;
use crate::error::{Result, StoreError};
use crate::model::{PushEventWrite, ms};
use crate::push::fold::{ActorIdentity, EntityFold, Pending, RepositoryIdentity};
use crate::push::group::{
    ACTOR_COLUMNS, ACTOR_UPDATE, PUSH_COLUMNS, REPOSITORY_COLUMNS, REPOSITORY_UPDATE,
    STORED_EVENT_IDS, insert_events, write_entities,
};
use crate::push::quarantine_on;
use crate::{PgStore, QuarantinedEvent};

mod copy_binary;
mod deferral;

use copy_binary::CopyBinary;
use deferral::IndexDeferral;
pub(crate) use deferral::build_missing;

/// Actors and repositories a window may hold before it commits early, whatever
/// [`BulkOptions::commit_every`] says: the window's memory stays bounded on a file naming a new
/// entity in every envelope.
const MAX_WINDOW_ENTITIES: usize = 200_000;

/// A lane's staging table: the event's push_events id, then push_events' columns
/// ([`PUSH_COLUMNS`]). Temporary: never WAL-logged, private to the lane's session.
const STAGE_DDL: &str = "CREATE TEMP TABLE IF NOT EXISTS headroom_push_window ( \
    id BIGINT NOT NULL, github_event_id TEXT, github_push_id BIGINT, github_actor_id BIGINT, \
    github_repository_id BIGINT, actor_login TEXT, repository_name TEXT, ref TEXT, \
    head_sha TEXT, before_sha TEXT, commit_count BIGINT, distinct_commit_count BIGINT, \
    occurred_at_ms BIGINT, ingestion_run_id BIGINT, source TEXT, created_at_ms BIGINT, \
    raw_json JSONB)";

/// Each lane's session settings, set once.
///
/// Memory: its stage held in temporary buffers rather than written out and read back. A
/// window of 250,000 envelopes stages about 1.1 KiB each, half on each lane, about 135 MiB; at
/// 64 MB each lane's insert read back and wrote out 11,800 blocks of its stage and took twice
/// as long (pg_stat_statements' `local_blks_*`, 2026-12-04). The buffers are taken as the
/// stage fills, so a small import uses little of them. The `work_mem` is for the entity
/// upserts' sorts. Neither touches durability: they are the session's private working memory.
///
/// No parallel workers for index builds: the writer builds up to four indexes at once on its
/// own connections, which keeps as many cores busy; a build's workers added their
/// coordination to CPUs already taken (after 200,000 envelopes on two cores the finish took
/// 1.64-1.71 s without them, 1.80-2.07 s with).
const SESSION_SQL: &str = "SET temp_buffers = '192MB'; SET work_mem = '64MB'; \
    SET max_parallel_maintenance_workers = 0";

/// push_events' statistics are refreshed (`ANALYZE`) once the writer has added this many rows
/// and as many as the table held at the last refresh. A statement run more than five times
/// gets a generic plan, kept until the table's statistics change, and an import grows
/// push_events far faster than autovacuum's analyses follow: the probe of a batch's ids,
/// planned while the table was empty, stayed a scan of the whole table testing every row
/// against each of the 10,000 ids (one probe took 39 s at 252,000 rows, and a
/// 1,000,000-envelope import ran at half the rate of a 200,000-envelope one). A refresh
/// invalidates such plans in every session; doubling keeps them to a few per import.
const ANALYZE_AFTER: u64 = 50_000;

/// The refresh: the table's size and the statistics of the column the probe reads, and no
/// other (all columns took 0.56 s on 174,000 events, mostly `raw_json`; this one 0.18 s).
const ANALYZE_PROBED: &str = "ANALYZE push_events (github_event_id)";

/// The writer session's `idle_in_transaction_session_timeout`: a window's transaction idles
/// while the parser fills the next batch, and the store's leak guard (30 s) would end the
/// session on a stalled input. This connection never goes back to the pool, so the guard's
/// reason does not apply to it.
const IDLE_TIMEOUT_SQL: &str = "SET idle_in_transaction_session_timeout = '10min'";

impl PgStore {
    /// The bulk writer for this store: two connections of its own, taken out of the pool (a
    /// transaction stays open on them across batches, and dropping the writer closes them,
    /// which rolls back whatever was not committed).
    pub(crate) async fn open_bulk(&self, options: BulkOptions) -> Result<Box<dyn BulkWriter + '_>> {
        let mut main = Lane::open(self.pool()).await?;
        let second = Lane::open(self.pool()).await?;
        let entities = EntityWriters {
            actors: writer_session(self.pool()).await?,
            repositories: writer_session(self.pool()).await?,
            quarantine_open: false,
        };
        let sequence: String =
            sqlx::query_scalar("SELECT pg_get_serial_sequence('push_events', 'id')")
                .fetch_one(&mut main.conn)
                .await?;
        let deferral = IndexDeferral::open(&mut main.conn).await?;
        // -1 (never analyzed) or a float estimate.
        let analyzed: f32 = sqlx::query_scalar(
            "SELECT reltuples FROM pg_class WHERE oid = 'push_events'::regclass",
        )
        .fetch_one(&mut main.conn)
        .await?;
        Ok(Box::new(PgBulk {
            rows_at_analyze: analyzed.max(0.0) as u64,
            created_since_analyze: 0,
            lanes: [main, second],
            entities: Some(entities),
            sequence,
            deferral,
            window: EntityFold::default(),
            staged: HashSet::new(),
            written_at_once: false,
            known_runs: HashSet::new(),
            unabsorbed: None,
            pending: 0,
            commit_every: options.commit_every.max(1),
        }))
    }
}

/// The connections writing the window's actors and repositories at its commit; the first
/// also writes the window's quarantined envelopes, in a transaction committed with its
/// actors, while the lanes write the batch's events.
struct EntityWriters {
    actors: PgConnection,
    repositories: PgConnection,
    /// Whether a transaction holding quarantined envelopes is open on `actors`.
    quarantine_open: bool,
}

impl EntityWriters {
    /// Quarantines `envelopes` in the window's transaction, one at a time (a fingerprint
    /// may come twice). Returns each one's occurrence count.
    async fn quarantine(&mut self, envelopes: &[&QuarantinedEvent]) -> Result<Vec<u64>> {
        let mut counts = Vec::with_capacity(envelopes.len());
        for e in envelopes {
            if !self.quarantine_open {
                sqlx::query("BEGIN").execute(&mut self.actors).await?;
                self.quarantine_open = true;
            }
            let row = quarantine_on(&mut Conn::Pg(&mut self.actors), e).await?;
            counts.push(row.occurrence_count);
        }
        Ok(counts)
    }

    /// Commits the quarantined envelopes' transaction, if one is open.
    async fn commit_quarantine(&mut self) -> Result<()> {
        if self.quarantine_open {
            sqlx::query("COMMIT").execute(&mut self.actors).await?;
            self.quarantine_open = false;
        }
        Ok(())
    }

    /// After an error: the quarantined envelopes' transaction rolled back.
    async fn abandon(&mut self) -> Option<StoreError> {
        if !std::mem::take(&mut self.quarantine_open) {
            return None;
        }
        sqlx::query("ROLLBACK")
            .execute(&mut self.actors)
            .await
            .err()
            .map(StoreError::from)
    }
}

/// One of the writer's connections, with its staging table.
struct Lane {
    conn: PgConnection,
    /// Rows in this lane's stage.
    rows: u64,
    /// Rows this lane's open transaction copied straight into push_events.
    direct: u64,
    /// The COPY data being sent, kept from one batch to the next.
    buf: Vec<u8>,
    /// Whether a transaction is open on it.
    open: bool,
}

/// A connection of the writer's own, out of the pool, with its session settings.
async fn writer_session(pool: &sqlx::PgPool) -> Result<PgConnection> {
    let mut conn = pool.acquire().await?.detach();
    // Before the session's first temporary table (PostgreSQL fixes temp_buffers then).
    sqlx::raw_sql(SESSION_SQL).execute(&mut conn).await?;
    sqlx::query(IDLE_TIMEOUT_SQL).execute(&mut conn).await?;
    Ok(conn)
}

impl Lane {
    async fn open(pool: &sqlx::PgPool) -> Result<Self> {
        let mut conn = writer_session(pool).await?;
        sqlx::query(STAGE_DDL).execute(&mut conn).await?;
        Ok(Self {
            conn,
            rows: 0,
            direct: 0,
            buf: Vec::new(),
            open: false,
        })
    }

    async fn execute(&mut self, sql: &'static str) -> Result<()> {
        sqlx::query(sql).execute(&mut self.conn).await?;
        Ok(())
    }

    async fn begin(&mut self) -> Result<()> {
        if !self.open {
            self.execute("BEGIN").await?;
            self.open = true;
        }
        Ok(())
    }

    async fn commit(&mut self) -> Result<()> {
        if self.open {
            self.execute("COMMIT").await?;
            self.open = false;
        }
        Ok(())
    }

    /// Opens `savepoint` and copies `pushes` into `target`; [`Lane::settle`] keeps or undoes
    /// it. The outer error is the transaction's own, the inner the COPY's.
    async fn copy_rows(
        &mut self,
        savepoint: Savepoint,
        target: Target,
        pushes: &[(&BulkPush, i64)],
    ) -> Result<std::result::Result<u64, StoreError>> {
        self.execute(savepoint.open).await?;
        let Some(len) = stage_rows(pushes, &mut self.buf) else {
            return Ok(Ok(0));
        };
        Ok(copy_in(&mut self.conn, target, &self.buf[..len]).await)
    }

    /// Releases `savepoint`, keeping `Some(rows)` copied into `target`, or rolls back to it.
    async fn settle(
        &mut self,
        savepoint: Savepoint,
        target: Target,
        kept: Option<u64>,
    ) -> Result<()> {
        match kept {
            Some(rows) => match target {
                Target::Stage => self.rows += rows,
                Target::PushEvents => self.direct += rows,
            },
            None => self.execute(savepoint.undo).await?,
        }
        self.execute(savepoint.release).await
    }

    /// Copies one event's row into the stage under a savepoint of its own: on failure the
    /// stage is as it was. The outer error is the transaction's own, the inner the COPY's.
    async fn stage_one(
        &mut self,
        push: &[(&BulkPush, i64)],
    ) -> Result<std::result::Result<u64, StoreError>> {
        let copied = self.copy_rows(EVENT_SAVEPOINT, Target::Stage, push).await?;
        self.settle(
            EVENT_SAVEPOINT,
            Target::Stage,
            copied.as_ref().ok().copied(),
        )
        .await?;
        Ok(copied)
    }

    /// Inserts the staged events into push_events and commits, with the rows copied there
    /// directly (step 2 of the commit); the stage is emptied. Returns the rows the lane
    /// added to push_events.
    async fn insert_staged(&mut self) -> Result<u64> {
        if self.rows > 0 {
            self.begin().await?;
            let inserted = sqlx::query(INSERT_FROM_STAGE)
                .execute(&mut self.conn)
                .await?
                .rows_affected();
            // An id another writer stored after this window found it missing: the outcomes
            // already returned called it new, so these rows are not kept (importing again
            // resumes with it as a duplicate).
            if inserted != self.rows {
                return Err(StoreError::Conflict(
                    "push events were stored by another writer during the import's window".into(),
                ));
            }
        }
        self.commit().await?;
        let added = self.rows + self.direct;
        self.direct = 0;
        if self.rows > 0 {
            self.empty_stage().await?;
        }
        Ok(added)
    }

    async fn empty_stage(&mut self) -> Result<()> {
        self.execute("TRUNCATE headroom_push_window").await?;
        self.rows = 0;
        Ok(())
    }

    /// After an error: the open transaction rolled back, the stage emptied. Returns the
    /// lane's own failure to do so.
    async fn abandon(&mut self) -> Option<StoreError> {
        let mut failed = None;
        if self.open {
            self.open = false;
            if let Err(e) = self.execute("ROLLBACK").await {
                failed = Some(e);
            }
        }
        // Rows committed with the entities (step 1) outlive the rollback.
        if failed.is_none()
            && let Err(e) = self.empty_stage().await
        {
            failed = Some(e);
        }
        self.rows = 0;
        self.direct = 0;
        failed
    }
}

/// The statements of one savepoint.
#[derive(Clone, Copy)]
struct Savepoint {
    open: &'static str,
    release: &'static str,
    undo: &'static str,
}

/// `$1` (event ids, each once) that push_events holds, and as many ids from `$2` (its
/// sequence) as there are others. The probe is materialized once, read twice.
const PROBE_AND_RESERVE: &str = "WITH stored AS MATERIALIZED ( \
        SELECT github_event_id FROM push_events WHERE github_event_id = ANY($1)) \
    SELECT ARRAY(SELECT github_event_id FROM stored), \
        ARRAY(SELECT nextval($2::regclass) FROM generate_series(1, \
            cardinality($1::text[]) - (SELECT count(*) FROM stored)))";

/// A batch's items, kept for the window to absorb later, with whether each push was new.
struct Unabsorbed {
    items: Vec<BulkItem>,
    new: Vec<bool>,
    /// The fold's batch number it had.
    batch: u64,
}

impl Unabsorbed {
    fn pushes(&self) -> impl Iterator<Item = (&BulkPush, bool)> {
        self.items
            .iter()
            .filter_map(|item| match item {
                BulkItem::Push(push) => Some(&**push),
                BulkItem::Quarantine(_) => None,
            })
            .zip(self.new.iter().copied())
    }

    fn absorb_into(self, window: &mut EntityFold) {
        let current = std::mem::replace(&mut window.batch, self.batch);
        for (push, new) in self.pushes() {
            window.absorb(&push.event, new);
        }
        window.batch = current;
    }
}

/// Absorbs `previous` into `window` a few hundred events at a time, yielding between them so
/// the COPYs it runs beside keep sending.
async fn absorb_interleaved(window: &mut EntityFold, previous: Option<Unabsorbed>) {
    const STRIDE: usize = 256;
    let Some(previous) = previous else {
        return;
    };
    let current = std::mem::replace(&mut window.batch, previous.batch);
    for (k, (push, new)) in previous.pushes().enumerate() {
        if k % STRIDE == 0 {
            tokio::task::yield_now().await;
        }
        window.absorb(&push.event, new);
    }
    window.batch = current;
    // The batch's items are freed here too, beside the COPYs.
    drop(previous);
}

/// Which commit [`PgBulk::commit`] makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Commit {
    /// A full window's, with more to come.
    Window,
    /// The finish's.
    Last,
}

/// Where a COPY writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// The lane's staging table, inserted into push_events at the commit.
    Stage,
    /// push_events itself, in the lane's open transaction: only while push_events' foreign
    /// keys to actors and repositories are dropped ([`IndexDeferral::foreign_keys_absent`]),
    /// as the window's entities are written on other connections and committed first.
    PushEvents,
}

/// Around a batch's COPY.
const BATCH_SAVEPOINT: Savepoint = Savepoint {
    open: "SAVEPOINT headroom_batch",
    release: "RELEASE SAVEPOINT headroom_batch",
    undo: "ROLLBACK TO SAVEPOINT headroom_batch",
};

/// Around one event of the fallback.
const EVENT_SAVEPOINT: Savepoint = Savepoint {
    open: "SAVEPOINT headroom_event",
    release: "RELEASE SAVEPOINT headroom_event",
    undo: "ROLLBACK TO SAVEPOINT headroom_event",
};

/// The PostgreSQL writer.
struct PgBulk {
    /// The main lane (quarantine, probes, the fallback, actors, push_events' index deferral)
    /// and the second (repositories).
    lanes: [Lane; 2],
    /// Where the window's actors (first) and repositories (second) are written at its
    /// commit, each one statement committed on its own, before the lanes commit their
    /// events (unless [`PgBulk::written_at_once`]).
    /// `None` only while a batch runs (see [`PgBulk::write_batch`]).
    entities: Option<EntityWriters>,
    /// push_events' id sequence.
    sequence: String,
    /// Whether push_events' random-key indexes wait for the end.
    deferral: IndexDeferral,
    /// The entity rows the open window owes.
    window: EntityFold,
    /// The event ids the window has taken as new, in a stage (or, for the few written one
    /// at a time, already in push_events).
    staged: HashSet<String>,
    /// Whether the window wrote an event straight into push_events (the fallback for an
    /// unknown ingestion run): its entity rows are then written in the main lane's
    /// transaction, which holds that event.
    written_at_once: bool,
    /// Ingestion runs found to exist (events name at most a few).
    known_runs: HashSet<i64>,
    /// push_events' rows at its last statistics refresh, as far as this writer knows.
    rows_at_analyze: u64,
    /// Rows this writer added since (see [`ANALYZE_AFTER`]).
    created_since_analyze: u64,
    /// The last batch staged as a set, which the window has not absorbed yet: the next
    /// batch absorbs it while the server reads that batch's COPY (the client would otherwise
    /// fold it in while both server backends wait: 0.3 s of a 200,000-envelope import), and
    /// the commit before it writes the window's entities.
    unabsorbed: Option<Unabsorbed>,
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
            Ok((outcomes, unabsorbed)) => {
                self.pending += items.len();
                if let Some(new) = unabsorbed {
                    self.absorb_previous();
                    self.unabsorbed = Some(Unabsorbed {
                        items,
                        new,
                        batch: self.window.batch,
                    });
                }
                let due =
                    self.pending >= self.commit_every || self.window.len() >= MAX_WINDOW_ENTITIES;
                if due && let Err(e) = self.commit(Commit::Window).await {
                    return Err(self.roll_back(e, lost).await);
                }
                Ok(outcomes)
            }
            Err(e) => Err(self.roll_back(e, lost).await),
        }
    }

    async fn finish(&mut self) -> Result<()> {
        let lost = self.pending;
        if self.lanes.iter().any(|lane| lane.open)
            && let Err(e) = self.commit(Commit::Last).await
        {
            return Err(self.roll_back(e, lost).await);
        }
        let [main, second] = &mut self.lanes;
        self.deferral.finish(&mut main.conn, &mut second.conn).await
    }
}

/// Where an event of a batch stands before it is written.
struct Judged<'a> {
    push: &'a BulkPush,
    /// Not stored, not staged earlier in the window (nor, for the set path, in the batch).
    new: bool,
}

impl PgBulk {
    fn main(&mut self) -> &mut Lane {
        &mut self.lanes[0]
    }

    /// One batch in the open window: an error is the window's own (the caller rolls it
    /// back); an event's own failure is its outcome.
    /// Also returns, when the batch's events were staged as a set, whether each was new: the
    /// caller keeps the batch for the window to absorb later ([`PgBulk::unabsorbed`]).
    async fn write_batch(
        &mut self,
        items: &[BulkItem],
    ) -> Result<(Vec<BulkOutcome>, Option<Vec<bool>>)> {
        if !self.lanes[0].open {
            self.deferral.drop_when_due(&mut self.lanes[0].conn).await?;
            for lane in &mut self.lanes {
                lane.begin().await?;
            }
        }
        let mut quarantined: Vec<&QuarantinedEvent> = Vec::new();
        let mut pushes: Vec<&BulkPush> = Vec::with_capacity(items.len());
        for item in items {
            match item {
                BulkItem::Quarantine(e) => quarantined.push(e),
                BulkItem::Push(push) => pushes.push(push),
            }
        }
        // The quarantined envelopes on the actors' connection while the lanes write the
        // events: one round trip each, which in turn with the events cost a 200,000-envelope
        // import (1 % malformed) 0.35 s.
        let mut entities = self.entities.take().ok_or_else(|| {
            StoreError::Database("the import's writer was interrupted in a batch".into())
        })?;
        let (counts, written) = tokio::join!(
            entities.quarantine(&quarantined),
            self.write_pushes(&pushes)
        );
        self.entities = Some(entities);
        let (written, absorbed) = written?;
        let unabsorbed =
            (!absorbed).then(|| written.iter().map(|r| matches!(r, Ok(true))).collect());
        let (mut counts, mut written) = (counts?.into_iter(), written.into_iter());
        let outcomes = items
            .iter()
            .map(|item| match item {
                BulkItem::Quarantine(_) => counts
                    .next()
                    .map_or(BulkOutcome::Duplicate, |occurrence_count| {
                        BulkOutcome::Quarantined { occurrence_count }
                    }),
                BulkItem::Push(_) => written
                    .next()
                    .map_or(BulkOutcome::Duplicate, super::outcome_of),
            })
            .collect();
        Ok((outcomes, unabsorbed))
    }

    /// The batch's pushes: staged as a set when it can be, else one at a time.
    /// The batch's pushes: staged as a set when it can be, else one at a time. `false` with
    /// the results: the window has not absorbed the events yet (the set path leaves that to
    /// the next batch's COPY, see [`PgBulk::unabsorbed`]).
    async fn write_pushes(&mut self, pushes: &[&BulkPush]) -> Result<(Vec<Result<bool>>, bool)> {
        if pushes.is_empty() {
            return Ok((Vec::new(), true));
        }
        let runs_known = self.runs_known(pushes).await?;
        // The batch's ids not staged earlier in the window, each once.
        let mut asked: HashSet<&str> = HashSet::with_capacity(pushes.len());
        let candidates: Vec<&str> = pushes
            .iter()
            .map(|p| p.event.github_event_id.as_str())
            .filter(|id| !self.staged.contains(*id) && asked.insert(id))
            .collect();
        let (stored, mut ids) = if runs_known {
            self.probe_and_reserve(&candidates).await?
        } else {
            (self.stored(&candidates).await?, Vec::new())
        };
        let mut in_batch: HashSet<&str> = HashSet::with_capacity(pushes.len());
        let judged: Vec<Judged> = pushes
            .iter()
            .map(|push| {
                let id = push.event.github_event_id.as_str();
                let new = !stored.contains(id) && !self.staged.contains(id) && in_batch.insert(id);
                Judged { push, new }
            })
            .collect();
        if runs_known {
            self.window.batch += 1;
            let fresh: Vec<&BulkPush> = judged.iter().filter(|j| j.new).map(|j| j.push).collect();
            if ids.len() != fresh.len() {
                return Err(StoreError::Database(format!(
                    "the batch probe reserved {} ids for {} new events",
                    ids.len(),
                    fresh.len()
                )));
            }
            ids.sort_unstable();
            let fresh: Vec<(&BulkPush, i64)> = fresh.into_iter().zip(ids).collect();
            if self.stage_batch(&fresh).await? {
                let mut results = Vec::with_capacity(judged.len());
                for j in &judged {
                    if j.new {
                        self.staged.insert(j.push.event.github_event_id.clone());
                    }
                    results.push(Ok(j.new));
                }
                return Ok((results, false));
            }
        }
        self.absorb_previous();
        Ok((self.one_by_one(pushes, &stored).await?, true))
    }

    /// Copies the batch's new events into the lanes, half on each, the two COPYs at once
    /// (the server parses the JSON of each half on its own backend): straight into
    /// push_events while its foreign keys to the entities are dropped, else into the stages.
    /// `false`: a COPY was refused and both lanes are as they were.
    async fn stage_batch(&mut self, fresh: &[(&BulkPush, i64)]) -> Result<bool> {
        if fresh.is_empty() {
            self.absorb_previous();
            return Ok(true);
        }
        let target = if self.deferral.foreign_keys_absent() {
            Target::PushEvents
        } else {
            Target::Stage
        };
        let (first, rest) = fresh.split_at(fresh.len().div_ceil(2));
        let [main, second] = &mut self.lanes;
        let previous = self.unabsorbed.take();
        let (a, b, ()) = tokio::join!(
            main.copy_rows(BATCH_SAVEPOINT, target, first),
            second.copy_rows(BATCH_SAVEPOINT, target, rest),
            absorb_interleaved(&mut self.window, previous),
        );
        let (a, b) = (a?, b?);
        let keep = a.is_ok() && b.is_ok();
        main.settle(BATCH_SAVEPOINT, target, a.ok().filter(|_| keep))
            .await?;
        second
            .settle(BATCH_SAVEPOINT, target, b.ok().filter(|_| keep))
            .await?;
        Ok(keep)
    }

    /// `n` push_events ids from the table's sequence, in increasing order.
    async fn reserve_ids(&mut self, n: usize) -> Result<Vec<i64>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let sequence = self.sequence.clone();
        Ok(sqlx::query_scalar(
            "SELECT nextval($1::regclass) AS id FROM generate_series(1, $2) ORDER BY id",
        )
        .bind(sequence)
        .bind(i64::try_from(n).unwrap_or(i64::MAX))
        .fetch_all(&mut self.main().conn)
        .await?)
    }

    /// Which of `candidates` (event ids) push_events holds already.
    async fn stored(&mut self, candidates: &[&str]) -> Result<HashSet<String>> {
        Ok(sqlx::query_scalar::<_, String>(STORED_EVENT_IDS)
            .bind(candidates)
            .fetch_all(&mut self.lanes[0].conn)
            .await?
            .into_iter()
            .collect())
    }

    /// Which of `candidates` (event ids, each once) push_events holds already, and a
    /// push_events id from the table's sequence for each of the others, in one round trip
    /// (two cost a 200,000-envelope import 0.2 s more).
    async fn probe_and_reserve(
        &mut self,
        candidates: &[&str],
    ) -> Result<(HashSet<String>, Vec<i64>)> {
        if candidates.is_empty() {
            return Ok((HashSet::new(), Vec::new()));
        }
        let sequence = self.sequence.clone();
        let (stored, ids): (Vec<String>, Vec<i64>) = sqlx::query_as(PROBE_AND_RESERVE)
            .bind(candidates)
            .bind(sequence)
            .fetch_one(&mut self.lanes[0].conn)
            .await?;
        Ok((stored.into_iter().collect(), ids))
    }

    /// Whether every ingestion run the batch names exists. The staged events are inserted
    /// only at the commit, where a missing run would fail the whole window; so a batch naming
    /// one the store does not hold is written one event at a time, and those events fail on
    /// the foreign key as they do on the page path.
    async fn runs_known(&mut self, pushes: &[&BulkPush]) -> Result<bool> {
        let asked: Vec<i64> = pushes
            .iter()
            .filter_map(|p| p.event.ingestion_run_id)
            .filter(|run| !self.known_runs.contains(run))
            .collect::<HashSet<i64>>()
            .into_iter()
            .collect();
        if asked.is_empty() {
            return Ok(true);
        }
        let found: Vec<i64> =
            sqlx::query_scalar("SELECT id FROM ingestion_runs WHERE id = ANY($1)")
                .bind(&asked)
                .fetch_all(&mut self.lanes[0].conn)
                .await?;
        self.known_runs.extend(found.iter().copied());
        Ok(found.len() == asked.len())
    }

    /// The page path's fallback, on the main lane: each event under its own savepoint, as a
    /// group of one (its own fold batch, so a row it creates has its instants), only the bad
    /// ones failing. An event naming an unknown ingestion run is written at once with its
    /// entities (the foreign key refuses it, or takes a run created meanwhile, with an id of
    /// its own); the others are staged, each with an id of its own.
    async fn one_by_one(
        &mut self,
        pushes: &[&BulkPush],
        stored: &HashSet<String>,
    ) -> Result<Vec<Result<bool>>> {
        let mut results = Vec::with_capacity(pushes.len());
        for push in pushes {
            self.window.batch += 1;
            let id = push.event.github_event_id.as_str();
            if stored.contains(id) || self.staged.contains(id) {
                self.window.absorb(&push.event, false);
                results.push(Ok(false));
                continue;
            }
            let run_known = push
                .event
                .ingestion_run_id
                .is_none_or(|run| self.known_runs.contains(&run));
            let written = if run_known {
                let ids = self.reserve_ids(1).await?;
                let row: Vec<(&BulkPush, i64)> = ids.into_iter().map(|id| (*push, id)).collect();
                self.lanes[0].stage_one(&row).await?.map(|_| ())
            } else {
                self.write_at_once(&push.event, &push.raw_json).await
            };
            match written {
                Ok(()) => {
                    self.staged.insert(id.to_owned());
                    self.window.absorb(&push.event, true);
                    results.push(Ok(true));
                }
                Err(e) => results.push(Err(e)),
            }
        }
        Ok(results)
    }

    /// One event into push_events now, on the main lane under a savepoint, after rows for
    /// its actor and repository (left alone if stored; the commit's upsert writes them in
    /// full).
    async fn write_at_once(&mut self, event: &PushEventWrite, raw: &str) -> Result<()> {
        let main = &mut self.lanes[0];
        main.execute(EVENT_SAVEPOINT.open).await?;
        let written = insert_at_once(&mut main.conn, event, raw).await;
        if written.is_err() {
            main.execute(EVENT_SAVEPOINT.undo).await?;
        } else {
            self.written_at_once = true;
        }
        main.execute(EVENT_SAVEPOINT.release).await?;
        written
    }

    /// Absorbs the batch kept unabsorbed, if any, at once.
    fn absorb_previous(&mut self) {
        if let Some(previous) = self.unabsorbed.take() {
            previous.absorb_into(&mut self.window);
        }
    }

    /// Writes the window's entities, then its events (see the module comment).
    async fn commit(&mut self, which: Commit) -> Result<()> {
        self.absorb_previous();
        let window = std::mem::take(&mut self.window);
        let batch = window.batch;
        let entities = self.entities.as_mut().ok_or_else(|| {
            StoreError::Database("the import's writer was interrupted in a batch".into())
        })?;
        let inserted = if self.written_at_once {
            // The event written at once needs its entities in its own transaction: the main
            // lane commits them, then the second lane its events.
            let [main, second] = &mut self.lanes;
            let mut conn = Conn::Pg(&mut main.conn);
            write_actors(&mut conn, &window.actors).await?;
            write_repositories(&mut conn, &window.repositories).await?;
            main.commit().await?;
            entities.commit_quarantine().await?;
            second.commit().await?;
            let (a, b) = tokio::join!(main.insert_staged(), second.insert_staged());
            a? + b?
        } else {
            let build = which == Commit::Last && self.deferral.owes_build();
            commit_apart(entities, &mut self.lanes, &window, build).await?
        };
        self.deferral.created(inserted);
        // The refresh is for this writer's next probes; after the last commit there are none
        // (autovacuum analyzes the grown table as it always does).
        if which == Commit::Window {
            self.refresh_statistics(inserted).await;
        }
        self.pending = 0;
        self.staged.clear();
        self.written_at_once = false;
        // The fold's batch counter goes on: creation instants compare batches by number.
        self.window.batch = batch;
        Ok(())
    }

    /// Refreshes push_events' statistics when this writer has grown the table enough (see
    /// [`ANALYZE_AFTER`]). Best effort: a refusal (a role that does not own the table) leaves
    /// them to autovacuum.
    async fn refresh_statistics(&mut self, inserted: u64) {
        self.created_since_analyze += inserted;
        if self.created_since_analyze < ANALYZE_AFTER.max(self.rows_at_analyze) {
            return;
        }
        if self.main().execute(ANALYZE_PROBED).await.is_ok() {
            self.rows_at_analyze += self.created_since_analyze;
            self.created_since_analyze = 0;
        }
    }

    /// After an error that is not one event's own: nothing since the last commit is kept
    /// but what a step of the commit had committed (see the module comment).
    async fn roll_back(&mut self, error: StoreError, lost: usize) -> StoreError {
        self.window = EntityFold {
            batch: self.window.batch,
            ..EntityFold::default()
        };
        self.pending = 0;
        self.staged.clear();
        self.unabsorbed = None;
        self.written_at_once = false;
        let mut failed = match self.entities.as_mut() {
            Some(entities) => entities.abandon().await,
            None => None,
        };
        for lane in &mut self.lanes {
            let lane_failed = lane.abandon().await;
            failed = failed.or(lane_failed);
        }
        if let Some(e) = failed {
            return StoreError::Database(format!(
                "{error}; rolling the open transaction back failed too: {e}"
            ));
        }
        StoreError::RolledBack {
            cause: Box::new(error),
            lost,
        }
    }
}

/// A window's commit when its entities are written on connections of their own: actors and
/// repositories at once, each one statement committed as it ends, then, once both are, the
/// lanes' events. Returns the events the lanes added.
///
/// Two writers splitting each entity table cost more in all, their inserts meeting on the
/// same index pages, and finished no sooner. Neither entity writer waits on the other
/// holding locks, so no third writer can deadlock with them. Every branch runs to its end
/// even when another fails, so no connection is left mid-statement.
///
/// With `build` (the last commit of an import that deferred indexes), each connection goes
/// on to build what its rows need as soon as they are committed: an entity table's indexes
/// on the connection that wrote it, push_events' on the lanes, all at once rather than one
/// table after another (after 200,000 envelopes the finish took 2.4 s built in turn).
/// Those builds are best effort; [`IndexDeferral::finish`] builds and reports what is left.
async fn commit_apart(
    entities: &mut EntityWriters,
    lanes: &mut [Lane; 2],
    window: &EntityFold,
    build: bool,
) -> Result<u64> {
    let EntityWriters {
        actors: actors_conn,
        repositories: repositories_conn,
        quarantine_open,
    } = entities;
    let [main, second] = lanes;
    let (actors_done, actors_stored) = tokio::sync::oneshot::channel::<bool>();
    let (repositories_done, repositories_stored) = tokio::sync::oneshot::channel::<bool>();
    let (actors, repositories, events) = tokio::join!(
        async {
            // In the transaction holding the window's quarantined envelopes, if one is open.
            let mut written = write_actors(&mut Conn::Pg(&mut *actors_conn), &window.actors).await;
            if written.is_ok() && *quarantine_open {
                written = sqlx::query("COMMIT")
                    .execute(&mut *actors_conn)
                    .await
                    .map(|_| ())
                    .map_err(StoreError::from);
                *quarantine_open = false;
            }
            let _ = actors_done.send(written.is_ok());
            if build && written.is_ok() {
                deferral::build_entity_indexes(actors_conn, "actors").await;
            }
            written
        },
        async {
            let written =
                write_repositories(&mut Conn::Pg(&mut *repositories_conn), &window.repositories)
                    .await;
            let _ = repositories_done.send(written.is_ok());
            if build && written.is_ok() {
                deferral::build_entity_indexes(repositories_conn, "repositories").await;
            }
            written
        },
        async {
            // The events commit only after both tables' rows have.
            let (a, r) = (actors_stored.await, repositories_stored.await);
            if a != Ok(true) || r != Ok(true) {
                return Ok(0);
            }
            let (a, b) = tokio::join!(main.insert_staged(), second.insert_staged());
            let inserted = a? + b?;
            if build {
                deferral::build_push_event_indexes(&mut main.conn, &mut second.conn).await;
            }
            Ok::<_, StoreError>(inserted)
        },
    );
    actors?;
    repositories?;
    events
}

async fn write_actors(conn: &mut Conn<'_>, rows: &Rows<ActorIdentity>) -> Result<()> {
    write_entities(conn, "actors", ACTOR_COLUMNS, ACTOR_UPDATE, rows).await
}

async fn write_repositories(conn: &mut Conn<'_>, rows: &Rows<RepositoryIdentity>) -> Result<()> {
    write_entities(
        conn,
        "repositories",
        REPOSITORY_COLUMNS,
        REPOSITORY_UPDATE,
        rows,
    )
    .await
}

/// A window's entity rows of one table, by GitHub id.
type Rows<I> = BTreeMap<i64, Pending<I>>;

/// One event into push_events, after rows for its actor and repository.
async fn insert_at_once(conn: &mut PgConnection, event: &PushEventWrite, raw: &str) -> Result<()> {
    let fold = EntityFold::of_group(&[event], &[false]);
    let mut conn = Conn::Pg(conn);
    let nothing = "ON CONFLICT (github_id) DO NOTHING";
    write_entities(&mut conn, "actors", ACTOR_COLUMNS, nothing, &fold.actors).await?;
    write_entities(
        &mut conn,
        "repositories",
        REPOSITORY_COLUMNS,
        nothing,
        &fold.repositories,
    )
    .await?;
    match insert_events(&mut conn, &[event], &[raw]).await? {
        1 => Ok(()),
        _ => Err(StoreError::Conflict(
            "push event stored by another writer during the batch".into(),
        )),
    }
}

/// A lane's staged events, with the ids they were given. `ON CONFLICT` keeps an id another
/// writer stored meanwhile out, and the lane then refuses its rows (see
/// [`Lane::insert_staged`]). No `ORDER BY`: the ids are the rows' own, so the order they are
/// written in changes nothing but where they land, and sorting the window's rows (JSON
/// included) cost more than the insert's order saves.
const INSERT_FROM_STAGE: &str = "INSERT INTO push_events (id, github_event_id, github_push_id, \
    github_actor_id, github_repository_id, actor_login, repository_name, ref, head_sha, \
    before_sha, commit_count, distinct_commit_count, occurred_at_ms, ingestion_run_id, source, \
    created_at_ms, raw_json) \
    SELECT id, github_event_id, github_push_id, github_actor_id, github_repository_id, \
        actor_login, repository_name, ref, head_sha, before_sha, commit_count, \
        distinct_commit_count, occurred_at_ms, ingestion_run_id, source, created_at_ms, raw_json \
    FROM headroom_push_window \
    ON CONFLICT (github_event_id) DO NOTHING";

/// Columns of a COPY row: the id, then [`PUSH_COLUMNS`].
const COPY_COLUMNS: i16 = 17;

/// `pushes` as binary COPY rows of push_events' columns, each with its push_events id (the
/// stage has the same columns), written into `buf`; `None` when there are none.
fn stage_rows(pushes: &[(&BulkPush, i64)], buf: &mut Vec<u8>) -> Option<usize> {
    // Room for each row at once: its JSON and about 300 bytes of the other columns.
    let bytes = pushes.iter().map(|(p, _)| p.raw_json.len() + 320).sum();
    let mut rows = CopyBinary::new(COPY_COLUMNS, std::mem::take(buf), bytes);
    for (push, id) in pushes {
        let e = &push.event;
        rows.row();
        rows.int(Some(*id));
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
        rows.jsonb(&push.raw_json);
    }
    let any = rows.rows() > 0;
    *buf = rows.finish();
    any.then_some(buf.len())
}

/// Sends `rows` into `target` by `COPY … FROM STDIN (FORMAT binary)`. A failed send aborts
/// the COPY, so the connection stays usable (the caller rolls back to its savepoint).
async fn copy_in(conn: &mut PgConnection, target: Target, rows: &[u8]) -> Result<u64> {
    let table = match target {
        Target::Stage => "headroom_push_window",
        Target::PushEvents => "push_events",
    };
    let sql = format!("COPY {table} (id, {PUSH_COLUMNS}) FROM STDIN (FORMAT binary)");
    let mut copy = conn.copy_in_raw(&sql).await?;
    if let Err(e) = copy.send(rows).await {
        // The send's own error is the one to report; an abort that fails too leaves the
        // connection broken, which the next statement reports.
        let _ = copy.abort("headroom: sending the batch failed").await;
        return Err(e.into());
    }
    Ok(copy.finish().await?)
}
