//! The chaos suite's random kills of `sync gitlab` (the suite itself: `chaos_sync/mod.rs`).
//!
//! One `headroom sim` per backend serves a seeded group that never changes: one project of
//! 101 merge requests, issues and pipelines, so their lists take two pages and a kill can land
//! between a list's pages as well as among the many child scopes in flight. Every page has a
//! path of its own, so a resume redoes at most one page per scope per kill. More moments:
//!
//! ```text
//! HEADROOM_CHAOS_KILLS=10 cargo test -p headroom --all-features --test chaos_gitlab -- --nocapture
//! ```

#![allow(clippy::expect_used)]

mod chaos_sync;
mod common;

use chaos_sync::{Case, Digest, random_kills};

static GITLAB: Case = Case {
    kind: "gitlab",
    tables: &[
        "gitlab_groups",
        "gitlab_projects",
        "gitlab_merge_requests",
        "gitlab_merge_request_commits",
        "gitlab_merge_request_approvals",
        "gitlab_notes",
        "gitlab_pipelines",
        "gitlab_jobs",
        "gitlab_issues",
        "gitlab_milestones",
        "gitlab_deployments",
        "gitlab_releases",
        "gitlab_feature_flags",
        "gitlab_watermarks",
    ],
    sim: &[
        "--gitlab-group",
        "acme",
        "--gitlab-subgroups",
        "0",
        "--gitlab-projects",
        "1",
        "--gitlab-items",
        "101",
        "--token",
        "t1=alice",
        "--seed",
        "7",
        // Limits never bind: every moment shares this simulator's minute.
        "--gitlab-requests-per-minute",
        "1000000",
        "--gitlab-endpoint-limits",
        "0,0,0",
    ],
    command: |url| {
        let api = format!("{url}/api/v4");
        [
            "--api-url",
            &api,
            "sync",
            "gitlab",
            "acme",
            "--json",
            "--wait",
            "--reset-margin-secs",
            "1",
        ]
        .map(str::to_owned)
        .to_vec()
    },
    env: &[("GITLAB_TOKEN", "t1")],
    not_the_runs: |path| path == "/api/v4/user",
    expected_status: |status| status == 200,
    redo_per_kill: 1,
    check_reference: |want: &Digest| {
        assert!(
            want.tables["gitlab_merge_requests"].len() > 100,
            "the group's merge requests take two pages: {}",
            want.brief()
        );
    },
};

#[test]
fn random_kills_of_sync_gitlab_resume_to_an_uninterrupted_run_on_sqlite() {
    random_kills(&GITLAB, None);
}

#[test]
fn random_kills_of_sync_gitlab_resume_to_an_uninterrupted_run_on_postgres() {
    let Some(admin) = common::postgres_admin(
        "random_kills_of_sync_gitlab_resume_to_an_uninterrupted_run_on_postgres",
    ) else {
        return;
    };
    random_kills(&GITLAB, Some(admin));
}
