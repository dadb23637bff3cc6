//! `sync plan launchdarkly` against the simulated account: the probe's estimate, per stage and
//! route family, is what a first sync of the same seeded account then spends (and what the
//! simulator served). The account is uniform (every project holds as many environments and
//! flags, every environment as many segments), so the sampled means are exact and the
//! tolerance is zero; the audit log, which counts nothing, is read by the probe as the stage
//! reads it, exact when it ends within the probe's pages and a lower bound when it does not.

#![allow(clippy::expect_used)]

mod sync_support;

use std::collections::BTreeMap;
use std::sync::Arc;

use headroom_core::Governor;
use headroom_core::clock::SignedDuration;
use headroom_core::governor::GovernorConfig;
use headroom_core::route;
use headroom_core::signal::Provider;
use headroom_http::sinks::MemoryUsage;
use headroom_http::{Client, ClientParts, Credential, UrlPolicy};
use headroom_launchdarkly::sync::Selection;
use headroom_launchdarkly::sync::plan::{self, AUDIT_PROBE_PAGES, LdPlan, LdProbe};
use headroom_sim::LdAccountSpec;
use headroom_store::SharedGovernorOptions;
use headroom_sync::RunSummary;
use sync_support::{TOKEN, World, by_family, drive, hibernating_runner, new_run, sleep, world};

type PerStage = BTreeMap<(String, String), u64>;

/// A client of the simulated account, as `sync plan launchdarkly` builds one, recording each
/// request's route family in `usage`.
fn client(w: &World, usage: Arc<MemoryUsage>) -> Client {
    let state = w
        .store
        .quota_state(
            GovernorConfig::for_provider(Provider::LaunchDarkly),
            SharedGovernorOptions::default(),
        )
        .expect("governor state");
    let mut parts = ClientParts::new(
        UrlPolicy::for_api_url("http://127.0.0.1:7000").expect("loopback API"),
        Governor::new(state, Arc::new(w.clock)),
        Arc::new(headroom_http::transport::SimTransport::new(w.sim.clone())),
        w.clock,
    );
    parts.usage = usage;
    parts.config.provider = Provider::LaunchDarkly;
    parts.config.api_version = None;
    Client::new(parts)
}

/// Requests per (stage, family) of an estimate.
fn estimated(plan: &LdPlan) -> PerStage {
    let mut out = BTreeMap::new();
    for f in plan.by_family.iter().filter(|f| f.units > 0) {
        *out.entry((f.stage.to_owned(), f.family.name.to_owned()))
            .or_insert(0) += f.units;
    }
    out
}

/// Requests per (stage, family) a run spent.
fn spent(summary: &RunSummary) -> PerStage {
    let mut out = BTreeMap::new();
    for (stage, actuals) in &summary.actuals {
        for a in actuals.iter().filter(|a| a.requests > 0) {
            *out.entry((stage.clone(), a.family.clone())).or_insert(0) += a.requests;
        }
    }
    out
}

/// Per family, over the stages.
fn families(per_stage: &PerStage) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for ((_, family), n) in per_stage {
        *out.entry(family.clone()).or_insert(0) += n;
    }
    out
}

/// Probes the world for `selection` (from its store when `from_store`), checking that the
/// probe's requests are few, counted and all in the plan family.
async fn probe(w: &World, selection: &Selection, from_store: bool) -> LdProbe {
    let usage = Arc::new(MemoryUsage::default());
    let c = client(w, usage.clone());
    let credential = Credential::new(TOKEN);
    // Whose quota the token spends, learned first as every command learns it (one
    // `caller-identity` the first time): not the probe's.
    c.identity(Some(&credential)).await.expect("the account");
    let identity = usage.records().len();
    let before = w.sim.request_log().len();
    let probe = if from_store {
        plan::probe_from_store(&c, Some(&credential), selection, w.store.as_ref()).await
    } else {
        plan::probe(&c, Some(&credential), selection).await
    }
    .expect("the probe");
    let sent = (w.sim.request_log().len() - before) as u64;
    assert_eq!(probe.requests, sent, "the probe counts what it sent");
    let records: Vec<_> = usage.records().into_iter().skip(identity).collect();
    assert_eq!(records.len() as u64, sent);
    assert!(
        records
            .iter()
            .all(|r| r.route_family == route::LAUNCHDARKLY_SYNC_PLAN.name),
        "{:?}",
        records.iter().map(|r| &r.route_family).collect::<Vec<_>>()
    );
    // The probe's burst is long spent when the sync starts.
    sleep(w.clock, SignedDuration::from_secs(60)).await;
    probe
}

/// Syncs the world for `selection`: what the run spent per (stage, family), and what the
/// simulator served it per family.
async fn sync(w: &World, selection: &Selection) -> (PerStage, BTreeMap<String, u64>) {
    let r = hibernating_runner(w, sync_support::Wire::new(&w.sim)).await;
    let id = new_run(w, &r, selection).await;
    let before = w.sim.request_log().len();
    let (summary, _) = drive(&r, w.clock, id).await;
    assert!(summary.stages_failed.is_empty(), "{summary:?}");
    let served = by_family(&w.sim.request_log()[before..]);
    (spent(&summary), served)
}

/// 2 projects of 22 environments (2 beyond the embedded page; 8 flag groups) with 130 flags
/// (2 pages), 60 segments an environment (2 pages), 130 members besides the token's owner
/// (2 pages), an audit log of `audit` entries (some sharing a millisecond) and 3 code-reference
/// repositories.
fn uniform(audit: usize) -> LdAccountSpec {
    LdAccountSpec::new("acme")
        .with_projects(2, 22)
        .with_flags(130)
        .with_segments(60)
        .with_members(130)
        .with_audit_entries(audit)
        .with_code_ref_repositories(3)
}

#[tokio::test]
async fn the_plan_of_a_uniform_account_is_what_its_first_sync_spends_per_stage_and_family() {
    let w = world(uniform(70)).await;
    let selection = Selection::default();
    let probe = probe(&w, &selection, false).await;
    // A few requests: one page of projects, 2 flag counts, 10 segment counts, the members
    // count and the audit log's four pages (70 entries, ties asked again).
    assert!(probe.requests <= 20, "{probe:?}");
    assert_eq!(probe.audit_entries, Some(70));
    let plan = plan::estimate(&probe);
    assert!(plan.audit_exact);
    assert_eq!(
        plan.requests,
        plan.by_family.iter().map(|f| f.units).sum::<u64>()
    );
    let (actual, served) = sync(&w, &selection).await;
    assert!(actual.len() >= 8, "{actual:?}");
    assert_eq!(estimated(&plan), actual);
    assert_eq!(families(&estimated(&plan)), served);
    assert!(probe.requests * 5 < plan.requests, "{probe:?} {plan:?}");
}

#[tokio::test]
async fn the_plan_of_named_projects_is_what_their_sync_spends() {
    let w = world(
        LdAccountSpec::new("acme")
            .with_projects(3, 4)
            .with_flags(101)
            .with_segments(0)
            .with_members(3)
            .with_audit_entries(19),
    )
    .await;
    let selection = Selection::parse("default,proj-2").expect("keys");
    let probe = probe(&w, &selection, false).await;
    assert_eq!(probe.visible_projects, 3);
    assert_eq!(probe.projects.len(), 2, "{probe:?}");
    let plan = plan::estimate(&probe);
    let (actual, served) = sync(&w, &selection).await;
    assert_eq!(estimated(&plan), actual);
    assert_eq!(families(&actual), served);
}

#[tokio::test]
async fn an_audit_log_longer_than_the_probe_reads_is_estimated_at_least_and_the_rest_exactly() {
    let w = world(uniform(40 * AUDIT_PROBE_PAGES as usize)).await;
    let selection = Selection::default();
    let probe = probe(&w, &selection, false).await;
    assert_eq!(probe.audit_entries, None);
    assert_eq!(probe.audit_pages, AUDIT_PROBE_PAGES);
    let plan = plan::estimate(&probe);
    assert!(!plan.audit_exact);
    assert!(plan.notes[0].contains("lower bound"), "{:?}", plan.notes);
    let (mut actual, _) = sync(&w, &selection).await;
    let mut estimate = estimated(&plan);
    let key = ("audit_log".to_owned(), "launchdarkly_audit_log".to_owned());
    let (at_least, spent) = (estimate.remove(&key), actual.remove(&key));
    assert!(
        at_least.is_some_and(|e| spent.is_some_and(|s| s > e)),
        "{at_least:?} {spent:?}"
    );
    assert_eq!(estimate, actual);
}

#[tokio::test]
async fn a_plan_from_the_store_reads_the_audit_log_from_where_the_next_sync_will() {
    let w = world(uniform(150)).await;
    sync(&w, &Selection::default()).await;
    // Everything re-read (`full`), the log only from the newest entry stored.
    let selection = Selection {
        projects: Vec::new(),
        full: true,
    };
    let probe = probe(&w, &selection, true).await;
    assert!(probe.audit_after.is_some(), "{probe:?}");
    // The newest millisecond asked again: its entry (two when it holds a tie).
    assert!(
        probe.audit_entries.is_some_and(|n| (1..=2).contains(&n)),
        "{probe:?}"
    );
    let plan = plan::estimate(&probe);
    assert!(plan.audit_exact);
    let (actual, _) = sync(&w, &selection).await;
    assert_eq!(estimated(&plan), actual);
}
