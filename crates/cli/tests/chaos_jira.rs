//! The chaos suite's random kills of `sync jira` (the suite itself: `chaos_sync/mod.rs`).
//!
//! One `headroom sim` per backend serves a seeded Jira site that never changes: two projects
//! of 120 issues with their comments, changelogs and worklogs, boards and sprints, bursts off.
//! Searches and bulk changelogs are POSTs whose body names the page, so pages of one endpoint
//! share a path: a kill may make a resume ask again as many of them as were in flight. More
//! moments:
//!
//! ```text
//! HEADROOM_CHAOS_KILLS=10 cargo test -p headroom --all-features --test chaos_jira -- --nocapture
//! ```

#![allow(clippy::expect_used)]

mod chaos_sync;
mod common;

use chaos_sync::{Case, Digest, random_kills};

static JIRA: Case = Case {
    kind: "jira",
    tables: &[
        "jira_projects",
        "jira_issues",
        "jira_issue_sprints",
        "jira_changelog",
        "jira_comments",
        "jira_worklogs",
        "jira_boards",
        "jira_sprints",
        "jira_watermarks",
    ],
    sim: &[
        "--jira-site",
        "acme",
        "--jira-projects",
        "2",
        "--jira-issues",
        "120",
        "--jira-children",
        "2",
        "--token",
        "t1=alice",
        "--seed",
        "7",
        // Bursts never bind: every moment shares this simulator's buckets.
        "--jira-burst-per-sec",
        "0",
    ],
    command: |url| {
        [
            "sync",
            "jira",
            "--site",
            url,
            "--worklogs",
            "--json",
            "--wait",
            "--reset-margin-secs",
            "1",
        ]
        .map(str::to_owned)
        .to_vec()
    },
    env: &[
        ("JIRA_EMAIL", "alice@example.com"),
        ("JIRA_API_TOKEN", "t1"),
    ],
    not_the_runs: |path| path == "/rest/api/3/myself",
    // A kanban board's sprints answer 400, as Jira's do.
    expected_status: |status| status == 200 || status == 400,
    redo_per_kill: 10,
    check_reference: |want: &Digest| {
        assert!(
            want.tables["jira_issues"].len() >= 240 && !want.tables["jira_sprints"].is_empty(),
            "two projects of 120 issues, with sprints: {}",
            want.brief()
        );
    },
};

#[test]
fn random_kills_of_sync_jira_resume_to_an_uninterrupted_run_on_sqlite() {
    random_kills(&JIRA, None);
}

#[test]
fn random_kills_of_sync_jira_resume_to_an_uninterrupted_run_on_postgres() {
    let Some(admin) = common::postgres_admin(
        "random_kills_of_sync_jira_resume_to_an_uninterrupted_run_on_postgres",
    ) else {
        return;
    };
    random_kills(&JIRA, Some(admin));
}
