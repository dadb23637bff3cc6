//! `headroom ingest` as a user runs it, against `headroom sim` on loopback: the default
//! scenario's figures and state summary, a deferral inside the cadence window (exit 0, no
//! request), a refused formula (exit 2), and an exhausted retry ladder (exit 1).

#![allow(clippy::expect_used)]

use std::path::Path;
use std::process::Command;

mod common;
use common::{BIN, Sim};

fn headroom(dir: &Path, api: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .current_dir(dir)
        .args(["--api-url", api, "--db", "h.db"])
        .args(args)
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("GITHUB_API_URL")
        .env_remove("POLL_INTERVAL_SECONDS")
        .env_remove("MAX_PAGES_PER_POLL")
        .output()
        .expect("runs");
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
