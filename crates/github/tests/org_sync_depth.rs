//! Organization sync collects *everything*, on SQLite and PostgreSQL: projects with every
//! item, issues with more than a page of comments, pull requests with more than a page of
//! commits (nested connections followed past their first page, resumable within one page);
//! a second run asks only for what changed since the first; GraphQL pages shrink when
//! GitHub times out and grow back. The simulator's world is the truth the rows are counted
//! against, and its request log is the evidence of what was asked.
//!
//! As in `org_sync.rs`, the work runs on tokio's running clock (sqlx's pool timers misfire
//! under a paused one); none of these runs needs to wait out a quota window.

#![allow(clippy::expect_used, clippy::unwrap_used)]

#[path = "../../store/tests/common/mod.rs"]
mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use common::Fixture;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::{BoxFuture, GovernorConfig};
use headroom_core::{Governor, QuotaKey, Subject};
use headroom_github::org::{self, PullRequestsStage, names};
use headroom_http::sinks::MemoryCredentials;
use headroom_http::transport::SimTransport;
use headroom_http::{Client, ClientParts, Credential, Transport, TransportError, UrlPolicy};
use headroom_sim::{LogEntry, SimConfig, Simulator, TokenSpec};
use headroom_store::{Backend, CheckpointStatus, NewSyncRun, Store};
use headroom_sync::{
    ProgressEvent, ProgressSink, RunOutcome, RunSummary, Runner, RunnerConfig, Stage,
};
use tokio::sync::Notify;

const API: &str = "http://127.0.0.1:7000";
const TOKEN: &str = "ghp_orgdepthtoken0000000000000000000001";

fn start() -> Timestamp {
    Timestamp::from_second(1_800_000_000).expect("valid")
}

fn sim_config(repos: usize, deep: usize) -> SimConfig {
    let mut config = SimConfig::default()
        .with_org("acme", repos)
        .with_token(TokenSpec::user(TOKEN, "alice"))
        .with_seed(11);
    config.deep_repos = deep;
    // Request counts below assume every connection fits one outer page.
    config.density = headroom_sim::Density::SPARSE;
    config.public_base_url = API.to_owned();
    config
}

/// The simulator behind a gate: once `frozen`, a request never gets its answer, so a run
/// stops at its next request — deterministically, and holding no database transaction (a real
/// crash closes its connections; a dropped future mid-transaction would not).
#[derive(Debug)]
struct GatedTransport {
    inner: SimTransport,
    frozen: Arc<AtomicBool>,
}

impl Transport for GatedTransport {
    fn send(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<bytes::Bytes>, TransportError>> {
        if self.frozen.load(Ordering::SeqCst) {
            return Box::pin(std::future::pending());
        }
        self.inner.send(request)
    }
}

struct Rig<'a> {
    sim: Simulator,
    store: &'a Arc<dyn Store>,
    /// Set: the simulator stops answering (see [`GatedTransport`]).
    frozen: Arc<AtomicBool>,
    client: Client,
    clock: TokioClock,
}

fn rig(config: SimConfig, store: &Arc<dyn Store>) -> Rig<'_> {
    rig_with(config, store, None)
}

/// `attempts`: the client's attempts per request (`None`: its default retries).
fn rig_with(config: SimConfig, store: &Arc<dyn Store>, attempts: Option<u32>) -> Rig<'_> {
    let clock = TokioClock::anchored_at(start());
    let sim = Simulator::new(config, clock).expect("valid simulator");
    let governor =
        Governor::in_memory(GovernorConfig::default(), Arc::new(clock)).expect("governor");
    let credentials = Arc::new(MemoryCredentials::default());
    let frozen = Arc::new(AtomicBool::new(false));
    let mut parts = ClientParts::new(
        UrlPolicy::for_api_url(API).expect("loopback API"),
        governor,
        Arc::new(GatedTransport {
            inner: SimTransport::new(sim.clone()),
            frozen: frozen.clone(),
        }),
        clock,
    );
    parts.credentials = credentials;
    parts.config.jitter_seed = Some(5);
    if let Some(n) = attempts {
        parts.config.retry.max_attempts = n;
    }
    Rig {
        sim,
        store,
        frozen,
        client: Client::new(parts),
        clock,
    }
}

impl Rig<'_> {
    async fn known_owner(&self) {
        // The owner is known from an earlier run: no discovery request in the counts.
        self.client
            .credentials()
            .record(
                "127.0.0.1",
                Credential::new(TOKEN).fingerprint(),
                &Subject::User("alice".into()),
            )
            .await;
    }

    async fn new_run(&self) -> i64 {
        self.new_run_of(None).await
    }

    async fn new_run_of(&self, stages: Option<Vec<String>>) -> i64 {
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

    fn runner_with(&self, stages: Vec<Arc<dyn Stage>>, progress: Arc<dyn ProgressSink>) -> Runner {
        Runner::new(
            stages,
            Some(org::REPOSITORY_SOURCE),
            self.store.clone(),
            self.client.clone(),
            Some(Credential::new(TOKEN)),
            self.clock,
            RunnerConfig {
                inline_wait: SignedDuration::ZERO,
                ..RunnerConfig::default()
            },
        )
        .expect("valid graph")
        .with_progress(progress)
    }

    fn runner(&self) -> Runner {
        self.runner_with(org::stages(), Arc::new(Recorder::default()))
    }

    /// Runs to the end; a hibernating run is woken at its time on a paused clock.
    async fn drive(&self, runner: &Runner, id: i64) -> RunSummary {
        for _ in 0..20 {
            match runner.run(id).await.expect("run") {
                RunOutcome::Done { summary } => return *summary,
                RunOutcome::Hibernating { until, .. } => {
                    tokio::time::pause();
                    self.clock.sleep_until(until).await;
                    tokio::time::resume();
                }
                RunOutcome::Failed { reason, .. } => panic!("run failed: {reason}"),
            }
        }
        panic!("run did not finish in 20 wakes");
    }

    async fn rows(&self) -> BTreeMap<&'static str, u64> {
        let mut out = BTreeMap::new();
        for t in [
            "repositories",
            "issues",
            "issue_comments",
            "projects",
            "project_items",
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

    /// What the simulated organization holds, counted the way the tables count it.
    fn world_counts(&self) -> World {
        self.sim.with_world(|w| {
            let ids: Vec<u64> = w.org_repos().iter().map(|r| r.id).collect();
            let mut out = World::default();
            for id in ids {
                let c = w.content(id);
                for i in &c.issues {
                    match i.pull {
                        None => {
                            out.issues += 1;
                            out.comments += i.comments.len() as u64;
                            out.longest_comments = out.longest_comments.max(i.comments.len());
                        }
                        Some(p) => {
                            out.pulls += 1;
                            let shas: BTreeSet<&String> = c.pulls[p].commits.iter().collect();
                            out.commits += shas.len() as u64;
                            out.longest_commits = out.longest_commits.max(shas.len());
                        }
                    }
                }
                for p in &c.projects {
                    out.projects.insert(p.id);
                    out.items += p.items.len() as u64;
                    out.longest_items = out.longest_items.max(p.items.len());
                }
            }
            // The organization's projects that no repository links.
            for p in w.unlinked_org_projects() {
                out.unlinked_projects += 1;
                out.projects.insert(p.id);
                out.items += p.items.len() as u64;
            }
            out
        })
    }
}

#[derive(Debug, Default)]
struct World {
    issues: u64,
    comments: u64,
    pulls: u64,
    commits: u64,
    projects: BTreeSet<u64>,
    unlinked_projects: u64,
    items: u64,
    longest_comments: usize,
    longest_commits: usize,
    longest_items: usize,
}

/// Progress events; optionally fires once on a chosen page.
#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<ProgressEvent>>,
    /// On the first page of this stage and scope: freeze the simulator, then notify.
    stop_at: Option<(&'static str, String, Arc<AtomicBool>, Arc<Notify>)>,
}

impl ProgressSink for Recorder {
    fn event(&self, event: &ProgressEvent) {
        if let (
            Some((stage, scope, frozen, notify)),
            ProgressEvent::Page {
                stage: s,
                scope: sc,
                ..
            },
        ) = (&self.stop_at, event)
            && s == stage
            && sc == scope
        {
            frozen.store(true, Ordering::SeqCst);
            notify.notify_one();
        }
        self.events.lock().unwrap().push(event.clone());
    }
}

/// The stage a request was made for: GraphQL names it in `?stage=`, REST by its path.
fn stage_of(e: &LogEntry) -> String {
    if let Some(stage) = e.path.strip_prefix("/graphql?stage=") {
        return stage.to_owned();
    }
    let path = e.path.split('?').next().unwrap_or("");
    let segs: Vec<&str> = path.split('/').collect();
    match segs.as_slice() {
        ["", "repos", _, _, "commits", _] => names::COMMIT_FILES.to_owned(),
        ["", "repos", _, _, "commits", _, "check-runs"] => "check_runs".to_owned(),
        ["", "repos", _, _, "actions", "runs", _, "jobs"] => "workflow_jobs".to_owned(),
        ["", "repos", _, _, "actions", ..] => names::WORKFLOW_RUNS.to_owned(),
        _ => "other".to_owned(),
    }
}

fn by_stage(log: &[LogEntry]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for e in log {
        *out.entry(stage_of(e)).or_insert(0) += 1;
    }
    out
}

/// One value read straight from the fixture's database (the `Store` trait has no reads for
/// single rows of the sync tables).
async fn scalar<T>(fx: &Fixture, sql: &str) -> Option<T>
where
    T: Send + Unpin,
    for<'r> T: sqlx::Decode<'r, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite>,
    for<'r> T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    let sql = sqlx::AssertSqlSafe(sql.to_owned());
    match fx.store.backend() {
        Backend::Sqlite => {
            let options = sqlx::sqlite::SqliteConnectOptions::new().filename(&fx.target);
            let pool = sqlx::SqlitePool::connect_with(options).await.expect("open");
            let v = sqlx::query_scalar::<_, T>(sql)
                .fetch_optional(&pool)
                .await
                .expect("query");
            pool.close().await;
            v
        }
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&fx.target).await.expect("connect");
            let v = sqlx::query_scalar::<_, T>(sql)
                .fetch_optional(&pool)
                .await
                .expect("query");
            pool.close().await;
            v
        }
    }
}

headroom_testkit::both_backends!(
    every_project_item_comment_and_commit_is_stored,
    a_run_stopped_inside_a_nested_connection_redoes_at_most_one_page,
    a_second_run_asks_only_for_what_changed,
    graphql_timeouts_shrink_the_page_and_it_grows_back,
);

/// Gaps 1 and 2: with two repositories whose issue, pull request and project go past one
/// page (150 comments, 130 commits, 120 items), every row of the world is stored: project
/// numbers no longer collide (they are per organization), and nested connections are
/// followed with one query per further page.
async fn every_project_item_comment_and_commit_is_stored(fx: &Fixture) {
    let r = rig(sim_config(8, 2), &fx.store);
    r.known_owner().await;
    let id = r.new_run().await;
    let summary = r.drive(&r.runner(), id).await;
    assert_eq!(summary.stages_done.len(), 8, "{summary:?}");
    assert_eq!(r.sim.count_status(403), 0);

    let world = r.world_counts();
    assert!(world.longest_comments > 100, "{world:?}");
    assert!(world.longest_commits > 100, "{world:?}");
    assert!(world.longest_items > 100, "{world:?}");
    let rows = r.rows().await;
    assert_eq!(rows["repositories"], 8);
    assert_eq!(rows["issues"], world.issues, "{rows:?} vs {world:?}");
    assert_eq!(
        rows["issue_comments"], world.comments,
        "{rows:?} vs {world:?}"
    );
    assert_eq!(rows["pull_requests"], world.pulls, "{rows:?} vs {world:?}");
    assert_eq!(
        rows["pull_request_commits"], world.commits,
        "{rows:?} vs {world:?}"
    );
    assert_eq!(rows["projects"], world.projects.len() as u64, "{rows:?}");
    assert_eq!(rows["project_items"], world.items, "{rows:?} vs {world:?}");
    // Every pull-request commit got its files.
    assert_eq!(
        fx.store
            .commit_shas_without_files(r.sim.with_world(|w| w.org_repos()[0].id) as i64)
            .await
            .expect("query"),
        Vec::<String>::new()
    );

    // Numbers are unique per organization, as GitHub numbers an owner's projects.
    let numbers: BTreeSet<u64> = r.sim.with_world(|w| {
        let ids: Vec<u64> = w.org_repos().iter().map(|r| r.id).collect();
        let mut numbers: Vec<u64> = ids
            .into_iter()
            .flat_map(|id| {
                w.content(id)
                    .projects
                    .iter()
                    .map(|p| p.number)
                    .collect::<Vec<_>>()
            })
            .collect();
        numbers.extend(w.unlinked_org_projects().iter().map(|p| p.number));
        numbers.into_iter().collect()
    });
    assert_eq!(numbers.len(), world.projects.len());
    // The organization's projects that no repository links are stored too, items included.
    assert_eq!(world.unlinked_projects, 2);
    let unlinked = scalar::<i64>(
        fx,
        "SELECT COUNT(*) FROM projects WHERE title LIKE 'Roadmap %'",
    )
    .await;
    assert_eq!(unlinked, Some(2));

    // One follow-up per further page: 150 comments → 1 more, 130 commits → 1 more,
    // 120 items → 1 more, for each of the 2 deep repositories (on top of one page per
    // repository, every repository fitting one outer page). Projects also list the
    // organization's (one page) and fetch each of the two unlinked ones (one page each).
    let requests = by_stage(&r.sim.request_log());
    assert_eq!(requests[names::ISSUE_COMMENTS], 8 + 2, "{requests:?}");
    assert_eq!(requests[names::PULL_REQUESTS], 8 + 2, "{requests:?}");
    assert_eq!(requests[names::PROJECTS], 8 + 2 + 1 + 2, "{requests:?}");
}

/// Gap 2's checkpoint: a run stopped right after the outer page of a deep repository's
/// comments (its 150-comment issue still owing a page) resumes with the follow-up, and the
/// two halves together ask at most one page more than an uninterrupted run, with the same
/// rows.
async fn a_run_stopped_inside_a_nested_connection_redoes_at_most_one_page(fx: &Fixture) {
    // The uninterrupted run, on a store of its own.
    let baseline_fx = common::sqlite().await;
    let baseline = rig(sim_config(5, 1), &baseline_fx.store);
    baseline.known_owner().await;
    let id = baseline.new_run().await;
    baseline.drive(&baseline.runner(), id).await;
    let baseline_rows = baseline.rows().await;
    let baseline_requests = by_stage(&baseline.sim.request_log());
    baseline_fx.store.close().await;

    let r = rig(sim_config(5, 1), &fx.store);
    r.known_owner().await;
    let deep = r.sim.with_world(|w| {
        let repo = w.org_repos()[0].clone();
        format!("{}#{}", repo.full_name(), repo.id)
    });
    let stop = Arc::new(Notify::new());
    let recorder = Arc::new(Recorder {
        stop_at: Some((
            names::ISSUE_COMMENTS,
            deep.clone(),
            r.frozen.clone(),
            stop.clone(),
        )),
        ..Recorder::default()
    });
    let runner = r.runner_with(org::stages(), recorder);
    let id = r.new_run().await;
    tokio::select! {
        outcome = runner.run(id) => panic!("the run ended before the deep repository: {outcome:?}"),
        () = stop.notified() => {}
    }
    let checkpoint = fx
        .store
        .checkpoint(id, names::ISSUE_COMMENTS, &deep)
        .await
        .expect("read")
        .expect("the deep repository's checkpoint");
    let cursor = checkpoint.page_cursor.expect("a cursor mid-repository");
    assert!(
        cursor.contains("\"more\":[["),
        "a follow-up is owed: {cursor}"
    );
    let before = r.sim.request_log();
    // Repositories run concurrently: every comments scope still open at the stop may redo the
    // one page it had in flight (the contract is one page per scope in flight, not per run).
    // A scope whose first page was in flight has no checkpoint row yet: the open scopes are
    // the listed repositories whose comments are not done.
    let checkpoints = fx.store.checkpoints(id).await.expect("read");
    let done = checkpoints
        .iter()
        .filter(|c| c.stage == names::ISSUE_COMMENTS && c.status == CheckpointStatus::Done)
        .count();
    let listed = checkpoints
        .iter()
        .filter(|c| c.stage == org::REPOSITORY_SOURCE && !c.scope.is_empty())
        .count();
    let open_scopes = listed.saturating_sub(done).max(1);

    r.frozen.store(false, Ordering::SeqCst);
    let summary = r.drive(&r.runner(), id).await;
    assert_eq!(summary.stages_done.len(), 8);
    let after = by_stage(&r.sim.request_log()[before.len()..]);
    let total = by_stage(&before)[names::ISSUE_COMMENTS]
        + after.get(names::ISSUE_COMMENTS).copied().unwrap_or(0);
    assert!(
        total <= baseline_requests[names::ISSUE_COMMENTS] + open_scopes,
        "{total} vs {} + {open_scopes} open scopes",
        baseline_requests[names::ISSUE_COMMENTS]
    );
    // The organization's stage was done before its dependents started.
    assert_eq!(after.get(names::ORG), None, "org asked again: {after:?}");
    // The comments start once the repository list is complete, while the repositories' own
    // stage may still be fetching each one's details: it continues, redoing at most one
    // request per request in flight.
    let in_flight = headroom_sync::RunnerConfig::default().in_flight as usize;
    let repositories = by_stage(&before)
        .get(names::REPOSITORIES)
        .copied()
        .unwrap_or(0)
        + after.get(names::REPOSITORIES).copied().unwrap_or(0);
    assert!(
        repositories <= baseline_requests[names::REPOSITORIES] + in_flight,
        "repositories: {repositories} vs {} uninterrupted",
        baseline_requests[names::REPOSITORIES]
    );
    // Projects runs beside the comments (both GraphQL, neither waits for the other), so the
    // stop may land inside it: it continues, redoing at most one page per request in flight.
    let projects = by_stage(&before).get(names::PROJECTS).copied().unwrap_or(0)
        + after.get(names::PROJECTS).copied().unwrap_or(0);
    assert!(
        projects <= baseline_requests[names::PROJECTS] + in_flight,
        "projects: {projects} vs {} uninterrupted",
        baseline_requests[names::PROJECTS]
    );
    assert_eq!(
        r.rows().await,
        baseline_rows,
        "nothing lost, nothing doubled"
    );
}

/// Gap 3: a second run with nothing changed asks far less (issues and comments filtered by
/// `since`, pull requests stopped at the watermark, workflow runs stopped at the first
/// known run, commit files skipped), and after a few changes the third run stores exactly
/// those: the new comment, the retitled pull request, the new workflow run with its job.
async fn a_second_run_asks_only_for_what_changed(fx: &Fixture) {
    let r = rig(sim_config(6, 0), &fx.store);
    r.known_owner().await;
    let first_id = r.new_run().await;
    r.drive(&r.runner(), first_id).await;
    let first_log = r.sim.request_log();
    let first = by_stage(&first_log);
    let rows_after_first = r.rows().await;

    // Nothing changed.
    let second_id = r.new_run().await;
    let second_summary = r.drive(&r.runner(), second_id).await;
    let second_log: Vec<LogEntry> = r.sim.request_log()[first_log.len()..].to_vec();
    let second = by_stage(&second_log);
    assert_eq!(
        r.rows().await,
        rows_after_first,
        "nothing new, nothing lost"
    );
    assert_eq!(second.get(names::COMMIT_FILES), None, "{second:?}");
    assert_eq!(second.get("workflow_jobs"), None, "{second:?}");
    assert_eq!(second.get("check_runs"), None, "{second:?}");
    // One page of runs per repository, asked with the ETag of the first run's page: every
    // one answers 304, which costs an authorized request nothing.
    assert_eq!(second[names::WORKFLOW_RUNS], 6, "{second:?}");
    let runs_pages: Vec<&LogEntry> = second_log
        .iter()
        .filter(|e| e.path.contains("/actions/runs?"))
        .collect();
    assert_eq!(runs_pages.len(), 6);
    assert!(
        runs_pages.iter().all(|e| e.status == 304 && e.cost == 0),
        "{runs_pages:?}"
    );
    // The summary's points are what the simulator charged.
    let charged: u64 = second_log
        .iter()
        .filter(|e| e.bucket.as_deref() == Some("core"))
        .map(|e| e.cost)
        .sum();
    assert_eq!(
        second_summary.buckets["core"].points, charged,
        "{second_summary:?}"
    );
    // Issues, comments and pull requests: one probe query for all six repositories.
    for stage in [names::ISSUE_COMMENTS, names::PULL_REQUESTS] {
        assert_eq!(second[stage], 1, "{stage}: {second:?}");
    }
    assert_eq!(
        second[names::REPOSITORIES],
        first[names::REPOSITORIES] - 6 + 1
    );
    assert!(
        second_log.len() * 4 < first_log.len(),
        "second run {} requests vs first {}: {second:?} vs {first:?}",
        second_log.len(),
        first_log.len()
    );
    // The GraphQL stages wrote no issue, comment or pull request: none changed.
    for stage in [names::ISSUE_COMMENTS, names::PULL_REQUESTS] {
        assert_eq!(
            second_summary.stages.get(stage).map(|t| t.rows),
            Some(0),
            "{stage}: {second_summary:?}"
        );
    }

    // A few changes, at the simulator's now (after the first runs).
    let now = r.clock.now();
    let (repos, issue, pull, comments_on_issue) = r.sim.with_world(|w| {
        let repos: Vec<(u64, String)> = w
            .org_repos()
            .iter()
            .map(|r| (r.id, r.full_name()))
            .collect();
        let mut issue = None;
        let mut pull = None;
        for (id, _) in &repos {
            let c = w.content(*id);
            if issue.is_none()
                && let Some(i) = c.issues.iter().find(|i| i.pull.is_none())
            {
                issue = Some((*id, i.number, i.comments.len()));
            }
            if pull.is_none()
                && let Some(i) = c.issues.iter().find(|i| i.pull.is_some())
            {
                pull = Some((*id, i.number));
            }
        }
        let (issue_repo, number, comments) = issue.expect("an issue somewhere");
        (
            repos,
            (issue_repo, number),
            pull.expect("a pull request somewhere"),
            comments,
        )
    });
    let (new_comment, new_run) = r.sim.with_world(|w| {
        let comment = w
            .add_issue_comment(issue.0, issue.1, "alice", "A new thought.", now)
            .expect("issue exists");
        assert!(w.retitle_issue(pull.0, pull.1, "Retitled between syncs", now));
        let run = w
            .add_workflow_run(repos[0].0, now)
            .expect("a default branch");
        (comment, run)
    });

    let third_id = r.new_run().await;
    let third_summary = r.drive(&r.runner(), third_id).await;
    let third = by_stage(&r.sim.request_log()[first_log.len() + second_log.len()..]);
    // Exactly the changes: the changed issue's comments (all of them, the new one among
    // them), the retitled pull request and its commits, the new run, its job and its
    // head commit's check runs.
    let tally = |stage: &str| third_summary.stages.get(stage).map_or(0, |t| t.rows);
    assert_eq!(tally(names::ISSUE_COMMENTS), comments_on_issue as u64 + 1);
    let pull_commits = r.sim.with_world(|w| {
        let c = w.content(pull.0);
        let i = c.issues.iter().find(|i| i.number == pull.1).unwrap();
        c.pulls[i.pull.unwrap()].commits.len() as u64
    });
    assert_eq!(tally(names::PULL_REQUESTS), 1 + pull_commits);
    // The repository with a new run answers its runs page in full (its ETag changed).
    let third_log = &r.sim.request_log()[first_log.len() + second_log.len()..];
    assert_eq!(
        third_log
            .iter()
            .filter(|e| e.path.contains("/actions/runs?") && e.status == 200)
            .count(),
        1
    );
    assert_eq!(third.get("workflow_jobs"), Some(&1), "{third:?}");
    assert_eq!(third.get("check_runs"), Some(&1), "{third:?}");
    assert_eq!(third.get(names::COMMIT_FILES), None, "{third:?}");
    println!(
        "requests: first run {} {first:?}; no change {} {second:?}; after 3 changes {} {third:?}",
        first_log.len(),
        second_log.len(),
        third.values().sum::<usize>()
    );
    let rows = r.rows().await;
    assert_eq!(
        rows["issue_comments"],
        rows_after_first["issue_comments"] + 1
    );
    assert_eq!(rows["workflow_runs"], rows_after_first["workflow_runs"] + 1);
    assert_eq!(rows["workflow_jobs"], rows_after_first["workflow_jobs"] + 1);
    assert_eq!(rows["pull_requests"], rows_after_first["pull_requests"]);
    let count = |sql: String| async move { scalar::<i64>(fx, &sql).await };
    assert_eq!(
        count(format!(
            "SELECT COUNT(*) FROM issue_comments WHERE github_id = {new_comment}"
        ))
        .await,
        Some(1)
    );
    assert_eq!(
        count(format!(
            "SELECT COUNT(*) FROM workflow_runs WHERE github_id = {new_run}"
        ))
        .await,
        Some(1)
    );
    let title = scalar::<String>(
        fx,
        &format!(
            "SELECT title FROM pull_requests WHERE repository_github_id = {} AND number = {}",
            pull.0, pull.1
        ),
    )
    .await;
    assert_eq!(title.as_deref(), Some("Retitled between syncs"));
    assert_eq!(r.sim.count_status(403), 0);
}

/// Repositories enough that, after the second timeout, the pull requests' page still has the
/// successes it needs to grow back before the stage runs out of work (with 8, it did not in 1
/// run of 3 on PostgreSQL: the order of concurrent repositories decides how many are left).
const REPOS_FOR_GROWTH: usize = 16;

/// Gap 4: GitHub answers 502 to queries that may return more than 3,100 nodes — a page of
/// 50 pull requests with 100 commits each — twice, then recovers. (The client sends each
/// request once here, so every 502 reaches the stage; its own retries are tested in
/// headroom-http.) The pull-request stage halves its page each time, stores every row an
/// unfaulted run stores, and grows back to full pages after a few successes.
async fn graphql_timeouts_shrink_the_page_and_it_grows_back(fx: &Fixture) {
    let only_pulls = Some(vec![names::PULL_REQUESTS.to_owned()]);
    let baseline_fx = common::sqlite().await;
    let baseline = rig(sim_config(REPOS_FOR_GROWTH, 1), &baseline_fx.store);
    baseline.known_owner().await;
    let id = baseline.new_run_of(only_pulls.clone()).await;
    baseline.drive(&baseline.runner(), id).await;
    let baseline_rows = baseline.rows().await;
    baseline_fx.store.close().await;

    let mut config = sim_config(REPOS_FOR_GROWTH, 1);
    config.faults.graphql_timeout_above_nodes = Some(3_100);
    config.faults.graphql_timeouts = 2;
    let r = rig_with(config, &fx.store, Some(1));
    r.known_owner().await;
    let pulls = Arc::new(PullRequestsStage::new(org::decl::PULL_REQUESTS));
    let stages: Vec<Arc<dyn Stage>> = org::stages()
        .into_iter()
        .map(|s| {
            if s.decl().name == names::PULL_REQUESTS {
                pulls.clone() as Arc<dyn Stage>
            } else {
                s
            }
        })
        .collect();
    let runner = r.runner_with(stages, Arc::new(Recorder::default()));
    let id = r.new_run_of(only_pulls).await;
    let summary = r.drive(&runner, id).await;
    // `pull_requests` and the listing it needs (`repositories`, which stores the organization).
    assert_eq!(summary.stages_done.len(), 2, "{summary:?}");
    assert_eq!(
        r.rows().await,
        baseline_rows,
        "every row, as without faults"
    );
    assert!(r.rows().await["pull_request_commits"] > 100);
    assert_eq!(r.sim.count_status(502), 2);

    // The outer queries of the stage (follow-ups ask for one pull request's commits).
    let wanted = format!("stage={}", names::PULL_REQUESTS);
    let asked: Vec<(u64, bool)> = r
        .sim
        .graphql_queries()
        .iter()
        .filter(|q| q.url_query.as_deref() == Some(wanted.as_str()) && q.node_count > 100)
        .map(|q| (q.node_count, q.timed_out))
        .collect();
    let full = 50 + 50 * 100;
    assert_eq!(asked[0], (full, true), "{asked:?}");
    for (k, (n, timed_out)) in asked.iter().enumerate() {
        if *timed_out {
            assert_eq!(*n, full, "{asked:?}");
            // Next: half the page, answered.
            assert_eq!(asked[k + 1], (25 + 25 * 100, false), "{asked:?}");
        }
    }
    let last_timeout = asked.iter().rposition(|(_, t)| *t).unwrap();
    assert!(
        asked[last_timeout..].contains(&(full, false)),
        "never grew back: {asked:?}"
    );
    assert_eq!(
        pulls.page_size(),
        50,
        "the pull requests' page is full again"
    );
}
