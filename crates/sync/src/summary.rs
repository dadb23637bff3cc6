//! What a run did, persisted with the run (so a resumed run adds to it) and printed at the end.

use std::collections::BTreeMap;

use headroom_core::clock::Timestamp;
use serde::{Deserialize, Serialize};

use crate::calibration::{self, CalibrationRow, FamilyActual, FamilyEstimate};
use crate::plan::StageState;

/// Requests and quota seen for one bucket.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketTally {
    /// Requests that got an answer.
    pub requests: u64,
    /// Units spent (GraphQL points as reported; 1 per REST request).
    pub points: u64,
    /// The smallest `remaining` any response reported.
    pub min_remaining: Option<u64>,
    /// Times a stage met a wait on this bucket.
    pub waits: u64,
}

/// Where a stage ended (or stands), as its tally records it: the names of [`StageState`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageStatus {
    /// Totals a stage started counting before the run reported where its stages stand
    /// (the report is filled in when the run hibernates or finishes).
    #[default]
    #[serde(rename = "")]
    Unreported,
    /// Not started.
    Pending,
    /// Started; its checkpoints say where to continue.
    Running,
    /// Finished.
    Done,
    /// Failed for a reason waiting cannot fix.
    Failed,
    /// A dependency failed.
    Blocked,
    /// Stopped by a wait or a transient failure.
    Deferred,
}

impl StageStatus {
    /// The name as the summary and `sync status` spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            StageStatus::Unreported => "",
            StageStatus::Pending => "pending",
            StageStatus::Running => "running",
            StageStatus::Done => "done",
            StageStatus::Failed => "failed",
            StageStatus::Blocked => "blocked",
            StageStatus::Deferred => "deferred",
        }
    }
}

impl From<&StageState> for StageStatus {
    fn from(state: &StageState) -> Self {
        match state {
            StageState::Pending => StageStatus::Pending,
            StageState::Running => StageStatus::Running,
            StageState::Done => StageStatus::Done,
            StageState::Failed { .. } => StageStatus::Failed,
            StageState::Blocked { .. } => StageStatus::Blocked,
            StageState::Deferred { .. } => StageStatus::Deferred,
        }
    }
}

impl std::fmt::Display for StageStatus {
    // `pad`, so a width in the format string (a column of `sync status`) applies.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// One stage's totals.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageTally {
    /// Where it ended (or stands).
    pub status: StageStatus,
    /// Requests answered for it.
    pub requests: u64,
    /// Pages committed.
    pub pages: u64,
    /// Rows committed.
    pub rows: u64,
    /// Why it is blocked, deferred or failed.
    pub detail: Option<String>,
}

/// A field GitHub refused while answering the rest of a query (a partial result: `data`
/// with a null there, and an `errors` entry with its `path`), recorded once per stage,
/// path and kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedField {
    /// The stage that asked.
    pub stage: String,
    /// Where in the response, list indices and aliases' numbers left out
    /// (`organization.membersWithRole`).
    pub path: String,
    /// GitHub's `errors[].type`: `FORBIDDEN`, `NOT_FOUND`, …
    pub kind: String,
    /// GitHub's message, redacted.
    pub message: String,
}

/// Calibration rows (see [`calibration`]): per stage, recomputed when the stage stops, and
/// for the run as a whole, recomputed when the run hibernates or finishes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Per stage, by name.
    pub stages: BTreeMap<String, Vec<CalibrationRow>>,
    /// The whole run: every stage's estimates and actuals summed.
    pub run: Vec<CalibrationRow>,
}

/// The provider's clock against ours, from the `Date` header of the responses a run kept
/// (see `headroom_core::signal::date_skew`): positive when the provider is ahead. An operator
/// reads it to choose a reset margin (`--reset-margin-secs`) smaller than the 60 s default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockSkew {
    /// Responses that carried a readable `Date`.
    pub samples: u64,
    /// The smallest skew seen, in milliseconds.
    pub min_ms: i64,
    /// The largest skew seen, in milliseconds.
    pub max_ms: i64,
    /// The latest response's skew, in milliseconds.
    pub last_ms: i64,
}

impl ClockSkew {
    /// Counts one response's skew.
    pub fn observe(&mut self, skew_ms: i64) {
        if self.samples == 0 {
            (self.min_ms, self.max_ms) = (skew_ms, skew_ms);
        } else {
            self.min_ms = self.min_ms.min(skew_ms);
            self.max_ms = self.max_ms.max(skew_ms);
        }
        self.samples += 1;
        self.last_ms = skew_ms;
    }

    /// The reset margin, in whole seconds, that covers every skew seen. A reset is stamped
    /// by the provider's clock: one behind ours reopens its window that much later than the
    /// stamp reads here (one ahead, sooner, which costs nothing). Readings already lean
    /// behind by `Date`'s truncation and the latency; one second more covers a clock drifting
    /// within the run.
    pub fn covering_margin_secs(&self) -> i64 {
        let behind_ms = self.min_ms.saturating_neg().max(0);
        behind_ms.saturating_add(999) / 1000 + 1
    }
}

/// A run's summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Per stage, in declaration order of the graph (a map sorted by name here).
    pub stages: BTreeMap<String, StageTally>,
    /// Per bucket.
    pub buckets: BTreeMap<String, BucketTally>,
    /// 403/429 answers from the provider that reached a stage: permission refusals, and
    /// secondary limits (the governor then blocks the bucket). The simulator's log is the
    /// exact count; this is what the run itself saw.
    pub responses_403: u64,
    /// Wall time from the run's first start to its end (or to now), in milliseconds.
    pub wall_time_ms: i64,
    /// Time spent hibernating (persisted, no process holding it), in milliseconds.
    pub hibernating_ms: i64,
    /// Short in-process waits (secondary-limit pacing), in milliseconds.
    pub paced_ms: i64,
    /// Hibernations (all of them).
    pub hibernations: u32,
    /// Of those, the ones for this process's own points-per-minute pacing (not counted by
    /// the deferral budget); the others waited for a quota window or a transient failure.
    #[serde(default)]
    pub pacing_hibernations: u32,
    /// Rate-limit deferrals over the whole run (each episode's budget counts its own).
    #[serde(default)]
    pub deferrals: u32,
    /// Episodes of waiting: a wait after a page was stored since the last wake starts one.
    #[serde(default)]
    pub wait_episodes: u32,
    /// When the current hibernation began, while hibernating.
    pub hibernating_since: Option<Timestamp>,
    /// The governor's reasons, in its words, for the buckets the current hibernation waits
    /// for (`core quota exhausted: 10 left, 11 needed to send safely; resets at …`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hibernation_reasons: Vec<String>,
    /// The instant the current hibernation waits for; a long wait is cut into chunks, and a
    /// wake before this instant only schedules the next chunk.
    pub wake_target: Option<Timestamp>,
    /// Stages done.
    pub stages_done: Vec<String>,
    /// Stages blocked by a failed dependency (carried to the next run).
    pub stages_blocked: Vec<String>,
    /// Stages deferred (waiting for quota or after a transient failure).
    pub stages_deferred: Vec<String>,
    /// Stages that failed.
    pub stages_failed: Vec<String>,
    /// Fields GitHub refused in answers the stages kept (missing scopes, SAML enforcement,
    /// entities gone), each (stage, path, kind) once.
    #[serde(default)]
    pub refused: Vec<RefusedField>,
    /// Per stage, what it was estimated to spend per route family before dispatch (the plan
    /// model's, when the run was started with an estimate). Never changed by the actuals.
    #[serde(default)]
    pub estimates: BTreeMap<String, Vec<FamilyEstimate>>,
    /// Per stage, what it was seen to spend per route family and dimension.
    #[serde(default)]
    pub actuals: BTreeMap<String, Vec<FamilyActual>>,
    /// Estimated against actual, from the two above.
    #[serde(default)]
    pub calibration: Calibration,
    /// The provider's clock against ours, over the responses the run kept.
    #[serde(default)]
    pub clock_skew: Option<ClockSkew>,
}

impl RunSummary {
    /// Reads a stored summary, or starts an empty one.
    pub fn from_stored(value: Option<&serde_json::Value>) -> Self {
        value
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }

    /// Pages committed, every stage together.
    pub fn pages(&self) -> u64 {
        self.stages.values().map(|s| s.pages).sum()
    }

    /// Records a refused field, unless the same stage, path and kind is already recorded.
    /// Returns whether it was new.
    pub fn record_refused(&mut self, field: RefusedField) -> bool {
        let known = self
            .refused
            .iter()
            .any(|r| r.stage == field.stage && r.path == field.path && r.kind == field.kind);
        if !known {
            self.refused.push(field);
        }
        !known
    }

    /// Recomputes stage `stage`'s calibration rows (`incomplete` unless `done`) and returns
    /// them.
    pub fn calibrate_stage(&mut self, stage: &str, done: bool) -> Vec<CalibrationRow> {
        let estimates = self.estimates.get(stage).map_or(&[][..], Vec::as_slice);
        let actuals = self.actuals.get(stage).map_or(&[][..], Vec::as_slice);
        let rows = calibration::rows(estimates, actuals, !done);
        if rows.is_empty() {
            self.calibration.stages.remove(stage);
        } else {
            self.calibration
                .stages
                .insert(stage.to_owned(), rows.clone());
        }
        rows
    }

    /// Recomputes every stage's rows and the run's (`finished`: the run is over and every
    /// stage with traffic is done; otherwise the run's rows are incomplete), and returns the
    /// run's.
    pub fn calibrate_run(&mut self, finished: bool) -> Vec<CalibrationRow> {
        let stages: Vec<String> = self.actuals.keys().cloned().collect();
        let done = |s: &String| {
            self.stages
                .get(s)
                .is_some_and(|t| t.status == StageStatus::Done)
        };
        let done: Vec<bool> = stages.iter().map(done).collect();
        for (stage, done) in stages.iter().zip(&done) {
            self.calibrate_stage(stage, *done);
        }
        let all_done = done.iter().all(|d| *d);
        let estimates: Vec<FamilyEstimate> = self.estimates.values().flatten().cloned().collect();
        let actuals: Vec<FamilyActual> = self.actuals.values().flatten().cloned().collect();
        self.calibration.run = calibration::rows(&estimates, &actuals, !(finished && all_done));
        self.calibration.run.clone()
    }

    /// Total requests answered.
    pub fn requests(&self) -> u64 {
        self.buckets.values().map(|b| b.requests).sum()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn clock_skew_keeps_its_range_and_the_margin_covers_the_provider_behind() {
        let mut skew = super::ClockSkew::default();
        for ms in [-300, -1_400, 2_000, -800] {
            skew.observe(ms);
        }
        assert_eq!(
            (skew.samples, skew.min_ms, skew.max_ms, skew.last_ms),
            (4, -1_400, 2_000, -800)
        );
        assert_eq!(
            skew.covering_margin_secs(),
            3,
            "1.4 s behind: 2 s, and 1 more"
        );
        let mut ahead = super::ClockSkew::default();
        ahead.observe(5_000);
        assert_eq!(
            ahead.covering_margin_secs(),
            1,
            "a provider ahead needs no margin"
        );
    }

    use super::*;

    /// A summary as builds with a text `status` stored it: a stage mid-count (empty status),
    /// one done, one deferred with its reason.
    const STORED: &str = r#"{
        "stages": {
            "org": {"status": "done", "requests": 1, "pages": 1, "rows": 1, "detail": null},
            "issues": {"status": "deferred", "requests": 4, "pages": 3, "rows": 90,
                       "detail": "core quota until 2030-01-01T00:00:00Z"},
            "teams": {"status": "", "requests": 2, "pages": 2, "rows": 7, "detail": null}
        },
        "buckets": {"core": {"requests": 7, "points": 7, "min_remaining": 4990, "waits": 1}},
        "responses_403": 0, "wall_time_ms": 1200, "hibernating_ms": 0, "paced_ms": 0,
        "hibernations": 1, "hibernating_since": null, "wake_target": null,
        "stages_done": ["org"], "stages_blocked": [], "stages_deferred": ["issues"],
        "stages_failed": []
    }"#;

    #[test]
    fn a_summary_stored_with_text_statuses_reads_back() {
        let value: serde_json::Value = serde_json::from_str(STORED).expect("json");
        let summary: RunSummary = serde_json::from_value(value.clone()).expect("summary");
        let status = |stage: &str| summary.stages.get(stage).map(|t| t.status);
        assert_eq!(status("org"), Some(StageStatus::Done));
        assert_eq!(status("issues"), Some(StageStatus::Deferred));
        assert_eq!(status("teams"), Some(StageStatus::Unreported));
        assert_eq!(summary.pages(), 6);
        // And it writes the same texts back.
        let written = serde_json::to_value(&summary).expect("write");
        for stage in ["org", "issues", "teams"] {
            assert_eq!(
                written["stages"][stage]["status"],
                value["stages"][stage]["status"]
            );
        }
        assert_eq!(RunSummary::from_stored(Some(&value)), summary);
    }

    #[test]
    fn every_stage_state_has_its_status_name() {
        let states = [
            StageState::Pending,
            StageState::Running,
            StageState::Done,
            StageState::Failed { reason: "x".into() },
            StageState::Blocked { by: "org".into() },
            StageState::Deferred { until: None },
        ];
        for state in &states {
            assert_eq!(StageStatus::from(state).as_str(), state.name());
        }
        assert_eq!(format!("{:<9}|", StageStatus::Done), "done     |");
    }
}
