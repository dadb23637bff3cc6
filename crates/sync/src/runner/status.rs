//! Where stages and the run stand: a stage's state read back from its stage-level
//! checkpoint, the summary's status lists, and the run's final outcome.

use headroom_core::clock::Clock;
use headroom_store::{Checkpoint, CheckpointStatus, StoreError, SyncRun, SyncRunStatus};

use super::{ProgressEvent, RunOutcome, Runner, SyncError};
use crate::plan::StageState;
use crate::summary::{RunSummary, StageStatus};

/// Detail prefix of a stage-level checkpoint recorded as failed (the store's checkpoint
/// statuses have no "failed": a failed stage is `blocked` with this detail).
pub(super) const FAILED: &str = "failed: ";
/// Detail prefix of a stage blocked by a failed dependency.
pub(super) const BLOCKED_BY: &str = "blocked by ";

impl Runner {
    pub(super) async fn fill_status_lists(
        &self,
        run_id: i64,
        selection: &[&'static str],
        summary: &mut RunSummary,
    ) -> Result<(), StoreError> {
        let checkpoints = self.store.checkpoints(run_id).await?;
        summary.stages_done.clear();
        summary.stages_blocked.clear();
        summary.stages_deferred.clear();
        summary.stages_failed.clear();
        for name in selection {
            let cp = checkpoints
                .iter()
                .find(|c| c.stage == *name && c.scope.is_empty());
            let state = state_of(cp);
            let detail = match &state {
                StageState::Pending | StageState::Running => None,
                StageState::Done => {
                    summary.stages_done.push((*name).to_owned());
                    None
                }
                StageState::Failed { reason } => {
                    summary.stages_failed.push((*name).to_owned());
                    Some(reason.clone())
                }
                StageState::Blocked { by } => {
                    summary.stages_blocked.push((*name).to_owned());
                    Some(format!("{BLOCKED_BY}{by}"))
                }
                StageState::Deferred { .. } => {
                    summary.stages_deferred.push((*name).to_owned());
                    cp.and_then(|c| c.detail.clone())
                }
            };
            let t = summary.stages.entry((*name).to_owned()).or_default();
            t.status = StageStatus::from(&state);
            t.detail = detail;
        }
        Ok(())
    }

    pub(super) async fn finish(
        &self,
        run: &mut SyncRun,
        summary: &mut RunSummary,
        exhausted: Option<String>,
    ) -> Result<RunOutcome, SyncError> {
        let now = self.clock.now();
        let selection = self.selection(run)?;
        self.fill_status_lists(run.id, &selection, summary).await?;
        if let Some(started) = run.started_at {
            summary.wall_time_ms =
                i64::try_from(now.duration_since(started).as_millis()).unwrap_or(i64::MAX);
        }
        let reason = exhausted.or_else(|| {
            (!summary.stages_failed.is_empty()).then(|| {
                let failed: Vec<String> = summary
                    .stages_failed
                    .iter()
                    .map(|s| {
                        let why = summary
                            .stages
                            .get(s)
                            .and_then(|t| t.detail.clone())
                            .unwrap_or_default();
                        format!("stage {s} failed: {why}")
                    })
                    .collect();
                let mut r = failed.join("; ");
                if !summary.stages_blocked.is_empty() {
                    r.push_str(&format!(
                        "; blocked (carried to the next run): {}",
                        summary.stages_blocked.join(", ")
                    ));
                }
                r
            })
        });
        run.status = if reason.is_some() {
            SyncRunStatus::Failed
        } else {
            SyncRunStatus::Done
        };
        let rows = summary.calibrate_run(true);
        super::log_underestimates(run.id, None, &rows, !summary.estimates.is_empty());
        run.failure_reason = reason.clone();
        run.not_before = None;
        run.finished_at = Some(now);
        run.updated_at = now;
        run.summary = Some(serde_json::to_value(&*summary).unwrap_or_default());
        self.store.save_sync_run(run).await?;
        self.progress.event(&ProgressEvent::Finished {
            run_id: run.id,
            status: run.status.as_str().to_owned(),
        });
        Ok(match reason {
            Some(reason) => RunOutcome::Failed {
                reason,
                summary: Box::new(summary.clone()),
            },
            None => RunOutcome::Done {
                summary: Box::new(summary.clone()),
            },
        })
    }
}

/// A stage's state from its stage-level checkpoint.
pub fn state_of(cp: Option<&Checkpoint>) -> StageState {
    let Some(cp) = cp else {
        return StageState::Pending;
    };
    match cp.status {
        CheckpointStatus::Pending => StageState::Pending,
        CheckpointStatus::Running => StageState::Running,
        CheckpointStatus::Done => StageState::Done,
        CheckpointStatus::Deferred => StageState::Deferred { until: None },
        CheckpointStatus::Blocked => {
            let detail = cp.detail.clone().unwrap_or_default();
            if let Some(reason) = detail.strip_prefix(FAILED) {
                StageState::Failed {
                    reason: reason.to_owned(),
                }
            } else {
                StageState::Blocked {
                    by: detail
                        .strip_prefix(BLOCKED_BY)
                        .unwrap_or(&detail)
                        .to_owned(),
                }
            }
        }
    }
}
