//! `headroom sync gitlab GROUP`, black-box: the binary against a simulated GitLab group served
//! in this process on loopback, so the test can read what the simulator holds and change it
//! between two runs. The simulator knows nothing of headroom's route families: the test
//! classifies the simulator's own request log into families by path, and holds the run's
//! summary to it; every table's rows are held to the simulator's counts; a second run after
//! some objects changed asks only for what changed (and its children) and re-lists the lists
//! GitLab offers no change filter for.

#![allow(clippy::expect_used)]

use std::collections::BTreeMap;
use std::process::Command;

use headroom_core::clock::TokioClock;
use headroom_sim::{GitlabGroupSpec, SimConfig, Simulator, TokenSpec};
use serde_json::Value;

mod common;
use common::BIN;
use common::served::{Served, completed, output, serve, summary_families};

/// `headroom sync gitlab GROUP --json --wait` on `sync.db` in `dir`, with `GITLAB_TOKEN=t1`
/// and no GitHub setting: its exit code, stdout and stderr.
async fn sync_gitlab(dir: &std::path::Path, api: &str, group: &str) -> (i32, String, String) {
    headroom(
        dir,
        api,
        &[
            "sync",
            "gitlab",
            group,
            "--json",
            "--wait",
            "--reset-margin-secs",
            "1",
        ],
    )
    .await
}

/// `headroom ARGS…` on `sync.db` in `dir` with GitLab's API at `api` (`--api-url` is the
/// command's provider's) and `GITLAB_TOKEN=token`, and no GitHub setting.
fn command(dir: &std::path::Path, api: &str, token: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir)
        .args(["--db", "sync.db", "--api-url", api])
        .args(args)
        .env_remove("GH_TOKEN")
        .env_remove("GITHUB_TOKEN")
        .env_remove("GITHUB_API_URL")
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_CONFIG")
        .env_remove("GITLAB_OAUTH_TOKEN")
        .env("GITLAB_TOKEN", token);
    cmd
}

/// [`command`] with token `t1`, run.
async fn headroom(dir: &std::path::Path, api: &str, args: &[&str]) -> (i32, String, String) {
    output(command(dir, api, "t1", args)).await
}

/// The group of [`group_config`] behind a throttle of 40 requests a 2-second window, served,
/// with `gitlab.toml` naming its API for commands that read GitLab's settings from `--config`;
/// and a run of it left hibernating by `sync gitlab --hold-secs 0` (its stdout returned).
async fn hibernated_run(dir: &std::path::Path) -> (Served, String) {
    let mut config = group_config();
    config.gitlab_requests_per_minute = 40;
    config.gitlab_window_secs = 2;
    let served = serve(config, "/api/v4").await;
    std::fs::write(
        dir.join("gitlab.toml"),
        format!("[gitlab]\napi_url = \"{}\"\n", served.api),
    )
    .expect("config");
    let (code, stdout, stderr) = headroom(dir, &served.api, &HIBERNATE).await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("sync.run_hibernating"), "{stdout}");
    (served, stdout)
}

/// `sync gitlab acme` that leaves its run hibernating at the first window it must wait for.
///
/// The margin is [`MARGIN_SECS`], past the runner's 5-second in-process pacing: a 2-second
/// window may reset between a stage's deferral and the runner's next look at the buckets on a
/// loaded machine, and a margin of one second then left only a short wait, paced in process
/// instead of hibernated.
const HIBERNATE: [&str; 8] = [
    "sync",
    "gitlab",
    "acme",
    "--json",
    "--hold-secs",
    "0",
    "--reset-margin-secs",
    MARGIN_SECS,
];

/// [`HIBERNATE`]'s margin past a window's reset.
const MARGIN_SECS: &str = "10";

/// The route family of a GitLab API path, by the test's own reading of GitLab's routes.
fn family(path: &str) -> &'static str {
    let path = path.split('?').next().unwrap_or(path);
    let segments: Vec<&str> = path.trim_start_matches("/api/v4/").split('/').collect();
    match segments.as_slice() {
        ["user"] => "identity",
        ["groups", _] | ["groups", _, "descendant_groups"] => "gitlab_groups",
        ["groups", _, "milestones"] => "gitlab_milestones",
        ["groups", _, "projects"] => "gitlab_projects",
        ["projects", _, "merge_requests"] => "gitlab_merge_requests",
        ["projects", _, "merge_requests", _, "commits"] => "gitlab_merge_request_commits",
        ["projects", _, "merge_requests", _, "approvals"] => "gitlab_merge_request_approvals",
        ["projects", _, "merge_requests", _, "notes"] => "gitlab_merge_request_notes",
        ["projects", _, "pipelines"] => "gitlab_pipelines",
        ["projects", _, "pipelines", _, "jobs"] => "gitlab_jobs",
        ["projects", _, "issues"] => "gitlab_issues",
        ["projects", _, "issues", _, "notes"] => "gitlab_issue_notes",
        ["projects", _, "milestones"] => "gitlab_milestones",
        ["projects", _, "deployments"] => "gitlab_deployments",
        ["projects", _, "releases"] => "gitlab_releases",
        ["projects", _, "feature_flags"] => "gitlab_feature_flags",
        _ => panic!("a request the test cannot classify: {path}"),
    }
}

/// Requests per family in the simulator's log from entry `from` on (the identity's
/// `GET /user` left out: it is not the run's).
fn logged_families(sim: &Simulator, from: usize) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for entry in sim.request_log().iter().skip(from) {
        assert_ne!(entry.status, 429, "a 429: {entry:?}");
        let family = family(&entry.path);
        if family != "identity" {
            *out.entry(family.to_owned()).or_default() += 1;
        }
    }
    out
}

/// Row counts of the GitLab tables.
async fn tables(dir: &std::path::Path) -> BTreeMap<&'static str, i64> {
    let tables = [
        "gitlab_groups",
        "gitlab_projects",
        "gitlab_merge_requests",
        "gitlab_merge_request_commits",
        "gitlab_merge_request_approvals",
        "gitlab_pipelines",
        "gitlab_jobs",
        "gitlab_issues",
        "gitlab_milestones",
        "gitlab_deployments",
        "gitlab_releases",
        "gitlab_feature_flags",
    ];
    let queries: Vec<String> = tables
        .iter()
        .map(|t| format!("SELECT COUNT(*) FROM {t}"))
        .collect();
    let mut queries: Vec<&str> = queries.iter().map(String::as_str).collect();
    queries.push("SELECT COUNT(*) FROM gitlab_notes WHERE noteable_type = 'MergeRequest'");
    queries.push("SELECT COUNT(*) FROM gitlab_notes WHERE noteable_type = 'Issue'");
    let values = common::sqlite_digest(&dir.join("sync.db"), &queries).await;
    let mut out: BTreeMap<&'static str, i64> = tables.into_iter().zip(values.clone()).collect();
    out.insert("gitlab_notes (merge requests)", values[tables.len()]);
    out.insert("gitlab_notes (issues)", values[tables.len() + 1]);
    out
}

fn group_config() -> SimConfig {
    SimConfig::default()
        .with_token(TokenSpec::user("t1", "alice"))
        .with_gitlab_group(
            GitlabGroupSpec::new("acme")
                .with_subgroups(2, 2)
                .with_projects_per_group(2)
                .with_items(6),
        )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gitlab_group_is_collected_whole_and_a_second_run_asks_only_for_what_changed() {
    let served = serve(group_config(), "/api/v4").await;
    let dir = tempfile::tempdir().expect("temp dir");
    let counts = served
        .sim
        .gitlab_group_counts("acme")
        .expect("the seeded group");

    let (code, stdout, stderr) = sync_gitlab(dir.path(), &served.api, "acme").await;
    let summary = completed(code, &stdout, &stderr);
    let logged = logged_families(&served.sim, 0);
    assert_eq!(summary_families(&summary), logged, "{summary}");

    let rows = tables(dir.path()).await;
    let expected: BTreeMap<&'static str, i64> = [
        ("gitlab_groups", counts.groups),
        ("gitlab_projects", counts.projects),
        ("gitlab_merge_requests", counts.merge_requests),
        ("gitlab_merge_request_commits", counts.merge_request_commits),
        (
            "gitlab_merge_request_approvals",
            counts.merge_request_approvals,
        ),
        ("gitlab_pipelines", counts.pipelines),
        ("gitlab_jobs", counts.jobs),
        ("gitlab_issues", counts.issues),
        ("gitlab_milestones", counts.milestones),
        ("gitlab_deployments", counts.deployments),
        ("gitlab_releases", counts.releases),
        ("gitlab_feature_flags", counts.feature_flags),
        ("gitlab_notes (merge requests)", counts.merge_request_notes),
        ("gitlab_notes (issues)", counts.issue_notes),
    ]
    .into_iter()
    .map(|(t, n)| (t, i64::try_from(n).expect("small")))
    .collect();
    assert_eq!(rows, expected);

    // `sync status` tells the run's own tables, and that this credential can resume it.
    let (code, out, err) =
        headroom(dir.path(), &served.api, &["sync", "status", "1", "--json"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let status: Value = serde_json::from_str(&out).expect("status JSON");
    let shown = &status[0]["tables"];
    assert_eq!(
        shown["gitlab_merge_requests"], expected["gitlab_merge_requests"],
        "{status}"
    );
    assert_eq!(shown["gitlab_jobs"], expected["gitlab_jobs"], "{status}");
    assert!(shown.get("pull_requests").is_none(), "{status}");
    assert!(status[0]["this_credential"].is_null(), "{status}");
    // In words, a stage's scopes are the group's projects, and the group stage has none.
    let (code, text, err) = headroom(dir.path(), &served.api, &["sync", "status", "1"]).await;
    assert_eq!(code, 0, "{text}\n{err}");
    let projects = counts.projects;
    assert!(
        text.contains(&format!("projects {projects}/{projects}")),
        "{text}"
    );
    assert!(!text.contains("repos "), "{text}");

    // Some objects change; the second run asks only for those and their children.
    let before = served.sim.request_log().len();
    let touched = served.sim.gitlab_touch("acme", 2).expect("touched");
    let (code, stdout, stderr) = sync_gitlab(dir.path(), &served.api, "acme").await;
    completed(code, &stdout, &stderr);
    let second = logged_families(&served.sim, before);
    let per_project = |family: &str| second.get(family).copied().unwrap_or(0);
    let projects = u64::try_from(counts.projects).expect("small");
    // One page each of the filtered lists per project (all changed objects fit in one page).
    for family in [
        "gitlab_merge_requests",
        "gitlab_issues",
        "gitlab_pipelines",
        "gitlab_deployments",
        "gitlab_releases",
        "gitlab_feature_flags",
    ] {
        assert_eq!(per_project(family), projects, "{family}: {second:?}");
    }
    // Milestones have no change filter: every project's and every group's are listed again.
    assert_eq!(
        per_project("gitlab_milestones"),
        projects + u64::try_from(counts.groups).expect("small"),
        "{second:?}"
    );
    let n = |v: &Vec<(u64, u64)>| u64::try_from(v.len()).expect("small");
    assert_eq!(
        per_project("gitlab_merge_request_approvals"),
        n(&touched.merge_requests),
        "{second:?}"
    );
    assert_eq!(
        per_project("gitlab_jobs"),
        n(&touched.pipelines),
        "{second:?}"
    );
    assert_eq!(
        per_project("gitlab_issue_notes"),
        n(&touched.issues),
        "{second:?}"
    );
    let after = served
        .sim
        .gitlab_group_counts("acme")
        .expect("the seeded group");
    let rows = tables(dir.path()).await;
    assert_eq!(
        rows["gitlab_jobs"],
        i64::try_from(after.jobs).expect("small")
    );
    assert_eq!(
        rows["gitlab_notes (issues)"],
        i64::try_from(after.issue_notes).expect("small")
    );
}

/// The issue's check at a test's scale: GitLab's throttle at 40 requests a 2-second window, a
/// group that needs more than ten of them. The run waits each window out (GitLab's
/// `RateLimit-*` headers are the truth) and never meets a 429.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_that_needs_more_than_ten_windows_is_collected_without_a_429() {
    let mut config = SimConfig::default()
        .with_token(TokenSpec::user("t1", "alice"))
        .with_gitlab_group(
            GitlabGroupSpec::new("acme")
                .with_subgroups(2, 2)
                .with_projects_per_group(2)
                .with_items(10),
        );
    config.gitlab_requests_per_minute = 40;
    config.gitlab_window_secs = 2;
    let served = serve(config, "/api/v4").await;
    let dir = tempfile::tempdir().expect("temp dir");
    let counts = served
        .sim
        .gitlab_group_counts("acme")
        .expect("the seeded group");

    let (code, stdout, stderr) = sync_gitlab(dir.path(), &served.api, "acme").await;
    let summary = completed(code, &stdout, &stderr);
    // No 429 (logged_families refuses one) and the same requests per family on both sides.
    assert_eq!(
        summary_families(&summary),
        logged_families(&served.sim, 0),
        "{summary}"
    );
    // Windows the throttle opened: its remaining rose from one request to the next.
    let log = served.sim.request_log();
    let remaining: Vec<u64> = log.iter().filter_map(|e| e.remaining).collect();
    let windows = 1 + remaining.windows(2).filter(|w| w[1] > w[0]).count();
    assert!(windows > 10, "only {windows} windows: {remaining:?}");
    let rows = tables(dir.path()).await;
    assert_eq!(
        rows["gitlab_merge_request_commits"],
        i64::try_from(counts.merge_request_commits).expect("small")
    );
    assert_eq!(
        rows["gitlab_jobs"],
        i64::try_from(counts.jobs).expect("small")
    );
    assert_eq!(
        rows["gitlab_notes (issues)"],
        i64::try_from(counts.issue_notes).expect("small")
    );
}

/// A GitLab run left hibernating (`--hold-secs 0`) is taken up by `sync worker` with GitLab's
/// settings from `--config` (`[gitlab] api_url`; `GITLAB_TOKEN`), woken at each window's reset
/// until it is done — as an organization run is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hibernating_gitlab_run_is_finished_by_sync_worker() {
    use headroom_core::clock::SignedDuration;
    let dir = tempfile::tempdir().expect("temp dir");
    let (served, stdout) = hibernated_run(dir.path()).await;
    assert!(stdout.contains("headroom sync worker"), "{stdout}");

    let clock = TokioClock::system();
    let mut last = String::new();
    let mut done = false;
    for _ in 0..60 {
        clock.sleep(SignedDuration::from_millis(1_000)).await;
        let (code, out, err) = headroom(
            dir.path(),
            &served.api,
            &[
                "--config",
                "gitlab.toml",
                "sync",
                "worker",
                "--json",
                "--once",
                "--reset-margin-secs",
                "1",
            ],
        )
        .await;
        assert_eq!(code, 0, "{out}\n{err}");
        if out.contains("\"event\":\"sync.run_completed\"") {
            last = out;
            done = true;
            break;
        }
        last = out;
    }
    assert!(done, "the worker never finished the run: {last}");
    let summary = completed(0, &last, "");
    assert!(
        summary["actuals"]
            .as_object()
            .is_some_and(|s| s.contains_key("merge_requests"))
    );
    let counts = served
        .sim
        .gitlab_group_counts("acme")
        .expect("the seeded group");
    let rows = tables(dir.path()).await;
    assert_eq!(
        rows["gitlab_merge_requests"],
        i64::try_from(counts.merge_requests).expect("small")
    );
    // Every request the simulator saw came with GitLab's token, none was refused.
    assert_eq!(served.sim.count_status(429), 0);
}

/// `sync gitlab --estimate` keeps `sync plan gitlab`'s estimate with its run. On a group small
/// enough to be sampled whole, whose child lists fit a page each, the model is exact: every
/// stage's estimate per route family equals what the run spent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_of_a_group_sampled_whole_is_what_the_sync_spends() {
    let config = SimConfig::default()
        .with_token(TokenSpec::user("t1", "alice"))
        .with_gitlab_group(
            GitlabGroupSpec::new("acme")
                .with_subgroups(1, 1)
                .with_projects_per_group(2)
                .with_items(7),
        );
    let served = serve(config, "/api/v4").await;
    let dir = tempfile::tempdir().expect("temp dir");
    let (code, stdout, stderr) = headroom(
        dir.path(),
        &served.api,
        &["sync", "plan", "gitlab", "acme", "--json"],
    )
    .await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let plan: Value = serde_json::from_str(&stdout).expect("plan JSON");
    assert_eq!(plan["measured"]["projects"], 4, "{plan}");
    assert_eq!(plan["measured"]["subgroups"], 1, "{plan}");

    let (code, stdout, stderr) = headroom(
        dir.path(),
        &served.api,
        &["sync", "gitlab", "acme", "--json", "--wait", "--estimate"],
    )
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
    let estimated = per_family("estimates", "units");
    let spent = per_family("actuals", "requests");
    assert!(!spent.is_empty());
    assert_eq!(estimated, spent, "{summary}");
    let total: u64 = spent.values().sum();
    assert_eq!(plan["estimate"]["requests"], total, "{plan}");
}

/// The same for `headroom run`, the long-lived service: with a GitLab credential and
/// `[gitlab] api_url` it wakes a GitLab run at its time, beside the organization runs, and
/// finishes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hibernating_gitlab_run_is_finished_by_headroom_run() {
    use headroom_core::clock::SignedDuration;
    let dir = tempfile::tempdir().expect("temp dir");
    let (served, stdout) = hibernated_run(dir.path()).await;
    assert!(stdout.contains("headroom run"), "{stdout}");

    // The feed's GitHub API is the same simulator (no GitHub token: nothing of GitHub's runs).
    let mut service = command(
        dir.path(),
        &served.api,
        "t1",
        &["--config", "gitlab.toml", "run", "--no-listen"],
    );
    service
        .args(["--reset-margin-secs", "1", "--sync-poll-secs", "1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = service.spawn().expect("starts");
    let clock = TokioClock::system();
    let mut status = Value::Null;
    for _ in 0..60 {
        clock.sleep(SignedDuration::from_millis(1_000)).await;
        let (code, out, err) =
            headroom(dir.path(), &served.api, &["sync", "status", "1", "--json"]).await;
        assert_eq!(code, 0, "{out}\n{err}");
        status = serde_json::from_str::<Value>(&out).expect("status JSON")[0].clone();
        if status["run"]["status"] == "done" {
            break;
        }
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let logs = tokio::task::spawn_blocking(move || {
        let _ = child.wait();
        let mut text = String::new();
        if let Some(mut err) = child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut err, &mut text);
        }
        text
    })
    .await
    .expect("joins");
    assert_eq!(
        status["run"]["status"], "done",
        "never finished: {status}\n{logs}"
    );
    let counts = served
        .sim
        .gitlab_group_counts("acme")
        .expect("the seeded group");
    let rows = tables(dir.path()).await;
    assert_eq!(
        rows["gitlab_jobs"],
        i64::try_from(counts.jobs).expect("small")
    );
    assert_eq!(served.sim.count_status(429), 0);
}

/// An OAuth token that expires mid-run (GitLab answers 401) does not fail the run: it
/// hibernates with a reason that says the token was refused, where it came from and how to go
/// on, and a resume with a new token of the same owner finishes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_refused_mid_run_leaves_the_run_hibernating_for_a_new_token() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (served, _) = hibernated_run(dir.path()).await;

    // The token expires; the same user gets a new one.
    served.sim.revoke_token("t1");
    served.sim.add_token(TokenSpec::user("t2", "alice"));
    // Past the hibernation's wake (the reset plus HIBERNATE's margin), so the resume asks.
    let clock = TokioClock::system();
    clock
        .sleep(headroom_core::clock::SignedDuration::from_secs(13))
        .await;
    let mut resume = HIBERNATE.to_vec();
    resume.extend(["--resume", "1"]);
    let (code, stdout, stderr) = headroom(dir.path(), &served.api, &resume).await;
    assert_eq!(code, 0, "a refused token is no failure: {stdout}\n{stderr}");
    let hibernating: Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["event"] == "sync.run_hibernating")
        .unwrap_or_else(|| panic!("no hibernation: {stdout}\n{stderr}"));
    let reason = hibernating["reason"].as_str().expect("a reason");
    assert!(reason.contains("the token was refused (401)"), "{reason}");
    assert!(reason.contains("GITLAB_TOKEN"), "{reason}");
    assert!(reason.contains("--rebind-credential"), "{reason}");
    assert!(!reason.contains("t1"), "no token in a reason: {reason}");

    // A new token of the same owner goes on where the run stopped.
    let mut renewed = command(
        dir.path(),
        &served.api,
        "t2",
        &[
            "sync", "gitlab", "acme", "--json", "--wait", "--resume", "1",
        ],
    );
    renewed.args(["--rebind-credential", "--reset-margin-secs", "1"]);
    let (code, stdout, stderr) = output(renewed).await;
    completed(code, &stdout, &stderr);
    let counts = served
        .sim
        .gitlab_group_counts("acme")
        .expect("the seeded group");
    let rows = tables(dir.path()).await;
    assert_eq!(
        rows["gitlab_merge_request_commits"],
        i64::try_from(counts.merge_request_commits).expect("small")
    );
}

/// Credentials are not capacity on GitLab either: a personal and an OAuth token of two owners
/// (a project or group access token is a bot user of its own, so another owner) refuse the run
/// before it exists; two tokens of one user spend one quota, and the run goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitlab_tokens_of_two_owners_are_refused_and_two_of_one_owner_go() {
    let config = group_config()
        .with_token(TokenSpec::user("t2", "alice"))
        .with_token(TokenSpec::user("bot-t", "project_42_bot"));
    let served = serve(config, "/api/v4").await;
    let dir = tempfile::tempdir().expect("temp dir");
    let args = [
        "sync", "gitlab", "acme", "--json", "--wait", "--stages", "group",
    ];

    let mut two_owners = command(dir.path(), &served.api, "t1", &args);
    two_owners.env("GITLAB_OAUTH_TOKEN", "bot-t");
    let (code, stdout, stderr) = output(two_owners).await;
    assert_eq!(code, 2, "refused: {stdout}\n{stderr}");
    for part in [
        "GITLAB_TOKEN",
        "GITLAB_OAUTH_TOKEN",
        &headroom_http::credential::fingerprint("t1"),
        &headroom_http::credential::fingerprint("bot-t"),
    ] {
        assert!(stderr.contains(part), "{part:?} not in {stderr}");
    }
    assert!(!stderr.contains("bot-t\""), "the token itself never shows");
    assert!(
        !dir.path().join("sync.db").exists() || tables(dir.path()).await["gitlab_groups"] == 0,
        "nothing was collected"
    );

    let mut one_owner = command(dir.path(), &served.api, "t1", &args);
    one_owner.env("GITLAB_OAUTH_TOKEN", "t2");
    let (code, stdout, stderr) = output(one_owner).await;
    completed(code, &stdout, &stderr);
    let fingerprint = headroom_http::credential::fingerprint("t1");
    let bound = format!(
        "SELECT COUNT(*) FROM sync_runs WHERE kind = 'gitlab' AND status = 'done' \
         AND subject = 'user:alice' AND credential_fingerprint = '{fingerprint}'"
    );
    let found = common::sqlite_digest(&dir.path().join("sync.db"), &[bound.as_str()]).await;
    assert_eq!(found, vec![1], "one run, alice's, bound to the token used");
}

/// `quota show --provider gitlab` asks GitLab's API with GitLab's token (GitHub's settings
/// never reach it) and names the owner GitLab counts; against a self-managed instance, which
/// sends no rate-limit headers, it says so rather than showing an unknown limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quota_show_speaks_to_gitlab_with_gitlabs_token() {
    let served = serve(group_config(), "/api/v4").await;
    let dir = tempfile::tempdir().expect("temp dir");
    let show = ["quota", "show", "--provider", "gitlab"];
    let mut cmd = command(dir.path(), &served.api, "t1", &show);
    // A GitHub token in the environment is never sent to GitLab's host.
    cmd.env("GITHUB_TOKEN", "ghp_not_for_gitlab");
    let (code, out, err) = output(cmd).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("user alice on 127.0.0.1 (gitlab)"), "{out}");
    let log = served.sim.request_log();
    assert!(!log.is_empty());
    assert!(
        log.iter().all(|r| r.identity == "alice"),
        "every request spent GitLab's token: {log:?}"
    );
    let json = [&show[..], &["--json"]].concat();
    let (code, out, err) = headroom(dir.path(), &served.api, &json).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let report: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(report["provider"], "gitlab", "{report}");
    assert_eq!(report["identity"], "user alice", "{report}");
    let limit = report["snapshot"]["buckets"][0]["limit"].as_u64();
    assert!(
        limit.is_some_and(|l| l > 0),
        "GitLab.com's headers read: {report}"
    );

    let mut config = group_config();
    config.gitlab_self_managed = true;
    let self_managed = serve(config, "/api/v4").await;
    let other = tempfile::tempdir().expect("temp dir");
    let (code, out, err) = headroom(other.path(), &self_managed.api, &show).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("no rate-limit headers"), "{out}");
}

/// Defect: a GitLab token GitLab refused was answered with GitHub's hint ("no token was given;
/// supply a valid one in GITHUB_TOKEN or GH_TOKEN"). Every GitLab command now names where the
/// refused token came from and GitLab's variables.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_gitlab_token_is_hinted_with_gitlabs_variables() {
    let served = serve(group_config(), "/api/v4").await;
    let dir = tempfile::tempdir().expect("temp dir");
    for args in [
        &["sync", "gitlab", "acme", "--wait"][..],
        &["sync", "plan", "gitlab", "acme"],
        &["quota", "show", "--provider", "gitlab"],
    ] {
        let (code, out, err) = output(command(dir.path(), &served.api, "refused", args)).await;
        assert_eq!(code, 1, "{args:?}: {out}\n{err}");
        assert!(
            err.contains("the token came from environment variable GITLAB_TOKEN")
                && err.contains("supply a valid one in GITLAB_TOKEN"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("GH_TOKEN"), "{args:?}: {err}");
    }
}
