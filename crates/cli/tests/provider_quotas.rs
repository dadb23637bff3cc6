//! GitHub and GitLab on one host — as `headroom sim` serves both on one port, and a
//! self-managed deployment may — are two quotas: a refusal one provider answered cools down
//! and blocks only that provider's requests (issue 34, item 10). `headroom op` against
//! `headroom sim` on loopback, the processes sharing one database as they share its governor
//! and its recorded refusals.

#![allow(clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod common;
use common::{BIN, Sim};

/// `headroom op --provider PROVIDER ARGS…` on `h.db` with token `t1` for either provider.
fn op(dir: &Path, api: &str, provider: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .current_dir(dir)
        .args(["--db", "h.db", "--api-url", api])
        .args(["op", "--provider", provider, "--json"])
        .args(args)
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("GITHUB_API_URL")
        .env("GITHUB_TOKEN", "t1")
        .env("GITLAB_TOKEN", "t1")
        .output()
        .expect("runs");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// The requests the simulator received as `POST path`.
fn posts(log: &Path, path: &str) -> usize {
    std::fs::read_to_string(log)
        .expect("the simulator's log")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter(|e| e["method"] == "POST" && e["path"] == path)
        .count()
}

#[test]
fn a_github_429_never_cools_down_a_gitlab_mutation_on_the_same_host() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("sim.jsonl");
    // The scenario refuses the first mutation of each provider and identity with a 429.
    let sim = Sim::start(&[
        "--scenario",
        "mutation_429",
        "--token",
        "t1=alice",
        "--log",
        log.to_str().expect("utf-8"),
    ]);
    let gitlab = format!("{}/api/v4", sim.url);

    // GitHub refuses alice's mutation: a secondary limit, retry-after 60 s.
    let (code, text) = op(dir.path(), &sim.url, "github", &["create-repo", "first"]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("rate_limited"), "{text}");
    assert_eq!(posts(&log, "/user/repos"), 1);

    // GitLab's alice on the same host is another quota: her mutation is sent.
    let (_, text) = op(dir.path(), &gitlab, "gitlab", &["create-repo", "second"]);
    assert_eq!(posts(&log, "/api/v4/projects"), 1, "{text}");

    // GitHub's alice is still cooled down: nothing more is sent to GitHub.
    let (code, text) = op(dir.path(), &sim.url, "github", &["create-repo", "third"]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("rate_limited"), "{text}");
    assert_eq!(posts(&log, "/user/repos"), 1, "{text}");
}
