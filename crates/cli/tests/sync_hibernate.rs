//! `headroom sync org` hibernating for real against a `headroom sim` process whose REST quota
//! is tiny and whose windows last seconds: the run is persisted as hibernating (visible in
//! `sync status`, claim released), the command holds it and wakes it itself when the wake time
//! is near, and a wake time beyond the hold is left to `headroom sync worker`. No 403, and the
//! summary's counts are the simulator's request log.

#![allow(clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

mod common;
use common::{BIN, Sim};

fn command(dir: &Path, sim: &Sim, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .args(["--db", "sync.db", "--api-url", &sim.url])
        .args(args)
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("GITHUB_API_URL")
        .env("GITHUB_TOKEN", "t1");
    c
}

fn run(dir: &Path, sim: &Sim, args: &[&str]) -> (i32, String, String) {
    let out = command(dir, sim, args).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn status(dir: &Path, sim: &Sim, run_id: &str) -> Value {
    let (code, out, err) = run(dir, sim, &["sync", "status", run_id, "--json"]);
    assert_eq!(code, 0, "{err}");
    let all: Value = serde_json::from_str(&out).expect("status JSON");
    all[0].clone()
}

/// Two repositories, 60 REST requests per 8-second window: their ~100 REST requests need
/// several windows.
fn tiny_sim(log: &Path) -> Sim {
    Sim::start(&[
        "--org",
        "acme",
        "--repos",
        "2",
        "--seed",
        "4",
        "--token",
        "t1=alice",
        "--core-limit",
        "60",
        // Long enough that the wait left when core runs out is always longer than the
        // runner's inline wait (5 s), so the run hibernates however loaded the machine is.
        "--window-secs",
        "14",
        "--log",
        log.to_str().expect("utf-8"),
    ])
}

/// The simulator's log: (core requests that counted, excluding the identity discovery's
/// `GET /user`, which precedes the run; GraphQL points; 403 answers).
fn sim_counts(log: &Path) -> (u64, u64, u64) {
    sim_counts_where(log, |path| path != "/user")
}

/// [`sim_counts`], counting only the core requests whose path `sync_path` accepts.
fn sim_counts_where(log: &Path, sync_path: impl Fn(&str) -> bool) -> (u64, u64, u64) {
    let text = std::fs::read_to_string(log).expect("the simulator's log");
    let (mut core, mut points, mut forbidden) = (0, 0, 0);
    for line in text.lines() {
        let e: Value = serde_json::from_str(line).expect("a JSON line");
        let cost = e["cost"].as_u64().unwrap_or(0);
        let path = e["path"].as_str().unwrap_or_default();
        match e["bucket"].as_str() {
            Some("core") if cost > 0 && sync_path(path) => core += 1,
            Some("graphql") => points += cost,
            _ => {}
        }
        if e["status"] == 403 {
            forbidden += 1;
        }
    }
    (core, points, forbidden)
}

/// `sync org` with no hold: the run hibernates at its first spent window and the command
/// exits, leaving it to a worker. Returns its output.
fn hibernate(dir: &Path, sim: &Sim) -> String {
    let (code, out, err) = run(
        dir,
        sim,
        &[
            "sync",
            "org",
            "acme",
            "--json",
            "--hold-secs",
            "0",
            "--reset-margin-secs",
            "1",
        ],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    // Every caller needs a hibernating run; without one a service would wait for it forever.
    assert!(
        out.contains("\"event\":\"sync.run_hibernating\""),
        "the run did not hibernate:\n{out}"
    );
    out
}

/// `headroom run`, the feed service, looking for due sync runs every second; its JSON log
/// lines (info and above) on a pipe.
fn service(dir: &Path, sim: &Sim) -> std::process::Child {
    command(
        dir,
        sim,
        &[
            "run",
            "--no-listen",
            "--reset-margin-secs",
            "1",
            "--sync-poll-secs",
            "1",
        ],
    )
    .env("RUST_LOG", "info")
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .expect("starts")
}

fn completed(out: &str) -> Value {
    let line = out
        .lines()
        .find(|l| l.contains("\"event\":\"sync.run_completed\""))
        .unwrap_or_else(|| panic!("no completion line:\n{out}"));
    serde_json::from_str(line).expect("JSON")
}

#[test]
fn sync_org_hibernates_and_its_hold_finishes_the_run_without_wait() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("sim.jsonl");
    let sim = tiny_sim(&log);
    let mut child = command(
        dir.path(),
        &sim,
        &["sync", "org", "acme", "--json", "--reset-margin-secs", "1"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("starts");
    let stdout = child.stdout.take().expect("piped");
    let mut lines = Vec::new();
    let mut seen_hibernating = false;
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("a line");
        if let Ok(event) = serde_json::from_str::<Value>(&line)
            && event["event"] == "sync.run_hibernating"
            && event["held"] == true
            && !seen_hibernating
        {
            // While the command holds it, the run is hibernating in the database, unclaimed.
            let s = status(dir.path(), &sim, "1");
            if s["run"]["status"] == "hibernating" {
                assert!(s["run"]["claimed_by"].is_null(), "{s}");
                assert!(s["run"]["not_before"].is_string(), "{s}");
                assert!(
                    s["waiting_for"]
                        .as_str()
                        .is_some_and(|w| w.starts_with("wakes at")),
                    "{s}"
                );
                seen_hibernating = true;
            }
        }
        lines.push(line);
    }
    let code = child.wait().expect("reaped").code();
    let out = lines.join("\n");
    assert_eq!(code, Some(0), "{out}");
    assert!(
        seen_hibernating,
        "sync status never showed the hold:\n{out}"
    );
    let done = completed(&out);
    assert_eq!(done["status"], "done", "{out}");
    let summary = &done["summary"];
    assert!(summary["hibernations"].as_u64() > Some(0), "{summary}");
    assert!(summary["hibernating_ms"].as_i64() > Some(0), "{summary}");
    assert!(
        summary["wall_time_ms"].as_i64() > summary["hibernating_ms"].as_i64(),
        "{summary}"
    );
    assert_eq!(summary["responses_403"], 0);
    let (core, points, forbidden) = sim_counts(&log);
    assert_eq!(forbidden, 0, "no 403 from the origin");
    assert!(core > 60, "more REST than one window: {core}");
    assert_eq!(summary["buckets"]["core"]["requests"], core, "{summary}");
    assert_eq!(summary["buckets"]["graphql"]["points"], points, "{summary}");
    assert!(summary["buckets"]["core"]["min_remaining"].is_u64());
    assert_eq!(status(dir.path(), &sim, "1")["run"]["status"], "done");
}

#[test]
fn a_run_hibernated_beyond_the_hold_is_finished_by_the_worker() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("sim.jsonl");
    let sim = tiny_sim(&log);
    let out = hibernate(dir.path(), &sim);
    let hibernating: Value = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["event"] == "sync.run_hibernating")
        .unwrap_or_else(|| panic!("it did not hibernate:\n{out}"));
    assert_eq!(hibernating["held"], false);
    assert_eq!(hibernating["run_id"], 1);
    assert!(hibernating["until"].is_string());
    assert!(!out.contains("sync.run_completed"), "{out}");
    assert_eq!(
        status(dir.path(), &sim, "1")["run"]["status"],
        "hibernating"
    );

    // The worker, once the wake time has come, takes it up; each pass may hibernate again
    // (several windows), so it is run until the run is done.
    let mut last = String::new();
    for _ in 0..20 {
        let s = status(dir.path(), &sim, "1");
        if s["run"]["status"] == "done" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1_000));
        let (code, out, err) = run(
            dir.path(),
            &sim,
            &[
                "sync",
                "worker",
                "--json",
                "--once",
                "--reset-margin-secs",
                "1",
            ],
        );
        assert_eq!(code, 0, "{out}\n{err}");
        last = out;
    }
    let s = status(dir.path(), &sim, "1");
    assert_eq!(s["run"]["status"], "done", "{s}\n{last}");
    let done = completed(&last);
    assert_eq!(done["status"], "done");
    let (core, points, forbidden) = sim_counts(&log);
    assert_eq!(forbidden, 0);
    assert_eq!(done["summary"]["buckets"]["core"]["requests"], core);
    assert_eq!(done["summary"]["buckets"]["graphql"]["points"], points);
}

#[test]
fn the_feed_service_wakes_a_hibernated_run_and_finishes_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("sim.jsonl");
    let sim = tiny_sim(&log);
    let out = hibernate(dir.path(), &sim);
    assert!(out.contains("\"event\":\"sync.run_hibernating\""), "{out}");
    assert_eq!(
        status(dir.path(), &sim, "1")["run"]["status"],
        "hibernating"
    );

    // `headroom run`, the feed service, with nothing else: it must wake the run at its time
    // (each wake may hibernate again: several windows) and finish it.
    let service = service(dir.path(), &sim);
    let mut finished = Value::Null;
    for _ in 0..120 {
        let s = status(dir.path(), &sim, "1");
        if s["run"]["status"] == "done" {
            finished = s;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let _ = Command::new("kill")
        .args(["-TERM", &service.id().to_string()])
        .status();
    let output = service.wait_with_output().expect("stops");
    let logs = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{logs}");
    assert_eq!(finished["run"]["status"], "done", "never finished:\n{logs}");
    let completed = logs
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["event"] == "sync.run_completed")
        .unwrap_or_else(|| panic!("no completion logged:\n{logs}"));
    assert_eq!(completed["run_id"], 1);
    assert_eq!(completed["status"], "done");

    let summary = &finished["run"]["summary"];
    // `headroom run` also polls the feed and enriches on the same token, which the run's
    // summary does not count: organization sync's REST is all under the organization's
    // repositories, and the feed's entities are never there.
    let (core, points, forbidden) = sim_counts_where(&log, |path| path.starts_with("/repos/acme/"));
    assert_eq!(forbidden, 0, "no 403 from the origin");
    assert!(core > 60, "more REST than one window: {core}");
    assert_eq!(summary["buckets"]["core"]["requests"], core, "{summary}");
    assert_eq!(summary["buckets"]["graphql"]["points"], points, "{summary}");
    assert_eq!(summary["responses_403"], 0);
}

#[test]
fn a_stopped_service_hands_back_the_claim_of_the_run_it_was_driving() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("sim.jsonl");
    let sim = tiny_sim(&log);
    // A run hibernated by `sync org`, which the service wakes at its time.
    hibernate(dir.path(), &sim);
    let mut service = service(dir.path(), &sim);
    let stderr = service.stderr.take().expect("piped");
    // Stop it as soon as it has committed a page of the woken run.
    let mut logs = Vec::new();
    for line in BufReader::new(stderr).lines() {
        let line = line.expect("a line");
        let woke = line.contains("\"event\":\"sync.stage_started\"");
        logs.push(line);
        if woke {
            let _ = Command::new("kill")
                .args(["-TERM", &service.id().to_string()])
                .status();
        }
    }
    let code = service.wait().expect("stops").code();
    let logs = logs.join("\n");
    assert_eq!(code, Some(0), "{logs}");
    let started = logs
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["event"] == "sync.stage_started")
        .unwrap_or_else(|| panic!("never woke:\n{logs}"));
    assert_eq!(
        started["run_id"], 1,
        "the run id is a field of its own: {started}"
    );
    assert_eq!(started["service"], "headroom");
    let s = status(dir.path(), &sim, "1");
    // Whatever state the stop left (mid-stage, or hibernating again), nobody holds the run.
    assert!(s["run"]["claimed_by"].is_null(), "{s}\n{logs}");
    assert_ne!(s["run"]["status"], "done", "{s}");

    // Another worker takes it up at once (no claim to wait out) and finishes it.
    for _ in 0..30 {
        if status(dir.path(), &sim, "1")["run"]["status"] == "done" {
            break;
        }
        let (code, out, err) = run(
            dir.path(),
            &sim,
            &[
                "sync",
                "worker",
                "--json",
                "--once",
                "--reset-margin-secs",
                "1",
            ],
        );
        assert_eq!(code, 0, "{out}\n{err}");
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    assert_eq!(status(dir.path(), &sim, "1")["run"]["status"], "done");
    let (_, _, forbidden) = sim_counts(&log);
    assert_eq!(forbidden, 0);
}

/// Issue 20, defect 7: two `sync org` of one organization never both run. The second start
/// finds the first's run hibernating and continues that run (no second run, nothing spent
/// twice); a start asking for other stages is refused, naming the run.
#[test]
fn two_sync_org_of_one_organization_never_both_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("sim.jsonl");
    let sim = tiny_sim(&log);
    let first = hibernate(dir.path(), &sim);
    let run_id = first
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["event"] == "sync.run_hibernating")
        .map(|v| v["run_id"].clone())
        .expect("the first run hibernated");

    let second = hibernate(dir.path(), &sim);
    let again = second
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["event"] == "sync.run_hibernating")
        .map(|v| v["run_id"].clone());
    assert_eq!(again, Some(run_id.clone()), "{second}");
    let (code, out, err) = run(dir.path(), &sim, &["sync", "status", "--json"]);
    assert_eq!(code, 0, "{err}");
    let runs: Value = serde_json::from_str(&out).expect("status JSON");
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "one run: {out}");

    let (code, _, err) = run(
        dir.path(),
        &sim,
        &[
            "sync",
            "org",
            "acme",
            "--json",
            "--stages",
            "branches",
            "--hold-secs",
            "0",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("sync run {run_id} of org acme")) && err.contains("--resume"),
        "{err}"
    );
}

/// Runs `sql` on the SQLite file `sync.db` of `dir`, as another process would.
fn tamper(dir: &Path, sql: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        use sqlx::Connection as _;
        let url = format!("sqlite://{}", dir.join("sync.db").display());
        let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("open");
        sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
            .execute(&mut conn)
            .await
            .expect("write");
        conn.close().await.expect("close");
    });
}

/// Issue 34, item 9: a worker (`headroom run`, `sync worker`) took up the run `sync org` meant
/// to drive — as a worker taking up pending runs can, between the run's creation and its first
/// claim. `sync org` says a worker drives it, with the run id and how to follow it, and exits
/// 0; with `--wait` it follows the run to its end. (This test process stands for the worker: its
/// own mark holds the run's claim, so the claim's holder is alive.)
#[test]
fn a_run_a_worker_took_up_is_followed_or_left_to_it_never_a_failure() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("sim.jsonl");
    let sim = tiny_sim(&log);
    hibernate(dir.path(), &sim);
    let me = headroom_store::ProcessMark::current().expect("Linux has /proc");
    tamper(
        dir.path(),
        &format!(
            "UPDATE sync_runs SET status = 'running', claimed_by = '{me}', \
             claim_expires_at_ms = 4102444800000 WHERE id = 1"
        ),
    );

    let (code, out, err) = run(
        dir.path(),
        &sim,
        &[
            "sync",
            "org",
            "acme",
            "--json",
            "--resume",
            "1",
            "--hold-secs",
            "0",
        ],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let taken = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["event"] == "sync.taken_over")
        .unwrap_or_else(|| panic!("not told a worker drives it:\n{out}\n{err}"));
    assert_eq!(taken["run_id"], 1, "{taken}");
    assert_eq!(taken["claimed_by"], me.to_string(), "{taken}");
    assert!(
        taken["follow"]
            .as_str()
            .is_some_and(|f| f.contains("headroom sync status 1")),
        "{taken}"
    );
    assert_eq!(
        status(dir.path(), &sim, "1")["run"]["claimed_by"],
        me.to_string()
    );

    // With --wait it follows the run until the worker is done with it.
    let mut child = command(
        dir.path(),
        &sim,
        &["sync", "org", "acme", "--json", "--resume", "1", "--wait"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("starts");
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let first = lines.next().expect("a line").expect("a line");
    assert!(first.contains("\"event\":\"sync.taken_over\""), "{first}");
    assert!(first.contains("\"following\":true"), "{first}");
    tamper(
        dir.path(),
        "UPDATE sync_runs SET status = 'done', claimed_by = NULL, claim_expires_at_ms = NULL \
         WHERE id = 1",
    );
    let rest: Vec<String> = lines.map(|l| l.expect("a line")).collect();
    let code = child.wait().expect("reaped").code();
    let out = rest.join("\n");
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(completed(&out)["status"], "done", "{out}");
}
