//! Two `headroom` processes share one identity's quota through PostgreSQL, against
//! `headroom sim` over HTTP: 25 concurrent reads each, and not one 403 in the simulator's log.
//!
//! Needs `HEADROOM_TEST_DATABASE_URL` (an admin URL; `scripts/test` starts a throwaway
//! PostgreSQL and sets it). Without it the test says it was skipped — except under `CI`, where
//! it fails.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

mod common;
use common::BIN;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_share_one_quota() {
    let Some(admin) = common::postgres_admin("two_processes_share_one_quota") else {
        return;
    };
    let name = format!("headroom_cli_test_{}", std::process::id());
    let db_url = common::create_database(&admin, &name).await;

    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("sim.log");
    let mut sim = Command::new(BIN)
        .args([
            "sim",
            "--addr",
            "127.0.0.1:0",
            "--token",
            "t1=alice",
            "--token",
            "t2=alice",
        ])
        .args(["--core-limit", "120", "--latency-ms", "20", "--log"])
        .arg(&log)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("sim starts");
    let mut first = String::new();
    BufReader::new(sim.stdout.take().expect("piped"))
        .read_line(&mut first)
        .expect("first line");
    let api = first.trim().trim_start_matches("listening on ").to_owned();

    // Migrate once before the race, so both processes start on the same schema.
    let status = Command::new(BIN)
        .current_dir(dir.path())
        .args(["quota", "show", "--db", &db_url, "--api-url", &api])
        .env("GITHUB_TOKEN", "t1")
        .status()
        .expect("runs");
    assert!(status.success());

    let spawn = |token: &str| {
        Command::new(BIN)
            .current_dir(dir.path())
            .args([
                "quota",
                "probe",
                "--json",
                "--requests",
                "100",
                "--concurrency",
                "25",
                "--db",
                &db_url,
                "--api-url",
                &api,
            ])
            .env("GITHUB_TOKEN", token)
            .env_remove("GH_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("probe starts")
    };
    let (a, b) = (spawn("t1"), spawn("t2"));
    let (a, b) = (
        a.wait_with_output().expect("a"),
        b.wait_with_output().expect("b"),
    );
    let _ = sim.kill();
    let _ = sim.wait();
    let parse = |out: &std::process::Output| -> serde_json::Value {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("json report")
    };
    let (ra, rb) = (parse(&a), parse(&b));
    let ok = ra["ok"].as_u64().unwrap_or(0) + rb["ok"].as_u64().unwrap_or(0);
    let deferred = ra["deferred"].as_u64().unwrap_or(0) + rb["deferred"].as_u64().unwrap_or(0);
    assert_eq!(ok + deferred, 200, "{ra} {rb}");
    assert!(
        deferred > 0,
        "120 requests an hour cannot serve 200 reads: {ra} {rb}"
    );
    assert!(ok > 50, "{ra} {rb}");

    let entries: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .expect("sim log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let forbidden = entries.iter().filter(|e| e["status"] == 403).count();
    assert_eq!(forbidden, 0, "zero 403s in the simulator's log");
    let max_in_flight = entries
        .iter()
        .filter_map(|e| e["in_flight"].as_u64())
        .max()
        .unwrap_or(0);
    assert!(
        max_in_flight < 10,
        "the shared ceiling held across both processes: {max_in_flight} others in flight"
    );

    common::drop_database(&admin, &name).await;
}
