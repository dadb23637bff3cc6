//! Turning envelopes into rows: validation first, quarantine outside any transaction, then the
//! valid PushEvents of a page in one transaction with a savepoint per event (a bad row cannot
//! discard its neighbours). Duplicates are absorbed by the unique GitHub event id, and entity
//! activity moves only when the insert returned a row (the store's `write_push_event`).

use headroom_core::clock::Timestamp;
use headroom_core::telemetry;
use headroom_store::{EventOrigin, PushEventWrite, QuarantinedEvent, Store};
use serde::Serialize;
use serde_json::Value;

use super::FeedError;
use super::canonical::{fingerprint, hex_sha256};
use super::validate::{Rejection, Verdict, identity_hints, validate};

/// What one page (or one import batch) did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PageCounts {
    /// Envelopes received.
    pub events_received: u64,
    /// Envelopes whose type was PushEvent (valid or not).
    pub push_events_seen: u64,
    /// New push_events rows.
    pub events_created: u64,
    /// Valid PushEvents already stored.
    pub duplicates_skipped: u64,
    /// Envelopes quarantined.
    pub events_quarantined: u64,
    /// Other event types, counted and ignored.
    pub events_ignored: u64,
    /// Valid PushEvents the database refused (the rest of the page still committed).
    pub events_failed: u64,
}

impl PageCounts {
    /// Adds another page's counts.
    pub fn add(&mut self, other: &PageCounts) {
        self.events_received += other.events_received;
        self.push_events_seen += other.push_events_seen;
        self.events_created += other.events_created;
        self.duplicates_skipped += other.duplicates_skipped;
        self.events_quarantined += other.events_quarantined;
        self.events_ignored += other.events_ignored;
        self.events_failed += other.events_failed;
    }
}

/// Where envelopes came from and which run is storing them.
#[derive(Debug, Clone)]
pub struct IngestContext {
    /// Feed or archive.
    pub origin: EventOrigin,
    /// The run id for log lines.
    pub run_id: String,
    /// The `ingestion_runs` row, when there is one.
    pub ingestion_run_id: Option<i64>,
}

/// One envelope as received: parsed JSON, or a line that was not JSON.
#[derive(Debug, Clone)]
pub enum Envelope {
    /// Parsed.
    Json(Value),
    /// Not JSON: the text (possibly cut) and the parser's complaint.
    Unparsable {
        /// The line as received (cut to a bounded length).
        text: String,
        /// Why it did not parse.
        error: String,
    },
}

/// An envelope after judgement, ready to write.
#[derive(Debug, Clone)]
pub enum Judged {
    /// A valid PushEvent.
    Push(Box<PushEventWrite>),
    /// Another event type.
    Ignored,
    /// Malformed; `push` says whether its type claimed to be a PushEvent.
    Quarantine {
        /// The row to write.
        event: Box<QuarantinedEvent>,
        /// Whether `type` was `PushEvent`.
        push: bool,
    },
}

/// Judges one envelope (pure: no I/O), stamping it with `received_at`.
pub fn judge(envelope: Envelope, ctx: &IngestContext, received_at: Timestamp) -> Judged {
    match envelope {
        Envelope::Unparsable { text, error } => Judged::Quarantine {
            event: Box::new(QuarantinedEvent {
                payload_fingerprint: hex_sha256(text.as_bytes()),
                github_event_id: None,
                event_type: None,
                error_code: super::validate::ErrorCode::InvalidJson.as_str().to_owned(),
                error_message: format!("the envelope is not JSON: {error}"),
                origin: ctx.origin,
                received_at,
                raw: None,
                raw_text: Some(text),
            }),
            push: false,
        },
        Envelope::Json(value) => match validate(&value) {
            Verdict::Ignored { .. } => Judged::Ignored,
            Verdict::Quarantine(Rejection { code, message }) => {
                let (github_event_id, event_type) = identity_hints(&value);
                let push = event_type.as_deref() == Some("PushEvent");
                Judged::Quarantine {
                    event: Box::new(QuarantinedEvent {
                        payload_fingerprint: fingerprint(&value),
                        github_event_id,
                        event_type,
                        error_code: code.as_str().to_owned(),
                        error_message: message,
                        origin: ctx.origin,
                        received_at,
                        raw: Some(value),
                        raw_text: None,
                    }),
                    push,
                }
            }
            Verdict::Push(valid) => {
                let valid = *valid;
                Judged::Push(Box::new(PushEventWrite {
                    github_event_id: valid.github_event_id,
                    github_push_id: valid.github_push_id,
                    actor: valid.actor,
                    repository: valid.repository,
                    git_ref: valid.git_ref,
                    head_sha: valid.head_sha,
                    before_sha: valid.before_sha,
                    commit_count: valid.commit_count,
                    distinct_commit_count: valid.distinct_commit_count,
                    occurred_at: valid.occurred_at,
                    received_at,
                    ingestion_run_id: ctx.ingestion_run_id,
                    origin: ctx.origin,
                    raw: value,
                }))
            }
        },
    }
}

/// Writes judged envelopes: quarantines first (each its own statement, outside any
/// transaction), then every valid PushEvent in one transaction: the store's page fast path, which falls
/// back to one savepoint per event if any row fails, so a bad row cannot discard its neighbours.
pub async fn write_judged(
    store: &dyn Store,
    judged: Vec<Judged>,
    ctx: &IngestContext,
) -> Result<PageCounts, FeedError> {
    let mut counts = PageCounts::default();
    let mut pushes = Vec::with_capacity(judged.len());
    for item in judged {
        counts.events_received += 1;
        match item {
            Judged::Ignored => {
                counts.events_ignored += 1;
                tracing::debug!(event = telemetry::INGESTION_EVENT_IGNORED, run_id = %ctx.run_id);
            }
            Judged::Quarantine { event, push } => {
                if push {
                    counts.push_events_seen += 1;
                }
                let row = store.quarantine_event(&event).await?;
                counts.events_quarantined += 1;
                tracing::info!(
                    event = telemetry::INGESTION_EVENT_QUARANTINED,
                    run_id = %ctx.run_id,
                    github_event_id = event.github_event_id.as_deref(),
                    event_type = event.event_type.as_deref(),
                    error_code = %event.error_code,
                    error_message = %event.error_message,
                    payload_fingerprint = %event.payload_fingerprint,
                    occurrence_count = row.occurrence_count,
                );
            }
            Judged::Push(write) => {
                counts.push_events_seen += 1;
                pushes.push(*write);
            }
        }
    }
    if pushes.is_empty() {
        return Ok(counts);
    }
    let mut tx = store.begin().await?;
    let outcomes = tx.write_push_events(&pushes).await?;
    for (write, outcome) in pushes.iter().zip(outcomes) {
        match outcome {
            Ok(true) => {
                counts.events_created += 1;
                tracing::debug!(event = telemetry::INGESTION_EVENT_PERSISTED, run_id = %ctx.run_id,
                    github_event_id = %write.github_event_id);
            }
            Ok(false) => {
                counts.duplicates_skipped += 1;
                tracing::debug!(event = telemetry::INGESTION_EVENT_DUPLICATE, run_id = %ctx.run_id,
                    github_event_id = %write.github_event_id);
            }
            Err(e) => {
                counts.events_failed += 1;
                tracing::warn!(event = telemetry::INGESTION_EVENT_FAILED, run_id = %ctx.run_id,
                    github_event_id = %write.github_event_id, error = %e);
            }
        }
    }
    tx.commit().await?;
    Ok(counts)
}

/// Judges and writes one page of parsed envelopes.
pub async fn ingest_page(
    store: &dyn Store,
    envelopes: Vec<Value>,
    ctx: &IngestContext,
    received_at: Timestamp,
) -> Result<PageCounts, FeedError> {
    let judged = envelopes
        .into_iter()
        .map(|v| judge(Envelope::Json(v), ctx, received_at))
        .collect();
    write_judged(store, judged, ctx).await
}
