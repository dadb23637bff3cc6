//! `sync worker`: the passes that wake due sync runs, here and in `headroom run`. A pass runs the
//! runs of one kind with that kind's runner: `sync worker` makes one pass per kind it holds a
//! credential for (GitHub's always, GitLab's when one is configured).

use std::collections::HashMap;
use std::sync::Arc;

use headroom_core::clock::{Clock, SignedDuration, Timestamp};
use headroom_core::telemetry;
use headroom_store::{CredentialBinding, Store, SyncRun};
use headroom_sync::{ProgressSink, RunOutcome, Runner, SyncError};

use super::progress::{JsonProgress, QuietProgress};
use super::report::{self, Format};
use super::unresumed::{self, Hint};
use super::{env, runner};
use crate::config::Settings;
use crate::outcome::{CliError, CommandResult, Outcome};

/// What a worker remembers from one pass to the next: the runs its credential was refused
/// for, with the binding they had then. Such a run stays due (only a resume with the right
/// credential, or a rebind, can go on with it), so without this every pass would claim it and
/// report the same refusal again; it is skipped until its binding changes.
///
/// A refusal is said once, with why and the command that resumes the run (issue 36, item 2):
/// as a warn log line by default (`headroom run`), or kept for the caller to print
/// ([`WorkerMemory::reporting_skips`], `sync worker`).
#[derive(Debug, Default)]
pub struct WorkerMemory {
    refused: HashMap<i64, CredentialBinding>,
    /// The caller prints the skips itself (from `skipped`) instead of a log line.
    report_skips: bool,
    /// The runs refused in the latest pass, with why and the command that resumes them.
    skipped: Vec<(i64, Hint)>,
}

impl WorkerMemory {
    /// Whether `run` was refused to this worker and is bound as it was then.
    fn skips(&self, run: &SyncRun) -> bool {
        self.refused.get(&run.id) == Some(&run.credential)
    }

    /// A memory whose refusals the caller prints (see [`WorkerMemory::take_skipped`]).
    fn reporting_skips() -> Self {
        Self {
            report_skips: true,
            ..Self::default()
        }
    }

    /// The runs refused since the last call, with why and the command that resumes each.
    fn take_skipped(&mut self) -> Vec<(i64, Hint)> {
        std::mem::take(&mut self.skipped)
    }

    /// Notes what running `run` came to; a refusal is said once, here.
    fn note(&mut self, run: &SyncRun, outcome: &Result<RunOutcome, SyncError>) {
        if let Err(SyncError::Credential(refusal)) = outcome {
            self.refused.insert(run.id, run.credential.clone());
            let hint = unresumed::refused(run, refusal);
            if self.report_skips {
                self.skipped.push((run.id, hint));
            } else {
                tracing::warn!(
                    event = telemetry::SYNC_RUN_SKIPPED,
                    run_id = run.id,
                    error = %format!(
                        "this worker cannot resume it: {}; resume it with {}",
                        hint.why, hint.command
                    ),
                    "A due sync run is bound to a credential this worker does not hold."
                );
            }
        } else {
            self.refused.remove(&run.id);
        }
    }

    /// Forgets the runs no longer due (finished, or taken over by a rebind elsewhere).
    fn keep_only(&mut self, due: &[SyncRun]) {
        self.refused.retain(|id, _| due.iter().any(|r| r.id == *id));
    }
}

/// One look of a worker: every run of `kind` due at `now` — pending, hibernating past its
/// wake time, or running under a claim its dead holder let lapse — runs until it finishes,
/// hibernates or fails, one after the other; a run refused to this worker's credential in an
/// earlier pass is skipped (see [`WorkerMemory`]). `started` hears each run's id before it runs,
/// `report` its outcome. Returns the earliest wake time among the runs it left hibernating.
pub async fn worker_pass(
    kind: super::SyncKind,
    runner: &Runner,
    store: &dyn Store,
    now: Timestamp,
    memory: &mut WorkerMemory,
    started: &mut (dyn FnMut(i64) + Send),
    report: &mut (dyn FnMut(i64, Result<RunOutcome, SyncError>) + Send),
) -> Result<Option<Timestamp>, headroom_store::StoreError> {
    let due: Vec<SyncRun> = store
        .due_sync_runs(now, 10)
        .await?
        .into_iter()
        .filter(|r| r.kind == kind.as_str())
        .collect();
    memory.keep_only(&due);
    let mut next: Option<Timestamp> = None;
    let runnable: Vec<&SyncRun> = due.iter().filter(|r| !memory.skips(r)).collect();
    for run in runnable {
        started(run.id);
        let outcome = runner.run(run.id).await;
        if let Ok(RunOutcome::Hibernating { until, .. }) = &outcome {
            next = Some(next.map_or(*until, |n| n.min(*until)));
        }
        memory.note(run, &outcome);
        report(run.id, outcome);
    }
    Ok(next)
}

/// Prints a worker's outcome for one run on stdout (text, or a JSON line).
fn print_worker_outcome(
    format: Format,
    now: Timestamp,
    id: i64,
    outcome: Result<RunOutcome, SyncError>,
) {
    match outcome {
        Ok(RunOutcome::Done { summary }) => report::outcome(format, id, "done", None, &summary),
        Ok(RunOutcome::Failed { reason, summary }) => {
            report::outcome(format, id, "failed", Some(&reason), &summary)
        }
        Ok(RunOutcome::Hibernating { until, reason }) => {
            report::hibernating(format, id, None, until, &reason, false, now)
        }
        // Said with its command once the pass is over (see `WorkerMemory`).
        Err(SyncError::Credential(_)) => {}
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
    pub(super) format: Format,
}

pub(super) async fn worker(settings: &Settings, options: WorkerOptions) -> CommandResult {
    let WorkerOptions {
        once,
        poll_secs,
        claim_secs,
        rebind,
        margin,
        format,
    } = options;
    let env = env(settings, margin, super::SyncKind::Org).await?;
    let progress: Arc<dyn ProgressSink> = match format {
        Format::Json => Arc::new(JsonProgress),
        Format::Text => Arc::new(QuietProgress),
    };
    let mut runners = vec![(
        super::SyncKind::Org,
        runner(&env, progress.clone(), claim_secs, rebind),
    )];
    // GitLab's, Jira's and Linear's runs go through their provider's door, with its
    // credential, when one is configured.
    for kind in super::SyncKind::OTHERS {
        if let Some(provider) = super::configured_for(settings, kind) {
            let provider_env = super::env(&provider, margin, kind).await?;
            runners.push((
                kind,
                runner(&provider_env, progress.clone(), claim_secs, rebind),
            ));
        }
    }
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
    let mut memory = WorkerMemory::reporting_skips();
    loop {
        let mut ran = 0u32;
        let mut next: Option<Timestamp> = None;
        for (kind, runner) in &runners {
            let woke = worker_pass(
                *kind,
                runner,
                env.store.as_ref(),
                env.clock.now(),
                &mut memory,
                &mut |_| ran += 1,
                &mut |id, outcome| print_worker_outcome(format, env.clock.now(), id, outcome),
            )
            .await
            .map_err(|e| CliError::failed(&e))?;
            next = match (next, woke) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        for (id, hint) in memory.take_skipped() {
            report::skipped(format, id, &hint.why, &hint.command);
        }
        if once {
            if ran == 0 && format == Format::Text {
                outln!("no sync run was due");
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_sync::CredentialRefusal;

    fn run(id: i64, fingerprint: &str) -> SyncRun {
        let json = serde_json::json!({
            "id": id, "kind": "org", "target": "acme", "host": "api.github.com",
            "subject": "user:alice", "status": "pending", "requested_stages": null,
            "not_before": null, "deferral_count": 0, "first_deferred_at": null,
            "total_wait": "PT0S", "failure_reason": null, "summary": null, "claimed_by": null,
            "claim_expires_at": null, "created_at": "2026-12-03T00:00:00Z", "started_at": null,
            "finished_at": null, "updated_at": "2026-12-03T00:00:00Z",
            "credential": {"fingerprint": fingerprint, "owner": "user:alice",
                "rebound_from": null, "rebound_at": null, "rebind_count": 0}
        });
        serde_json::from_value(json).expect("a sync run")
    }

    fn refused() -> Result<RunOutcome, SyncError> {
        Err(SyncError::Credential(CredentialRefusal::OtherCredential {
            run: 7,
            bound: "aaaa".into(),
            presented: "bbbb".into(),
            owner: "user:alice".into(),
        }))
    }

    #[test]
    fn a_refused_run_is_skipped_until_its_binding_changes_or_it_is_no_longer_due() {
        let mut memory = WorkerMemory::default();
        let bound = run(7, "aaaa");
        assert!(!memory.skips(&bound), "never tried");
        memory.note(&bound, &refused());
        assert!(memory.skips(&bound), "the same binding: the same refusal");
        assert!(!memory.skips(&run(8, "aaaa")), "another run");
        // Rebound elsewhere: this worker's credential may fit it now.
        assert!(!memory.skips(&run(7, "cccc")));
        // Any other outcome forgets the refusal.
        memory.note(&bound, &Err(SyncError::Claimed(7)));
        assert!(!memory.skips(&bound));
        memory.note(&bound, &refused());
        memory.keep_only(&[run(8, "aaaa")]);
        assert!(!memory.skips(&bound), "finished runs are forgotten");
    }
}
