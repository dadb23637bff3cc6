//! `headroom run`: the continuous feed service — a poll tick (default 60 s) that polls the
//! source when it is due, and an enrichment cycle after every tick. The entity rows are the
//! backlog: every cycle rediscovers pending work from committed rows and reclaims lapsed
//! leases, so a lost process loses no work (the reference's 60 s reconciler, by construction).
//! Stops on SIGINT or SIGTERM between steps.
//!
//! Not yet: the HTTP server (`--listen`).

use std::process::ExitCode;

use clap::Args;
use headroom_core::clock::SignedDuration;
use headroom_github::feed::enrich::{EnrichOptions, EnrichSettings, Enricher};
use headroom_github::feed::poll::PollOutcome;

use crate::config::GlobalArgs;
use crate::ingest_cmd::{FeedArgs, poller};

/// `headroom run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Seconds between ticks.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    tick_secs: u64,
    /// Stop after this many ticks (default: run until stopped).
    #[arg(long)]
    ticks: Option<u64>,
    /// Minimum seconds between search requests (0 disables pacing).
    #[arg(long, env = "SEARCH_PACING_SECONDS", default_value_t = 6)]
    search_pacing: u64,
    #[command(flatten)]
    feed: FeedArgs,
}

/// Runs `headroom run`.
pub async fn run(global: &GlobalArgs, args: RunArgs) -> ExitCode {
    let (poller, _) = match poller(global, &args.feed).await {
        Ok(p) => p,
        Err(code) => return code,
    };
    let mut settings = EnrichSettings {
        lease: args.feed.enrichment_lease(),
        ..EnrichSettings::default()
    };
    settings.search.pacing =
        SignedDuration::from_secs(i64::try_from(args.search_pacing).unwrap_or(i64::MAX));
    let enricher = Enricher::new(poller.clone(), settings);
    let tick = SignedDuration::from_secs(i64::try_from(args.tick_secs).unwrap_or(60));
    let mut done = 0u64;
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    let code = loop {
        let step = async {
            match poller.poll_once(false).await {
                Ok(PollOutcome::Completed { run_id, counts, .. }) => {
                    tracing::info!(event = "service.tick", run_id = %run_id,
                        events_created = counts.events_created);
                    if counts.events_created > 0 {
                        tracing::info!(event = "enrichment.dispatched", reason = "ingestion");
                    }
                }
                Ok(other) => tracing::debug!(event = "service.tick", outcome = ?other),
                Err(e) => tracing::error!(event = "ingestion.cycle_failed", error = %e),
            }
            if let Err(e) = enricher.run(EnrichOptions::default()).await {
                tracing::error!(event = "enrichment.cycle_failed", error = %e);
            }
        };
        tokio::select! {
            () = step => {}
            () = &mut shutdown => break ExitCode::SUCCESS,
        }
        done += 1;
        if args.ticks.is_some_and(|n| done >= n) {
            break ExitCode::SUCCESS;
        }
        tokio::select! {
            () = poller.clock.sleep(tick) => {}
            () = &mut shutdown => break ExitCode::SUCCESS,
        }
    };
    tracing::info!(event = "service.stopped", ticks = done);
    println!("headroom run: stopped after {done} tick(s)");
    poller.store.close().await;
    code
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
