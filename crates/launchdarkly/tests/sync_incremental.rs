//! The incremental rule against the simulated account: the audit log first, from the last
//! completed run's newest entry; everything else re-listed only when the log shows a change,
//! on the first run, or when the run is asked for `full`.

#![allow(clippy::expect_used)]

mod sync_support;

use headroom_core::clock::{Clock, SignedDuration};
use headroom_launchdarkly::sync::Selection;
use headroom_sim::LdAccountSpec;
use sync_support::{
    Wire, World, audit_entry, by_family, drive, new_run, runner, sleep, stored, world,
};

fn spec() -> LdAccountSpec {
    LdAccountSpec::new("acme")
        .with_projects(2, 2)
        .with_flags(25)
}

/// Runs a sync of `sel` over `wire` to its end; returns the requests it sent per family.
async fn collect(
    w: &World,
    wire: std::sync::Arc<Wire>,
    sel: &Selection,
) -> std::collections::BTreeMap<String, u64> {
    let r = runner(w, wire).await;
    let id = new_run(w, &r, sel).await;
    let before = w.sim.request_log().len();
    let (summary, _) = drive(&r, w.clock, id).await;
    assert!(
        summary.stages_failed.is_empty(),
        "{:?}",
        summary.stages_failed
    );
    by_family(&w.sim.request_log()[before..])
}

fn only(pairs: &[(&str, u64)]) -> std::collections::BTreeMap<String, u64> {
    pairs.iter().map(|(f, n)| ((*f).to_owned(), *n)).collect()
}

#[tokio::test]
async fn a_second_run_with_nothing_new_reads_only_the_identity_and_the_audit_log() {
    let w = world(spec()).await;
    let first = collect(&w, Wire::new(&w.sim), &Selection::default()).await;
    assert!(first.contains_key("launchdarkly_flags"), "{first:?}");
    let counts = stored(w.store.as_ref()).await;
    sleep(w.clock, SignedDuration::from_secs(600)).await;

    let second = collect(&w, Wire::new(&w.sim), &Selection::default()).await;
    assert_eq!(
        second,
        only(&[("launchdarkly_identity", 1), ("launchdarkly_audit_log", 1)])
    );
    assert_eq!(stored(w.store.as_ref()).await, counts);
}

#[tokio::test]
async fn a_new_audit_entry_re_lists_everything_once_and_is_stored_once() {
    let w = world(spec()).await;
    collect(&w, Wire::new(&w.sim), &Selection::default()).await;
    let whole = stored(w.store.as_ref()).await;
    sleep(w.clock, SignedDuration::from_secs(600)).await;

    // Someone turns a flag on: the log has an entry the first run did not see.
    let wire = Wire::new(&w.sim);
    let now = w.clock.now().as_millisecond();
    *wire.new_audit_entry.lock().expect("entry") = Some(audit_entry("new-1", now));
    let second = collect(&w, wire.clone(), &Selection::default()).await;
    for family in [
        "launchdarkly_projects",
        "launchdarkly_flags",
        "launchdarkly_segments",
        "launchdarkly_members",
        "launchdarkly_code_refs",
    ] {
        assert!(second.contains_key(family), "{family}: {second:?}");
    }
    let mut expected = whole;
    expected.audit_entries += 1;
    assert_eq!(stored(w.store.as_ref()).await, expected);

    // The third run reads that entry again (its millisecond overlapped), knows it, and
    // reads nothing else.
    sleep(w.clock, SignedDuration::from_secs(600)).await;
    let third = collect(&w, wire, &Selection::default()).await;
    assert_eq!(
        third,
        only(&[("launchdarkly_identity", 1), ("launchdarkly_audit_log", 1)])
    );
    assert_eq!(stored(w.store.as_ref()).await, expected);
}

#[tokio::test]
async fn a_full_run_re_lists_everything_even_when_the_log_shows_no_change() {
    let w = world(spec()).await;
    let first = collect(&w, Wire::new(&w.sim), &Selection::default()).await;
    let full = Selection {
        full: true,
        ..Selection::default()
    };
    let again = collect(&w, Wire::new(&w.sim), &full).await;
    let mut expected = first.clone();
    // The log is read from the first run's newest entry: one page.
    expected.insert("launchdarkly_audit_log".into(), 1);
    assert_eq!(again, expected);
}

#[tokio::test]
async fn a_run_narrowed_to_one_project_does_not_stand_for_the_whole_account() {
    let w = world(spec()).await;
    let one = Selection::parse("proj-1").expect("a key");
    let narrowed = collect(&w, Wire::new(&w.sim), &one).await;
    assert_eq!(narrowed.get("launchdarkly_flags"), Some(&1), "{narrowed:?}");
    // A run over every project after it re-lists everything: the narrowed run covered less.
    let all = collect(&w, Wire::new(&w.sim), &Selection::default()).await;
    assert_eq!(all.get("launchdarkly_flags"), Some(&2), "{all:?}");
    assert_eq!(
        stored(w.store.as_ref()).await,
        w.sim.launchdarkly_counts().expect("seeded")
    );
    // And a narrowed run after the whole one is covered by it.
    let again = collect(&w, Wire::new(&w.sim), &one).await;
    assert_eq!(
        again,
        only(&[("launchdarkly_identity", 1), ("launchdarkly_audit_log", 1)])
    );
}

#[tokio::test]
async fn a_run_that_failed_after_reading_the_log_does_not_count_as_completed() {
    let w = world(spec()).await;
    collect(&w, Wire::new(&w.sim), &Selection::default()).await;
    sleep(w.clock, SignedDuration::from_secs(600)).await;

    // A change is logged; the next run stores the entry, then fails on the members' answer.
    let now = w.clock.now().as_millisecond();
    let wire = Wire::new(&w.sim);
    *wire.new_audit_entry.lock().expect("entry") = Some(audit_entry("new-1", now));
    *wire.broken.lock().expect("broken") = Some("/api/v2/members".into());
    let r = runner(&w, wire.clone()).await;
    let id = new_run(&w, &r, &Selection::default()).await;
    let outcome = r.run(id).await.expect("driven");
    assert!(
        matches!(outcome, headroom_sync::RunOutcome::Failed { .. }),
        "{outcome:?}"
    );
    sleep(w.clock, SignedDuration::from_secs(600)).await;

    // The run after it reads the log from the last completed run, meets the entry again, and
    // re-lists everything: the failed run's members were never read.
    *wire.broken.lock().expect("broken") = None;
    let after = collect(&w, wire, &Selection::default()).await;
    assert!(after.contains_key("launchdarkly_members"), "{after:?}");
    assert!(after.contains_key("launchdarkly_flags"), "{after:?}");
}
