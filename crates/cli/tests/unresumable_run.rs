//! A run nobody can resume must not look like an ordinary wait (issue 36, item 2): a run
//! created with alice's token t1 hibernates; with her other token t2, `sync status` says this
//! credential cannot resume it and prints the `--rebind-credential` command, `sync worker`
//! says so once per run (text, or a JSON field) and exits 0, and `headroom run`'s worker logs
//! it as a warning naming the run and the command; with t1 the worker finishes it.

#![allow(clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use headroom_core::clock::{Clock, Timestamp, TokioClock};
use headroom_http::credential::fingerprint;
use serde_json::Value;

mod common;
use common::{BIN, Sim};

/// Alice has two tokens; 60 REST requests per 14-second window, so a sync of two
/// repositories hibernates.
fn tiny_sim() -> Sim {
    Sim::small_org(&["t1", "t2"], 14, &[])
}

/// The binary in `dir` on `sync.db` against `sim` with `token` only.
fn command(dir: &Path, sim: &Sim, token: &str, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .args(["--db", "sync.db", "--api-url", &sim.url])
        .args(args)
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("GITHUB_API_URL")
        .env_remove("RUST_LOG")
        .env("GITHUB_TOKEN", token);
    c
}

fn run(dir: &Path, sim: &Sim, token: &str, args: &[&str]) -> (i32, String, String) {
    let out = command(dir, sim, token, args).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn status_json(dir: &Path, sim: &Sim, token: &str) -> Value {
    let (code, out, err) = run(dir, sim, token, &["sync", "status", "1", "--json"]);
    assert_eq!(code, 0, "{err}");
    let all: Value = serde_json::from_str(&out).expect("status JSON");
    all[0].clone()
}

/// `sync org acme` with t1, no hold: run 1 hibernates at its first spent window.
fn hibernate_with_t1(dir: &Path, sim: &Sim) {
    let (code, out, err) = run(
        dir,
        sim,
        "t1",
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
}

/// Sleeps until run 1 is due (its wake time passed), and checks it still hibernates.
fn until_due(dir: &Path, sim: &Sim) {
    let s = status_json(dir, sim, "t1");
    let wake: Timestamp = s["run"]["not_before"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("a wake time: {s}"));
    let clock = TokioClock::system();
    let left = wake.duration_since(clock.now()).as_millis().max(0);
    assert!(left < 40_000, "a wake within the window: {s}");
    std::thread::sleep(Duration::from_millis(
        u64::try_from(left).unwrap_or(0) + 500,
    ));
    let now = status_json(dir, sim, "t1");
    assert_eq!(now["run"]["status"], "hibernating", "{now}");
}

#[test]
fn a_run_bound_to_one_token_says_another_token_of_its_owner_cannot_resume_it_and_how() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = tiny_sim();
    hibernate_with_t1(dir.path(), &sim);
    let (f1, f2) = (fingerprint("t1"), fingerprint("t2"));

    // With t1 (the run's own token) nothing is said about resuming it.
    let (code, out, err) = run(dir.path(), &sim, "t1", &["sync", "status", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("cannot resume"), "{out}");

    // With t2, before its owner is known: bound to t1, and the rebind command.
    let (code, out, err) = run(dir.path(), &sim, "t2", &["sync", "status", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("your credential cannot resume it"), "{out}");
    assert!(out.contains(&format!("bound to credential {f1}")), "{out}");
    assert!(
        out.contains("headroom sync org acme --resume 1 --rebind-credential"),
        "{out}"
    );

    // Once due, a worker with t2 skips it, saying why and the command, and exits 0.
    until_due(dir.path(), &sim);
    let (code, out, err) = run(
        dir.path(),
        &sim,
        "t2",
        &["sync", "worker", "--once", "--reset-margin-secs", "1"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("sync run 1 skipped"), "{out}\n{err}");
    assert!(out.contains(&format!("bound to credential {f1}")), "{out}");
    assert!(
        out.contains("headroom sync org acme --resume 1 --rebind-credential"),
        "{out}"
    );
    assert_eq!(out.matches("skipped").count(), 1, "said once: {out}");
    let (code, out, err) = run(
        dir.path(),
        &sim,
        "t2",
        &[
            "sync",
            "worker",
            "--once",
            "--json",
            "--reset-margin-secs",
            "1",
        ],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let skipped: Value = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["event"] == "sync.run_skipped")
        .unwrap_or_else(|| panic!("no skip line:\n{out}"));
    assert_eq!(skipped["run_id"], 1);
    assert!(
        skipped["command"]
            .as_str()
            .is_some_and(|c| c.contains("--rebind-credential")),
        "{skipped}"
    );

    // Now t2's owner is known: `sync status` says it is the same owner's other token.
    let (code, out, err) = run(dir.path(), &sim, "t2", &["sync", "status", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!("yours is {f2} of the same owner (alice)")),
        "{out}"
    );
    let s = status_json(dir.path(), &sim, "t2");
    assert!(
        s["this_credential"]["command"]
            .as_str()
            .is_some_and(|c| c.contains("--rebind-credential")),
        "{s}"
    );
    assert_eq!(s["run"]["status"], "hibernating", "t2 never took it: {s}");

    // With t1 the worker resumes it (each pass may hibernate again) and finishes it.
    for _ in 0..40 {
        if status_json(dir.path(), &sim, "t1")["run"]["status"] == "done" {
            break;
        }
        let (code, out, err) = run(
            dir.path(),
            &sim,
            "t1",
            &["sync", "worker", "--once", "--reset-margin-secs", "1"],
        );
        assert_eq!(code, 0, "{out}\n{err}");
        assert!(!out.contains("skipped"), "{out}");
        std::thread::sleep(Duration::from_millis(1_000));
    }
    let s = status_json(dir.path(), &sim, "t1");
    assert_eq!(s["run"]["status"], "done", "{s}");
    assert_eq!(s["run"]["credential"]["fingerprint"], f1.as_str());
}

#[test]
fn the_service_logs_a_due_run_bound_to_another_token_with_the_command_that_resumes_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = tiny_sim();
    hibernate_with_t1(dir.path(), &sim);
    until_due(dir.path(), &sim);
    let mut service = command(
        dir.path(),
        &sim,
        "t2",
        &[
            "run",
            "--no-listen",
            "--reset-margin-secs",
            "1",
            "--sync-poll-secs",
            "1",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .expect("starts");
    let stderr = service.stderr.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // Bounded through the clock module (DESIGN, Time), not the system's own instant.
    let clock = headroom_core::clock::SystemClock;
    let deadline = clock.now() + headroom_core::clock::SignedDuration::from_secs(30);
    let mut seen = Vec::new();
    let mut found = None;
    while clock.now() < deadline && found.is_none() {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(500)) {
            if line.contains("--rebind-credential") {
                found = Some(line.clone());
            }
            seen.push(line);
        }
    }
    let _ = Command::new("kill")
        .args(["-TERM", &service.id().to_string()])
        .status();
    let _ = service.wait();
    let line = found.unwrap_or_else(|| panic!("no warning names the command:\n{seen:#?}"));
    let e: Value = serde_json::from_str(&line).expect("a JSON log line");
    assert_eq!(e["level"], "warn", "{e}");
    assert_eq!(e["event"], "sync.run_skipped", "{e}");
    assert_eq!(e["run_id"], 1, "{e}");
    assert!(
        line.contains("headroom sync org acme --resume 1 --rebind-credential"),
        "{line}"
    );
    assert_eq!(
        status_json(dir.path(), &sim, "t1")["run"]["status"],
        "hibernating"
    );
}
