//! The chaos suite's many workers: several `headroom run` services and `sync worker`s on one
//! database — four and two on PostgreSQL, three processes in all on one SQLite file — against
//! one identity at the simulator, picking up a sync run a killed process left and the feed.
//! Together they poll the due source once, apply no enrichment twice, drive the sync run from
//! one worker only, are never refused (no 403 or 429) and never exceed the identity's in-flight
//! ceiling in total; the run stores what an uninterrupted run stores.

#![allow(clippy::expect_used)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use headroom_core::clock::{Clock, SignedDuration, TokioClock};
use serde_json::Value;

mod common;
use common::{Shared, Sim, sim_log};

fn headroom(dir: &Path, db: &str, sim: &Sim, args: &[&str]) -> Command {
    common::headroom_against(dir, db, &sim.url, args)
}

/// A sync run left behind: `sync org` killed after its first stored page.
fn leave_a_sync_run(dir: &Path, db: &str, sim: &Sim) {
    let mut child = headroom(
        dir,
        db,
        sim,
        &["sync", "org", "acme", "--json", "--claim-secs", "1"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("starts");
    let stdout = child.stdout.take().expect("piped");
    let paged = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|l| l.contains("\"event\":\"sync.page\""));
    assert!(paged, "the run stored a page before it was killed");
    child.kill().expect("SIGKILL");
    let _ = child.wait();
}

/// The workers, each logging to `worker-N.log` in `dir`.
fn start_workers(
    dir: &Path,
    db: &str,
    sim: &Sim,
    services: usize,
    sync_workers: usize,
) -> Vec<Child> {
    let service = [
        "run",
        "--tick-secs",
        "1",
        "--no-listen",
        "--search-pacing",
        "0",
        "--sync-poll-secs",
        "1",
        "--sync-claim-secs",
        "1",
        "--reset-margin-secs",
        "1",
    ];
    let worker = [
        "sync",
        "worker",
        "--json",
        "--poll-secs",
        "1",
        "--claim-secs",
        "1",
        "--reset-margin-secs",
        "1",
    ];
    let kinds = std::iter::repeat_n(&service[..], services)
        .chain(std::iter::repeat_n(&worker[..], sync_workers));
    kinds
        .enumerate()
        .map(|(n, args)| {
            let log = std::fs::File::create(dir.join(format!("worker-{n}.log"))).expect("log");
            let err = log.try_clone().expect("log");
            headroom(dir, db, sim, args)
                .env("RUST_LOG", "info")
                .stdout(log)
                .stderr(err)
                .spawn()
                .expect("worker starts")
        })
        .collect()
}

/// One number from the shared database.
async fn count(db: &str, text: &str) -> i64 {
    let sql = sqlx::AssertSqlSafe(text);
    if db.starts_with("postgres://") {
        let pool = sqlx::PgPool::connect(db).await.expect("connect");
        let n = sqlx::query_scalar(sql).fetch_one(&pool).await.expect(text);
        pool.close().await;
        n
    } else {
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(db)
            .read_only(true);
        let pool = sqlx::SqlitePool::connect_with(options).await.expect("open");
        let n = sqlx::query_scalar(sql).fetch_one(&pool).await.expect(text);
        pool.close().await;
        n
    }
}

/// What the workers are waiting for, for the report of a timeout.
const PROGRESS: &[&str] = &[
    "SELECT COUNT(*) FROM sync_runs WHERE status <> 'done'",
    "SELECT COUNT(*) FROM actors WHERE enrichment_status IN ('pending', 'retryable_failure')",
    "SELECT COUNT(*) FROM repositories \
     WHERE enrichment_status IN ('pending', 'retryable_failure')",
    "SELECT COUNT(*) FROM push_events",
];

/// The sync run done, the default scenario's four events stored and every entity settled
/// (enriched, or gone for good).
async fn all_done(db: &str) -> bool {
    count(db, PROGRESS[0]).await == 0
        && count(db, PROGRESS[1]).await == 0
        && count(db, PROGRESS[2]).await == 0
        && count(db, PROGRESS[3]).await == 4
}

async fn many_workers(shared: Shared, dir: &Path, services: usize, sync_workers: usize) {
    let log = dir.join("sim.log");
    let log_arg = log.display().to_string();
    let sim = Sim::start(&[
        "--token",
        "t1=alice",
        "--repos",
        "4",
        "--latency-ms",
        "20",
        "--log",
        &log_arg,
    ]);
    leave_a_sync_run(dir, &shared.db, &sim);
    let before = sim_log(&log).len();
    let mut workers = start_workers(dir, &shared.db, &sim, services, sync_workers);

    let clock = TokioClock::system();
    let deadline = clock.now() + SignedDuration::from_secs(120);
    while !all_done(&shared.db).await {
        if clock.now() >= deadline {
            let mut report = Vec::new();
            for sql in PROGRESS {
                report.push(format!("{sql}: {}", count(&shared.db, sql).await));
            }
            for n in 0..services + sync_workers {
                let text = std::fs::read_to_string(dir.join(format!("worker-{n}.log")))
                    .unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(5).collect();
                report.push(format!("worker {n}: {}", tail.join("\n")));
            }
            panic!("not done within 2 minutes:\n{}", report.join("\n"));
        }
        clock.sleep(SignedDuration::from_millis(250)).await;
    }
    for w in &mut workers {
        let _ = w.kill();
        let _ = w.wait();
    }
    let entries = sim_log(&log);

    // Never refused, never past the ceiling of 10 in flight (the log counts the others).
    let refused: Vec<&Value> = entries
        .iter()
        .filter(|e| e["status"] == 403 || e["status"] == 429)
        .collect();
    assert!(refused.is_empty(), "{refused:?}");
    let most = entries.iter().filter_map(|e| e["in_flight"].as_u64()).max();
    assert!(most.is_some_and(|m| m < 10), "in flight: {most:?}");

    // One poll of the due source, no search or detail request twice.
    let mut paths: HashMap<&str, usize> = HashMap::new();
    for e in &entries[before..] {
        *paths
            .entry(e["path"].as_str().unwrap_or_default())
            .or_default() += 1;
    }
    let polls: usize = paths
        .iter()
        .filter(|(p, _)| p.starts_with("/events"))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(polls, 1, "one poll: {paths:?}");
    for (path, n) in &paths {
        if path.starts_with("/search/")
            || path.starts_with("/users/octo")
            || path.starts_with("/repos/octo")
        {
            assert_eq!(*n, 1, "{path} asked {n} times");
        }
    }
    assert_eq!(
        count(
            &shared.db,
            "SELECT COUNT(*) FROM (SELECT entity_kind, entity_github_id FROM enrichment_observations \
             WHERE source IN ('search', 'detail') GROUP BY entity_kind, entity_github_id \
             HAVING COUNT(*) > 1) AS twice"
        )
        .await,
        0,
        "an enrichment applied twice"
    );

    // One worker drove the sync run (started its remaining stages).
    let paging: Vec<usize> = (0..services + sync_workers)
        .filter(|n| {
            std::fs::read_to_string(dir.join(format!("worker-{n}.log")))
                .expect("worker log")
                .contains("\"event\":\"sync.stage_started\"")
        })
        .collect();
    let events = |n: usize| -> std::collections::BTreeSet<String> {
        std::fs::read_to_string(dir.join(format!("worker-{n}.log")))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| v["event"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(
        paging.len(),
        1,
        "workers that paged the run: {paging:?}; {:?}",
        (0..services + sync_workers).map(events).collect::<Vec<_>>()
    );

    // And it stored what an uninterrupted run stores.
    let reference = dir.join("reference.db").display().to_string();
    let out = headroom(
        dir,
        &reference,
        &sim,
        &["sync", "org", "acme", "--json", "--wait"],
    )
    .output()
    .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tables = |db: &str| -> Value {
        let out = headroom(dir, db, &sim, &["sync", "status", "1", "--json"])
            .output()
            .expect("runs");
        let status: Value = serde_json::from_slice(&out.stdout).expect("status JSON");
        status[0]["tables"].clone()
    };
    let (mut shared_tables, mut whole) = (tables(&shared.db), tables(&reference));
    // The shared database also holds the feed's three repositories.
    let repositories = |t: &mut Value| t["repositories"].take().as_u64().unwrap_or(0);
    assert_eq!(
        repositories(&mut shared_tables),
        repositories(&mut whole) + 3
    );
    assert_eq!(shared_tables, whole);
    assert!(whole["pull_requests"].as_u64().unwrap_or(0) > 0, "{whole}");
    shared.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_workers_on_postgres_share_one_identity_and_do_each_thing_once() {
    let Some(shared) = Shared::postgres("many_workers").await else {
        return;
    };
    let dir = tempfile::tempdir().expect("tmp");
    many_workers(shared, dir.path(), 4, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_on_one_sqlite_file_share_one_identity_and_do_each_thing_once() {
    let dir = tempfile::tempdir().expect("tmp");
    let shared = Shared::sqlite(dir.path()).await;
    many_workers(shared, dir.path(), 2, 1).await;
}
