//! The check of a long sync, black-box and scaled to seconds: `headroom sync org
//! --wait` against a `headroom sim` whose GraphQL windows hold 24 points and last 2 s, under the
//! default deferral budgets (10 deferrals, 2 h per episode), must cross more than ten windows
//! of one bucket, deferring more often than one episode's budget allows, and finish with no
//! 403, its summary's requests and points per bucket equal to the simulator's log. The same command at the scale (40 repositories, 20 s windows)
//! is `scripts/check-long-sync`.

#![allow(clippy::expect_used)]

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

mod common;
use common::{BIN, Sim};

#[test]
fn a_sync_crossing_more_than_ten_windows_finishes_without_a_403() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("sim.jsonl");
    let sim = Sim::start(&[
        "--org",
        "acme",
        "--repos",
        "30",
        "--token",
        "t1=alice",
        "--window-secs",
        "2",
        "--core-limit",
        "300",
        "--graphql-limit",
        "24",
        "--log",
        log.to_str().expect("utf-8"),
    ]);
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .args([
            "sync",
            "org",
            "acme",
            "--json",
            "--wait",
            "--reset-margin-secs",
            "1",
        ])
        .args(["--api-url", &sim.url, "--db", "sync.db"])
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("GITHUB_API_URL")
        .env_remove("HEADROOM_CONFIG")
        .env("GITHUB_TOKEN", "t1")
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let completed: Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["event"] == "sync.run_completed")
        .expect("a completion line");
    assert_eq!(completed["status"], "done", "{completed}");
    let summary = &completed["summary"];

    // The simulator's log: requests and points per bucket (the identity discovery's GET /user
    // precedes the run), 403s, and the windows each bucket opened (its remaining rose).
    let text = std::fs::read_to_string(&log).expect("the simulator's log");
    let mut requests: BTreeMap<String, u64> = BTreeMap::new();
    let mut points: BTreeMap<String, u64> = BTreeMap::new();
    let mut windows: BTreeMap<String, (u64, Option<u64>)> = BTreeMap::new();
    let mut forbidden = 0;
    for line in text.lines() {
        let e: Value = serde_json::from_str(line).expect("a JSON line");
        if e["status"] == 403 {
            forbidden += 1;
        }
        let bucket = e["bucket"].as_str().unwrap_or_default().to_owned();
        let remaining = e["remaining"].as_u64();
        let w = windows.entry(bucket.clone()).or_insert((1, None));
        if let (Some(prev), Some(now)) = (w.1, remaining)
            && now > prev
        {
            w.0 += 1;
        }
        w.1 = remaining.or(w.1);
        if e["path"] == "/user" {
            continue;
        }
        *requests.entry(bucket.clone()).or_default() += 1;
        *points.entry(bucket).or_default() += e["cost"].as_u64().unwrap_or(0);
    }
    assert_eq!(forbidden, 0, "no 403 from the origin");
    assert_eq!(summary["responses_403"], 0);
    assert!(
        windows["graphql"].0 > 10,
        "more than ten GraphQL windows: {windows:?}"
    );
    assert!(
        summary["deferrals"].as_u64() > Some(10),
        "more waits than one episode's budget: {summary}"
    );
    for bucket in ["core", "graphql"] {
        assert_eq!(
            summary["buckets"][bucket]["requests"].as_u64(),
            requests.get(bucket).copied(),
            "{bucket} requests"
        );
        assert_eq!(
            summary["buckets"][bucket]["points"].as_u64(),
            points.get(bucket).copied(),
            "{bucket} points"
        );
    }
}
