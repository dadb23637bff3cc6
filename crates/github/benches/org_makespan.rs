//! Organization-sync makespan against the lower bound the quota allows for the same work.
//!
//! The simulator serves a 125-repository organization with short windows (60 s) and a REST
//! limit far below the work, so the run must cross several REST windows. The bound, per
//! bucket, for W units of work with a limit L per window of length T and a secondary
//! (points-per-minute) rate R:
//!
//! ```text
//! n = ceil(W / L)             windows that must at least be opened
//! r = W − (n − 1) · L         the remainder, spent in the last window
//! bound = (n − 1) · T + (ceil(r / P) − 1) · 60 s
//! ```
//!
//! where P is the secondary limit per minute (REST 900 points, GraphQL 2,000): the first
//! n − 1 windows cannot end sooner than their resets, and the remainder cannot go faster than
//! P a minute (the secondary limit is a count per minute, so up to P go at once). That is the
//! primary limit's bound when a window's limit fits its minutes (L ≤ P · T / 60). Whatever L,
//! the secondary limit alone needs (ceil(W / P) − 1) · 60 s; the bucket's bound is the larger
//! of the two (with 5,000 per 60 s window, the secondary one binds). The makespan's bound is
//! the larger of the two buckets'.
//! No schedule that respects the quota can finish sooner; the runner also keeps the grant
//! rule's reserve (cost × (1 + ceiling) units) in every window.
//!
//! The run is what `headroom sync org` runs: the default runner configuration (deferral
//! budgets of 10 deferrals and 2 h per episode, 0–5 s wake jitter, pacing waits of up to 5 s
//! taken in-process), the default in-flight ceiling and points-per-minute limiters. Only the
//! provider is scaled (60 s windows, a REST limit below the work), and the reset margin is the
//! skew this setup really has: the simulator shares the runner's clock, and `x-ratelimit-reset`
//! is whole seconds, so one second. Hibernations are slept through on a paused clock; in-process
//! pacing runs on the real one.
//!
//! Run with `cargo bench -p headroom-github --bench org_makespan`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::print_stdout)]

use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::GovernorConfig;
use headroom_github::org;
use headroom_http::Credential;
use headroom_sim::{SimConfig, Simulator, TokenSpec};
use headroom_store::NewSyncRun;
use headroom_sync::{RunOutcome, Runner, RunnerConfig};

#[path = "../tests/org_rig/mod.rs"]
mod org_rig;
use org_rig::API;

const TOKEN: &str = "ghp_benchtoken000000000000000000000001";
const WINDOW_SECS: u64 = 60;
const REST_PER_MINUTE: u64 = 900;
const GRAPHQL_PER_MINUTE: u64 = 2000;
/// The skew between the simulator's clock and the runner's (none: it is one clock), rounded up
/// to the resolution of `x-ratelimit-reset` (whole seconds).
const RESET_MARGIN: SignedDuration = SignedDuration::from_secs(1);

fn bound(work: u64, limit: u64, window_secs: f64, per_minute: u64) -> f64 {
    if work == 0 {
        return 0.0;
    }
    let n = work.div_ceil(limit);
    let rest = work - (n - 1) * limit;
    let primary = (n - 1) as f64 * window_secs + (rest.div_ceil(per_minute) - 1) as f64 * 60.0;
    let secondary = (work.div_ceil(per_minute) - 1) as f64 * 60.0;
    primary.max(secondary)
}

async fn once(repos: usize, core_limit: u64) -> (f64, f64, u64, u64, usize) {
    let start = Timestamp::from_second(1_800_000_000).expect("valid");
    let clock = TokioClock::anchored_at(start);
    let mut config = SimConfig::default()
        .with_org("acme", repos)
        .with_token(TokenSpec::user(TOKEN, "alice"))
        .with_seed(3)
        .with_window(SignedDuration::from_secs(WINDOW_SECS as i64));
    config.core_limit = core_limit;
    config.public_base_url = API.to_owned();
    let sim = Simulator::new(config, clock).expect("simulator");
    let (client, _) = org_rig::client(
        &sim,
        clock,
        TOKEN,
        "alice",
        GovernorConfig {
            margin: RESET_MARGIN,
            ..GovernorConfig::default()
        },
    )
    .await;
    let (store, _dir) = org_rig::sqlite_store().await;
    // What a user runs: nothing here is tuned for the benchmark.
    let runner_config = RunnerConfig::default();
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
        let core_log: Vec<_> = log
            .iter()
            .filter(|e| e.bucket.as_deref() == Some("core") && e.cost > 0)
            .collect();
        for (i, e) in core_log.iter().enumerate() {
            if i % 100 == 0 || e.remaining == Some(0) || i + 1 == core_log.len() {
                println!("{i} {} remaining {:?}", e.time, e.remaining);
            }
        }
        println!("start {began}, end {}", clock.now());
    }
    let core: u64 = log
        .iter()
        .filter(|e| e.bucket.as_deref() == Some("core") && e.cost > 0)
        .count() as u64;
    let points: u64 = log
        .iter()
        .filter(|e| e.bucket.as_deref() == Some("graphql"))
        .map(|e| e.cost)
        .sum();
    let lower = bound(core, core_limit, WINDOW_SECS as f64, REST_PER_MINUTE).max(bound(
        points,
        5_000,
        WINDOW_SECS as f64,
        GRAPHQL_PER_MINUTE,
    ));
    (makespan, lower, core, points, sim.count_status(403))
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let repos = std::env::var("REPOS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(125);
    // REST windows of 500 (fifteen for the 125-repository organization); then windows of
    // 5,000 where the per-minute secondary limit binds.
    for core_limit in [500, 5_000] {
        let (makespan, lower, core, points, forbidden) = runtime.block_on(once(repos, core_limit));
        println!(
            "org_makespan/{repos}_repos/core_limit_{core_limit}: makespan {makespan:.1} s, lower bound {lower:.1} s, \
             ratio {:.3} (REST {core} requests, {core_limit} per {WINDOW_SECS} s window, \
             {REST_PER_MINUTE}/min; GraphQL {points} points), 403 responses: {forbidden}",
            makespan / lower.max(1.0)
        );
    }
}
