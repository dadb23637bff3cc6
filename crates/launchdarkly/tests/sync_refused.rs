//! Refusals: a 403 is a permission refusal, recorded for its scope and never asked again;
//! the rest of the run goes on. (The simulator's token sees the whole account, so the 403 is
//! answered by the test's transport in the simulator's place.)

#![allow(clippy::expect_used)]

mod sync_support;

use headroom_launchdarkly::sync::Selection;
use headroom_sim::LdAccountSpec;
use sync_support::{Wire, drive, new_run, runner, stored, world};

#[tokio::test]
async fn a_project_whose_flags_are_forbidden_is_recorded_and_the_rest_is_collected() {
    let w = world(
        LdAccountSpec::new("acme")
            .with_projects(3, 2)
            .with_flags(30),
    )
    .await;
    let wire = Wire::forbidding(&w.sim, "/api/v2/flags/proj-1");
    let r = runner(&w, wire.clone()).await;
    let id = new_run(&w, &r, &Selection::default()).await;
    let (summary, _) = drive(&r, w.clock, id).await;

    let seeded = w.sim.launchdarkly_counts().expect("seeded");
    let got = stored(w.store.as_ref()).await;
    // Two projects' flags of three, and everything else.
    assert_eq!(got.flags, seeded.flags / 3 * 2, "{got:?}");
    assert_eq!(got.flag_environments, seeded.flag_environments / 3 * 2);
    assert_eq!(got.segments, seeded.segments);
    assert_eq!(got.projects, seeded.projects);
    assert_eq!(got.members, seeded.members);
    assert!(
        summary.stages_failed.is_empty(),
        "{:?}",
        summary.stages_failed
    );
    let refused: Vec<_> = summary
        .refused
        .iter()
        .filter(|f| f.kind == "forbidden")
        .collect();
    assert_eq!(refused.len(), 1, "{:?}", summary.refused);
    assert_eq!(refused[0].stage, "flags");
    assert!(refused[0].path.contains("proj-1"), "{:?}", refused[0]);
    // Asked once, never again: the wire saw one request to it (the simulator none).
    let asked = wire.versions.lock().expect("versions").len();
    let served = w.sim.request_log().len();
    assert_eq!(asked, served + 1, "one request answered by the wire alone");
    let cp = w
        .store
        .checkpoint(id, "flags", "proj-1#0")
        .await
        .expect("read")
        .expect("a checkpoint");
    assert!(
        cp.detail.as_deref().is_some_and(|d| d.contains("403")),
        "{cp:?}"
    );
}

#[tokio::test]
async fn a_refused_audit_log_re_lists_everything_since_no_change_can_be_ruled_out() {
    let w = world(
        LdAccountSpec::new("acme")
            .with_projects(2, 2)
            .with_flags(10),
    )
    .await;
    let first = runner(&w, Wire::new(&w.sim)).await;
    let id = new_run(&w, &first, &Selection::default()).await;
    drive(&first, w.clock, id).await;

    let wire = Wire::forbidding(&w.sim, "/api/v2/auditlog");
    let r = runner(&w, wire).await;
    let id = new_run(&w, &r, &Selection::default()).await;
    let before = w.sim.request_log().len();
    let (summary, _) = drive(&r, w.clock, id).await;
    let families = sync_support::by_family(&w.sim.request_log()[before..]);
    for family in [
        "launchdarkly_projects",
        "launchdarkly_flags",
        "launchdarkly_segments",
        "launchdarkly_members",
        "launchdarkly_code_refs",
    ] {
        assert!(families.contains_key(family), "{family}: {families:?}");
    }
    assert!(
        summary
            .refused
            .iter()
            .any(|f| f.stage == "audit_log" && f.kind == "forbidden"),
        "{:?}",
        summary.refused
    );
    assert!(
        summary.stages_failed.is_empty(),
        "{:?}",
        summary.stages_failed
    );
}
