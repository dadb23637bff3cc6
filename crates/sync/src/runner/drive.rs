//! The drive loop: each pass reads the stages' checkpoints and the buckets' headroom, asks the
//! planner what to do, and starts every stage it names alongside those already running,
//! records a stage's result when it stops, waits or finishes. Stages run concurrently in one
//! task (their futures polled together); a stage runs its repositories concurrently too (see
//! `StageCtx::for_each_repository`), and every request waits for one of the run's in-flight
//! slots, so the run never has more requests in flight than the identity's ceiling.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use headroom_core::QuotaKey;
use headroom_core::clock::{Clock, Timestamp};
use headroom_core::governor::{Headroom, WaitReason};
use headroom_http::ApiError;
use headroom_store::{CheckpointStatus, SyncRun, SyncRunStatus};
use rand::rngs::StdRng;

use super::slots::SlotPool;
use super::stage::StageCtx;
use super::{BLOCKED_BY, FAILED, ProgressEvent, RunOutcome, Runner, StageError, SyncError, lock};
use crate::plan::{Action, BucketView, Snapshot, StageState, plan};
use crate::summary::RunSummary;

/// What every stage running in one drive shares.
pub(super) struct DriveCommon {
    /// The identity whose governor state decides the buckets' headroom.
    pub(super) key: QuotaKey,
    /// The summary the running stages tally into.
    pub(super) shared: Mutex<RunSummary>,
    /// Requests sent per route family in its bucket's current window (keyed by the window's
    /// reset), for the family caps.
    pub(super) family_windows: Mutex<HashMap<String, (Timestamp, u64)>>,
    /// The run's in-flight slots (the identity's ceiling): a request holds one from before
    /// the governor's decision to its answer (within a scope of work, until the answer is
    /// stored), so the run's scopes queue here rather than each polling the governor's
    /// ceiling; the buckets share them (see `SlotPool`).
    pub(super) slots: std::sync::Arc<SlotPool>,
    /// Told when the repository source's listing completes, so that a pass awaiting the
    /// running stages plans again and starts the stages that wait only for the list.
    pub(super) listed: tokio::sync::Notify,
}

/// What the drive loop carries from one pass to the next.
pub(super) struct DriveState<'a> {
    /// What the running stages share.
    pub(super) common: &'a DriveCommon,
    /// The stages this run covers.
    pub(super) selection: Vec<&'static str>,
    /// Draws the deferral jitter.
    pub(super) rng: StdRng,
    /// Pages stored before this wake: a wait after more than these starts a new episode.
    pub(super) pages_at_wake: u64,
    /// Buckets a stage met a quota wait on, until when: closed for the rest of the pass.
    pub(super) closed: HashMap<String, Timestamp>,
    /// Stages put aside after a transient failure, until when.
    pub(super) deferred_until: HashMap<String, Timestamp>,
    /// Why each of them was put aside: a hibernation on them alone says it.
    pub(super) deferred_reasons: HashMap<String, String>,
}

/// The buckets' headroom as one pass sees it.
pub(super) struct PassHeadroom {
    /// Each selected stage's bucket, open or closed until an instant.
    pub(super) buckets: HashMap<String, BucketView>,
    /// Buckets whose primary quota is spent, and when they reopen: a wait for one of these
    /// is a quota window, which no process sleeps through.
    pub(super) exhausted: HashMap<String, Timestamp>,
    /// Buckets held back only by this process's own pacing (points per minute): such a wait
    /// ends within a minute by construction, so it is not a deferral the budget counts.
    pub(super) pacing: HashMap<String, Timestamp>,
    /// The governor's reason, in its words, for each bucket it holds back: what a hibernating
    /// run says it waits for when no stage got as far as deferring a checkpoint.
    pub(super) reasons: HashMap<String, String>,
}

/// How a bucket's headroom reads to the planner. Every slot taken is no reason to keep a
/// stage from starting: its requests queue for the run's slots, and a freed one goes to the
/// bucket holding fewest. Closing the bucket instead left it to whichever pass found a slot
/// free while the other bucket's requests took each one as it freed: in org_makespan's
/// secondary-bound case REST resumed 4-7 s after each of its points-per-minute windows
/// reopened, about 35 s of the run.
fn planner_view(headroom: &Headroom) -> BucketView {
    match headroom {
        Headroom::Open => BucketView::Open,
        Headroom::Closed(wait) if matches!(wait.reason, WaitReason::InFlightCeiling { .. }) => {
            BucketView::Open
        }
        Headroom::Closed(wait) => BucketView::Closed { until: wait.until },
    }
}

/// A running stage: resolves to its name and how it stopped.
type StageRun<'a> = Pin<Box<dyn Future<Output = (String, Result<(), StageError>)> + Send + 'a>>;

/// What a pass leaves the drive loop to do.
enum PassStep<'a> {
    /// Run these stages alongside the running ones (none: plan again at once).
    Start(Vec<(String, StageRun<'a>)>),
    /// Wait for a running stage to stop, or until the instant.
    Await(Option<Timestamp>),
    /// The drive is over.
    Return(RunOutcome),
}

/// Awaits `work` while polling the running stages, keeping the ones that stop in `stopped`.
async fn pump<'a, T>(
    running: &mut FuturesUnordered<StageRun<'a>>,
    stopped: &mut Vec<(String, Result<(), StageError>)>,
    work: impl Future<Output = T>,
) -> T {
    let mut work = std::pin::pin!(work);
    loop {
        tokio::select! {
            biased;
            out = &mut work => return out,
            Some(next) = running.next(), if !running.is_empty() => stopped.push(next),
        }
    }
}

impl Runner {
    pub(super) async fn drive(
        &self,
        run: &mut SyncRun,
        summary: &mut RunSummary,
    ) -> Result<RunOutcome, SyncError> {
        let key = self.identity().await?;
        let selection = self.selection(run)?;
        let now = self.clock.now();
        let mut rng = self.deferral_rng(run);
        if let Some(outcome) = self.continue_chunk(run, summary, &mut rng, now).await? {
            return Ok(outcome);
        }
        let pages_at_wake = self.start_running(run, summary, now).await?;
        let common = DriveCommon {
            key,
            shared: Mutex::new(summary.clone()),
            family_windows: Mutex::new(HashMap::new()),
            slots: SlotPool::new(self.config.in_flight.max(1) as usize),
            listed: tokio::sync::Notify::new(),
        };
        let mut drive = DriveState {
            common: &common,
            selection,
            rng,
            pages_at_wake,
            closed: HashMap::new(),
            deferred_until: HashMap::new(),
            deferred_reasons: HashMap::new(),
        };
        let mut running: FuturesUnordered<StageRun<'_>> = FuturesUnordered::new();
        let mut active = BTreeSet::new();
        let mut stopped = Vec::new();
        loop {
            // The running stages are polled while the pass does its own store work: a stage
            // holding SQLite's write lock must reach its commit while the pass waits for it.
            let finished = std::mem::take(&mut stopped);
            let pass = self.pass(run, summary, &mut drive, &active, finished);
            let step = pump(&mut running, &mut stopped, pass).await?;
            for (stage, _) in &stopped {
                active.remove(stage);
            }
            match step {
                PassStep::Start(started) => {
                    for (stage, work) in started {
                        running.push(work);
                        active.insert(stage);
                    }
                }
                PassStep::Await(_) if !stopped.is_empty() => {}
                PassStep::Await(until) => {
                    let until = until.unwrap_or(Timestamp::MAX);
                    let next = tokio::select! {
                        next = running.next() => next,
                        () = self.clock.sleep_until(until), if until < Timestamp::MAX => None,
                        () = common.listed.notified() => None,
                    };
                    if let Some((stage, result)) = next {
                        active.remove(&stage);
                        stopped.push((stage, result));
                    }
                }
                PassStep::Return(outcome) => return Ok(outcome),
            }
        }
    }

    /// One pass: records the stages that stopped since the last, then plans with the
    /// checkpoints and the buckets' headroom, and starts, awaits, hibernates or finishes.
    async fn pass<'a>(
        &'a self,
        run: &mut SyncRun,
        summary: &mut RunSummary,
        drive: &mut DriveState<'a>,
        active: &BTreeSet<String>,
        stopped: Vec<(String, Result<(), StageError>)>,
    ) -> Result<PassStep<'a>, SyncError> {
        for (stage, result) in stopped {
            self.stage_stopped(run, summary, drive, stage, result)
                .await?;
        }
        let now = self.clock.now();
        self.renew_claim(run.id, now).await?;
        let (stages, listed) = self.pass_states(run.id, drive).await?;
        let headroom = self.pass_headroom(drive, now).await?;
        let snapshot = Snapshot {
            now: Some(now),
            stages,
            buckets: headroom.buckets.clone(),
            active: active.clone(),
            listed,
        };
        let decision = plan(&self.graph, &snapshot);
        self.record_blocked(run.id, &decision.block).await?;
        Ok(match decision.action {
            Action::Run { stages } => {
                let mut started = Vec::with_capacity(stages.len());
                for stage in stages {
                    let work = self.start_stage(run, drive, &stage).await?;
                    started.push((stage, work));
                }
                PassStep::Start(started)
            }
            Action::Await { until } => PassStep::Await(until),
            Action::Hibernate {
                not_before,
                waiting_on,
                ..
            } => match self
                .wait_for(run, summary, drive, &headroom, not_before, waiting_on)
                .await?
            {
                Some(outcome) => PassStep::Return(outcome),
                None => PassStep::Start(Vec::new()),
            },
            Action::Finish => {
                *summary = lock(&drive.common.shared).clone();
                PassStep::Return(self.finish(run, summary, None).await?)
            }
        })
    }

    /// Marks the run running and accounts the hibernation it wakes from; returns the pages
    /// stored so far.
    async fn start_running(
        &self,
        run: &mut SyncRun,
        summary: &mut RunSummary,
        now: Timestamp,
    ) -> Result<u64, SyncError> {
        summary.wake_target = None;
        summary.hibernation_reasons.clear();
        let pages_at_wake = summary.pages();
        if let Some(since) = summary.hibernating_since.take() {
            let slept = now.duration_since(since);
            summary.hibernating_ms += i64::try_from(slept.as_millis()).unwrap_or(i64::MAX);
            run.total_wait += slept;
        }
        run.status = SyncRunStatus::Running;
        run.not_before = None;
        run.started_at.get_or_insert(now);
        run.updated_at = now;
        run.summary = Some(serde_json::to_value(&*summary).unwrap_or_default());
        self.store.save_sync_run(run).await?;
        Ok(pages_at_wake)
    }

    /// The selected stages' states from their checkpoints, with this drive's transient
    /// deferrals laid over them.
    async fn pass_states(
        &self,
        run_id: i64,
        drive: &DriveState<'_>,
    ) -> Result<(HashMap<String, StageState>, BTreeSet<String>), SyncError> {
        let checkpoints = self.store.checkpoints(run_id).await?;
        let mut states = self.stage_states(&drive.selection, &checkpoints);
        // The repository source's listing is complete once its own cursor says so.
        let listed = checkpoints
            .iter()
            .filter(|c| {
                c.scope.is_empty()
                    && Some(c.stage.as_str()) == self.graph.repository_source()
                    && c.page_cursor.as_deref() == Some(crate::graph::LISTED_CURSOR)
            })
            .map(|c| c.stage.clone())
            .collect();
        for (stage, until) in &drive.deferred_until {
            if let Some(s @ StageState::Deferred { .. }) = states.get_mut(stage) {
                *s = StageState::Deferred {
                    until: Some(*until),
                };
            }
        }
        Ok((states, listed))
    }

    /// Each selected stage's bucket as the governor's grant rule sees it, closed further by
    /// the waits stages met in this drive.
    async fn pass_headroom(
        &self,
        drive: &DriveState<'_>,
        now: Timestamp,
    ) -> Result<PassHeadroom, SyncError> {
        let mut pass = PassHeadroom {
            buckets: HashMap::new(),
            exhausted: HashMap::new(),
            pacing: HashMap::new(),
            reasons: HashMap::new(),
        };
        for name in &drive.selection {
            let Some(decl) = self.graph.get(name) else {
                continue;
            };
            if pass.buckets.contains_key(decl.bucket) {
                continue;
            }
            let headroom = self
                .client
                .governor()
                .headroom(
                    &drive.common.key,
                    &decl.bucket(),
                    decl.estimated_cost,
                    decl.request_kind(),
                )
                .await
                .map_err(ApiError::from)?;
            if let Headroom::Closed(wait) = &headroom {
                pass.reasons
                    .insert(decl.bucket.to_owned(), wait.reason.to_string());
                match wait.reason {
                    WaitReason::Exhausted { .. } => {
                        pass.exhausted.insert(decl.bucket.to_owned(), wait.until);
                    }
                    WaitReason::LocalPoints { .. } | WaitReason::WindowStart { .. } => {
                        pass.pacing.insert(decl.bucket.to_owned(), wait.until);
                    }
                    _ => {}
                }
            }
            let mut view = planner_view(&headroom);
            if let Some(until) = drive.closed.get(decl.bucket)
                && *until > now
            {
                view = BucketView::Closed {
                    until: match view {
                        BucketView::Closed { until: g } => g.max(*until),
                        BucketView::Open => *until,
                    },
                };
            }
            pass.buckets.insert(decl.bucket.to_owned(), view);
        }
        Ok(pass)
    }

    /// Records the stages the planner found blocked by a failed dependency.
    async fn record_blocked(
        &self,
        run_id: i64,
        blocked: &[(String, String)],
    ) -> Result<(), SyncError> {
        for (stage, by) in blocked {
            self.set_stage(
                run_id,
                stage,
                CheckpointStatus::Blocked,
                Some(format!("{BLOCKED_BY}{by}")),
            )
            .await?;
            self.progress.event(&ProgressEvent::StageBlocked {
                run_id,
                stage: stage.clone(),
                by: by.clone(),
            });
        }
        Ok(())
    }

    /// Starts one stage (or continues it): marks it running and returns its work, which
    /// borrows only what every running stage shares (it works on its own copy of the run).
    async fn start_stage<'a>(
        &'a self,
        run: &SyncRun,
        drive: &mut DriveState<'a>,
        stage: &str,
    ) -> Result<StageRun<'a>, SyncError> {
        let Some(worker) = self.stages.get(stage).cloned() else {
            return Err(SyncError::Graph(crate::graph::GraphError::UnknownStage(
                stage.to_owned(),
            )));
        };
        let decl = worker.decl().clone();
        drive.deferred_until.remove(stage);
        drive.deferred_reasons.remove(stage);
        self.set_stage(run.id, stage, CheckpointStatus::Running, None)
            .await?;
        self.progress.event(&ProgressEvent::StageStarted {
            run_id: run.id,
            stage: stage.to_owned(),
            title: decl.title.to_owned(),
            position: self.graph.position(stage).unwrap_or(0),
            of: self.graph.stages().len(),
        });
        let common = drive.common;
        let run = run.clone();
        let name = stage.to_owned();
        Ok(Box::pin(async move {
            let ctx = StageCtx {
                run: &run,
                store: self.store.as_ref(),
                client: &self.client,
                credential: self.credential.as_ref(),
                clock: &self.clock,
                decl: &decl,
                repository_source: self.graph.repository_source(),
                summary: &common.shared,
                progress: self.progress.as_ref(),
                repositories: Mutex::new(None),
                holder: &self.config.holder,
                claim: self.config.claim,
                key: &common.key,
                caps: &self.config.caps,
                family_windows: &common.family_windows,
                slots: &common.slots,
                listed: &common.listed,
                inline_wait: self.config.inline_wait,
                scope_concurrency: self.config.in_flight.max(1) as usize,
                awaited: self.graph.is_awaited(&name),
            };
            let result = worker.run(&ctx).await;
            (name, result)
        }))
    }

    /// Records how a stage stopped and saves the run's summary.
    async fn stage_stopped(
        &self,
        run: &mut SyncRun,
        summary: &mut RunSummary,
        drive: &mut DriveState<'_>,
        stage: String,
        result: Result<(), StageError>,
    ) -> Result<(), SyncError> {
        let shared = &drive.common.shared;
        {
            let mut tally = lock(shared);
            let rows = tally.calibrate_stage(&stage, result.is_ok());
            let estimated = !tally.estimates.is_empty();
            super::log_underestimates(run.id, Some(&stage), &rows, estimated);
        }
        if let Err(e) = self.record_stopped(run.id, drive, stage, result).await {
            *summary = lock(shared).clone();
            return Err(e);
        }
        *summary = lock(shared).clone();
        run.summary = Some(serde_json::to_value(&*summary).unwrap_or_default());
        run.updated_at = self.clock.now();
        self.store.save_sync_run(run).await?;
        Ok(())
    }

    /// Records how a stage stopped: done, deferred on a wait or a transient failure, failed.
    /// A store failure stops the run where it is.
    async fn record_stopped(
        &self,
        run_id: i64,
        drive: &mut DriveState<'_>,
        stage: String,
        result: Result<(), StageError>,
    ) -> Result<(), SyncError> {
        match result {
            Ok(()) => {
                self.set_stage(run_id, &stage, CheckpointStatus::Done, None)
                    .await?;
                self.progress
                    .event(&ProgressEvent::StageDone { run_id, stage });
            }
            Err(StageError::Wait {
                until,
                bucket,
                reason,
            }) => {
                drive.closed.insert(bucket.clone(), until);
                // A wait on another bucket than the stage's own (Linear's complexity beside
                // its requests, a Jira endpoint's burst) holds the stage back too: started
                // again at once, it would only meet the same wait.
                if let Some(own) = self.graph.get(&stage).map(|d| d.bucket)
                    && own != bucket
                {
                    let held = drive.closed.entry(own.to_owned()).or_insert(until);
                    *held = (*held).max(until);
                }
                let reason = reason.to_string();
                self.set_stage(
                    run_id,
                    &stage,
                    CheckpointStatus::Deferred,
                    Some(reason.clone()),
                )
                .await?;
                self.progress.event(&ProgressEvent::StageDeferred {
                    run_id,
                    stage,
                    bucket: Some(bucket),
                    until,
                    reason,
                });
            }
            Err(e @ (StageError::Transient(_) | StageError::CredentialRefused(_))) => {
                let retry = match e {
                    StageError::CredentialRefused(_) => self.config.credential_retry,
                    _ => self.config.transient_retry,
                };
                let reason = e.to_string();
                let until = self.clock.now() + retry;
                drive.deferred_until.insert(stage.clone(), until);
                drive.deferred_reasons.insert(stage.clone(), reason.clone());
                self.set_stage(
                    run_id,
                    &stage,
                    CheckpointStatus::Deferred,
                    Some(reason.clone()),
                )
                .await?;
                self.progress.event(&ProgressEvent::StageDeferred {
                    run_id,
                    stage,
                    bucket: None,
                    until,
                    reason,
                });
            }
            Err(StageError::Permanent(reason)) => {
                self.set_stage(
                    run_id,
                    &stage,
                    CheckpointStatus::Blocked,
                    Some(format!("{FAILED}{reason}")),
                )
                .await?;
                self.progress.event(&ProgressEvent::StageFailed {
                    run_id,
                    stage,
                    reason,
                });
            }
            Err(StageError::Store(e)) => return Err(SyncError::Store(e)),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_core::Surface;
    use headroom_core::governor::{PointsLimit, Wait};

    #[test]
    fn only_the_in_flight_ceiling_leaves_a_closed_bucket_open_to_the_planner() {
        let until = Timestamp::from_second(1_800_000_060).expect("valid");
        let closed = |reason| Headroom::Closed(Wait { until, reason });
        assert_eq!(planner_view(&Headroom::Open), BucketView::Open);
        assert_eq!(
            planner_view(&closed(WaitReason::InFlightCeiling {
                in_flight: 10,
                ceiling: 10,
            })),
            BucketView::Open
        );
        assert_eq!(
            planner_view(&closed(WaitReason::LocalPoints {
                surface: Surface::Rest,
                limit: PointsLimit::per_minute(900),
            })),
            BucketView::Closed { until }
        );
    }
}
