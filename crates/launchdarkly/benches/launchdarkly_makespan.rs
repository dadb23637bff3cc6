//! LaunchDarkly account-sync makespan against the lower bound that the account's windows and
//! the latency allow for the same work: `gitlab_makespan`'s method, for
//! `headroom sync launchdarkly` (every project).
//!
//! The run is what `sync launchdarkly` runs: the seven LaunchDarkly stages on the shared
//! runner with the default runner configuration, LaunchDarkly's default governor
//! (`GovernorConfig::for_provider(Provider::LaunchDarkly)`, the default 60 s reset margin as
//! the CLI passes it: the governor caps a learned bucket's margin at 250 ms itself) on an
//! SQLite file, and a client whose provider is LaunchDarkly, sending the access token raw in
//! `Authorization`. The run's key is the token's account, asked with `caller-identity` as the
//! CLI asks it (that request is in the counts and the makespan). Only the provider is scaled
//! (the account, its limits, the latency). The clock is a `TokioClock` anchored at a fixed
//! instant: hibernations (every wait for a window to reset) are slept through on a paused
//! clock, so LaunchDarkly's 10 s windows pass at once; the simulator's latency and the waits
//! the runner makes in process run on the real one.
//!
//! **Quota bound.** LaunchDarkly's windows are fixed 10 s windows aligned on the provider's
//! clock (the simulator's: multiples of 10 s), one for the account and one per route, each
//! allowing L_b requests however early in the window they come. Counting the simulator's log
//! (answered requests; a 429 spends nothing), bucket b holds N_b requests, so the run needs at
//! least
//!
//! ```text
//! W = max over buckets b of ⌈N_b / L_b⌉ windows
//! ```
//!
//! the run's first window counted whole even when the run starts φ into it. The last request
//! can be served no earlier than the start of the W-th window, so
//!
//! ```text
//! quota bound = (W − 1) · window − φ        (0 when W = 1)
//! ```
//!
//! (the last answer taken as instant once served; its latency is before the window check).
//!
//! **Latency bound**: the larger of Σ(requests × latency) / C (C the in-flight ceiling) and
//! the critical path of the stage graph, counted from the run's requests: `caller-identity`
//! (the CLI's, then the identity stage's), the audit log's pages (one chain: each page's
//! `before` is the previous page's oldest date), then the longest of: the projects' pages
//! and one project's environment pages, followed by the longest chain of one flags scope
//! (a project and its group of environments) or one environment's segments; the members'
//! pages; the code-reference repositories. A chain is the pages of one list, the paging
//! parameters (`limit`, `offset`) aside.
//!
//! Cases (`CASES=a,b` selects):
//! - `quota_flags_route`: 20 projects × 2 environments × 450 flags (5 pages a project, 100
//!   flag requests), the flags route at 10 a window (the others at the simulator's 25, the
//!   account at 100), 50 ms a response: 10 windows of the flags route; target ≤ 1.05, zero
//!   429s.
//! - `quota_global`: the same account with 4,000 audit entries (pages of 20), the
//!   account's window at 40 and every route at 1,000, 50 ms: the global window binds (about
//!   9 windows on the first run); target ≤ 1.05, zero 429s. At 40 a window the governor's
//!   reserve for a process alone is its smallest share, 5 %.
//! - `latency_bound`: 4 projects × 3 environments × 250 flags, 60 segments an environment,
//!   150 members, 100 audit entries, limits of 100,000 a window (never binding), 150 ms a
//!   response; target ≤ 1.3. This case runs as a user runs it: the simulator served over
//!   HTTP on 127.0.0.1 (`headroom_sim::serve`, as `headroom sim` serves it), the client's
//!   live transport, and a multi-thread runtime, as the CLI builds. So the simulator renders
//!   its pages beside the sync, not in its task. It never waits for a window, so its clock
//!   is real time throughout (runs 2–4 start at once).
//!
//! Each case syncs its account four times, each run by a new process on one database,
//! starting at the next window's start after the run before: run 1 is a first sync on a new
//! database (the governor has learned nothing of the account's windows); runs 2–4 are
//! `--full` syncs (every list re-read), the governor starting from what the runs before it
//! learned and kept in the store.
//!
//! `BENCH_DEBUG=1` prints each window's answers by route, and the requests of each chain;
//! `BENCH_TRACE=1` prints each request the simulator answered, by its offset from the run's start.
//!
//! Run with `cargo bench -p headroom-launchdarkly --bench launchdarkly_makespan`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::print_stdout)]

use std::collections::BTreeMap;
use std::sync::Arc;

use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::GovernorConfig;
use headroom_core::signal::Provider;
use headroom_core::{Governor, QuotaKey};
use headroom_http::transport::{LiveConfig, LiveTransport, SimTransport, Transport};
use headroom_http::{Client, ClientParts, Credential, UrlPolicy};
use headroom_launchdarkly::sync::{self, Selection};
use headroom_sim::{
    LdAccountCounts, LdAccountSpec, LdLimits, LogEntry, SimConfig, Simulator, TokenSpec,
};
use headroom_store::{NewSyncRun, SharedGovernorOptions, SqliteStore, Store};
use headroom_sync::{RunOutcome, RunSummary, Runner, RunnerConfig};

/// An LD personal access token (sent raw in `Authorization`).
const TOKEN: &str = "api-bench-00000000000000000000001";
const LOGIN: &str = "alice";
const API: &str = "http://127.0.0.1:7000";
const HOST: &str = "127.0.0.1";
const FLAGS_ROUTE: &str = "GET /api/v2/flags/{projectKey}";
/// Syncs of each case's account, one process after another on one database.
const RUNS: u32 = 4;
/// LaunchDarkly's window (the simulator's default), in milliseconds.
const WINDOW_MS: i64 = 10_000;

/// One benchmark case.
#[derive(Debug, Clone, Copy)]
struct Case {
    name: &'static str,
    projects: usize,
    environments: usize,
    flags: usize,
    segments: usize,
    members: usize,
    audit: usize,
    global: u64,
    route: u64,
    /// The flags route's limit, when not `route`.
    flags_route: Option<u64>,
    latency_ms: u64,
    target: f64,
    /// Run as a user runs it: the simulator served over HTTP on 127.0.0.1 and the sync on a
    /// multi-thread runtime, in real time (the case never waits for a window).
    wire: bool,
}

const CASES: [Case; 3] = [
    Case {
        name: "quota_flags_route",
        projects: 20,
        environments: 2,
        flags: 450,
        segments: 3,
        members: 5,
        audit: 45,
        global: 100,
        route: 25,
        flags_route: Some(10),
        latency_ms: 50,
        target: 1.05,
        wire: false,
    },
    Case {
        name: "quota_global",
        projects: 20,
        environments: 2,
        flags: 450,
        segments: 3,
        members: 5,
        audit: 4_000,
        global: 40,
        route: 1_000,
        flags_route: None,
        latency_ms: 50,
        target: 1.05,
        wire: false,
    },
    Case {
        name: "latency_bound",
        projects: 4,
        environments: 3,
        flags: 250,
        segments: 60,
        members: 150,
        audit: 100,
        global: 100_000,
        route: 100_000,
        flags_route: None,
        latency_ms: 150,
        target: 1.3,
        wire: true,
    },
];

impl Case {
    fn limits(&self) -> LdLimits {
        let limits = LdLimits::default()
            .with_global(self.global)
            .with_route_default(self.route);
        match self.flags_route {
            Some(n) => limits.with_route(FLAGS_ROUTE, n),
            None => limits,
        }
    }
}

fn sim_config(case: Case) -> SimConfig {
    let spec = LdAccountSpec::new("acme")
        .with_projects(case.projects, case.environments)
        .with_flags(case.flags)
        .with_segments(case.segments)
        .with_members(case.members)
        .with_audit_entries(case.audit)
        .with_limits(case.limits());
    let mut config = SimConfig::default()
        .with_token(TokenSpec::user(TOKEN, LOGIN))
        .with_seed(7)
        .with_launchdarkly_account(spec);
    config.faults.latency = SignedDuration::from_millis(case.latency_ms as i64);
    config
}

/// The runner `sync launchdarkly` builds (`client_for` with `Provider::LaunchDarkly`, the
/// default margin) over the in-process simulator, with a governor of its own on the store
/// (as a new process has); and the in-flight ceiling it runs at.
fn runner(world: &World, store: &Arc<dyn Store>, clock: TokioClock) -> (Runner, u32) {
    let governor_config = GovernorConfig::for_provider(Provider::LaunchDarkly);
    let state = store
        .quota_state(governor_config.clone(), SharedGovernorOptions::default())
        .expect("governor state");
    let governor = Governor::new(state, Arc::new(clock));
    let (api, transport): (String, Arc<dyn Transport>) = match world.wire {
        Some(port) => (
            format!("http://{HOST}:{port}"),
            Arc::new(LiveTransport::new(&LiveConfig::default()).expect("HTTP client")),
        ),
        None => (
            API.to_owned(),
            Arc::new(SimTransport::new(world.sim.clone())),
        ),
    };
    let mut parts = ClientParts::new(
        UrlPolicy::for_api_url(&api).expect("loopback API"),
        governor,
        transport,
        clock,
    );
    parts.config.jitter_seed = Some(5);
    parts.config.provider = Provider::LaunchDarkly;
    parts.config.api_version = None;
    let runner_config = RunnerConfig::default();
    let ceiling = runner_config.in_flight.min(governor_config.ceiling);
    let runner = Runner::new(
        sync::stages(),
        sync::SOURCE,
        store.clone(),
        Client::new(parts),
        Some(Credential::new(TOKEN)),
        clock,
        runner_config,
    )
    .expect("graph");
    (runner, ceiling)
}

/// One sync of `sel` by a new process, driven to its end: the summary and the hibernations.
/// The simulated account, and the port it is served on when the case goes over the wire.
struct World {
    sim: Simulator,
    wire: Option<u16>,
}

impl World {
    /// Sleeps until `until`: on a paused clock in-process (the windows pass at once), in real
    /// time over the wire (a multi-thread runtime cannot pause).
    async fn sleep_until(&self, clock: TokioClock, until: Timestamp) {
        if self.wire.is_some() {
            clock.sleep_until(until).await;
        } else {
            tokio::time::pause();
            clock.sleep_until(until).await;
            tokio::time::resume();
        }
    }
}

async fn sync_once(
    world: &World,
    store: &Arc<dyn Store>,
    clock: TokioClock,
    sel: &Selection,
) -> (RunSummary, u32, u32) {
    let (runner, ceiling) = runner(world, store, clock);
    let key = runner.identity().await.expect("the token's account");
    let id = store
        .create_sync_run(&NewSyncRun {
            credential: None,
            kind: "launchdarkly".into(),
            target: sel.target(),
            key: QuotaKey::new(Provider::LaunchDarkly, HOST, key.subject.clone()),
            requested_stages: None,
            created_at: clock.now(),
        })
        .await
        .expect("run")
        .id;
    let mut hibernations = 0;
    loop {
        match runner.run(id).await.expect("run") {
            RunOutcome::Done { summary } => return (*summary, hibernations, ceiling),
            RunOutcome::Hibernating { until, .. } => {
                hibernations += 1;
                assert!(hibernations < 5_000, "the run never ends");
                world.sleep_until(clock, until).await;
            }
            RunOutcome::Failed { reason, .. } => {
                panic!("failed in the production configuration: {reason}")
            }
        }
    }
}

/// What the store holds, counted as the simulator counts its account.
async fn stored(store: &dyn Store) -> LdAccountCounts {
    let n = |t: &'static str| async move {
        usize::try_from(store.count_rows(t).await.expect("counted")).expect("fits")
    };
    let mut c = LdAccountCounts::default();
    c.projects = n("ld_projects").await;
    c.environments = n("ld_environments").await;
    c.flags = n("ld_flags").await;
    c.flag_environments = n("ld_flag_environments").await;
    c.segments = n("ld_segments").await;
    c.members = n("ld_members").await;
    c.audit_entries = n("ld_audit_entries").await;
    c.code_ref_repositories = n("ld_code_ref_repositories").await;
    c
}

/// A logged request's route template (`GET /api/v2/flags/{projectKey}`), if it reached one.
fn route(e: &LogEntry) -> &str {
    e.bucket.as_deref().unwrap_or("")
}

/// Whether a logged request spent its windows: it reached a route and was not refused.
fn spent(e: &LogEntry) -> bool {
    e.bucket.is_some() && e.status != 429 && e.status != 401
}

/// `s` with its percent-escapes decoded (a `_links.next` escapes what the first page sent
/// plain, `env%2D2` for `env-2`).
fn unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The list a request pages: its path and query, the paging parameters aside.
fn chain_of(e: &LogEntry) -> String {
    let (path, query) = e.path.split_once('?').unwrap_or((&e.path, ""));
    let query = unescape(query);
    let mut params: Vec<&str> = query
        .split('&')
        .filter(|p| {
            !p.is_empty()
                && !["limit=", "offset=", "before=", "after="]
                    .iter()
                    .any(|k| p.starts_with(k))
        })
        .collect();
    params.sort_unstable();
    format!("{}?{}", unescape(path), params.join("&"))
}

/// The longest chain of dependent requests the run made (see the module's doc), in requests.
fn critical_requests(log: &[LogEntry]) -> u64 {
    let mut chains: BTreeMap<(&str, String), u64> = BTreeMap::new();
    for e in log.iter().filter(|e| e.bucket.is_some()) {
        *chains.entry((route(e), chain_of(e))).or_default() += 1;
    }
    let longest = |r: &str| {
        chains
            .iter()
            .filter(|((route, _), _)| *route == r)
            .map(|(_, n)| *n)
            .max()
            .unwrap_or(0)
    };
    let all = |r: &str| {
        chains
            .iter()
            .filter(|((route, _), _)| *route == r)
            .map(|(_, n)| *n)
            .sum::<u64>()
    };
    if std::env::var_os("BENCH_DEBUG").is_some() {
        for ((route, chain), n) in &chains {
            println!("  chain {route} {chain}: {n}");
        }
    }
    let identity = all("GET /api/v2/caller-identity");
    let audit = all("GET /api/v2/auditlog");
    let projects = all("GET /api/v2/projects")
        + longest("GET /api/v2/projects/{projectKey}/environments")
        + longest(FLAGS_ROUTE).max(longest(
            "GET /api/v2/segments/{projectKey}/{environmentKey}",
        ));
    let members = all("GET /api/v2/members");
    let code_refs = all("GET /api/v2/code-refs/repositories");
    identity + audit + projects.max(members).max(code_refs)
}

/// A logged request's time on the simulator's clock, in epoch milliseconds.
fn millis(e: &LogEntry) -> i64 {
    e.time
        .parse::<Timestamp>()
        .expect("an RFC 3339 time")
        .as_millisecond()
}

/// Requests that spent their windows, per window index, per bucket (`global` and each route).
type Windows = BTreeMap<i64, BTreeMap<String, u64>>;

fn per_window(log: &[LogEntry], window_ms: i64) -> Windows {
    let mut out: Windows = BTreeMap::new();
    for e in log.iter().filter(|e| spent(e)) {
        let slot = out.entry(millis(e).div_euclid(window_ms)).or_default();
        *slot.entry("global".to_owned()).or_default() += 1;
        *slot.entry(route(e).to_owned()).or_default() += 1;
    }
    out
}

/// What one run did.
struct Measured {
    makespan: f64,
    /// How full the slots were (`None` at 0 ms).
    flight: Option<headroom_sim::flight::Flight>,
    /// Into its first window the run started, in seconds (φ).
    phase: f64,
    requests: u64,
    /// Answered requests per bucket: `global` and each route.
    per_bucket: BTreeMap<String, u64>,
    windows: Windows,
    ceiling: u32,
    critical: u64,
    hibernations: u32,
    too_many: usize,
    /// Waits the run met per bucket, as its summary tallies them.
    waits: BTreeMap<String, u64>,
    /// (stored, seeded) when they differ.
    missing: Option<(LdAccountCounts, LdAccountCounts)>,
}

async fn measure(
    world: &World,
    store: &Arc<dyn Store>,
    clock: TokioClock,
    sel: &Selection,
) -> Measured {
    let sim = &world.sim;
    let before = sim.request_log().len();
    let began = clock.now();
    let (summary, hibernations, ceiling) = sync_once(world, store, clock, sel).await;
    let makespan = clock.now().duration_since(began).as_secs_f64();
    let log: Vec<LogEntry> = sim.request_log().into_iter().skip(before).collect();
    if std::env::var_os("BENCH_TRACE").is_some() {
        for e in &log {
            println!(
                "    +{:>6} ms {} {}",
                millis(e) - began.as_millisecond(),
                e.status,
                route(e)
            );
        }
    }
    let mut per_bucket: BTreeMap<String, u64> = BTreeMap::new();
    for e in log.iter().filter(|e| spent(e)) {
        *per_bucket.entry("global".to_owned()).or_default() += 1;
        *per_bucket.entry(route(e).to_owned()).or_default() += 1;
    }
    let seeded = sim.launchdarkly_counts().expect("a seeded account");
    let got = stored(store.as_ref()).await;
    Measured {
        makespan,
        flight: headroom_sim::flight::of_log(&log, ceiling),
        phase: began.as_millisecond().rem_euclid(WINDOW_MS) as f64 / 1000.0,
        requests: log.len() as u64,
        per_bucket,
        windows: per_window(&log, WINDOW_MS),
        ceiling,
        critical: critical_requests(&log),
        hibernations,
        too_many: log.iter().filter(|e| e.status == 429).count(),
        waits: summary
            .buckets
            .iter()
            .filter(|(_, t)| t.waits > 0)
            .map(|(b, t)| (b.clone(), t.waits))
            .collect(),
        missing: (got != seeded).then_some((got, seeded)),
    }
}

/// The quota bound of a run (see the module's doc): seconds, W, and the bucket that sets W.
fn quota_bound(case: Case, m: &Measured) -> (f64, u64, String) {
    let limits = case.limits();
    let (windows, binds) = m
        .per_bucket
        .iter()
        .map(|(b, n)| {
            let limit = if b == "global" {
                limits.global_per_window
            } else {
                limits.route_limit(b)
            };
            (n.div_ceil(limit.max(1)), b.clone())
        })
        .max()
        .unwrap_or_default();
    let window = limits.window.as_secs_f64();
    let secs = if windows <= 1 {
        0.0
    } else {
        (windows - 1) as f64 * window - m.phase
    };
    (secs, windows, binds)
}

/// With `BENCH_DEBUG` set: each window's answers by bucket.
fn debug_windows(m: &Measured) {
    for (index, buckets) in &m.windows {
        let parts: Vec<String> = buckets.iter().map(|(b, n)| format!("{b}:{n}")).collect();
        println!("  window {index}: {}", parts.join(" "));
    }
}

/// The bounds of a run and its verdict, printed; whether it met its target.
fn report(case: Case, run: &str, m: &Measured) -> bool {
    let (quota, windows, binds) = quota_bound(case, m);
    let latency_s = case.latency_ms as f64 / 1000.0;
    let spread = m.requests as f64 * latency_s / f64::from(m.ceiling);
    let critical = m.critical as f64 * latency_s;
    let latency = spread.max(critical);
    let (bound, what) = if quota >= latency {
        (quota, format!("{binds} windows"))
    } else {
        (latency, "latency".to_owned())
    };
    let ratio = m.makespan / bound.max(f64::MIN_POSITIVE);
    let met = ratio <= case.target && m.too_many == 0 && m.missing.is_none();
    let verdict = if met { "target met" } else { "target NOT met" };
    let binding = m.per_bucket.get(&binds).copied().unwrap_or(0);
    let fill: Vec<String> = m
        .windows
        .values()
        .map(|b| b.get(&binds).copied().unwrap_or(0).to_string())
        .collect();
    let waits: Vec<String> = m.waits.iter().map(|(b, n)| format!("{b}:{n}")).collect();
    println!(
        "launchdarkly_makespan/{name} {run}: {p} projects × {e} environments × {f} flags, \
         {lat} ms, global {g} / route {r} / flags {fr} a 10 s window: makespan {makespan:.2} s; \
         bound {bound:.2} s ({what}); ratio {ratio:.3}, target {target} \
         {verdict}; {n} requests, {binding} on {binds} = {windows} windows (φ {phase:.2} s, \
         quota bound {quota:.2} s), {hib} hibernations, ceiling {ceiling}; latency bound \
         {latency:.2} s (Σ/ceiling {spread:.2} s, critical path {crit} requests = \
         {critical:.2} s); {flight}429: {too_many}; {complete}",
        name = case.name,
        p = case.projects,
        flight = m
            .flight
            .map_or_else(String::new, |f| format!("{f} (target ≥ 90 %); ")),
        e = case.environments,
        f = case.flags,
        lat = case.latency_ms,
        g = case.global,
        r = case.route,
        fr = case.flags_route.unwrap_or(case.route),
        makespan = m.makespan,
        target = case.target,
        n = m.requests,
        phase = m.phase,
        hib = m.hibernations,
        ceiling = m.ceiling,
        crit = m.critical,
        too_many = m.too_many,
        complete = match &m.missing {
            None => "every seeded row stored".to_owned(),
            Some((got, want)) => format!("INCOMPLETE: stored {got:?}, seeded {want:?}"),
        },
    );
    println!(
        "  {binds} per window: {}; waits per bucket (summary): {}",
        fill.join(" "),
        waits.join(" ")
    );
    if std::env::var_os("BENCH_DEBUG").is_some() {
        debug_windows(m);
    }
    met
}

/// Syncs of one account a process after another: [`RUNS`] of them, the first on a new
/// database, the others `--full` on the same one.
async fn case_runs(case: Case) -> Vec<(String, Measured)> {
    let clock = TokioClock::anchored_at(Timestamp::from_second(1_800_000_000).expect("valid"));
    let sim = Simulator::new(sim_config(case), clock).expect("simulator");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let wire = if case.wire {
        let listener = tokio::net::TcpListener::bind((HOST, 0))
            .await
            .expect("a loopback port");
        let port = listener.local_addr().expect("its address").port();
        let served = sim.clone();
        tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            headroom_sim::serve(served, listener, None, shutdown)
                .await
                .expect("the simulator serves");
        });
        Some(port)
    } else {
        None
    };
    let world = World { sim, wire };
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("headroom.db");
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(path.to_str().expect("utf-8"))
            .await
            .expect("store"),
    );
    let mut out = Vec::new();
    for run in 1..=RUNS {
        let sel = Selection {
            full: run > 1,
            ..Selection::default()
        };
        let label = if run == 1 {
            format!("run {run} (new database)")
        } else {
            format!("run {run} (--full)")
        };
        if run > 1 && world.wire.is_none() {
            // A later sync starts in a window of its own (as it would minutes later): the run
            // before may have spent part of the window it ended in, which the bound cannot
            // know of. (Over the wire no limit binds: the next run starts at once.)
            let next = (clock.now().as_millisecond().div_euclid(WINDOW_MS) + 1) * WINDOW_MS;
            world
                .sleep_until(clock, Timestamp::from_millisecond(next).expect("valid"))
                .await;
        }
        out.push((label, measure(&world, &store, clock, &sel).await));
    }
    let _ = stop.send(());
    out
}

fn main() {
    // In-process cases run on a current-thread runtime: the hibernations are slept through by
    // pausing its clock. Cases over the wire run on a multi-thread one, as the CLI does.
    let paused = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let threaded = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let chosen: Option<Vec<String>> = std::env::var("CASES")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_owned()).collect());
    let mut refused = Vec::new();
    for case in CASES {
        if chosen
            .as_ref()
            .is_some_and(|c| !c.iter().any(|n| n == case.name))
        {
            continue;
        }
        let runtime = if case.wire { &threaded } else { &paused };
        for (run, m) in runtime.block_on(case_runs(case)) {
            report(case, &run, &m);
            if m.too_many > 0 {
                refused.push(format!("{}/{run}: {}", case.name, m.too_many));
            }
        }
    }
    // A benchmark asserts nothing timed, but a 429 means the governor let a request through
    // that the account's windows refused: that is a defect, not a figure.
    assert!(
        refused.is_empty(),
        "LaunchDarkly answered 429 (rate_limited): {}",
        refused.join(", ")
    );
}
