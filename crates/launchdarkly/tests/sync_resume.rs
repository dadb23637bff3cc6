//! A LaunchDarkly sync killed at any request — mid-log, mid-projects, mid-flags — and resumed
//! by a new process stores every row exactly once and misses none: each page is committed with
//! the path of the next one in its scope's checkpoint, so a resume asks again at most the page
//! each scope had in flight.

#![allow(clippy::expect_used)]

mod sync_support;

use headroom_launchdarkly::sync::Selection;
use headroom_sim::LdAccountSpec;
use sync_support::{Wire, World, by_family, drive, new_run, refused, runner, stored, world};

/// The run's in-flight ceiling: at most this many answers are lost to a kill.
const IN_FLIGHT: u64 = 10;

fn spec() -> LdAccountSpec {
    LdAccountSpec::new("acme")
        .with_projects(3, 4)
        .with_flags(230)
        .with_segments(55)
        .with_members(120)
        .with_audit_entries(90)
}

/// Runs `id` until the transport has answered `answers` more requests, then drops the run
/// with the next one in flight, as a kill would. `false` when the run ended first.
async fn kill_after(w: &World, id: i64, answers: i64) -> bool {
    let wire = Wire::killed_after(&w.sim, answers);
    let r = runner(w, wire.clone()).await;
    tokio::select! {
        _ = drive(&r, w.clock, id) => false,
        () = wire.killed.notified() => true,
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
    killed_and_resumed(|| async { Some(world(spec()).await) }).await;
}

#[tokio::test]
async fn a_sync_killed_at_random_requests_resumes_exactly_on_postgres_too() {
    let test = "a_sync_killed_at_random_requests_resumes_exactly_on_postgres_too";
    killed_and_resumed(|| sync_support::world_on_postgres(test, spec())).await;
}

/// Kills a sync of worlds made by `make` at random requests and resumes it to the end.
async fn killed_and_resumed<F, Fut>(make: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<World>>,
{
    let Some(whole) = make().await else {
        return;
    };
    let r = runner(&whole, Wire::new(&whole.sim)).await;
    let id = new_run(&whole, &r, &Selection::default()).await;
    drive(&r, whole.clock, id).await;
    let uninterrupted = whole.sim.request_log().len() as u64;
    let counts = whole.sim.launchdarkly_counts().expect("seeded");
    assert_eq!(stored(whole.store.as_ref()).await, counts);

    for seed in [3_u64, 11, 29, 47] {
        let Some(w) = make().await else {
            return;
        };
        let first = runner(&w, Wire::new(&w.sim)).await;
        let id = new_run(&w, &first, &Selection::default()).await;
        let points = kill_points(seed, 3, uninterrupted / 2);
        let mut kills = 0;
        for &at in &points {
            kills += u64::from(kill_after(&w, id, at).await);
        }
        assert!(kills >= 2, "killed at {points:?}: the run ended first");
        let (summary, _) = drive(&runner(&w, Wire::new(&w.sim)).await, w.clock, id).await;
        assert_eq!(
            stored(w.store.as_ref()).await,
            counts,
            "killed at {points:?}"
        );
        let log = w.sim.request_log();
        assert_eq!(
            refused(&log),
            0,
            "killed at {points:?}: {:?}",
            by_family(&log)
        );
        // What was asked again is at most the answers in flight at each kill, and each new
        // process asks who the token is once.
        let asked = log.len() as u64;
        assert!(
            asked <= uninterrupted + (IN_FLIGHT + 1) * (kills + 1),
            "killed at {points:?}: {asked} requests, {uninterrupted} uninterrupted"
        );
        assert!(
            summary.stages_failed.is_empty(),
            "{:?}",
            summary.stages_failed
        );
    }
}

/// (Waits are taken in real time here: the watch below keeps the runtime busy, so a paused
/// clock would never move.)
#[tokio::test]
async fn a_resume_after_a_kill_between_flag_pages_asks_no_stored_page_again() {
    let w = world(
        LdAccountSpec::new("acme")
            .with_projects(1, 1)
            .with_flags(350),
    )
    .await;
    let first = runner(&w, Wire::new(&w.sim)).await;
    let id = new_run(&w, &first, &Selection::default()).await;
    // Ask until the second page of flags is answered, then kill with the third in flight.
    let flag_pages = |w: &World| {
        w.sim
            .request_log()
            .iter()
            .filter(|e| sync_support::family(e) == "launchdarkly_flags")
            .count()
    };
    let watch = async {
        while flag_pages(&w) < 2 {
            tokio::task::yield_now().await;
        }
    };
    let wire = Wire::new(&w.sim);
    let r = runner(&w, wire).await;
    tokio::select! {
        _ = drive(&r, w.clock, id) => panic!("the run ended before its second flag page"),
        () = watch => {}
    }
    drop(r);
    drive(&runner(&w, Wire::new(&w.sim)).await, w.clock, id).await;
    let offsets: Vec<String> = w
        .sim
        .request_log()
        .iter()
        .filter(|e| sync_support::family(e) == "launchdarkly_flags")
        .map(|e| e.path.clone())
        .collect();
    // 350 flags at 100 a page: 4 pages, each asked once, or the one in flight twice.
    let mut unique = offsets.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 4, "{offsets:?}");
    assert!(offsets.len() <= 5, "{offsets:?}");
    assert_eq!(
        stored(w.store.as_ref()).await,
        w.sim.launchdarkly_counts().expect("seeded")
    );
}
