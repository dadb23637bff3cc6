//! A whole LaunchDarkly account collected against the simulator whose global and route
//! windows hold a fraction of the work: every table holds what the account holds, the run's
//! summary per route family is the simulator's log per family, every request carried the
//! pinned API version, and not one answer was a 429 — the governor held each request against
//! the account's window and its route's, and the run waited for them to turn.

#![allow(clippy::expect_used)]

mod sync_support;

use headroom_core::clock::{Clock, SignedDuration};
use headroom_launchdarkly::sync::Selection;
use headroom_sim::{LdAccountSpec, LdLimits};
use sync_support::{
    Wire, by_family, drive, hibernating_runner, new_run, refused, runner, stored,
    summary_by_family, world,
};

/// An account of 3 projects × 3 environments whose flags, segments and audit log need pages
/// of their own, under windows of one second holding 8 requests of the account and 2 of any
/// one route.
fn small_windows() -> LdAccountSpec {
    LdAccountSpec::new("acme")
        .with_projects(3, 3)
        .with_flags(120)
        .with_segments(60)
        .with_members(130)
        .with_audit_entries(65)
        .with_code_ref_repositories(4)
        .with_limits(
            LdLimits::default()
                .with_window(SignedDuration::from_secs(1))
                .with_global(8)
                .with_route_default(2),
        )
}

#[tokio::test]
async fn an_account_needing_many_windows_of_its_routes_is_collected_with_no_rate_limited_answer() {
    let w = world(small_windows()).await;
    let wire = Wire::new(&w.sim);
    let r = hibernating_runner(&w, wire.clone()).await;
    let id = new_run(&w, &r, &Selection::default()).await;
    let before = w.sim.request_log().len();
    let started = w.clock.now();
    let (summary, _) = drive(&r, w.clock, id).await;

    let seeded = w.sim.launchdarkly_counts().expect("a seeded account");
    assert_eq!(stored(w.store.as_ref()).await, seeded);
    let log = w.sim.request_log();
    let run_log = &log[before..];
    assert_eq!(refused(&log), 0, "{:?}", by_family(run_log));
    // What the run tallied per family is what the simulator served per family.
    assert_eq!(summary_by_family(&summary), by_family(run_log));
    // The work needs many windows of a route's limit (2 a second).
    let flags = by_family(run_log)
        .get("launchdarkly_flags")
        .copied()
        .unwrap_or(0);
    assert!(flags >= 6, "{flags} flag pages");
    let took = w.clock.now().duration_since(started);
    assert!(
        took >= SignedDuration::from_secs(i64::try_from(flags / 2).expect("small") - 1),
        "{flags} flag pages at 2 a window took {took}"
    );
    // Every request named the pinned API version.
    let versions = wire.versions.lock().expect("versions").clone();
    assert!(!versions.is_empty());
    assert!(
        versions.iter().all(|v| v.as_deref() == Some("20240415")),
        "{versions:?}"
    );
    assert!(
        summary.stages_failed.is_empty(),
        "{:?}",
        summary.stages_failed
    );
    assert!(summary.refused.is_empty(), "{:?}", summary.refused);
}

#[tokio::test]
async fn every_page_states_its_size_and_every_flag_page_names_its_environments() {
    let w = world(
        LdAccountSpec::new("acme")
            .with_projects(2, 4)
            .with_flags(30),
    )
    .await;
    let r = runner(&w, Wire::new(&w.sim)).await;
    let id = new_run(&w, &r, &Selection::default()).await;
    drive(&r, w.clock, id).await;
    let log = w.sim.request_log();
    for e in &log {
        let paged = !matches!(
            sync_support::family(e),
            "launchdarkly_identity" | "launchdarkly_code_refs" | "other"
        );
        if paged {
            assert!(e.path.contains("limit="), "{}", e.path);
        }
        if sync_support::family(e) == "launchdarkly_flags" {
            assert!(e.path.contains("env="), "{}", e.path);
            assert!(e.path.matches("env=").count() <= 3, "{}", e.path);
        }
    }
    // Four environments a project: two flag groups each (3 + 1).
    let flags = by_family(&log)["launchdarkly_flags"];
    assert_eq!(flags, 4, "{:?}", by_family(&log));
    assert_eq!(
        stored(w.store.as_ref()).await,
        w.sim.launchdarkly_counts().expect("seeded")
    );
}
