//! `headroom sync org` as a process: killed with SIGKILL in the middle of a stage and resumed,
//! it loses nothing and duplicates nothing — its tables hold exactly what an uninterrupted run
//! stores. Against `headroom sim` on loopback.

#![allow(clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

mod common;
use common::{BIN, Sim};

fn command(dir: &Path, sim: &Sim, db: &str, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .args(["--db", db, "--api-url", &sim.url])
        .args(args)
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("GITHUB_API_URL")
        .env("GITHUB_TOKEN", "t1");
    c
}

fn run(dir: &Path, sim: &Sim, db: &str, args: &[&str]) -> (i32, String, String) {
    let out = command(dir, sim, db, args).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn tables(dir: &Path, sim: &Sim, db: &str, run_id: &str) -> Value {
    let (code, out, err) = run(dir, sim, db, &["sync", "status", run_id, "--json"]);
    assert_eq!(code, 0, "{err}");
    let status: Value = serde_json::from_str(&out).expect("status JSON");
    assert_eq!(status[0]["run"]["status"], "done", "{out}");
    status[0]["tables"].clone()
}

#[test]
fn a_run_killed_mid_stage_and_resumed_stores_what_an_uninterrupted_run_stores() {
    killed_and_resumed("whole.db", "killed.db");
}

/// The same on PostgreSQL (two fresh databases on the test server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_on_postgres() {
    let Some(admin) = common::postgres_admin("the_same_on_postgres") else {
        return;
    };
    let names = ["whole", "killed"]
        .map(|which| format!("headroom_sync_kill_{which}_{}", std::process::id()));
    let mut urls = Vec::new();
    for name in &names {
        urls.push(common::create_database(&admin, name).await);
    }
    let (whole, killed) = (urls[0].clone(), urls[1].clone());
    tokio::task::spawn_blocking(move || killed_and_resumed(&whole, &killed))
        .await
        .expect("the test body");
    for name in &names {
        common::drop_database(&admin, name).await;
    }
}

fn killed_and_resumed(whole_db: &str, killed_db: &str) {
    let sim = Sim::start(&["--org", "acme", "--repos", "10", "--token", "t1=alice"]);
    let dir = tempfile::tempdir().expect("tempdir");

    // The reference: one uninterrupted run.
    let (code, out, err) = run(
        dir.path(),
        &sim,
        whole_db,
        &["sync", "org", "acme", "--json", "--wait"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("\"status\":\"done\""), "{out}");
    let whole = tables(dir.path(), &sim, whole_db, "1");

    // The same organization, killed in the middle of stage 5 (pull requests), after a few
    // committed pages.
    let mut child = command(
        dir.path(),
        &sim,
        killed_db,
        &["sync", "org", "acme", "--json", "--claim-secs", "1"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("starts");
    let stdout = child.stdout.take().expect("piped");
    let mut pages = 0;
    let mut scopes = std::collections::BTreeSet::new();
    let mut done_before_kill = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("a line");
        let Ok(event) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if event["event"] == "sync.stage_done" {
            done_before_kill.push(event["stage"].as_str().unwrap_or_default().to_owned());
        }
        if event["event"] == "sync.page" && event["stage"] == "pull_requests" {
            pages += 1;
            scopes.insert(event["scope"].to_string());
            if pages == 3 {
                break;
            }
        }
    }
    assert_eq!(pages, 3, "the run reached stage 5");
    // Its repositories run concurrently: the kill lands with several scopes in flight.
    assert!(scopes.len() >= 2, "pages of one scope only: {scopes:?}");
    // Stage 5 needs stage 2's list of repositories, not its end: stage 1 is done.
    assert!(
        done_before_kill.iter().any(|d| d == "org"),
        "org was done before stage 5: {done_before_kill:?}"
    );
    child.kill().expect("SIGKILL");
    let status = child.wait().expect("reaped");
    assert!(!status.success());

    // Its claim lapses (one second), and the same run resumes to the end.
    std::thread::sleep(std::time::Duration::from_millis(1_500));
    let (code, out, err) = run(
        dir.path(),
        &sim,
        killed_db,
        &["sync", "org", "acme", "--json", "--resume", "1", "--wait"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    // The stages done before the kill (stages 1 and 2 at least; others ran beside stage 5):
    // the resumed process never started them.
    for done in &done_before_kill {
        let restarted = out.lines().any(|l| {
            l.contains("\"event\":\"sync.stage_started\"")
                && l.contains(&format!("\"stage\":\"{done}\""))
        });
        assert!(!restarted, "{done} started again:\n{out}");
    }
    let resumed = tables(dir.path(), &sim, killed_db, "1");
    assert_eq!(resumed, whole, "row counts equal an uninterrupted run");
    assert!(whole["pull_requests"].as_u64().unwrap_or(0) > 0, "{whole}");
}

/// Issue 34, item 9: `sync org` killed with SIGKILL leaves its claim on the run (two minutes by
/// default), but its holder is a process of this machine that provably no longer runs: the
/// next `sync org` of the organization goes on with the run at once — no "running in another
/// process" — and finishes it.
#[test]
fn a_killed_sync_org_is_resumed_at_once_not_after_its_claim() {
    let sim = Sim::start(&["--org", "acme", "--repos", "10", "--token", "t1=alice"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = "killed.db";
    let mut child = command(dir.path(), &sim, db, &["sync", "org", "acme", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starts");
    let stdout = child.stdout.take().expect("piped");
    let paged = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|l| l.contains("\"event\":\"sync.page\""));
    assert!(paged, "the run committed a page before it was killed");
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let (code, out, err) = run(dir.path(), &sim, db, &["sync", "status", "1", "--json"]);
    assert_eq!(code, 0, "{err}");
    let s: Value = serde_json::from_str(&out).expect("status JSON");
    assert_eq!(s[0]["run"]["status"], "running", "{out}");
    assert!(
        s[0]["run"]["claimed_by"].is_string(),
        "the kill left its claim: {out}"
    );

    let (code, out, err) = run(
        dir.path(),
        &sim,
        db,
        &["sync", "org", "acme", "--json", "--wait"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!err.contains("running in another process"), "{err}");
    assert!(out.contains("\"status\":\"done\""), "{out}");
    assert!(tables(dir.path(), &sim, db, "1")["pull_requests"].as_u64() > Some(0));
}
