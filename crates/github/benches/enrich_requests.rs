//! Enrichment cost: requests per entity on a generated backlog.
//!
//! Builds the simulator's `live_feed` entity pools at benchmark size (by default 3,000 actors
//! and 5,000 repositories), stores one push per pool slot so every actor and repository is in
//! the backlog, then runs `headroom run`'s own loop (`feed::service`, at its default cadence)
//! under tokio's paused clock until no entity is pending. Everything runs
//! on the unauthenticated limits (search 10/min with pacing 6 s and a reserve of 2; core
//! 60/h with the 40/h detail lane). Prints, per miss profile, the requests the simulator
//! answered for enrichment (search batches, detail fallbacks, redirect hops) divided by the
//! number of entities, and the simulated time it took.
//!
//! `cargo bench -p headroom-github --bench enrich_requests` (a plain binary; the figure is a
//! count, so `--profile dev` gives the same numbers faster). Sizes:
//! `HEADROOM_BENCH_ACTORS`, `HEADROOM_BENCH_REPOSITORIES`.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::future::Future;
use std::sync::Arc;

use headroom_core::Governor;
use headroom_core::clock::{Clock, SignedDuration, SystemClock, Timestamp, TokioClock};
use headroom_core::governor::GovernorConfig;
use headroom_github::feed::enrich::{EnrichSettings, Enricher};
use headroom_github::feed::poll::{PollSettings, Poller};
use headroom_github::feed::service::{FeedService, ServiceHooks, ServiceSettings, StepReport};
use headroom_github::feed::{IngestContext, ingest_page};
use headroom_http::transport::SimTransport;
use headroom_http::{Client, ClientParts, UrlPolicy};
use headroom_sim::world::World;
use headroom_sim::{FeedPool, Scenario, SimConfig, Simulator};
use headroom_store::EventOrigin;
use headroom_store::feed_state::{EntityKind, FeedState, open_feed};
use serde_json::json;

const API: &str = "http://127.0.0.1:7000";

struct Profile {
    name: &'static str,
    deleted_user_every: u64,
    deleted_repo_every: u64,
    renamed_repo_every: u64,
}

struct Outcome {
    entities: u64,
    search: u64,
    detail: u64,
    hops: u64,
    terminal: u64,
    simulated: SignedDuration,
    wall_secs: f64,
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One push per pool slot: actor `i % users`, repository `i % repos`; a renamed repository's
/// events carry its old name, as GitHub's do.
fn backlog(world: &World, at: Timestamp) -> Vec<serde_json::Value> {
    let n = world.feed_users.len().max(world.feed_repos.len());
    (0..n)
        .map(|i| {
            let user = &world.users[world.feed_users[i % world.feed_users.len()]];
            let repo = &world.repos[world.feed_repos[i % world.feed_repos.len()]];
            let name = repo
                .previous_names
                .first()
                .cloned()
                .unwrap_or_else(|| repo.full_name());
            json!({
                "id": (70_000_000_000u64 + i as u64).to_string(),
                "type": "PushEvent",
                "actor": {"id": user.id, "login": user.login, "display_login": user.login,
                    "gravatar_id": "", "url": format!("{API}/users/{}", user.login),
                    "avatar_url": format!("https://avatars.githubusercontent.com/u/{}?", user.id)},
                "repo": {"id": repo.id, "name": name, "url": format!("{API}/repos/{name}")},
                "payload": {"repository_id": repo.id, "push_id": 40_000_000_000u64 + i as u64,
                    "ref": "refs/heads/main",
                    "head": format!("{:040x}", i as u64 + 1),
                    "before": format!("{:040x}", i as u64 + 7)},
                "public": true,
                "created_at": at.to_string(),
            })
        })
        .collect()
}

/// Sums the cycles' reports and stops the service once no entity is pending; sleeps on
/// tokio's paused clock.
struct Drain {
    state: Arc<dyn FeedState>,
    clock: TokioClock,
    start: Timestamp,
    search: u64,
    detail: u64,
    requests: u64,
    terminal: u64,
}

impl ServiceHooks for Drain {
    fn after_step(&mut self, step: &StepReport) -> impl Future<Output = bool> + Send {
        assert!(!step.failed, "a service step failed (see the log)");
        if let Some(report) = &step.enrichment {
            self.search += report.search_batches;
            self.detail += report.detail_requests;
            self.requests += report.requests;
            self.terminal += report.terminal;
        }
        let state = self.state.clone();
        let elapsed = self.clock.now().duration_since(self.start);
        async move {
            let mut left = 0;
            for kind in [EntityKind::Actor, EntityKind::Repository] {
                let c = state.enrichment_counts(kind).await.expect("counts");
                left += c.pending + c.retryable_failure;
            }
            assert!(
                elapsed < SignedDuration::from_hours(72),
                "{left} entities still pending after 72 simulated hours"
            );
            left > 0
        }
    }

    async fn sleep(&mut self, clock: TokioClock, by: SignedDuration) {
        // Paused only while sleeping: SQLite's pool timers misfire under a clock that stays
        // paused while its worker thread runs a query.
        tokio::time::pause();
        clock.sleep(by).await;
        tokio::time::resume();
    }
}

async fn run(profile: &Profile, users: u64, repos: u64) -> Outcome {
    let wall = SystemClock.now();
    let start = Timestamp::from_second(1_800_000_000).expect("valid");
    let clock = TokioClock::anchored_at(start);
    let mut config = SimConfig::default().with_scenario(Scenario::LiveFeed);
    config.public_base_url = API.to_owned();
    config.feed_events = Some(Arc::new(Vec::new()));
    config.log_capacity = 10_000_000;
    config.feed_pool = FeedPool {
        users,
        repos,
        deleted_user_every: profile.deleted_user_every,
        deleted_repo_every: profile.deleted_repo_every,
        renamed_repo_every: profile.renamed_repo_every,
    };
    let world = World::generate(&config);
    let sim = Simulator::new(config, clock).expect("simulator");
    let governor = Governor::in_memory(
        GovernorConfig {
            ceiling: 1,
            ..GovernorConfig::default()
        },
        Arc::new(clock),
    )
    .expect("governor");
    let parts = ClientParts::new(
        UrlPolicy::for_api_url(API).expect("loopback API"),
        governor,
        Arc::new(SimTransport::new(sim.clone())),
        clock,
    );
    let dir = tempfile::tempdir().expect("tmp");
    let (store, state) = open_feed(dir.path().join("h.db").to_str().expect("utf-8"))
        .await
        .expect("open");
    let ctx = IngestContext {
        origin: EventOrigin::Feed,
        run_id: "bench".into(),
        ingestion_run_id: None,
    };
    for page in backlog(&world, start).chunks(100) {
        ingest_page(store.as_ref(), page.to_vec(), &ctx, clock.now())
            .await
            .expect("ingest");
    }
    let poller = Poller {
        store,
        state: state.clone(),
        client: Client::new(parts),
        credential: None,
        clock,
        settings: PollSettings::default(),
    };
    let service = FeedService::new(
        Enricher::new(poller, EnrichSettings::default()),
        ServiceSettings {
            tick: SignedDuration::from_secs(60),
            reconcile_every: SignedDuration::from_secs(60),
            ticks: None,
        },
    );
    let mut entities = 0;
    for kind in [EntityKind::Actor, EntityKind::Repository] {
        let c = state.enrichment_counts(kind).await.expect("counts");
        entities += c.pending + c.complete + c.retryable_failure + c.permanent_failure;
    }
    let mut drain = Drain {
        state,
        clock,
        start,
        search: 0,
        detail: 0,
        requests: 0,
        terminal: 0,
    };
    service.run(&mut drain, std::future::pending()).await;
    // Cross-check against what the simulator answered (polls excluded).
    let answered = sim
        .request_log()
        .iter()
        .filter(|e| !e.path.starts_with("/events"))
        .count() as u64;
    assert_eq!(
        answered, drain.requests,
        "the report and the simulator agree"
    );
    Outcome {
        entities,
        search: drain.search,
        detail: drain.detail,
        hops: drain.requests - drain.search - drain.detail,
        terminal: drain.terminal,
        simulated: clock.now().duration_since(start),
        wall_secs: SystemClock.now().duration_since(wall).as_secs_f64(),
    }
}

fn main() {
    let users = env_u64("HEADROOM_BENCH_ACTORS", 3_000);
    let repos = env_u64("HEADROOM_BENCH_REPOSITORIES", 5_000);
    let profiles = [
        Profile {
            name: "1% of actors gone; 1% of repositories gone, 1% renamed (1.6% missed)",
            deleted_user_every: 100,
            deleted_repo_every: 100,
            renamed_repo_every: 100,
        },
        Profile {
            name: "2% of actors and of repositories gone, none renamed (2.0% missed)",
            deleted_user_every: 50,
            deleted_repo_every: 50,
            renamed_repo_every: 0,
        },
        Profile {
            name: "nothing missed (Search answers every entity)",
            deleted_user_every: 0,
            deleted_repo_every: 0,
            renamed_repo_every: 0,
        },
        Profile {
            name: "live_feed's default pool rates (5.3% / 5.9% gone, 7.7% renamed)",
            deleted_user_every: 19,
            deleted_repo_every: 17,
            renamed_repo_every: 13,
        },
    ];
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("enrichment requests per entity: {users} actors + {repos} repositories");
    for p in &profiles {
        let o = runtime.block_on(run(p, users, repos));
        let requests = o.search + o.detail + o.hops;
        #[allow(clippy::cast_precision_loss)]
        let per_entity = requests as f64 / o.entities as f64;
        println!(
            "  {:<74} {:>6} entities  {:>5} search + {:>4} detail + {:>3} hops = {:>5} requests  \
             {per_entity:.4}/entity  {:>3} terminal  {:>5.1} h simulated  {:.1} s wall",
            p.name,
            o.entities,
            o.search,
            o.detail,
            o.hops,
            requests,
            o.terminal,
            o.simulated.as_secs_f64() / 3600.0,
            o.wall_secs
        );
    }
}
