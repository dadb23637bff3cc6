//! What a run reports while it works, and where those reports go.

use headroom_core::clock::Timestamp;
use serde::Serialize;

/// What a run reports while it works (progress bars, JSON log lines).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ProgressEvent {
    /// A stage starts or resumes.
    StageStarted {
        /// The run.
        run_id: i64,
        /// The stage.
        stage: String,
        /// Its title.
        title: String,
        /// 1-based position.
        position: usize,
        /// Stages in the graph.
        of: usize,
    },
    /// A page was committed.
    Page {
        /// The run.
        run_id: i64,
        /// The stage.
        stage: String,
        /// The scope (`""` or a repository).
        scope: String,
        /// 1-based repository index, for per-repository stages.
        scope_index: Option<usize>,
        /// Repositories in the run.
        scope_total: Option<usize>,
        /// Pages of this scope so far.
        page: u64,
        /// Rows in this page.
        rows: u64,
    },
    /// A stage finished.
    StageDone {
        /// The run.
        run_id: i64,
        /// The stage.
        stage: String,
    },
    /// A stage stopped on a wait or a transient failure; others may run meanwhile.
    StageDeferred {
        /// The run.
        run_id: i64,
        /// The stage.
        stage: String,
        /// The bucket that closed, if it was a quota wait.
        bucket: Option<String>,
        /// Until when.
        until: Timestamp,
        /// Why.
        reason: String,
    },
    /// A stage failed; its dependents are blocked.
    StageFailed {
        /// The run.
        run_id: i64,
        /// The stage.
        stage: String,
        /// Why.
        reason: String,
    },
    /// A stage is blocked by a failed dependency.
    StageBlocked {
        /// The run.
        run_id: i64,
        /// The stage.
        stage: String,
        /// The failed stage.
        by: String,
    },
    /// Nothing can run for a short while: waiting in-process.
    Pacing {
        /// The run.
        run_id: i64,
        /// Until when.
        until: Timestamp,
        /// The buckets awaited.
        buckets: Vec<String>,
    },
    /// Nothing can run: the run is persisted until `until`.
    Hibernating {
        /// The run.
        run_id: i64,
        /// When a worker wakes it.
        until: Timestamp,
        /// The buckets awaited.
        buckets: Vec<String>,
    },
    /// The run ended.
    Finished {
        /// The run.
        run_id: i64,
        /// `done` or `failed`.
        status: String,
    },
}

/// Where progress goes.
pub trait ProgressSink: Send + Sync {
    /// One event.
    fn event(&self, event: &ProgressEvent);
}

/// A sink that drops everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl ProgressSink for NoProgress {
    fn event(&self, _event: &ProgressEvent) {}
}
