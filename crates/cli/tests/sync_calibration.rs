//! `headroom sync org NAME --estimate` against a `headroom sim` process, then `sync status`:
//! a finished run prints its calibration table (estimated units beside actual requests and
//! points, per stage and route family, and for the run), and its JSON carries the same rows.

#![allow(clippy::expect_used)]

use serde_json::Value;

mod common;
use common::Sim;

#[test]
fn a_finished_sync_prints_its_calibration_table() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = Sim::start(&[
        "--org", "acme", "--repos", "4", "--seed", "5", "--token", "t1=alice",
    ]);
    let (code, out, err) = common::run_against(
        dir.path(),
        &sim,
        &["sync", "org", "acme", "--json", "--wait", "--estimate"],
    );
    assert_eq!(code, 0, "{err}");
    let done: Value = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["event"] == "sync.run_completed")
        .expect("the run's outcome line");
    assert_eq!(done["status"], "done", "{done}");
    // Each underestimated row is logged (stderr), by stage and for the run.
    let logged: Vec<Value> = err
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.to_string().contains("sync.budget_underestimated"))
        .collect();
    let id = done["run_id"].as_i64().expect("run id").to_string();

    let (code, text, err) = common::run_against(dir.path(), &sim, &["sync", "status", &id]);
    assert_eq!(code, 0, "{err}");
    println!("{text}");
    assert!(
        text.contains("calibration (estimated units vs actual, per route family):"),
        "{text}"
    );
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("calibration ("))
        .skip(2)
        .collect();
    // A REST family estimated by the plan and seen: assessable, with a ratio.
    let runs = table
        .iter()
        .find(|l| l.trim_start().starts_with("workflow_runs") && l.contains(" workflow_runs "))
        .expect("the workflow-run listing's line");
    assert!(runs.contains("rest_core"), "{runs}");
    assert!(
        !runs.contains("incomplete") && !runs.contains("unbudgeted"),
        "{runs}"
    );
    // A GraphQL family: raw numbers, not assessed against a request count.
    let org = table
        .iter()
        .find(|l| l.trim_start().starts_with("org ") && l.contains("organization"))
        .expect("the org stage's line");
    assert!(
        org.contains("graphql_cost") && org.contains("not assessable: estimated in query points"),
        "{org}"
    );
    assert!(
        table.iter().any(|l| l.trim_start().starts_with("(run)")),
        "{text}"
    );
    let flagged = table
        .iter()
        .filter(|l| l.contains("UNDERESTIMATED") || l.contains("unbudgeted"))
        .count();
    // Four repositories, all of them sampled by the plan: its REST rows are within a quarter
    // of what the run spent (the model's accuracy is `headroom-github`'s plan_accuracy test),
    // and whatever is flagged is logged once.
    let rest_rows: Vec<&&str> = table
        .iter()
        .filter(|l| l.trim_start().starts_with("(run)") && l.contains("rest_core"))
        .collect();
    assert!(!rest_rows.is_empty(), "{text}");
    for row in rest_rows {
        let ratio: f64 = row
            .split_whitespace()
            .nth(6)
            .and_then(|r| r.parse().ok())
            .unwrap_or_else(|| panic!("a ratio in {row}"));
        assert!((0.75..=1.25).contains(&ratio), "{row}");
    }
    assert_eq!(
        logged.len(),
        flagged,
        "one log line per flagged row:\n{text}"
    );

    let (code, json, err) =
        common::run_against(dir.path(), &sim, &["sync", "status", &id, "--json"]);
    assert_eq!(code, 0, "{err}");
    let status: Value = serde_json::from_str(&json).expect("status JSON");
    let run_rows = status[0]["calibration"]["run"]
        .as_array()
        .expect("run rows");
    assert!(!run_rows.is_empty(), "{json}");
    // Every request the run counted is in exactly one row of the run's table.
    let counted: u64 = status[0]["run"]["summary"]["buckets"]
        .as_object()
        .expect("buckets")
        .values()
        .map(|b| b["requests"].as_u64().expect("requests"))
        .sum();
    let in_rows: u64 = run_rows
        .iter()
        .map(|r| r["actual_requests"].as_u64().expect("actual"))
        .sum();
    assert_eq!(in_rows, counted, "{json}");
    // The simulator runs on this machine's clock: its `Date` reads in step, within the second
    // the header truncates (and a little latency).
    let skew = &status[0]["clock_skew"];
    let samples = skew["samples"].as_u64().expect("skew samples");
    assert!(samples > 0 && samples <= counted, "{skew}");
    let (min, max) = (
        skew["min_ms"].as_i64().expect("min"),
        skew["max_ms"].as_i64().expect("max"),
    );
    assert!(-2_000 <= min && min <= max && max <= 500, "{skew}");
    assert!(
        text.contains("provider clock (Date header) vs this machine:"),
        "{text}"
    );
    for r in run_rows {
        let family = r["family"].as_str().expect("family");
        assert!(
            headroom_core::route::RouteFamily::named(family).is_some(),
            "{family} is catalogued"
        );
        assert_eq!(r["incomplete"], false, "{r}");
        if r["unbudgeted_actual"] == false {
            assert!(r["estimated_units"].as_u64().expect("units") > 0, "{r}");
        }
    }
}
