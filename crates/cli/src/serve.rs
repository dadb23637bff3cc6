//! Wiring between the CLI and headroom-server: the reporting knobs, the ledger identity the
//! status reads, and the status settings both `headroom status --json` and the HTTP server of
//! `headroom run` publish — so the two print the same document.

use clap::Args;
use headroom_core::telemetry;
use headroom_github::feed::enrich::EnrichSettings;
use headroom_server::{Reporting, SchedulerSettings, StatusSettings};
use headroom_store::StoreRead;

use crate::config::{ConfigError, Settings};
use crate::ingest_cmd::FeedArgs;
use crate::outcome::CliError;

/// What `/status` reports over (reporting only: never what the service does).
#[derive(Debug, Clone, Copy, Args)]
pub struct ReportingArgs {
    /// Seconds behind the status's batches and throughput blocks.
    #[arg(long, env = "ENRICHMENT_METRICS_WINDOW_SECONDS", default_value_t = 3600,
        value_parser = clap::value_parser!(u64).range(1..=31_536_000))]
    pub metrics_window: u64,
    /// Seconds of sample needed before the catch-up verdict says anything.
    #[arg(long, env = "CATCH_UP_MIN_SAMPLE_SECONDS", default_value_t = 900,
        value_parser = clap::value_parser!(u64).range(0..=31_536_000))]
    pub catch_up_min_sample: u64,
    /// Seconds back (on push_events.created_at) the coverage percentages look.
    #[arg(long, env = "ENRICHMENT_COVERAGE_WINDOW_SECONDS", default_value_t = 86_400,
        value_parser = clap::value_parser!(u64).range(1..=31_536_000))]
    pub coverage_window: u64,
}

impl ReportingArgs {
    fn reporting(&self) -> Reporting {
        Reporting {
            metrics_window_seconds: self.metrics_window,
            catch_up_min_sample_seconds: self.catch_up_min_sample,
            coverage_window_seconds: self.coverage_window,
        }
    }
}

/// Opens the database of a command that only reads (`status`, `sync status`, `serve`)
/// read-only ([`headroom_store::read_only`]); a refusal names `--db`.
pub async fn open_read_only(db: &str) -> Result<headroom_store::read_only::ReadStores, CliError> {
    headroom_store::read_only::open_read_only(db)
        .await
        .map_err(|e| {
            CliError::refused(&ConfigError {
                setting: "--db".into(),
                problem: e.to_string(),
            })
        })
}

/// The ledger subject the configured credential spends, without asking the provider: the
/// outbound IP with no token, else the owner stored for the token (none before the first
/// request discovered it — and then no ledger row for it exists either).
pub async fn stored_subject(settings: &Settings, store: &dyn StoreRead) -> Option<String> {
    let Some(credential) = &settings.credential else {
        let outbound = headroom_http::ClientConfig::default().unauthenticated_subject;
        return Some(headroom_store::subject_label(&headroom_core::Subject::Ip(
            outbound.as_str().into(),
        )));
    };
    match store
        .credential(settings.policy.host(), credential.fingerprint())
        .await
    {
        Ok(Some(c)) => Some(format!("{}:{}", c.subject_kind.as_str(), c.owner_login)),
        Ok(None) => None,
        Err(e) => {
            tracing::warn!(event = telemetry::STORE_READ_FAILED, error = %e);
            None
        }
    }
}

/// The status settings of a feed configuration.
pub fn status_settings(
    settings: &Settings,
    feed: &FeedArgs,
    enrich: &EnrichSettings,
    reporting: &ReportingArgs,
    tick_seconds: Option<u64>,
    subject: Option<String>,
) -> Result<StatusSettings, ConfigError> {
    let poll = feed.poll_settings(settings.credential.is_some());
    let scheduler = SchedulerSettings::of(&poll, enrich, tick_seconds, reporting.reporting())
        .map_err(|e| ConfigError {
            setting: "--max-pages".into(),
            problem: e.to_string(),
        })?;
    Ok(StatusSettings {
        host: settings.policy.host().to_owned(),
        subject,
        scheduler,
    })
}

/// The address to listen on: an IP address and port (`localhost:PORT` is 127.0.0.1), on
/// loopback unless `allow_remote` — the HTTP surface has no authentication.
pub fn listen_address(
    listen: &str,
    allow_remote: bool,
) -> Result<std::net::SocketAddr, ConfigError> {
    let refuse = |problem: String| ConfigError {
        setting: "--listen".into(),
        problem,
    };
    let parsed = match listen.strip_prefix("localhost:") {
        Some(port) => format!("127.0.0.1:{port}").parse(),
        None => listen.parse::<std::net::SocketAddr>(),
    };
    let addr =
        parsed.map_err(|e| refuse(format!("`{listen}` is not an IP address and port: {e}")))?;
    if !allow_remote && !addr.ip().is_loopback() {
        return Err(refuse(format!(
            "{addr} is not a loopback address: the HTTP API and dashboard have no \
             authentication, so they serve 127.0.0.1 (or ::1) only unless --allow-remote says \
             otherwise"
        )));
    }
    Ok(addr)
}

/// Where `headroom run` serves HTTP.
#[derive(Debug, Clone, Args)]
pub struct ListenArgs {
    /// Serve the quota dashboard (/) and the read-only HTTP API (/api/…, /status, /health,
    /// /metrics) on this address (port 0: any free port; the address is printed).
    #[arg(long, env = "HEADROOM_LISTEN", default_value = "127.0.0.1:3000")]
    pub listen: String,
    /// Serve no HTTP at all.
    #[arg(long)]
    pub no_listen: bool,
    /// Accept a `--listen` address other machines can reach (the API and dashboard have no
    /// authentication: put them behind something that has).
    #[arg(long)]
    pub allow_remote: bool,
    #[command(flatten)]
    pub reporting: ReportingArgs,
}

/// The HTTP server running beside the service loop.
#[derive(Debug)]
pub struct Running {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    clock: headroom_core::clock::TokioClock,
}

/// How long requests in flight may finish after a stop. The dashboard's event streams never
/// finish on their own, so once this has passed the server is dropped with them still open.
const SHUTDOWN_GRACE: headroom_core::clock::SignedDuration =
    headroom_core::clock::SignedDuration::from_secs(5);

impl Running {
    /// Stops accepting, lets requests in flight finish (within [`SHUTDOWN_GRACE`]), and
    /// waits for the server to end.
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        let ended = self.clock.timeout(SHUTDOWN_GRACE, &mut self.task).await;
        match ended {
            Some(Ok(Ok(()))) => tracing::info!(event = telemetry::SERVER_STOPPED),
            Some(Ok(Err(e))) => tracing::error!(event = telemetry::SERVER_FAILED, error = %e),
            Some(Err(e)) => tracing::error!(event = telemetry::SERVER_FAILED, error = %e),
            None => {
                self.task.abort();
                tracing::info!(event = telemetry::SERVER_STOPPED);
            }
        }
    }
}

/// Binds the listener and starts serving, unless `--no-listen`. A bind failure refuses to run
/// (exit 2): the service would otherwise run without the surface it was asked for.
pub async fn start(
    listen: &ListenArgs,
    status: StatusSettings,
    db: &str,
    clock: headroom_core::clock::TokioClock,
) -> Result<Option<Running>, CliError> {
    if listen.no_listen {
        return Ok(None);
    }
    let (_, feed, report) = headroom_store::feed_report::open_report(db)
        .await
        .map_err(|e| CliError::refused(&e))?;
    let quota = headroom_store::quota_history::open_quota_history_to_serve(db)
        .await
        .map_err(|e| CliError::refused(&e))?;
    let addr =
        listen_address(&listen.listen, listen.allow_remote).map_err(|e| CliError::refused(&e))?;
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        CliError::refused(&ConfigError {
            setting: "--listen".into(),
            problem: format!("cannot listen on {}: {e}", listen.listen),
        })
    })?;
    let addr = listener.local_addr().map_err(|e| CliError::failed(&e))?;
    tracing::info!(event = telemetry::SERVER_LISTENING, addr = %addr);
    outln!("headroom run: serving HTTP on http://{addr}");
    let clock_for_stop = clock;
    let clock: headroom_core::clock::SharedClock = std::sync::Arc::new(clock);
    // The same page and API as `headroom serve`, over the service's own database.
    let dashboard = headroom_server::DashboardState {
        app: headroom_server::AppState {
            report,
            feed,
            clock: clock.clone(),
            settings: std::sync::Arc::new(status),
            status: Default::default(),
        },
        store: quota.store,
        history: quota.history,
        clock,
        settings: headroom_server::DashboardSettings::default(),
        pacer: headroom_core::clock::TokioClock::system(),
        snapshots: Default::default(),
    };
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(headroom_server::serve_dashboard(
        listener,
        dashboard,
        async move {
            let _ = stopped.wait_for(|s| *s).await;
        },
    ));
    Ok(Some(Running {
        stop,
        task,
        clock: clock_for_stop,
    }))
}
