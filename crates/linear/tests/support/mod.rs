//! What the Linear sync tests share: the simulated workspace, an SQLite store in a temp
//! file, and the runner `headroom sync linear` builds (Linear's governor defaults, a client
//! whose provider is Linear) over the in-process simulator, driven to the end on the shared
//! clock, hibernations slept through on a paused clock.

#![allow(dead_code, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use bytes::Bytes;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::{BoxFuture, GovernorConfig};
use headroom_core::signal::Provider;
use headroom_core::{Governor, QuotaKey, Subject};
use headroom_http::sinks::{CredentialRegistry, MemoryCredentials};
use headroom_http::transport::SimTransport;
use headroom_http::{Client, ClientParts, Credential, Transport, TransportError, UrlPolicy};
use headroom_linear::sync::{self, Selection};
use headroom_sim::{
    LinearLimits, LinearWorkspaceCounts, LinearWorkspaceSpec, LogEntry, SimConfig, Simulator,
    TokenSpec,
};
use headroom_store::{NewSyncRun, SharedGovernorOptions, SqliteStore, Store};
use headroom_sync::{RunOutcome, RunSummary, Runner, RunnerConfig};

pub const TOKEN: &str = "lin_api_alicetoken0000000001";
const API: &str = "http://127.0.0.1:7000/linear";
const HOST: &str = "127.0.0.1";

/// A seeded workspace and the store a sync fills.
pub struct World {
    pub sim: Simulator,
    pub clock: TokioClock,
    pub store: Arc<dyn Store>,
    _dir: tempfile::TempDir,
}

/// A workspace of `teams` × `issues` whose complexity bucket holds `complexity` points a
/// minute (requests plenty), seeded an hour before the clock the sync starts on.
pub fn spec(teams: usize, issues: usize, complexity: u64) -> LinearWorkspaceSpec {
    LinearWorkspaceSpec::new("acme")
        .with_teams(teams)
        .with_issues_per_team(issues)
        .with_limits(LinearLimits {
            api_key_requests: 100_000,
            api_key_complexity: complexity,
            period: SignedDuration::from_secs(60),
            ..LinearLimits::default()
        })
}

pub async fn world(spec: LinearWorkspaceSpec) -> World {
    let clock = TokioClock::anchored_at(Timestamp::from_second(1_800_000_000).expect("valid"));
    let config = SimConfig::default()
        .with_token(TokenSpec::user(TOKEN, "alice"))
        .with_seed(7)
        .with_linear_workspace(spec);
    let sim = Simulator::new(config, clock).expect("a simulator");
    // Nothing seeded is as recent as the first sync's watermark allowance.
    sleep(clock, SignedDuration::from_secs(3_600)).await;
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
    }
}

/// Sleeps on a paused clock: the simulated time passes at once.
pub async fn sleep(clock: TokioClock, by: SignedDuration) {
    tokio::time::pause();
    clock.sleep(by).await;
    tokio::time::resume();
}

/// Answers like the simulator until `left` requests are sent; the next one never comes
/// back (the process is killed while it is in flight).
#[derive(Debug)]
pub struct Killable {
    inner: SimTransport,
    left: AtomicI64,
    pub killed: tokio::sync::Notify,
}

impl Killable {
    pub fn new(sim: &Simulator, left: i64) -> Arc<Self> {
        Arc::new(Self {
            inner: SimTransport::new(sim.clone()),
            left: AtomicI64::new(left),
            killed: tokio::sync::Notify::new(),
        })
    }
}

impl Transport for Killable {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, TransportError>> {
        if self.left.fetch_sub(1, Ordering::SeqCst) <= 0 {
            self.killed.notify_one();
            return Box::pin(std::future::pending());
        }
        self.inner.send(request)
    }
}

/// The runner `sync linear` builds, over `transport`, with a governor of its own on the
/// store (as a new process has).
pub async fn runner(w: &World, transport: Arc<dyn Transport>) -> Runner {
    let governor_config = GovernorConfig {
        margin: SignedDuration::from_secs(1),
        ..GovernorConfig::for_provider(Provider::Linear)
    };
    let state = w
        .store
        .quota_state(governor_config, SharedGovernorOptions::default())
        .expect("governor state");
    let governor = Governor::new(state, Arc::new(w.clock));
    let credentials = Arc::new(MemoryCredentials::default());
    credentials
        .record(
            HOST,
            Credential::new(TOKEN).fingerprint(),
            &Subject::User("alice".into()),
        )
        .await;
    let mut parts = ClientParts::new(
        UrlPolicy::for_api_url(API).expect("loopback API"),
        governor,
        transport,
        w.clock,
    );
    parts.credentials = credentials;
    parts.config.jitter_seed = Some(5);
    parts.config.provider = Provider::Linear;
    parts.config.api_version = None;
    Runner::new(
        sync::stages(),
        sync::SOURCE,
        w.store.clone(),
        Client::new(parts),
        Some(Credential::new(TOKEN)),
        w.clock,
        RunnerConfig::default(),
    )
    .expect("a valid graph")
}

pub async fn sim_runner(w: &World) -> Runner {
    runner(w, Arc::new(SimTransport::new(w.sim.clone()))).await
}

/// A new run of `sel`.
pub async fn new_run(w: &World, sel: &Selection) -> i64 {
    w.store
        .create_sync_run(&NewSyncRun {
            credential: None,
            kind: "linear".into(),
            target: sel.target(),
            key: QuotaKey::new(Provider::Linear, HOST, Subject::User("alice".into())),
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
                assert!(hibernations < 500, "the run never ends");
                tokio::time::pause();
                clock.sleep_until(until).await;
                tokio::time::resume();
            }
            other => panic!("the run did not finish: {other:?}"),
        }
    }
}

/// What the store holds, counted as the simulator counts its workspace.
pub async fn stored(store: &dyn Store) -> LinearWorkspaceCounts {
    let n = |t: &'static str| async move {
        usize::try_from(store.count_rows(t).await.expect("counted")).expect("fits")
    };
    LinearWorkspaceCounts {
        teams: n("linear_teams").await,
        users: n("linear_users").await,
        memberships: n("linear_team_memberships").await,
        states: n("linear_workflow_states").await,
        labels: n("linear_labels").await,
        projects: n("linear_projects").await,
        cycles: n("linear_cycles").await,
        issues: n("linear_issues").await,
        comments: n("linear_comments").await,
        attachments: n("linear_attachments").await,
        history: n("linear_issue_history").await,
    }
}

/// The operation's root field a logged request asked (`issues`, `issue` for history).
pub fn root(e: &LogEntry) -> &str {
    e.path.split("#root=").nth(1).unwrap_or("")
}

/// Requests logged per root field.
pub fn by_root(log: &[LogEntry]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for e in log {
        *out.entry(root(e).to_owned()).or_default() += 1;
    }
    out
}

/// Answers refused (HTTP 400: `RATELIMITED` or too complex; 429).
pub fn refused(sim: &Simulator) -> usize {
    sim.request_log()
        .iter()
        .filter(|e| e.status == 400 || e.status == 429)
        .count()
}
