//! The Jira site sync as an OAuth app runs it: Bearer through Atlassian's gateway (the site's
//! cloudId found by `accessible-resources`), every request also spending the app's hourly
//! points. With points for a fraction of the work each hour, the collection waits for the
//! hour's reset instead of meeting Jira's `jira-quota-global-based` 429, and finishes exact.

#![allow(clippy::expect_used, clippy::print_stdout)]

mod common;

use common::{Rig, expected};
use headroom_core::clock::Clock as _;
use headroom_jira::sync::Selection;
use headroom_sim::{JiraLimits, JiraSiteSpec};

/// A site whose collection needs several hours of a small app's points: 3 projects of 400
/// issues (12 search pages of 101 points, plus a point for every other request) against
/// 1,200 points an hour.
fn small_app_site() -> JiraSiteSpec {
    let mut limits = JiraLimits::default();
    limits.app_points_per_hour = 1_200;
    JiraSiteSpec::new("acme")
        .with_size(3, 400)
        .with_children(2, 2, 1)
        .with_boards(1, 2)
        .with_limits(limits)
}

#[tokio::test]
async fn an_oauth_app_collects_through_the_gateway_within_its_hourly_points() {
    let rig = Rig::oauth(small_app_site()).await;
    let start = rig.clock.now();
    rig.collect(&Selection::default()).await;
    let counts = rig.sim.jira_site_counts().expect("a seeded site");
    let want = expected(&counts, false);
    assert_eq!(rig.counts(&want).await, want);
    let log = rig.log();
    let points: u64 = log.iter().map(|e| e.cost).sum();
    let hours = (rig.clock.now().as_second() - start.as_second()) / 3_600;
    println!("{} requests, {points} points over {hours} hours", log.len());
    assert!(
        points > 2 * 1_200,
        "the work must take several hours of the app's points, took {points}"
    );
    assert_eq!(
        rig.sim.count_status(429),
        0,
        "no request met the app's quota"
    );
    assert!(
        log.iter().all(|e| e.path.starts_with("/ex/jira/")
            || e.path == headroom_jira::gateway::ACCESSIBLE_RESOURCES),
        "every request went through the gateway"
    );
}
