//! `headroom sync org` against `headroom sim --scenario no_read_org`: the run finishes with
//! what the token can read, and `sync status` says in words which fields GitHub refused and
//! why (text and JSON).

#![allow(clippy::expect_used)]

use std::path::Path;

use serde_json::Value;

mod common;
use common::Sim;

fn run(dir: &Path, sim: &Sim, args: &[&str]) -> (i32, String, String) {
    common::run_against(dir, sim, args)
}

#[test]
fn sync_status_names_the_fields_github_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = Sim::start(&[
        "--org",
        "acme",
        "--repos",
        "3",
        "--seed",
        "3",
        "--token",
        "t1=alice",
        "--scenario",
        "no_read_org",
    ]);
    let (code, out, err) = run(
        dir.path(),
        &sim,
        &["sync", "org", "acme", "--json", "--wait"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let completed: Value = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["event"] == "sync.run_completed")
        .expect("a completion line");
    assert_eq!(completed["status"], "done", "{completed}");

    let (code, text, err) = run(dir.path(), &sim, &["sync", "status", "1"]);
    assert_eq!(code, 0, "{err}");
    for field in ["membersWithRole", "teams"] {
        let line = format!(
            "refused: org · organization.{field} — FORBIDDEN: Resource not accessible by personal access token"
        );
        assert!(text.contains(&line), "{line:?} not in:\n{text}");
    }

    let (code, json, err) = run(dir.path(), &sim, &["sync", "status", "1", "--json"]);
    assert_eq!(code, 0, "{err}");
    let status: Value = serde_json::from_str(&json).expect("status JSON");
    let refused = status[0]["refused"].as_array().expect("refused");
    assert_eq!(refused.len(), 2, "{json}");
    assert_eq!(refused[0]["stage"], "org");
    assert_eq!(refused[0]["path"], "organization.membersWithRole");
    assert_eq!(refused[0]["kind"], "FORBIDDEN");
    assert_eq!(status[0]["tables"]["repositories"], 3);
}
