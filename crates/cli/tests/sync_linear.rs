//! `headroom sync linear`, black-box: the binary against a simulated Linear workspace served in
//! this process on loopback, so the test can read what the simulator holds and change it
//! between two runs. The simulator knows nothing of headroom's route families: the test reads
//! each logged document's root fields (`#root=issues`) into a family by its own reading of
//! Linear's schema, and holds the run's summary to it. Every table's rows are held to the
//! simulator's counts; a second run after some issues changed asks only for what changed and
//! re-lists team memberships, which Linear offers no change filter for.

#![allow(clippy::expect_used)]

use std::collections::BTreeMap;
use std::process::Command;

use headroom_core::clock::{SignedDuration, TokioClock};
use headroom_linear::documents::NESTED_HISTORY;
use headroom_sim::{LinearLimits, LinearWorkspaceSpec, SimConfig, Simulator, TokenSpec};
use serde_json::Value;

mod common;
use common::BIN;
use common::served::{completed, counts, output, serve, summary_families};

/// `headroom ARGS…` on `sync.db` in `dir` with Linear's API at `api` and `LINEAR_API_KEY=t1`,
/// and no GitHub setting.
fn command(dir: &std::path::Path, api: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir)
        .args(["--db", "sync.db", "--api-url", api])
        .args(args)
        .env_remove("GH_TOKEN")
        .env_remove("GITHUB_TOKEN")
        .env_remove("GITHUB_API_URL")
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_CONFIG")
        .env_remove("LINEAR_OAUTH_TOKEN")
        .env("LINEAR_API_KEY", "t1");
    cmd
}

async fn sync_linear(dir: &std::path::Path, api: &str) -> (i32, String, String) {
    output(command(
        dir,
        api,
        &[
            "sync",
            "linear",
            "--json",
            "--wait",
            "--reset-margin-secs",
            "1",
        ],
    ))
    .await
}

/// The route family of a logged document, by its root fields.
fn family(path: &str) -> &'static str {
    let roots = path.split_once("#root=").map_or("", |(_, r)| r);
    match roots {
        "viewer" => "identity",
        "organization,viewer" | "viewer,organization" => "linear_workspace",
        "teams" => "linear_teams",
        "users" => "linear_users",
        "teamMemberships" => "linear_team_members",
        "workflowStates" | "issueLabels" => "linear_metadata",
        "projects" => "linear_projects",
        "cycles" => "linear_cycles",
        "issues" => "linear_issues",
        "comments" => "linear_comments",
        "attachments" => "linear_attachments",
        "issue" => "linear_history",
        _ => panic!("a document the test cannot classify: {path}"),
    }
}

/// Documents per family in the simulator's log from entry `from` on (who-am-i left out: it is
/// not the run's). No answer may be a limit.
fn logged_families(sim: &Simulator, from: usize) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for entry in sim.request_log().iter().skip(from) {
        assert_eq!(entry.status, 200, "not a success: {entry:?}");
        let family = family(&entry.path);
        if family != "identity" {
            *out.entry(family.to_owned()).or_default() += 1;
        }
    }
    out
}

const TABLES: [&str; 11] = [
    "linear_teams",
    "linear_users",
    "linear_team_memberships",
    "linear_workflow_states",
    "linear_labels",
    "linear_projects",
    "linear_cycles",
    "linear_issues",
    "linear_comments",
    "linear_attachments",
    "linear_issue_history",
];

async fn tables(dir: &std::path::Path) -> BTreeMap<&'static str, i64> {
    counts(&dir.join("sync.db"), TABLES).await
}

fn expected(sim: &Simulator) -> BTreeMap<&'static str, i64> {
    let c = sim.linear_workspace_counts();
    let n = |v: usize| i64::try_from(v).expect("small");
    TABLES
        .into_iter()
        .zip([
            n(c.teams),
            n(c.users),
            n(c.memberships),
            n(c.states),
            n(c.labels),
            n(c.projects),
            n(c.cycles),
            n(c.issues),
            n(c.comments),
            n(c.attachments),
            n(c.history),
        ])
        .collect()
}

fn workspace(limits: LinearLimits) -> SimConfig {
    SimConfig::default()
        .with_token(TokenSpec::user("t1", "alice"))
        .with_linear_workspace(
            LinearWorkspaceSpec::new("acme")
                .with_teams(3)
                .with_issues_per_team(60)
                .with_limits(limits),
        )
}

/// The issue's check at a test's scale: a workspace whose collection takes several times the
/// complexity bucket, which refills continuously over 4 seconds. The governor holds every
/// document to what is left (the estimate before, `X-Complexity` after), so Linear never
/// answers `RATELIMITED`; the summary equals the simulator's log per family; every table holds
/// what the workspace does; a second run after 4 issues changed asks only for them (and each
/// one's history, nested in that page), while team memberships, which have no filter, are
/// listed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_linear_workspace_is_collected_within_its_complexity_and_a_second_run_asks_only_for_what_changed()
 {
    let limits = LinearLimits {
        api_key_complexity: 4_000,
        period: SignedDuration::from_secs(4),
        ..LinearLimits::default()
    };
    let served = serve(workspace(limits), "/linear").await;
    let dir = tempfile::tempdir().expect("temp dir");

    let (code, stdout, stderr) = sync_linear(dir.path(), &served.api).await;
    let summary = completed(code, &stdout, &stderr);
    let logged = logged_families(&served.sim, 0);
    assert_eq!(summary_families(&summary), logged, "{summary}");
    // Every history came nested in its issues page (none is longer than the nested page).
    assert_eq!(logged.get("linear_history"), None, "{logged:?}");
    let spent: u64 = served.sim.request_log().iter().map(|e| e.cost).sum();
    assert!(
        spent > 3 * limits.api_key_complexity,
        "the work ({spent} points) should take several buckets of {}",
        limits.api_key_complexity
    );
    assert_eq!(tables(dir.path()).await, expected(&served.sim));

    // `sync status` shows the run's own tables.
    let (code, out, err) = output(command(
        dir.path(),
        &served.api,
        &["sync", "status", "1", "--json"],
    ))
    .await;
    assert_eq!(code, 0, "{out}\n{err}");
    let status: Value = serde_json::from_str(&out).expect("status JSON");
    assert_eq!(
        status[0]["tables"]["linear_issues"],
        expected(&served.sim)["linear_issues"],
        "{status}"
    );
    assert!(
        status[0]["tables"].get("pull_requests").is_none(),
        "{status}"
    );

    let before = served.sim.request_log().len();
    let touched = served.sim.linear_touch(4);
    assert_eq!(touched.len(), 4);
    let (code, stdout, stderr) = sync_linear(dir.path(), &served.api).await;
    completed(code, &stdout, &stderr);
    let second = logged_families(&served.sim, before);
    // One page of changed issues, carrying their history: the seed's histories (at most 4
    // entries, 5 once touched) fit the page's nested history, so no issue's history is asked
    // on its own.
    let nested = NESTED_HISTORY as usize;
    let overflowing = served
        .sim
        .linear_history_lengths()
        .iter()
        .filter(|&&n| n > nested)
        .count();
    assert_eq!(overflowing, 0, "the seed's histories fit an issues page");
    assert_eq!(second.get("linear_issues"), Some(&1), "{second:?}");
    assert_eq!(second.get("linear_history"), None, "{second:?}");
    // Memberships are re-listed whole.
    assert!(second.contains_key("linear_team_members"), "{second:?}");
    // The issues page asked only for what changed: it returned the 4 touched issues.
    let issues_rows: i64 = common::sqlite_digest(
        &dir.path().join("sync.db"),
        &["SELECT COUNT(*) FROM linear_issues"],
    )
    .await[0];
    assert_eq!(issues_rows, expected(&served.sim)["linear_issues"]);
    assert_eq!(tables(dir.path()).await, expected(&served.sim));
}

/// A Linear run left hibernating (`--hold-secs 0`) on a spent complexity bucket is taken up by
/// `sync worker` with Linear's settings from `--config` (`[linear] api_url`, `LINEAR_API_KEY`)
/// and finished, woken each time the bucket has refilled enough. `quota show --provider
/// linear` names the key's user and both of its buckets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hibernating_linear_run_is_finished_by_sync_worker() {
    let limits = LinearLimits {
        api_key_complexity: 8_000,
        period: SignedDuration::from_secs(8),
        ..LinearLimits::default()
    };
    let served = serve(workspace(limits), "/linear").await;
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("linear.toml"),
        format!("[linear]\napi_url = \"{}\"\n", served.api),
    )
    .expect("config");
    let (code, stdout, stderr) = output(command(
        dir.path(),
        &served.api,
        &[
            "sync",
            "linear",
            "--json",
            "--hold-secs",
            "0",
            "--reset-margin-secs",
            "1",
        ],
    ))
    .await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("sync.run_hibernating"), "{stdout}");
    assert!(stdout.contains("LINEAR_API_KEY"), "{stdout}");

    let clock = TokioClock::system();
    let mut last = String::new();
    for _ in 0..60 {
        clock.sleep(SignedDuration::from_millis(1_000)).await;
        let mut worker = command(
            dir.path(),
            &served.api,
            &[
                "--config",
                "linear.toml",
                "sync",
                "worker",
                "--json",
                "--once",
                "--reset-margin-secs",
                "1",
            ],
        );
        // The worker reads Linear's API from the config file alone.
        worker.env_remove("GITHUB_API_URL");
        let (code, out, err) = output(worker).await;
        assert_eq!(code, 0, "{out}\n{err}");
        last = out;
        if last.contains("\"event\":\"sync.run_completed\"") {
            break;
        }
    }
    completed(0, &last, "");
    assert_eq!(tables(dir.path()).await, expected(&served.sim));
    assert_eq!(served.sim.count_status(400), 0, "no RATELIMITED answer");

    let (code, out, err) = output(command(
        dir.path(),
        &served.api,
        &["quota", "show", "--provider", "linear", "--json"],
    ))
    .await;
    assert_eq!(code, 0, "{out}\n{err}");
    let report: Value = serde_json::from_str(&out).expect("quota JSON");
    assert_eq!(report["provider"], "linear", "{report}");
    assert!(
        report["identity"]
            .as_str()
            .is_some_and(|i| i.starts_with("user ")),
        "{report}"
    );
    let buckets: Vec<&str> = report["snapshot"]["buckets"]
        .as_array()
        .expect("buckets")
        .iter()
        .filter_map(|b| b["bucket"].as_str())
        .collect();
    assert!(
        buckets.contains(&"requests") && buckets.contains(&"complexity"),
        "{report}"
    );
}
