//! `sync plan linear` against the simulated workspace: the probe's estimate, per stage and
//! route family, against what a real sync of the same seeded workspace then spends.
//!
//! Tolerance: requests are exact for every family whose count the probe reads (the
//! workspace, teams, users, memberships, workflow states, labels, projects, cycles, issues).
//! Comments, attachments and history pages come from a sample of 20 issues of a workspace
//! whose issues hold a random number of each, so their requests may differ by a quarter or by
//! one page, whichever is more. Points: every page is priced as its stage prices it before
//! sending; the simulator's `X-Complexity` (its reading of Linear's rule) may differ from that
//! by a tenth.

#![allow(clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use headroom_core::clock::SignedDuration;
use headroom_core::governor::GovernorConfig;
use headroom_core::signal::Provider;
use headroom_core::{Governor, Subject};
use headroom_http::sinks::{CredentialRegistry, MemoryCredentials};
use headroom_http::transport::SimTransport;
use headroom_http::{Client, ClientParts, Credential, UrlPolicy};
use headroom_linear::sync::Selection;
use headroom_linear::sync::plan::{self, LinearPlan};
use headroom_sim::LogEntry;
use headroom_store::SharedGovernorOptions;
use headroom_sync::RunSummary;
use support::{TOKEN, World, drive, new_run, root, sim_runner, spec, world};

/// (requests, points) per (stage, family).
type ByFamily = BTreeMap<(String, String), (u64, u64)>;

/// A client of the simulated Linear, as `sync plan linear` builds one.
async fn client(w: &World) -> Client {
    let config = GovernorConfig {
        margin: SignedDuration::from_secs(1),
        ..GovernorConfig::for_provider(Provider::Linear)
    };
    let state = w
        .store
        .quota_state(config, SharedGovernorOptions::default())
        .expect("governor state");
    let credentials = Arc::new(MemoryCredentials::default());
    credentials
        .record(
            "127.0.0.1",
            Credential::new(TOKEN).fingerprint(),
            &Subject::User("alice".into()),
        )
        .await;
    let mut parts = ClientParts::new(
        UrlPolicy::for_api_url("http://127.0.0.1:7000/linear").expect("loopback API"),
        Governor::new(state, Arc::new(w.clock)),
        Arc::new(SimTransport::new(w.sim.clone())),
        w.clock,
    );
    parts.credentials = credentials;
    parts.config.provider = Provider::Linear;
    parts.config.api_version = None;
    Client::new(parts)
}

fn estimated(plan: &LinearPlan) -> ByFamily {
    let mut out = ByFamily::new();
    for f in plan.by_family.iter().filter(|f| f.units > 0) {
        let e = out
            .entry((f.stage.to_owned(), f.family.name.to_owned()))
            .or_insert((0, 0));
        e.0 += f.units;
        e.1 += f.points;
    }
    out
}

/// Requests per (stage, family) the run tallied, and the points Linear (the simulator)
/// charged them: its log after the probe's requests, by the operation's root field.
fn spent(summary: &RunSummary, log: &[LogEntry]) -> ByFamily {
    let mut out = ByFamily::new();
    let mut stage_of = BTreeMap::new();
    for (stage, actuals) in &summary.actuals {
        for a in actuals.iter().filter(|a| a.requests > 0) {
            out.entry((stage.clone(), a.family.clone()))
                .or_insert((0, 0))
                .0 += a.requests;
            stage_of.entry(a.family.clone()).or_insert(stage.clone());
        }
    }
    for e in log {
        let family = match root(e) {
            "organization,viewer" => "linear_workspace".to_owned(),
            "teamMemberships" => "linear_team_members".to_owned(),
            "workflowStates" | "issueLabels" => "linear_metadata".to_owned(),
            "issue" => "linear_history".to_owned(),
            other => format!("linear_{other}"),
        };
        // States and labels share a family: their points are held together, per request.
        let stage = stage_of.get(&family).cloned().unwrap_or_default();
        out.entry((stage, family)).or_insert((0, 0)).1 += e.cost;
    }
    out
}

/// Requests and points per family, whatever the stage.
fn per_family(m: &ByFamily) -> BTreeMap<String, (u64, u64)> {
    let mut out = BTreeMap::new();
    for ((_, family), (r, p)) in m {
        let e = out.entry(family.clone()).or_insert((0, 0));
        e.0 += r;
        e.1 += p;
    }
    out
}

/// Families whose requests come from the sample, not from a count.
const SAMPLED: [&str; 3] = ["linear_comments", "linear_attachments", "linear_history"];

/// Probes, then syncs `selection`: the estimate beside what the sync spent, every family
/// within the module's tolerance.
async fn plan_then_sync(w: &World, selection: &Selection) -> (ByFamily, ByFamily) {
    let probe = plan::probe(&client(w).await, Some(&Credential::new(TOKEN)), selection)
        .await
        .expect("the probe");
    assert_eq!(probe.requests, w.sim.request_log().len() as u64);
    let plan = plan::estimate(&probe);
    let runner = sim_runner(w).await;
    let id = new_run(w, selection).await;
    let (summary, _) = drive(&runner, w.clock, id).await;
    let log = w.sim.request_log();
    let after_probe = usize::try_from(probe.requests).expect("fits");
    let (estimate, actual) = (estimated(&plan), spent(&summary, &log[after_probe..]));
    let history = |m: &ByFamily| m.keys().filter(|(_, f)| f == "linear_history").count();
    // History requests are the only family a sample may wrongly think absent or present.
    if history(&estimate) == history(&actual) {
        let keys = |m: &ByFamily| m.keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&estimate), keys(&actual));
    }
    let estimated_families = per_family(&estimate);
    for (family, &(requests, points)) in &per_family(&actual) {
        let (est_requests, est_points) =
            estimated_families.get(family).copied().unwrap_or_default();
        if SAMPLED.contains(&family.as_str()) {
            let slack = (requests / 4).max(1);
            assert!(
                requests.abs_diff(est_requests) <= slack,
                "{family}: estimated {est_requests} requests, spent {requests}"
            );
        } else {
            assert_eq!(est_requests, requests, "{family}");
        }
        // Per request, the stage's price and Linear's (the simulator's) agree within a tenth.
        let per = |p: u64, r: u64| p as f64 / r.max(1) as f64;
        let (ours, theirs) = (per(est_points, est_requests), per(points, requests));
        assert!(
            (ours - theirs).abs() <= theirs / 10.0 + 1.0,
            "{family}: {ours} points a request estimated, {theirs} charged"
        );
    }
    (estimate, actual)
}

#[tokio::test]
async fn the_plan_of_a_whole_workspace_is_what_its_sync_spends_per_stage_and_family() {
    // More users, issues and cycles than a page; histories past the nested page of 10.
    let mut spec = spec(3, 70, 100_000_000);
    spec.users = 60;
    spec.cycles_per_team = 20;
    spec.max_history = 30;
    spec.max_comments = 4;
    let w = world(spec).await;
    let (estimate, actual) = plan_then_sync(&w, &Selection::default()).await;
    let issues = ("issues".to_owned(), "linear_issues".to_owned());
    assert_eq!(actual.get(&issues).map(|a| a.0), Some(5), "{actual:?}");
    assert!(
        actual.keys().any(|(_, f)| f == "linear_history"),
        "{actual:?}"
    );
    assert!(
        estimate.keys().any(|(_, f)| f == "linear_history"),
        "{estimate:?}"
    );
}

#[tokio::test]
async fn the_plan_of_some_teams_counts_only_their_issues_states_and_cycles() {
    let mut spec = spec(4, 60, 100_000_000);
    spec.cycles_per_team = 30;
    let w = world(spec).await;
    let teams = Selection::parse("ENG,PLA").expect("keys");
    let (estimate, _) = plan_then_sync(&w, &teams).await;
    let issues = ("issues".to_owned(), "linear_issues".to_owned());
    // 120 issues of the two teams: three pages, not five.
    assert_eq!(estimate.get(&issues).map(|e| e.0), Some(3));
}
