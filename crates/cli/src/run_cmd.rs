//! `headroom run`: the continuous feed service of `headroom_github::feed::service` — a poll
//! tick (default 60 s) that polls the source when it is due, followed by an enrichment cycle,
//! and a reconciler (default every 60 s, and once at start) that rebuilds pending work from
//! committed rows after a crash and dispatches a cycle when work is claimable. Stops on SIGINT
//! or SIGTERM between steps.
//! Beside the loop it serves the read-only HTTP API of headroom-server on `--listen` (default
//! 127.0.0.1:3000; `--no-listen` for none), stopped gracefully with the loop, and it is a
//! worker of organization sync: a task wakes hibernated `headroom sync org` runs when their
//! time comes (and takes up pending runs and runs a dead holder abandoned), through the same
//! client — so the same governor per identity — as the poller.

use headroom_core::words::counted;
use std::future::Future;
use std::sync::{Arc, Mutex};

use clap::Args;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::telemetry;
use headroom_github::feed::enrich::Enricher;
use headroom_github::feed::service::{FeedService, ServiceHooks, ServiceSettings, StepReport};
use headroom_store::Store;
use headroom_sync::{ProgressEvent, ProgressSink, RunOutcome, Runner, SyncError};
use tokio::task::JoinHandle;

use crate::config::GlobalArgs;
use crate::enrich_cmd::EnrichTuning;
use crate::ingest_cmd::{FeedArgs, poller};
use crate::outcome::{CliError, CommandResult, Outcome};

/// `headroom run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Seconds between ticks.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    tick_secs: u64,
    /// Stop after this many ticks (default: run until stopped), exiting 1 when a step failed
    /// (a poll attempt, an enrichment cycle or a sweep; a deferral is no failure).
    #[arg(long)]
    ticks: Option<u64>,
    /// Minimum seconds between search requests (0 disables pacing).
    #[arg(long, env = "SEARCH_PACING_SECONDS", default_value_t = 6)]
    search_pacing: u64,
    /// Seconds between reconciler sweeps.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    reconcile_secs: u64,
    #[command(flatten)]
    tuning: EnrichTuning,
    #[command(flatten)]
    feed: FeedArgs,
    #[command(flatten)]
    http: crate::serve::ListenArgs,
    #[command(flatten)]
    sync: SyncWorkerArgs,
}

/// The organization-sync worker inside `headroom run`.
#[derive(Debug, Args)]
struct SyncWorkerArgs {
    /// Seconds between looks for organization sync runs that are due (hibernated runs whose
    /// wake time has come are also woken at that time).
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=3600))]
    sync_poll_secs: u64,
    /// Seconds a killed service keeps its claim on a sync run before another worker may
    /// resume it (one killed on the same machine and pid namespace frees it at once).
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    sync_claim_secs: u64,
    /// Do not run organization sync here (another process runs `headroom sync worker`).
    #[arg(long)]
    no_sync: bool,
}

/// Runs `headroom run`.
pub async fn run(global: &GlobalArgs, args: RunArgs) -> CommandResult {
    let (poller, resolved, opened) = poller(global, &args.feed).await?;
    let settings = args
        .tuning
        .settings(args.feed.enrichment_lease(), args.search_pacing);
    let enricher = Enricher::new(poller.clone(), settings);
    let secs = |s: u64| SignedDuration::from_secs(i64::try_from(s).unwrap_or(60));
    let service = FeedService::new(
        enricher,
        ServiceSettings {
            tick: secs(args.tick_secs),
            reconcile_every: secs(args.reconcile_secs),
            ticks: args.ticks,
        },
    );
    let server = match start_server(&args, &resolved, &service.enricher).await {
        Ok(server) => server,
        Err(e) => {
            poller.store.close().await;
            return Err(e);
        }
    };
    let sync = if args.sync.no_sync {
        None
    } else {
        match SyncWorker::start(
            &poller,
            &resolved,
            &opened,
            &args.sync,
            args.feed.margin.get(),
        )
        .await
        {
            Ok(worker) => Some(worker),
            Err(e) => {
                poller.store.close().await;
                return Err(e);
            }
        }
    };
    let pruner = crate::retention::spawn_pruner(
        poller.store.clone(),
        opened.sinks.recorder().clone(),
        poller.clock,
        resolved.retention,
    );
    let mut failures = FailedSteps::default();
    let done = service
        .run(&mut failures, crate::signals::stop_requested())
        .await;
    pruner.abort();
    if let Some(server) = server {
        server.stop().await;
    }
    if let Some(sync) = sync {
        sync.stop().await;
    }
    tracing::info!(event = telemetry::SERVICE_STOPPED, ticks = done);
    poller.store.close().await;
    // A bounded run is an attempt like `ingest`: a step that failed (not one deferred) fails
    // it. A service run until stopped reports its failures in its log and exits 0.
    if args.ticks.is_some() && failures.0 > 0 {
        outln!(
            "headroom run: stopped after {}; {} failed (see the log)",
            counted(done, "tick", "ticks"),
            counted(failures.0, "step", "steps")
        );
        return Ok(Outcome::Unsuccessful);
    }
    outln!(
        "headroom run: stopped after {}",
        counted(done, "tick", "ticks")
    );
    Ok(Outcome::Success)
}

/// Counts the loop's steps that failed (a sweep, a poll attempt or an enrichment cycle; each
/// failure is logged where it happens).
#[derive(Debug, Default)]
struct FailedSteps(u64);

impl ServiceHooks for FailedSteps {
    fn after_step(&mut self, step: &StepReport) -> impl Future<Output = bool> + Send {
        self.0 += u64::from(step.failed);
        std::future::ready(true)
    }
}

/// The task that wakes sync runs: organizations through the feed's door, GitLab groups through
/// a GitLab door when a GitLab credential is configured.
struct SyncWorker {
    task: JoinHandle<()>,
    /// The run the task is driving, if any, so that a stop can hand its claim back.
    current: Arc<Mutex<Option<i64>>>,
    store: Arc<dyn Store>,
}

impl SyncWorker {
    async fn start(
        poller: &headroom_github::feed::poll::Poller,
        settings: &crate::config::Settings,
        opened: &crate::registry::Opened,
        args: &SyncWorkerArgs,
        margin: SignedDuration,
    ) -> Result<Self, CliError> {
        use crate::sync_cmd::SyncKind;
        let mut runners = vec![(
            SyncKind::Org,
            crate::sync_cmd::org_runner(
                poller.store.clone(),
                poller.client.clone(),
                poller.clock,
                settings,
                args.sync_claim_secs,
            )
            .with_progress(Arc::new(LoggedProgress)),
        )];
        for kind in SyncKind::OTHERS {
            let Some(provider) = crate::sync_cmd::configured_for(settings, kind) else {
                continue;
            };
            let provider = if kind == SyncKind::Jira {
                // An OAuth app reaches its site through Atlassian's gateway; one that cannot
                // be found leaves Jira's runs waiting, never the rest of the service.
                match crate::sync_cmd::through_gateway(&provider, poller.clock, opened, margin)
                    .await
                {
                    Ok(p) => p,
                    Err(e) => {
                        tracing::warn!(
                            event = telemetry::SYNC_JIRA_GATEWAY_MISSING,
                            error = %e,
                            "Jira's runs wait: its gateway was not found."
                        );
                        continue;
                    }
                }
            } else {
                provider
            };
            let client =
                crate::wiring::client_for(&provider, poller.clock, opened, margin, kind.provider())
                    .map_err(|e| CliError::refused(&e))?;
            let runner = crate::sync_cmd::kind_runner(
                kind,
                poller.store.clone(),
                client,
                poller.clock,
                &provider,
                args.sync_claim_secs,
            )
            .with_progress(Arc::new(LoggedProgress));
            runners.push((kind, runner));
        }
        let current = Arc::new(Mutex::new(None));
        let poll = SignedDuration::from_secs(i64::try_from(args.sync_poll_secs).unwrap_or(15));
        let task = tokio::spawn(sync_loop(
            runners,
            poller.store.clone(),
            poller.clock,
            poll,
            current.clone(),
        ));
        Ok(Self {
            task,
            current,
            store: poller.store.clone(),
        })
    }

    /// Stops the task between two awaits and gives back the claim of the run it was driving:
    /// what that run committed stays (a page and its cursor commit together), the page in
    /// flight is redone by whoever resumes it — at once, rather than after the claim lapses.
    async fn stop(self) {
        self.task.abort();
        let _ = self.task.await;
        let current = self.current.lock().ok().and_then(|c| *c);
        if let Some(id) = current {
            match self
                .store
                .release_sync_run(id, &crate::sync_cmd::claim_holder())
                .await
            {
                Ok(()) => tracing::info!(event = telemetry::SYNC_RUN_RELEASED, run_id = id),
                Err(e) => {
                    tracing::error!(event = telemetry::SYNC_RELEASE_FAILED, run_id = id, error = %e)
                }
            }
        }
    }
}

async fn sync_loop(
    runners: Vec<(crate::sync_cmd::SyncKind, Runner)>,
    store: Arc<dyn Store>,
    clock: TokioClock,
    poll: SignedDuration,
    current: Arc<Mutex<Option<i64>>>,
) {
    let set = |id: Option<i64>| {
        if let Ok(mut c) = current.lock() {
            *c = id;
        }
    };
    let mut memory = crate::sync_cmd::WorkerMemory::default();
    loop {
        let mut next: Option<Timestamp> = None;
        for (kind, runner) in &runners {
            let woke = crate::sync_cmd::worker_pass(
                *kind,
                runner,
                store.as_ref(),
                clock.now(),
                &mut memory,
                &mut |id| set(Some(id)),
                &mut |id, outcome| {
                    set(None);
                    log_outcome(id, outcome);
                },
            )
            .await;
            let woke = match woke {
                Ok(woke) => woke,
                Err(e) => {
                    tracing::error!(event = telemetry::SYNC_WORKER_FAILED, error = %e);
                    None
                }
            };
            next = match (next, woke) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        let wait = next.map_or(poll, |at| {
            at.duration_since(clock.now())
                .clamp(SignedDuration::ZERO, poll)
        });
        clock.sleep(wait).await;
    }
}

fn log_outcome(id: i64, outcome: Result<RunOutcome, SyncError>) {
    match outcome {
        Ok(RunOutcome::Done { summary }) => tracing::info!(
            event = telemetry::SYNC_RUN_COMPLETED, run_id = id, status = "done",
            summary = %serde_json::to_string(&summary).unwrap_or_default()
        ),
        Ok(RunOutcome::Failed { reason, summary }) => tracing::error!(
            event = telemetry::SYNC_RUN_COMPLETED, run_id = id, status = "failed", reason = %reason,
            summary = %serde_json::to_string(&summary).unwrap_or_default()
        ),
        Ok(RunOutcome::Hibernating { until, .. }) => tracing::info!(
            event = telemetry::SYNC_RUN_HIBERNATING, run_id = id, until = %until
        ),
        // Held by another worker (a `sync org` holding its own run), or a store error.
        Err(e) => tracing::warn!(event = telemetry::SYNC_RUN_SKIPPED, run_id = id, error = %e),
    }
}

/// A sync run's progress as log lines (the service has no terminal to draw bars on).
struct LoggedProgress;

impl ProgressSink for LoggedProgress {
    fn event(&self, event: &ProgressEvent) {
        let Ok(serde_json::Value::Object(mut fields)) = serde_json::to_value(event) else {
            return;
        };
        fields.remove("event");
        let run_id = fields.remove("run_id").and_then(|v| v.as_i64());
        let detail = serde_json::Value::Object(fields).to_string();
        // One arm per kind, so that a new kind of progress cannot go out unnamed.
        match event {
            ProgressEvent::Page { .. } => {
                tracing::debug!(event = telemetry::SYNC_PAGE, run_id, detail = %detail);
            }
            ProgressEvent::StageStarted { .. } => {
                tracing::info!(event = telemetry::SYNC_STAGE_STARTED, run_id, detail = %detail);
            }
            ProgressEvent::StageDone { .. } => {
                tracing::info!(event = telemetry::SYNC_STAGE_DONE, run_id, detail = %detail);
            }
            ProgressEvent::StageDeferred { .. } => {
                tracing::info!(event = telemetry::SYNC_STAGE_DEFERRED, run_id, detail = %detail);
            }
            ProgressEvent::StageFailed { .. } => {
                tracing::info!(event = telemetry::SYNC_STAGE_FAILED, run_id, detail = %detail);
            }
            ProgressEvent::StageBlocked { .. } => {
                tracing::info!(event = telemetry::SYNC_STAGE_BLOCKED, run_id, detail = %detail);
            }
            ProgressEvent::Pacing { .. } => {
                tracing::info!(event = telemetry::SYNC_PACING, run_id, detail = %detail);
            }
            ProgressEvent::Hibernating { .. } => {
                tracing::info!(event = telemetry::SYNC_HIBERNATING, run_id, detail = %detail);
            }
            ProgressEvent::Finished { .. } => {
                tracing::info!(event = telemetry::SYNC_FINISHED, run_id, detail = %detail);
            }
        }
    }
}

/// The HTTP server beside the loop, publishing this service's own settings.
async fn start_server(
    args: &RunArgs,
    resolved: &crate::config::Settings,
    enricher: &Enricher,
) -> Result<Option<crate::serve::Running>, CliError> {
    if args.http.no_listen {
        return Ok(None);
    }
    // The identity the poller spends (local unless a token's owner is not yet known, which
    // the first poll would discover anyway).
    let subject = match enricher.poller.quota_key().await {
        Ok(key) => Some(headroom_store::subject_label(&key.subject)),
        Err(_) => crate::serve::stored_subject(resolved, enricher.poller.store.as_ref()).await,
    };
    let status = crate::serve::status_settings(
        resolved,
        &args.feed,
        &enricher.settings,
        &args.http.reporting,
        Some(args.tick_secs),
        subject,
    )
    .map_err(|e| CliError::refused(&e))?;
    crate::serve::start(&args.http, status, &resolved.db, enricher.poller.clock).await
}
