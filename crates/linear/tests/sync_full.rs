//! A whole workspace collected against the simulated Linear whose complexity bucket holds a
//! fraction of the work: every table holds what the workspace holds, and not one request was
//! refused as rate limited — the governor held each document's estimated complexity against
//! the bucket and the run hibernated until it refilled.

#![allow(clippy::expect_used)]

mod support;

use headroom_linear::complexity;
use headroom_linear::documents::NESTED_HISTORY;
use headroom_linear::sync::{Selection, declarations};
use support::{by_root, drive, new_run, refused, sim_runner, spec, stored, world};

#[tokio::test]
async fn a_workspace_many_times_the_complexity_bucket_is_collected_with_no_rate_limited_answer() {
    let bucket = 4_000;
    // Enough issues that, with their history nested in their pages, the work is many buckets.
    let w = world(spec(4, 60, bucket)).await;
    let runner = sim_runner(&w).await;
    let id = new_run(&w, &Selection::default()).await;
    let (summary, hibernations) = drive(&runner, w.clock, id).await;

    assert_eq!(
        stored(w.store.as_ref()).await,
        w.sim.linear_workspace_counts()
    );
    let log = w.sim.request_log();
    assert_eq!(refused(&w.sim), 0, "{:?}", by_root(&log));
    let spent: u64 = log.iter().map(|e| e.cost).sum();
    assert!(
        spent >= 5 * bucket,
        "the work ({spent} points) is many times the bucket ({bucket})"
    );
    assert!(hibernations >= 3, "hibernated {hibernations} times");
    // Every issue's history (at most 4 entries here) came nested in its issues page: not one
    // request of its own.
    assert!(
        w.sim
            .linear_history_lengths()
            .iter()
            .all(|&n| n <= NESTED_HISTORY as usize)
    );
    assert_eq!(by_root(&log).get("issue"), None, "{:?}", by_root(&log));
    // What the run tallied is what Linear charged.
    assert_eq!(summary.requests(), log.len() as u64);
    // Every page fits Linear's per-query maximum, and every decl prices a page.
    for d in declarations() {
        assert!(u64::from(d.estimated_cost) <= complexity::MAX_PER_QUERY);
        assert!(
            u64::from(d.estimated_cost) <= bucket,
            "{}: one page fits the bucket",
            d.name
        );
    }
}

#[tokio::test]
async fn a_team_selection_collects_only_the_selected_teams_issues_cycles_and_states() {
    let w = world(spec(3, 10, 1_000_000)).await;
    let runner = sim_runner(&w).await;
    let sel = Selection::parse("ENG").expect("a key");
    let id = new_run(&w, &sel).await;
    drive(&runner, w.clock, id).await;
    let all = w.sim.linear_workspace_counts();
    let got = stored(w.store.as_ref()).await;
    assert_eq!(got.teams, all.teams);
    assert_eq!(got.issues, all.issues / 3, "{got:?} of {all:?}");
    assert_eq!(got.cycles, all.cycles / 3);
    assert_eq!(got.states, all.states / 3);
}

/// Linear allows an API key 2,500 requests an hour: a request per issue for its history would
/// run out long before the complexity points. Each issues page carries its issues' first
/// history entries; only an issue with more is asked for the rest, from where its nested page
/// ended, and every entry is stored exactly once.
#[tokio::test]
async fn only_an_issue_whose_history_overflows_its_issues_page_costs_history_requests() {
    let mut long = spec(2, 20, 1_000_000);
    long.max_history = 3 * NESTED_HISTORY as usize;
    let w = world(long).await;
    let runner = sim_runner(&w).await;
    let id = new_run(&w, &Selection::default()).await;
    drive(&runner, w.clock, id).await;

    assert_eq!(
        stored(w.store.as_ref()).await,
        w.sim.linear_workspace_counts()
    );
    let lengths = w.sim.linear_history_lengths();
    let nested = NESTED_HISTORY as usize;
    let overflowing = lengths.iter().filter(|&&n| n > nested).count();
    assert!(
        overflowing > 0 && overflowing < lengths.len(),
        "the seed has issues on both sides: {lengths:?}"
    );
    // The rest of an overflowing history fits one default page of history (50).
    assert!(lengths.iter().all(|&n| n - nested.min(n) <= 50));
    let log = w.sim.request_log();
    assert_eq!(
        by_root(&log).get("issue"),
        Some(&overflowing),
        "{:?}",
        by_root(&log)
    );
    assert_eq!(refused(&w.sim), 0);
}
