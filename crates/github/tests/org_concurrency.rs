//! Concurrency within one organization sync, against the in-process simulator with a little
//! latency so requests overlap: repositories of a stage run at once and a REST stage beside
//! a GraphQL one, yet per repository no stage starts before its dependency is done, the run
//! never holds more requests in flight than its slots, and it stores what a serial run
//! stores.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use headroom_core::QuotaKey;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::GovernorConfig;
use headroom_github::org;
use headroom_http::Credential;
use headroom_sim::{SimConfig, Simulator, TokenSpec};
use headroom_store::NewSyncRun;
use headroom_sync::{ProgressEvent, ProgressSink, RunOutcome, Runner, RunnerConfig};

mod org_rig;
use org_rig::API;
const TOKEN: &str = "ghp_orgconcurrency0000000000000000000001";

/// Every progress event, in the order the run emitted them.
#[derive(Default)]
struct Events(Mutex<Vec<ProgressEvent>>);

impl ProgressSink for Events {
    fn event(&self, event: &ProgressEvent) {
        self.0.lock().unwrap().push(event.clone());
    }
}

struct Outcome {
    events: Vec<ProgressEvent>,
    rows: BTreeMap<&'static str, u64>,
    peak_in_flight: u32,
    refused: usize,
}

/// A six-repository organization, a store and a runner with `in_flight` slots.
struct Rig {
    clock: TokioClock,
    sim: Simulator,
    store: Arc<dyn headroom_store::Store>,
    dir: tempfile::TempDir,
    runner: Runner,
    id: i64,
    events: Arc<Events>,
}

async fn rig(in_flight: u32) -> Rig {
    let clock = TokioClock::anchored_at(Timestamp::from_second(1_800_000_000).expect("valid"));
    let mut config = SimConfig::default()
        .with_org("acme", 6)
        .with_token(TokenSpec::user(TOKEN, "alice"))
        .with_seed(11);
    config.public_base_url = API.to_owned();
    // Enough latency for requests to meet at the simulator.
    config.faults.latency = SignedDuration::from_millis(4);
    let sim = Simulator::new(config, clock).expect("valid simulator");
    let (client, _) = org_rig::client(&sim, clock, TOKEN, "alice", GovernorConfig::default()).await;
    let (store, dir) = org_rig::sqlite_store().await;
    let id = store
        .create_sync_run(&NewSyncRun {
            credential: None,
            kind: "org".into(),
            target: "acme".into(),
            key: QuotaKey::user("127.0.0.1", "alice"),
            requested_stages: None,
            created_at: clock.now(),
        })
        .await
        .expect("run")
        .id;
    let events = Arc::new(Events::default());
    let runner = Runner::new(
        org::stages(),
        Some(org::REPOSITORY_SOURCE),
        store.clone(),
        client,
        Some(Credential::new(TOKEN)),
        clock,
        RunnerConfig {
            in_flight,
            ..RunnerConfig::default()
        },
    )
    .expect("valid graph")
    .with_progress(events.clone());
    Rig {
        clock,
        sim,
        store,
        dir,
        runner,
        id,
        events,
    }
}

impl Rig {
    /// Drives the run until it is done.
    async fn finish(&self) {
        for _ in 0..50 {
            match self.runner.run(self.id).await.expect("run") {
                RunOutcome::Done { .. } => return,
                RunOutcome::Hibernating { until, .. } => self.clock.sleep_until(until).await,
                RunOutcome::Failed { reason, .. } => panic!("run failed: {reason}"),
            }
        }
        panic!("the run did not finish");
    }

    /// A connection of its own to the store's SQLite file.
    async fn sql(&self) -> sqlx::SqlitePool {
        let path = self.dir.path().join("headroom.db");
        sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
            .await
            .expect("connects")
    }
}

/// Syncs a six-repository organization to the end with `in_flight` slots.
async fn sync(in_flight: u32) -> Outcome {
    let Rig {
        clock,
        sim,
        store,
        dir: _dir,
        runner,
        id,
        events,
    } = rig(in_flight).await;
    let mut done = false;
    for _ in 0..50 {
        match runner.run(id).await.expect("run") {
            RunOutcome::Done { .. } => {
                done = true;
                break;
            }
            RunOutcome::Hibernating { until, .. } => clock.sleep_until(until).await,
            RunOutcome::Failed { reason, .. } => panic!("run failed: {reason}"),
        }
    }
    assert!(done, "the run finished");
    let mut rows = BTreeMap::new();
    for t in [
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
        rows.insert(t, store.count_rows(t).await.expect("count"));
    }
    let log = sim.request_log();
    let events = events.0.lock().unwrap().clone();
    Outcome {
        events,
        rows,
        // `in_flight` is what was in flight when a request arrived, itself excluded.
        peak_in_flight: log.iter().map(|e| e.in_flight + 1).max().unwrap_or(0),
        refused: log.iter().filter(|e| e.status >= 400).count(),
    }
}

/// The position of each stage's start and end, and each (stage, scope)'s first and last page.
struct Timeline {
    started: BTreeMap<String, usize>,
    done: BTreeMap<String, usize>,
    pages: BTreeMap<(String, String), (usize, usize)>,
}

fn timeline(events: &[ProgressEvent]) -> Timeline {
    let mut t = Timeline {
        started: BTreeMap::new(),
        done: BTreeMap::new(),
        pages: BTreeMap::new(),
    };
    for (i, e) in events.iter().enumerate() {
        match e {
            ProgressEvent::StageStarted { stage, .. } => {
                t.started.entry(stage.clone()).or_insert(i);
            }
            ProgressEvent::StageDone { stage, .. } => {
                t.done.insert(stage.clone(), i);
            }
            ProgressEvent::Page { stage, scope, .. } => {
                let span = t
                    .pages
                    .entry((stage.clone(), scope.clone()))
                    .or_insert((i, i));
                span.1 = i;
            }
            _ => {}
        }
    }
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repositories_and_stages_overlap_and_each_waits_for_its_dependency() {
    let slots = 6;
    let concurrent = sync(slots).await;
    let serial = sync(1).await;

    assert_eq!(
        concurrent.rows, serial.rows,
        "the same rows as a serial run"
    );
    assert!(concurrent.rows["commit_files"] > 0, "{:?}", concurrent.rows);
    assert_eq!(concurrent.refused, 0, "no request refused");
    assert_eq!(serial.peak_in_flight, 1, "one slot: one request at a time");
    assert!(
        concurrent.peak_in_flight > 1 && concurrent.peak_in_flight <= slots,
        "{} in flight with {slots} slots",
        concurrent.peak_in_flight
    );

    let t = timeline(&concurrent.events);
    // A stage that needs only the repository list starts after the source's last listing
    // page. Any other: per repository, and for the whole stage, a dependent's first page
    // comes after its dependency's last page, and it starts only once the dependency is done.
    let mut edges = 0;
    let mut early = 0;
    for stage in org::stages() {
        let decl = stage.decl();
        for dep in decl.depends_on {
            edges += 1;
            let Some(start) = t.started.get(decl.name) else {
                panic!("{} never ran", decl.name);
            };
            if decl.after_listing {
                let Some((_, listed)) = t.pages.get(&((*dep).to_owned(), String::new())) else {
                    panic!("{dep} never listed");
                };
                assert!(start > listed, "{} started before {dep} listed", decl.name);
                if t.done.get(*dep).is_some_and(|done| start < done) {
                    early += 1;
                }
                continue;
            }
            let Some(dep_done) = t.done.get(*dep) else {
                panic!("{dep} never ran");
            };
            assert!(
                start > dep_done,
                "{} started before {dep} was done",
                decl.name
            );
            for ((s, scope), (first, _)) in &t.pages {
                if s != decl.name {
                    continue;
                }
                if let Some((_, dep_last)) = t.pages.get(&((*dep).to_owned(), scope.clone())) {
                    assert!(
                        first > dep_last,
                        "{} paged {scope} before {dep} finished it",
                        decl.name
                    );
                }
            }
        }
    }
    assert!(
        early > 0,
        "no stage that needs only the list started before its source was done"
    );
    assert!(edges > 0, "the graph has dependencies");

    // Overlap, from the run's own events: two stages running at once, and within a stage
    // two repositories' page spans overlapping.
    let running_together = t.started.iter().any(|(a, a_start)| {
        t.started.iter().any(|(b, b_start)| {
            a != b && a_start < b_start && t.done.get(a).is_some_and(|a_done| a_done > b_start)
        })
    });
    assert!(running_together, "no two stages ran at once");
    let spans: Vec<_> = t
        .pages
        .iter()
        .filter(|((_, scope), _)| !scope.is_empty())
        .collect();
    let scopes_overlap = spans.iter().any(|((sa, a), (a0, a1))| {
        spans
            .iter()
            .any(|((sb, b), (b0, _))| sa == sb && a != b && a0 < b0 && b0 < a1)
    });
    assert!(
        scopes_overlap,
        "no two repositories of a stage paged at once"
    );
}

/// A write that fails (the database restarting under the run) stops the run, and what the
/// failed write carried stays owed: the requests of one repository that run side by side
/// share one cursor, and a sibling's later write must not commit a cursor that no longer
/// owes an answer nobody stored. Seen in CI as three workflow jobs missing after a
/// PostgreSQL restart and a resume.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_write_leaves_its_answer_owed_while_its_siblings_store_theirs() {
    let reference = rig(6).await;
    reference.finish().await;
    let whole = reference
        .store
        .count_rows("workflow_jobs")
        .await
        .expect("count");
    let checks = reference
        .store
        .count_rows("check_runs")
        .await
        .expect("count");

    let r = rig(6).await;
    let sql = r.sql().await;
    // Every third run's jobs cannot be stored; the other runs' jobs and every check run can.
    sqlx::query(
        "CREATE TRIGGER injected_failure BEFORE INSERT ON workflow_jobs \
         WHEN NEW.workflow_run_github_id % 3 = 0 \
         BEGIN SELECT RAISE(ABORT, 'injected write failure'); END",
    )
    .execute(&sql)
    .await
    .expect("trigger");
    let mut failures = 0;
    for _ in 0..50 {
        match r.runner.run(r.id).await {
            Err(e) => {
                assert!(e.to_string().contains("injected write failure"), "{e}");
                failures += 1;
                break;
            }
            Ok(RunOutcome::Hibernating { until, .. }) => r.clock.sleep_until(until).await,
            Ok(other) => panic!("the run ended despite the failing writes: {other:?}"),
        }
    }
    assert_eq!(failures, 1, "the failing write stopped the run");
    let stored = r.store.count_rows("workflow_jobs").await.expect("count");
    assert!(stored < whole, "{stored} of {whole} jobs before the resume");

    sqlx::query("DROP TRIGGER injected_failure")
        .execute(&sql)
        .await
        .expect("drop");
    r.finish().await;
    assert_eq!(
        r.store.count_rows("workflow_jobs").await.expect("count"),
        whole,
        "every job stored after the resume"
    );
    assert_eq!(
        r.store.count_rows("check_runs").await.expect("count"),
        checks
    );
}
