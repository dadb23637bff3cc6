//! The bulk writer of an SQLite file: one `rusqlite` connection on a blocking thread, one
//! write transaction open across batches and committed every [`BulkOptions::commit_every`] envelopes, and a
//! checkpointer thread that folds the WAL back into the database beside it.
//!
//! What makes it fast, each measured on the import benchmark (see the README):
//! - No savepoints. SQLite copies every page a savepoint's statements modify into a journal
//!   the first time, and push_events' random-key indexes and the entity tables spread a batch
//!   over most of their pages. A single-row statement is atomic without one (its constraint
//!   checks run before it writes), so a bad event still fails alone: its insert is refused
//!   and nothing of it is kept. Any other error (I/O, disk full) rolls the whole open
//!   transaction back and is reported with what was lost.
//! - Events first, entities at the commit. Whether an event is new is what its `INSERT … ON
//!   CONFLICT DO NOTHING` did; each actor and repository named since the last commit is then
//!   written once, in id order, with the identity of the last event naming it and the
//!   activity of its new events ([`EntityWindow`]). Foreign keys are not checked on this
//!   connection (an event row precedes its entities within the transaction); the one
//!   reference the writer does not create itself, `ingestion_run_id`, is looked up instead.
//! - Entity rows are "touched" (update instant and activity only) when their identity is
//!   unchanged, so the indexed `login` / `full_name` are not rewritten.
//! - Checkpoints run on their own connection and thread, not inside the writer's commits.
//! - push_events' per-actor and per-repository indexes are built once at the end rather than
//!   row by row, when this import adds at least as many rows as the table held
//!   ([`IndexDeferral`]).

use std::collections::{BTreeMap, HashSet};
use std::sync::mpsc;
use std::thread::JoinHandle;

use async_trait::async_trait;
use headroom_core::redact::redact;
use rusqlite::{Connection, OpenFlags, params};

use super::{BulkItem, BulkOptions, BulkOutcome, BulkWriter, TxWriter};
use crate::SqliteStore;
use crate::error::{Result, StoreError};
use crate::model::{PushEventWrite, check_fingerprint, ms};
use crate::push::QUARANTINE_SQL;
use crate::push::group::PUSH_COLUMNS;
mod entities;

use self::entities::*;
use crate::sqlite::{DEFERRABLE_INDEXES, ImportLock, PUSH_EVENT_INDEXES_SQL, missing_deferrable};

impl SqliteStore {
    /// The bulk writer for this store: a dedicated connection on a file, once no other import
    /// writes it ([`ImportLock::acquire`]), else the portable one.
    pub(crate) async fn open_bulk(&self, options: BulkOptions) -> Result<Box<dyn BulkWriter + '_>> {
        match self.file() {
            Some(path) => {
                let path = path.to_owned();
                let (conn, deferral, checkpointer) = tokio::task::spawn_blocking(move || {
                    // The import's turn first: a second import beside this one would fail
                    // on the busy timeout behind its long write transaction.
                    let turn = ImportLock::acquire(&path, options.on_wait);
                    let conn = open_connection(&path)?;
                    let deferral = IndexDeferral::for_table(&conn, turn)?;
                    let checkpointer = Checkpointer::spawn(&path)?;
                    Ok::<_, StoreError>((conn, deferral, checkpointer))
                })
                .await
                .map_err(|e| StoreError::Database(format!("bulk writer thread: {e}")))??;
                Ok(Box::new(SqliteBulk {
                    session: Some(Session {
                        conn,
                        window: EntityWindow::default(),
                        known_runs: HashSet::new(),
                        deferral,
                    }),
                    pending: 0,
                    commit_every: options.commit_every.max(1),
                    checkpointer: Some(checkpointer),
                }))
            }
            None => Ok(Box::new(TxWriter::new(self))),
        }
    }
}

/// Page cache of the bulk connection (KiB, as SQLite's negative `cache_size`): fixed, so
/// memory does not grow with the file, and large because push_events' per-actor,
/// per-repository and keyset indexes take random keys: once their pages outgrow the cache,
/// every insert rereads evicted pages and every commit spills more. Measured at 2,000,000
/// envelopes, 64 MiB cost 44.9 µs of CPU per envelope (12.6 of it in the kernel), 256 MiB 37.0.
const CACHE_KIB: i64 = 262_144;

/// Page cache of the bulk connection while it builds the deferred indexes (KiB): also the
/// memory each index's sort may hold before it spills to temporary files.
const BUILD_CACHE_KIB: i64 = 32_768;

// Envelopes between commits ([`BulkOptions::commit_every`]): every commit writes the entity
// and index pages its batches touched, which are spread over whole tables (push_events'
// per-actor and per-repository indexes take random keys), so one commit per many batches
// writes each hot page once rather than once per batch, and the entity rows of a window are
// written once per window, however many of its events name them. Measured on 1,000,000
// envelopes (16 KiB pages): every 100,000 ran at 78,000 events/s, 250,000 (the default) at
// 98,000, 500,000 at 101,000.

/// Actors and repositories a window may hold before it commits early, whatever
/// [`BulkOptions::commit_every`] says: a file naming a new entity in every envelope keeps the window's
/// memory (about 0.3 KiB per entity) bounded the same.
const MAX_WINDOW_ENTITIES: usize = 200_000;

fn open_connection(path: &std::path::Path) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| StoreError::open(&path.to_string_lossy(), e))?;
    conn.busy_timeout(crate::sqlite::BUSY_TIMEOUT)?;
    // foreign_keys = OFF: see the module comment. wal_autocheckpoint = 0: the checkpointer
    // thread does it. temp_store = FILE: anything SQLite spills (a quarantine upsert's
    // statement journal) goes to a temporary file rather than an in-memory list.
    // ignore_check_constraints: every CHECKed column this writer fills is a column default
    // (enrichment status and stage, attempt counts), an enum's own text (`source`) or a count
    // it increments from 1, so the checks cannot fail here; and SQLite evaluates
    // `status IN (…4 values…)` and `stage IN (…7…)` by building a temporary table for every
    // actor and repository row it inserts (6 % of the writer's time on a file naming a new
    // entity in most envelopes). The tests run `PRAGMA integrity_check`, which does check
    // them, over what this writer stored.
    conn.execute_batch(&format!(
        "PRAGMA foreign_keys = OFF; PRAGMA synchronous = NORMAL; \
         PRAGMA cache_size = -{CACHE_KIB}; PRAGMA temp_store = FILE; \
         PRAGMA wal_autocheckpoint = 0; PRAGMA ignore_check_constraints = ON;"
    ))?;
    conn.set_prepared_statement_cache_capacity(16);
    Ok(conn)
}

/// Folds the WAL back into the database on a connection and thread of its own, after each
/// commit of the writer. A passive checkpoint copies what no reader still needs and never
/// blocks the writer, which goes on appending; SQLite starts the WAL over at the writer's
/// next transaction once a checkpoint has caught up, so it stays about a window long.
struct Checkpointer {
    wake: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    fn spawn(path: &std::path::Path) -> Result<Self> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| StoreError::open(&path.to_string_lossy(), e))?;
        conn.busy_timeout(crate::sqlite::BUSY_TIMEOUT)?;
        let (wake, woken) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("headroom-import-checkpoint".into())
            .spawn(move || {
                while woken.recv().is_ok() {
                    // Several commits while one checkpoint ran need only one more.
                    while woken.try_recv().is_ok() {}
                    // A checkpoint that fails (a reader holds the WAL) leaves it to the next
                    // one, or to the store's own connections, which checkpoint as they commit.
                    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                }
            })
            .map_err(|e| StoreError::Database(format!("checkpoint thread: {e}")))?;
        Ok(Self {
            wake: Some(wake),
            thread: Some(thread),
        })
    }

    fn wake(&self) {
        if let Some(wake) = &self.wake {
            let _ = wake.send(());
        }
    }

    /// Runs a last checkpoint and waits for it.
    fn finish(&mut self) {
        self.wake();
        self.wake = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The connection and what the open transaction has accumulated; moves to a blocking
/// thread for each call.
struct Session {
    conn: Connection,
    /// Entity rows to write before the next commit.
    window: EntityWindow,
    /// Ingestion runs found to exist (events name at most a few).
    known_runs: HashSet<i64>,
    /// Whether push_events' random-key indexes wait for the end.
    deferral: IndexDeferral,
}

/// Whether the writer drops push_events' per-actor and per-repository indexes
/// ([`DEFERRABLE_INDEXES`]) and builds them at [`BulkWriter::finish`]. Building an index sorts
/// the table's keys once; maintaining it puts each new row's key on a random page. Measured on
/// 1,000,000 envelopes (README): maintaining these two cost about 7.8 µs per row, building them
/// after the load about 3.6. So building wins when the import adds more rows than the table
/// held, and loses on a small import into a large table. The writer cannot know how many rows
/// its input holds, so it decides as it goes: it keeps the indexes until it has created as many
/// rows as the table had when it opened, then drops them. An empty table defers from the first
/// row, a large one only for an import as large; at worst (an import that ends right after the
/// drop) the build costs about what its own rows would have cost again, and never a rebuild of
/// a table much larger than the import. Only the writer holding the [`ImportLock`] defers (one
/// that could not take it, beside a file in a read-only directory, keeps the indexes as it
/// finds them).
#[derive(Debug)]
struct IndexDeferral {
    /// push_events' rows when the writer opened (its largest id: counting a large table would
    /// read all of it).
    existing: u64,
    /// Rows this writer has created.
    created: u64,
    /// Whether the indexes are dropped (in the open transaction or a committed one).
    dropped: bool,
    /// Whether this writer dropped them at all, or found them missing:
    /// [`Session::build_indexes`] is then owed.
    owed: bool,
    /// Held while the indexes may be missing because of this writer; `None`: it never drops
    /// them.
    lock: Option<ImportLock>,
}

impl IndexDeferral {
    fn for_table(conn: &Connection, lock: Option<ImportLock>) -> Result<Self> {
        if lock.is_none() {
            return Ok(Self {
                existing: u64::MAX,
                created: 0,
                dropped: false,
                owed: false,
                lock,
            });
        }
        let existing: i64 =
            conn.query_row("SELECT COALESCE(MAX(id), 0) FROM push_events", [], |row| {
                row.get(0)
            })?;
        let present = conn
            .prepare(PUSH_EVENT_INDEXES_SQL)?
            .query_map([], |row| row.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        // Left missing by an import killed midway (and not rebuilt by an open since).
        let missing = !missing_deferrable(&present).is_empty();
        Ok(Self {
            existing: u64::try_from(existing).unwrap_or(0),
            created: 0,
            dropped: missing,
            owed: missing,
            lock,
        })
    }

    /// Drops the indexes within the open transaction once this import has earned it.
    fn drop_when_due(&mut self, conn: &Connection) -> Result<()> {
        if self.dropped || self.lock.is_none() || self.created < self.existing {
            return Ok(());
        }
        for (name, _) in DEFERRABLE_INDEXES {
            conn.execute_batch(&format!("DROP INDEX IF EXISTS {name}"))?;
        }
        self.dropped = true;
        self.owed = true;
        Ok(())
    }
}

/// The SQLite file writer.
struct SqliteBulk {
    session: Option<Session>,
    /// Envelopes written since the last commit.
    pending: usize,
    /// Envelopes between commits.
    commit_every: usize,
    checkpointer: Option<Checkpointer>,
}

impl SqliteBulk {
    /// Runs `work` on the session on a blocking thread.
    async fn with_session<T: Send + 'static>(
        &mut self,
        work: impl FnOnce(&mut Session) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let Some(mut session) = self.session.take() else {
            return Err(StoreError::Database(
                "the bulk writer was lost after an earlier failure".into(),
            ));
        };
        let (session, result) = tokio::task::spawn_blocking(move || {
            let result = work(&mut session);
            (session, result)
        })
        .await
        .map_err(|e| StoreError::Database(format!("bulk writer thread: {e}")))?;
        self.session = Some(session);
        result
    }
}

#[async_trait]
impl BulkWriter for SqliteBulk {
    async fn write(&mut self, items: Vec<BulkItem>) -> Result<Vec<BulkOutcome>> {
        let lost = self.pending;
        let written = items.len();
        let due = self.pending + written >= self.commit_every;
        let result = self
            .with_session(move |session| {
                if session.conn.is_autocommit() {
                    session.conn.execute_batch("BEGIN IMMEDIATE")?;
                }
                let result = session
                    .deferral
                    .drop_when_due(&session.conn)
                    .and_then(|()| write_batch(session, &items))
                    .and_then(|outcomes| {
                        let commit = due || session.window.len() >= MAX_WINDOW_ENTITIES;
                        if commit {
                            session.commit()?;
                        }
                        Ok((outcomes, commit))
                    });
                // The batch's many small allocations are freed on another thread: the
                // writer is the import's bottleneck, the parser's core has room.
                tokio::task::spawn_blocking(move || drop(items));
                result.map_err(|e| session.roll_back(e, lost + written))
            })
            .await;
        match result {
            Ok((outcomes, committed)) => {
                self.pending = if committed { 0 } else { self.pending + written };
                if committed && let Some(checkpointer) = &self.checkpointer {
                    checkpointer.wake();
                }
                Ok(outcomes)
            }
            Err(e) => {
                self.pending = 0;
                Err(e)
            }
        }
    }

    async fn finish(&mut self) -> Result<()> {
        let lost = self.pending;
        self.with_session(move |session| {
            if !session.conn.is_autocommit() {
                session.commit().map_err(|e| session.roll_back(e, lost))?;
            }
            Ok(())
        })
        .await?;
        self.pending = 0;
        // The last window's checkpoint runs on the parser's core, idle by now, while this
        // thread builds the indexes; the final checkpoint is then left with the build's pages.
        if let Some(checkpointer) = &self.checkpointer {
            checkpointer.wake();
        }
        self.with_session(Session::build_indexes).await?;
        if let Some(mut checkpointer) = self.checkpointer.take() {
            tokio::task::spawn_blocking(move || checkpointer.finish())
                .await
                .map_err(|e| StoreError::Database(format!("checkpoint thread: {e}")))?;
        }
        Ok(())
    }
}

impl Session {
    /// Writes the window's entities, then commits.
    fn commit(&mut self) -> Result<()> {
        self.window.flush(&self.conn)?;
        self.conn.execute_batch("COMMIT")?;
        Ok(())
    }

    /// Builds the indexes this writer dropped, in a transaction of their own (the rows are
    /// committed already: a failure here leaves them to [`SqliteStore::open`]).
    fn build_indexes(&mut self) -> Result<()> {
        if !self.deferral.owed {
            self.deferral.lock = None;
            return Ok(());
        }
        // SQLite sorts an index's keys in memory up to the page cache's size before it
        // spills sorted runs to temporary files: with the load's 256 MiB cache, a large table's
        // build would add that much to the import's peak memory. The load is over, and the
        // build appends pages in order, so a small cache costs it nothing (measured).
        self.conn
            .execute_batch(&format!("PRAGMA cache_size = -{BUILD_CACHE_KIB}"))?;
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        for (_, ddl) in DEFERRABLE_INDEXES {
            if let Err(e) = self.conn.execute_batch(ddl) {
                let _ = self.conn.execute_batch("ROLLBACK");
                return Err(StoreError::Database(format!(
                    "building push_events' indexes after the import (the events are \
                     stored; opening the database again builds them): {}",
                    StoreError::from(e)
                )));
            }
        }
        self.conn.execute_batch("COMMIT")?;
        self.deferral.dropped = false;
        self.deferral.owed = false;
        // Nothing is missing because of this writer any more.
        self.deferral.lock = None;
        Ok(())
    }

    /// After an error that is not one event's own: nothing since the last commit is kept
    /// (a half-written batch must not be), and the error says so.
    fn roll_back(&mut self, error: StoreError, lost: usize) -> StoreError {
        self.window = EntityWindow::default();
        // A drop in the rolled-back transaction is undone; one committed earlier is not, and
        // dropping again (`IF EXISTS`) is then a no-op. The build stays owed either way.
        self.deferral.dropped = false;
        if !self.conn.is_autocommit()
            && let Err(e) = self.conn.execute_batch("ROLLBACK")
        {
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

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        use rusqlite::ffi;
        if let rusqlite::Error::SqliteFailure(failure, message) = &error {
            let message = redact(&message.clone().unwrap_or_else(|| failure.to_string()));
            return match failure.extended_code {
                ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY => {
                    StoreError::Conflict(message)
                }
                ffi::SQLITE_CONSTRAINT_FOREIGNKEY => StoreError::MissingReference(message),
                code => StoreError::Database(crate::error::with_storage_hint(
                    Some(&code.to_string()),
                    message,
                )),
            };
        }
        StoreError::Database(redact(&error.to_string()))
    }
}

/// Whether a failed statement was refused for its own values, leaving the transaction and
/// every earlier statement intact. SQLite may roll the whole transaction back on the others
/// (I/O, disk full, out of memory), which the writer then reports.
fn refused_alone(error: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode;
    matches!(
        error.sqlite_error_code(),
        Some(ErrorCode::ConstraintViolation | ErrorCode::TooBig | ErrorCode::TypeMismatch)
    )
}

fn push_sql() -> String {
    format!(
        "INSERT INTO push_events ({PUSH_COLUMNS}) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16) \
         ON CONFLICT (github_event_id) DO NOTHING"
    )
}

const RUN_EXISTS_SQL: &str = "SELECT 1 FROM ingestion_runs WHERE id = ?1";

/// One batch within the open transaction: each quarantine and each event one statement.
fn write_batch(session: &mut Session, items: &[BulkItem]) -> Result<Vec<BulkOutcome>> {
    let Session {
        conn,
        window,
        known_runs,
        deferral,
    } = session;
    window.fold.batch += 1;
    let mut quarantine = conn.prepare_cached(QUARANTINE_SQL)?;
    let mut insert = conn.prepare_cached(&push_sql())?;
    let mut outcomes = Vec::with_capacity(items.len());
    for item in items {
        let outcome = match item {
            BulkItem::Quarantine(e) => {
                check_fingerprint(&e.payload_fingerprint)?;
                let raw = e
                    .raw
                    .as_ref()
                    .map(serde_json::to_string)
                    .transpose()
                    .map_err(|err| StoreError::Invalid {
                        field: "raw",
                        problem: err.to_string(),
                    })?;
                let count: i64 = quarantine.query_row(
                    params![
                        e.payload_fingerprint,
                        e.github_event_id,
                        e.event_type,
                        e.error_code,
                        redact(&e.error_message),
                        e.origin.as_str(),
                        ms(e.received_at),
                        raw,
                        e.raw_text,
                    ],
                    |row| row.get("occurrence_count"),
                )?;
                BulkOutcome::Quarantined {
                    occurrence_count: u64::try_from(count).unwrap_or(0),
                }
            }
            BulkItem::Push(push) => {
                let event = &push.event;
                if let Some(run) = event.ingestion_run_id
                    && !known_runs.contains(&run)
                {
                    if conn.prepare_cached(RUN_EXISTS_SQL)?.exists([run])? {
                        known_runs.insert(run);
                    } else {
                        outcomes.push(BulkOutcome::Failed(StoreError::MissingReference(format!(
                            "ingestion run {run} does not exist"
                        ))));
                        continue;
                    }
                }
                let inserted = insert.execute(params![
                    event.github_event_id,
                    event.github_push_id,
                    event.actor.github_id,
                    event.repository.github_id,
                    event.actor.login,
                    event.repository.full_name,
                    event.git_ref,
                    event.head_sha,
                    event.before_sha,
                    event.commit_count,
                    event.distinct_commit_count,
                    ms(event.occurred_at),
                    event.ingestion_run_id,
                    event.origin.as_str(),
                    ms(event.received_at),
                    push.raw_json,
                ]);
                match inserted {
                    Ok(rows) => {
                        let new = rows == 1;
                        window.absorb(event, new);
                        deferral.created += u64::from(new);
                        if new {
                            BulkOutcome::Created
                        } else {
                            BulkOutcome::Duplicate
                        }
                    }
                    Err(e) if refused_alone(&e) && !conn.is_autocommit() => {
                        BulkOutcome::Failed(e.into())
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        };
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StoreRead as _;
    use crate::bulk::BulkPush;
    use crate::model::{ActorRef, EventOrigin, RepositoryRef};
    use headroom_core::clock::Timestamp;

    fn push(id: u64, actor: i64, git_ref: &str) -> BulkItem {
        let at = Timestamp::from_second(1_800_000_000).unwrap_or(Timestamp::UNIX_EPOCH);
        let event = PushEventWrite {
            github_event_id: id.to_string(),
            github_push_id: None,
            actor: ActorRef {
                github_id: actor,
                login: format!("user{actor}"),
                display_login: None,
                url: None,
                avatar_url: None,
            },
            repository: RepositoryRef {
                github_id: 1_000 + actor,
                full_name: format!("org/repo{actor}"),
                url: None,
            },
            git_ref: git_ref.into(),
            head_sha: "a".repeat(40),
            before_sha: Some("b".repeat(40)),
            commit_count: None,
            distinct_commit_count: None,
            occurred_at: at,
            received_at: at,
            ingestion_run_id: None,
            origin: EventOrigin::Gharchive,
            raw: serde_json::json!({"id": id.to_string(), "pad": "x".repeat(2_000)}),
        };
        BulkItem::Push(Box::new(
            BulkPush::new(event).unwrap_or_else(|e| panic!("{e}")),
        ))
    }

    /// A writer without a checkpointer over a fresh, migrated database.
    async fn writer(dir: &tempfile::TempDir) -> (SqliteStore, SqliteBulk) {
        let path = dir.path().join("bulk.db");
        let store = SqliteStore::open(path.to_str().unwrap_or_default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let conn = open_connection(&path).unwrap_or_else(|e| panic!("{e}"));
        let deferral = IndexDeferral::for_table(&conn, ImportLock::try_acquire(&path))
            .unwrap_or_else(|e| panic!("{e}"));
        let bulk = SqliteBulk {
            session: Some(Session {
                conn,
                window: EntityWindow::default(),
                known_runs: HashSet::new(),
                deferral,
            }),
            pending: 0,
            commit_every: BulkOptions::default().commit_every,
            checkpointer: None,
        };
        (store, bulk)
    }

    fn conn(bulk: &SqliteBulk) -> &Connection {
        &bulk.session.as_ref().unwrap_or_else(|| panic!("lost")).conn
    }

    #[tokio::test]
    async fn a_statement_refused_for_its_values_fails_alone() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (store, mut bulk) = writer(&dir).await;
        // Something the validator let through and the database refuses: a trigger stands in.
        conn(&bulk)
            .execute_batch(
                "CREATE TRIGGER refuse BEFORE INSERT ON push_events \
                 WHEN NEW.ref = 'refs/heads/refused' BEGIN SELECT RAISE(ABORT, 'refused'); END;",
            )
            .unwrap_or_else(|e| panic!("{e}"));
        let outcomes = bulk
            .write(vec![
                push(1, 1, "refs/heads/main"),
                push(2, 2, "refs/heads/refused"),
                push(3, 1, "refs/heads/main"),
            ])
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        bulk.finish().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(outcomes[0], BulkOutcome::Created);
        assert!(
            matches!(outcomes[1], BulkOutcome::Failed(_)),
            "{outcomes:?}"
        );
        assert_eq!(outcomes[2], BulkOutcome::Created);
        assert_eq!(store.count_rows("push_events").await.ok(), Some(2));
        // The refused event's actor and repository were not written; the others were.
        assert_eq!(store.actor(2).await.ok(), Some(None));
        assert_eq!(store.repository(1_002).await.ok(), Some(None));
        assert!(matches!(store.actor(1).await, Ok(Some(_))));
        store.close().await;
    }

    #[tokio::test]
    async fn a_failure_midway_through_a_batch_keeps_none_of_it() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (store, mut bulk) = writer(&dir).await;
        let bad = crate::model::QuarantinedEvent {
            payload_fingerprint: "not a fingerprint".into(),
            github_event_id: None,
            event_type: None,
            error_code: "invalid_json".into(),
            error_message: "x".into(),
            origin: EventOrigin::Gharchive,
            received_at: Timestamp::UNIX_EPOCH,
            raw: None,
            raw_text: Some("{".into()),
        };
        let error = bulk
            .write(vec![
                push(1, 1, "refs/heads/main"),
                push(2, 2, "refs/heads/main"),
                BulkItem::Quarantine(Box::new(bad)),
                push(3, 3, "refs/heads/main"),
            ])
            .await
            .err()
            .unwrap_or_else(|| panic!("the bad fingerprint went unnoticed"));
        assert!(
            matches!(error, StoreError::RolledBack { lost: 4, .. }),
            "{error}"
        );
        bulk.finish().await.unwrap_or_else(|e| panic!("{e}"));
        // The two events before the failure were not committed without their entities.
        for table in ["push_events", "actors", "quarantined_events"] {
            assert_eq!(store.count_rows(table).await.ok(), Some(0), "{table}");
        }
        store.close().await;
    }

    #[tokio::test]
    async fn any_other_error_rolls_back_since_the_last_commit_and_says_so() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (store, mut bulk) = writer(&dir).await;
        let first = bulk
            .write(
                (1..=20)
                    .map(|i| push(i, i as i64, "refs/heads/main"))
                    .collect(),
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(first.iter().all(|o| *o == BulkOutcome::Created));
        // The disk fills up during the next batch.
        let pages: i64 = conn(&bulk)
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .unwrap_or_else(|e| panic!("{e}"));
        conn(&bulk)
            .pragma_update(None, "max_page_count", pages + 2)
            .unwrap_or_else(|e| panic!("{e}"));
        let error = bulk
            .write(
                (21..=200)
                    .map(|i| push(i, i as i64, "refs/heads/main"))
                    .collect(),
            )
            .await
            .err()
            .unwrap_or_else(|| panic!("the full disk went unnoticed"));
        let message = error.to_string();
        assert!(
            matches!(error, StoreError::RolledBack { lost: 200, .. }),
            "{message}"
        );
        assert!(message.contains("disk is full"), "{message}");
        bulk.finish().await.unwrap_or_else(|e| panic!("{e}"));
        // Nothing half-written: no events, and no entities without their events.
        for table in ["push_events", "actors", "repositories"] {
            assert_eq!(store.count_rows(table).await.ok(), Some(0), "{table}");
        }
        // The writer goes on once there is room again.
        conn(&bulk)
            .pragma_update(None, "max_page_count", 1_000_000)
            .unwrap_or_else(|e| panic!("{e}"));
        let again = bulk
            .write(vec![push(1, 1, "refs/heads/main")])
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        bulk.finish().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again, vec![BulkOutcome::Created]);
        assert_eq!(store.count_rows("push_events").await.ok(), Some(1));
        assert_eq!(store.count_rows("actors").await.ok(), Some(1));
        store.close().await;
    }

    /// Which of [`DEFERRABLE_INDEXES`] exist, by name.
    fn push_event_indexes(conn: &Connection) -> Vec<String> {
        let mut names: Vec<String> = conn
            .prepare(PUSH_EVENT_INDEXES_SQL)
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .unwrap_or_else(|e| panic!("{e}"));
        names.retain(|n: &String| DEFERRABLE_INDEXES.iter().any(|(d, _)| d == n));
        names.sort();
        names
    }

    fn all_deferrable() -> Vec<String> {
        let mut names: Vec<String> = DEFERRABLE_INDEXES
            .iter()
            .map(|(n, _)| (*n).to_owned())
            .collect();
        names.sort();
        names
    }

    #[tokio::test]
    async fn an_import_into_an_empty_table_builds_the_indexes_at_its_end() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (store, mut bulk) = writer(&dir).await;
        assert_eq!(push_event_indexes(conn(&bulk)), all_deferrable());
        bulk.write(
            (1..=30)
                .map(|i| push(i, i as i64 % 7, "refs/heads/main"))
                .collect(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(push_event_indexes(conn(&bulk)).is_empty());
        bulk.finish().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(push_event_indexes(conn(&bulk)), all_deferrable());
        let integrity: String = conn(&bulk)
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(integrity, "ok");
        // The built indexes hold every row: a query the per-actor index answers finds them.
        let by_actor: i64 = conn(&bulk)
            .query_row(
                "SELECT COUNT(*) FROM push_events INDEXED BY push_events_by_actor \
                 WHERE github_actor_id = 3",
                [],
                |r| r.get(0),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(by_actor, 4);
        store.close().await;
    }

    #[tokio::test]
    async fn a_table_keeps_its_indexes_until_the_import_has_added_as_many_rows() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (store, mut bulk) = writer(&dir).await;
        bulk.write((1..=50).map(|i| push(i, 1, "refs/heads/main")).collect())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        bulk.finish().await.unwrap_or_else(|e| panic!("{e}"));
        drop(bulk);
        // A second import finds 50 rows: it keeps the indexes while it has created fewer.
        let path = dir.path().join("bulk.db");
        let second = open_connection(&path).unwrap_or_else(|e| panic!("{e}"));
        let deferral = IndexDeferral::for_table(&second, ImportLock::try_acquire(&path))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(deferral.existing, 50);
        let mut bulk = SqliteBulk {
            session: Some(Session {
                conn: second,
                window: EntityWindow::default(),
                known_runs: HashSet::new(),
                deferral,
            }),
            pending: 0,
            commit_every: 20,
            checkpointer: None,
        };
        // Duplicates do not count: only rows this import created.
        bulk.write((31..=50).map(|i| push(i, 1, "refs/heads/main")).collect())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        for (batch, present) in [(1u64, true), (2, true), (3, true), (4, false), (5, false)] {
            let first = 1_000 + batch * 20;
            bulk.write(
                (first..first + 20)
                    .map(|i| push(i, 2, "refs/heads/main"))
                    .collect(),
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
            // Batch k starts with 20 (k - 1) rows created: the drop comes at 60 >= 50.
            let expected = if present {
                all_deferrable()
            } else {
                Vec::new()
            };
            assert_eq!(
                push_event_indexes(conn(&bulk)),
                expected,
                "after batch {batch}"
            );
        }
        bulk.finish().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(push_event_indexes(conn(&bulk)), all_deferrable());
        assert_eq!(store.count_rows("push_events").await.ok(), Some(150));
        store.close().await;
    }

    /// A store opened while an import has the indexes dropped leaves them to the import (a
    /// build there would wait on the import's transactions, and the import on it); a second
    /// writer beside it does not defer.
    #[tokio::test]
    async fn an_open_during_an_import_leaves_the_indexes_to_it() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (store, mut bulk) = writer(&dir).await;
        bulk.commit_every = 1;
        bulk.write((1..=10).map(|i| push(i, 1, "refs/heads/main")).collect())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("bulk.db");
        let reader = SqliteStore::open(path.to_str().unwrap_or_default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let indexes: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM sqlite_master WHERE name IN \
             ('push_events_by_actor', 'push_events_by_repository')",
        )
        .fetch_one(reader.pool())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(indexes, 0);
        let beside = open_connection(&path).unwrap_or_else(|e| panic!("{e}"));
        let deferral = IndexDeferral::for_table(&beside, ImportLock::try_acquire(&path))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(deferral.lock.is_none());
        assert_eq!(deferral.existing, u64::MAX);
        // The same file reached through a symlink names the same lock.
        let link = dir.path().join("link.db");
        std::os::unix::fs::symlink(&path, &link).unwrap_or_else(|e| panic!("{e}"));
        assert!(ImportLock::try_acquire(&link).is_none());
        bulk.finish().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(push_event_indexes(conn(&bulk)), all_deferrable());
        // Once the import has ended, its lock is free again.
        assert!(ImportLock::try_acquire(&path).is_some());
        reader.close().await;
        store.close().await;
    }
}
