//! Several `headroom` processes share one identity's quota through their database — an SQLite
//! file or PostgreSQL — against `headroom sim` over HTTP: together they never exceed the
//! in-flight ceiling, never trip the 900-points-a-minute secondary limit, and all honour one
//! secondary block another process met.
//!
//! The PostgreSQL half needs `HEADROOM_TEST_DATABASE_URL` (an admin URL; `scripts/test` starts
//! a throwaway PostgreSQL and sets it). Without it those tests say they were skipped — except
//! under `CI`, where they fail.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use headroom_core::clock::{SignedDuration, Timestamp};

mod common;
use common::{BIN, Shared, sim_log};

/// `headroom sim` on a free port, logging every request; its base URL.
fn start_sim(args: &[&str], log: &Path) -> (Child, String) {
    let mut sim = Command::new(BIN)
        .args(["sim", "--addr", "127.0.0.1:0"])
        .args([
            "--token", "t1=alice", "--token", "t2=alice", "--token", "t3=alice",
        ])
        .args(args)
        .arg("--log")
        .arg(log)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("sim starts");
    let mut first = String::new();
    BufReader::new(sim.stdout.take().expect("piped"))
        .read_line(&mut first)
        .expect("first line");
    let api = first.trim().trim_start_matches("listening on ").to_owned();
    (sim, api)
}

/// `headroom quota probe` with `token`, started.
fn probe(dir: &Path, db: &str, api: &str, token: &str, requests: u32, concurrency: u32) -> Child {
    Command::new(BIN)
        .current_dir(dir)
        .args(["quota", "probe", "--json", "--db", db, "--api-url", api])
        .args(["--requests", &requests.to_string()])
        .args(["--concurrency", &concurrency.to_string()])
        .env("GITHUB_TOKEN", token)
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_CONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("probe starts")
}

fn report(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}\nstderr: {}\nstdout: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).expect("json report")
}

/// Migrates once before a race, so every process starts on the same schema.
fn migrate(dir: &Path, db: &str, api: &str) {
    let status = Command::new(BIN)
        .current_dir(dir)
        .args(["quota", "show", "--db", db, "--api-url", api])
        .env("GITHUB_TOKEN", "t1")
        .env_remove("HEADROOM_CONFIG")
        .status()
        .expect("runs");
    assert!(status.success());
}

/// Three processes, 400 reads each at 25 at once, against 900 points a minute: the
/// simulator's first minute serves at most 900 of the 1,200, what would wait longer is
/// deferred, no 403 comes back and never more than the ceiling is in flight across the three.
async fn three_processes_share_the_ceiling_and_the_points_limit(shared: Shared, dir: &Path) {
    let log = dir.join("sim.log");
    let (mut sim, api) = start_sim(&["--latency-ms", "5"], &log);
    migrate(dir, &shared.db, &api);
    let probes: Vec<Child> = ["t1", "t2", "t3"]
        .iter()
        .map(|token| probe(dir, &shared.db, &api, token, 400, 25))
        .collect();
    let reports: Vec<serde_json::Value> = probes
        .into_iter()
        .map(|p| report(&p.wait_with_output().expect("probe")))
        .collect();
    let _ = sim.kill();
    let _ = sim.wait();
    let sum = |field: &str| -> u64 { reports.iter().map(|r| r[field].as_u64().unwrap_or(0)).sum() };
    assert_eq!(sum("ok") + sum("deferred"), 1_200, "{reports:?}");
    assert!(sum("ok") > 300, "{reports:?}");

    let entries = sim_log(&log);
    // The limit is the simulator's minute, which opens at its first request (the migration's
    // `GET /user`). Counting by the run's length instead failed on a loaded machine: three
    // probes slower than a minute rightly spent a second minute's points.
    let served = first_minute_served(&entries);
    assert!(
        served <= 900,
        "900 points a minute, shared: {served} served in the first minute; {reports:?}"
    );
    let refused = entries
        .iter()
        .filter(|e| e["status"] == 403 || e["status"] == 429)
        .count();
    assert_eq!(refused, 0, "no 403 or 429 in the simulator's log");
    let max_in_flight = entries
        .iter()
        .filter_map(|e| e["in_flight"].as_u64())
        .max()
        .unwrap_or(0);
    assert!(
        max_in_flight < 10,
        "the shared ceiling held across the processes: {max_in_flight} others in flight"
    );
    shared.finish().await;
}

/// Requests the simulator served within 60 s of its first, by its log's timestamps.
fn first_minute_served(entries: &[serde_json::Value]) -> usize {
    let at = |e: &serde_json::Value| -> Timestamp {
        e["time"]
            .as_str()
            .and_then(|t| t.parse().ok())
            .expect("every log line has its time")
    };
    let Some(first) = entries.first().map(at) else {
        return 0;
    };
    let end = first + SignedDuration::from_secs(60);
    entries
        .iter()
        .filter(|e| e["status"] == 200 && at(e) < end)
        .count()
}

/// One process meets a secondary limit (403, retry-after 60); two more started after it on
/// the same database, with other tokens of the same owner, send nothing: they read the block
/// from the shared state and defer. The three owners are learned first from a simulator
/// without the limit (a token's first `GET /user` would otherwise be the request that trips
/// it, before anyone knows whose quota it spends).
async fn one_secondary_block_holds_every_process(shared: Shared, dir: &Path) {
    let plain_log = dir.join("plain.log");
    let (mut plain, api) = start_sim(&[], &plain_log);
    for token in ["t1", "t2", "t3"] {
        let status = Command::new(BIN)
            .current_dir(dir)
            .args(["quota", "show", "--db", &shared.db, "--api-url", &api])
            .env("GITHUB_TOKEN", token)
            .env_remove("HEADROOM_CONFIG")
            .status()
            .expect("runs");
        assert!(status.success());
    }
    let _ = plain.kill();
    let _ = plain.wait();

    let log = dir.join("sim.log");
    let (mut sim, api) = start_sim(&["--scenario", "secondary_rate_limited"], &log);
    let first = report(
        &probe(dir, &shared.db, &api, "t1", 5, 1)
            .wait_with_output()
            .expect("probe"),
    );
    let sent = sim_log(&log);
    assert_eq!(
        sent.len(),
        1,
        "one request, then the block: {first} {sent:?}"
    );
    assert_eq!(
        sent[0]["status"], 403,
        "the scenario's secondary limit answered"
    );
    let others: Vec<serde_json::Value> = ["t2", "t3"]
        .iter()
        .map(|t| {
            report(
                &probe(dir, &shared.db, &api, t, 5, 1)
                    .wait_with_output()
                    .expect("probe"),
            )
        })
        .collect();
    let _ = sim.kill();
    let _ = sim.wait();
    assert_eq!(
        sim_log(&log).len(),
        1,
        "no request from the later processes: {others:?}"
    );
    for r in &others {
        assert_eq!(r["deferred"], 5, "{r}");
        assert_eq!(r["ok"], 0, "{r}");
    }
    shared.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_share_one_quota_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    three_processes_share_the_ceiling_and_the_points_limit(
        Shared::sqlite(dir.path()).await,
        dir.path(),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_share_one_quota_on_postgres() {
    let Some(shared) = Shared::postgres("three_processes_share_one_quota").await else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    three_processes_share_the_ceiling_and_the_points_limit(shared, dir.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_secondary_block_holds_every_process_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    one_secondary_block_holds_every_process(Shared::sqlite(dir.path()).await, dir.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_secondary_block_holds_every_process_on_postgres() {
    let Some(shared) = Shared::postgres("one_secondary_block_holds").await else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    one_secondary_block_holds_every_process(shared, dir.path()).await;
}
