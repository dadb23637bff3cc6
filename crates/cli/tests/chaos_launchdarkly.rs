//! The chaos suite's random kills of `sync launchdarkly` (the suite itself: `chaos_sync/mod.rs`).
//!
//! One `headroom sim` per backend serves a seeded LaunchDarkly account that never changes: two
//! projects of two environments, 300 flags each, their segments, members, code references and
//! 200 audit entries, under one-second windows (LaunchDarkly's are ten). Every page has a path
//! of its own (`limit`/`offset`, or the audit log's `before`), so a kill may make a resume ask
//! again at most the page each scope had in flight. More moments:
//!
//! ```text
//! HEADROOM_CHAOS_KILLS=10 cargo test -p headroom --all-features --test chaos_launchdarkly -- --nocapture
//! ```

#![allow(clippy::expect_used)]

mod chaos_sync;
mod common;

use chaos_sync::{Case, Digest, random_kills};

static LAUNCHDARKLY: Case = Case {
    kind: "launchdarkly",
    tables: &[
        "ld_projects",
        "ld_environments",
        "ld_flags",
        "ld_flag_environments",
        "ld_segments",
        "ld_members",
        "ld_audit_entries",
        "ld_code_ref_repositories",
    ],
    sim: &[
        "--launchdarkly-account",
        "acme",
        "--launchdarkly-projects",
        "2",
        "--launchdarkly-environments",
        "2",
        "--launchdarkly-flags",
        "300",
        "--launchdarkly-segments",
        "20",
        "--launchdarkly-members",
        "40",
        "--launchdarkly-audit-entries",
        "200",
        "--launchdarkly-window-ms",
        "1000",
        "--launchdarkly-route-per-window",
        "8",
        "--token",
        "ld1=alice",
        "--seed",
        "7",
    ],
    command: |url| {
        [
            "--api-url",
            url,
            "sync",
            "launchdarkly",
            "--json",
            "--wait",
            "--reset-margin-secs",
            "0",
        ]
        .map(str::to_owned)
        .to_vec()
    },
    env: &[("LD_ACCESS_TOKEN", "ld1")],
    not_the_runs: |path| path == "/api/v2/caller-identity",
    expected_status: |status| status == 200,
    redo_per_kill: 1,
    check_reference: |want: &Digest| {
        assert!(
            want.tables["ld_flags"].len() >= 600 && want.tables["ld_audit_entries"].len() >= 200,
            "two projects of 300 flags, 200 audit entries: {}",
            want.brief()
        );
    },
};

#[test]
fn random_kills_of_sync_launchdarkly_resume_to_an_uninterrupted_run_on_sqlite() {
    random_kills(&LAUNCHDARKLY, None);
}

#[test]
fn random_kills_of_sync_launchdarkly_resume_to_an_uninterrupted_run_on_postgres() {
    let Some(admin) = common::postgres_admin(
        "random_kills_of_sync_launchdarkly_resume_to_an_uninterrupted_run_on_postgres",
    ) else {
        return;
    };
    random_kills(&LAUNCHDARKLY, Some(admin));
}
