//! The bulk writer of a PostgreSQL store: four connections of its own, a window of batches
//! committed every [`BulkOptions::commit_every`] envelopes (and when the window names
//! [`MAX_WINDOW_ENTITIES`] entities), with the page path's results ([`crate::push::group`])
//! row for row. Two [`Lane`]s write events; two [`EntityWriters`] write actors and
//! repositories. One server backend's CPU is what bounds an import, so the work is spread
//! over several at once. It opens them once it has the import's turn ([`turn`]): one import
//! writes a database at a time.
//!
//! Per batch:
//! - which events are new: not stored, not staged earlier in the window, not earlier in the
//!   batch; one statement probes push_events' unique index for the batch and takes a
//!   push_events id from the table's sequence for each new event, in the batch's order (the
//!   ids the page path would give them, whichever lane writes them);
//! - the new events are sent by binary COPY ([`copy_binary`]), half on each lane at once:
//!   straight into push_events while the import has dropped push_events' foreign keys to the
//!   entities ([`deferral`]; a first import does from its first window), else into the lane's
//!   temporary stage. `raw_json` is checked as JSON either way, so an envelope PostgreSQL refuses fails
//!   here, in its batch;
//! - meanwhile the actors' connection quarantines the batch's malformed envelopes, in a
//!   transaction committed with the window's actors, and the window's [`EntityFold`] takes the
//!   previous batch's events ([`Unabsorbed`]).
//!
//! At the commit ([`entities::commit_apart`]):
//! 1. the window's actors and repositories are written once each, on their two connections
//!    at once, with the page path's own upserts ([`crate::push::group::ACTOR_UPDATE`]):
//!    identity from the last event naming it, activity from its new events only; each
//!    commits as soon as its statement ends;
//! 2. once both have, each lane inserts what it staged and commits, with what it copied
//!    straight into push_events.
//!
//! The entities come first because the events need them (push_events' foreign keys, when
//! present, and the activity they count). A stop between the two steps (or between the two
//! lanes' commits) leaves entity rows whose activity counts events not yet stored: importing
//! again finds those events new and applies the same activity again, which changes nothing
//! (first seen keeps the earliest, last seen and latest event the latest, identity the last
//! event's). The reverse — an event stored whose entity's activity is not — cannot happen,
//! so a killed import loses nothing and counts nothing twice. Writing each entity once per
//! window rather than once per batch, as the page path does, is most of the gain over it: a
//! batch of 10,000 names about as many actors and repositories, and rewriting a row puts a
//! new tuple in every index of its table.
//!
//! A batch whose COPY into push_events meets an event id another writer stored after the
//! probe is judged again, once, against what is stored now. A batch whose COPY fails
//! otherwise (a NUL byte, JSON PostgreSQL refuses), or with an event naming an ingestion run
//! the store does not hold, is written one event at a time on the main lane instead, each under a savepoint of its own,
//! as the page path falls back to, so only the bad events fail; a window holding events
//! written that way writes both entity tables on the main lane, in the transaction that holds
//! those events. Any other error rolls back what is open and says how many envelopes may be
//! lost ([`StoreError::RolledBack`]); what was committed is kept, and importing again skips
//! it. Durability is PostgreSQL's own at each commit (`synchronous_commit` as the server has
//! it).

use std::collections::HashSet;

use async_trait::async_trait;

use super::{BulkItem, BulkOptions, BulkOutcome, BulkPush, BulkWriter};
use crate::db::Conn;
use crate::error::{Result, StoreError};
use crate::model::PushEventWrite;
use crate::push::fold::EntityFold;
use crate::push::group::STORED_EVENT_IDS;
use crate::{PgStore, QuarantinedEvent};

mod copy_binary;
mod deferral;
mod entities;
mod lane;
mod turn;

use deferral::IndexDeferral;
pub(crate) use deferral::build_missing;
use entities::{EntityWriters, Unabsorbed, absorb_interleaved, commit_apart, insert_at_once};
use entities::{write_actors, write_repositories};
use lane::{BATCH_SAVEPOINT, EVENT_SAVEPOINT, Lane, Target};
use turn::ImportTurn;

/// Actors and repositories a window may hold before it commits early, whatever
/// [`BulkOptions::commit_every`] says: the window's memory stays bounded on a file naming a new
/// entity in every envelope.
const MAX_WINDOW_ENTITIES: usize = 200_000;

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

impl PgStore {
    /// The bulk writer for this store: four connections of its own, taken out of the pool
    /// (transactions stay open on them across batches, and dropping the writer closes them,
    /// which rolls back whatever was not committed), opened at once once the import has its
    /// turn ([`ImportTurn`]: no other import writes the database).
    pub(crate) async fn open_bulk(&self, options: BulkOptions) -> Result<Box<dyn BulkWriter + '_>> {
        let turn = ImportTurn::take(self.pool(), options.on_wait).await?;
        let (mut main, second, entities) = tokio::try_join!(
            Lane::open(self.pool()),
            Lane::open(self.pool()),
            EntityWriters::open(self.pool()),
        )?;
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
            turn: Some(turn),
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

/// `$1` (event ids, each once) that push_events holds, and as many ids from `$2` (its
/// sequence) as there are others. The probe is materialized once, read twice.
const PROBE_AND_RESERVE: &str = "WITH stored AS MATERIALIZED ( \
        SELECT github_event_id FROM push_events WHERE github_event_id = ANY($1)) \
    SELECT ARRAY(SELECT github_event_id FROM stored), \
        ARRAY(SELECT nextval($2::regclass) FROM generate_series(1, \
            cardinality($1::text[]) - (SELECT count(*) FROM stored)))";

/// Which commit [`PgBulk::commit`] makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Commit {
    /// A full window's, with more to come.
    Window,
    /// The finish's.
    Last,
}

/// The PostgreSQL writer.
struct PgBulk {
    /// Held from the open to the end of the finish (see [`turn`]).
    turn: Option<ImportTurn>,
    /// The main lane (probes, the fallback, push_events' index deferral) and the second.
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
                    self.unabsorbed = Some(Unabsorbed::new(items, new, self.window.batch));
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
        self.deferral
            .finish(&mut main.conn, &mut second.conn)
            .await?;
        match self.turn.take() {
            Some(turn) => turn.end().await,
            None => Ok(()),
        }
    }
}

/// What became of a batch's COPY.
enum Staged {
    /// Copied, on both lanes.
    Kept,
    /// Refused because an event id was stored meanwhile (a unique violation in push_events):
    /// both lanes are as they were.
    Conflict,
    /// Refused for another reason (an event PostgreSQL will not take): both lanes are as
    /// they were.
    Refused,
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

    /// The batch's pushes: staged as a set when it can be, else one at a time. `false` with
    /// the results: the window has not absorbed the events yet (the set path leaves that to
    /// the next batch's COPY, see [`PgBulk::unabsorbed`]).
    async fn write_pushes(&mut self, pushes: &[&BulkPush]) -> Result<(Vec<Result<bool>>, bool)> {
        if pushes.is_empty() {
            return Ok((Vec::new(), true));
        }
        let runs_known = self.runs_known(pushes).await?;
        // A batch whose COPY met an event another writer stored after the probe (its insert
        // was not committed yet) is judged again, once, against what is stored now; the ids
        // the first try reserved are left unused.
        let mut tries = 0;
        loop {
            tries += 1;
            let (stored, judged, fresh) = self.judge(pushes, runs_known).await?;
            if !runs_known {
                self.absorb_previous();
                return Ok((self.one_by_one(pushes, &stored).await?, true));
            }
            match self.stage_batch(&fresh).await? {
                Staged::Kept => {
                    let mut results = Vec::with_capacity(judged.len());
                    for j in &judged {
                        if j.new {
                            self.staged.insert(j.push.event.github_event_id.clone());
                        }
                        results.push(Ok(j.new));
                    }
                    return Ok((results, false));
                }
                Staged::Conflict if tries == 1 => continue,
                Staged::Conflict | Staged::Refused => {
                    self.absorb_previous();
                    return Ok((self.one_by_one(pushes, &stored).await?, true));
                }
            }
        }
    }

    /// Which of the batch's events are new (see [`Judged`]), with the stored ids the probe
    /// found and, when the batch can be staged as a set (`runs_known`), each new event with
    /// the push_events id reserved for it.
    async fn judge<'a>(
        &mut self,
        pushes: &[&'a BulkPush],
        runs_known: bool,
    ) -> Result<(HashSet<String>, Vec<Judged<'a>>, Vec<(&'a BulkPush, i64)>)> {
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
        if !runs_known {
            return Ok((stored, judged, Vec::new()));
        }
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
        let fresh = fresh.into_iter().zip(ids).collect();
        Ok((stored, judged, fresh))
    }

    /// Copies the batch's new events into the lanes, half on each, the two COPYs at once
    /// (the server parses the JSON of each half on its own backend): straight into
    /// push_events while its foreign keys to the entities are dropped, else into the stages.
    async fn stage_batch(&mut self, fresh: &[(&BulkPush, i64)]) -> Result<Staged> {
        if fresh.is_empty() {
            self.absorb_previous();
            return Ok(Staged::Kept);
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
        let conflict = [&a, &b]
            .iter()
            .any(|copied| matches!(copied, Err(StoreError::Conflict(_))));
        main.settle(BATCH_SAVEPOINT, target, a.ok().filter(|_| keep))
            .await?;
        second
            .settle(BATCH_SAVEPOINT, target, b.ok().filter(|_| keep))
            .await?;
        Ok(match (keep, conflict) {
            (true, _) => Staged::Kept,
            (false, true) => Staged::Conflict,
            (false, false) => Staged::Refused,
        })
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
