//! `headroom status [--json]`: the feed's persisted state for a terminal — the event source's
//! five schedule components, the core and search ledgers, the enrichment counts per class and
//! the summary figures; with `--json`, the status document `GET /status` serves, built by
//! headroom-server. Reads only: no provider request, no budget, no write.

use clap::Args;
use headroom_core::clock::{Clock as _, TokioClock};
use headroom_store::read_only::ReadStores;

use crate::config::{GlobalArgs, ProcessEnv, Settings};
use crate::enrich_cmd::EnrichTuning;
use crate::ingest_cmd::{FeedArgs, print_feed_summary};
use crate::outcome::{CliError, CommandResult, Outcome};
use crate::serve::{ReportingArgs, open_read_only, status_settings, stored_subject};

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

/// Runs `headroom status`. The database is opened read-only: it works on one in a
/// read-only directory, or a copy on read-only media, and never changes one.
pub async fn run(global: &GlobalArgs, args: StatusArgs) -> CommandResult {
    let settings = global
        .resolve(&ProcessEnv)
        .and_then(|settings| settings.require_existing_database().map(|()| settings))
        .map_err(|e| CliError::refused(&e))?;
    let stores = open_read_only(&settings.db).await?;
    let subject = stored_subject(&settings, stores.store.as_ref()).await;
    let result = if args.json {
        json(&settings, &args, &stores, subject).await
    } else {
        text(&settings, &stores, subject).await;
        Ok(Outcome::Success)
    };
    stores.store.close().await;
    result
}

/// The feed's state for a terminal: what `ingest` prints after its cycle.
async fn text(settings: &Settings, stores: &ReadStores, subject: Option<String>) {
    // The ledger of the identity the stored credential belongs to; with none stored yet,
    // unknown (finding it out is a request, and this command sends none).
    let core = match &subject {
        Some(subject) => stores
            .feed
            .core_ledger(settings.policy.host(), subject)
            .await
            .map_err(|e| e.to_string()),
        None => Ok(None),
    };
    print_feed_summary(stores.feed.as_ref(), core, TokioClock::system().now()).await;
    outln!();
    crate::enrich_cmd::print_enrichment_counts(stores.feed.as_ref()).await;
}

/// The status document, exactly as `GET /status` serves it.
async fn json(
    settings: &Settings,
    args: &StatusArgs,
    stores: &ReadStores,
    subject: Option<String>,
) -> CommandResult {
    let enrich = args
        .tuning
        .settings(args.feed.enrichment_lease(), args.search_pacing);
    let status = status_settings(
        settings,
        &args.feed,
        &enrich,
        &args.reporting,
        None,
        subject,
    )
    .map_err(|e| CliError::refused(&e))?;
    let now = TokioClock::system().now();
    let body =
        headroom_server::status::build(stores.report.as_ref(), stores.feed.as_ref(), &status, now)
            .await
            .map_err(|e| CliError::failed(&e))?;
    match serde_json::to_string_pretty(&body) {
        Ok(text) => outln!("{text}"),
        Err(e) => return Err(CliError::failed(&e)),
    }
    Ok(Outcome::Success)
}
