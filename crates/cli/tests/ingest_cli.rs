//! `headroom ingest` as a user runs it, against `headroom sim` on loopback: the default
//! scenario's figures and state summary, a deferral inside the cadence window (exit 0, no
//! request), a refused formula (exit 2), and an exhausted retry ladder (exit 1).

#![allow(clippy::expect_used)]

use std::path::Path;
use std::process::Command;

mod common;
use common::{BIN, Sim};

/// `headroom --api-url API --db h.db ARGS` in `dir`, with none of the user's settings.
fn command(dir: &Path, api: &str, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .args(["--api-url", api, "--db", "h.db"])
        .args(args)
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("GITHUB_API_URL")
        .env_remove("POLL_INTERVAL_SECONDS")
        .env_remove("MAX_PAGES_PER_POLL");
    c
}

fn headroom(dir: &Path, api: &str, args: &[&str]) -> (i32, String) {
    let out = command(dir, api, args).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn default_scenario_then_a_deferral() {
    let sim = Sim::start(&["--scenario", "default"]);
    let dir = tempfile::tempdir().expect("tmp");
    let (code, out) = headroom(dir.path(), &sim.url, &["ingest"]);
    assert_eq!(code, 0, "{out}");
    for line in [
        "Pages fetched:                    1",
        "Events seen:                      8",
        "Push events created:              4",
        "Duplicates skipped:               0",
        "Events quarantined:               3",
        "Non-push events ignored:          1",
        "Persisted push events:            4",
        "Pending actor enrichments:        3",
        "Pending repository enrichments:   3",
        "Budget remaining (core):          59",
        "Global block:                     none",
    ] {
        assert!(out.contains(line), "missing {line:?} in:\n{out}");
    }
    let (code, out) = headroom(dir.path(), &sim.url, &["ingest"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("Ingestion deferred until "), "{out}");
    assert!(out.contains("— cadence_due_at"), "{out}");
    assert!(out.contains("Persisted push events:            4"), "{out}");
    let (code, out) = headroom(dir.path(), &sim.url, &["ingest", "--force"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("— poll_floor_until"), "{out}");
    assert!(
        out.contains("Budget remaining (core):          59"),
        "no request was sent: {out}"
    );
}

#[test]
fn an_infeasible_formula_is_refused() {
    let sim = Sim::start(&["--scenario", "default"]);
    let dir = tempfile::tempdir().expect("tmp");
    let (code, _) = headroom(dir.path(), &sim.url, &["ingest", "--max-pages", "5"]);
    assert_eq!(code, 2);
    let (code, _) = headroom(dir.path(), &sim.url, &["ingest", "--no-such-flag"]);
    assert_eq!(code, 2);
}

#[test]
fn exhausted_retries_fail_and_still_print_the_state() {
    let sim = Sim::start(&["--scenario", "transient_failure_exhausted"]);
    let dir = tempfile::tempdir().expect("tmp");
    let (code, out) = headroom(dir.path(), &sim.url, &["ingest"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("failed"), "{out}");
    assert!(out.contains("Persisted push events:            0"), "{out}");
    assert!(out.contains("Next poll due:"), "{out}");
}

/// With `RUST_LOG=debug`, stderr is one JSON object per line; each leads with the four
/// formatter-owned fields; and every line of the run — from `ingestion.run_started` to
/// `ingestion.run_completed`, the per-page and exit-door lines between included — carries the
/// same run_id, which is the one the run printed.
#[test]
fn json_logs_carry_fixed_fields_and_the_run_id() {
    let sim = Sim::start(&["--scenario", "default"]);
    let dir = tempfile::tempdir().expect("tmp");
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .args(["--api-url", &sim.url, "--db", "h.db", "ingest"])
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("GITHUB_API_URL")
        .env(
            "RUST_LOG",
            "debug,sqlx=warn,hyper=warn,reqwest=warn,h2=warn,rustls=warn",
        )
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("not one JSON object: {l:?}: {e}"))
        })
        .collect();
    assert!(lines.len() >= 5, "{stderr}");
    for (raw, l) in stderr.lines().zip(&lines) {
        let keys: Vec<&String> = l.as_object().expect("an object").keys().collect();
        assert!(
            raw.starts_with("{\"timestamp\":\""),
            "timestamp leads: {raw}"
        );
        assert_eq!(l["service"], "headroom", "{raw}");
        assert!(
            ["error", "warn", "info", "debug", "trace"]
                .contains(&l["level"].as_str().unwrap_or("")),
            "{raw}"
        );
        assert!(l["event"].is_string(), "{raw}");
        assert!(
            !keys.iter().any(|k| *k == "fields"),
            "flat, not nested: {raw}"
        );
        let ts = l["timestamp"].as_str().expect("a string");
        assert!(
            ts.ends_with('Z') && ts.contains('.'),
            "UTC with milliseconds: {ts}"
        );
    }
    let position = |event: &str| {
        lines
            .iter()
            .position(|l| l["event"] == event)
            .unwrap_or_else(|| panic!("no {event} in {stderr}"))
    };
    let (start, end) = (
        position("ingestion.run_started"),
        position("ingestion.run_completed"),
    );
    let run_id = lines[start]["run_id"].as_str().expect("run_id").to_owned();
    assert_eq!(run_id.len(), 36, "{run_id}");
    for l in &lines[start..=end] {
        assert_eq!(l["run_id"], run_id.as_str(), "every line of the run: {l}");
    }
    assert!(
        lines[start..=end]
            .iter()
            .any(|l| l["event"] == "ingestion.page_processed"),
        "debug lines of the run are present: {stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&run_id),
        "the summary names the run: {stdout}"
    );
}

/// `headroom ingest | head -1`: the reader goes away before the summary is printed. The poll
/// is stored all the same and the process ends quietly (141, as a tool killed by SIGPIPE)
/// rather than panicking on a closed stdout.
#[test]
fn a_closed_stdout_ends_the_command_quietly_after_the_work_is_stored() {
    let sim = Sim::start(&["--scenario", "default"]);
    let dir = tempfile::tempdir().expect("tmp");
    let mut child = command(dir.path(), &sim.url, &["ingest"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starts");
    // Close the read end at once: every line the command prints meets a broken pipe.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(141), "{stderr}");
    let (code, status) = headroom(dir.path(), &sim.url, &["status"]);
    assert_eq!(code, 0, "{status}");
    assert!(
        status.contains("Persisted push events:            4"),
        "the poll was stored before the output: {status}"
    );
}

/// What a command spends is visible to every other process on the database: the exit door's
/// reading of the identity lands in `quota_readings` (what the dashboard, `serve` and
/// `/metrics` read), with the origin's figures.
#[test]
fn an_ingest_leaves_the_governors_reading_in_the_database() {
    use headroom_core::clock::Timestamp;
    let sim = Sim::start(&["--scenario", "default"]);
    let dir = tempfile::tempdir().expect("tmp");
    let (code, out) = headroom(dir.path(), &sim.url, &["ingest"]);
    assert_eq!(code, 0, "{out}");
    let db = dir.path().join("h.db");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let latest = runtime.block_on(async {
        let stores = headroom_store::open_quota_history(db.to_str().expect("utf-8"))
            .await
            .expect("opens");
        let latest = stores
            .history
            .latest_quota_readings(Timestamp::UNIX_EPOCH)
            .await
            .expect("reads");
        stores.store.close().await;
        latest
    });
    let core = latest
        .iter()
        .find(|b| b.latest.reading.bucket == "core")
        .unwrap_or_else(|| panic!("no core reading in {latest:?}"));
    assert_eq!(core.latest.reading.remaining, Some(59), "{core:?}");
    assert_eq!(core.latest.reading.limit, Some(60), "{core:?}");
    assert_eq!(core.latest.reading.provider, "github");
    assert!(core.latest.reading.subject.starts_with("ip:"), "{core:?}");
}

/// A token the provider refuses, and a provider that does not answer, are failed attempts:
/// exit 1, an error on stderr, the source's error in `headroom status` — never "deferred".
#[test]
fn a_rejected_or_unreachable_credential_fails_the_attempt() {
    let sim = Sim::start(&["--scenario", "default"]);
    let dir = tempfile::tempdir().expect("tmp");
    let out = command(dir.path(), &sim.url, &["ingest"])
        .env("GITHUB_TOKEN", "ghp_nobodyissuedthistoken0000000000000000")
        .output()
        .expect("runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("failed: credential rejected (401)"),
        "{stdout}"
    );
    assert!(stderr.contains("ingestion.credential_rejected"), "{stderr}");
    assert!(!stdout.contains("deferred"), "{stdout}");
    for text in [&stdout, &stderr] {
        assert!(
            !text.contains("nobodyissuedthistoken"),
            "the token leaked: {text}"
        );
    }
    let (code, status) = headroom(dir.path(), &sim.url, &["status", "--json"]);
    assert_eq!(code, 0, "{status}");
    assert!(status.contains("credential rejected (401)"), "{status}");

    // Port 1 on loopback: nothing answers the identity request. (A port bound and let go
    // is not closed for long: another test's simulator can take it, which answers 401.)
    let closed = "http://127.0.0.1:1".to_owned();
    let other = tempfile::tempdir().expect("tmp");
    let out = command(other.path(), &closed, &["ingest"])
        .env("GITHUB_TOKEN", "ghp_nobodyissuedthistoken0000000000000000")
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("failed: quota identity: "), "{stdout}");
}
