//! `headroom serve --db URL [--listen ADDR]`: the read-only dashboard server over a database —
//! beside `sync worker` processes, or over a copied database. It runs no worker, sends no
//! provider request and writes nothing: it serves headroom-server's feed routes and the quota
//! dashboard (`/`, `/api/quota`, `/api/sync/runs`, `/api/events`) until SIGTERM or Ctrl-C.
//!
//! It listens on loopback only unless `--allow-remote` says otherwise: the dashboard has no
//! authentication, so an address another machine could reach is refused (exit 2).

use std::sync::Arc;

use clap::Args;
use headroom_core::clock::{SignedDuration, TokioClock};
use headroom_core::telemetry;
use headroom_server::{AppState, DashboardSettings, DashboardState};

use crate::config::{ConfigError, GlobalArgs, ProcessEnv};
use crate::enrich_cmd::EnrichTuning;
use crate::ingest_cmd::FeedArgs;
use crate::outcome::{CliError, CommandResult, Outcome};
use crate::serve::{ReportingArgs, open_read_only, status_settings, stored_subject};

/// `headroom serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve on this loopback address (port 0: any free port; the address is printed).
    #[arg(long, env = "HEADROOM_LISTEN", default_value = "127.0.0.1:3000")]
    listen: String,
    /// Accept a `--listen` address other machines can reach. The dashboard has no
    /// authentication: put it behind something that has.
    #[arg(long)]
    allow_remote: bool,
    /// Seconds after which a process that stopped reporting no longer counts as in flight.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    live_window: u64,
    /// Minimum seconds between search requests (published in the status document).
    #[arg(long, env = "SEARCH_PACING_SECONDS", default_value_t = 6)]
    search_pacing: u64,
    #[command(flatten)]
    tuning: EnrichTuning,
    #[command(flatten)]
    feed: FeedArgs,
    #[command(flatten)]
    reporting: ReportingArgs,
}

/// Runs `headroom serve`.
pub async fn run(global: &GlobalArgs, args: ServeArgs) -> CommandResult {
    let settings = global
        .resolve(&ProcessEnv)
        .map_err(|e| CliError::refused(&e))?;
    settings
        .require_existing_database()
        .map_err(|e| CliError::refused(&e))?;
    let addr = crate::serve::listen_address(&args.listen, args.allow_remote)
        .map_err(|e| CliError::refused(&e))?;
    let enrich = args
        .tuning
        .settings(args.feed.enrichment_lease(), args.search_pacing);
    // Read-only: it works on a database in a read-only directory, or a copy on read-only
    // media, and never changes one.
    let stores = open_read_only(&settings.db).await?;
    let subject = stored_subject(&settings, stores.store.as_ref()).await;
    let status = status_settings(
        &settings,
        &args.feed,
        &enrich,
        &args.reporting,
        None,
        subject,
    )
    .map_err(|e| CliError::refused(&e))?;
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        CliError::refused(&ConfigError {
            setting: "--listen".into(),
            problem: format!("cannot listen on {addr}: {e}"),
        })
    })?;
    let bound = listener.local_addr().map_err(|e| CliError::failed(&e))?;
    tracing::info!(event = telemetry::SERVER_LISTENING, addr = %bound);
    outln!("headroom serve: dashboard on http://{bound}/");
    let clock = Arc::new(TokioClock::system());
    let live_window = SignedDuration::from_secs(i64::try_from(args.live_window).unwrap_or(30));
    let dashboard = DashboardState {
        app: AppState {
            report: stores.report.clone(),
            feed: stores.feed.clone(),
            clock: clock.clone(),
            settings: Arc::new(status),
            status: Default::default(),
        },
        store: stores.store.clone(),
        history: stores.history.clone(),
        clock,
        settings: DashboardSettings {
            live_window,
            ..DashboardSettings::default()
        },
        pacer: headroom_core::clock::TokioClock::system(),
        snapshots: Default::default(),
    };
    // No pruning of old history here: the processes that write it (`run`, `sync worker`)
    // prune it.
    let served = serve_until_stopped(listener, dashboard).await;
    stores.store.close().await;
    match served {
        Ok(()) => {
            tracing::info!(event = telemetry::SERVER_STOPPED);
            outln!("headroom serve: stopped");
            Ok(Outcome::Success)
        }
        Err(e) => {
            tracing::error!(event = telemetry::SERVER_FAILED, error = %e);
            Err(CliError::failed(&e))
        }
    }
}

/// How long requests in flight may finish after a stop signal. Event streams never finish on
/// their own, so once this has passed the server is dropped with them still open.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Serves until SIGTERM or Ctrl-C, then lets requests finish within [`SHUTDOWN_GRACE`].
async fn serve_until_stopped(
    listener: tokio::net::TcpListener,
    dashboard: DashboardState,
) -> std::io::Result<()> {
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let server = headroom_server::serve_dashboard(listener, dashboard, async move {
        let _ = stopped.wait_for(|s| *s).await;
    });
    tokio::pin!(server);
    tokio::select! {
        served = &mut server => served,
        () = crate::signals::stop_requested() => {
            let _ = stop.send(true);
            tokio::time::timeout(SHUTDOWN_GRACE, server).await.unwrap_or(Ok(()))
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_loopback_addresses_are_served_unless_remote_is_allowed() {
        use crate::serve::listen_address;
        assert!(listen_address("127.0.0.1:0", false).is_ok());
        assert!(listen_address("[::1]:3000", false).is_ok());
        assert_eq!(
            listen_address("localhost:3000", false).ok(),
            "127.0.0.1:3000".parse().ok()
        );
        assert!(listen_address("0.0.0.0:3000", false).is_err());
        assert!(listen_address("192.0.2.1:3000", false).is_err());
        assert!(listen_address("0.0.0.0:3000", true).is_ok());
        assert!(listen_address("example.org:3000", true).is_err());
    }
}
