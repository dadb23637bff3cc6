//! `headroom sync plan org NAME` against a `headroom sim` process: its estimate of REST requests
//! and GraphQL points, made before spending anything but its own probe, is compared with what
//! a full sync of the same organization then costs in the simulator's log.

#![allow(clippy::expect_used)]

use std::path::Path;

use serde_json::Value;

mod common;
use common::Sim;

fn run(dir: &Path, sim: &Sim, args: &[&str]) -> (i32, String, String) {
    common::run_against(dir, sim, args)
}

/// Counted core requests (the identity's `GET /user` excluded) and GraphQL points in the log.
fn spent(log: &Path) -> (u64, u64) {
    let text = std::fs::read_to_string(log).expect("the simulator's log");
    let (mut core, mut points) = (0, 0);
    for line in text.lines() {
        let e: Value = serde_json::from_str(line).expect("a JSON line");
        let cost = e["cost"].as_u64().unwrap_or(0);
        match e["bucket"].as_str() {
            Some("core") if cost > 0 && e["path"] != "/user" => core += 1,
            Some("graphql") => points += cost,
            _ => {}
        }
    }
    (core, points)
}

fn within(estimate: u64, actual: u64, tolerance: f64) -> bool {
    let (e, a) = (estimate as f64, actual as f64);
    (e - a).abs() <= a * tolerance
}

#[test]
fn the_plan_estimates_what_the_sync_then_spends() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("sim.log");
    let sim = Sim::start(&[
        "--org",
        "acme",
        "--repos",
        "6",
        "--seed",
        "3",
        "--token",
        "t1=alice",
        "--log",
        log.to_str().expect("utf-8"),
    ]);
    let (code, out, err) = run(dir.path(), &sim, &["sync", "plan", "org", "acme", "--json"]);
    assert_eq!(code, 0, "{err}");
    let plan: Value = serde_json::from_str(&out).expect("plan JSON");
    let (probe_core, probe_points) = spent(&log);
    // Six repositories, fewer than the run sample: every one's runs are read.
    assert_eq!(
        plan["sampled"]["repositories_sampled_for_runs"], 6,
        "{plan}"
    );
    assert_eq!(probe_core, 6, "the plan reads each repository's runs once");

    let (code, _, err) = run(
        dir.path(),
        &sim,
        &["sync", "org", "acme", "--json", "--wait"],
    );
    assert_eq!(code, 0, "{err}");
    let (core, points) = spent(&log);
    let (core, points) = (core - probe_core, points - probe_points);
    let est_core = plan["estimate"]["core"]["requests"].as_u64().expect("core");
    // The per-family breakdown sums to the REST total.
    let by_family_core: u64 = plan["by_family"]
        .as_array()
        .expect("by_family")
        .iter()
        .filter(|f| f["dimension"] == "rest_core")
        .map(|f| f["units"].as_u64().expect("units"))
        .sum();
    assert_eq!(by_family_core, est_core, "{plan}");
    let est_points = plan["estimate"]["graphql"]["points"]
        .as_u64()
        .expect("points");
    println!(
        "core: estimated {est_core}, spent {core}; graphql: estimated {est_points}, spent {points}"
    );
    assert!(
        within(est_core, core, 0.25),
        "core: estimated {est_core}, spent {core}\n{plan}"
    );
    assert!(
        within(est_points, points, 0.25),
        "graphql: estimated {est_points}, spent {points}\n{plan}"
    );
}
