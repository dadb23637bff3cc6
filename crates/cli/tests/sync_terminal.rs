//! What a person sees from the `sync` commands (issue 36, item 10): text by default — piped
//! too — ending with a summary table; JSON only with `--json`; no calibration warning for a
//! run started without an estimate.

#![allow(clippy::expect_used)]

use serde_json::Value;

mod common;
use common::{Sim, run_against};

fn sim() -> Sim {
    Sim::start(&[
        "--org", "acme", "--repos", "3", "--seed", "5", "--token", "t1=alice",
    ])
}

/// Lines of `out` that parse as a JSON object.
fn json_lines(out: &str) -> usize {
    out.lines()
        .filter(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| v.is_object()))
        .count()
}

#[test]
fn a_plain_sync_org_on_a_pipe_prints_a_short_text_summary_not_json_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = sim();
    let (code, out, err) = run_against(dir.path(), &sim, &["sync", "org", "acme", "--wait"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(json_lines(&out), 0, "{out}");
    assert!(out.starts_with("sync run 1 done · "), "{out}");
    assert!(out.contains("elapsed"), "{out}");
    for header in ["stage", "route family", "bucket"] {
        assert!(
            out.lines().any(|l| l.trim_start().starts_with(header)),
            "no {header} table:\n{out}"
        );
    }
    assert!(out.len() < 4_000, "{} bytes:\n{out}", out.len());
    assert!(out.lines().all(|l| l.len() < 120), "{out}");
}

#[test]
fn a_sync_started_without_an_estimate_logs_no_calibration_warnings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = sim();
    let (code, out, err) = run_against(dir.path(), &sim, &["sync", "org", "acme", "--wait"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!err.contains("budget_underestimated"), "{err}");
    // Nothing of the run went wrong, so headroom logs nothing of its own (warnings only). A
    // loaded machine may still see the database driver's slow-statement warning: that one
    // is about the machine, and it is not headroom's to hide.
    let own: Vec<&str> = err
        .lines()
        .filter(|l| !l.contains("\"event\":\"sqlx::query\""))
        .collect();
    assert!(own.is_empty(), "{err}");
}

#[test]
fn sync_org_json_prints_json_lines_that_end_with_the_outcome() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = sim();
    let (code, out, err) = run_against(
        dir.path(),
        &sim,
        &["sync", "org", "acme", "--wait", "--json"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("not JSON: {l}")))
        .collect();
    let last = lines.last().expect("lines");
    assert_eq!(last["event"], "sync.run_completed", "{last}");
    assert_eq!(last["status"], "done", "{last}");
}

#[test]
fn sync_worker_and_sync_plan_print_text_by_default_and_json_with_the_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = sim();
    let (code, out, err) = run_against(dir.path(), &sim, &["sync", "plan", "org", "acme"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(json_lines(&out), 0, "{out}");
    assert!(out.starts_with("plan for org acme"), "{out}");
    assert!(out.contains("3 repositories"), "{out}");
    let (code, out, err) =
        run_against(dir.path(), &sim, &["sync", "plan", "org", "acme", "--json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let plan: Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(plan["measured"]["repositories"], 3, "{plan}");

    let (code, out, err) = run_against(dir.path(), &sim, &["sync", "worker", "--once"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(out.trim(), "no sync run was due", "{out}");
}

#[test]
fn sync_worker_prints_a_runs_outcome_as_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 60 core requests a 14 s window: the run hibernates, and the worker takes it up.
    let sim = Sim::small_org(&["t1"], 14, &[]);
    let margin = ["--reset-margin-secs", "1"];
    let sync = [&["sync", "org", "acme", "--hold-secs", "0"][..], &margin].concat();
    let (code, out, err) = run_against(dir.path(), &sim, &sync);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.starts_with("sync run 1 hibernating until "), "{out}");
    assert!(
        out.contains("it goes on with headroom run or headroom sync worker"),
        "{out}"
    );
    assert_eq!(json_lines(&out), 0, "{out}");
    let worker = [&["sync", "worker", "--once"][..], &margin].concat();
    let mut seen = String::new();
    for _ in 0..40 {
        std::thread::sleep(std::time::Duration::from_millis(1_000));
        let (code, out, err) = run_against(dir.path(), &sim, &worker);
        assert_eq!(code, 0, "{out}\n{err}");
        if out.contains("sync run 1") {
            seen = out;
            break;
        }
    }
    assert!(
        seen.starts_with("sync run 1 done · ") || seen.starts_with("sync run 1 hibernating"),
        "{seen}"
    );
    assert_eq!(json_lines(&seen), 0, "{seen}");
}
