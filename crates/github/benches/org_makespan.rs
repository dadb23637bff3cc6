//! Organization-sync makespan against the lower bound that the quota and the latency allow for
//! the same work.
//!
//! The run is what `headroom sync org` runs: the default runner configuration (deferral
//! budgets of 10 deferrals and 2 h per episode, wake jitter when several runs wake together,
//! pacing waits of up to 5 s taken in place), the default in-flight ceiling (10) and
//! points-per-minute limiters, and the governor the binary builds on an SQLite file (shared
//! through the database, so its cost per request is in the figures). Only the provider is
//! scaled, and the reset margin is the skew this setup really has: the simulator shares the
//! runner's clock, and `x-ratelimit-reset` is whole seconds, so one second. Hibernations are
//! slept through on a paused clock; everything else — the simulator's latency included — runs
//! on the real one.
//!
//! **Quota bound**, per bucket, for W units of work with a limit L per window of length T and
//! a secondary (points-per-minute) rate P (REST 900, GraphQL 2,000):
//!
//! ```text
//! n = ceil(W / L)             windows that must at least be opened
//! r = W − (n − 1) · L         the remainder, spent in the last window
//! primary   = (n − 1) · T + (ceil(r / P) − 1) · 60 s
//! secondary = (ceil(W / P) − 1) · 60 s
//! quota bound = max(primary, secondary), the larger of the two buckets'
//! ```
//!
//! **Latency bound**: the larger of Σ(requests × latency) / ceiling (no schedule keeps more
//! than `ceiling` requests in flight) and the critical path. The critical path counted here is a
//! lower bound of the true one: the pages of the organization's repository list (a cursor,
//! 100 repositories a page), then a repository's details, its first page of pull requests
//! (GraphQL) and one commit's files (REST). The overall bound is the larger of the quota and
//! latency bounds; no schedule that respects the quota and waits for each answer finishes
//! sooner.
//!
//! Cases (`CASES=a,b` selects; `REPOS=N` replaces the organization sizes):
//! - `windows_0ms`, `windows_latency`: 125 repositories, REST limit 500 per 60 s window
//!   (fifteen windows), at 0 ms and at REST 150 ms / GraphQL 800 ms;
//! - `secondary_0ms`, `secondary_latency`: 125 repositories, 5,000 per window, where the
//!   900-a-minute secondary limit binds;
//! - `latency_bound`, `latency_bound_0ms`: 15 repositories in one window, under the
//!   secondary limit, at REST 150 ms / GraphQL 800 ms (latency binds) and at 0 ms.
//!
//! Targets: latency-bound makespan ≤ 1.1× its bound, with on average ≥ 90 % of the ceiling in
//! flight until the last ceiling's worth of requests; quota-bound ≤ 1.05×; zero 403s and zero
//! 429s at the simulator (so the secondary limit never tripped).
//!
//! Run with `cargo bench -p headroom-github --bench org_makespan`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::print_stdout)]

use headroom_core::Governor;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::GovernorConfig;
use headroom_github::org;
use headroom_http::Credential;
use headroom_sim::{LogEntry, Resource, SimConfig, Simulator, TokenSpec};
use headroom_store::{NewSyncRun, SharedGovernorOptions};
use headroom_sync::{RunOutcome, Runner, RunnerConfig};

#[path = "../tests/org_rig/mod.rs"]
mod org_rig;
use org_rig::API;

const TOKEN: &str = "ghp_benchtoken000000000000000000000001";
const WINDOW_SECS: u64 = 60;
const GRAPHQL_LIMIT: u64 = 5_000;
const REST_PER_MINUTE: u64 = 900;
const GRAPHQL_PER_MINUTE: u64 = 2000;
/// The skew between the simulator's clock and the runner's (none: it is one clock), rounded up
/// to the resolution of `x-ratelimit-reset` (whole seconds).
const RESET_MARGIN: SignedDuration = SignedDuration::from_secs(1);

/// One benchmark case.
#[derive(Debug, Clone, Copy)]
struct Case {
    name: &'static str,
    repos: usize,
    core_limit: u64,
    /// REST and GraphQL latency in milliseconds.
    latency_ms: (u64, u64),
    /// The bound the target is set against.
    target: f64,
}

const REALISTIC: (u64, u64) = (150, 800);

const CASES: [Case; 6] = [
    Case {
        name: "windows_0ms",
        repos: 125,
        core_limit: 500,
        latency_ms: (0, 0),
        target: 1.05,
    },
    Case {
        name: "secondary_0ms",
        repos: 125,
        core_limit: 5_000,
        latency_ms: (0, 0),
        target: 1.05,
    },
    Case {
        name: "windows_latency",
        repos: 125,
        core_limit: 500,
        latency_ms: REALISTIC,
        target: 1.05,
    },
    Case {
        name: "secondary_latency",
        repos: 125,
        core_limit: 5_000,
        latency_ms: REALISTIC,
        target: 1.05,
    },
    Case {
        name: "latency_bound",
        repos: 15,
        core_limit: 5_000,
        latency_ms: REALISTIC,
        target: 1.1,
    },
    Case {
        name: "latency_bound_0ms",
        repos: 15,
        core_limit: 5_000,
        latency_ms: (0, 0),
        target: 1.3,
    },
];

fn quota_bound(work: u64, limit: u64, window_secs: f64, per_minute: u64) -> f64 {
    if work == 0 {
        return 0.0;
    }
    let n = work.div_ceil(limit);
    let rest = work - (n - 1) * limit;
    let primary = (n - 1) as f64 * window_secs + (rest.div_ceil(per_minute) - 1) as f64 * 60.0;
    let secondary = (work.div_ceil(per_minute) - 1) as f64 * 60.0;
    primary.max(secondary)
}

/// What one run did, from the simulator's log.
struct Measured {
    makespan: f64,
    rest_requests: u64,
    graphql_requests: u64,
    graphql_points: u64,
    quota_bound: f64,
    latency_bound: f64,
    forbidden: usize,
    too_many: usize,
    /// The most requests in flight at once, and the share of the time with requests in
    /// flight that had at least 8.
    peak_in_flight: u32,
    share_at_8: Option<f64>,
    /// [`headroom_sim::flight::Flight::average`].
    average_in_flight: Option<f64>,
}

fn is_graphql(e: &LogEntry) -> bool {
    e.bucket.as_deref() == Some("graphql")
}

/// With `BENCH_DEBUG` set: each second's requests answered, by stage, and the in-flight
/// count the simulator saw at their entry.
fn debug_timeline(log: &[LogEntry], began: Timestamp) {
    let mut by_second: std::collections::BTreeMap<i64, Vec<String>> = Default::default();
    for e in log {
        let Ok(t) = e.time.parse::<Timestamp>() else {
            continue;
        };
        let stage = e
            .path
            .strip_prefix("/graphql?stage=")
            .map_or_else(|| "rest".to_owned(), str::to_owned);
        by_second
            .entry(t.duration_since(began).as_secs())
            .or_default()
            .push(format!("{stage}:{}", e.in_flight));
    }
    for (second, entries) in by_second {
        println!("{second:>5} s {:>3} {}", entries.len(), entries.join(" "));
    }
}

async fn once(case: Case) -> Measured {
    let start = Timestamp::from_second(1_800_000_000).expect("valid");
    let clock = TokioClock::anchored_at(start);
    let mut config = SimConfig::default()
        .with_org("acme", case.repos)
        .with_token(TokenSpec::user(TOKEN, "alice"))
        .with_seed(3)
        .with_window(SignedDuration::from_secs(WINDOW_SECS as i64));
    config.core_limit = case.core_limit;
    config.public_base_url = API.to_owned();
    let ms = |v: u64| SignedDuration::from_millis(v as i64);
    config.faults.latency = ms(case.latency_ms.0);
    config
        .faults
        .bucket_latency
        .insert(Resource::Graphql, ms(case.latency_ms.1));
    let sim = Simulator::new(config, clock).expect("simulator");
    let (store, _dir) = org_rig::sqlite_store().await;
    // The governor the binary builds on an SQLite file: shared through the database.
    let governor_config = GovernorConfig {
        margin: RESET_MARGIN,
        ..GovernorConfig::default()
    };
    let state = store
        .quota_state(governor_config.clone(), SharedGovernorOptions::default())
        .expect("governor state");
    let governor = Governor::new(state, std::sync::Arc::new(clock));
    let client = org_rig::client_over(&sim, clock, TOKEN, "alice", governor).await;
    // What a user runs: nothing here is tuned for the benchmark.
    let runner_config = RunnerConfig::default();
    let ceiling = f64::from(runner_config.in_flight.min(governor_config.ceiling));
    let runner = Runner::new(
        org::stages(),
        Some(org::REPOSITORY_SOURCE),
        store.clone(),
        client,
        Some(Credential::new(TOKEN)),
        clock,
        runner_config,
    )
    .expect("graph");
    let id = store
        .create_sync_run(&NewSyncRun {
            credential: None,
            kind: "org".into(),
            target: "acme".into(),
            key: headroom_core::QuotaKey::user("127.0.0.1", "alice"),
            requested_stages: None,
            created_at: clock.now(),
        })
        .await
        .expect("run")
        .id;
    let began = clock.now();
    loop {
        match runner.run(id).await.expect("run") {
            RunOutcome::Done { .. } => break,
            RunOutcome::Hibernating { until, .. } => {
                tokio::time::pause();
                clock.sleep_until(until).await;
                tokio::time::resume();
            }
            RunOutcome::Failed { reason, .. } => {
                panic!("failed in the production configuration: {reason}")
            }
        }
    }
    let makespan = clock.now().duration_since(began).as_secs_f64();
    let log = sim.request_log();
    if std::env::var_os("BENCH_DEBUG").is_some() {
        debug_timeline(&log, began);
    }
    let rest: Vec<&LogEntry> = log
        .iter()
        .filter(|e| e.bucket.as_deref() == Some("core") && e.cost > 0)
        .collect();
    let graphql: Vec<&LogEntry> = log.iter().filter(|e| is_graphql(e)).collect();
    let points: u64 = graphql.iter().map(|e| e.cost).sum();
    let quota = quota_bound(
        rest.len() as u64,
        case.core_limit,
        WINDOW_SECS as f64,
        REST_PER_MINUTE,
    )
    .max(quota_bound(
        points,
        GRAPHQL_LIMIT,
        WINDOW_SECS as f64,
        GRAPHQL_PER_MINUTE,
    ));
    let (rest_s, graphql_s) = (
        case.latency_ms.0 as f64 / 1000.0,
        case.latency_ms.1 as f64 / 1000.0,
    );
    let spread = (rest.len() as f64 * rest_s + graphql.len() as f64 * graphql_s) / ceiling;
    // At 0 ms requests take no simulated time: nothing to measure.
    let flight = (case.latency_ms != (0, 0))
        .then(|| headroom_sim::flight::spans(&log))
        .flatten()
        .map(|spans| headroom_sim::flight::flight(&spans, ceiling as u32));
    // The repository list's pages (100 a page) follow each other; then one repository's
    // details, its first page of pull requests, and one commit's files.
    let list_pages = case.repos.div_ceil(100).max(1) as f64;
    let critical = (list_pages + 2.0) * graphql_s + rest_s;
    Measured {
        makespan,
        rest_requests: rest.len() as u64,
        graphql_requests: graphql.len() as u64,
        graphql_points: points,
        quota_bound: quota,
        latency_bound: spread.max(critical),
        forbidden: sim.count_status(403),
        too_many: sim.count_status(429),
        peak_in_flight: log.iter().map(|e| e.in_flight).max().unwrap_or(0),
        share_at_8: flight.and_then(|f| f.near_full),
        average_in_flight: flight.and_then(|f| f.average),
    }
}

fn main() {
    // Current-thread: the hibernations are slept through by pausing its clock.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let repos: Option<usize> = std::env::var("REPOS").ok().and_then(|v| v.parse().ok());
    let chosen: Option<Vec<String>> = std::env::var("CASES")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_owned()).collect());
    for case in CASES {
        if chosen
            .as_ref()
            .is_some_and(|c| !c.iter().any(|n| n == case.name))
        {
            continue;
        }
        let case = Case {
            repos: repos.unwrap_or(case.repos),
            ..case
        };
        let m = runtime.block_on(once(case));
        let bound = m.quota_bound.max(m.latency_bound);
        let binds = if m.latency_bound > m.quota_bound {
            "latency"
        } else {
            "quota"
        };
        let ratio = m.makespan / bound.max(1.0);
        let clean = m.forbidden == 0 && m.too_many == 0;
        // With no latency and a quota that does not bind there is no bound to be near: the
        // makespan is the runner's own time.
        let verdict = if bound < 1.0 {
            if clean {
                "(no bound: nothing binds)"
            } else {
                "NOT met (403/429)"
            }
        } else if ratio <= case.target && clean {
            "met"
        } else {
            "NOT met"
        };
        println!(
            "org_makespan/{name}: {repos} repos, REST {rest_ms} ms / GraphQL {gql_ms} ms, core {core}/window: \
             makespan {makespan:.1} s; bound {bound:.1} s ({binds}: quota {quota:.1} s, latency {latency:.1} s); \
             ratio {ratio:.3}, target {target} {verdict}; REST {rest} requests, GraphQL {gql} requests / {points} points; \
             peak in flight {peak}{share}{average}; 403: {forbidden}, 429: {too_many}",
            name = case.name,
            repos = case.repos,
            rest_ms = case.latency_ms.0,
            gql_ms = case.latency_ms.1,
            core = case.core_limit,
            makespan = m.makespan,
            quota = m.quota_bound,
            latency = m.latency_bound,
            target = case.target,
            rest = m.rest_requests,
            gql = m.graphql_requests,
            points = m.graphql_points,
            peak = m.peak_in_flight,
            share = m
                .share_at_8
                .map(|s| format!(", ≥8 in flight {:.0} % of the busy time", s * 100.0))
                .unwrap_or_default(),
            average = m
                .average_in_flight
                .map(|a| format!(
                    ", average in flight {:.0} % of the ceiling (target ≥ 90 %)",
                    a * 100.0
                ))
                .unwrap_or_default(),
            forbidden = m.forbidden,
            too_many = m.too_many,
        );
    }
}
