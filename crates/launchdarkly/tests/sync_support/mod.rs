//! What the LaunchDarkly sync tests share: the simulated account, an SQLite store in a temp
//! file, and the runner `headroom sync launchdarkly` builds (LaunchDarkly's governor defaults,
//! a client whose provider is LaunchDarkly) over the in-process simulator, driven to the end
//! on the shared clock, hibernations slept through on a paused clock. The transport can be
//! killed after some answers, refuse one path with a 403, and records every request's
//! headers.

#![allow(dead_code, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::{BoxFuture, GovernorConfig};
use headroom_core::signal::Provider;
use headroom_core::{Governor, QuotaKey, Subject};
use headroom_http::transport::SimTransport;
use headroom_http::{Client, ClientParts, Credential, Transport, TransportError, UrlPolicy};
use headroom_launchdarkly::sync::{self, Selection};
use headroom_sim::{LdAccountCounts, LdAccountSpec, LogEntry, SimConfig, Simulator, TokenSpec};
use headroom_store::{NewSyncRun, SharedGovernorOptions, SqliteStore, Store};
use headroom_sync::{RunOutcome, RunSummary, Runner, RunnerConfig};

pub const TOKEN: &str = "api-alice-0000000000000000000001";
const API: &str = "http://127.0.0.1:7000";
const HOST: &str = "127.0.0.1";

/// A seeded account and the store a sync fills.
pub struct World {
    pub sim: Simulator,
    pub clock: TokioClock,
    pub store: Arc<dyn Store>,
    _dir: tempfile::TempDir,
    _db: Option<headroom_testkit::PgDatabase>,
}

/// The account of `spec` with a throwaway PostgreSQL database for its store; `None` (the
/// test says why it is skipped) without a server to create one on.
pub async fn world_on_postgres(test: &str, spec: LdAccountSpec) -> Option<World> {
    let admin = headroom_testkit::admin_url(test)?;
    let db = headroom_testkit::PgDatabase::create(&admin).await;
    let store: Arc<dyn Store> = Arc::new(
        headroom_store::PgStore::connect(&db.url())
            .await
            .expect("a PostgreSQL store"),
    );
    let mut w = world(spec).await;
    w.store = store;
    w._db = Some(db);
    Some(w)
}

pub async fn world(spec: LdAccountSpec) -> World {
    let clock = TokioClock::anchored_at(Timestamp::from_second(1_800_000_000).expect("valid"));
    let config = SimConfig::default()
        .with_token(TokenSpec::user(TOKEN, "alice"))
        .with_seed(7)
        .with_launchdarkly_account(spec);
    let sim = Simulator::new(config, clock).expect("a simulator");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("headroom.db");
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(path.to_str().expect("utf-8"))
            .await
            .expect("store"),
    );
    World {
        sim,
        clock,
        store,
        _dir: dir,
        _db: None,
    }
}

/// Sleeps on a paused clock: the simulated time passes at once.
pub async fn sleep(clock: TokioClock, by: SignedDuration) {
    tokio::time::pause();
    clock.sleep(by).await;
    tokio::time::resume();
}

/// Answers like the simulator until `left` requests are sent (the next one never comes
/// back: the process is killed while it is in flight), answers 403 to any path starting
/// with `forbidden`, and keeps each request's `LD-API-Version`.
#[derive(Debug)]
pub struct Wire {
    inner: SimTransport,
    left: AtomicI64,
    forbidden: Option<String>,
    /// Paths starting with this are answered 200 with a body that is not JSON.
    pub broken: Mutex<Option<String>>,
    /// An audit entry written after the seed: served newest by the first page of the log
    /// that asks for its date.
    pub new_audit_entry: Mutex<Option<serde_json::Value>>,
    pub versions: Mutex<Vec<Option<String>>>,
    pub killed: tokio::sync::Notify,
}

impl Wire {
    pub fn new(sim: &Simulator) -> Arc<Self> {
        Self::build(sim, i64::MAX, None)
    }

    pub fn killed_after(sim: &Simulator, left: i64) -> Arc<Self> {
        Self::build(sim, left, None)
    }

    pub fn forbidding(sim: &Simulator, prefix: &str) -> Arc<Self> {
        Self::build(sim, i64::MAX, Some(prefix.to_owned()))
    }

    fn build(sim: &Simulator, left: i64, forbidden: Option<String>) -> Arc<Self> {
        Arc::new(Self {
            inner: SimTransport::new(sim.clone()),
            left: AtomicI64::new(left),
            forbidden,
            broken: Mutex::new(None),
            new_audit_entry: Mutex::new(None),
            versions: Mutex::new(Vec::new()),
            killed: tokio::sync::Notify::new(),
        })
    }
}

impl Transport for Wire {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, TransportError>> {
        let version = request
            .headers()
            .get("ld-api-version")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        self.versions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(version);
        if self.left.fetch_sub(1, Ordering::SeqCst) <= 0 {
            self.killed.notify_one();
            return Box::pin(std::future::pending());
        }
        let path = request.uri().path().to_owned();
        if let Some(prefix) = &self.forbidden
            && path.starts_with(prefix.as_str())
        {
            let body =
                r#"{"code":"forbidden","message":"Access to the requested resource was denied"}"#;
            let response = http::Response::builder()
                .status(403)
                .header("content-type", "application/json")
                .body(Bytes::from_static(body.as_bytes()))
                .expect("a response");
            return Box::pin(async move { Ok(response) });
        }
        let broken = self
            .broken
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if broken.is_some_and(|prefix| path.starts_with(prefix.as_str())) {
            let response = http::Response::builder()
                .status(200)
                .header("content-type", "application/json")
                .body(Bytes::from_static(b"<html>not json</html>"))
                .expect("a response");
            return Box::pin(async move { Ok(response) });
        }
        let extra = self
            .new_audit_entry
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        match extra {
            Some(entry) if path == "/api/v2/auditlog" => {
                let query = request.uri().query().unwrap_or_default().to_owned();
                Box::pin(async move {
                    let response = self.inner.send(request).await?;
                    Ok(with_entry(response, &query, entry))
                })
            }
            _ => self.inner.send(request),
        }
    }
}

/// A log page with `entry` first, when the page is the newest one its query asks for and
/// the entry's date is after `after`.
fn with_entry(
    response: http::Response<Bytes>,
    query: &str,
    entry: serde_json::Value,
) -> http::Response<Bytes> {
    let param = |name: &str| {
        query
            .split('&')
            .find_map(|p| p.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.parse::<i64>().ok())
    };
    let date = entry["date"].as_i64().unwrap_or_default();
    let newest_page = param("before").is_none();
    if !newest_page || param("after").is_some_and(|a| date <= a) || response.status() != 200 {
        return response;
    }
    let (parts, body) = response.into_parts();
    let mut page: serde_json::Value = serde_json::from_slice(&body).expect("a log page");
    if let Some(items) = page["items"].as_array_mut() {
        items.insert(0, entry);
    }
    http::Response::from_parts(parts, Bytes::from(page.to_string()))
}

/// An audit entry as LaunchDarkly renders one, dated `date` (epoch ms).
pub fn audit_entry(id: &str, date: i64) -> serde_json::Value {
    serde_json::json!({
        "_links": {"self": {"href": format!("/api/v2/auditlog/{id}"), "type": "application/json"}},
        "_id": id,
        "_accountId": "acme",
        "date": date,
        "accesses": [{"action": "updateOn", "resource": "proj/default:env/production:flag/f-1"}],
        "kind": "flag",
        "name": "f-1",
        "description": "turned the flag on",
        "shortDescription": "turned on",
    })
}

/// The runner `sync launchdarkly` builds, over `transport`, with a governor of its own on
/// the store (as a new process has).
pub async fn runner(w: &World, transport: Arc<dyn Transport>) -> Runner {
    runner_with(w, transport, RunnerConfig::default()).await
}

/// As [`runner`], every wait a hibernation: the test sleeps through it on a paused clock
/// rather than waiting in real time for windows to turn.
pub async fn hibernating_runner(w: &World, transport: Arc<dyn Transport>) -> Runner {
    let config = RunnerConfig {
        inline_wait: SignedDuration::ZERO,
        ..RunnerConfig::default()
    };
    runner_with(w, transport, config).await
}

async fn runner_with(w: &World, transport: Arc<dyn Transport>, config: RunnerConfig) -> Runner {
    let governor_config = GovernorConfig {
        margin: SignedDuration::from_secs(1),
        ..GovernorConfig::for_provider(Provider::LaunchDarkly)
    };
    let state = w
        .store
        .quota_state(governor_config, SharedGovernorOptions::default())
        .expect("governor state");
    let governor = Governor::new(state, Arc::new(w.clock));
    let mut parts = ClientParts::new(
        UrlPolicy::for_api_url(API).expect("loopback API"),
        governor,
        transport,
        w.clock,
    );
    parts.config.jitter_seed = Some(5);
    parts.config.provider = Provider::LaunchDarkly;
    parts.config.api_version = None;
    Runner::new(
        sync::stages(),
        sync::SOURCE,
        w.store.clone(),
        Client::new(parts),
        Some(Credential::new(TOKEN)),
        w.clock,
        config,
    )
    .expect("a valid graph")
}

pub async fn sim_runner(w: &World) -> Runner {
    runner(w, Wire::new(&w.sim)).await
}

/// A new run of `sel`, keyed by the account the token reads (asked as the CLI asks it).
pub async fn new_run(w: &World, runner: &Runner, sel: &Selection) -> i64 {
    let key = runner.identity().await.expect("the token's account");
    assert!(matches!(key.subject, Subject::Account(_)), "{key:?}");
    w.store
        .create_sync_run(&NewSyncRun {
            credential: None,
            kind: "launchdarkly".into(),
            target: sel.target(),
            key: QuotaKey::new(Provider::LaunchDarkly, HOST, key.subject.clone()),
            requested_stages: None,
            created_at: w.clock.now(),
        })
        .await
        .expect("a run")
        .id
}

/// Drives run `id` to its end, sleeping through every hibernation; returns the summary and
/// how many times it hibernated.
pub async fn drive(runner: &Runner, clock: TokioClock, id: i64) -> (RunSummary, u32) {
    let mut hibernations = 0;
    loop {
        match runner.run(id).await.expect("the run is driven") {
            RunOutcome::Done { summary } => return (*summary, hibernations),
            RunOutcome::Hibernating { until, .. } => {
                hibernations += 1;
                assert!(hibernations < 2_000, "the run never ends");
                tokio::time::pause();
                clock.sleep_until(until).await;
                tokio::time::resume();
            }
            other => panic!("the run did not finish: {other:?}"),
        }
    }
}

/// What the store holds, counted as the simulator counts its account.
pub async fn stored(store: &dyn Store) -> LdAccountCounts {
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

/// The route family a logged LaunchDarkly request belongs to, by its path.
pub fn family(e: &LogEntry) -> &'static str {
    let path = e.path.split('?').next().unwrap_or_default();
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segments.as_slice() {
        ["api", "v2", "caller-identity"] => "launchdarkly_identity",
        ["api", "v2", "projects"] => "launchdarkly_projects",
        ["api", "v2", "projects", _, "environments"] => "launchdarkly_environments",
        ["api", "v2", "flags", ..] => "launchdarkly_flags",
        ["api", "v2", "segments", ..] => "launchdarkly_segments",
        ["api", "v2", "members", ..] => "launchdarkly_members",
        ["api", "v2", "auditlog", ..] => "launchdarkly_audit_log",
        ["api", "v2", "code-refs", ..] => "launchdarkly_code_refs",
        _ => "other",
    }
}

/// Requests logged per family.
pub fn by_family(log: &[LogEntry]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for e in log {
        *out.entry(family(e).to_owned()).or_default() += 1;
    }
    out
}

/// Requests a run tallied per family (every stage's actuals together).
pub fn summary_by_family(summary: &RunSummary) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for actuals in summary.actuals.values() {
        for a in actuals {
            *out.entry(a.family.clone()).or_default() += a.requests;
        }
    }
    out.retain(|_, n| *n > 0);
    out
}

/// Answers refused as rate limited.
pub fn refused(log: &[LogEntry]) -> usize {
    log.iter().filter(|e| e.status == 429).count()
}
