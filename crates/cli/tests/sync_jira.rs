//! `headroom sync jira --site URL`, black-box: the binary against a simulated Jira Cloud site
//! served in this process on loopback, so the test can read what the simulator holds and
//! change it between two runs. The simulator knows nothing of headroom's route families: the
//! test reads each logged path into a family by its own reading of Jira's routes, and holds the
//! run's summary to it. Every table's rows are held to the simulator's counts; a second run after
//! some issues changed asks only for those (in the caller's time zone) and re-lists boards and
//! sprints, which Jira offers no change filter for.

#![allow(clippy::expect_used)]

use std::collections::BTreeMap;
use std::process::Command;

use headroom_sim::{JiraLimits, JiraSiteSpec, SimConfig, Simulator, TokenSpec};
use serde_json::Value;

mod common;
use common::BIN;
use common::served::{completed, counts, output, serve, summary_families};

/// `headroom ARGS…` on `sync.db` in `dir` as alice (`JIRA_EMAIL`, `JIRA_API_TOKEN=t1`), and no
/// GitHub setting.
fn command(dir: &std::path::Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir)
        .args(["--db", "sync.db", "--config", "headroom.toml"])
        .args(args)
        .env_remove("GH_TOKEN")
        .env_remove("GITHUB_TOKEN")
        .env_remove("GITHUB_API_URL")
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_CONFIG")
        .env_remove("JIRA_OAUTH_TOKEN")
        .env("JIRA_EMAIL", "alice@example.com")
        .env("JIRA_API_TOKEN", "t1");
    cmd
}

async fn sync_jira(dir: &std::path::Path, site: &str) -> (i32, String, String) {
    output(command(
        dir,
        &[
            "sync",
            "jira",
            "--site",
            site,
            "--json",
            "--wait",
            "--reset-margin-secs",
            "1",
        ],
    ))
    .await
}

/// The route family of a Jira path, by the test's own reading of Jira's routes; `myself` is
/// both who-am-i and the site stage's question about the caller's time zone.
fn family(path: &str) -> &'static str {
    let path = path.split('?').next().unwrap_or(path);
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segments.as_slice() {
        ["rest", "api", "3", "myself"] => "myself",
        ["rest", "api", "3", "field"] | ["rest", "api", "3", "project", "search"] => {
            "jira_metadata"
        }
        ["rest", "api", "3", "search", "jql"] => "jira_jql",
        ["rest", "api", "3", "changelog", "bulkfetch"]
        | ["rest", "api", "3", "issue", _, "changelog"] => "jira_issue_enrichment",
        ["rest", "api", "3", "issue", _, "comment"] => "jira_comments",
        ["rest", "api", "3", "issue", _, "worklog"] => "jira_worklogs",
        ["rest", "agile", "1.0", "board"] | ["rest", "agile", "1.0", "board", _, "sprint"] => {
            "jira_agile"
        }
        _ => panic!("a request the test cannot classify: {path}"),
    }
}

/// Requests per family in the simulator's log from entry `from` on, and how many asked
/// `/myself`. No answer may be a limit.
fn logged_families(sim: &Simulator, from: usize) -> (BTreeMap<String, u64>, u64) {
    let mut out = BTreeMap::new();
    let mut myself = 0;
    for entry in sim.request_log().iter().skip(from) {
        assert_ne!(entry.status, 429, "a limit answered: {entry:?}");
        match family(&entry.path) {
            "myself" => myself += 1,
            family => *out.entry(family.to_owned()).or_default() += 1,
        }
    }
    (out, myself)
}

const TABLES: [&str; 7] = [
    "jira_projects",
    "jira_issues",
    "jira_comments",
    "jira_changelog",
    "jira_worklogs",
    "jira_boards",
    "jira_sprints",
];

async fn tables(dir: &std::path::Path) -> BTreeMap<&'static str, i64> {
    counts(&dir.join("sync.db"), TABLES).await
}

/// What the site holds, worklogs only when they are collected.
fn expected(sim: &Simulator, worklogs: bool) -> BTreeMap<&'static str, i64> {
    let c = sim.jira_site_counts().expect("a seeded site");
    let n = |v: usize| i64::try_from(v).expect("small");
    TABLES
        .into_iter()
        .zip([
            n(c.projects),
            n(c.issues),
            n(c.comments),
            n(c.changelog_entries),
            if worklogs { n(c.worklogs) } else { 0 },
            n(c.boards),
            n(c.sprints),
        ])
        .collect()
}

/// The issue's check at a test's scale: every endpoint's burst bucket at 5 requests a second
/// with a buffer of 5, and a site whose collection takes many seconds of the busiest endpoint.
/// The governor paces each endpoint on its own, so Jira never answers 429; the summary equals
/// the simulator's log per family; every table holds what the site does; a second run after 3
/// issues changed, in New York's time zone, asks only for them and re-lists boards and sprints.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jira_site_is_collected_within_its_bursts_and_a_second_run_asks_only_for_what_changed() {
    let mut limits = JiraLimits::default();
    limits.burst_per_sec = 5;
    limits.burst_buffer = 5;
    limits.changelog_burst_per_sec = 5;
    let config = SimConfig::default()
        .with_token(TokenSpec::user("t1", "alice"))
        .with_jira_site(
            JiraSiteSpec::new("acme")
                .with_size(3, 12)
                .with_time_zone("America/New_York")
                .with_limits(limits),
        );
    let served = serve(config, "").await;
    let dir = tempfile::tempdir().expect("temp dir");
    // The site's burst rate, as its operator knows it (Jira's default is 100).
    std::fs::write(
        dir.path().join("headroom.toml"),
        "[jira]\nburst_per_sec = 5\n",
    )
    .expect("config");

    let (code, stdout, stderr) = sync_jira(dir.path(), &served.api).await;
    let summary = completed(code, &stdout, &stderr);
    let (logged, myself) = logged_families(&served.sim, 0);
    let counted = summary_families(&summary);
    // The site stage's `/myself` is the run's; who-am-i's (at most one) is not.
    let mut run_logged = logged.clone();
    let metadata = counted.get("jira_metadata").copied().unwrap_or(0);
    let run_myself = metadata - logged.get("jira_metadata").copied().unwrap_or(0);
    assert!(
        run_myself <= myself && myself - run_myself <= 1,
        "{myself} /myself, {run_myself} the run's: {counted:?} {logged:?}"
    );
    run_logged.insert("jira_metadata".into(), metadata);
    assert_eq!(counted, run_logged, "{summary}");
    let busiest = logged.values().max().copied().unwrap_or(0);
    assert!(
        busiest > 5 * 5,
        "the busiest endpoint needs many seconds: {logged:?}"
    );
    assert_eq!(tables(dir.path()).await, expected(&served.sim, false));

    let before = served.sim.request_log().len();
    let touched = served.sim.jira_touch(3);
    assert_eq!(touched.len(), 3);
    let (code, stdout, stderr) = sync_jira(dir.path(), &served.api).await;
    completed(code, &stdout, &stderr);
    let (second, _) = logged_families(&served.sim, before);
    // One search page per project; the touched issues' comments, nothing else's.
    assert_eq!(second.get("jira_jql"), Some(&3), "{second:?}");
    assert_eq!(second.get("jira_comments"), Some(&3), "{second:?}");
    // Boards and sprints are listed again.
    assert!(
        second.get("jira_agile").copied().unwrap_or(0) >= logged["jira_agile"],
        "{second:?}"
    );
    assert_eq!(tables(dir.path()).await, expected(&served.sim, false));
}

/// A 403 is a permission refusal, never a limit, on Jira: a user without Jira Software gets
/// it from the agile API. The run finishes with everything else collected, the refusal is
/// named by `sync status`, and the refused request was sent once, never retried. A project
/// named on the command line that the credential cannot see is named too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jira_permission_refusal_is_named_by_sync_status_and_never_retried() {
    let mut spec = JiraSiteSpec::new("acme").with_size(2, 5);
    spec.agile_unlicensed = vec!["alice".into()];
    spec.restricted_projects = 1;
    let served = serve(
        SimConfig::default()
            .with_token(TokenSpec::user("t1", "alice"))
            .with_jira_site(spec),
        "",
    )
    .await;
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("headroom.toml"), "").expect("config");
    let (code, stdout, stderr) = output(command(
        dir.path(),
        &[
            "sync",
            "jira",
            "--site",
            &served.api,
            "PA",
            "PB",
            "--json",
            "--wait",
            "--reset-margin-secs",
            "1",
        ],
    ))
    .await;
    completed(code, &stdout, &stderr);
    let refused_agile = served
        .sim
        .request_log()
        .iter()
        .filter(|e| e.status == 403)
        .count();
    assert_eq!(refused_agile, 1, "the refused board list is asked once");
    let rows = tables(dir.path()).await;
    assert_eq!(rows["jira_projects"], 1, "{rows:?}");
    assert_eq!(rows["jira_issues"], 5, "{rows:?}");
    assert_eq!(rows["jira_boards"], 0, "{rows:?}");

    let (code, text, err) = output(command(dir.path(), &["sync", "status", "1"])).await;
    assert_eq!(code, 0, "{text}\n{err}");
    assert!(text.contains("refused: boards"), "{text}");
    assert!(text.contains("refused: projects · PB"), "{text}");
}

/// `sync plan jira` measures the site (a project search's total, Jira's approximate count per
/// project, a few sampled issues' children), and `sync jira --estimate` keeps that estimate
/// with its run. On a site whose issues all hold as many children, the model is exact: every
/// stage's estimate per route family equals what the run spent, and the plan's total is the
/// run's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_of_a_uniform_jira_site_is_what_the_sync_spends() {
    let served = serve(
        SimConfig::default()
            .with_token(TokenSpec::user("t1", "alice"))
            .with_jira_site(JiraSiteSpec::new("acme").with_size(2, 7)),
        "",
    )
    .await;
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("headroom.toml"), "").expect("config");
    let (code, out, err) = output(command(
        dir.path(),
        &["sync", "plan", "jira", "--site", &served.api, "--json"],
    ))
    .await;
    assert_eq!(code, 0, "{out}\n{err}");
    let plan: Value = serde_json::from_str(&out).expect("plan JSON");
    assert_eq!(plan["measured"]["projects"], 2, "{plan}");
    assert_eq!(plan["measured"]["issues"], 14, "{plan}");

    let (code, stdout, stderr) = output(command(
        dir.path(),
        &[
            "sync",
            "jira",
            "--site",
            &served.api,
            "--json",
            "--wait",
            "--estimate",
        ],
    ))
    .await;
    let summary = completed(code, &stdout, &stderr);
    let per_family = |field: &str, units: &str| -> BTreeMap<(String, String), u64> {
        let mut out = BTreeMap::new();
        for (stage, rows) in summary[field].as_object().expect("per stage") {
            for row in rows.as_array().expect("rows") {
                let family = row["family"].as_str().expect("family").to_owned();
                let n = row[units].as_u64().expect("units");
                if n > 0 {
                    out.insert((stage.clone(), family), n);
                }
            }
        }
        out
    };
    let spent = per_family("actuals", "requests");
    assert!(!spent.is_empty());
    assert_eq!(per_family("estimates", "units"), spent, "{summary}");
    let total: u64 = spent.values().sum();
    assert_eq!(plan["estimate"]["requests"], total, "{plan}");
}
