//! Organization sync against the in-process simulator, on tokio's clock: quota windows of
//! an hour pass in milliseconds, because every wait of a run is a hibernation that the test
//! (acting as the worker) sleeps through with tokio's clock paused. The work itself runs with
//! the clock running: sqlx's pool guards every query with a timer, and a paused clock
//! auto-advances to that timer while the SQLite worker thread is busy, so queries "time out"
//! at once under a clock paused for the whole test. The simulator applies GitHub's rules on its own,
//! and its request log is the evidence: what a stage asked for, it shows; what it did not ask
//! for, it cannot show.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::deferral::DeferralBudget;
use headroom_core::governor::GovernorConfig;
use headroom_core::{QuotaKey, Subject};
use headroom_github::org::{self, names};
use headroom_http::{Client, Credential};
use headroom_sim::{ExternalSpend, LogEntry, SimConfig, Simulator, TokenSpec};
use headroom_store::{NewSyncRun, Store};
use headroom_sync::{ProgressEvent, ProgressSink, RunOutcome, RunSummary, Runner, RunnerConfig};
use tokio::sync::Notify;

mod org_rig;
use org_rig::API;
const TOKEN: &str = "ghp_orgsynctoken00000000000000000000001";

fn start() -> Timestamp {
    Timestamp::from_second(1_800_000_000).expect("valid")
}

fn sim_config(repos: usize) -> SimConfig {
    let mut config = SimConfig::default()
        .with_org("acme", repos)
        .with_token(TokenSpec::user(TOKEN, "alice"))
        .with_seed(3);
    config.public_base_url = API.to_owned();
    config
}

struct Rig {
    sim: Simulator,
    store: Arc<dyn Store>,
    client: Client,
    clock: TokioClock,
    _dir: tempfile::TempDir,
}

async fn rig(config: SimConfig) -> Rig {
    let clock = TokioClock::anchored_at(start());
    let sim = Simulator::new(config, clock).expect("valid simulator");
    let (client, _) = org_rig::client(&sim, clock, TOKEN, "alice", GovernorConfig::default()).await;
    let (store, dir) = org_rig::sqlite_store().await;
    Rig {
        sim,
        store,
        client,
        clock,
        _dir: dir,
    }
}

impl Rig {
    async fn new_run(&self, stages: Option<Vec<String>>) -> i64 {
        self.store
            .create_sync_run(&NewSyncRun {
                credential: None,
                kind: "org".into(),
                target: "acme".into(),
                key: QuotaKey::user("127.0.0.1", "alice"),
                requested_stages: stages,
                created_at: self.clock.now(),
            })
            .await
            .expect("run")
            .id
    }

    fn runner(&self, progress: Arc<dyn ProgressSink>) -> Runner {
        let config = RunnerConfig {
            // Every wait hibernates and returns to the test, which sleeps through it paused.
            inline_wait: SignedDuration::ZERO,
            ..RunnerConfig::default()
        };
        Runner::new(
            org::stages(),
            Some(org::REPOSITORY_SOURCE),
            self.store.clone(),
            self.client.clone(),
            Some(Credential::new(TOKEN)),
            self.clock,
            config,
        )
        .expect("valid graph")
        .with_progress(progress)
    }

    /// Runs to the end the way a worker would: a hibernating run is woken at its time.
    async fn drive(&self, runner: &Runner, id: i64) -> RunSummary {
        // Pacing (a minute's points limiter) hibernates too here (`inline_wait` is zero): with
        // several scopes in flight the limiter binds, and reopens a second at a time.
        self.drive_up_to(runner, id, 300).await
    }

    /// [`Rig::drive`] with a bound on the wakes.
    async fn drive_up_to(&self, runner: &Runner, id: i64, wakes: usize) -> RunSummary {
        for _ in 0..wakes {
            match runner.run(id).await.expect("run") {
                RunOutcome::Done { summary } => return *summary,
                RunOutcome::Hibernating { until, reason } => {
                    eprintln!(
                        "hibernating until {until}: {reason} (now {})",
                        self.clock.now()
                    );
                    self.wake_at(until).await
                }
                RunOutcome::Failed { reason, .. } => panic!("run failed: {reason}"),
            }
        }
        panic!("run did not finish in {wakes} wakes");
    }

    /// Sleeps until `until` on a paused clock (no query runs meanwhile), as a worker's wait.
    async fn wake_at(&self, until: Timestamp) {
        tokio::time::pause();
        self.clock.sleep_until(until).await;
        tokio::time::resume();
    }

    async fn rows(&self) -> BTreeMap<&'static str, u64> {
        let mut out = BTreeMap::new();
        for t in [
            "organizations",
            "organization_members",
            "teams",
            "repositories",
            "issues",
            "issue_comments",
            "projects",
            "pull_requests",
            "pull_request_commits",
            "commit_files",
            "workflow_runs",
            "workflow_jobs",
            "check_runs",
            "branches",
        ] {
            out.insert(t, self.store.count_rows(t).await.expect("count"));
        }
        out
    }
}

/// Events, kept for assertions.
#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<ProgressEvent>>,
    /// Fired on the first committed page of this stage.
    stop_at: Option<(&'static str, Arc<Notify>)>,
}

impl ProgressSink for Recorder {
    fn event(&self, event: &ProgressEvent) {
        if let (Some((stage, notify)), ProgressEvent::Page { stage: s, .. }) =
            (&self.stop_at, event)
            && s == stage
        {
            notify.notify_one();
        }
        self.events.lock().unwrap().push(event.clone());
    }
}

/// The stage a GraphQL request was made for (`/graphql?stage=…`), or the REST stage its path
/// belongs to.
fn stage_of(e: &LogEntry) -> &'static str {
    if let Some(stage) = e.path.strip_prefix("/graphql?stage=") {
        for n in [
            names::ORG,
            names::REPOSITORIES,
            names::PROJECTS,
            names::ISSUE_COMMENTS,
            names::PULL_REQUESTS,
            names::BRANCHES,
        ] {
            if stage == n {
                return n;
            }
        }
        return "unknown graphql";
    }
    let path = e.path.split('?').next().unwrap_or("");
    let segs: Vec<&str> = path.split('/').collect();
    match segs.as_slice() {
        ["", "repos", _, _, "commits", _] => names::COMMIT_FILES,
        ["", "repos", _, _, "commits", _, "check-runs"] => names::WORKFLOW_RUNS,
        ["", "repos", _, _, "actions", ..] => names::WORKFLOW_RUNS,
        // GitHub's next-page links name the repository by id.
        ["", "repositories", _, "commits", _] => names::COMMIT_FILES,
        ["", "repositories", _, "commits", _, "check-runs"] => names::WORKFLOW_RUNS,
        ["", "repositories", _, "actions", ..] => names::WORKFLOW_RUNS,
        _ => "other",
    }
}

fn requests_by_stage(log: &[LogEntry]) -> BTreeMap<&'static str, usize> {
    let mut out = BTreeMap::new();
    for e in log {
        *out.entry(stage_of(e)).or_insert(0) += 1;
    }
    out
}

fn requests_total(by_stage: &BTreeMap<&'static str, usize>) -> usize {
    by_stage.values().sum()
}

fn points(log: &[LogEntry], bucket: &str) -> u64 {
    log.iter()
        .filter(|e| e.bucket.as_deref() == Some(bucket))
        .map(|e| e.cost)
        .sum()
}

/// Verification 4: a 125-repository organization shaped like the reference's measurement
/// (≈7,000 REST requests, ≈2,100 GraphQL points), from scratch, with GitHub's 5,000 REST
/// requests per hour, so the run must hibernate across a REST window. No 403; the summary's
/// requests and points match the simulator's log; it reports total time, hibernation and
/// the minimum remaining per bucket.
#[tokio::test]
async fn a_full_sync_crosses_rest_windows_without_a_403() {
    let mut config = sim_config(125);
    config.core_limit = 5_000;
    let r = rig(config).await;
    let recorder = Arc::new(Recorder::default());
    let runner = r.runner(recorder.clone());
    let id = r.new_run(None).await;
    let began = r.clock.now();
    let summary = r.drive(&runner, id).await;
    let log = r.sim.request_log();

    assert_eq!(r.sim.count_status(403), 0, "no 403 from the origin");
    assert_eq!(summary.responses_403, 0);
    assert_eq!(summary.stages_done.len(), 8, "{summary:?}");
    assert!(
        summary.hibernations > summary.pacing_hibernations,
        "the REST work needs two windows: {summary:?}"
    );
    let run = r.store.sync_run(id).await.expect("read").expect("exists");
    assert!(
        run.deferral_count >= 1 && run.deferral_count < 10,
        "window waits are deferrals, pacing is not: {}",
        run.deferral_count
    );
    assert!(summary.hibernating_ms >= 30 * 60 * 1000, "{summary:?}");
    // The summary's counts are the simulator's.
    let core = log
        .iter()
        .filter(|e| e.bucket.as_deref() == Some("core") && e.cost > 0)
        .count() as u64;
    assert_eq!(summary.buckets["core"].requests, core);
    assert_eq!(summary.buckets["core"].points, core);
    let graphql_requests = log
        .iter()
        .filter(|e| e.bucket.as_deref() == Some("graphql") && e.cost > 0)
        .count() as u64;
    assert_eq!(summary.buckets["graphql"].requests, graphql_requests);
    assert_eq!(summary.buckets["graphql"].points, points(&log, "graphql"));
    // The reference's measurement: ≈7,000 REST requests and ≈2,100 GraphQL points (±10 %).
    assert!((6_300..=7_700).contains(&core), "REST requests: {core}");
    let graphql_points = points(&log, "graphql");
    assert!(
        (1_890..=2_310).contains(&graphql_points),
        "GraphQL points: {graphql_points}"
    );
    assert!(summary.buckets["core"].min_remaining.is_some());
    assert!(summary.buckets["graphql"].min_remaining.is_some());
    let rows = r.rows().await;
    assert_eq!(rows["organizations"], 1);
    assert_eq!(rows["repositories"], 125);
    for (table, n) in &rows {
        assert!(*n > 0, "{table} is empty");
    }
    let by_stage = requests_by_stage(&log);
    assert_eq!(by_stage.get("other"), None, "{by_stage:?}");
    // No stage's first request precedes its dependency's last.
    let first_of = |s: &str| log.iter().position(|e| stage_of(e) == s);
    let last_of = |s: &str| log.iter().rposition(|e| stage_of(e) == s);
    for decl in org::declarations() {
        // Those that need only the list of repositories start beside stage 2's own work;
        // org_concurrency checks them against the listing.
        if decl.after_listing {
            continue;
        }
        for dep in decl.depends_on {
            if let (Some(f), Some(l)) = (first_of(decl.name), last_of(dep)) {
                assert!(l < f, "{} asked before {dep} finished", decl.name);
            }
        }
    }
    println!(
        "125 repositories: {} REST requests, {} GraphQL points, wall {} s (hibernating {} s in {} hibernations, {} of them pacing; paced in-process {} s), min remaining core {:?} graphql {:?}, rows {rows:?}, by stage {by_stage:?}",
        core,
        points(&log, "graphql"),
        summary.wall_time_ms / 1000,
        summary.hibernating_ms / 1000,
        summary.hibernations,
        summary.pacing_hibernations,
        summary.paced_ms / 1000,
        summary.buckets["core"].min_remaining,
        summary.buckets["graphql"].min_remaining,
    );
    // Wall time runs from the first start to the end: the test's own measure, within a
    // second (the run starts a moment after the test's first reading).
    let measured = r.clock.now().duration_since(began).as_millis() as i64;
    assert!(
        (measured - summary.wall_time_ms).abs() < 1_000,
        "{measured} vs {summary:?}"
    );
}

/// Verification 3: a run stopped in the middle of stage 4 (a crash: the task is dropped
/// after a committed page) and resumed makes no request for the stages done at the stop
/// (whichever had finished), continues stage 4
/// from its checkpoints (redoing at most the page in flight), and ends with the same rows as
/// an uninterrupted run.
#[tokio::test]
async fn a_resumed_run_redoes_nothing() {
    let baseline = rig(sim_config(12)).await;
    let id = baseline.new_run(None).await;
    baseline
        .drive(&baseline.runner(Arc::new(Recorder::default())), id)
        .await;
    let baseline_rows = baseline.rows().await;
    let baseline_requests = requests_by_stage(&baseline.sim.request_log());

    let r = rig(sim_config(12)).await;
    let stop = Arc::new(Notify::new());
    let recorder = Arc::new(Recorder {
        stop_at: Some((names::ISSUE_COMMENTS, stop.clone())),
        ..Recorder::default()
    });
    let runner = r.runner(recorder.clone());
    let id = r.new_run(None).await;
    tokio::select! {
        outcome = runner.run(id) => panic!("the run ended before stage 4: {outcome:?}"),
        () = stop.notified() => {}
    }
    drop(runner);
    // Whichever stages were done at the stop (stage 1 goes beside stage 2's listing, and is
    // usually done by then; the stages beside stage 4 may be too) are not asked again.
    let done_at_stop: Vec<String> = recorder
        .events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            ProgressEvent::StageDone { stage, .. } => Some(stage.clone()),
            _ => None,
        })
        .collect();
    let before = r.sim.request_log();
    let before_by_stage = requests_by_stage(&before);
    assert!(before_by_stage[names::ISSUE_COMMENTS] >= 1);

    // Resume the same run (a new runner, as after a restart).
    let summary = r.drive(&r.runner(Arc::new(Recorder::default())), id).await;
    let after: Vec<LogEntry> = r.sim.request_log()[before.len()..].to_vec();
    let after_by_stage = requests_by_stage(&after);
    for done in &done_at_stop {
        assert_eq!(
            after_by_stage.get(done.as_str()),
            None,
            "{done} asked again: {after_by_stage:?}"
        );
    }
    // Stage 4 continued: together, both halves asked at most one page more per request that
    // was in flight at the stop than a run never interrupted; the run's slots bound those.
    let slots = RunnerConfig::default().in_flight as usize;
    let redone = before.len() + after.len() - requests_total(&baseline_requests);
    assert!(
        redone <= slots,
        "{redone} requests redone, {slots} slots: {before_by_stage:?} + {after_by_stage:?} vs \
         {baseline_requests:?}"
    );
    assert!(
        after_by_stage
            .get(names::ISSUE_COMMENTS)
            .copied()
            .unwrap_or(0)
            < baseline_requests[names::ISSUE_COMMENTS],
        "stage 4 continued rather than restarted"
    );
    assert_eq!(summary.stages_done.len(), 8);
    assert_eq!(
        r.rows().await,
        baseline_rows,
        "nothing lost, nothing duplicated"
    );
}

/// Verification 5: GraphQL closes with what stages 1–2 spend plus the governor's margin
/// (stages 3, 4, 5 and 8 share it once the repositories are listed). The REST stage 7 runs
/// meanwhile and finishes; stage 6 (REST, but after 5) makes no request at all until
/// GraphQL reopens — zero in the simulator's log, not "zero collected". (The full run's order — no stage's first
/// request before its dependency's last — is checked on the 125-repository run.)
#[tokio::test]
async fn rest_runs_while_graphql_is_closed_and_nothing_precedes_its_dependency() {
    // What stages 1–2 spend, measured on an identical organization.
    let probe = rig(sim_config(12)).await;
    let id = probe.new_run(Some(vec![names::REPOSITORIES.into()])).await;
    probe
        .drive(&probe.runner(Arc::new(Recorder::default())), id)
        .await;
    let spent = points(&probe.sim.request_log(), "graphql");

    let mut config = sim_config(12);
    // The governor keeps cost × (in flight + 1 + ceiling) = 11 in reserve: 10 left closes it.
    let graphql_limit = spent + 10;
    config.graphql_limit = graphql_limit;
    let r = rig(config).await;
    let runner = r.runner(Arc::new(Recorder::default()));
    let id = r.new_run(None).await;
    let first = runner.run(id).await.expect("run");
    let RunOutcome::Hibernating { until, reason } = first else {
        panic!("expected hibernation while GraphQL is closed, got {first:?}");
    };
    assert!(reason.contains("graphql"), "{reason}");
    let log = r.sim.request_log();
    let by_stage = requests_by_stage(&log);
    assert!(by_stage[names::WORKFLOW_RUNS] > 0, "REST ran: {by_stage:?}");
    // The GraphQL stages that need only the list of repositories shared the budget with
    // stage 2's own work, never past it; commit files (REST, after pull requests are done)
    // made no request.
    assert!(
        points(&log, "graphql") <= graphql_limit,
        "{} GraphQL points against a limit of {graphql_limit}",
        points(&log, "graphql")
    );
    assert_eq!(
        by_stage.get(names::COMMIT_FILES),
        None,
        "commit files ran: {by_stage:?}"
    );
    assert_eq!(r.sim.count_status(403), 0);
    let checkpoints = r.store.checkpoints(id).await.expect("checkpoints");
    let stage_status = |n: &str| {
        checkpoints
            .iter()
            .find(|c| c.stage == n && c.scope.is_empty())
            .map(|c| c.status)
    };
    assert_eq!(
        stage_status(names::WORKFLOW_RUNS),
        Some(headroom_store::CheckpointStatus::Done)
    );

    // The hibernation is an observation every process on the database can read: the run,
    // the bucket it waits for and until when.
    let observations = r
        .store
        .recent_rate_limit_observations("127.0.0.1", Timestamp::UNIX_EPOCH, 100)
        .await
        .expect("observations");
    let hibernated: Vec<_> = observations
        .iter()
        .filter(|o| o.event_kind.as_deref() == Some("hibernated"))
        .collect();
    assert!(!hibernated.is_empty(), "{observations:?}");
    assert!(
        hibernated.iter().all(|o| o.sync_run_id == Some(id)
            // Stored in milliseconds.
            && o.reset_at.map(|r| r.as_millisecond()) == Some(until.as_millisecond())
            && o.subject == "user:alice"),
        "{hibernated:?} until {until}"
    );
    assert!(
        hibernated
            .iter()
            .any(|o| o.bucket.as_deref() == Some("graphql")),
        "{hibernated:?}"
    );
    assert_eq!(r.sim.count_status(403), 0);
}

/// A permanent failure (the organization does not exist) fails the two stages that ask for it
/// (`org`, and `repositories`, which goes beside it) and blocks every other stage — recorded as
/// blocked, none of them sends a request.
#[tokio::test]
async fn a_failed_stage_blocks_its_dependents() {
    let r = rig(sim_config(3)).await;
    let runner = r.runner(Arc::new(Recorder::default()));
    let id = r
        .store
        .create_sync_run(&NewSyncRun {
            credential: None,
            kind: "org".into(),
            target: "no-such-org".into(),
            key: QuotaKey::user("127.0.0.1", "alice"),
            requested_stages: None,
            created_at: r.clock.now(),
        })
        .await
        .expect("run")
        .id;
    let outcome = runner.run(id).await.expect("run");
    let RunOutcome::Failed { reason, summary } = outcome else {
        panic!("expected a failure, got {outcome:?}");
    };
    assert!(reason.contains("failed"), "{reason}");
    let mut failed = summary.stages_failed.clone();
    failed.sort();
    assert_eq!(failed, vec![names::ORG, names::REPOSITORIES], "{summary:?}");
    assert_eq!(summary.stages_blocked.len(), 6, "{summary:?}");
    let log = r.sim.request_log();
    assert_eq!(
        log.len(),
        2,
        "only the organization and its repositories were asked for: {log:?}"
    );
    let run = r.store.sync_run(id).await.expect("read").expect("exists");
    assert_eq!(run.status, headroom_store::SyncRunStatus::Failed);
}

/// A provider that never recovers still ends the run with an explicit reason: another client
/// drains alice's REST quota the moment each window opens, so after the GraphQL stages (the
/// progress that opens the episode) nothing more is ever stored, and the episode's budgets
/// run out. The only 403s are the requests the governor makes in the dark at each reset, one
/// a window.
#[tokio::test]
async fn an_exhausted_deferral_budget_fails_the_run_explicitly() {
    let config = sim_config(3).with_external_spend(ExternalSpend {
        login: "alice".into(),
        per_minute: 1_000_000.0,
    });
    let r = rig(config).await;
    let runner = r.runner(Arc::new(Recorder::default()));
    let id = r.new_run(Some(vec![names::WORKFLOW_RUNS.to_owned()])).await;
    let mut reason = None;
    for _ in 0..100 {
        match runner.run(id).await.expect("run") {
            RunOutcome::Hibernating { until, .. } => r.wake_at(until).await,
            RunOutcome::Failed { reason: why, .. } => {
                reason = Some(why);
                break;
            }
            RunOutcome::Done { .. } => panic!("cannot finish on a quota drained at every reset"),
        }
    }
    let reason = reason.expect("the budget ran out");
    assert!(reason.contains("budget exhausted"), "{reason}");
    let run = r.store.sync_run(id).await.expect("read").expect("exists");
    let summary = RunSummary::from_stored(run.summary.as_ref());
    assert_eq!(
        summary.wait_episodes, 1,
        "no progress after the first wait: {summary:?}"
    );
    assert!(
        r.sim.count_status(403) <= summary.deferrals as usize + 1,
        "one request in the dark a window: {} 403s, {summary:?}",
        r.sim.count_status(403)
    );
}

/// Deferral budgets bound one episode of waiting, not a run: an organization whose REST work
/// needs more than twenty of GitHub's hour-long windows finishes under the default budgets
/// (10 deferrals, 2 h), with no 403, and stores exactly what a run that never waits stores.
#[tokio::test]
async fn a_sync_needing_twenty_windows_finishes_under_the_default_budgets() {
    let repos = 40;
    let unbounded = rig(sim_config(repos)).await;
    let runner = unbounded.runner(Arc::new(Recorder::default()));
    let id = unbounded.new_run(None).await;
    let quick = unbounded.drive(&runner, id).await;
    assert_eq!(quick.deferrals, 0, "limits that do not bind: {quick:?}");
    let expected = unbounded.rows().await;

    let mut config = sim_config(repos);
    config.core_limit = 80;
    let r = rig(config).await;
    let runner = r.runner(Arc::new(Recorder::default()));
    assert_eq!(runner.config().deferral, DeferralBudget::default());
    let id = r.new_run(None).await;
    let began = r.clock.now();
    let summary = r.drive_up_to(&runner, id, 1_000).await;
    let log = r.sim.request_log();
    let core = log
        .iter()
        .filter(|e| e.bucket.as_deref() == Some("core") && e.cost > 0)
        .count() as u64;
    let windows = r.clock.now().duration_since(began).as_secs() / 3600;
    assert!(
        core > 20 * 80,
        "the REST work needs more than 20 windows: {core}"
    );
    assert!(windows >= 20, "{windows} windows");
    assert!(summary.deferrals > 10, "{summary:?}");
    assert!(summary.wait_episodes > 1, "{summary:?}");
    assert_eq!(r.sim.count_status(403), 0, "no 403 from the origin");
    assert_eq!(summary.responses_403, 0);
    assert_eq!(summary.stages_done.len(), 8, "{summary:?}");
    assert_eq!(summary.buckets["core"].requests, core);
    assert_eq!(
        r.rows().await,
        expected,
        "the same rows as a run that never waits"
    );
}

const TOKEN_2: &str = "ghp_orgsynctoken00000000000000000000002";

/// Verifications 1 and 2 through sync runs: four runs at once for one user — two on each of
/// two tokens of that user — while REST counts down from 15. The tokens fall into one
/// governor (the owner's), which grants exactly to the margin: no 403, the simulator's
/// remaining never drops below the reserve, and every run hibernates instead.
#[tokio::test]
async fn concurrent_runs_on_two_tokens_share_one_balance_without_a_403() {
    let mut config = sim_config(6).with_token(TokenSpec::user(TOKEN_2, "alice"));
    config.core_limit = 15;
    let r = rig(config).await;
    r.client
        .credentials()
        .record(
            "127.0.0.1",
            Credential::new(TOKEN_2).fingerprint(),
            &Subject::User("alice".into()),
        )
        .await;
    // The org and its repositories first (GraphQL), so the four runs meet on REST.
    let id = r.new_run(Some(vec![names::REPOSITORIES.into()])).await;
    r.drive(&r.runner(Arc::new(Recorder::default())), id).await;
    let mut tasks = Vec::new();
    for token in [TOKEN, TOKEN_2, TOKEN, TOKEN_2] {
        let runner = Arc::new(
            Runner::new(
                org::stages(),
                Some(org::REPOSITORY_SOURCE),
                r.store.clone(),
                r.client.clone(),
                Some(Credential::new(token)),
                r.clock,
                RunnerConfig {
                    inline_wait: SignedDuration::ZERO,
                    ..RunnerConfig::default()
                },
            )
            .expect("graph"),
        );
        let id = r.new_run(Some(vec![names::WORKFLOW_RUNS.into()])).await;
        tasks.push(tokio::spawn(async move { runner.run(id).await }));
    }
    for task in tasks {
        let outcome = task.await.expect("task").expect("run");
        assert!(
            matches!(outcome, RunOutcome::Hibernating { .. }),
            "{outcome:?}"
        );
    }
    assert_eq!(r.sim.count_status(403), 0);
    let identities = r.client.governor().identities().await.expect("identities");
    assert_eq!(identities, vec![QuotaKey::user("127.0.0.1", "alice")]);
    let log = r.sim.request_log();
    let rest: Vec<&LogEntry> = log
        .iter()
        .filter(|e| e.bucket.as_deref() == Some("core"))
        .collect();
    // Which token's runs win the five grants depends on task scheduling (under a loaded CI
    // machine one token may take all of them), so the test does not assert on it: the single
    // identity above and the exact margin below are what "one balance" means.
    let min = rest
        .iter()
        .filter_map(|e| e.remaining)
        .min()
        .expect("readings");
    // cost × (in flight + 1 + ceiling) = 11 needed to send: the last grant leaves 10.
    assert_eq!(min, 10, "grants stop exactly at the margin");
    assert_eq!(
        rest.len(),
        5,
        "15 − 10 requests went out, all runs deferred the rest"
    );
}

/// A transient failure (every REST request answers a 5xx, retries included) stops the REST
/// stage and defers it: no "no data" rows are written for it, nothing fails, and the run
/// hibernates until the stage may be tried again. (The simulator's 5xx faults are REST-only,
/// so the GraphQL stages before it succeed.)
#[tokio::test]
async fn a_transient_failure_defers_the_stage_and_writes_nothing() {
    let mut config = sim_config(3);
    config.faults.error_rate = 1.0;
    let r = rig(config).await;
    let runner = r.runner(Arc::new(Recorder::default()));
    let id = r.new_run(Some(vec![names::WORKFLOW_RUNS.into()])).await;
    let outcome = runner.run(id).await.expect("run");
    assert!(
        matches!(outcome, RunOutcome::Hibernating { .. }),
        "{outcome:?}"
    );
    let checkpoints = r.store.checkpoints(id).await.expect("checkpoints");
    let stage = checkpoints
        .iter()
        .find(|c| c.stage == names::WORKFLOW_RUNS && c.scope.is_empty())
        .expect("stage 7 checkpoint");
    assert_eq!(stage.status, headroom_store::CheckpointStatus::Deferred);
    assert!(
        stage
            .detail
            .as_deref()
            .unwrap_or("")
            .contains("server error"),
        "{stage:?}"
    );
    // No repository of stage 7 is marked done, and none of its tables got a row.
    assert!(
        checkpoints
            .iter()
            .filter(|c| c.stage == names::WORKFLOW_RUNS && !c.scope.is_empty())
            .all(|c| c.status != headroom_store::CheckpointStatus::Done)
    );
    let rows = r.rows().await;
    for table in ["workflow_runs", "workflow_jobs", "check_runs"] {
        assert_eq!(rows[table], 0, "{table} got rows from a failing origin");
    }
    assert_eq!(rows["repositories"], 3);
    let run = r.store.sync_run(id).await.expect("read").expect("exists");
    assert_eq!(run.status, headroom_store::SyncRunStatus::Hibernating);
    assert!(run.failure_reason.is_none());
    assert!(r.sim.count_status(500) + r.sim.count_status(502) + r.sim.count_status(503) >= 1);
}

/// A spent primary window hibernates the run even when it reopens sooner than the in-process
/// pacing allowance: the run is persisted with `not_before` at the reset, its claim released
/// and one deferral counted — no process sleeps through a quota window, however short.
#[tokio::test]
async fn a_spent_window_hibernates_however_soon_it_reopens() {
    let mut config = sim_config(2);
    config.core_limit = 40;
    config.window = SignedDuration::from_secs(60);
    let r = rig(config).await;
    let runner = Runner::new(
        org::stages(),
        Some(org::REPOSITORY_SOURCE),
        r.store.clone(),
        r.client.clone(),
        Some(Credential::new(TOKEN)),
        r.clock,
        RunnerConfig {
            // Longer than the whole wait (the 60 s window, then the governor's 60 s margin):
            // a rule by duration alone would sleep through it in-process.
            inline_wait: SignedDuration::from_secs(300),
            ..RunnerConfig::default()
        },
    )
    .expect("graph");
    let id = r.new_run(None).await;
    let RunOutcome::Hibernating { until, reason } = runner.run(id).await.expect("run") else {
        panic!("40 REST requests a minute cannot cover two repositories' runs");
    };
    let now = r.clock.now();
    assert!(reason.contains("core"), "{reason}");
    // The only run on the database wakes at the reset plus the margin exactly: jitter spreads
    // the wakes of several runs, and there is no other to spread it from.
    let reset = r
        .sim
        .quota(
            &r.sim.subject_for_token(TOKEN).expect("alice"),
            headroom_sim::Resource::Core,
        )
        .reset;
    let margin = GovernorConfig::default().margin;
    assert_eq!(
        until,
        Timestamp::from_second(reset.as_second()).expect("in range") + margin,
        "a lone run's wake has no jitter: now {now}, {reason}"
    );
    let run = r.store.sync_run(id).await.expect("read").expect("exists");
    assert_eq!(run.status, headroom_store::SyncRunStatus::Hibernating);
    assert_eq!(run.not_before, Some(until));
    assert_eq!(run.deferral_count, 1, "a window wait is a deferral");
    assert_eq!(
        run.claimed_by, None,
        "the claim is released while hibernating"
    );
    let summary = r.drive(&runner, id).await;
    assert_eq!(r.sim.count_status(403), 0);
    assert_eq!(summary.stages_done.len(), 8, "{summary:?}");
    assert!(summary.hibernations > summary.pacing_hibernations);
    let core = r
        .sim
        .request_log()
        .iter()
        .filter(|e| e.bucket.as_deref() == Some("core") && e.cost > 0)
        .count() as u64;
    assert_eq!(summary.buckets["core"].requests, core);
    assert!(core > 40, "{core}");
}
