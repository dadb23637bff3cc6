//! Operators' caps on what sync may spend of a window (`[sync_caps]` in `headroom.toml`), as a
//! user runs them: with sync's share of core set to 30 % of a 100-request window, `headroom
//! sync org` takes the window to at most 30 used (plus what was in flight when the last
//! reading came), then hibernates until the window resets, saying which cap holds it; a bad
//! cap refuses to start, naming the setting.

#![allow(clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

mod common;
use common::{BIN, Sim};

fn headroom(dir: &Path, sim: &Sim, args: &[&str]) -> Output {
    Command::new(BIN)
        .current_dir(dir)
        .args([
            "--db",
            "caps.db",
            "--api-url",
            &sim.url,
            "--config",
            "headroom.toml",
        ])
        .args(args)
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_CONFIG")
        .env_remove("GITHUB_API_URL")
        .env("GITHUB_TOKEN", "t1")
        .output()
        .expect("runs")
}

#[test]
fn sync_stops_at_its_share_of_the_window_and_says_why() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("sim.jsonl");
    let sim = Sim::start(&[
        "--org",
        "acme",
        "--repos",
        "4",
        "--seed",
        "4",
        "--token",
        "t1=alice",
        "--core-limit",
        "100",
        "--log",
        log.to_str().expect("utf-8"),
    ]);
    std::fs::write(
        dir.path().join("headroom.toml"),
        "[sync_caps]\nshare = { core = 0.3 }\n",
    )
    .expect("write the config");
    let out = headroom(
        dir.path(),
        &sim,
        &["sync", "org", "acme", "--json", "--hold-secs", "0"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hibernating: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "sync.run_hibernating")
        .collect();
    assert_eq!(hibernating.len(), 1, "{stdout}");

    // The simulator's own count of core spent: what the window used, every request counted.
    let text = std::fs::read_to_string(&log).expect("the simulator's log");
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let core_used = entries
        .iter()
        .filter(|e| e["bucket"] == "core" && e["cost"].as_u64().unwrap_or(0) > 0)
        .count();
    assert!(core_used > 0, "{stdout}");
    // The ceiling (10) is the most that can be in flight past the last reading.
    assert!(
        core_used <= 30 + 10,
        "sync took core's window to {core_used} of 100 with a 30 % cap"
    );
    assert!(entries.iter().all(|e| e["status"] != 403));

    let run_id = hibernating[0]["run_id"].to_string();
    let status = headroom(dir.path(), &sim, &["sync", "status", &run_id, "--json"]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains("sync's cap: at most 30 % of core per window"),
        "{status}"
    );
}

#[test]
fn a_bad_cap_refuses_to_start_naming_the_setting() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = Sim::start(&["--token", "t1=alice"]);
    std::fs::write(
        dir.path().join("headroom.toml"),
        "[sync_caps]\nfamilies = { not_a_family = 5 }\n",
    )
    .expect("write the config");
    let out = headroom(dir.path(), &sim, &["sync", "org", "acme", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("sync_caps.families.not_a_family"),
        "{stderr}"
    );
}
