//! The bulk writer of a PostgreSQL store: one connection of its own, one transaction open
//! across batches and committed every [`BulkOptions::commit_every`] envelopes (and when the
//! window names [`MAX_WINDOW_ENTITIES`] entities), the window's new events sent by `COPY` into
//! a temporary staging table and written from there by set-based statements at the commit,
//! with the page path's results ([`crate::push::group`]) row for row.
//!
//! Per batch:
//! - which events are new: not stored (one probe of push_events' unique index for the
//!   batch), not staged earlier in the window, not earlier in the batch;
//! - the new ones are copied into `headroom_push_window` (COPY text, [`copy_text`]), whose
//!   `raw_json` is JSONB, so an envelope PostgreSQL refuses fails here, in its batch;
//! - the window's [`EntityFold`] takes the batch's events with what was new.
//!
//! At the commit each actor and repository of the window is written once, with the page
//! path's own upsert ([`crate::push::group::ACTOR_UPDATE`]): identity from the last event
//! naming it, activity from its new events only; then the staged events are inserted from the
//! stage in one statement, in the page path's order (push_events' foreign keys need the
//! entities first, and are not deferrable). Writing each entity once per window, rather than
//! once per batch as the page path does, is most of the gain: a batch of 10,000 names about as
//! many actors and repositories, and rewriting a row puts a new tuple in every index of its
//! table.
//!
//! A batch whose COPY fails (a NUL byte, JSON PostgreSQL refuses), or with an event naming an
//! ingestion run the store does not hold, is written one event at a time instead, each under
//! a savepoint of its own, as the page path falls back to, so only the bad events fail. Any
//! other error rolls the whole open transaction back and says how many envelopes were lost
//! ([`StoreError::RolledBack`]); what was committed is kept, and importing again skips it.
//! Durability is PostgreSQL's own at each commit (`synchronous_commit` as the server has it).
//!
//! While a window is open, the entity rows it has written are locked by its transaction
//! until the commit, so a page-path writer upserting the same actor waits for it; and the
//! stage holds the window's events on the server (temporary, never WAL-logged).

use std::collections::HashSet;

use async_trait::async_trait;
use sqlx::PgConnection;

use super::{BulkItem, BulkOptions, BulkOutcome, BulkPush, BulkWriter};
use crate::PgStore;
use crate::db::Conn;
use crate::error::{Result, StoreError};
use crate::model::{PushEventWrite, ms};
use crate::push::fold::EntityFold;
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

/// The staging table: the window's ordinal, then push_events' columns ([`PUSH_COLUMNS`]).
/// Temporary: never WAL-logged, private to the writer's session.
const STAGE_DDL: &str = "CREATE TEMP TABLE IF NOT EXISTS headroom_push_window ( \
    n BIGINT NOT NULL, github_event_id TEXT, github_push_id BIGINT, github_actor_id BIGINT, \
    github_repository_id BIGINT, actor_login TEXT, repository_name TEXT, ref TEXT, \
    head_sha TEXT, before_sha TEXT, commit_count BIGINT, distinct_commit_count BIGINT, \
    occurred_at_ms BIGINT, ingestion_run_id BIGINT, source TEXT, created_at_ms BIGINT, \
    raw_json JSONB)";

/// Memory for the writer's session, set once: the stage held in temporary buffers rather than
/// written out and read back as soon as it passes the default 8 MiB, and the insert's sort by
/// window order done in memory rather than in temporary files (both seen with `EXPLAIN
/// (ANALYZE, BUFFERS)` at the defaults). Neither touches durability: they are the session's
/// private working memory.
const SESSION_MEMORY_SQL: &str = "SET temp_buffers = '64MB'; SET work_mem = '64MB'";

/// The writer session's `idle_in_transaction_session_timeout`: a window's transaction idles
/// while the parser fills the next batch, and the store's leak guard (30 s) would end the
/// session on a stalled input. This connection never goes back to the pool, so the guard's
/// reason does not apply to it.
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
        sqlx::query(IDLE_TIMEOUT_SQL).execute(&mut conn).await?;
        let deferral = IndexDeferral::open(&mut conn).await?;
        Ok(Box::new(PgBulk {
            conn,
            deferral,
            window: EntityFold::default(),
            staged: HashSet::new(),
            stage_rows: 0,
            known_runs: HashSet::new(),
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
    /// The event ids the window has taken as new, in the stage (or, for the few written one
    /// at a time, already in push_events); the stage's row count is its length.
    staged: HashSet<String>,
    /// Rows in the stage.
    stage_rows: u64,
    /// Ingestion runs found to exist (events name at most a few).
    known_runs: HashSet<i64>,
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

/// Where an event of a batch stands before it is written.
struct Judged<'a> {
    push: &'a BulkPush,
    /// Not stored, not staged earlier in the window (nor, for the set path, in the batch).
    new: bool,
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
            let written = self.write_pushes(&pushes).await?;
            for (slot, result) in slots.into_iter().zip(written) {
                outcomes[slot] = Some(super::outcome_of(result));
            }
        }
        Ok(outcomes
            .into_iter()
            .map(|o| o.unwrap_or(BulkOutcome::Duplicate))
            .collect())
    }

    /// The batch's pushes: staged as a set when it can be, else one at a time.
    async fn write_pushes(&mut self, pushes: &[&BulkPush]) -> Result<Vec<Result<bool>>> {
        let stored = self.stored(pushes).await?;
        let runs_known = self.runs_known(pushes).await?;
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
            self.execute("SAVEPOINT headroom_batch").await?;
            let rows = stage_rows(
                judged.iter().filter(|j| j.new).map(|j| j.push),
                self.next_n(),
            );
            let copied = if rows.bytes().is_empty() {
                Ok(0)
            } else {
                copy_in(&mut self.conn, rows.bytes()).await
            };
            match copied {
                Ok(copied) => {
                    self.stage_rows += copied;
                    self.execute("RELEASE SAVEPOINT headroom_batch").await?;
                    let mut results = Vec::with_capacity(judged.len());
                    for j in &judged {
                        if j.new {
                            self.staged.insert(j.push.event.github_event_id.clone());
                        }
                        self.window.absorb(&j.push.event, j.new);
                        results.push(Ok(j.new));
                    }
                    return Ok(results);
                }
                Err(_) => {
                    self.execute("ROLLBACK TO SAVEPOINT headroom_batch").await?;
                    self.execute("RELEASE SAVEPOINT headroom_batch").await?;
                }
            }
        }
        self.one_by_one(pushes, &stored).await
    }

    /// The stage's next ordinal.
    fn next_n(&self) -> i64 {
        i64::try_from(self.stage_rows).unwrap_or(i64::MAX)
    }

    /// Which of the batch's event ids push_events holds already (ids the window staged are
    /// known without asking).
    async fn stored(&mut self, pushes: &[&BulkPush]) -> Result<HashSet<String>> {
        let ids: Vec<&str> = pushes
            .iter()
            .map(|p| p.event.github_event_id.as_str())
            .filter(|id| !self.staged.contains(*id))
            .collect();
        Ok(sqlx::query_scalar::<_, String>(
            "SELECT github_event_id FROM push_events WHERE github_event_id = ANY($1)",
        )
        .bind(&ids)
        .fetch_all(&mut self.conn)
        .await?
        .into_iter()
        .collect())
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
                .fetch_all(&mut self.conn)
                .await?;
        self.known_runs.extend(found.iter().copied());
        Ok(found.len() == asked.len())
    }

    /// The page path's fallback: each event under its own savepoint, as a group of one (its
    /// own fold batch, so a row it creates has its instants), only the bad ones failing. An
    /// event naming an unknown ingestion run is written at once with its entities (the
    /// foreign key refuses it, or takes a run created meanwhile); the others are staged.
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
            self.execute("SAVEPOINT headroom_event").await?;
            let run_known = push
                .event
                .ingestion_run_id
                .is_none_or(|run| self.known_runs.contains(&run));
            let written = if run_known {
                let rows = stage_rows(std::iter::once(*push), self.next_n());
                copy_in(&mut self.conn, rows.bytes()).await
            } else {
                self.write_at_once(&push.event, &push.raw_json)
                    .await
                    .map(|()| 0)
            };
            match written {
                Ok(copied) => {
                    self.execute("RELEASE SAVEPOINT headroom_event").await?;
                    self.stage_rows += copied;
                    self.staged.insert(id.to_owned());
                    self.window.absorb(&push.event, true);
                    results.push(Ok(true));
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

    /// One event into push_events now, after rows for its actor and repository (left alone
    /// if stored; the commit's upsert writes them in full).
    async fn write_at_once(&mut self, event: &PushEventWrite, raw: &str) -> Result<()> {
        let fold = EntityFold::of_group(&[event], &[false]);
        let mut conn = Conn::Pg(&mut self.conn);
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

    /// Writes the window's entities, then its staged events, and commits.
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
        let inserted = sqlx::query(INSERT_FROM_STAGE)
            .execute(&mut self.conn)
            .await?
            .rows_affected();
        // An id another writer stored after this window found it missing: the outcomes
        // already returned called it new, so the window is not kept (importing again
        // resumes with it as a duplicate).
        if inserted != self.stage_rows {
            return Err(StoreError::Conflict(
                "push events were stored by another writer during the import's window".into(),
            ));
        }
        self.execute("TRUNCATE headroom_push_window").await?;
        self.execute("COMMIT").await?;
        self.deferral.created(inserted);
        self.open = false;
        self.pending = 0;
        self.staged.clear();
        self.stage_rows = 0;
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
        self.staged.clear();
        self.stage_rows = 0;
        if self.open {
            self.open = false;
            // The stage's rows of the window go with its transaction.
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

/// The window's staged events, in the order they were staged (push_events' ids are assigned
/// in the page path's order). `ON CONFLICT` keeps an id another writer stored meanwhile out,
/// and the commit then refuses the window (see [`PgBulk::commit`]).
const INSERT_FROM_STAGE: &str = "INSERT INTO push_events (github_event_id, github_push_id, \
    github_actor_id, github_repository_id, actor_login, repository_name, ref, head_sha, \
    before_sha, commit_count, distinct_commit_count, occurred_at_ms, ingestion_run_id, source, \
    created_at_ms, raw_json) \
    SELECT github_event_id, github_push_id, github_actor_id, github_repository_id, \
        actor_login, repository_name, ref, head_sha, before_sha, commit_count, \
        distinct_commit_count, occurred_at_ms, ingestion_run_id, source, created_at_ms, raw_json \
    FROM headroom_push_window ORDER BY n \
    ON CONFLICT (github_event_id) DO NOTHING";

/// `pushes` as COPY text rows of `headroom_push_window`, numbered from `first_n`.
fn stage_rows<'a>(pushes: impl Iterator<Item = &'a BulkPush>, first_n: i64) -> CopyText {
    let mut rows = CopyText::with_capacity(1 << 16);
    for (n, push) in (first_n..).zip(pushes) {
        let e = &push.event;
        rows.int(Some(n));
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
    let sql = format!("COPY headroom_push_window (n, {PUSH_COLUMNS}) FROM STDIN");
    let mut copy = conn.copy_in_raw(&sql).await?;
    if let Err(e) = copy.send(rows).await {
        // The send's own error is the one to report; an abort that fails too leaves the
        // connection broken, which the next statement reports.
        let _ = copy.abort("headroom: sending the batch failed").await;
        return Err(e.into());
    }
    Ok(copy.finish().await?)
}
