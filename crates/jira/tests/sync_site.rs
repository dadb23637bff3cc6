//! The Jira site sync on the shared runner against the simulated site: a full collection
//! stores exactly what the site holds; a second run asks only for what changed (in the
//! caller's own zone) and lists boards and sprints again; a run killed mid-way and resumed
//! stores every row once, redoing little; refusals (a restricted project, a user without
//! Jira Software) are recorded while the rest is collected.

#![allow(clippy::expect_used, clippy::print_stdout)]

mod common;

use std::collections::BTreeSet;

use common::{Rig, expected, requests};
use headroom_core::clock::{Clock as _, SignedDuration, Timestamp};
use headroom_jira::sync::Selection;
use headroom_sim::JiraSiteSpec;

/// Every project, with worklogs.
fn everything() -> Selection {
    Selection {
        worklogs: true,
        ..Selection::default()
    }
}

/// Moves the clock on by `minutes`.
async fn later(rig: &Rig, minutes: i64) {
    rig.sleep_until(rig.clock.now() + SignedDuration::from_mins(minutes))
        .await;
}

/// The issue keys of the comment lists asked in `log`.
fn comment_keys(log: &[headroom_sim::LogEntry]) -> BTreeSet<String> {
    requests(log, "GET", "/rest/api/3/issue/")
        .iter()
        .filter_map(|e| {
            let rest = e.path.strip_prefix("/rest/api/3/issue/")?;
            let (key, tail) = rest.split_once('/')?;
            tail.starts_with("comment").then(|| key.to_owned())
        })
        .collect()
}

#[tokio::test]
async fn a_full_collection_stores_exactly_what_the_site_holds() {
    // More issues than a search page, more boards than an agile page (50), and more sprints
    // on a board than an agile page.
    let rig = Rig::new(
        JiraSiteSpec::new("acme")
            .with_size(3, 110)
            .with_children(2, 3, 2)
            .with_boards(18, 52)
            .with_time_zone("America/Sao_Paulo"),
    )
    .await;
    let summary = rig.collect(&everything()).await;
    let counts = rig.sim.jira_site_counts().expect("a seeded site");
    assert!(counts.boards > 50, "{counts:?}");
    let want = expected(&counts, true);
    assert_eq!(rig.counts(&want).await, want);
    assert!(
        rig.count("jira_issue_sprints").await > 0,
        "sprint memberships"
    );
    assert_eq!(rig.count("jira_watermarks").await, counts.projects as u64);
    assert!(summary.refused.is_empty(), "{:?}", summary.refused);
    let log = rig.log();
    assert_eq!(
        rig.sim.count_status(410),
        0,
        "the removed /search is never asked"
    );
    // The changelogs came in bulk, one request per page of issues.
    assert!(
        requests(&log, "GET", "/rest/api/3/issue/")
            .iter()
            .all(|e| !e.path.contains("/changelog"))
    );
    assert!(!requests(&log, "POST", "/rest/api/3/changelog/bulkfetch").is_empty());
    // Each board page was followed from what was served (50), whatever was asked.
    let board_pages = requests(&log, "GET", "/rest/agile/1.0/board?").len();
    assert_eq!(board_pages, counts.boards.div_ceil(50));
    println!(
        "full collection: {} requests, {} answered 429",
        log.len(),
        rig.sim.count_status(429)
    );
}

/// The site of the incremental tests, its users in `zone`.
fn zoned_site(zone: &str) -> JiraSiteSpec {
    JiraSiteSpec::new("acme")
        .with_size(2, 15)
        .with_children(2, 2, 1)
        .with_boards(2, 3)
        .with_time_zone(zone)
}

/// A second run on `rig`, `gap` minutes after the first, asks only for the issues touched in
/// between, whose watermark Jira reads in the caller's `zone`; boards and sprints are listed
/// again.
async fn only_what_changed(rig: &Rig, zone: &str, gap: i64) {
    // The seeded changes are all well before the first run.
    later(rig, 30).await;
    rig.collect(&everything()).await;
    let first = rig.log();
    let counts = rig.sim.jira_site_counts().expect("a seeded site");
    let changelog = rig.count("jira_changelog").await;
    later(rig, gap).await;
    let touched: BTreeSet<String> = rig.sim.jira_touch(4).into_iter().collect();
    later(rig, 1).await;
    rig.collect(&everything()).await;
    let log = rig.log();
    let second = &log[first.len()..];
    assert_eq!(
        comment_keys(second),
        touched,
        "{zone}: asked the touched issues only"
    );
    assert_eq!(rig.count("jira_issues").await, counts.issues as u64);
    assert_eq!(rig.count("jira_changelog").await, changelog + 4, "{zone}");
    let relisted = |prefix: &str| {
        (
            requests(&first, "GET", prefix).len(),
            requests(second, "GET", prefix).len(),
        )
    };
    let (boards_then, boards_now) = relisted("/rest/agile/1.0/board");
    assert!(boards_now > 0, "boards and sprints are listed again");
    assert_eq!(boards_then, boards_now, "all of them");
}

#[tokio::test]
async fn a_second_run_in_new_york_asks_only_for_what_changed_and_misses_nothing() {
    let zone = "America/New_York";
    only_what_changed(&Rig::new(zoned_site(zone)).await, zone, 60).await;
}

#[tokio::test]
async fn a_second_run_in_sao_paulo_asks_only_for_what_changed_and_misses_nothing() {
    let zone = "America/Sao_Paulo";
    only_what_changed(&Rig::new(zoned_site(zone)).await, zone, 60).await;
}

/// New York's clocks went forward at 2027-03-14 02:00 EST (07:00Z): the first run at 01:30
/// EST, the changes and the second run at 03:20 EDT. The watermark is written with the
/// offset in force at it (EST), not the caller's offset now (EDT), which would name a time an
/// hour later and miss the changes in between.
#[tokio::test]
async fn a_second_run_across_new_yorks_spring_forward_misses_nothing() {
    let zone = "America/New_York";
    let start: Timestamp = "2027-03-14T06:00:00Z".parse().expect("an instant");
    only_what_changed(&Rig::at(zoned_site(zone), start).await, zone, 50).await;
}

/// The site of the kill test.
fn kill_site() -> JiraSiteSpec {
    JiraSiteSpec::new("acme")
        .with_size(3, 40)
        .with_children(2, 3, 1)
        .with_boards(3, 4)
}

#[tokio::test]
async fn a_run_killed_mid_collection_and_resumed_stores_every_row_exactly_once() {
    let whole = Rig::new(kill_site()).await;
    whole.collect(&everything()).await;
    let uninterrupted = whole.log().len();

    let rig = Rig::new(kill_site()).await;
    let id = rig.start(&everything()).await;
    let kills = [3usize, 20, 75, 160, 230];
    for at in kills {
        let run = rig.runner.run(id);
        tokio::pin!(run);
        let reached = async {
            while rig.sim.request_log().len() < at {
                tokio::task::yield_now().await;
            }
        };
        let ended = tokio::select! {
            biased;
            outcome = &mut run => {
                outcome.expect("the run");
                true
            }
            () = reached => false,
        };
        if ended {
            break;
        }
        // Dropped here, mid-flight: what was not committed is lost, as in a kill.
    }
    rig.finish(id).await;
    let counts = rig.sim.jira_site_counts().expect("a seeded site");
    let want = expected(&counts, true);
    assert_eq!(rig.counts(&want).await, want);
    assert_eq!(
        rig.count("jira_issue_sprints").await,
        whole.count("jira_issue_sprints").await
    );
    // Each kill redoes at most one page per request in flight (the in-flight ceiling, 10).
    let resumed = rig.log().len();
    assert!(
        resumed <= uninterrupted + kills.len() * 10,
        "{resumed} requests against {uninterrupted} uninterrupted"
    );
    println!(
        "killed {} times: {resumed} requests against {uninterrupted}",
        kills.len()
    );
}

#[tokio::test]
async fn a_restricted_project_and_an_unlicensed_user_are_recorded_refusals_and_the_rest_is_collected()
 {
    let mut spec = JiraSiteSpec::new("acme")
        .with_size(3, 12)
        .with_children(1, 1, 1)
        .with_boards(2, 2);
    spec.restricted_projects = 1;
    spec.agile_unlicensed = vec!["alice".into()];
    let rig = Rig::new(spec).await;
    let selection = Selection {
        projects: vec!["PA".into(), "PB".into(), "PC".into()],
        jql: None,
        worklogs: false,
    };
    let summary = rig.collect(&selection).await;
    let counts = rig.sim.jira_site_counts().expect("a seeded site");
    assert_eq!(counts.restricted_projects, 1);
    assert_eq!(rig.count("jira_projects").await, 2);
    assert_eq!(rig.count("jira_issues").await, counts.issues as u64);
    assert_eq!(rig.count("jira_comments").await, counts.comments as u64);
    assert_eq!(rig.count("jira_worklogs").await, 0, "not asked for");
    assert_eq!(rig.count("jira_boards").await, 0);
    let refused: Vec<(String, String, String)> = summary
        .refused
        .iter()
        .map(|r| (r.stage.clone(), r.path.clone(), r.kind.clone()))
        .collect();
    assert!(
        refused.contains(&("projects".into(), "PC".into(), "not_visible".into())),
        "{refused:?}"
    );
    assert!(
        refused.contains(&(
            "boards".into(),
            "/rest/agile/1.0/board".into(),
            "forbidden".into()
        )),
        "{refused:?}"
    );
    // The agile 403 is a refusal, never retried.
    assert_eq!(rig.sim.count_status(403), 1);
    assert_eq!(requests(&rig.log(), "GET", "/rest/agile/1.0/").len(), 1);
}

#[tokio::test]
async fn a_site_without_the_bulk_changelog_is_read_one_issue_at_a_time() {
    let rig = Rig::without_post(
        JiraSiteSpec::new("acme")
            .with_size(2, 12)
            .with_children(1, 3, 1)
            .with_boards(1, 1),
        "/changelog/bulkfetch",
    )
    .await;
    rig.collect(&everything()).await;
    let counts = rig.sim.jira_site_counts().expect("a seeded site");
    let want = expected(&counts, true);
    assert_eq!(rig.counts(&want).await, want);
    let one_by_one = requests(&rig.log(), "GET", "/rest/api/3/issue/")
        .iter()
        .filter(|e| e.path.contains("/changelog"))
        .count();
    assert_eq!(
        one_by_one, counts.issues,
        "each issue's own changelog, once"
    );
}
