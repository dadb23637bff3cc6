//! `headroom import gharchive`: backfilling from GH Archive files through the same validation,
//! quarantine and deduplication path as polling.
//!
//! Streaming, constant memory whatever the file size: a reader thread decompresses, splits
//! lines (each bounded), parses and judges them, and hands batches over a bounded channel to the
//! writer (on an SQLite file, committing every [`ImportOptions::commit_every`] envelopes and at
//! the end; elsewhere, each batch).
//! Parsing and writing overlap on two cores.

use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use headroom_core::clock::{Clock, Timestamp};
use headroom_core::telemetry;
use headroom_store::Store;
use headroom_store::bulk::{BulkItem, BulkOptions, BulkOutcome, BulkPush, BulkWriter};
use serde::Serialize;

use super::FeedError;
use super::array::ArraySplitter;
use super::page::{Envelope, IngestContext, Judged, PageCounts, judge};

/// The longest line accepted (GH Archive lines are at most a few MiB); a longer one is
/// quarantined by its first bytes and skipped without holding it in memory.
pub const MAX_LINE_BYTES: usize = 32 * 1024 * 1024;

/// Envelopes per batch handed from the parser to the writer, each part of a larger commit
/// (larger batches mean fewer round trips). A batch holds about 1 KiB per envelope while
/// queued.
pub const DEFAULT_BATCH: usize = 10_000;

/// How an import groups its writes.
#[derive(Debug, Clone, Copy)]
pub struct ImportOptions {
    /// Envelopes per batch ([`DEFAULT_BATCH`]).
    pub batch: usize,
    /// Envelopes per commit on an SQLite file
    /// ([`headroom_store::bulk::DEFAULT_COMMIT_EVERY`]); a killed import loses at most this
    /// many envelopes' work, which the next run redoes.
    pub commit_every: usize,
    /// Told who holds the database's import turn if the import must wait for it
    /// ([`headroom_store::bulk::BulkOptions::on_wait`]).
    pub on_wait: Option<headroom_store::bulk::WaitNotice>,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            batch: DEFAULT_BATCH,
            commit_every: headroom_store::bulk::DEFAULT_COMMIT_EVERY,
            on_wait: None,
        }
    }
}

impl ImportOptions {
    /// The defaults with another batch size.
    pub fn with_batch(batch: usize) -> Self {
        Self {
            batch,
            ..Self::default()
        }
    }
}

/// Batches parsed ahead of the writer.
const QUEUE_DEPTH: usize = 4;

/// Where an import stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ImportProgress {
    /// Non-blank lines read.
    pub lines: u64,
    /// Bytes read from the input (compressed bytes for a gzip file).
    pub bytes_read: u64,
    /// What the lines did.
    pub counts: PageCounts,
}

/// Opens an input: `-` is stdin; gzip is recognized by its magic bytes (whatever the file is
/// called; GH Archive's concatenated members are read through, and trailing zero padding
/// ignored, as `gzip -d` does), anything else is read as lines of JSON. Returns the reader and the input's size in bytes when known.
pub fn open_input(
    path: &str,
) -> io::Result<(Box<dyn BufRead + Send>, Option<u64>, CountingHandle)> {
    let (raw, size): (Box<dyn Read + Send>, Option<u64>) = if path == "-" {
        (Box::new(io::stdin()), None)
    } else {
        let file = std::fs::File::open(Path::new(path))?;
        let size = file.metadata().ok().map(|m| m.len());
        (Box::new(file), size)
    };
    let counter = CountingHandle::default();
    let counted = CountingReader {
        inner: raw,
        count: counter.clone(),
    };
    let mut buffered = BufReader::with_capacity(256 * 1024, counted);
    let gzip = {
        let head = buffered.fill_buf()?;
        head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b
    };
    let reader: Box<dyn BufRead + Send> = if gzip {
        Box::new(BufReader::with_capacity(
            256 * 1024,
            super::gzip::GzipMembers::new(buffered),
        ))
    } else {
        Box::new(buffered)
    };
    Ok((reader, size, counter))
}

/// Bytes read so far from an input opened by [`open_input`].
#[derive(Debug, Clone, Default)]
pub struct CountingHandle(std::sync::Arc<std::sync::atomic::AtomicU64>);

impl CountingHandle {
    /// Bytes read so far.
    pub fn get(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

struct CountingReader {
    inner: Box<dyn Read + Send>,
    count: CountingHandle,
}

impl Read for CountingReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count
            .0
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// A batch ready for the writer, prepared on the parser's thread.
struct Batch {
    items: Vec<BulkItem>,
    /// One per item, for its log line.
    notes: Vec<Note>,
    /// Received, PushEvents seen and ignored, so far.
    counts: PageCounts,
    lines: u64,
}

impl Batch {
    fn with_capacity(n: usize) -> Self {
        Self {
            items: Vec::with_capacity(n),
            notes: Vec::with_capacity(n),
            counts: PageCounts::default(),
            lines: 0,
        }
    }

    /// Adds a judged envelope, `text` being the line it was parsed from when that is UTF-8:
    /// ignored ones are only counted.
    fn add(&mut self, judged: Judged, text: Option<&str>, ctx: &IngestContext) -> io::Result<()> {
        self.counts.events_received += 1;
        match judged {
            Judged::Ignored => {
                self.counts.events_ignored += 1;
                tracing::debug!(event = telemetry::INGESTION_EVENT_IGNORED, run_id = %ctx.run_id);
            }
            Judged::Quarantine { event, push } => {
                if push {
                    self.counts.push_events_seen += 1;
                }
                self.notes.push(Note::Quarantine {
                    github_event_id: event.github_event_id.clone(),
                    event_type: event.event_type.clone(),
                    error_code: event.error_code.clone(),
                    error_message: event.error_message.clone(),
                    payload_fingerprint: event.payload_fingerprint.clone(),
                });
                self.items.push(BulkItem::Quarantine(event));
            }
            Judged::Push(write) => {
                self.counts.push_events_seen += 1;
                self.notes.push(Note::Push(write.github_event_id.clone()));
                // `text` is missing only for a line that is not UTF-8, which serde_json
                // refuses as well (it checks every string); were one accepted all the same,
                // its event is written out from the tree.
                let push = match text {
                    Some(text) => BulkPush::from_text(*write, text.to_owned()),
                    None => BulkPush::new(*write).map_err(io::Error::other)?,
                };
                self.items.push(BulkItem::Push(Box::new(push)));
            }
        }
        Ok(())
    }

    /// Envelopes in the batch, ignored ones included.
    fn len(&self) -> u64 {
        self.counts.events_received
    }
}

/// Imports one input. `on_progress` is called after every written batch (on an SQLite file a
/// batch is durable at the writer's next commit, at most `options.commit_every` envelopes
/// later).
pub async fn import_reader(
    store: &dyn Store,
    reader: Box<dyn BufRead + Send>,
    bytes: CountingHandle,
    clock: &dyn Clock,
    ctx: &IngestContext,
    options: ImportOptions,
    mut on_progress: impl FnMut(&ImportProgress),
) -> Result<ImportProgress, FeedError> {
    let batch_size = options.batch.max(1);
    let mut writer = store
        .bulk_writer(BulkOptions {
            commit_every: options.commit_every,
            on_wait: options.on_wait,
        })
        .await?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<io::Result<Batch>>(QUEUE_DEPTH);
    let thread_ctx = ctx.clone();
    let parser = std::thread::Builder::new()
        .name("headroom-import-parse".into())
        .spawn(move || parse_lines(reader, &thread_ctx, batch_size, &tx))
        .map_err(FeedError::Read)?;
    let mut progress = ImportProgress::default();
    let mut outcome = Ok(());
    while let Some(batch) = rx.recv().await {
        let batch = match batch {
            Ok(batch) => batch,
            Err(e) => {
                outcome = Err(FeedError::ReadPartway {
                    lines: progress.lines,
                    stored: progress.counts.events_created + progress.counts.events_quarantined,
                    source: e,
                });
                break;
            }
        };
        let lines = batch.lines;
        let batch = stamp(batch, clock.now());
        match write_bulk(writer.as_mut(), batch, ctx).await {
            Ok(counts) => {
                progress.counts.add(&counts);
                progress.lines += lines;
                progress.bytes_read = bytes.get();
                on_progress(&progress);
            }
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
    }
    // Dropping the receiver stops the parser at its next send.
    drop(rx);
    let _ = parser.join();
    // The writer may hold written batches uncommitted; keep them whether or not the import
    // stopped on an error (a failed write already discarded what it could not keep).
    let finished = writer.finish().await.map_err(FeedError::from);
    outcome.and(finished).map(|()| progress)
}

/// What a batch item's log line needs once its outcome is known.
enum Note {
    Push(String),
    Quarantine {
        github_event_id: Option<String>,
        event_type: Option<String>,
        error_code: String,
        error_message: String,
        payload_fingerprint: String,
    },
}

/// Writes one batch through the bulk writer; counts and logs as the page path
/// (`page::write_judged`) does.
async fn write_bulk(
    writer: &mut dyn BulkWriter,
    batch: Batch,
    ctx: &IngestContext,
) -> Result<PageCounts, FeedError> {
    let Batch {
        items,
        notes,
        mut counts,
        ..
    } = batch;
    if items.is_empty() {
        return Ok(counts);
    }
    let outcomes = writer.write(items).await?;
    for (note, outcome) in notes.into_iter().zip(outcomes) {
        match (note, outcome) {
            (
                Note::Quarantine {
                    github_event_id,
                    event_type,
                    error_code,
                    error_message,
                    payload_fingerprint,
                },
                outcome,
            ) => {
                counts.events_quarantined += 1;
                let occurrence_count = match outcome {
                    BulkOutcome::Quarantined { occurrence_count } => occurrence_count,
                    _ => 0,
                };
                tracing::info!(
                    event = telemetry::INGESTION_EVENT_QUARANTINED,
                    run_id = %ctx.run_id,
                    github_event_id = github_event_id.as_deref(),
                    event_type = event_type.as_deref(),
                    error_code = %error_code,
                    error_message = %error_message,
                    payload_fingerprint = %payload_fingerprint,
                    occurrence_count,
                );
            }
            (Note::Push(github_event_id), BulkOutcome::Created) => {
                counts.events_created += 1;
                tracing::debug!(event = telemetry::INGESTION_EVENT_PERSISTED, run_id = %ctx.run_id,
                    github_event_id = %github_event_id);
            }
            (Note::Push(github_event_id), BulkOutcome::Failed(e)) => {
                counts.events_failed += 1;
                tracing::warn!(event = telemetry::INGESTION_EVENT_FAILED, run_id = %ctx.run_id,
                    github_event_id = %github_event_id, error = %e);
            }
            (Note::Push(github_event_id), _) => {
                counts.duplicates_skipped += 1;
                tracing::debug!(event = telemetry::INGESTION_EVENT_DUPLICATE, run_id = %ctx.run_id,
                    github_event_id = %github_event_id);
            }
        }
    }
    Ok(counts)
}

fn stamp(mut batch: Batch, received_at: Timestamp) -> Batch {
    for item in &mut batch.items {
        match item {
            BulkItem::Push(push) => push.event.received_at = received_at,
            BulkItem::Quarantine(event) => event.received_at = received_at,
        }
    }
    batch
}

fn parse_lines(
    mut reader: Box<dyn BufRead + Send>,
    ctx: &IngestContext,
    batch_size: usize,
    tx: &tokio::sync::mpsc::Sender<io::Result<Batch>>,
) {
    let mut line = Vec::with_capacity(64 * 1024);
    let mut batch = Batch::with_capacity(batch_size);
    let mut array_form: Option<bool> = None;
    let mut splitter = ArraySplitter::new(MAX_LINE_BYTES);
    loop {
        line.clear();
        let read = match read_bounded_line(&mut reader, &mut line) {
            Ok(read) => read,
            Err(e) => {
                // Everything parsed before the error is stored; then the error.
                if batch.lines > 0 && tx.blocking_send(Ok(batch)).is_err() {
                    return;
                }
                let _ = tx.blocking_send(Err(e));
                return;
            }
        };
        let Some(overlong) = read else {
            break;
        };
        let mut text: &[u8] = trim(&line);
        // A UTF-8 byte-order mark opens some files written on Windows: it is not the first
        // envelope's first byte.
        if array_form.is_none() {
            text = trim(text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text));
        }
        if text.is_empty() {
            continue;
        }
        // A JSON array (a saved /events response: pretty-printed, one element per line, or
        // on one line) is split into its elements whatever its layout.
        let is_array = *array_form.get_or_insert(text.starts_with(b"["));
        if is_array {
            let mut elements = Vec::new();
            splitter.push(text, &mut |e| elements.push(e));
            for e in elements {
                if !add_envelope(
                    &e.bytes,
                    overlong || e.overlong,
                    &mut batch,
                    ctx,
                    batch_size,
                    tx,
                ) {
                    return;
                }
            }
            continue;
        }
        if !add_envelope(text, overlong, &mut batch, ctx, batch_size, tx) {
            return;
        }
    }
    let mut rest = Vec::new();
    splitter.finish_input(&mut |e| rest.push(e));
    for e in rest {
        if !add_envelope(&e.bytes, e.overlong, &mut batch, ctx, batch_size, tx) {
            return;
        }
    }
    if batch.lines > 0 {
        let _ = tx.blocking_send(Ok(batch));
    }
}

/// Parses one envelope's text into `batch`, sending the batch on when full. False when the
/// import must stop (the receiver is gone, or the batch refused the envelope).
fn add_envelope(
    text: &[u8],
    overlong: bool,
    batch: &mut Batch,
    ctx: &IngestContext,
    batch_size: usize,
    tx: &tokio::sync::mpsc::Sender<io::Result<Batch>>,
) -> bool {
    batch.lines += 1;
    // The text is checked as UTF-8 once, whole, and parsed as text, which spares the parser
    // checking each string on its own. Text that is not UTF-8 is parsed as bytes all the
    // same, for the parser's error naming where it broke.
    let utf8 = std::str::from_utf8(text).ok();
    let parsed = match utf8 {
        _ if overlong => Err(format!("the line is longer than {MAX_LINE_BYTES} bytes")),
        Some(line) => serde_json::from_str(line).map_err(|e| e.to_string()),
        None => serde_json::from_slice(text).map_err(|e| e.to_string()),
    };
    let envelope = match parsed {
        Ok(value) => Envelope::Json(value),
        Err(error) => Envelope::Unparsable {
            text: cut(text),
            error,
        },
    };
    if let Err(e) = batch.add(judge(envelope, ctx, Timestamp::UNIX_EPOCH), utf8, ctx) {
        let _ = tx.blocking_send(Err(e));
        return false;
    }
    if batch.len() >= batch_size as u64 {
        let full = std::mem::replace(batch, Batch::with_capacity(batch_size));
        if tx.blocking_send(Ok(full)).is_err() {
            return false;
        }
    }
    true
}

/// Reads one line into `buf` (without its newline), keeping at most [`MAX_LINE_BYTES`] and
/// discarding the rest. `None` at the end of input, else whether the line was cut.
fn read_bounded_line(reader: &mut dyn BufRead, buf: &mut Vec<u8>) -> io::Result<Option<bool>> {
    let mut any = false;
    let mut overlong = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(any.then_some(overlong));
        }
        any = true;
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        let room = MAX_LINE_BYTES.saturating_sub(buf.len());
        if chunk.len() > room {
            overlong = true;
        }
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = done.unwrap_or(available.len());
        reader.consume(used);
        if done.is_some() {
            return Ok(Some(overlong));
        }
    }
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    &bytes[start..end.max(start)]
}

/// A quarantined line's stored text: at most 64 KiB of it.
fn cut(bytes: &[u8]) -> String {
    const KEEP: usize = 64 * 1024;
    String::from_utf8_lossy(&bytes[..bytes.len().min(KEEP)]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_lines_are_split_and_cut() {
        let data = b"one\n\ntwo\r\nthree";
        let mut reader: &[u8] = data;
        let mut buf = Vec::new();
        let mut seen = Vec::new();
        while let Some(overlong) = read_bounded_line(&mut reader, &mut buf).expect("read") {
            assert!(!overlong);
            seen.push(String::from_utf8(trim(&buf).to_vec()).expect("utf8"));
            buf.clear();
        }
        assert_eq!(seen, ["one", "", "two", "three"]);
    }
}
