//! `headroom run` against `headroom sim` on loopback: ticks poll and enrich; a run killed with
//! SIGKILL and restarted loses and duplicates nothing.

#![allow(clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
use common::{BIN, Sim};

fn command(dir: &Path, api: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir)
        .args(["--api-url", api, "--db", "h.db"])
        .args(args)
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("GITHUB_API_URL")
        .env_remove("SEARCH_PACING_SECONDS");
    cmd
}

fn status(dir: &Path, api: &str) -> serde_json::Value {
    let out = command(dir, api, &["status", "--json"])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// `status --json`, or `None` while it refuses (the database not made yet).
fn try_status(dir: &Path, api: &str) -> Option<serde_json::Value> {
    let out = command(dir, api, &["status", "--json"])
        .output()
        .expect("runs");
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).expect("JSON"))
}

fn settled(s: &serde_json::Value) -> bool {
    s["coverage"]["events_in_window"] == 4
        && s["enrichment"]["actors"]["complete"] == 2
        && s["enrichment"]["actors"]["permanent_failure"] == 1
        && s["enrichment"]["repositories"]["complete"] == 2
        && s["enrichment"]["repositories"]["permanent_failure"] == 1
}

#[test]
fn ticks_poll_and_enrich() {
    let sim = Sim::start(&["--scenario", "default"]);
    let dir = tempfile::tempdir().expect("tmp");
    let out = command(
        dir.path(),
        &sim.url,
        &["run", "--ticks", "1", "--search-pacing", "0", "--no-listen"],
    )
    .output()
    .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(settled(&status(dir.path(), &sim.url)));
}

#[test]
fn a_killed_run_restarted_loses_and_duplicates_nothing() {
    let sim = Sim::start(&["--scenario", "default"]);
    let dir = tempfile::tempdir().expect("tmp");
    // Search pacing (6 s) keeps the first run mid-cycle: it is killed between search batches.
    // Leases of one second, so the restart can reclaim what the killed run held.
    let leases = ["--source-lease", "1", "--enrichment-lease", "1"];
    let mut child = command(
        dir.path(),
        &sim.url,
        &["run", "--tick-secs", "1", "--no-listen"],
    )
    .args(leases)
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("spawn");
    let mut seen = false;
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(100));
        // `status` never creates a database: until the service has made it (and its schema),
        // it refuses, which is no answer yet (a loaded machine once took longer than the
        // first look).
        let Some(now) = try_status(dir.path(), &sim.url) else {
            continue;
        };
        if now["coverage"]["events_in_window"] == 4 {
            seen = true;
            break;
        }
    }
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    assert!(seen, "the run ingested before it was killed");
    let mid = status(dir.path(), &sim.url);
    assert!(!settled(&mid), "killed mid-cycle: {mid}");
    std::thread::sleep(Duration::from_millis(1_500));

    let out = command(
        dir.path(),
        &sim.url,
        &["run", "--ticks", "1", "--search-pacing", "0", "--no-listen"],
    )
    .args(leases)
    .output()
    .expect("runs");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let after = status(dir.path(), &sim.url);
    assert!(
        settled(&after),
        "{after}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = command(dir.path(), &sim.url, &["status"])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("Quarantined envelopes:") && l.ends_with(" 3")),
        "{text}"
    );
}

/// Pending work whose queue state was lost — rows resting where no lane claims from, a row
/// deleted behind the store's back — is invisible to `enrich`; `headroom run`'s reconciler
/// finds it from the committed events on its first sweep and the cycle it dispatches finishes
/// the backlog. Its `reconciler.*` lines say what it repaired.
#[test]
fn the_reconciler_restores_lost_work() {
    let sim = Sim::start(&["--scenario", "default"]);
    let dir = tempfile::tempdir().expect("tmp");
    let out = command(dir.path(), &sim.url, &["ingest"])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let db = dir.path().join("h.db");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        use sqlx::Connection as _;
        let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display()))
            .await
            .expect("open");
        for sql in [
            "PRAGMA foreign_keys = OFF",
            "UPDATE actors SET enrichment_stage = 'contract_complete'",
            "DELETE FROM repositories WHERE github_id = 880003",
        ] {
            sqlx::query(sql).execute(&mut conn).await.expect("tamper");
        }
        conn.close().await.expect("close");
    });
    // The loss is real: enrichment alone cannot see the actors or the deleted repository.
    let out = command(dir.path(), &sim.url, &["enrich", "--search-pacing", "0"])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let lost = status(dir.path(), &sim.url);
    assert_eq!(lost["enrichment"]["actors"]["pending"], 3, "{lost}");
    assert_eq!(lost["enrichment"]["actors"]["complete"], 0, "{lost}");

    let out = command(
        dir.path(),
        &sim.url,
        &["run", "--ticks", "1", "--search-pacing", "0", "--no-listen"],
    )
    .env("RUST_LOG", "info")
    .output()
    .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let find = |event: &str| {
        lines
            .iter()
            .find(|l| l["event"] == event)
            .unwrap_or_else(|| panic!("no {event}: {stderr}"))
    };
    assert_eq!(find("reconciler.requeued")["count"], 3);
    assert_eq!(find("reconciler.entities_restored")["repositories"], 1);
    let done = find("reconciler.completed");
    assert_eq!(done["repaired"], 4);
    assert_eq!(done["claimable_now"], true);
    assert!(done["run_id"].is_string(), "{done}");
    let after = status(dir.path(), &sim.url);
    assert!(
        settled(&after),
        "{after}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A cycle held by search pacing resumes when the pacing lapses, not at the next tick: the
/// repository batch goes out in a second cycle of its own, before the second poll tick.
#[test]
fn a_paced_cycle_resumes_before_the_next_tick() {
    let sim = Sim::start(&["--scenario", "default"]);
    let dir = tempfile::tempdir().expect("tmp");
    let out = command(
        dir.path(),
        &sim.url,
        &[
            "run",
            "--ticks",
            "2",
            "--tick-secs",
            "10",
            "--search-pacing",
            "1",
            "--no-listen",
        ],
    )
    .env("RUST_LOG", "info")
    .output()
    .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let batch = |kind: &str| {
        lines
            .iter()
            .position(|l| l["event"] == "enrichment.batch_completed" && l["entity_type"] == kind)
            .unwrap_or_else(|| panic!("no {kind} batch: {stderr}"))
    };
    let (actors, repositories) = (batch("actor"), batch("repository"));
    let second_tick = lines
        .iter()
        .position(|l| l["event"] == "ingestion.not_due")
        .unwrap_or_else(|| panic!("no second tick: {stderr}"));
    assert!(
        actors < repositories && repositories < second_tick,
        "{stderr}"
    );
    assert_ne!(
        lines[actors]["run_id"], lines[repositories]["run_id"],
        "two cycles"
    );
    assert!(settled(&status(dir.path(), &sim.url)));
}

/// Issue 34, item 8: a token the provider rejects is asked whose it is (`GET /user`) once,
/// not every tick — the next ticks wait out the source's backoff (an hour ahead at most, a
/// minute after the first failure) before asking again — and a bounded run whose tick failed
/// exits 1, while its later ticks, deferred by that backoff, fail nothing more.
#[test]
fn a_rejected_token_is_not_asked_for_again_before_the_sources_backoff() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("sim.jsonl");
    let sim = Sim::start(&[
        "--scenario",
        "default",
        "--log",
        log.to_str().expect("utf-8"),
    ]);
    let out = command(
        dir.path(),
        &sim.url,
        &["run", "--tick-secs", "1", "--ticks", "4", "--no-listen"],
    )
    .env("GITHUB_TOKEN", "ghp_nobodyissuedthistoken0000000000000000")
    .env("RUST_LOG", "info")
    .output()
    .expect("runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("stopped after 4 ticks"), "{stdout}");
    assert!(stderr.contains("ingestion.credential_rejected"), "{stderr}");
    let deferred = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|l| l["event"] == "ingestion.not_due")
        .filter(|l| l["deferral_reason"] == "retry_not_before_at")
        .count();
    assert_eq!(deferred, 3, "the three later ticks wait: {stderr}");
    let text = std::fs::read_to_string(&log).expect("the simulator's log");
    let asked = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON line"))
        .filter(|e| e["method"] == "GET" && e["path"] == "/user")
        .count();
    assert_eq!(asked, 1, "{text}");

    // A run of one tick, the failed one, fails too.
    let other = tempfile::tempdir().expect("tmp");
    let out = command(
        other.path(),
        &sim.url,
        &["run", "--ticks", "1", "--no-listen"],
    )
    .env("GITHUB_TOKEN", "ghp_nobodyissuedthistoken0000000000000000")
    .output()
    .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// A bounded run whose ticks were only deferred (the feed not due yet) ran: exit 0.
#[test]
fn a_bounded_run_of_deferred_ticks_exits_0() {
    let sim = Sim::start(&["--scenario", "default"]);
    let dir = tempfile::tempdir().expect("tmp");
    let out = command(
        dir.path(),
        &sim.url,
        &[
            "run",
            "--ticks",
            "2",
            "--tick-secs",
            "1",
            "--search-pacing",
            "0",
            "--no-listen",
        ],
    )
    .env("RUST_LOG", "info")
    .output()
    .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // The second tick found the feed not due: a deferral, no failure.
    assert!(stderr.contains("ingestion.not_due"), "{stderr}");
}
