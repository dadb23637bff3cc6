//! `headroom sync …`: organization sync as a graph of stages chosen by quota headroom.
//!
//! - `sync org NAME [--resume RUN_ID] [--stages LIST] [--wait]` starts (or resumes) a run.
//!   A run that must wait for a quota window hibernates: it is persisted with its wake time
//!   and the command exits 0 saying until when — unless `--wait`, which sleeps in this process
//!   and finishes.
//! - `sync status [RUN_ID] [--json]`: stages, cursors, counts, what a run waits for.
//! - `sync plan org NAME`: an estimate of requests, points and quota windows, from a probe
//!   of a few GraphQL points.
//! - `sync worker [--once]`: wakes hibernating runs when their time comes (as `headroom run`
//!   also does), and takes up pending runs and those whose holder died.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};

use clap::{Args, Subcommand};
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::GovernorConfig;
use headroom_github::org;
use headroom_github::org::count_at as count;
use headroom_http::{ApiRequest, Client};
use headroom_store::{CheckpointStatus, NewSyncRun, Store, SyncRun, TABLES};
use headroom_sync::{
    ProgressEvent, ProgressSink, RunOutcome, RunSummary, Runner, RunnerConfig, StageGraph,
    SyncError,
};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use serde_json::{Value, json};

use crate::config::{GlobalArgs, ProcessEnv, Settings};
use crate::outcome::{CliError, CommandResult, Outcome};
use crate::{registry, wiring};

/// Organization sync.
#[derive(Debug, Args)]
pub struct SyncArgs {
    #[command(subcommand)]
    command: SyncCommand,
}

#[derive(Debug, Subcommand)]
enum SyncCommand {
    /// Collect an organization: org, members, teams, repositories, issues, projects, issue
    /// comments, pull requests with commits, commit files, workflow runs/jobs/check runs,
    /// branches. Exits 0 when done or hibernating (with the wake time), 1 when it failed.
    Org {
        /// The organization's login.
        name: String,
        /// Resume this run instead of starting one (done stages are skipped; a running stage
        /// continues from its cursor).
        #[arg(long, value_name = "RUN_ID")]
        resume: Option<i64>,
        /// Only these stages (comma-separated), plus what they depend on.
        #[arg(long, value_delimiter = ',', value_name = "LIST")]
        stages: Vec<String>,
        /// Wait for quota windows in this process and finish, instead of hibernating.
        #[arg(long)]
        wait: bool,
        /// A run that hibernates until no later than this many seconds from now is held: the
        /// command keeps it persisted as hibernating (claim released, visible in `sync
        /// status`) and wakes it itself at its time, as a worker would. A later wake time
        /// exits 0 with the run id and the wake time for `sync worker`. 0 never holds.
        #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(0..=86_400))]
        hold_secs: u64,
        /// Seconds a killed worker keeps its claim on the run before another may resume it.
        #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=86_400))]
        claim_secs: u64,
        #[command(flatten)]
        margin: wiring::ResetMargin,
    },
    /// Where a run stands: stages, cursors, counts, what it waits for. Without RUN_ID, the
    /// unfinished runs.
    Status {
        /// The run.
        run_id: Option<i64>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Before spending anything: estimated requests and points per bucket, and how many quota
    /// windows the work needs (a probe of a few GraphQL points measures the organization).
    Plan {
        #[command(subcommand)]
        target: PlanTarget,
    },
    /// Wake hibernating runs when their time comes, and run pending ones and those a dead
    /// worker left (its claim lapsed). `headroom run` does the same beside the feed.
    Worker {
        /// Process the runs due now, then exit.
        #[arg(long)]
        once: bool,
        /// Seconds between looks at the database.
        #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=3600))]
        poll_secs: u64,
        /// Seconds a killed worker keeps its claim on a run before another may resume it.
        #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=86_400))]
        claim_secs: u64,
        #[command(flatten)]
        margin: wiring::ResetMargin,
    },
}

#[derive(Debug, Subcommand)]
enum PlanTarget {
    /// An organization.
    Org {
        /// The organization's login.
        name: String,
    },
}

/// Runs `headroom sync …`.
pub async fn run(global: &GlobalArgs, args: SyncArgs) -> CommandResult {
    let settings = global
        .resolve(&ProcessEnv)
        .map_err(|e| CliError::refused(&e))?;
    match args.command {
        SyncCommand::Org {
            name,
            resume,
            stages,
            wait,
            hold_secs,
            claim_secs,
            margin,
        } => {
            let hold = SignedDuration::from_secs(i64::try_from(hold_secs).unwrap_or(i64::MAX));
            let options = OrgOptions {
                wait,
                hold,
                claim_secs,
                margin: margin.get(),
            };
            sync_org(&settings, name, resume, stages, options).await
        }
        SyncCommand::Status { run_id, json } => status(&settings, run_id, json).await,
        SyncCommand::Plan {
            target: PlanTarget::Org { name },
        } => plan(&settings, &name).await,
        SyncCommand::Worker {
            once,
            poll_secs,
            claim_secs,
            margin,
        } => worker(&settings, once, poll_secs, claim_secs, margin.get()).await,
    }
}

struct Env {
    store: Arc<dyn Store>,
    client: Client,
    clock: TokioClock,
    settings: Settings,
}

/// How `sync org` drives its run.
struct OrgOptions {
    wait: bool,
    hold: SignedDuration,
    claim_secs: u64,
    margin: SignedDuration,
}

async fn env(settings: &Settings, margin: SignedDuration) -> Result<Env, CliError> {
    let opened = registry::open(&settings.db)
        .await
        .map_err(|e| CliError::refused(&e))?;
    let store = headroom_store::open(&settings.db)
        .await
        .map_err(|e| CliError::refused(&e))?;
    let clock = TokioClock::system();
    let client = wiring::client_with_margin(settings, clock, &opened, margin)
        .map_err(|e| CliError::refused(&e))?;
    Ok(Env {
        store,
        client,
        clock,
        settings: settings.clone(),
    })
}

fn runner(env: &Env, progress: Arc<dyn ProgressSink>, claim_secs: u64) -> Runner {
    org_runner(
        env.store.clone(),
        env.client.clone(),
        env.clock,
        &env.settings,
        claim_secs,
    )
    .with_progress(progress)
}

/// The holder name this process claims sync runs under.
pub fn holder() -> String {
    format!("headroom:{}", std::process::id())
}

/// The organization graph's runner over an exit door built elsewhere: `headroom run` hands it
/// the feed's client so that both spend through one governor per identity (on SQLite the
/// governor lives in this process's memory, so a second client would not see the first's
/// requests).
pub fn org_runner(
    store: Arc<dyn Store>,
    client: Client,
    clock: TokioClock,
    settings: &Settings,
    claim_secs: u64,
) -> Runner {
    match Runner::new(
        org::stages(),
        Some(org::REPOSITORY_SOURCE),
        store,
        client,
        settings.credential.clone(),
        clock,
        RunnerConfig {
            deferral: settings.deferral,
            holder: holder(),
            claim: SignedDuration::from_secs(i64::try_from(claim_secs).unwrap_or(120)),
            ..RunnerConfig::default()
        },
    ) {
        Ok(r) => r,
        // The graph is fixed in code and tested; reaching this is a programming error.
        Err(e) => panic!("the organization graph is invalid: {e}"),
    }
}

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

async fn sync_org(
    settings: &Settings,
    name: String,
    resume: Option<i64>,
    stages: Vec<String>,
    options: OrgOptions,
) -> CommandResult {
    let OrgOptions {
        wait,
        hold,
        claim_secs,
        margin,
    } = options;
    let graph = StageGraph::new(org::declarations(), Some(org::REPOSITORY_SOURCE))
        .map_err(|e| CliError::failed(&e))?;
    if let Err(e) = graph.closure_of(&stages) {
        return Err(CliError::refused(&format!("--stages: {e}")));
    }
    let env = env(settings, margin).await?;
    let credential = settings.credential.as_ref();
    let id = match resume {
        Some(id) => match env.store.sync_run(id).await {
            Ok(Some(run)) if run.kind == "org" && run.target == name => id,
            Ok(Some(run)) => {
                return Err(CliError::refused(&format!(
                    "--resume: run {id} syncs {} {}, not org {name}",
                    run.kind, run.target
                )));
            }
            Ok(None) => return Err(CliError::refused(&format!("--resume: no sync run {id}"))),
            Err(e) => return Err(CliError::failed(&e)),
        },
        None => {
            let key = env
                .client
                .identity(credential)
                .await
                .map_err(|e| CliError::failed(&e))?;
            match env
                .store
                .create_sync_run(&NewSyncRun {
                    kind: "org".into(),
                    target: name.clone(),
                    key,
                    requested_stages: (!stages.is_empty()).then_some(stages),
                    created_at: env.clock.now(),
                })
                .await
            {
                Ok(run) => run.id,
                Err(e) => return Err(CliError::failed(&e)),
            }
        }
    };
    let progress: Arc<dyn ProgressSink> = if std::io::stderr().is_terminal() {
        Arc::new(TerminalProgress::new(graph.clone()))
    } else {
        Arc::new(JsonProgress)
    };
    let runner = runner(&env, progress, claim_secs);
    let mut holding = false;
    loop {
        match runner.run(id).await {
            Ok(RunOutcome::Done { summary }) => {
                print_outcome(id, "done", None, None, &summary);
                return Ok(Outcome::Success);
            }
            Ok(RunOutcome::Failed { reason, summary }) => {
                print_outcome(id, "failed", Some(&reason), None, &summary);
                return Ok(Outcome::Unsuccessful);
            }
            Ok(RunOutcome::Hibernating { until, reason }) => {
                // The run is persisted and unclaimed either way; holding only means this
                // process is the worker that wakes it. Killed meanwhile, it loses nothing.
                let held = wait || until.duration_since(env.clock.now()) <= hold;
                outln!(
                    "{}",
                    json!({
                        "event": "sync.run_hibernating",
                        "run_id": id,
                        "until": until.to_string(),
                        "reason": reason,
                        "held": held,
                        "resume": format!("headroom run or headroom sync worker (or: headroom sync org {name} --resume {id})"),
                    })
                );
                if held {
                    holding = true;
                    env.clock.sleep_until(until).await;
                    continue;
                }
                return Ok(Outcome::Success);
            }
            // A worker took the run while this process held it: it is in good hands.
            Err(headroom_sync::SyncError::Claimed(_)) if holding => {
                outln!("{}", json!({ "event": "sync.taken_over", "run_id": id }));
                return Ok(Outcome::Success);
            }
            Err(e) => return Err(CliError::failed(&e)),
        }
    }
}

fn print_outcome(
    id: i64,
    status: &str,
    reason: Option<&str>,
    until: Option<Timestamp>,
    summary: &RunSummary,
) {
    outln!(
        "{}",
        json!({
            "event": "sync.run_completed",
            "run_id": id,
            "status": status,
            "reason": reason,
            "until": until.map(|u| u.to_string()),
            "summary": summary,
        })
    );
}

/// Plain JSON lines on stdout (when not on a terminal).
struct JsonProgress;

impl ProgressSink for JsonProgress {
    fn event(&self, event: &ProgressEvent) {
        if let Ok(mut value) = serde_json::to_value(event) {
            if let Some(obj) = value.as_object_mut()
                && let Some(Value::String(kind)) = obj.get("event").cloned()
            {
                obj.insert("event".into(), Value::String(format!("sync.{kind}")));
            }
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{value}");
            let _ = out.flush();
        }
    }
}

/// Progress bars on a terminal: one per stage ("stage 5 of 8 · pull requests", its
/// repositories as the bar, the page in the message) and a line below them saying why the run
/// waits.
struct TerminalProgress {
    graph: StageGraph,
    multi: MultiProgress,
    bars: Vec<(String, ProgressBar)>,
    why: ProgressBar,
    settled: Mutex<Vec<String>>,
}

/// A bucket's name for people.
fn surface(bucket: &str) -> &str {
    match bucket {
        "core" => "REST",
        "graphql" => "GraphQL",
        other => other,
    }
}

impl TerminalProgress {
    fn new(graph: StageGraph) -> Self {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("{prefix:<48} [{bar:24}] {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        let total = graph.stages().len();
        let bars = graph
            .stages()
            .iter()
            .enumerate()
            .map(|(i, decl)| {
                let bar = multi.add(ProgressBar::new(1).with_style(style.clone()));
                bar.set_prefix(format!("stage {} of {total} · {}", i + 1, decl.title));
                bar.set_message("pending");
                (decl.name.to_owned(), bar)
            })
            .collect();
        let why = multi.add(ProgressBar::new(0).with_style(
            ProgressStyle::with_template("{msg}").unwrap_or_else(|_| ProgressStyle::default_bar()),
        ));
        Self {
            graph,
            multi,
            bars,
            why,
            settled: Mutex::new(Vec::new()),
        }
    }

    fn bar(&self, stage: &str) -> Option<&ProgressBar> {
        self.bars.iter().find(|(n, _)| n == stage).map(|(_, b)| b)
    }

    /// "running GraphQL stages meanwhile", when stages on other buckets are still to do.
    fn meanwhile(&self, closed: &str) -> String {
        let settled = self.settled.lock().map(|s| s.clone()).unwrap_or_default();
        let mut others: Vec<&str> = Vec::new();
        for decl in self.graph.stages() {
            if decl.bucket != closed
                && !settled.iter().any(|s| s == decl.name)
                && !others.contains(&surface(decl.bucket))
            {
                others.push(surface(decl.bucket));
            }
        }
        if others.is_empty() {
            "nothing else to run".to_owned()
        } else {
            format!("running {} stages meanwhile", others.join(" and "))
        }
    }

    fn settle(&self, stage: &str) {
        if let Ok(mut s) = self.settled.lock() {
            s.push(stage.to_owned());
        }
    }
}

impl ProgressSink for TerminalProgress {
    fn event(&self, event: &ProgressEvent) {
        let hm = |t: &Timestamp| t.strftime("%H:%M:%S UTC").to_string();
        match event {
            ProgressEvent::StageStarted { stage, .. } => {
                if let Some(bar) = self.bar(stage) {
                    bar.set_message("running");
                }
            }
            ProgressEvent::Page {
                stage,
                scope_index,
                scope_total,
                page,
                ..
            } => {
                if let Some(bar) = self.bar(stage) {
                    match (scope_index, scope_total) {
                        (Some(i), Some(n)) => {
                            bar.set_length(*n as u64);
                            bar.set_position(i.saturating_sub(1) as u64);
                            bar.set_message(format!("repo {i}/{n} · page {page}"));
                        }
                        _ => bar.set_message(format!("page {page}")),
                    }
                }
            }
            ProgressEvent::StageDone { stage, .. } => {
                self.settle(stage);
                if let Some(bar) = self.bar(stage) {
                    bar.set_position(bar.length().unwrap_or(1));
                    bar.finish_with_message("done");
                }
            }
            ProgressEvent::StageDeferred {
                stage,
                bucket,
                until,
                reason,
                ..
            } => {
                if let Some(bar) = self.bar(stage) {
                    bar.set_message(format!("waiting until {}", hm(until)));
                }
                let line = match bucket.as_deref() {
                    Some(b) => format!(
                        "{} exhausted — reopens {}; {}",
                        surface(b),
                        hm(until),
                        self.meanwhile(b)
                    ),
                    None => format!("{stage}: {reason} — again at {}", hm(until)),
                };
                self.why.set_message(line);
            }
            ProgressEvent::StageFailed { stage, reason, .. } => {
                self.settle(stage);
                if let Some(bar) = self.bar(stage) {
                    bar.abandon_with_message(format!("failed: {reason}"));
                }
            }
            ProgressEvent::StageBlocked { stage, by, .. } => {
                self.settle(stage);
                if let Some(bar) = self.bar(stage) {
                    bar.abandon_with_message(format!("blocked by {by}"));
                }
            }
            ProgressEvent::Pacing { until, buckets, .. } => {
                let names: Vec<&str> = buckets.iter().map(|b| surface(b)).collect();
                self.why.set_message(format!(
                    "pacing {} (points per minute) — continuing at {}",
                    names.join(", "),
                    hm(until)
                ));
            }
            ProgressEvent::Hibernating { until, buckets, .. } => {
                let names: Vec<&str> = buckets.iter().map(|b| surface(b)).collect();
                let line = format!(
                    "nothing can run: {} closed — hibernating until {}",
                    if names.is_empty() {
                        "deferred stages".to_owned()
                    } else {
                        names.join(", ")
                    },
                    hm(until)
                );
                // Kept above the bars: the history of the run's waits.
                let _ = self.multi.println(&line);
                self.why.set_message(line);
            }
            ProgressEvent::Finished { status, .. } => {
                self.why.finish_with_message(format!("run {status}"));
            }
        }
    }
}

#[derive(Debug, Serialize)]
struct StageStatus {
    stage: String,
    title: String,
    position: usize,
    status: String,
    detail: Option<String>,
    cursor: Option<String>,
    repositories_done: usize,
    repositories: usize,
    pages: u64,
    rows: u64,
}

#[derive(Debug, Serialize)]
struct RunStatus {
    run: SyncRun,
    waiting_for: Option<String>,
    stages: Vec<StageStatus>,
    /// Fields GitHub refused in answers the stages kept (from the run's summary).
    refused: Vec<headroom_sync::RefusedField>,
    tables: std::collections::BTreeMap<String, u64>,
}

async fn describe(
    store: &dyn Store,
    run: SyncRun,
) -> Result<RunStatus, headroom_store::StoreError> {
    let checkpoints = store.checkpoints(run.id).await?;
    let repositories = checkpoints
        .iter()
        .filter(|c| c.stage == org::REPOSITORY_SOURCE && !c.scope.is_empty())
        .count();
    let mut stages = Vec::new();
    for (i, decl) in org::declarations().iter().enumerate() {
        let mine: Vec<_> = checkpoints
            .iter()
            .filter(|c| c.stage == decl.name)
            .collect();
        let top = mine.iter().find(|c| c.scope.is_empty());
        let state = headroom_sync::runner::state_of(top.copied());
        let status = serde_json::to_value(&state)
            .ok()
            .and_then(|v| v.get("status").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default();
        stages.push(StageStatus {
            stage: decl.name.to_owned(),
            title: decl.title.to_owned(),
            position: i + 1,
            status,
            detail: top.and_then(|c| c.detail.clone()),
            cursor: top.and_then(|c| c.page_cursor.clone()),
            repositories_done: mine
                .iter()
                .filter(|c| {
                    headroom_sync::RepoScope::parse(&c.scope).is_some()
                        && c.status == CheckpointStatus::Done
                })
                .count(),
            repositories,
            pages: mine.iter().map(|c| c.pages_done).sum(),
            rows: mine.iter().map(|c| c.rows_written).sum(),
        });
    }
    let mut tables = std::collections::BTreeMap::new();
    for t in TABLES {
        if matches!(
            *t,
            "organizations"
                | "organization_members"
                | "teams"
                | "repositories"
                | "issues"
                | "issue_comments"
                | "projects"
                | "pull_requests"
                | "pull_request_commits"
                | "commit_files"
                | "workflow_runs"
                | "workflow_jobs"
                | "check_runs"
                | "branches"
        ) {
            tables.insert((*t).to_owned(), store.count_rows(t).await?);
        }
    }
    let waiting_for = match run.status {
        headroom_store::SyncRunStatus::Hibernating => run.not_before.map(|t| {
            let deferred: Vec<&str> = stages
                .iter()
                .filter(|s| s.status == "deferred")
                .map(|s| s.stage.as_str())
                .collect();
            format!(
                "wakes at {t}; deferred: {}",
                if deferred.is_empty() {
                    "none".to_owned()
                } else {
                    deferred.join(", ")
                }
            )
        }),
        _ => None,
    };
    let refused = RunSummary::from_stored(run.summary.as_ref()).refused;
    Ok(RunStatus {
        run,
        waiting_for,
        stages,
        refused,
        tables,
    })
}

/// One refused field in words: which stage asked for what, and GitHub's reason.
fn refused_line(r: &headroom_sync::RefusedField) -> String {
    let path = if r.path.is_empty() {
        "(no path)"
    } else {
        r.path.as_str()
    };
    // Recorded redacted; redacted again in case a summary was written by an older build.
    format!(
        "refused: {} · {path} — {}: {}",
        r.stage,
        r.kind,
        headroom_core::redact(&r.message)
    )
}

async fn status(settings: &Settings, run_id: Option<i64>, json: bool) -> CommandResult {
    let store = headroom_store::open(&settings.db)
        .await
        .map_err(|e| CliError::refused(&e))?;
    let runs = match run_id {
        Some(id) => match store.sync_run(id).await {
            Ok(Some(run)) => vec![run],
            Ok(None) => return Err(CliError::refused(&format!("no sync run {id}"))),
            Err(e) => return Err(CliError::failed(&e)),
        },
        None => store
            .due_sync_runs(Timestamp::MAX, 50)
            .await
            .map_err(|e| CliError::failed(&e))?,
    };
    let mut out = Vec::new();
    for run in runs {
        match describe(store.as_ref(), run).await {
            Ok(s) => out.push(s),
            Err(e) => return Err(CliError::failed(&e)),
        }
    }
    if json {
        match serde_json::to_string_pretty(&out) {
            Ok(text) => outln!("{text}"),
            Err(e) => return Err(CliError::failed(&e)),
        }
        return Ok(Outcome::Success);
    }
    if out.is_empty() {
        outln!("no unfinished sync runs");
    }
    for s in &out {
        outln!(
            "run {} · {} {} · {}{}",
            s.run.id,
            s.run.kind,
            s.run.target,
            s.run.status.as_str(),
            s.waiting_for
                .as_ref()
                .map(|w| format!(" · {w}"))
                .unwrap_or_default()
        );
        if let Some(reason) = &s.run.failure_reason {
            outln!("  failed: {reason}");
        }
        for st in &s.stages {
            let repos = if st.repositories > 0 && st.stage != "org" {
                format!(" · repos {}/{}", st.repositories_done, st.repositories)
            } else {
                String::new()
            };
            outln!(
                "  {}. {:<32} {:<9}{repos} · {} pages · {} rows{}",
                st.position,
                st.title,
                st.status,
                st.pages,
                st.rows,
                st.detail
                    .as_ref()
                    .map(|d| format!(" · {d}"))
                    .unwrap_or_default()
            );
        }
        for r in &s.refused {
            outln!("  {}", refused_line(r));
        }
    }
    Ok(Outcome::Success)
}

async fn plan(settings: &Settings, name: &str) -> CommandResult {
    let env = env(settings, GovernorConfig::default().margin).await?;
    let credential = settings.credential.as_ref();
    let request = match ApiRequest::graphql(org::plan::PLAN_QUERY, &json!({ "login": name })) {
        Ok(r) => r
            .credential(credential)
            .route("sync_plan", headroom_core::Dimension::GraphqlCost),
        Err(e) => return Err(CliError::failed(&e)),
    };
    let probe_cost = request.estimated_cost;
    let body: Value = env
        .client
        .send(request)
        .await
        .and_then(|r| r.json())
        .map_err(|e| CliError::failed(&e))?;
    let probe = org::plan::PlanProbe::read(&body, name).map_err(|e| CliError::failed(&e))?;
    // Workflow runs of the first few repositories (`total_count` of a one-item page).
    let mut run_counts = Vec::new();
    for repo in probe.run_sample() {
        let request = ApiRequest::get(format!("/repos/{name}/{repo}/actions/runs?per_page=1"))
            .credential(credential)
            .route("sync_plan", headroom_core::Dimension::RestCore);
        match env
            .client
            .send(request)
            .await
            .and_then(|r| r.json::<Value>())
        {
            Ok(body) => run_counts.push(count(&body, &["total_count"])),
            Err(e) => return Err(CliError::failed(&e)),
        }
    }
    let key = env
        .client
        .identity(credential)
        .await
        .map_err(|e| CliError::failed(&e))?;
    let snapshot = env.client.governor().snapshot(&key).await.ok();
    let limit_of = |bucket: &str, default: u64| {
        snapshot
            .as_ref()
            .and_then(|s| s.buckets.iter().find(|b| b.state.bucket.as_str() == bucket))
            .and_then(|b| b.state.limit)
            .unwrap_or(default)
    };
    let (core_limit, graphql_limit) = (limit_of("core", 5_000), limit_of("graphql", 5_000));
    let plan = probe.estimate(&run_counts, core_limit, graphql_limit);
    let report = json!({
        "organization": name,
        "measured": {
            "repositories": probe.repositories, "members": probe.members, "teams": probe.teams,
            "pull_requests": plan.pull_requests, "sampled_repositories": probe.sampled_repositories,
            "organization_projects": probe.organization_projects, "unlinked_projects": probe.unlinked_projects,
            "probe_points": probe_cost,
        },
        "sampled": {
            "commits_per_pull_request": plan.commits_per_pull_request,
            "pull_requests_sampled": probe.sampled_pulls,
            "workflow_runs_per_repository": plan.workflow_runs_per_repository,
            "repositories_sampled_for_runs": plan.repositories_sampled_for_runs,
        },
        "estimate": {
            "graphql": { "requests": plan.graphql_requests, "points": plan.graphql_requests, "limit": graphql_limit },
            "core": { "requests": plan.rest_requests, "limit": core_limit },
            "quota_windows": plan.quota_windows,
        },
    });
    match serde_json::to_string_pretty(&report) {
        Ok(text) => outln!("{text}"),
        Err(e) => return Err(CliError::failed(&e)),
    }
    Ok(Outcome::Success)
}

async fn worker(
    settings: &Settings,
    once: bool,
    poll_secs: u64,
    claim_secs: u64,
    margin: SignedDuration,
) -> CommandResult {
    let env = env(settings, margin).await?;
    let runner = runner(&env, Arc::new(JsonProgress), claim_secs);
    let poll = SignedDuration::from_secs(i64::try_from(poll_secs).unwrap_or(15));
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
