//! Waiting: a short pacing wait taken in-process, a longer one persisted as hibernation, the
//! deferral budgets that bound an episode of waiting, and the claim that keeps a run with its
//! worker meanwhile.

use std::collections::HashMap;

use headroom_core::QuotaKey;
use headroom_core::clock::{Clock, SignedDuration, Timestamp};
use headroom_core::deferral::{DeferralPlan, DeferralState};
use headroom_core::telemetry;
use headroom_store::{ObservationKind, RateLimitObservation, SyncRun, SyncRunStatus};
use rand::SeedableRng as _;
use rand::rngs::StdRng;

use super::drive::{DriveState, PassHeadroom};
use super::{ProgressEvent, RunOutcome, Runner, SyncError, lock};
use crate::summary::RunSummary;

impl Runner {
    /// The jitter source of one drive, fixed by the run and how often it was deferred.
    pub(super) fn deferral_rng(&self, run: &SyncRun) -> StdRng {
        StdRng::seed_from_u64(
            self.config.jitter_seed
                ^ u64::try_from(run.id).unwrap_or(0)
                ^ u64::from(run.deferral_count),
        )
    }

    /// The jitter of a wake for `target` planned at `now` (at the chunk's end or the target):
    /// none when no other run is due by then (a run waking alone gains nothing from being
    /// spread), else a draw from `rng` (drawn from either way, so a run's sequence does not
    /// depend on its neighbours). A failed read spreads, as if others woke too.
    async fn wake_jitter(
        &self,
        run_id: i64,
        rng: &mut StdRng,
        now: Timestamp,
        target: Timestamp,
    ) -> SignedDuration {
        let budget = &self.config.deferral;
        let drawn = budget.draw_jitter(rng);
        let wake = now
            .checked_add(budget.max_chunk)
            .unwrap_or(Timestamp::MAX)
            .min(target);
        let horizon = wake
            .checked_add(budget.max_jitter)
            .unwrap_or(Timestamp::MAX);
        let others = match self.store.due_sync_runs(horizon, 2).await {
            Ok(runs) => runs.iter().filter(|r| r.id != run_id).count(),
            // The wake is spread as if others woke too: the safe side of a failed read.
            Err(_) => 1,
        };
        budget.wake_jitter(drawn, others)
    }

    /// Renews the claim: a long run keeps its worker.
    pub(super) async fn renew_claim(&self, run_id: i64, now: Timestamp) -> Result<(), SyncError> {
        self.store
            .claim_sync_run(run_id, &self.config.holder, now, now + self.config.claim)
            .await?;
        Ok(())
    }

    /// Woken at a chunk boundary of a long wait: schedules the next chunk (this does not
    /// count as a deferral and runs nothing), or fails the run if the budget is spent.
    /// `None` when the wait is over and the run should be driven.
    pub(super) async fn continue_chunk(
        &self,
        run: &mut SyncRun,
        summary: &mut RunSummary,
        rng: &mut StdRng,
        now: Timestamp,
    ) -> Result<Option<RunOutcome>, SyncError> {
        let Some(target) = summary.wake_target.filter(|target| now < *target) else {
            return Ok(None);
        };
        let state = DeferralState {
            deferrals: run.deferral_count,
            first_deferred_at: run.first_deferred_at,
        };
        let jitter = self.wake_jitter(run.id, rng, now, target).await;
        match self
            .config
            .deferral
            .continue_chunk(state, now, target, jitter)
        {
            DeferralPlan::Defer { run_at, state, .. } => {
                run.status = SyncRunStatus::Hibernating;
                run.not_before = Some(run_at);
                run.first_deferred_at = state.first_deferred_at;
                run.updated_at = now;
                self.store.save_sync_run(run).await?;
                Ok(Some(RunOutcome::Hibernating {
                    until: run_at,
                    reason: format!("continuing a wait until {target}"),
                }))
            }
            DeferralPlan::Exhausted(why) => {
                summary.wake_target = None;
                self.finish(run, summary, Some(why.to_string()))
                    .await
                    .map(Some)
            }
        }
    }

    /// Nothing can run before `not_before`: pace in-process if the wait is short and not a
    /// quota window (`None`: drive on), else hibernate the run, spending deferral budget
    /// unless the wait is only this process's own pacing.
    pub(super) async fn wait_for(
        &self,
        run: &mut SyncRun,
        summary: &mut RunSummary,
        drive: &mut DriveState<'_>,
        headroom: &PassHeadroom,
        not_before: Timestamp,
        waiting_on: Vec<String>,
    ) -> Result<Option<RunOutcome>, SyncError> {
        let now = self.clock.now();
        let window = wakes_for(&waiting_on, &headroom.exhausted, not_before);
        // What the governor said of each bucket waited on, kept with the run while it sleeps.
        let held_by: Vec<String> = waiting_on
            .iter()
            .filter_map(|bucket| headroom.reasons.get(bucket).cloned())
            .collect();
        if !window && not_before.duration_since(now) <= self.config.inline_wait {
            self.pace(run.id, drive, now, not_before, waiting_on)
                .await?;
            return Ok(None);
        }
        *summary = lock(&drive.common.shared).clone();
        summary.hibernation_reasons = held_by;
        if !window && wakes_for(&waiting_on, &headroom.pacing, not_before) {
            // Our own pacing: hibernate (the run is persisted, the claim released), but
            // spend no deferral budget on a minute's limiter.
            summary.wake_target = None;
            summary.pacing_hibernations += 1;
            let why = format!("pacing {} (points per minute)", waiting_on.join(", "));
            return self
                .hibernate(run, summary, drive, now, not_before, waiting_on, why)
                .await
                .map(Some);
        }
        self.defer(run, summary, drive, now, not_before, waiting_on)
            .await
            .map(Some)
    }

    /// Sleeps in-process until `not_before`, holding the claim for that long.
    async fn pace(
        &self,
        run_id: i64,
        drive: &mut DriveState<'_>,
        now: Timestamp,
        not_before: Timestamp,
        waiting_on: Vec<String>,
    ) -> Result<(), SyncError> {
        self.progress.event(&ProgressEvent::Pacing {
            run_id,
            until: not_before,
            buckets: waiting_on,
        });
        self.store
            .claim_sync_run(
                run_id,
                &self.config.holder,
                now,
                not_before + self.config.claim,
            )
            .await?;
        self.clock.sleep_until(not_before).await;
        let waited = self.clock.now().duration_since(now);
        lock(&drive.common.shared).paced_ms +=
            i64::try_from(waited.as_millis()).unwrap_or(i64::MAX);
        drive.closed.retain(|_, until| *until > self.clock.now());
        Ok(())
    }

    /// Hibernates the run for a quota wait, counted against the deferral budgets; fails it
    /// when they are spent.
    async fn defer(
        &self,
        run: &mut SyncRun,
        summary: &mut RunSummary,
        drive: &mut DriveState<'_>,
        now: Timestamp,
        not_before: Timestamp,
        waiting_on: Vec<String>,
    ) -> Result<RunOutcome, SyncError> {
        // Budgets bound one episode of waiting: a wait after a page was stored since the
        // last wake starts a new one.
        let progressed = summary.pages() > drive.pages_at_wake;
        let state = DeferralState {
            deferrals: run.deferral_count,
            first_deferred_at: run.first_deferred_at,
        }
        .for_next_wait(progressed);
        let jitter = self
            .wake_jitter(run.id, &mut drive.rng, now, not_before)
            .await;
        match self.config.deferral.defer(state, now, not_before, jitter) {
            DeferralPlan::Exhausted(why) => {
                let reason = why.to_string();
                self.finish(run, summary, Some(reason)).await
            }
            DeferralPlan::Defer {
                run_at,
                state,
                not_before,
            } => {
                summary.wake_target = Some(not_before);
                summary.deferrals += 1;
                if state.deferrals == 1 {
                    summary.wait_episodes += 1;
                }
                run.deferral_count = state.deferrals;
                run.first_deferred_at = state.first_deferred_at;
                let why = if waiting_on.is_empty() {
                    deferred_stages(&drive.deferred_reasons)
                } else {
                    format!("waiting for {} to reopen", waiting_on.join(", "))
                };
                self.hibernate(run, summary, drive, now, run_at, waiting_on, why)
                    .await
            }
        }
    }

    /// Persists the run as hibernating until `until` (a worker, or the command's hold,
    /// wakes it then).
    #[allow(clippy::too_many_arguments)]
    async fn hibernate(
        &self,
        run: &mut SyncRun,
        summary: &mut RunSummary,
        drive: &DriveState<'_>,
        now: Timestamp,
        until: Timestamp,
        waiting_on: Vec<String>,
        reason: String,
    ) -> Result<RunOutcome, SyncError> {
        run.status = SyncRunStatus::Hibernating;
        run.not_before = Some(until);
        summary.hibernations += 1;
        summary.hibernating_since = Some(now);
        self.fill_status_lists(run.id, &drive.selection, summary)
            .await?;
        // The run so far (incomplete); its underestimates are logged when it finishes.
        summary.calibrate_run(false);
        run.summary = Some(serde_json::to_value(&*summary).unwrap_or_default());
        run.updated_at = now;
        self.store.save_sync_run(run).await?;
        self.record_hibernation(run.id, &drive.common.key, now, until, &waiting_on)
            .await;
        self.progress.event(&ProgressEvent::Hibernating {
            run_id: run.id,
            until,
            buckets: waiting_on.clone(),
        });
        Ok(RunOutcome::Hibernating { until, reason })
    }
}

impl Runner {
    /// One `hibernated` observation per bucket awaited (one without a bucket when the wait
    /// names none), so every process on the database sees which work sleeps until when. A
    /// failed write is logged; it never fails the run.
    async fn record_hibernation(
        &self,
        run_id: i64,
        key: &QuotaKey,
        now: Timestamp,
        until: Timestamp,
        buckets: &[String],
    ) {
        let buckets: Vec<Option<String>> = if buckets.is_empty() {
            vec![None]
        } else {
            buckets.iter().cloned().map(Some).collect()
        };
        for bucket in buckets {
            let observation = RateLimitObservation {
                provider: self.client.provider(),
                key: key.clone(),
                credential_fingerprint: self
                    .credential
                    .as_ref()
                    .map(|c| c.fingerprint().to_owned()),
                sync_run_id: Some(run_id),
                bucket,
                route_family: None,
                route_family_attribution: None,
                dimension: None,
                reason: None,
                retry_after: None,
                reset_at: Some(until),
                limit: None,
                remaining: None,
                used: None,
                request_id: None,
                observed_at: now,
                event_kind: Some(ObservationKind::Hibernated),
                wait_reason: None,
            };
            if let Err(e) = self.store.record_rate_limit_observation(&observation).await {
                tracing::warn!(
                    event = telemetry::STORE_WRITE_FAILED,
                    error = %e,
                    "Could not record a hibernation."
                );
            }
        }
    }
}

/// Whether waking at `not_before` is for one of `buckets` (a bucket awaited that reopens by
/// then). With the exhausted buckets, this says the wait is for a primary window to reset;
/// pacing that ends sooner does not make it one — some stage can run after it.
fn wakes_for(
    waiting_on: &[String],
    buckets: &HashMap<String, Timestamp>,
    not_before: Timestamp,
) -> bool {
    waiting_on
        .iter()
        .any(|b| buckets.get(b).is_some_and(|reopens| *reopens <= not_before))
}

/// A wait on stages put aside (a transient failure, a refused token) rather than on a bucket:
/// the stages and why, so that the person reading it knows what to do.
fn deferred_stages(reasons: &std::collections::HashMap<String, String>) -> String {
    let mut why: Vec<String> = reasons
        .iter()
        .map(|(stage, reason)| format!("{stage}: {reason}"))
        .collect();
    if why.is_empty() {
        return "waiting for deferred stages to reopen".to_owned();
    }
    why.sort();
    format!("waiting for deferred stages to reopen ({})", why.join("; "))
}
