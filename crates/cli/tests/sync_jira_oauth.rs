//! `headroom sync jira` with an OAuth app's token, black-box: the binary finds the site's
//! cloudId with `accessible-resources` and sends everything else through Atlassian's gateway
//! path (`/ex/jira/{cloudId}`), which the simulator serves on its own loopback host. Each
//! request also spends the app's hourly points, which the run's summary tallies.

#![allow(clippy::expect_used)]

use std::process::Command;

use headroom_sim::{JiraLimits, JiraSiteSpec, SimConfig, TokenSpec};

mod common;
use common::BIN;
use common::served::{completed, counts, output, serve};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oauth_apps_sync_goes_through_the_gateway_and_spends_the_apps_points() {
    // Jira's global pool (65,000 points an hour): the collection spends a few percent of it.
    // A test-sized pool would hold a search page (101 points, kept 10 times over in reserve)
    // until the next UTC hour on the real clock (crates/jira/tests/sync_app_points.rs covers
    // an hour's end on a paused clock).
    let limits = JiraLimits::default();
    let config = SimConfig::default()
        .with_token(TokenSpec::user("oauth-1", "alice"))
        .with_jira_site(
            JiraSiteSpec::new("acme")
                .with_size(2, 150)
                .with_limits(limits),
        );
    let served = serve(config, "").await;
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("headroom.toml"), "").expect("config");
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir.path())
        .args(["--db", "sync.db", "--config", "headroom.toml"])
        .args(["sync", "jira", "--site", &served.api, "--json", "--wait"])
        .args(["--reset-margin-secs", "1"])
        .env_remove("GH_TOKEN")
        .env_remove("GITHUB_TOKEN")
        .env_remove("GITHUB_API_URL")
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_CONFIG")
        .env_remove("JIRA_EMAIL")
        .env_remove("JIRA_API_TOKEN")
        .env("JIRA_OAUTH_TOKEN", "oauth-1")
        .env("JIRA_OAUTH_CLIENT_ID", "client-9");
    let (code, stdout, stderr) = output(cmd).await;
    let summary = completed(code, &stdout, &stderr);

    let log = served.sim.request_log();
    let discovery: Vec<_> = log
        .iter()
        .filter(|e| e.path == "/oauth/token/accessible-resources")
        .collect();
    assert_eq!(discovery.len(), 1, "the cloudId is asked once");
    assert!(
        log.iter()
            .filter(|e| e.path != "/oauth/token/accessible-resources")
            .all(|e| e.path.starts_with("/ex/jira/")),
        "every other request goes through the gateway: {:?}",
        log.iter().map(|e| &e.path).collect::<Vec<_>>()
    );
    assert!(log.iter().all(|e| e.status != 429), "no limit answered");
    let points: u64 = log.iter().map(|e| e.cost).sum();
    assert!(points > 300, "the run spent the app's points: {points}");
    let text = summary.to_string();
    assert!(
        text.contains("app_points"),
        "the summary tallies the app's points bucket: {summary}"
    );

    let c = served.sim.jira_site_counts().expect("a seeded site");
    let held = counts(
        &dir.path().join("sync.db"),
        ["jira_projects", "jira_issues"],
    )
    .await;
    let n = |v: usize| i64::try_from(v).expect("small");
    assert_eq!(held["jira_projects"], n(c.projects));
    assert_eq!(held["jira_issues"], n(c.issues));
}
