//! `sync plan jira` against the simulated site: the probe's estimate, per stage and route
//! family, is what a real sync of the same seeded site then spends. The site's data is
//! uniform (every issue holds as many comments, histories and worklogs; every scrum board as
//! many sprints), so the model is exact: the tolerance is zero.

#![allow(clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::{Rig, SITE, credential};
use headroom_core::Governor;
use headroom_core::Subject;
use headroom_core::clock::{Clock as _, SignedDuration};
use headroom_core::governor::GovernorConfig;
use headroom_core::signal::Provider;
use headroom_http::sinks::{CredentialRegistry, MemoryCredentials};
use headroom_http::transport::SimTransport;
use headroom_http::{Client, ClientParts, UrlPolicy};
use headroom_jira::sync::Selection;
use headroom_jira::sync::plan::{self, JiraPlan};
use headroom_sim::JiraSiteSpec;
use headroom_store::SharedGovernorOptions;
use headroom_sync::RunSummary;

/// A client of the rig's site, as `sync plan jira` builds one.
async fn client(rig: &Rig) -> Client {
    let state = rig
        .store
        .quota_state(
            GovernorConfig::for_provider(Provider::Jira),
            SharedGovernorOptions::default(),
        )
        .expect("governor state");
    let credentials = Arc::new(MemoryCredentials::default());
    credentials
        .record(
            "127.0.0.1",
            credential().fingerprint(),
            &Subject::User("alice".into()),
        )
        .await;
    let mut parts = ClientParts::new(
        UrlPolicy::for_api_url(SITE).expect("a loopback site"),
        Governor::new(state, Arc::new(rig.clock)),
        Arc::new(SimTransport::new(rig.sim.clone())),
        rig.clock,
    );
    parts.credentials = credentials;
    parts.config.provider = Provider::Jira;
    parts.config.api_version = None;
    Client::new(parts)
}

/// Requests per (stage, family) of an estimate.
fn estimated(plan: &JiraPlan) -> BTreeMap<(String, String), u64> {
    let mut out = BTreeMap::new();
    for f in plan.by_family.iter().filter(|f| f.units > 0) {
        *out.entry((f.stage.to_owned(), f.family.name.to_owned()))
            .or_insert(0) += f.units;
    }
    out
}

/// Requests per (stage, family) a run spent.
fn spent(summary: &RunSummary) -> BTreeMap<(String, String), u64> {
    let mut out = BTreeMap::new();
    for (stage, actuals) in &summary.actuals {
        for a in actuals.iter().filter(|a| a.requests > 0) {
            *out.entry((stage.clone(), a.family.clone())).or_insert(0) += a.requests;
        }
    }
    out
}

/// Probes `spec` for `selection`, then syncs it: the estimate and what the sync spent.
async fn plan_then_sync(
    spec: JiraSiteSpec,
    selection: &Selection,
) -> (
    BTreeMap<(String, String), u64>,
    BTreeMap<(String, String), u64>,
) {
    let rig = Rig::new(spec).await;
    let probe = plan::probe(&client(&rig).await, Some(&credential()), selection)
        .await
        .expect("the probe");
    assert_eq!(
        probe.requests,
        rig.log().len() as u64,
        "the probe counts what it sent"
    );
    let plan = plan::estimate(&probe);
    // The probe's burst is long spent when the sync starts.
    rig.sleep_until(rig.clock.now() + SignedDuration::from_secs(60))
        .await;
    let summary = rig.collect(selection).await;
    assert_eq!(
        plan.requests,
        plan.by_family.iter().map(|f| f.units).sum::<u64>()
    );
    (estimated(&plan), spent(&summary))
}

#[tokio::test]
async fn the_plan_of_a_whole_site_is_what_its_sync_spends_per_stage_and_family() {
    // More issues than a search page, histories past a bulk page (110 × 10 > 1,000), more
    // boards than an agile page and more sprints on a board than one.
    let spec = JiraSiteSpec::new("acme")
        .with_size(3, 110)
        .with_children(2, 10, 2)
        .with_boards(18, 52);
    let selection = Selection {
        worklogs: true,
        ..Selection::default()
    };
    let (estimate, actual) = plan_then_sync(spec, &selection).await;
    assert!(actual.len() >= 6, "{actual:?}");
    assert_eq!(estimate, actual);
}

#[tokio::test]
async fn the_plan_of_named_projects_under_a_narrower_jql_is_what_their_sync_spends() {
    // One project nobody may browse; two named of three visible; a narrowing JQL that keeps
    // some issues of each; no worklogs.
    let mut spec = JiraSiteSpec::new("acme")
        .with_size(4, 130)
        .with_children(150, 1, 1)
        .with_boards(3, 2);
    spec.restricted_projects = 1;
    let selection = Selection {
        projects: vec!["PA".into(), "PC".into()],
        jql: Some("status != Done".into()),
        worklogs: false,
    };
    let (estimate, actual) = plan_then_sync(spec, &selection).await;
    assert!(
        !actual.keys().any(|(_, f)| f == "jira_worklogs"),
        "{actual:?}"
    );
    assert_eq!(estimate, actual);
}
