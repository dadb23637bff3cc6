//! A quota already spent when headroom starts on a fresh database (issue 36, item 4): the
//! token's owner is not known yet, and `GET /user`, which tells it, is itself held back by the
//! spent quota. `quota show` reports that (exit 0, one reset time), and `sync org` waits for
//! the reopening (with `--wait`, or within its hold) instead of failing; without either it
//! creates its run hibernating until the reset, bound to its token with the owner pending, and
//! a worker finishes it — with extra tokens configured or `--estimate` too (exit 0).

#![allow(clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use headroom_http::credential::fingerprint;

use serde_json::Value;

mod common;
use common::{BIN, Sim, run_against};

/// A simulator whose core quota (60 a 14 s window) is spent before any headroom process runs.
fn spent_sim() -> Sim {
    let sim = Sim::small_org(&["t1", "t2"], 14, &[]);
    let addr = sim.url.trim_start_matches("http://").to_owned();
    let mut last = 0;
    for _ in 0..61 {
        let mut stream = TcpStream::connect(&addr).expect("connects");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        write!(
            stream,
            "GET /user HTTP/1.1\r\nHost: {addr}\r\nAuthorization: token t1\r\n\
             Connection: close\r\n\r\n"
        )
        .expect("writes");
        let mut raw = String::new();
        stream.read_to_string(&mut raw).expect("reads");
        last = raw
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
    }
    assert_eq!(last, 403, "the quota is spent before the test starts");
    sim
}

/// The `HH:MM:SS` times in `text`.
fn times(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_ascii_digit() || c == ':'))
        .filter(|w| w.len() == 8 && w.matches(':').count() == 2)
        .collect()
}

#[test]
fn quota_show_on_a_spent_quota_reports_it_with_one_reset_time_and_exits_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = spent_sim();
    let (code, out, err) = run_against(dir.path(), &sim, &["quota", "show"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("core quota is spent"), "{out}");
    // One sentence, one time: when it reopens (not also the retry after the reset margin).
    let reopens = out
        .lines()
        .find(|l| l.contains("reopens"))
        .unwrap_or_else(|| panic!("no reset line:\n{out}"));
    assert_eq!(times(reopens).len(), 1, "{reopens}");
    assert_eq!(times(&out).len(), 1, "{out}");

    let (code, out, err) = run_against(dir.path(), &sim, &["quota", "show", "--json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let report: Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(report["bucket"], "core", "{report}");
    assert!(report["reset_at"].is_string(), "{report}");
}

#[test]
fn sync_org_wait_on_a_spent_quota_waits_for_the_reopening_and_finishes_its_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = spent_sim();
    let (code, out, err) = run_against(
        dir.path(),
        &sim,
        &["sync", "org", "acme", "--wait", "--reset-margin-secs", "1"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("the quota is spent until"), "{out}");
    assert!(out.contains("sync run 1 done"), "{out}");
    let (code, status, err) = run_against(dir.path(), &sim, &["sync", "status", "1", "--json"]);
    assert_eq!(code, 0, "{err}");
    let status: Value = serde_json::from_str(&status).expect("JSON");
    assert_eq!(status[0]["run"]["status"], "done", "{status}");
}

/// The binary in `dir` on `sync.db` against `sim` with the tokens in `env` only.
fn run_with(dir: &Path, sim: &Sim, env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .args(["--db", "sync.db", "--api-url", &sim.url])
        .args(args)
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("GITHUB_API_URL");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `sync status 1 --json`'s run.
fn run_1(dir: &Path, sim: &Sim) -> Value {
    let (code, status, err) = run_against(dir, sim, &["sync", "status", "1", "--json"]);
    assert_eq!(code, 0, "{err}");
    let status: Value = serde_json::from_str(&status).expect("JSON");
    status[0].clone()
}

#[test]
fn sync_org_on_a_spent_quota_creates_its_run_hibernating_and_a_worker_learns_the_owner_and_finishes_it()
 {
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = spent_sim();
    let (code, out, err) = run_against(
        dir.path(),
        &sim,
        &[
            "sync",
            "org",
            "acme",
            "--hold-secs",
            "0",
            "--reset-margin-secs",
            "1",
        ],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("sync run 1 hibernating until"), "{out}");
    assert!(
        out.contains("the token's quota is spent; GET /user could not tell its owner — reopens"),
        "{out}"
    );
    assert!(!out.contains("nothing was created"), "{out}");
    assert!(!err.contains("rate limited"), "{err}");

    // Persisted, hibernating until the reset, bound to t1 with its owner still pending.
    let s = run_1(dir.path(), &sim);
    assert_eq!(s["run"]["status"], "hibernating", "{s}");
    assert!(s["run"]["not_before"].is_string(), "{s}");
    assert_eq!(
        s["run"]["credential"]["fingerprint"],
        fingerprint("t1").as_str(),
        "{s}"
    );
    let (_, text, _) = run_against(dir.path(), &sim, &["sync", "status", "1"]);
    assert!(text.contains("its owner not known yet"), "{text}");
    assert!(
        text.contains("GET /user could not tell its owner"),
        "{text}"
    );

    // A second start while it waits is the same run, never a second one.
    let (code, out, err) = run_against(
        dir.path(),
        &sim,
        &[
            "sync",
            "org",
            "acme",
            "--hold-secs",
            "0",
            "--reset-margin-secs",
            "1",
        ],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("sync run 1 hibernating"), "{out}");

    // The worker wakes it at the reset, learns the owner, and finishes it (several windows).
    for _ in 0..40 {
        if run_1(dir.path(), &sim)["run"]["status"] == "done" {
            break;
        }
        std::thread::sleep(Duration::from_millis(1_000));
        let (code, out, err) = run_against(
            dir.path(),
            &sim,
            &["sync", "worker", "--once", "--reset-margin-secs", "1"],
        );
        assert_eq!(code, 0, "{out}\n{err}");
    }
    let s = run_1(dir.path(), &sim);
    assert_eq!(s["run"]["status"], "done", "{s}");
    assert_eq!(s["run"]["subject"], "user:alice", "{s}");
    assert_eq!(s["run"]["credential"]["owner"], "user:alice", "{s}");
    assert_eq!(
        s["run"]["credential"]["fingerprint"],
        fingerprint("t1").as_str(),
        "{s}"
    );
}

#[test]
fn with_extra_tokens_or_estimate_a_spent_quota_still_creates_the_run_instead_of_exit_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = spent_sim();
    let (code, out, err) = run_with(
        dir.path(),
        &sim,
        &[("GITHUB_TOKEN", "t1"), ("GH_TOKEN", "t2")],
        &["sync", "org", "acme", "--hold-secs", "0", "--estimate"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("sync run 1 hibernating until"), "{out}");
    assert!(out.contains("no estimate"), "{out}");
    assert_eq!(run_1(dir.path(), &sim)["run"]["status"], "hibernating");
}
