//! `headroom status [--json]`: the feed's persisted state for a terminal — the event source's
//! five schedule components, the core and search ledgers, the enrichment counts per class and
//! the summary figures; with `--json`, the status document `GET /status` serves, built by
//! headroom-server. Reads only: no provider request, no budget, no write.

use clap::Args;
use headroom_core::clock::{Clock as _, TokioClock};
use headroom_store::feed_report::open_report;

use crate::config::{GlobalArgs, ProcessEnv};
use crate::enrich_cmd::EnrichTuning;
use crate::ingest_cmd::{FeedArgs, poller, print_summary};
use crate::outcome::{CliError, CommandResult, Outcome};
use crate::serve::{ReportingArgs, status_settings, stored_subject};

/// `headroom status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print the status document (the same JSON `GET /status` serves) instead of text.
    #[arg(long)]
    json: bool,
    /// Minimum seconds between search requests (published in the document's scheduler).
    #[arg(long, env = "SEARCH_PACING_SECONDS", default_value_t = 6)]
    search_pacing: u64,
    #[command(flatten)]
    tuning: EnrichTuning,
    #[command(flatten)]
    feed: FeedArgs,
    #[command(flatten)]
    reporting: ReportingArgs,
}

/// Runs `headroom status`.
pub async fn run(global: &GlobalArgs, args: StatusArgs) -> CommandResult {
    global
        .resolve(&ProcessEnv)
        .and_then(|settings| settings.require_existing_database())
        .map_err(|e| CliError::refused(&e))?;
    if args.json {
        return json(global, &args).await;
    }
    let (poller, _, _) = poller(global, &args.feed).await?;
    print_summary(&poller).await;
    outln!();
    crate::enrich_cmd::print_enrichment_state(&poller.state).await;
    poller.store.close().await;
    Ok(Outcome::Success)
}

/// The status document, exactly as `GET /status` serves it.
async fn json(global: &GlobalArgs, args: &StatusArgs) -> CommandResult {
    let settings = global
        .resolve(&ProcessEnv)
        .map_err(|e| CliError::refused(&e))?;
    let enrich = args
        .tuning
        .settings(args.feed.enrichment_lease(), args.search_pacing);
    let (store, feed, report) = open_report(&settings.db)
        .await
        .map_err(|e| CliError::refused(&e))?;
    let subject = stored_subject(&settings, store.as_ref()).await;
    let status = match status_settings(
        &settings,
        &args.feed,
        &enrich,
        &args.reporting,
        None,
        subject,
    ) {
        Ok(s) => s,
        Err(e) => {
            store.close().await;
            return Err(CliError::refused(&e));
        }
    };
    let now = TokioClock::system().now();
    let body = headroom_server::status::build(report.as_ref(), feed.as_ref(), &status, now).await;
    store.close().await;
    let body = body.map_err(|e| CliError::failed(&e))?;
    match serde_json::to_string_pretty(&body) {
        Ok(text) => outln!("{text}"),
        Err(e) => return Err(CliError::failed(&e)),
    }
    Ok(Outcome::Success)
}
