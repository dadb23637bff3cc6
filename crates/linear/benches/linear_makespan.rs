//! Linear workspace-sync makespan against the lower bound that the complexity bucket and the
//! latency allow for the same work: `gitlab_makespan`'s method, for `headroom sync linear`
//! (every team).
//!
//! The run is what `sync linear` runs: the eleven Linear stages on the shared runner with the
//! default runner configuration, Linear's default governor (`GovernorConfig::for_provider`)
//! on an SQLite file, and a client whose provider is Linear, sending the API key as
//! `Authorization`, as `crates/cli/src/wiring.rs` builds it. Only the provider is scaled (the
//! complexity bucket, its period, the latency), and the reset margin is 1 s. Hibernations are
//! slept through on a paused clock; everything else, the simulator's latency and the waits
//! the runner makes in process (up to its 5 s `inline_wait`) included, runs on the real one.
//!
//! **Quota bound.** Linear's budgets are leaky buckets per identity: B complexity points (and
//! R requests) that refill continuously at B / period (R / period), full when the run
//! starts. A run that spends S points, the sum of the simulator's logged costs, cannot end
//! before the bucket has refilled what it spent beyond its content at the start:
//!
//! ```text
//! complexity bound = max(0, S − B) / (B / period)
//! request bound    = max(0, N − R) / (R / period)
//! quota bound      = the larger
//! ```
//!
//! (the last request's answer taken as instant). It holds whatever the governor reserves; the
//! governor's own reserve, if any, shows in the ratio.
//!
//! **Latency bound**: the larger of Σ(requests × latency) / C (C the in-flight ceiling) and
//! the critical path: the workspace's request (`viewer`, `organization`), then the longest
//! connection's pages one after another (each page needs the cursor of the one before), the
//! issues' followed by one owed history page when any issue owed one. The stages' root
//! fields are distinct, so the pages of one root field are one stage's chain.
//!
//! Cases (`CASES=a,b` selects):
//! - `quota_complexity`: 3 teams of 60 issues, a bucket of 4,000 points refilling over 10 s
//!   (400 a second), 0 ms: the work (about 18,000 points) is several buckets; target ≤ 1.05,
//!   zero `RATELIMITED`. The bucket must hold the dearest page (an issues page costs
//!   3,561 points here): a smaller one can never grant it, and the run never ends.
//! - `latency_bound`: 3 teams of 60 issues, Linear's API-key limits (3,000,000 points and
//!   2,500 requests an hour), 150 ms a response; target ≤ 1.3.
//!
//! `BENCH_DEBUG=1` prints each second's answers by root field and the bucket's remaining.
//!
//! Run with `cargo bench -p headroom-linear --bench linear_makespan`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::print_stdout)]

use std::collections::BTreeMap;
use std::sync::Arc;

use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::GovernorConfig;
use headroom_core::signal::Provider;
use headroom_core::{Governor, QuotaKey, Subject};
use headroom_http::sinks::{CredentialRegistry, MemoryCredentials};
use headroom_http::transport::SimTransport;
use headroom_http::{Client, ClientParts, Credential, UrlPolicy};
use headroom_linear::sync::{self, Selection};
use headroom_sim::{LinearLimits, LinearWorkspaceSpec, LogEntry, SimConfig, Simulator, TokenSpec};
use headroom_store::{NewSyncRun, SharedGovernorOptions, SqliteStore, Store};
use headroom_sync::{RunOutcome, Runner, RunnerConfig};

const TOKEN: &str = "lin_api_benchtoken00000000001";
const LOGIN: &str = "alice";
const API: &str = "http://127.0.0.1:7000/linear";
const HOST: &str = "127.0.0.1";
/// The skew between the simulator's clock and the runner's (none: it is one clock), rounded up
/// to a whole second.
const RESET_MARGIN: SignedDuration = SignedDuration::from_secs(1);

/// One benchmark case.
#[derive(Debug, Clone, Copy)]
struct Case {
    name: &'static str,
    teams: usize,
    issues: usize,
    /// The API key's complexity points and requests a period, and the period in seconds.
    complexity: u64,
    requests: u64,
    period_secs: i64,
    latency_ms: u64,
    target: f64,
}

const CASES: [Case; 2] = [
    Case {
        name: "quota_complexity",
        teams: 3,
        issues: 60,
        complexity: 4_000,
        requests: 100_000,
        period_secs: 10,
        latency_ms: 0,
        target: 1.05,
    },
    Case {
        name: "latency_bound",
        teams: 3,
        issues: 60,
        complexity: 3_000_000,
        requests: 2_500,
        period_secs: 3_600,
        latency_ms: 150,
        target: 1.3,
    },
];

/// The operation's root fields a logged request asked (`issues`; `issue` for a history page).
fn root(e: &LogEntry) -> &str {
    e.path.split("#root=").nth(1).unwrap_or("")
}

/// The longest chain of dependent requests the run made (see the module's doc), in requests.
fn critical_requests(log: &[LogEntry]) -> u64 {
    let mut pages: BTreeMap<&str, u64> = BTreeMap::new();
    for e in log {
        *pages.entry(root(e)).or_default() += 1;
    }
    let workspace = pages
        .iter()
        .filter(|(r, _)| r.contains("viewer") || r.contains("organization"))
        .map(|(_, n)| *n)
        .sum::<u64>();
    let owed_history = u64::from(pages.contains_key("issue"));
    let longest = pages
        .iter()
        .filter(|(r, _)| !r.contains("viewer") && !r.contains("organization") && **r != "issue")
        .map(|(r, n)| if *r == "issues" { n + owed_history } else { *n })
        .max()
        .unwrap_or(0);
    workspace + longest
}

/// One second of the timeline: answers by root field, the lowest remaining, the points spent.
type Second = (BTreeMap<String, u32>, Option<u64>, u64);

/// With `BENCH_DEBUG` set: each second's answers by root field, and the lowest remaining.
fn debug_timeline(log: &[LogEntry], began: Timestamp) {
    let mut by_second: BTreeMap<i64, Second> = BTreeMap::new();
    for e in log {
        let Ok(t) = e.time.parse::<Timestamp>() else {
            continue;
        };
        let slot = by_second
            .entry(t.duration_since(began).as_secs())
            .or_default();
        *slot.0.entry(root(e).to_owned()).or_default() += 1;
        slot.1 = match (slot.1, e.remaining) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        slot.2 += e.cost;
    }
    for (second, (roots, remaining, spent)) in by_second {
        let total: u32 = roots.values().sum();
        let parts: Vec<String> = roots.iter().map(|(f, n)| format!("{f}:{n}")).collect();
        let remaining = remaining.map_or_else(|| "-".to_owned(), |r| r.to_string());
        println!(
            "{second:>5} s {total:>4} spent {spent:>6} remaining≥{remaining:<7} {}",
            parts.join(" ")
        );
    }
}

/// What one run did.
struct Measured {
    makespan: f64,
    /// How full the slots were (`None` at 0 ms).
    flight: Option<headroom_sim::flight::Flight>,
    requests: u64,
    /// Complexity points the simulator charged.
    spent: u64,
    ceiling: u32,
    critical: u64,
    hibernations: u32,
    /// `RATELIMITED` (HTTP 400 with no points charged, or 429) and other 400s.
    rate_limited: usize,
    other_400: usize,
    complete: bool,
}

fn sim_config(case: Case) -> SimConfig {
    let spec = LinearWorkspaceSpec::new("acme")
        .with_teams(case.teams)
        .with_issues_per_team(case.issues)
        .with_limits(LinearLimits {
            api_key_requests: case.requests,
            api_key_complexity: case.complexity,
            period: SignedDuration::from_secs(case.period_secs),
            ..LinearLimits::default()
        });
    let mut config = SimConfig::default()
        .with_token(TokenSpec::user(TOKEN, LOGIN))
        .with_seed(7)
        .with_linear_workspace(spec);
    config.faults.latency = SignedDuration::from_millis(case.latency_ms as i64);
    config
}

/// The client `sync linear` builds (`client_for` with `Provider::Linear`) over the in-process
/// simulator, its credential's owner recorded beforehand (no discovery request in the counts).
async fn client(sim: &Simulator, clock: TokioClock, governor: Governor) -> Client {
    let credentials = Arc::new(MemoryCredentials::default());
    credentials
        .record(
            HOST,
            Credential::new(TOKEN).fingerprint(),
            &Subject::User(LOGIN.into()),
        )
        .await;
    let mut parts = ClientParts::new(
        UrlPolicy::for_api_url(API).expect("loopback API"),
        governor,
        Arc::new(SimTransport::new(sim.clone())),
        clock,
    );
    parts.credentials = credentials;
    parts.config.jitter_seed = Some(5);
    parts.config.provider = Provider::Linear;
    parts.config.api_version = None;
    Client::new(parts)
}

/// Whether the store holds every table's rows as the simulator counts its workspace.
async fn complete(store: &dyn Store, sim: &Simulator) -> bool {
    let seeded = sim.linear_workspace_counts();
    let want = [
        ("linear_teams", seeded.teams),
        ("linear_users", seeded.users),
        ("linear_team_memberships", seeded.memberships),
        ("linear_workflow_states", seeded.states),
        ("linear_labels", seeded.labels),
        ("linear_projects", seeded.projects),
        ("linear_cycles", seeded.cycles),
        ("linear_issues", seeded.issues),
        ("linear_comments", seeded.comments),
        ("linear_attachments", seeded.attachments),
        ("linear_issue_history", seeded.history),
    ];
    let mut all = true;
    for (table, n) in want {
        let got = store.count_rows(table).await.expect("a count");
        if got != n as u64 {
            println!("  {table}: stored {got}, seeded {n}");
            all = false;
        }
    }
    all
}

/// Runs `id` to its end, sleeping through hibernations on a paused clock; the hibernations.
async fn drive(runner: &Runner, clock: TokioClock, id: i64) -> u32 {
    let mut hibernations = 0;
    loop {
        match runner.run(id).await.expect("run") {
            RunOutcome::Done { .. } => return hibernations,
            RunOutcome::Hibernating { until, .. } => {
                hibernations += 1;
                tokio::time::pause();
                clock.sleep_until(until).await;
                tokio::time::resume();
            }
            RunOutcome::Failed { reason, .. } => {
                panic!("failed in the production configuration: {reason}")
            }
        }
    }
}

async fn once(case: Case) -> Measured {
    let start = Timestamp::from_second(1_800_000_000).expect("valid");
    let clock = TokioClock::anchored_at(start);
    let sim = Simulator::new(sim_config(case), clock).expect("simulator");
    // Nothing seeded is as recent as the first sync's watermark allowance (as the tests do).
    tokio::time::pause();
    clock.sleep(SignedDuration::from_secs(3_600)).await;
    tokio::time::resume();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("headroom.db");
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(path.to_str().expect("utf-8"))
            .await
            .expect("store"),
    );
    // The governor the binary builds on an SQLite file.
    let governor_config = GovernorConfig {
        margin: RESET_MARGIN,
        ..GovernorConfig::for_provider(Provider::Linear)
    };
    let state = store
        .quota_state(governor_config.clone(), SharedGovernorOptions::default())
        .expect("governor state");
    let governor = Governor::new(state, Arc::new(clock));
    let client = client(&sim, clock, governor).await;
    // What a user runs: nothing here is tuned for the benchmark.
    let runner_config = RunnerConfig::default();
    let ceiling = runner_config.in_flight.min(governor_config.ceiling);
    let runner = Runner::new(
        sync::stages(),
        sync::SOURCE,
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
            kind: "linear".into(),
            target: Selection::default().target(),
            key: QuotaKey::new(Provider::Linear, HOST, Subject::User(LOGIN.into())),
            requested_stages: None,
            created_at: clock.now(),
        })
        .await
        .expect("run")
        .id;
    let began = clock.now();
    let hibernations = drive(&runner, clock, id).await;
    let makespan = clock.now().duration_since(began).as_secs_f64();
    let log = sim.request_log();
    if std::env::var_os("BENCH_DEBUG").is_some() {
        debug_timeline(&log, began);
    }
    let refused = |e: &&LogEntry| e.status == 429 || (e.status == 400 && e.cost == 0);
    let rate_limited = log
        .iter()
        .filter(refused)
        .filter(|e| !e.path.ends_with("#invalid"))
        .count();
    Measured {
        makespan,
        flight: headroom_sim::flight::of_log(&log, ceiling),
        requests: log.len() as u64,
        spent: log.iter().filter(|e| e.status == 200).map(|e| e.cost).sum(),
        ceiling,
        critical: critical_requests(&log),
        hibernations,
        rate_limited,
        other_400: log.iter().filter(|e| e.status == 400).count() - rate_limited,
        complete: complete(store.as_ref(), &sim).await,
    }
}

/// `max(0, used − capacity) / (capacity / period)` seconds: what a leaky bucket full at the
/// start must refill for `used`.
fn refill_bound(used: u64, capacity: u64, period_secs: i64) -> f64 {
    used.saturating_sub(capacity) as f64 * period_secs as f64 / capacity.max(1) as f64
}

/// The bounds of a run and its verdict, printed.
fn report(case: Case, m: &Measured) {
    let complexity = refill_bound(m.spent, case.complexity, case.period_secs);
    let requests = refill_bound(m.requests, case.requests, case.period_secs);
    let quota = complexity.max(requests);
    let latency_s = case.latency_ms as f64 / 1000.0;
    let spread = m.requests as f64 * latency_s / f64::from(m.ceiling);
    let critical = m.critical as f64 * latency_s;
    let latency = spread.max(critical);
    let (bound, binds) = if quota >= latency {
        (quota, "complexity refill")
    } else {
        (latency, "latency")
    };
    let ratio = m.makespan / bound.max(f64::MIN_POSITIVE);
    let clean = m.rate_limited == 0 && m.complete;
    let verdict = if bound < 0.5 {
        "(no bound: nothing binds)"
    } else if ratio <= case.target && clean {
        "target met"
    } else {
        "target NOT met"
    };
    println!(
        "linear_makespan/{name}: {teams} teams × {issues} issues, {lat} ms, {cx} points and \
         {rq} requests a {period} s period: makespan {makespan:.2} s; bound {bound:.2} s \
         ({binds}); ratio {ratio:.3}, target {target} {verdict}; {n} requests, {spent} points \
         spent ({buckets:.1} buckets), {hib} hibernations, ceiling {ceiling}; complexity bound \
         {complexity:.2} s, request bound {requests:.2} s; latency bound {latency:.2} s \
         (Σ/ceiling {spread:.2} s, critical path {crit} requests = {critical:.2} s); \
         {flight}RATELIMITED: {limited}, other 400: {other}; {complete}",
        name = case.name,
        teams = case.teams,
        flight = m
            .flight
            .map_or_else(String::new, |f| format!("{f} (target ≥ 90 %); ")),
        issues = case.issues,
        lat = case.latency_ms,
        cx = case.complexity,
        rq = case.requests,
        period = case.period_secs,
        makespan = m.makespan,
        target = case.target,
        n = m.requests,
        spent = m.spent,
        buckets = m.spent as f64 / case.complexity as f64,
        hib = m.hibernations,
        ceiling = m.ceiling,
        crit = m.critical,
        limited = m.rate_limited,
        other = m.other_400,
        complete = if m.complete {
            "every seeded row stored"
        } else {
            "INCOMPLETE"
        },
    );
}

fn main() {
    // Current-thread: the hibernations are slept through by pausing its clock.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
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
        let m = runtime.block_on(once(case));
        report(case, &m);
    }
}
