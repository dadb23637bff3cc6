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
//! last commit, and importing again skips what was kept. On PostgreSQL the writer is
//! [`postgres`]: the same commit windows on four connections of its own, each batch's pushes
//! sent by binary `COPY` (straight into push_events during a large import, else into a
//! staging table), the window's entities by set-based upserts committed before its events. An
//! in-memory SQLite uses [`TxWriter`], each batch one transaction of its own.

use async_trait::async_trait;

use crate::Store;
use crate::error::{Result, StoreError};
use crate::model::{PushEventWrite, QuarantinedEvent};

mod postgres;
mod sqlite;

pub(crate) use postgres::build_missing as build_missing_pg;

/// Envelopes per commit of a writer that keeps one transaction open across batches, by
/// default (see [`BulkOptions`]).
pub const DEFAULT_COMMIT_EVERY: usize = 250_000;

/// Told, before a writer waits for another import into the same database to end, who that
/// is ("pid 4242 on host db1", or what is known of it), so the caller can say what it waits
/// for.
pub type WaitNotice = fn(&str);

/// How a bulk writer groups its work.
#[derive(Debug, Clone, Copy)]
pub struct BulkOptions {
    /// Envelopes between commits where one transaction spans batches (an SQLite file, and
    /// PostgreSQL): larger is faster, and a killed import loses at most this many envelopes'
    /// work. An in-memory SQLite commits each batch by itself and does not use it.
    pub commit_every: usize,
    /// Called once if the writer must wait for its turn: one writer at a time imports into a
    /// database (see [`import_turn_label`]); `None` waits silently.
    pub on_wait: Option<WaitNotice>,
}

impl Default for BulkOptions {
    fn default() -> Self {
        Self {
            commit_every: DEFAULT_COMMIT_EVERY,
            on_wait: None,
        }
    }
}

/// Who holds an import's turn, as a writer waiting for it is told ([`WaitNotice`]): this
/// process's pid and the machine's name. Concurrent imports of overlapping files made the
/// writers of two processes wait on each other's uncommitted rows across their connections,
/// which no database sees as a deadlock (PostgreSQL: until the idle-in-transaction timeout),
/// or fail one of them; so an import into a database waits until no other runs (a
/// PostgreSQL session advisory lock, an `flock` beside an SQLite file, both released when
/// their holder ends, killed or not) and then finds the other's events as duplicates.
pub(crate) fn import_turn_label() -> String {
    let pid = std::process::id();
    match std::fs::read_to_string("/proc/sys/kernel/hostname") {
        Ok(host) if !host.trim().is_empty() => format!("pid {pid} on host {}", host.trim()),
        _ => format!("pid {pid}"),
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
                outcomes[slot] = Some(outcome_of(result));
            }
        }
        Ok(outcomes
            .into_iter()
            .map(|o| o.unwrap_or(BulkOutcome::Duplicate))
            .collect())
    }
}

fn outcome_of(result: Result<bool>) -> BulkOutcome {
    match result {
        Ok(true) => BulkOutcome::Created,
        Ok(false) => BulkOutcome::Duplicate,
        Err(e) => BulkOutcome::Failed(e),
    }
}
