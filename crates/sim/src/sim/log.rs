//! The request log's line, as kept in memory and written to `--log` as JSON lines.

use std::collections::VecDeque;
use std::fs::File;
use std::io::BufWriter;

use headroom_core::clock::Timestamp;
use serde::Serialize;

/// One line of the request log.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct LogEntry {
    /// When the request was answered, after the simulated latency (RFC 3339, UTC, to the
    /// millisecond).
    pub time: String,
    /// When the request arrived, before the simulated latency: from here to `time` it was in
    /// flight (`scripts/in_flight.py` reads the two).
    pub arrived: String,
    /// The user login, `installation:ID`, or the client IP.
    pub identity: String,
    /// SHA-256 prefix of the token (never the token).
    pub token_fingerprint: Option<String>,
    /// HTTP method.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Status answered.
    pub status: u16,
    /// Primary bucket, when the request reached one.
    pub bucket: Option<String>,
    /// What the request spent from that bucket (0 when it did not count).
    pub cost: u64,
    /// Remaining in the bucket after the request.
    pub remaining: Option<u64>,
    /// Requests of this identity in flight when it started (itself excluded).
    pub in_flight: u32,
    /// The `x-github-request-id` sent.
    pub request_id: String,
    /// `cut` or `stall` when the answer's body met that fault on the wire.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_fault: Option<&'static str>,
}

/// A response's log line, recorded once its body fault is known.
#[derive(Debug, Clone)]
pub(crate) struct PendingLog(pub(crate) LogEntry);

#[derive(Debug)]
pub(super) struct LogState {
    pub(super) entries: VecDeque<LogEntry>,
    pub(super) file: Option<BufWriter<File>>,
}

/// An instant as the log writes it: RFC 3339, UTC, to the millisecond.
pub(crate) fn ts_millis(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}
