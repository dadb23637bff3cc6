//! `sync worker`: the passes that wake due organization runs, here and in `headroom run`.

use std::sync::Arc;

use headroom_core::clock::{Clock, SignedDuration, Timestamp};
use headroom_store::Store;
use headroom_sync::{RunOutcome, RunSummary, Runner, SyncError};

use super::progress::JsonProgress;
use super::{env, print_outcome, runner};
use crate::config::Settings;
use crate::outcome::{CliError, CommandResult, Outcome};

/// One look of a worker: every organization run due at `now` — pending, hibernating past its
/// wake time, or running under a claim its dead holder let lapse — runs until it finishes,
/// hibernates or fails, one after the other. `started` hears each run's id before it runs,
/// `report` its outcome. Returns the earliest wake time among the runs it left hibernating.
pub async fn worker_pass(
    runner: &Runner,
    store: &dyn Store,
    now: Timestamp,
    started: &mut (dyn FnMut(i64) + Send),
    report: &mut (dyn FnMut(i64, Result<RunOutcome, SyncError>) + Send),
) -> Result<Option<Timestamp>, headroom_store::StoreError> {
    let due = store.due_sync_runs(now, 10).await?;
    let mut next: Option<Timestamp> = None;
    for run in due.into_iter().filter(|r| r.kind == "org") {
        started(run.id);
        let outcome = runner.run(run.id).await;
        if let Ok(RunOutcome::Hibernating { until, .. }) = &outcome {
            next = Some(next.map_or(*until, |n| n.min(*until)));
        }
        report(run.id, outcome);
    }
    Ok(next)
}

/// Prints a worker's outcome for one run (a JSON line on stdout).
fn print_worker_outcome(id: i64, outcome: Result<RunOutcome, SyncError>) {
    match outcome {
        Ok(RunOutcome::Done { summary }) => print_outcome(id, "done", None, None, &summary),
        Ok(RunOutcome::Failed { reason, summary }) => {
            print_outcome(id, "failed", Some(&reason), None, &summary)
        }
        Ok(RunOutcome::Hibernating { until, .. }) => {
            print_outcome(id, "hibernating", None, Some(until), &RunSummary::default())
        }
        // Held by another worker, or a store error: say so and go on.
        Err(e) => eprintln!("headroom: sync run {id}: {e}"),
    }
}

/// How `sync worker` runs.
pub(super) struct WorkerOptions {
    pub(super) once: bool,
    pub(super) poll_secs: u64,
    pub(super) claim_secs: u64,
    pub(super) rebind: bool,
    pub(super) margin: SignedDuration,
}

pub(super) async fn worker(settings: &Settings, options: WorkerOptions) -> CommandResult {
    let WorkerOptions {
        once,
        poll_secs,
        claim_secs,
        rebind,
        margin,
    } = options;
    let env = env(settings, margin).await?;
    let runner = runner(&env, Arc::new(JsonProgress), claim_secs, rebind);
    let poll = SignedDuration::from_secs(i64::try_from(poll_secs).unwrap_or(15));
    if once {
        crate::retention::prune_once(
            env.store.as_ref(),
            env.recorder.as_ref(),
            &env.clock,
            settings.retention,
        )
        .await;
    }
    let _pruner = (!once).then(|| {
        AbortOnDrop(crate::retention::spawn_pruner(
            env.store.clone(),
            env.recorder.clone(),
            env.clock,
            settings.retention,
        ))
    });
    loop {
        let next = match worker_pass(
            &runner,
            env.store.as_ref(),
            env.clock.now(),
            &mut |_| {},
            &mut print_worker_outcome,
        )
        .await
        {
            Ok(next) => next,
            Err(e) => return Err(CliError::failed(&e)),
        };
        if once {
            return Ok(Outcome::Success);
        }
        // Wake for the earliest hibernation this pass left, or look again after `poll`.
        let wait = next.map_or(poll, |at| {
            at.duration_since(env.clock.now())
                .clamp(SignedDuration::ZERO, poll)
        });
        env.clock.sleep(wait).await;
    }
}

/// Stops a background task when the command returns.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
