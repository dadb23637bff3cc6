//! GitLab group-sync makespan against the lower bound that the quota and the latency allow for
//! the same work: `org_makespan`'s method, for `headroom sync gitlab GROUP`.
//!
//! The run is what `sync gitlab` runs: the nine GitLab stages on the shared runner with the
//! default runner configuration, GitLab's default governor (`GovernorConfig::for_provider`:
//! in-flight ceiling 10, GitLab's application limits, none of GitHub's points limiters) on an
//! SQLite file, and a client whose provider is GitLab (PRIVATE-TOKEN, no GitHub
//! API version), as `crates/cli/src/wiring.rs` builds it. Only the provider is scaled (the
//! throttle's limit, its window, its latency), and the reset margin is 1 s: the simulator
//! shares the runner's clock and `RateLimit-Reset` is whole seconds. Hibernations are slept
//! through on a paused clock; everything else, the simulator's latency included, runs on the
//! real one.
//!
//! **Quota bound.** GitLab's throttle allows L requests per fixed window of T seconds. The
//! governor grants a request only while `remaining ≥ in flight + 1 + C` (C the in-flight
//! ceiling, 10): it keeps C in reserve, so it can spend at most U = L − C per window. W requests
//! need n = ⌈W / U⌉ windows, the last one's requests taken as instant:
//!
//! ```text
//! throttle bound = (n − 1) · T          (assumes the run starts as a window opens)
//! ```
//!
//! Printed beside it: the provider's own bound (U = L, no reserve).
//!
//! **Latency bound**: the larger of Σ(requests × latency) / C and the critical path, the
//! longest chain of requests each of which needs the answer before it: the group, the pages of
//! its descendant groups, the pages of its projects, then the longest per-project chain (a
//! list's pages one after another, or its first page and then one listed object's child
//! pages one after another), counted from the requests the run made. The group milestones are
//! left out: no request waits for them.
//!
//! Cases (`CASES=a,b` selects):
//! - `quota_0ms`: 16 projects (3 subgroups two deep, 4 projects a group, 25 items), 200
//!   requests a 20 s window, 0 ms: the throttle binds (12 windows); target ≤ 1.05, zero 429s.
//! - `quota_5s_windows_0ms`: the same group at 200 a 5 s window (2,400 a minute), faster than
//!   GitHub's 900-a-minute secondary limit, which a GitLab identity is not held to; same target.
//! - `latency_bound`: 16 projects with 8 items,
//!   GitLab.com's 2,000 a minute, 150 ms a response; target ≤ 1.3.
//! - `latency_bound_0ms`: the same at 0 ms, the runner's own time (no bound).
//!
//! `BENCH_DEBUG=1` prints each second's answers by route family and the throttle's remaining.
//!
//! Run with `cargo bench -p headroom-gitlab --bench gitlab_makespan`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::print_stdout)]

use std::collections::BTreeMap;
use std::sync::Arc;

use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::GovernorConfig;
use headroom_core::signal::Provider;
use headroom_core::{Governor, QuotaKey, Subject};
use headroom_gitlab::sync;
use headroom_http::sinks::{CredentialRegistry, MemoryCredentials};
use headroom_http::transport::SimTransport;
use headroom_http::{Client, ClientParts, Credential, UrlPolicy};
use headroom_sim::{GitlabGroupSpec, LogEntry, SimConfig, Simulator, TokenSpec};
use headroom_store::{NewSyncRun, SharedGovernorOptions, SqliteStore, Store};
use headroom_sync::{RunOutcome, Runner, RunnerConfig};

const TOKEN: &str = "glpat-benchtoken00000000001";
/// The simulator's web root; GitLab's API is under `/api/v4`.
const WEB: &str = "http://127.0.0.1:7000";
const API: &str = "http://127.0.0.1:7000/api/v4";
/// The skew between the simulator's clock and the runner's (none: it is one clock), rounded up
/// to the resolution of `RateLimit-Reset` (whole seconds).
const RESET_MARGIN: SignedDuration = SignedDuration::from_secs(1);

/// One benchmark case.
#[derive(Debug, Clone, Copy)]
struct Case {
    name: &'static str,
    subgroups: usize,
    depth: usize,
    projects_per_group: usize,
    items: usize,
    /// The throttle's requests per window, and the window's length in seconds.
    limit: u64,
    window_secs: i64,
    latency_ms: u64,
    /// Which bound the target is set against, and the target.
    binds: Binds,
    target: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Binds {
    Quota,
    Latency,
}

const CASES: [Case; 4] = [
    Case {
        name: "quota_0ms",
        subgroups: 3,
        depth: 2,
        projects_per_group: 4,
        items: 25,
        limit: 200,
        window_secs: 20,
        latency_ms: 0,
        binds: Binds::Quota,
        target: 1.05,
    },
    Case {
        name: "quota_5s_windows_0ms",
        subgroups: 3,
        depth: 2,
        projects_per_group: 4,
        items: 25,
        limit: 200,
        window_secs: 5,
        latency_ms: 0,
        binds: Binds::Quota,
        target: 1.05,
    },
    Case {
        name: "latency_bound",
        subgroups: 3,
        depth: 2,
        projects_per_group: 4,
        items: 8,
        limit: 2_000,
        window_secs: 60,
        latency_ms: 150,
        binds: Binds::Latency,
        target: 1.3,
    },
    Case {
        name: "latency_bound_0ms",
        subgroups: 3,
        depth: 2,
        projects_per_group: 4,
        items: 8,
        limit: 2_000,
        window_secs: 60,
        latency_ms: 0,
        binds: Binds::Latency,
        target: 1.3,
    },
];

/// `(⌈work / per_window⌉ − 1) · window`: the time `work` requests need at `per_window` a
/// window, the last window's taken as instant.
fn windows_bound(work: u64, per_window: u64, window_secs: f64) -> f64 {
    if work == 0 || per_window == 0 {
        return 0.0;
    }
    (work.div_ceil(per_window) - 1) as f64 * window_secs
}

/// A request's place in the group's dependency chains, from its path.
#[derive(Debug, PartialEq, Eq)]
enum Step<'a> {
    Group,
    Descendants,
    GroupMilestones,
    Projects,
    /// A project's list: project, family.
    List(&'a str, &'a str),
    /// A listed object's child: project, family, parent, child.
    Child(&'a str, &'a str, &'a str, &'a str),
    Other,
}

fn step_of(path: &str) -> Step<'_> {
    let path = path.split('?').next().unwrap_or(path);
    let rest = path.strip_prefix("/api/v4/").unwrap_or(path);
    let seg: Vec<&str> = rest.split('/').collect();
    match seg.as_slice() {
        ["groups", _] => Step::Group,
        ["groups", _, "descendant_groups"] => Step::Descendants,
        ["groups", _, "milestones"] => Step::GroupMilestones,
        ["groups", _, "projects"] => Step::Projects,
        ["projects", p, family] => Step::List(p, family),
        ["projects", p, family, parent, child] => Step::Child(p, family, parent, child),
        _ => Step::Other,
    }
}

/// The route family a path belongs to, for the timeline.
fn family_of(path: &str) -> String {
    match step_of(path) {
        Step::Group => "group".into(),
        Step::Descendants => "descendants".into(),
        Step::GroupMilestones => "group_milestones".into(),
        Step::Projects => "projects".into(),
        Step::List(_, f) => f.to_owned(),
        Step::Child(_, f, _, c) => format!("{f}/{c}"),
        Step::Other => "other".into(),
    }
}

/// The longest chain of dependent requests the run made (see the module's doc), in requests.
fn critical_requests(log: &[LogEntry]) -> u64 {
    let (mut group, mut descendants, mut projects) = (0u64, 0u64, 0u64);
    let mut lists: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    let mut children: BTreeMap<(&str, &str, &str, &str), u64> = BTreeMap::new();
    for e in log {
        match step_of(&e.path) {
            Step::Group => group = 1,
            Step::Descendants => descendants += 1,
            Step::Projects => projects += 1,
            Step::List(p, f) => *lists.entry((p, f)).or_default() += 1,
            Step::Child(p, f, parent, c) => *children.entry((p, f, parent, c)).or_default() += 1,
            Step::GroupMilestones | Step::Other => {}
        }
    }
    let mut deepest = lists.values().copied().max().unwrap_or(0);
    for (&(p, f, _, _), &pages) in &children {
        // At least the list's first page comes before a listed object's children.
        let first = u64::from(lists.contains_key(&(p, f)));
        deepest = deepest.max(first + pages);
    }
    group + descendants + projects + deepest
}

/// With `BENCH_DEBUG` set: each second's answers by family, and the lowest remaining.
fn debug_timeline(log: &[LogEntry], began: Timestamp) {
    let mut by_second: BTreeMap<i64, (BTreeMap<String, u32>, Option<u64>)> = BTreeMap::new();
    for e in log {
        let Ok(t) = e.time.parse::<Timestamp>() else {
            continue;
        };
        let slot = by_second
            .entry(t.duration_since(began).as_secs())
            .or_default();
        *slot.0.entry(family_of(&e.path)).or_default() += 1;
        slot.1 = match (slot.1, e.remaining) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    for (second, (families, remaining)) in by_second {
        let total: u32 = families.values().sum();
        let parts: Vec<String> = families.iter().map(|(f, n)| format!("{f}:{n}")).collect();
        let remaining = remaining.map_or_else(|| "-".to_owned(), |r| r.to_string());
        println!(
            "{second:>5} s {total:>4} remaining≥{remaining:<5} {}",
            parts.join(" ")
        );
    }
}

/// What one run did.
struct Measured {
    makespan: f64,
    requests: u64,
    ceiling: u32,
    critical: u64,
    too_many: usize,
    forbidden: usize,
    in_flight: Option<headroom_sim::flight::Flight>,
}

fn sim_config(case: Case) -> SimConfig {
    let mut config = SimConfig::default()
        .with_token(TokenSpec::user(TOKEN, "alice"))
        .with_seed(3)
        .with_gitlab_group(
            GitlabGroupSpec::new("acme")
                .with_subgroups(case.subgroups, case.depth)
                .with_projects_per_group(case.projects_per_group)
                .with_items(case.items),
        );
    config.gitlab_requests_per_minute = case.limit;
    config.gitlab_window_secs = case.window_secs;
    config.public_base_url = WEB.to_owned();
    config.faults.latency = SignedDuration::from_millis(case.latency_ms as i64);
    config
}

/// The client `sync gitlab` builds (`client_for` with `Provider::GitLab`), over the
/// in-process simulator, its credential's owner recorded beforehand (so no discovery request
/// shows in the counts).
async fn client(sim: &Simulator, clock: TokioClock, governor: Governor) -> Client {
    let credentials = Arc::new(MemoryCredentials::default());
    credentials
        .record(
            "127.0.0.1",
            Credential::new(TOKEN).fingerprint(),
            &Subject::User("alice".into()),
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
    parts.config.provider = Provider::GitLab;
    parts.config.api_version = None;
    Client::new(parts)
}

async fn once(case: Case) -> Measured {
    let start = Timestamp::from_second(1_800_000_000).expect("valid");
    let clock = TokioClock::anchored_at(start);
    let sim = Simulator::new(sim_config(case), clock).expect("simulator");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("headroom.db");
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(path.to_str().expect("utf-8"))
            .await
            .expect("store"),
    );
    // The governor the binary builds on an SQLite file: shared through the database.
    let governor_config = GovernorConfig {
        margin: RESET_MARGIN,
        ..GovernorConfig::for_provider(headroom_core::signal::Provider::GitLab)
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
        Some(sync::PROJECT_SOURCE),
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
            kind: "gitlab".into(),
            target: "acme".into(),
            key: QuotaKey::user("127.0.0.1", "alice"),
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
    Measured {
        makespan,
        requests: log.len() as u64,
        ceiling,
        critical: critical_requests(&log),
        too_many: sim.count_status(429),
        forbidden: sim.count_status(403),
        in_flight: headroom_sim::flight::of_log(&log, ceiling),
    }
}

/// The bounds of a run and its verdict, printed.
fn report(case: Case, m: &Measured) {
    let window = case.window_secs as f64;
    let reserve = u64::from(m.ceiling);
    let throttle = windows_bound(m.requests, case.limit.saturating_sub(reserve), window);
    let provider = windows_bound(m.requests, case.limit, window);
    let latency_s = case.latency_ms as f64 / 1000.0;
    let spread = m.requests as f64 * latency_s / f64::from(m.ceiling);
    let critical = m.critical as f64 * latency_s;
    let latency = spread.max(critical);
    let bound = match case.binds {
        Binds::Quota => throttle,
        Binds::Latency => latency,
    };
    let ratio = m.makespan / bound.max(f64::MIN_POSITIVE);
    let against = |b: f64| {
        if b < 0.5 {
            "—".to_owned()
        } else {
            format!("{:.3}", m.makespan / b)
        }
    };
    let clean = m.too_many == 0 && m.forbidden == 0;
    let verdict = if bound < 0.5 {
        if clean {
            "(no bound: nothing binds)"
        } else {
            "NOT met (403/429)"
        }
    } else if ratio <= case.target && clean {
        "target met"
    } else {
        "target NOT met"
    };
    let flight = m
        .in_flight
        .map_or_else(String::new, |f| format!("; {f} (target ≥ 90 %)"));
    println!(
        "gitlab_makespan/{name}: {projects} projects, {items} items, {lat} ms, {limit} a {window} s window: \
         makespan {makespan:.1} s; bound {bound:.1} s ({binds}); ratio {ratio}, target {target} {verdict}; \
         {requests} requests, ceiling {ceiling}; throttle bound {throttle:.1} s (U = {usable} a window), \
         provider-only {provider:.1} s; latency bound {latency:.1} s \
         (Σ/ceiling {spread:.1} s, critical path {crit} requests = {critical:.1} s){flight}; 403: {forbidden}, 429: {too_many}",
        name = case.name,
        projects = (1 + case.subgroups) * case.projects_per_group,
        items = case.items,
        lat = case.latency_ms,
        limit = case.limit,
        window = case.window_secs,
        makespan = m.makespan,
        binds = match case.binds {
            Binds::Quota => "throttle",
            Binds::Latency => "latency",
        },
        target = case.target,
        requests = m.requests,
        ceiling = m.ceiling,
        usable = case.limit.saturating_sub(reserve),
        ratio = against(bound),
        crit = m.critical,
        forbidden = m.forbidden,
        too_many = m.too_many,
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
