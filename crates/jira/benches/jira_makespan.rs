//! Jira site-sync makespan against the lower bound that the per-endpoint burst rate and the
//! latency allow for the same work: `gitlab_makespan`'s method, for
//! `headroom sync jira --site URL` (every visible project, no worklogs).
//!
//! The run is what `sync jira` runs: the four Jira stages on the shared runner with the
//! default runner configuration, Jira's default governor (`GovernorConfig::for_provider`)
//! with each endpoint paced at `PointsLimit::paced_per_second(RATE)` (what the CLI sets from
//! `[jira] burst_per_sec`, `crates/cli/src/wiring.rs`) on an SQLite file, and a client whose
//! provider is Jira, sending the API token as Basic with its owner's e-mail. The simulator's
//! site has the same steady rate for every endpoint and method (`burst_per_sec`,
//! `changelog_burst_per_sec`) and a buffer of as much again. Hibernations are slept through
//! on a paused clock; everything else, the simulator's latency and the pacing waits included,
//! runs on the real one.
//!
//! **Quota bound.** An API token's traffic has no window to budget by: Jira limits each site,
//! endpoint and method by a token bucket refilled at r a second. The tightest budget is the
//! busiest endpoint's (here each issue's comments, `GET /issue/{key}/comment`, one request
//! an issue), whatever runs beside it on other endpoints. The governor paces an endpoint at
//! p = max(1, r / 10) grants in any window of p / r seconds (its 100 ms pacing windows), so N
//! requests on one endpoint span at least
//!
//! ```text
//! pacing bound = (⌈N / p⌉ − 1) · p / r          (the first window's grants at the start)
//! ```
//!
//! Printed beside it: the provider's own bound, max(0, N − (r + buffer)) / r (the bucket
//! starts full; no pacing).
//!
//! **Latency bound**: the larger of Σ(requests × latency) / C (C the in-flight ceiling) and
//! the critical path, the longest chain of requests each of which needs the answer before it:
//! `/myself`, the pages of `/project/search`, then the longer of one project's issue chain
//! and the boards' chain. A project's issues go page by page: a search page, its bulk
//! changelog pages, then its issues' child pages side by side (an issue's pages in order),
//! and only then the next search page; so its chain is its search and bulk requests plus, per
//! search page that listed issues, the longest child chain of one issue. Every project of the
//! seeded site is alike, so a project's search and bulk requests are the log's divided by
//! the projects. The boards' chain is the board pages, then one board's sprint pages.
//!
//! Cases (`CASES=a,b` selects):
//! - `quota_burst`: 3 projects of 120 issues at 10 a second per endpoint, 0 ms: 360 comment
//!   requests, 36 s of the busiest endpoint's rate; target ≤ 1.05, zero 429s.
//! - `latency_bound`: 4 projects of 60 issues at Jira's 100 a second, 150 ms a response;
//!   target ≤ 1.3.
//!
//! `BENCH_DEBUG=1` prints each second's answers by endpoint.
//!
//! Run with `cargo bench -p headroom-jira --bench jira_makespan`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::print_stdout)]

use std::collections::BTreeMap;
use std::sync::Arc;

use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::{GovernorConfig, PointsLimit};
use headroom_core::signal::Provider;
use headroom_core::{Governor, QuotaKey, Subject};
use headroom_http::sinks::{CredentialRegistry, MemoryCredentials};
use headroom_http::transport::SimTransport;
use headroom_http::{AuthScheme, Client, ClientParts, Credential, UrlPolicy};
use headroom_jira::sync::{self, Selection};
use headroom_sim::{JiraLimits, JiraSiteSpec, LogEntry, SimConfig, Simulator, TokenSpec};
use headroom_store::{NewSyncRun, SharedGovernorOptions, SqliteStore, Store};
use headroom_sync::{RunOutcome, Runner, RunnerConfig};

const TOKEN: &str = "jira-bench-token-0000000001";
const LOGIN: &str = "alice";
/// The simulator's web root: the site's URL.
const SITE: &str = "http://127.0.0.1:7000";
/// The skew between the simulator's clock and the runner's (none: it is one clock), rounded up
/// to the resolution of `X-RateLimit-Reset` (whole seconds).
const RESET_MARGIN: SignedDuration = SignedDuration::from_secs(1);
/// Issues a search page holds: what `sync jira` asks and the simulator serves.
const SEARCH_PAGE: usize = 100;

/// One benchmark case.
#[derive(Debug, Clone, Copy)]
struct Case {
    name: &'static str,
    projects: usize,
    issues: usize,
    /// Comments, changelog entries and worklogs per issue.
    children: (usize, usize, usize),
    boards: usize,
    sprints: usize,
    /// Every endpoint's steady rate a second, on the site and in the governor.
    rate: u32,
    latency_ms: u64,
    target: f64,
}

const CASES: [Case; 2] = [
    Case {
        name: "quota_burst",
        projects: 3,
        issues: 120,
        children: (3, 3, 1),
        boards: 2,
        sprints: 4,
        rate: 10,
        latency_ms: 0,
        target: 1.05,
    },
    Case {
        name: "latency_bound",
        projects: 4,
        issues: 60,
        children: (3, 3, 1),
        boards: 2,
        sprints: 4,
        rate: 100,
        latency_ms: 150,
        target: 1.3,
    },
];

/// An endpoint's template, as Jira's per-endpoint limits (and the simulator) group paths: the
/// issue, board and project ids replaced.
fn endpoint_of(method: &str, path: &str) -> String {
    let path = path.split('?').next().unwrap_or(path);
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let mut out = format!("{method} ");
    for (i, s) in segs.iter().enumerate() {
        let shown = match i.checked_sub(1).map(|j| segs[j]) {
            Some("issue") => "{key}",
            Some("board") => "{boardId}",
            Some("project") if *s != "search" => "{project}",
            _ => s,
        };
        out.push('/');
        out.push_str(shown);
    }
    out
}

/// Requests per endpoint template.
fn per_endpoint(log: &[LogEntry]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for e in log {
        *out.entry(endpoint_of(&e.method, &e.path)).or_default() += 1;
    }
    out
}

/// The longest chain of dependent requests the run made (see the module's doc), in requests.
fn critical_requests(log: &[LogEntry], case: Case) -> u64 {
    let count = |method: &str, path: &str| {
        log.iter()
            .filter(|e| e.method == method && e.path.split('?').next() == Some(path))
            .count() as u64
    };
    let site = count("GET", "/rest/api/3/myself") + count("GET", "/rest/api/3/field");
    let listing = count("GET", "/rest/api/3/project/search");
    let projects = case.projects.max(1) as u64;
    let search = count("POST", "/rest/api/3/search/jql") / projects;
    let bulk = count("POST", "/rest/api/3/changelog/bulkfetch") / projects;
    // The longest child chain of one issue: its pages of one list, in order.
    let mut child_pages: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    let mut sprint_pages: BTreeMap<&str, u64> = BTreeMap::new();
    let mut board_pages = 0;
    for e in log {
        let path = e.path.split('?').next().unwrap_or(&e.path);
        let seg: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        match seg.as_slice() {
            ["rest", "api", "3", "issue", key, list] => {
                *child_pages.entry((key, list)).or_default() += 1;
            }
            ["rest", "agile", "1.0", "board"] => board_pages += 1,
            ["rest", "agile", "1.0", "board", id, "sprint"] => {
                *sprint_pages.entry(id).or_default() += 1;
            }
            _ => {}
        }
    }
    let longest_child = child_pages.values().copied().max().unwrap_or(0);
    let pages_with_issues = case.issues.div_ceil(SEARCH_PAGE) as u64;
    let issues_chain = search + bulk + pages_with_issues * longest_child;
    let boards_chain = board_pages + sprint_pages.values().copied().max().unwrap_or(0);
    site + listing + issues_chain.max(boards_chain)
}

/// With `BENCH_DEBUG` set: each second's answers by endpoint.
fn debug_timeline(log: &[LogEntry], began: Timestamp) {
    let mut by_second: BTreeMap<i64, BTreeMap<String, u32>> = BTreeMap::new();
    for e in log {
        let Ok(t) = e.time.parse::<Timestamp>() else {
            continue;
        };
        let slot = by_second
            .entry(t.duration_since(began).as_secs())
            .or_default();
        *slot.entry(endpoint_of(&e.method, &e.path)).or_default() += 1;
    }
    for (second, endpoints) in by_second {
        let total: u32 = endpoints.values().sum();
        let parts: Vec<String> = endpoints.iter().map(|(f, n)| format!("{f}:{n}")).collect();
        println!("{second:>5} s {total:>4} {}", parts.join(" "));
    }
}

/// What one run did.
struct Measured {
    makespan: f64,
    /// How full the slots were (`None` at 0 ms).
    flight: Option<headroom_sim::flight::Flight>,
    requests: u64,
    /// The busiest endpoint and its requests.
    busiest: (String, u64),
    ceiling: u32,
    critical: u64,
    too_many: usize,
    forbidden: usize,
    /// Rows stored against the seeded site's counts: (table, stored, seeded) that differ.
    missing: Vec<(&'static str, u64, u64)>,
}

fn sim_config(case: Case) -> SimConfig {
    let mut limits = JiraLimits::default();
    let rate = u64::from(case.rate);
    limits.burst_per_sec = rate;
    limits.burst_buffer = rate;
    limits.changelog_burst_per_sec = rate;
    let (comments, changelog, worklogs) = case.children;
    let site = JiraSiteSpec::new("acme")
        .with_size(case.projects, case.issues)
        .with_children(comments, changelog, worklogs)
        .with_boards(case.boards, case.sprints)
        .with_limits(limits);
    let mut config = SimConfig::default()
        .with_token(TokenSpec::user(TOKEN, LOGIN))
        .with_seed(3)
        .with_jira_site(site);
    config.public_base_url = SITE.to_owned();
    config.faults.latency = SignedDuration::from_millis(case.latency_ms as i64);
    config
}

/// The API token sent as Basic with its owner's e-mail, as `JIRA_EMAIL` + `JIRA_API_TOKEN`.
fn credential() -> Credential {
    Credential::with_scheme(
        TOKEN,
        AuthScheme::Basic {
            user: format!("{LOGIN}@example.com").into(),
        },
    )
}

/// The client `sync jira` builds (`client_for` with `Provider::Jira`) over the in-process
/// simulator, its credential's owner recorded beforehand (no discovery request in the counts).
async fn client(sim: &Simulator, clock: TokioClock, governor: Governor) -> Client {
    let credentials = Arc::new(MemoryCredentials::default());
    credentials
        .record(
            "127.0.0.1",
            credential().fingerprint(),
            &Subject::User(LOGIN.into()),
        )
        .await;
    let mut parts = ClientParts::new(
        UrlPolicy::for_api_url(SITE).expect("loopback site"),
        governor,
        Arc::new(SimTransport::new(sim.clone())),
        clock,
    );
    parts.credentials = credentials;
    parts.config.jitter_seed = Some(5);
    parts.config.provider = Provider::Jira;
    parts.config.api_version = None;
    Client::new(parts)
}

/// The rows a full collection must hold that the store does not.
async fn missing(store: &dyn Store, sim: &Simulator) -> Vec<(&'static str, u64, u64)> {
    let seeded = sim.jira_site_counts().expect("a seeded site");
    let want = [
        ("jira_projects", seeded.projects),
        ("jira_issues", seeded.issues),
        ("jira_comments", seeded.comments),
        ("jira_changelog", seeded.changelog_entries),
        ("jira_boards", seeded.boards),
        ("jira_sprints", seeded.sprints),
    ];
    let mut out = Vec::new();
    for (table, n) in want {
        let got = store.count_rows(table).await.expect("a count");
        if got != n as u64 {
            out.push((table, got, n as u64));
        }
    }
    out
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
    // The governor the binary builds on an SQLite file, `[jira] burst_per_sec = RATE`.
    let mut governor_config = GovernorConfig {
        margin: RESET_MARGIN,
        ..GovernorConfig::for_provider(Provider::Jira)
    };
    governor_config.endpoint_rate = PointsLimit::paced_per_second(case.rate);
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
        Some(sync::SOURCE),
        store.clone(),
        client,
        Some(credential()),
        clock,
        runner_config,
    )
    .expect("graph");
    let id = store
        .create_sync_run(&NewSyncRun {
            credential: None,
            kind: "jira".into(),
            target: Selection::default().target(),
            key: QuotaKey::user("127.0.0.1", LOGIN),
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
    let busiest = per_endpoint(&log)
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .unwrap_or_default();
    Measured {
        makespan,
        flight: headroom_sim::flight::of_log(&log, ceiling),
        requests: log.len() as u64,
        busiest,
        ceiling,
        critical: critical_requests(&log, case),
        too_many: sim.count_status(429),
        forbidden: sim.count_status(403),
        missing: missing(store.as_ref(), &sim).await,
    }
}

/// `(⌈n / p⌉ − 1) · p / r` seconds: `n` grants paced as `paced_per_second(r)` paces them.
fn pacing_bound(n: u64, rate: u32) -> f64 {
    let Some(limit) = PointsLimit::paced_per_second(rate) else {
        return 0.0;
    };
    if n == 0 {
        return 0.0;
    }
    let windows = n.div_ceil(u64::from(limit.points)) - 1;
    windows as f64 * limit.period.as_secs_f64()
}

/// The bounds of a run and its verdict, printed.
fn report(case: Case, m: &Measured) {
    let (endpoint, busiest) = &m.busiest;
    let pacing = pacing_bound(*busiest, case.rate);
    let rate = f64::from(case.rate);
    let capacity = 2 * u64::from(case.rate);
    let provider = busiest.saturating_sub(capacity) as f64 / rate;
    let latency_s = case.latency_ms as f64 / 1000.0;
    let spread = m.requests as f64 * latency_s / f64::from(m.ceiling);
    let critical = m.critical as f64 * latency_s;
    let latency = spread.max(critical);
    let (bound, binds) = if pacing >= latency {
        (pacing, "per-endpoint pacing")
    } else {
        (latency, "latency")
    };
    let ratio = m.makespan / bound.max(f64::MIN_POSITIVE);
    let clean = m.too_many == 0 && m.forbidden == 0 && m.missing.is_empty();
    let verdict = if bound < 0.5 {
        "(no bound: nothing binds)"
    } else if ratio <= case.target && clean {
        "target met"
    } else {
        "target NOT met"
    };
    let missing = if m.missing.is_empty() {
        "every seeded row stored".to_owned()
    } else {
        format!("INCOMPLETE (table, stored, seeded): {:?}", m.missing)
    };
    println!(
        "jira_makespan/{name}: {projects} projects × {issues} issues, {lat} ms, {rate} a second \
         per endpoint: makespan {makespan:.2} s; bound {bound:.2} s ({binds}); ratio {ratio:.3}, \
         target {target} {verdict}; {requests} requests, busiest endpoint {endpoint} {busiest}, \
         ceiling {ceiling}; pacing bound {pacing:.2} s, provider-only {provider:.2} s; latency \
         bound {latency:.2} s (Σ/ceiling {spread:.2} s, critical path {crit} requests = \
         {critical:.2} s); {flight}403: {forbidden}, 429: {too_many}; {missing}",
        name = case.name,
        projects = case.projects,
        flight = m
            .flight
            .map_or_else(String::new, |f| format!("{f} (target ≥ 90 %); ")),
        issues = case.issues,
        lat = case.latency_ms,
        rate = case.rate,
        makespan = m.makespan,
        target = case.target,
        requests = m.requests,
        ceiling = m.ceiling,
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
