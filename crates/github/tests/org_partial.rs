//! Organization sync against GitHub's partial GraphQL answers and resource limits, through
//! the in-process simulator (which also validates every document against GitHub's published
//! schema, so each query these runs send is proved valid on the way): a field refused with
//! `FORBIDDEN` or `NOT_FOUND` and a path leaves the rest of the answer stored and is named in
//! the run's summary; "Resource limits for this query exceeded" shrinks the page, and the run
//! ends with the rows it would have had without it.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use headroom_core::QuotaKey;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::GovernorConfig;
use headroom_github::org;
use headroom_http::{Client, Credential};
use headroom_sim::{Density, Scenario, SimConfig, Simulator, TokenSpec};
use headroom_store::{NewSyncRun, Store, TABLES, Watermark};
use headroom_sync::{RefusedField, RunOutcome, RunSummary, Runner, RunnerConfig};

mod org_rig;
use org_rig::API;
const TOKEN: &str = "ghp_orgpartialtoken0000000000000000001";
const REPOS: usize = 8;

fn config(scenario: Scenario) -> SimConfig {
    let mut config = SimConfig::default()
        .with_org("acme", REPOS)
        .with_token(TokenSpec::user(TOKEN, "alice"))
        .with_seed(3)
        .with_scenario(scenario);
    config.density = Density::SPARSE;
    config.public_base_url = API.to_owned();
    config
}

struct Rig {
    sim: Simulator,
    store: Arc<dyn Store>,
    client: Client,
    clock: TokioClock,
    _dir: tempfile::TempDir,
}

async fn rig(config: SimConfig) -> Rig {
    let clock = TokioClock::anchored_at(Timestamp::from_second(1_800_000_000).expect("valid"));
    let sim = Simulator::new(config, clock).expect("valid simulator");
    let (client, _) = org_rig::client(&sim, clock, TOKEN, "alice", GovernorConfig::default()).await;
    let (store, dir) = org_rig::sqlite_store().await;
    Rig {
        sim,
        store,
        client,
        clock,
        _dir: dir,
    }
}

impl Rig {
    /// A full sync, run to its end as a worker would (hibernations slept through, paused).
    async fn sync(&self) -> (i64, RunSummary) {
        let id = self
            .store
            .create_sync_run(&NewSyncRun {
                credential: None,
                kind: "org".into(),
                target: "acme".into(),
                key: QuotaKey::user("127.0.0.1", "alice"),
                requested_stages: None,
                created_at: self.clock.now(),
            })
            .await
            .expect("run")
            .id;
        let runner = Runner::new(
            org::stages(),
            Some(org::REPOSITORY_SOURCE),
            self.store.clone(),
            self.client.clone(),
            Some(Credential::new(TOKEN)),
            self.clock,
            RunnerConfig {
                inline_wait: SignedDuration::ZERO,
                ..RunnerConfig::default()
            },
        )
        .expect("valid graph");
        for _ in 0..100 {
            match runner.run(id).await.expect("run") {
                RunOutcome::Done { summary } => return (id, *summary),
                RunOutcome::Hibernating { until, .. } => {
                    tokio::time::pause();
                    self.clock.sleep_until(until).await;
                    tokio::time::resume();
                }
                RunOutcome::Failed { reason, .. } => panic!("run failed: {reason}"),
            }
        }
        panic!("run did not finish in 100 wakes");
    }

    async fn rows(&self) -> BTreeMap<&'static str, u64> {
        let mut out = BTreeMap::new();
        for t in TABLES {
            out.insert(*t, self.store.count_rows(t).await.expect("count"));
        }
        out
    }

    /// The summary as persisted with the run (what `sync status` reads).
    async fn stored_summary(&self, id: i64) -> RunSummary {
        let run = self.store.sync_run(id).await.expect("read").expect("run");
        RunSummary::from_stored(run.summary.as_ref())
    }
}

fn refused(summary: &RunSummary) -> Vec<(&str, &str, &str)> {
    summary
        .refused
        .iter()
        .map(|r| (r.stage.as_str(), r.path.as_str(), r.kind.as_str()))
        .collect()
}

#[tokio::test]
async fn without_read_org_the_sync_finishes_and_names_members_and_teams_as_refused() {
    let r = rig(config(Scenario::NoReadOrg)).await;
    let (id, summary) = r.sync().await;
    assert!(summary.stages_failed.is_empty(), "{summary:?}");
    let rows = r.rows().await;
    assert_eq!(rows["repositories"], REPOS as u64, "{rows:?}");
    assert_eq!(rows["organizations"], 1);
    assert_eq!(rows["organization_members"], 0);
    assert_eq!(rows["teams"], 0);
    assert!(rows["issues"] > 0 && rows["pull_requests"] > 0, "{rows:?}");
    assert_eq!(
        refused(&summary),
        vec![
            ("org", "organization.membersWithRole", "FORBIDDEN"),
            ("org", "organization.teams", "FORBIDDEN"),
        ]
    );
    assert_eq!(
        summary.refused[0].message,
        "Resource not accessible by personal access token"
    );
    // Persisted with the run.
    assert_eq!(r.stored_summary(id).await.refused, summary.refused);

    // The same organization with read:org has members and teams, and nothing refused.
    let full = rig(config(Scenario::Default)).await;
    let (_, summary) = full.sync().await;
    assert!(summary.refused.is_empty(), "{:?}", summary.refused);
    let all = full.rows().await;
    assert!(all["organization_members"] > 0 && all["teams"] > 0);
    for table in ["repositories", "issues", "pull_requests", "branches"] {
        assert_eq!(rows[table], all[table], "{table}");
    }
}

#[tokio::test]
async fn under_saml_enforcement_private_repositories_are_refused_and_the_rest_stored() {
    // The first seed whose organization has a private repository (about one in five is).
    let mut r = rig(config(Scenario::SamlEnforced)).await;
    for seed in 4.. {
        if r.sim
            .with_world(|w| w.org_repos().iter().any(|r| r.private))
        {
            break;
        }
        r = rig(config(Scenario::SamlEnforced).with_seed(seed)).await;
    }
    let (id, summary) = r.sync().await;
    assert!(summary.stages_failed.is_empty(), "{summary:?}");
    assert_eq!(r.rows().await["repositories"], REPOS as u64);
    let saml: Vec<&RefusedField> = summary
        .refused
        .iter()
        .filter(|r| r.kind == "FORBIDDEN")
        .collect();
    assert!(!saml.is_empty(), "{:?}", summary.refused);
    for r in &saml {
        assert!(
            r.message
                .starts_with("Resource protected by organization SAML enforcement."),
            "{r:?}"
        );
        assert!(r.path.starts_with("repository."), "{r:?}");
    }
    // Each GraphQL stage that reads repositories' connections met it, once each.
    let stages: Vec<&str> = saml.iter().map(|r| r.stage.as_str()).collect();
    for stage in [
        "repositories",
        "projects",
        "issue_comments",
        "pull_requests",
        "branches",
    ] {
        assert_eq!(
            stages.iter().filter(|s| **s == stage).count(),
            1,
            "{stage}: {stages:?}"
        );
    }
    assert_eq!(r.stored_summary(id).await.refused, summary.refused);
    // A refused repository is done for this run but not collected: no watermark, so a run
    // with access later asks for everything.
    let repos: Vec<(i64, bool)> = r.sim.with_world(|w| {
        w.org_repos()
            .iter()
            .map(|r| (r.id as i64, r.private))
            .collect()
    });
    for (github_id, private) in repos {
        for mark in [
            Watermark::Issues,
            Watermark::IssueComments,
            Watermark::PullRequests,
        ] {
            let at = r.store.watermark(github_id, mark).await.expect("read");
            assert_eq!(at.is_none(), private, "{github_id} {mark:?}");
        }
    }
}

#[tokio::test]
async fn repositories_gone_since_listed_are_recorded_as_not_found() {
    let r = rig(config(Scenario::RepositoriesGone)).await;
    let (_, summary) = r.sync().await;
    assert!(summary.stages_failed.is_empty(), "{summary:?}");
    assert_eq!(r.rows().await["repositories"], REPOS as u64);
    let gone: Vec<(&str, &str, &str)> = refused(&summary)
        .into_iter()
        .filter(|(_, _, kind)| *kind == "NOT_FOUND")
        .collect();
    assert!(
        gone.iter()
            .any(|(stage, path, _)| *stage == "repositories" && *path == "repository"),
        "{gone:?}"
    );
    let message = &summary
        .refused
        .iter()
        .find(|r| r.kind == "NOT_FOUND")
        .expect("one")
        .message;
    assert!(
        message.starts_with("Could not resolve to a Repository with the name 'acme/"),
        "{message}"
    );
}

#[tokio::test]
async fn resource_limits_shrink_the_page_and_the_rows_are_the_same() {
    let limited = rig(config(Scenario::ResourceLimited)).await;
    let limit = limited.sim.config().resource_limit_nodes;
    let (_, summary) = limited.sync().await;
    assert!(summary.stages_failed.is_empty(), "{summary:?}");
    assert!(summary.refused.is_empty(), "{:?}", summary.refused);
    let baseline = rig(config(Scenario::Default)).await;
    baseline.sync().await;
    assert_eq!(limited.rows().await, baseline.rows().await);

    // Pages over the limit were asked, refused, and asked again smaller.
    let asked = limited.sim.graphql_queries();
    let over: Vec<&headroom_sim::GraphqlQuery> =
        asked.iter().filter(|q| q.node_count > limit).collect();
    assert!(!over.is_empty(), "the first pages are over {limit} nodes");
    for stage in ["issue_comments", "pull_requests", "projects"] {
        let of = |q: &&headroom_sim::GraphqlQuery| {
            q.url_query.as_deref() == Some(&format!("stage={stage}")[..])
        };
        assert!(
            asked.iter().filter(of).any(|q| q.node_count > limit),
            "{stage} asked a page over the limit"
        );
        assert!(
            asked
                .iter()
                .filter(of)
                .any(|q| q.node_count <= limit && q.node_count > 100),
            "{stage} asked smaller pages of the same connection"
        );
    }
    let baseline_queries = baseline.sim.graphql_queries().len();
    assert!(
        asked.len() > baseline_queries,
        "{} vs {baseline_queries}",
        asked.len()
    );
}
