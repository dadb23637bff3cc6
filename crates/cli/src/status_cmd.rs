//! `headroom status [--json]`: the feed's persisted state for a terminal — the event source's
//! five schedule components, the core and search ledgers, the enrichment counts per class and
//! the summary figures. Reads only: no provider request, no budget, no write.

use std::process::ExitCode;

use clap::Args;
use headroom_core::clock::Clock;
use headroom_github::feed::poll::SOURCE_TYPE;
use headroom_store::feed_state::EntityKind;
use serde_json::json;

use crate::config::GlobalArgs;
use crate::ingest_cmd::{FeedArgs, poller, print_summary};

/// `headroom status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    feed: FeedArgs,
}

/// Runs `headroom status`.
pub async fn run(global: &GlobalArgs, args: StatusArgs) -> ExitCode {
    let (poller, _) = match poller(global, &args.feed).await {
        Ok(p) => p,
        Err(code) => return code,
    };
    let state = poller.state.clone();
    let now = poller.clock.now();
    if !args.json {
        print_summary(&poller).await;
        println!();
        crate::enrich_cmd::print_enrichment_state(&state).await;
        poller.store.close().await;
        return ExitCode::SUCCESS;
    }
    let overview = state.feed_overview().await;
    let source = state.event_source(SOURCE_TYPE).await;
    let ledger = poller.core_ledger().await;
    let actors = state.enrichment_counts(EntityKind::Actor).await;
    let repositories = state.enrichment_counts(EntityKind::Repository).await;
    let (Ok(overview), Ok(source), Ok(ledger), Ok(actors), Ok(repositories)) =
        (overview, source, ledger, actors, repositories)
    else {
        poller.store.close().await;
        return crate::failed(&"cannot read the persisted state");
    };
    let body = json!({
        "captured_at": now.to_string(),
        "sources": source.iter().map(|source| json!({
            "source_type": source.source_type,
            "status": source.status,
            "enabled": source.enabled,
            "cadence_due_at": source.cadence_due_at.map(|t| t.to_string()),
            "poll_floor_until": source.poll_floor_until.map(|t| t.to_string()),
            "retry_not_before_at": source.retry_not_before_at.map(|t| t.to_string()),
            "global_blocked_until": ledger.as_ref().and_then(|l| l.global_blocked_until).map(|t| t.to_string()),
            "next_poll_at": source.next_poll_at.map(|t| t.to_string()),
            "consecutive_failures": source.consecutive_failures,
        })).collect::<Vec<_>>(),
        "ledger": {
            "present": ledger.is_some(),
            "window_status": ledger.as_ref().map(|l| l.window_status.clone()),
            "limit": ledger.as_ref().and_then(|l| l.limit),
            "remaining": ledger.as_ref().and_then(|l| l.remaining),
            "reset_at": ledger.as_ref().and_then(|l| l.reset_at).map(|t| t.to_string()),
            "poll": {"used": ledger.as_ref().map(|l| l.poll_used), "allowance": ledger.as_ref().map(|l| l.poll_allowance)},
            "detail_fallback": {"used": ledger.as_ref().map(|l| l.enrichment_used), "allowance": ledger.as_ref().map(|l| l.enrichment_allowance)},
            "co_tenant_usage": ledger.as_ref().map(|l| l.co_tenant_usage),
            "consecutive_secondary_limits": ledger.as_ref().map(|l| l.consecutive_secondary_limits),
        },
        "enrichment": {"actors": actors, "repositories": repositories},
        "totals": {
            "push_events": overview.push_events,
            "quarantined": overview.quarantined,
            "latest_completed_run": overview.latest_completed_run.map(|(id, at)| json!({"run_id": id, "finished_at": at.to_string()})),
        },
    });
    match serde_json::to_string_pretty(&body) {
        Ok(text) => println!("{text}"),
        Err(e) => return crate::failed(&e),
    }
    poller.store.close().await;
    ExitCode::SUCCESS
}
