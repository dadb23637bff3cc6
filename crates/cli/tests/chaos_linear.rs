//! The chaos suite's random kills of `sync linear` (the suite itself: `chaos_sync/mod.rs`).
//!
//! One `headroom sim` per backend serves a seeded Linear workspace that never changes: two
//! teams of 120 issues, each with comments, attachments and history. Every document is a POST
//! to one path whose body names the page, so a kill may make a resume ask again as many pages
//! of one root field as were in flight. More moments:
//!
//! ```text
//! HEADROOM_CHAOS_KILLS=10 cargo test -p headroom --all-features --test chaos_linear -- --nocapture
//! ```

#![allow(clippy::expect_used)]

mod chaos_sync;
mod common;

use chaos_sync::{Case, Digest, random_kills};

static LINEAR: Case = Case {
    kind: "linear",
    tables: &[
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
        "linear_watermarks",
    ],
    sim: &[
        "--linear-workspace",
        "acme",
        "--linear-teams",
        "2",
        "--linear-issues",
        "120",
        "--linear-children",
        "3",
        "--token",
        "t1=alice",
        "--seed",
        "7",
    ],
    command: |url| {
        let api = format!("{url}/linear");
        [
            "--api-url",
            &api,
            "sync",
            "linear",
            "--json",
            "--wait",
            "--reset-margin-secs",
            "1",
        ]
        .map(str::to_owned)
        .to_vec()
    },
    env: &[("LINEAR_API_KEY", "t1")],
    not_the_runs: |path| path.ends_with("#root=viewer"),
    expected_status: |status| status == 200,
    redo_per_kill: 10,
    check_reference: |want: &Digest| {
        assert!(
            want.tables["linear_issues"].len() >= 240
                && want.tables["linear_issue_history"].len() >= 240,
            "two teams of 120 issues, each with history: {}",
            want.brief()
        );
    },
};

#[test]
fn random_kills_of_sync_linear_resume_to_an_uninterrupted_run_on_sqlite() {
    random_kills(&LINEAR, None);
}

#[test]
fn random_kills_of_sync_linear_resume_to_an_uninterrupted_run_on_postgres() {
    let Some(admin) = common::postgres_admin(
        "random_kills_of_sync_linear_resume_to_an_uninterrupted_run_on_postgres",
    ) else {
        return;
    };
    random_kills(&LINEAR, Some(admin));
}
