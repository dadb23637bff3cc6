//! `headroom sync gitlab GROUP` pages a project's issues by keyset, black-box: the binary
//! against a simulated GitLab group served in this process on loopback. GitLab refuses
//! offset pages past its maximum offset (405) on lists that also offer keyset, so a project
//! with more issues than that is collected whole only by keyset pages; the simulator's
//! request log shows how each list was asked, and a run resumed mid-issues goes on from the
//! keyset link its checkpoint kept.

#![allow(clippy::expect_used)]

use std::process::Command;

use headroom_sim::{GitlabGroupSpec, SimConfig, Simulator, TokenSpec};
use serde_json::Value;

mod common;
use common::BIN;
use common::served::serve;

/// Issues in the one project: three keyset pages of 100.
const ISSUES: usize = 250;
/// The simulator's maximum offset: offset paging stops at page 2 of 100 (2 × 100 > 150).
const MAX_OFFSET: usize = 150;

/// One group, one project of [`ISSUES`] issues (one note each) and a few of everything else,
/// behind GitLab's maximum offset of [`MAX_OFFSET`].
fn group_config() -> SimConfig {
    let mut spec = GitlabGroupSpec::new("acme")
        .with_subgroups(0, 1)
        .with_projects_per_group(1)
        .with_items(3);
    spec.issues_per_project = ISSUES;
    spec.max_notes = 1;
    spec.max_offset = MAX_OFFSET;
    SimConfig::default()
        .with_token(TokenSpec::user("t1", "alice"))
        .with_gitlab_group(spec)
}

/// `headroom ARGS…` on `sync.db` in `dir` with GitLab's API at `api` and `GITLAB_TOKEN=t1`,
/// and no GitHub setting: its exit code, stdout and stderr.
async fn headroom(dir: &std::path::Path, api: &str, args: &[&str]) -> (i32, String, String) {
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
        .env("GITLAB_TOKEN", "t1");
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("runs"))
        .await
        .expect("joins");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Asserts the run completed, done.
fn completed(code: i32, stdout: &str, stderr: &str) {
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let done = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["event"] == "sync.run_completed")
        .unwrap_or_else(|| panic!("no completion line in {stdout}\n{stderr}"));
    assert_eq!(done["status"], "done", "{done}");
}

/// The requests for a project's list `list` (its path ends `/<list>`), in the log's order.
fn list_requests(sim: &Simulator, list: &str) -> Vec<String> {
    let suffix = format!("/{list}");
    sim.request_log()
        .iter()
        .map(|e| e.path.clone())
        .filter(|p| {
            let path = p.split('?').next().unwrap_or(p);
            path.starts_with("/api/v4/projects/") && path.ends_with(&suffix)
        })
        .collect()
}

/// Rows of the issues and of their notes.
async fn issue_rows(dir: &std::path::Path) -> (i64, i64) {
    let values = common::sqlite_digest(
        &dir.join("sync.db"),
        &[
            "SELECT COUNT(*) FROM gitlab_issues",
            "SELECT COUNT(*) FROM gitlab_notes WHERE noteable_type = 'Issue'",
        ],
    )
    .await;
    (values[0], values[1])
}

/// The value of query parameter `name` in a logged path.
fn param(path: &str, name: &str) -> Option<String> {
    let query = path.split_once('?')?.1;
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

fn small(n: usize) -> i64 {
    i64::try_from(n).expect("small")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issues_past_gitlabs_maximum_offset_are_all_collected_by_keyset_pages() {
    let served = serve(group_config(), "/api/v4").await;
    let dir = tempfile::tempdir().expect("temp dir");
    let counts = served.sim.gitlab_group_counts("acme").expect("seeded");
    assert_eq!(counts.issues, ISSUES);

    let (code, stdout, stderr) = headroom(
        dir.path(),
        &served.api,
        &[
            "sync",
            "gitlab",
            "acme",
            "--json",
            "--wait",
            "--reset-margin-secs",
            "1",
        ],
    )
    .await;
    completed(code, &stdout, &stderr);
    assert_eq!(
        served.sim.count_status(405),
        0,
        "an offset page past the maximum"
    );
    assert_eq!(
        issue_rows(dir.path()).await,
        (small(counts.issues), small(counts.issue_notes))
    );
    // Every issues page was a keyset page: the first asked it, the others are GitLab's links.
    let issues = list_requests(&served.sim, "issues");
    assert_eq!(issues.len(), ISSUES.div_ceil(100), "{issues:#?}");
    assert!(
        issues.iter().all(|p| p.contains("pagination=keyset")),
        "{issues:#?}"
    );
    assert!(issues[1..].iter().all(|p| p.contains("cursor=")));
    assert!(
        issues.iter().all(|p| param(p, "page").is_none()),
        "{issues:#?}"
    );
    // The lists that offer no keyset are still paged by offset.
    let mrs = list_requests(&served.sim, "merge_requests");
    assert!(!mrs.is_empty());
    assert!(
        mrs.iter()
            .all(|p| param(p, "page").is_some() && param(p, "pagination").is_none()),
        "{mrs:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_resumed_mid_issues_follows_its_stored_keyset_link_to_the_same_rows() {
    // A throttle small enough that the issues' notes outlast the first window.
    let mut config = group_config();
    config.gitlab_requests_per_minute = 40;
    config.gitlab_window_secs = 2;
    let served = serve(config, "/api/v4").await;
    let dir = tempfile::tempdir().expect("temp dir");
    let counts = served.sim.gitlab_group_counts("acme").expect("seeded");
    let run = ["sync", "gitlab", "acme", "--stages", "issues", "--json"];

    // A margin past the runner's 5-second in-process pacing: on a loaded machine the 2-second
    // window may reset before the runner looks at the buckets again, and a shorter margin then
    // left a wait short enough to pace in process rather than hibernate.
    let mut hibernate = run.to_vec();
    hibernate.extend(["--hold-secs", "0", "--reset-margin-secs", "10"]);
    let (code, stdout, stderr) = headroom(dir.path(), &served.api, &hibernate).await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("sync.run_hibernating"),
        "{stdout}\n{stderr}"
    );
    // The issues' checkpoint keeps GitLab's link to the next keyset page.
    let kept = common::sqlite_digest(
        &dir.path().join("sync.db"),
        &[
            "SELECT COUNT(*) FROM sync_checkpoints WHERE stage = 'issues' \
           AND status <> 'done' AND page_cursor LIKE '%\"keyset\":true%' \
           AND page_cursor LIKE '%cursor=%'",
        ],
    )
    .await;
    assert_eq!(kept, vec![1], "no keyset link kept mid-issues");

    let mut resume = run.to_vec();
    resume.extend(["--wait", "--resume", "1", "--reset-margin-secs", "1"]);
    let (code, stdout, stderr) = headroom(dir.path(), &served.api, &resume).await;
    completed(code, &stdout, &stderr);
    assert_eq!(
        issue_rows(dir.path()).await,
        (small(counts.issues), small(counts.issue_notes))
    );
    // The resume went on from the kept link: each keyset page was asked once, none by offset.
    let issues = list_requests(&served.sim, "issues");
    assert_eq!(issues.len(), ISSUES.div_ceil(100), "{issues:#?}");
    let distinct: std::collections::BTreeSet<&String> = issues.iter().collect();
    assert_eq!(distinct.len(), issues.len(), "{issues:#?}");
    assert_eq!(served.sim.count_status(405), 0);
    assert_eq!(served.sim.count_status(429), 0);
}
