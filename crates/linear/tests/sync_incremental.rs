//! Between runs, a Linear sync asks only for what changed: every filtered connection is asked
//! `updatedAt > watermark` (the last finished collection's start, less an allowance), so a
//! second run after a few issues changed reads one page of issues, which carries those issues'
//! history, while team memberships, which Linear cannot filter, are listed whole again.

#![allow(clippy::expect_used)]

mod support;

use headroom_core::clock::SignedDuration;
use headroom_linear::sync::Selection;
use support::{by_root, drive, new_run, refused, sim_runner, sleep, spec, stored, world};

#[tokio::test]
async fn a_second_run_asks_only_for_the_issues_that_changed_and_relists_team_memberships() {
    let w = world(spec(2, 20, 1_000_000)).await;
    let runner = sim_runner(&w).await;
    let first = new_run(&w, &Selection::default()).await;
    drive(&runner, w.clock, first).await;
    let counts = w.sim.linear_workspace_counts();
    assert_eq!(stored(w.store.as_ref()).await, counts);
    let first_log = w.sim.request_log().len();
    // Every history (at most 4 entries) came nested in its issues page.
    assert_eq!(by_root(&w.sim.request_log()).get("issue"), None);

    sleep(w.clock, SignedDuration::from_secs(600)).await;
    let touched = w.sim.linear_touch(5);
    assert_eq!(touched.len(), 5);
    // Changes within the watermark's allowance of a run's start are read again by the next
    // run: these are well before the second run.
    sleep(w.clock, SignedDuration::from_secs(600)).await;
    let second = new_run(&w, &Selection::default()).await;
    let (summary, _) = drive(&runner, w.clock, second).await;

    let log = w.sim.request_log();
    let asked = by_root(&log[first_log..]);
    // One page of issues, carrying the history of the five that changed (at most 5 entries
    // each, under the nested page's size), and nothing else.
    assert_eq!(asked.get("issues"), Some(&1), "{asked:?}");
    assert_eq!(asked.get("issue"), None, "{asked:?}");
    assert_eq!(refused(&w.sim), 0);
    // The touched issues and their new history entries are stored; nothing else changed.
    let after = w.sim.linear_workspace_counts();
    assert_eq!(after.history, counts.history + 5);
    assert_eq!(stored(w.store.as_ref()).await, after);
    let rows = |stage: &str| summary.stages.get(stage).map_or(0, |t| t.rows);
    // Five issues, at least their five new history entries, and the watermark.
    assert!(
        (5 + 5 + 1..=5 + 5 * 5 + 1).contains(&rows("issues")),
        "{}",
        rows("issues")
    );
    // Unchanged families store only their watermark.
    for stage in [
        "teams",
        "users",
        "cycles",
        "projects",
        "comments",
        "attachments",
    ] {
        assert_eq!(rows(stage), 1, "{stage}");
    }
    // Team memberships have no filter: all of them again.
    assert!(asked.get("teamMemberships").is_some_and(|n| *n >= 1));
    assert_eq!(rows("team_memberships"), counts.memberships as u64);

    // A run narrowed to one team starts from the whole workspace's watermark.
    let before = log.len();
    let narrowed = new_run(&w, &Selection::parse("ENG").expect("a key")).await;
    drive(&runner, w.clock, narrowed).await;
    let asked = by_root(&w.sim.request_log()[before..]);
    assert_eq!(asked.get("issues"), Some(&1), "{asked:?}");
    assert_eq!(asked.get("issue"), None, "{asked:?}");
}
