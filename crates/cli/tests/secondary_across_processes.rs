//! One secondary limit, every process: `headroom sync org` meets GitHub's secondary limit
//! (403, retry-after 60) against `headroom sim`; then `headroom enrich`, `headroom run` and a
//! second `headroom sync org` (which continues the same run), each its own process with
//! another token of the same owner on the same SQLite file, send nothing — they read the
//! block from the shared governor state and defer — and the run waits for the block to end.
//!
//! What must be known first comes from a simulator without the limit: the three tokens'
//! owner (a token's first `GET /user` would otherwise be the request that trips the limit)
//! and accepted feed events, so enrichment has work.

#![allow(clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::{BIN, Sim};

fn headroom(dir: &Path, api: &str, token: &str, args: &[&str]) -> Output {
    Command::new(BIN)
        .current_dir(dir)
        .args(["--db", "shared.db", "--api-url", api])
        .args(args)
        .env("GITHUB_TOKEN", token)
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_CONFIG")
        .env_remove("GITHUB_API_URL")
        .output()
        .expect("headroom runs")
}

fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn requests(log: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

#[test]
fn a_secondary_limit_met_by_sync_defers_enrich_run_and_another_sync_without_a_request() {
    let dir = tempfile::tempdir().expect("temp dir");
    let tokens = [
        "--token", "t1=alice", "--token", "t2=alice", "--token", "t3=alice",
    ];
    {
        let plain = Sim::start(&tokens);
        for token in ["t1", "t2", "t3"] {
            ok(&headroom(dir.path(), &plain.url, token, &["quota", "show"]));
        }
        let ingested = ok(&headroom(
            dir.path(),
            &plain.url,
            "t1",
            &["ingest", "--force"],
        ));
        assert!(ingested.contains("created"), "{ingested}");
    }

    let log = dir.path().join("sim.jsonl");
    let mut args = tokens.to_vec();
    args.extend([
        "--scenario",
        "secondary_rate_limited",
        "--org",
        "acme",
        "--log",
    ]);
    args.push(log.to_str().expect("utf-8"));
    let sim = Sim::start(&args);

    let first = ok(&headroom(
        dir.path(),
        &sim.url,
        "t1",
        &[
            "sync",
            "org",
            "acme",
            "--json",
            "--hold-secs",
            "0",
            "--reset-margin-secs",
            "1",
        ],
    ));
    // The first request met the limit. Stages `org` and `repositories` start together, so the
    // other's first request may have been granted before the refusal came back: at most those
    // two were sent, both refused.
    let sent = requests(&log);
    assert!(
        (1..=2).contains(&sent.len()),
        "the first requests met the limit: {first}\n{sent:?}"
    );
    assert!(sent.iter().all(|r| r["status"] == 403), "{sent:?}");
    assert!(first.contains("hibernat"), "{first}");

    let enrich = headroom(dir.path(), &sim.url, "t2", &["enrich", "--limit", "5"]);
    let run = headroom(
        dir.path(),
        &sim.url,
        "t3",
        &["run", "--ticks", "1", "--tick-secs", "1", "--no-listen"],
    );
    // The same organization on the same quota: the second start continues the first's run
    // (with the other token, which it must say), and waits with it.
    let second = headroom(
        dir.path(),
        &sim.url,
        "t2",
        &[
            "sync",
            "org",
            "acme",
            "--json",
            "--hold-secs",
            "0",
            "--reset-margin-secs",
            "1",
            "--rebind-credential",
        ],
    );
    let after = requests(&log);
    assert_eq!(
        after.len(),
        sent.len(),
        "nothing sent after the limit\nenrich: {}\n{}\nrun: {}\n{}\nsync: {}\n{}",
        String::from_utf8_lossy(&enrich.stdout),
        String::from_utf8_lossy(&enrich.stderr),
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
        String::from_utf8_lossy(&second.stdout),
        String::from_utf8_lossy(&second.stderr),
    );
    let second = ok(&second);
    assert!(second.contains("hibernat"), "{second}");
}
