//! The Jira site sync under a low per-endpoint burst limit (5 a second, a buffer of 5): paced
//! at Jira's documented 100 a second, the collection meets 429s and still finishes complete
//! and exact; paced per endpoint at the site's own rate, it meets no 429 at all.

#![allow(clippy::expect_used, clippy::print_stdout)]

mod common;

use common::{Rig, expected};
use headroom_jira::sync::Selection;
use headroom_sim::{JiraLimits, JiraSiteSpec};

fn low_burst_site() -> JiraSiteSpec {
    let mut limits = JiraLimits::default();
    limits.burst_per_sec = 5;
    limits.burst_buffer = 5;
    limits.changelog_burst_per_sec = 5;
    JiraSiteSpec::new("acme")
        .with_size(2, 30)
        .with_children(2, 2, 1)
        .with_boards(2, 3)
        .with_limits(limits)
}

fn everything() -> Selection {
    Selection {
        worklogs: true,
        ..Selection::default()
    }
}

#[tokio::test]
async fn a_collection_under_a_low_burst_limit_finishes_complete_and_exact() {
    let rig = Rig::new(low_burst_site()).await;
    rig.collect(&everything()).await;
    let counts = rig.sim.jira_site_counts().expect("a seeded site");
    let want = expected(&counts, true);
    assert_eq!(rig.counts(&want).await, want);
    println!(
        "low burst: {} requests, {} answered 429",
        rig.log().len(),
        rig.sim.count_status(429)
    );
}

/// Paced at the site's steady rate (5 a second), each endpoint's bucket never runs dry.
#[tokio::test]
async fn jira_sync_meets_no_burst_429() {
    let rig = Rig::paced(low_burst_site(), Some(5)).await;
    rig.collect(&everything()).await;
    let counts = rig.sim.jira_site_counts().expect("a seeded site");
    let want = expected(&counts, true);
    assert_eq!(rig.counts(&want).await, want);
    assert_eq!(
        rig.sim.count_status(429),
        0,
        "the governor paces each endpoint's burst bucket"
    );
}
