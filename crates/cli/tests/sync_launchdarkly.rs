//! `headroom sync launchdarkly`, black-box: the binary against a simulated LaunchDarkly account
//! served in this process on loopback. Two processes on two tokens of one account, each with
//! its own database (as on two machines), collect it at once: they see each other only through
//! the account's headers, and neither meets a 429. The test reads each logged path into a
//! family by its own reading of LaunchDarkly's routes and holds each run's summary to its own
//! requests; every table holds what the account does; a later run reads only the new audit
//! entries, and re-lists the rest only when they show a change.

#![allow(clippy::expect_used)]

use std::collections::BTreeMap;
use std::process::Command;

use headroom_core::clock::SignedDuration;
use headroom_sim::{LdAccountSpec, LdLimits, SimConfig, Simulator, TokenSpec};

mod common;
use common::BIN;
use common::served::{completed, counts, output, serve, summary_families};

/// `headroom ARGS…` on `sync.db` in `dir` with LaunchDarkly's API at `api` and
/// `LD_ACCESS_TOKEN=token`, and no GitHub setting.
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
        .env_remove("LD_OAUTH_TOKEN")
        .env("LD_ACCESS_TOKEN", token);
    cmd
}

fn sync_command(dir: &std::path::Path, api: &str, token: &str) -> Command {
    command(
        dir,
        api,
        token,
        // The default margin (a minute, for hour-long windows): a learned window waits at
        // most a quarter of a second past its reset whatever it is.
        &["sync", "launchdarkly", "--json", "--wait"],
    )
}

/// The route family of a LaunchDarkly path, by the test's own reading of its routes;
/// `caller-identity` is both who-am-i and the identity stage's question.
fn family(path: &str) -> &'static str {
    let path = path.split('?').next().unwrap_or(path);
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segments.as_slice() {
        ["api", "v2", "caller-identity"] => "identity",
        ["api", "v2", "projects"] => "launchdarkly_projects",
        ["api", "v2", "projects", _, "environments"] => "launchdarkly_environments",
        ["api", "v2", "flags", _] => "launchdarkly_flags",
        ["api", "v2", "segments", _, _] => "launchdarkly_segments",
        ["api", "v2", "members"] => "launchdarkly_members",
        ["api", "v2", "auditlog"] => "launchdarkly_audit_log",
        ["api", "v2", "code-refs", "repositories"] => "launchdarkly_code_refs",
        _ => panic!("a request the test cannot classify: {path}"),
    }
}

/// Requests per family of `login`'s token in the simulator's log from entry `from` on, and
/// how many asked `caller-identity`. No answer may be a limit.
fn logged_families(sim: &Simulator, login: &str, from: usize) -> (BTreeMap<String, u64>, u64) {
    let mut out = BTreeMap::new();
    let mut identity = 0;
    for entry in sim.request_log().iter().skip(from) {
        assert_ne!(entry.status, 429, "a limit answered: {entry:?}");
        if entry.identity != format!("{login}@example.com") {
            continue;
        }
        assert_eq!(entry.status, 200, "not a success: {entry:?}");
        match family(&entry.path) {
            "identity" => identity += 1,
            family => *out.entry(family.to_owned()).or_default() += 1,
        }
    }
    (out, identity)
}

/// The run's summary against the log: every family equal, and the run's own identity stage
/// (`launchdarkly_identity`) one of the `caller-identity` requests, who-am-i at most the other.
fn assert_summary_is_the_log(
    summary: &serde_json::Value,
    logged: &BTreeMap<String, u64>,
    asked: u64,
) {
    let mut counted = summary_families(summary);
    let stage = counted.remove("launchdarkly_identity").unwrap_or(0);
    assert!(
        stage <= asked && asked - stage <= 1,
        "{asked} caller-identity, {stage} the run's: {counted:?} {logged:?}"
    );
    assert_eq!(&counted, logged, "{summary}");
}

const TABLES: [&str; 8] = [
    "ld_projects",
    "ld_environments",
    "ld_flags",
    "ld_flag_environments",
    "ld_segments",
    "ld_members",
    "ld_audit_entries",
    "ld_code_ref_repositories",
];

async fn tables(dir: &std::path::Path) -> BTreeMap<&'static str, i64> {
    counts(&dir.join("sync.db"), TABLES).await
}

fn expected(sim: &Simulator) -> BTreeMap<&'static str, i64> {
    let c = sim.launchdarkly_counts().expect("a seeded account");
    let n = |v: usize| i64::try_from(v).expect("small");
    TABLES
        .into_iter()
        .zip([
            n(c.projects),
            n(c.environments),
            n(c.flags),
            n(c.flag_environments),
            n(c.segments),
            n(c.members),
            n(c.audit_entries),
            n(c.code_ref_repositories),
        ])
        .collect()
}

/// The check at a test's scale: one-second windows (LaunchDarkly's are ten) of 40
/// requests for the account and 4 for each route, fewer than the in-flight ceiling. The flags
/// route alone needs many windows. Alice's and Bob's processes collect the account at once,
/// each on its own database; neither meets a 429.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_machines_collect_one_launchdarkly_account_within_its_windows_without_a_429() {
    let limits = LdLimits::default()
        .with_window(SignedDuration::from_secs(1))
        .with_global(40)
        .with_route_default(4);
    let config = SimConfig::default()
        .with_token(TokenSpec::user("ld-a", "alice"))
        .with_token(TokenSpec::user("ld-b", "bob"))
        .with_launchdarkly_account(
            LdAccountSpec::new("acme")
                .with_projects(3, 2)
                .with_flags(500)
                .with_segments(10)
                .with_members(30)
                .with_audit_entries(90)
                .with_code_ref_repositories(3)
                .with_limits(limits),
        );
    let served = serve(config, "").await;
    let (a, b) = (
        tempfile::tempdir().expect("temp dir"),
        tempfile::tempdir().expect("temp dir"),
    );
    let (first, second) = tokio::join!(
        output(sync_command(a.path(), &served.api, "ld-a")),
        output(sync_command(b.path(), &served.api, "ld-b")),
    );
    let summary_a = completed(first.0, &first.1, &first.2);
    let summary_b = completed(second.0, &second.1, &second.2);
    let (logged_a, asked_a) = logged_families(&served.sim, "alice", 0);
    let (logged_b, asked_b) = logged_families(&served.sim, "bob", 0);
    assert_summary_is_the_log(&summary_a, &logged_a, asked_a);
    assert_summary_is_the_log(&summary_b, &logged_b, asked_b);
    let flags = logged_a.get("launchdarkly_flags").copied().unwrap_or(0);
    assert!(
        flags > 3 * 4,
        "the flags route needs many windows of 4: {logged_a:?}"
    );
    assert_eq!(served.sim.count_status(429), 0);
    assert_eq!(tables(a.path()).await, expected(&served.sim));
    assert_eq!(tables(b.path()).await, expected(&served.sim));

    // Nothing changed: alice's next run asks who she is and one page of the audit log.
    let before = served.sim.request_log().len();
    let (code, out, err) = output(sync_command(a.path(), &served.api, "ld-a")).await;
    completed(code, &out, &err);
    let (quiet, _) = logged_families(&served.sim, "alice", before);
    assert_eq!(
        quiet,
        BTreeMap::from([("launchdarkly_audit_log".to_owned(), 1)]),
        "a run with nothing new reads only the audit log"
    );

    // Three flags change: the audit log's new entries are read (one page), and the lists are
    // read again whole, their new state stored.
    let before = served.sim.request_log().len();
    let touched = served.sim.launchdarkly_touch(3);
    assert_eq!(touched.len(), 3);
    let (code, out, err) = output(sync_command(a.path(), &served.api, "ld-a")).await;
    completed(code, &out, &err);
    let (changed, _) = logged_families(&served.sim, "alice", before);
    assert_eq!(
        changed.get("launchdarkly_audit_log"),
        Some(&1),
        "{changed:?}"
    );
    assert_eq!(
        changed.get("launchdarkly_flags"),
        logged_a.get("launchdarkly_flags"),
        "{changed:?}"
    );
    assert_eq!(tables(a.path()).await, expected(&served.sim));
}

/// `sync plan launchdarkly` on an account never collected: its estimate per family is what the
/// first sync then spends, by the simulator's log (the probe's own requests left out).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_of_a_launchdarkly_account_is_what_its_first_sync_spends() {
    let config = SimConfig::default()
        .with_token(TokenSpec::user("ld-a", "alice"))
        .with_launchdarkly_account(
            LdAccountSpec::new("acme")
                .with_projects(2, 3)
                .with_flags(150)
                .with_segments(30)
                .with_members(45)
                .with_audit_entries(50),
        );
    let served = serve(config, "").await;
    let dir = tempfile::tempdir().expect("temp dir");
    let (code, out, err) = output(command(
        dir.path(),
        &served.api,
        "ld-a",
        &["sync", "plan", "launchdarkly", "--json"],
    ))
    .await;
    assert_eq!(code, 0, "{out}\n{err}");
    let plan: serde_json::Value = serde_json::from_str(&out).expect("plan JSON");
    let mut planned: BTreeMap<String, u64> = BTreeMap::new();
    for row in plan["by_family"].as_array().expect("rows") {
        let family = row["family"].as_str().expect("family").to_owned();
        *planned.entry(family).or_default() += row["requests"].as_u64().expect("requests");
    }
    planned.remove("launchdarkly_identity");
    // A family planned at nothing is one the log never shows.
    planned.retain(|_, requests| *requests > 0);

    let before = served.sim.request_log().len();
    let (code, out, err) = output(sync_command(dir.path(), &served.api, "ld-a")).await;
    completed(code, &out, &err);
    let (spent, _) = logged_families(&served.sim, "alice", before);
    assert_eq!(planned, spent, "{plan}");
}
