//! A Linear sync killed at any request — mid-list, mid-history, across hibernations — and
//! resumed by a new process stores every row exactly once and misses none: each page is
//! committed with the cursor after it, and the history an issue page owes is kept in that
//! cursor until each history page is stored.

#![allow(clippy::expect_used)]

mod support;

use headroom_linear::documents::NESTED_HISTORY;
use headroom_linear::sync::Selection;
use headroom_sim::LinearWorkspaceSpec;
use support::{
    Killable, World, by_root, drive, new_run, refused, runner, sim_runner, spec, stored, world,
};

/// `spec` with histories up to three times what an issues page carries of each.
fn long_histories(mut spec: LinearWorkspaceSpec) -> LinearWorkspaceSpec {
    spec.max_history = 3 * NESTED_HISTORY as usize;
    spec
}

/// Runs `id` until the transport has answered `answers` more requests, then drops the run
/// with the next one in flight, as a kill would. `false` when the run ended first.
async fn kill_after(w: &World, id: i64, answers: i64) -> bool {
    let killer = Killable::new(&w.sim, answers);
    let r = runner(w, killer.clone()).await;
    tokio::select! {
        _ = drive(&r, w.clock, id) => false,
        () = killer.killed.notified() => true,
    }
}

/// A small xorshift, so the kill points are spread but the test is reproducible.
fn kill_points(seed: u64, n: usize, below: u64) -> Vec<i64> {
    let mut x = seed.max(1);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            i64::try_from(1 + x % below.max(1)).expect("small")
        })
        .collect()
}

#[tokio::test]
async fn a_sync_killed_at_random_requests_resumes_with_every_row_once_and_none_missing() {
    // Histories longer than an issues page carries, so that some are read on their own.
    let spec = || long_histories(spec(2, 12, 6_000));
    // What an uninterrupted run asks.
    let whole = world(spec()).await;
    let id = new_run(&whole, &Selection::default()).await;
    drive(&sim_runner(&whole).await, whole.clock, id).await;
    let uninterrupted = whole.sim.request_log().len() as u64;
    let counts = whole.sim.linear_workspace_counts();
    assert_eq!(stored(whole.store.as_ref()).await, counts);

    for seed in [3_u64, 11, 29, 47] {
        let w = world(spec()).await;
        let id = new_run(&w, &Selection::default()).await;
        // Three kills, each some requests into what is left (mid-list, mid-history).
        let points = kill_points(seed, 3, uninterrupted / 2);
        let mut kills = 0;
        for &at in &points {
            kills += usize::from(kill_after(&w, id, at).await);
        }
        assert!(kills >= 2, "killed at {points:?}: the run ended first");
        let (summary, _) = drive(&sim_runner(&w).await, w.clock, id).await;
        assert_eq!(
            stored(w.store.as_ref()).await,
            counts,
            "killed at {points:?}"
        );
        let log = w.sim.request_log();
        // A killed process never hands its last readings over (a run hands them over when it
        // goes quiet), so the next one's first requests, up to its in-flight ceiling, may meet
        // the limit before it knows the bucket again: deferrals, never a lost page.
        let refusals = refused(&w.sim);
        assert!(
            refusals <= 10 * kills,
            "killed at {points:?}: {} refused, {:?}",
            refused(&w.sim),
            by_root(&log)
        );
        // What was redone is at most the answers in flight or not yet stored at each kill
        // (the run's in-flight ceiling, 10).
        let asked = (log.len() - refusals) as u64;
        assert!(
            asked <= uninterrupted + 10 * kills as u64,
            "killed at {points:?}: {asked} requests, {uninterrupted} uninterrupted"
        );
        assert!(
            summary.stages_failed.is_empty(),
            "{:?}",
            summary.stages_failed
        );
    }
}

#[tokio::test]
async fn a_resume_after_a_kill_reads_no_page_of_issues_twice_when_all_was_stored() {
    // Killed after the workspace, the lists and the first page of issues: the history owed
    // by that page comes from the cursor, and the issues page is not asked again.
    let w = world(long_histories(spec(1, 10, 1_000_000))).await;
    let id = new_run(&w, &Selection::default()).await;
    let r = sim_runner(&w).await;
    // Ask until the first history request is sent, then kill.
    let watch = async {
        loop {
            if by_root(&w.sim.request_log()).contains_key("issue") {
                return;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::select! {
        _ = drive(&r, w.clock, id) => panic!("the run ended before its history was asked"),
        () = watch => {}
    }
    drop(r);
    drive(&sim_runner(&w).await, w.clock, id).await;
    let log = w.sim.request_log();
    assert_eq!(by_root(&log).get("issues"), Some(&1), "{:?}", by_root(&log));
    assert_eq!(
        stored(w.store.as_ref()).await,
        w.sim.linear_workspace_counts()
    );
}
