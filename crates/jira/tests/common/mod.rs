//! The rig of the site-sync tests: the Jira stages on the shared runner, as `sync jira` runs
//! them (Jira's default governor on an SQLite file, a client whose provider is Jira, an API
//! token sent as Basic with its owner's e-mail), over the simulator in-process.

#![allow(clippy::expect_used, dead_code)]

use std::sync::Arc;

use bytes::Bytes;
use headroom_core::clock::{Clock as _, Timestamp, TokioClock};
use headroom_core::governor::BoxFuture;
use headroom_core::governor::{GovernorConfig, PointsLimit};
use headroom_core::signal::Provider;
use headroom_core::{Governor, QuotaKey, Subject};
use headroom_http::sinks::{CredentialRegistry, MemoryCredentials};
use headroom_http::transport::{SimTransport, Transport, TransportError};
use headroom_http::{AuthScheme, Client, ClientParts, Credential, UrlPolicy};
use headroom_jira::sync::{self, Selection};
use headroom_sim::{JiraSiteSpec, LogEntry, SimConfig, Simulator, TokenSpec};
use headroom_store::{NewSyncRun, SharedGovernorOptions, SqliteStore, Store};
use headroom_sync::{RunOutcome, RunSummary, Runner, RunnerConfig};

pub const TOKEN: &str = "jira-api-token-0000000001";
/// The simulator's web root: the site's URL.
pub const SITE: &str = "http://127.0.0.1:7000";

pub struct Rig {
    pub sim: Simulator,
    pub clock: TokioClock,
    pub store: Arc<dyn Store>,
    pub runner: Runner,
    /// The SQLite file of `store`.
    pub db: std::path::PathBuf,
    /// Whose quota the runs spend.
    subject: Subject,
    _dir: tempfile::TempDir,
}

/// Where the rigs' clock starts unless told: 2027-01-15T08:00:00Z.
fn default_start() -> Timestamp {
    Timestamp::from_second(1_800_000_000).expect("valid")
}

/// Every table a full collection fills, with what the simulator says it must hold.
pub fn expected(counts: &headroom_sim::JiraSiteCounts, worklogs: bool) -> Vec<(&'static str, u64)> {
    vec![
        ("jira_projects", counts.projects as u64),
        ("jira_issues", counts.issues as u64),
        ("jira_comments", counts.comments as u64),
        ("jira_changelog", counts.changelog_entries as u64),
        (
            "jira_worklogs",
            if worklogs { counts.worklogs as u64 } else { 0 },
        ),
        ("jira_boards", counts.boards as u64),
        ("jira_sprints", counts.sprints as u64),
    ]
}

impl Rig {
    pub async fn new(spec: JiraSiteSpec) -> Self {
        Self::paced(spec, None).await
    }

    /// A rig whose governor paces each endpoint at `per_second` (Jira's documented steady
    /// rate, 100, when `None`), as an operator sets it for a site whose rate is known.
    pub async fn paced(spec: JiraSiteSpec, per_second: Option<u32>) -> Self {
        Self::build(spec, per_second, None, default_start()).await
    }

    /// A rig whose run goes as an OAuth app's token does: Bearer through Atlassian's gateway,
    /// the site's cloudId found by `accessible-resources` (the simulator serves the gateway on
    /// the site's own host), its points the app's ([`APP`]).
    pub async fn oauth(spec: JiraSiteSpec) -> Self {
        Self::with_auth(spec, None, None, default_start(), Auth::App).await
    }

    /// A rig whose clock starts at `start`.
    pub async fn at(spec: JiraSiteSpec, start: Timestamp) -> Self {
        Self::build(spec, None, None, start).await
    }

    /// A rig whose site answers every `POST` to a path ending in `refused_post` with `404`
    /// (an endpoint the site does not serve); the simulator never sees those requests.
    pub async fn without_post(spec: JiraSiteSpec, refused_post: &'static str) -> Self {
        Self::build(spec, None, Some(refused_post), default_start()).await
    }

    async fn build(
        spec: JiraSiteSpec,
        per_second: Option<u32>,
        refused_post: Option<&'static str>,
        start: Timestamp,
    ) -> Self {
        Self::with_auth(spec, per_second, refused_post, start, Auth::ApiToken).await
    }

    async fn with_auth(
        spec: JiraSiteSpec,
        per_second: Option<u32>,
        refused_post: Option<&'static str>,
        start: Timestamp,
        auth: Auth,
    ) -> Self {
        let clock = TokioClock::anchored_at(start);
        let mut config = SimConfig::default()
            .with_token(TokenSpec::user(TOKEN, "alice"))
            .with_jira_site(spec);
        config.public_base_url = SITE.to_owned();
        let sim = Simulator::new(config, clock).expect("a simulator");
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("headroom.db");
        let store: Arc<dyn Store> = Arc::new(
            SqliteStore::open(path.to_str().expect("utf-8"))
                .await
                .expect("a store"),
        );
        let mut governor_config = GovernorConfig::for_provider(Provider::Jira);
        if auth == Auth::App {
            // One request at a time: the grant rule keeps `cost × ceiling` of the app's points
            // in reserve, and a search page costs 101, so a test-sized hour fits only a small
            // ceiling (Jira's real pools hold 65,000 points and more).
            governor_config.ceiling = 1;
        }
        if let Some(rate) = per_second {
            governor_config.endpoint_rate = PointsLimit::paced_per_second(rate);
        }
        let state = store
            .quota_state(governor_config, SharedGovernorOptions::default())
            .expect("governor state");
        let governor = Governor::new(state, Arc::new(clock));
        let (credential, subject) = match auth {
            Auth::ApiToken => (credential(), Subject::User("alice".into())),
            Auth::App => (app_credential(), Subject::App(APP.into())),
        };
        let credentials = Arc::new(MemoryCredentials::default());
        credentials
            .record("127.0.0.1", credential.fingerprint(), &subject)
            .await;
        let base = match auth {
            Auth::ApiToken => SITE.to_owned(),
            Auth::App => {
                let mut parts = ClientParts::new(
                    UrlPolicy::for_api_url(SITE).expect("a loopback gateway"),
                    governor.clone(),
                    Arc::new(SimTransport::new(sim.clone())),
                    clock,
                );
                parts.credentials = credentials.clone();
                parts.config.provider = Provider::Jira;
                parts.config.api_version = None;
                let discovery = Client::new(parts);
                headroom_jira::gateway::gateway_base(&discovery, &credential, SITE, SITE)
                    .await
                    .expect("the site's gateway")
            }
        };
        let mut parts = ClientParts::new(
            UrlPolicy::for_api_url(&base).expect("a loopback site"),
            governor,
            Arc::new(Unserved {
                inner: SimTransport::new(sim.clone()),
                refused_post,
            }),
            clock,
        );
        parts.credentials = credentials;
        parts.config.jitter_seed = Some(5);
        parts.config.provider = Provider::Jira;
        parts.config.api_version = None;
        let runner = Runner::new(
            sync::stages(),
            Some(sync::SOURCE),
            store.clone(),
            Client::new(parts),
            Some(credential),
            clock,
            RunnerConfig::default(),
        )
        .expect("a valid graph");
        Rig {
            sim,
            clock,
            store,
            runner,
            db: path,
            subject,
            _dir: dir,
        }
    }

    /// A new run of `selection`.
    pub async fn start(&self, selection: &Selection) -> i64 {
        self.store
            .create_sync_run(&NewSyncRun {
                credential: None,
                kind: "jira".into(),
                target: selection.target(),
                key: match &self.subject {
                    Subject::User(login) => QuotaKey::user("127.0.0.1", login),
                    other => QuotaKey::new(Provider::Jira, "127.0.0.1", other.clone()),
                },
                requested_stages: None,
                created_at: self.clock.now(),
            })
            .await
            .expect("a run")
            .id
    }

    /// Runs `id` to its end, sleeping through hibernations on a paused clock; its summary.
    pub async fn finish(&self, id: i64) -> RunSummary {
        for _ in 0..10_000 {
            match self.runner.run(id).await.expect("the run") {
                RunOutcome::Done { summary } => return *summary,
                RunOutcome::Hibernating { until, .. } => self.sleep_until(until).await,
                RunOutcome::Failed { reason, .. } => panic!("the run failed: {reason}"),
            }
        }
        panic!("the run never finished");
    }

    /// Moves the shared clock to `until` at once.
    pub async fn sleep_until(&self, until: Timestamp) {
        tokio::time::pause();
        self.clock.sleep_until(until).await;
        tokio::time::resume();
    }

    /// Collects `selection` in a new run; its summary.
    pub async fn collect(&self, selection: &Selection) -> RunSummary {
        let id = self.start(selection).await;
        self.finish(id).await
    }

    pub async fn count(&self, table: &str) -> u64 {
        self.store.count_rows(table).await.expect("a count")
    }

    /// The rows of every table against what they must hold.
    pub async fn counts(&self, want: &[(&'static str, u64)]) -> Vec<(&'static str, u64)> {
        let mut got = Vec::new();
        for (table, _) in want {
            got.push((*table, self.count(table).await));
        }
        got
    }

    /// The first column of `sql`'s rows (a text; `CAST` others), read from the store's file.
    pub async fn column(&self, sql: &str) -> Vec<String> {
        use sqlx::Row as _;
        let url = format!("sqlite://{}?mode=ro", self.db.display());
        let pool = sqlx::SqlitePool::connect(&url)
            .await
            .expect("the store's file");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
            .fetch_all(&pool)
            .await
            .expect("a query");
        pool.close().await;
        rows.iter()
            .map(|r| {
                r.try_get::<Option<String>, _>(0)
                    .expect("a text")
                    .unwrap_or_default()
            })
            .collect()
    }

    pub fn log(&self) -> Vec<LogEntry> {
        self.sim.request_log()
    }
}

/// The simulator, but for one POST endpoint the site does not serve.
#[derive(Debug)]
struct Unserved {
    inner: SimTransport,
    refused_post: Option<&'static str>,
}

impl Transport for Unserved {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, TransportError>> {
        let unserved = self.refused_post.is_some_and(|p| {
            request.method() == http::Method::POST && request.uri().path().ends_with(p)
        });
        if unserved {
            let body = Bytes::from_static(
                br#"{"errorMessages":["The requested resource could not be found."],"errors":{}}"#,
            );
            let mut response = http::Response::new(body);
            *response.status_mut() = http::StatusCode::NOT_FOUND;
            return Box::pin(async move { Ok(response) });
        }
        self.inner.send(request)
    }
}

/// How a rig's run presents itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Auth {
    /// An API token, Basic with its owner's e-mail, on the site.
    ApiToken,
    /// An OAuth app's token, Bearer through the gateway.
    App,
}

/// The OAuth app of [`Rig::oauth`], by client id.
pub const APP: &str = "client-9";

/// An OAuth app's access token, naming its app.
pub fn app_credential() -> Credential {
    Credential::with_scheme(
        TOKEN,
        AuthScheme::AppBearer {
            client_id: APP.into(),
        },
    )
}

/// The run's credential: the API token, with its owner's e-mail.
pub fn credential() -> Credential {
    Credential::with_scheme(
        TOKEN,
        AuthScheme::Basic {
            user: "alice@example.com".into(),
        },
    )
}

/// The log entries of `method` on paths starting with `prefix`.
pub fn requests<'a>(log: &'a [LogEntry], method: &str, prefix: &str) -> Vec<&'a LogEntry> {
    log.iter()
        .filter(|e| e.method == method && e.path.starts_with(prefix))
        .collect()
}
