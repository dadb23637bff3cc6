//! `headroom enrich [--limit N] [--stage batch|detail] [--class actor|repository]`: one
//! enrichment run — Search batches first, then detail fallbacks — inside both ledgers.
//! `--limit` counts requests, not entities. Exit 0 ran, deferred or had nothing to do; 1 the
//! attempt failed; 2 refused.

use std::sync::Arc;

use clap::{Args, ValueEnum};
use headroom_core::clock::SignedDuration;
use headroom_github::feed::enrich::{EnrichOptions, EnrichReport, EnrichSettings, Enricher};
use headroom_store::feed_state::{EntityKind, FeedState, FeedStateRead, Lane};
use serde_json::json;

use crate::config::GlobalArgs;
use crate::ingest_cmd::{FeedArgs, fmt_ts, poller};
use crate::outcome::{CommandResult, Outcome};

#[derive(Debug, Clone, Copy, ValueEnum)]
enum StageArg {
    Batch,
    Detail,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ClassArg {
    Actor,
    Repository,
}

/// Enrichment scheduling knobs shared by `enrich` and `run` (flag, else environment, else the
/// reference's default).
#[derive(Debug, Clone, Args)]
pub struct EnrichTuning {
    /// Batch-rotation weight of actors (1/1 alternates; an empty lane yields its slot).
    #[arg(long, env = "ACTOR_ENRICHMENT_WEIGHT", default_value_t = 1)]
    pub actor_weight: u32,
    /// Batch-rotation weight of repositories.
    #[arg(long, env = "REPOSITORY_ENRICHMENT_WEIGHT", default_value_t = 1)]
    pub repository_weight: u32,
    /// Seconds before a complete actor may be re-fetched (refreshes only fill spare batch slots).
    #[arg(long, env = "ACTOR_REFRESH_TTL_SECONDS", default_value_t = 86_400)]
    pub actor_refresh_ttl: u64,
    /// Seconds before a complete repository may be re-fetched.
    #[arg(long, env = "REPOSITORY_REFRESH_TTL_SECONDS", default_value_t = 86_400)]
    pub repository_refresh_ttl: u64,
    /// Only entities seen pushing within this many seconds are refreshed at all.
    #[arg(long, env = "REFRESH_ACTIVE_WITHIN_SECONDS", default_value_t = 604_800)]
    pub refresh_active_within: u64,
}

impl EnrichTuning {
    /// The enrichment settings with these knobs, the claim lease and the search pacing.
    pub fn settings(&self, lease: SignedDuration, pacing_secs: u64) -> EnrichSettings {
        let secs = |s: u64| SignedDuration::from_secs(i64::try_from(s).unwrap_or(i64::MAX));
        let mut settings = EnrichSettings {
            lease,
            actor_weight: self.actor_weight,
            repository_weight: self.repository_weight,
            actor_refresh_ttl: secs(self.actor_refresh_ttl),
            repository_refresh_ttl: secs(self.repository_refresh_ttl),
            refresh_active_within: secs(self.refresh_active_within),
            ..EnrichSettings::default()
        };
        settings.search.pacing = secs(pacing_secs);
        settings
    }
}

/// `headroom enrich`.
#[derive(Debug, Args)]
pub struct EnrichArgs {
    /// At most this many requests (search batches and detail fallbacks), not entities.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    limit: Option<u64>,
    /// Only one lane.
    #[arg(long, value_enum)]
    stage: Option<StageArg>,
    /// Only one class.
    #[arg(long, value_enum)]
    class: Option<ClassArg>,
    /// Minimum seconds between search requests (0 disables pacing).
    #[arg(long, env = "SEARCH_PACING_SECONDS", default_value_t = 6)]
    search_pacing: u64,
    /// Print one JSON object (with the reasons' and statuses' codes) instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    tuning: EnrichTuning,
    #[command(flatten)]
    feed: FeedArgs,
}

/// Prints what an enrichment run did, in words (`--json` keeps the codes).
pub fn print_report(r: &EnrichReport) {
    if r.requests == 0 && r.deferrals.is_empty() {
        outln!("Nothing to enrich — no eligible candidate");
        return;
    }
    let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    outln!(
        "Requests:                         {} ({}, {})",
        r.requests,
        plural(r.search_batches, "search batch", "search batches"),
        plural(r.detail_requests, "detail fallback", "detail fallbacks")
    );
    outln!("Entities enriched:                {}", r.applied);
    outln!("Admitted to detail fallback:      {}", r.fallbacks_admitted);
    outln!("Given up (gone or refused):       {}", r.terminal);
    outln!("Retries scheduled:                {}", r.retries);
    for (reason, until) in &r.deferrals {
        let words = deferral_words(reason);
        match until {
            Some(u) => outln!("Waiting until {} — {words}", fmt_ts(*u)),
            None => outln!("Waiting — {words}"),
        }
    }
}

/// A deferral's reason (the enricher's code, kept in `--json` and the logs) in words; a code
/// added later reads as itself rather than not at all.
fn deferral_words(code: &str) -> String {
    match code {
        "search_blocked" => "search is blocked by a rate limit the provider answered",
        "search_reserve" => "search requests are down to their reserve for this window",
        "search_pacing" => "search requests are paced (--search-pacing seconds apart)",
        "rate_limited" => "the provider's rate limit",
        "globally_blocked" => "core requests are blocked by a rate limit the provider answered",
        "core_window_uninitialized" => {
            "the core quota's window is not known yet: the next poll (`headroom ingest`) opens it"
        }
        "reserve_reached" => "core requests are down to their reserve for this window",
        "detail_allowance" => "the detail lookups' share of this window is spent",
        other => other,
    }
    .to_owned()
}

/// Prints the enrichment status counts per class.
pub async fn print_enrichment_state(state: &Arc<dyn FeedState>) {
    print_enrichment_counts(state.as_ref()).await;
}

/// [`print_enrichment_state`] from the read half of the feed's state.
pub async fn print_enrichment_counts(state: &dyn FeedStateRead) {
    for kind in [EntityKind::Actor, EntityKind::Repository] {
        let label = match kind {
            EntityKind::Actor => "actors:",
            EntityKind::Repository => "repositories:",
        };
        match state.enrichment_counts(kind).await {
            Ok(c) => outln!(
                "{label:<14} {} complete · {} pending · {} to retry · {} given up",
                c.complete,
                c.pending,
                c.retryable_failure,
                c.permanent_failure
            ),
            Err(e) => outln!("{label:<14} unavailable ({e})"),
        }
    }
}

/// The status counts per class with their codes, for `--json`.
async fn enrichment_counts_json(state: &dyn FeedStateRead) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    for kind in [EntityKind::Actor, EntityKind::Repository] {
        let value = match state.enrichment_counts(kind).await {
            Ok(c) => serde_json::to_value(c).unwrap_or_default(),
            Err(e) => json!({ "error": headroom_core::redact(&e.to_string()) }),
        };
        out.insert(kind.as_str().to_owned(), value);
    }
    serde_json::Value::Object(out)
}

/// Runs `headroom enrich`.
pub async fn run(global: &GlobalArgs, args: EnrichArgs) -> CommandResult {
    let (poller, _, _) = poller(global, &args.feed).await?;
    let settings = args
        .tuning
        .settings(args.feed.enrichment_lease(), args.search_pacing);
    let state = poller.state.clone();
    let store = poller.store.clone();
    let enricher = Enricher::new(poller, settings);
    let options = EnrichOptions {
        limit: args.limit,
        lane: args.stage.map(|s| match s {
            StageArg::Batch => Lane::Batch,
            StageArg::Detail => Lane::Detail,
        }),
        class: args.class.map(|c| match c {
            ClassArg::Actor => EntityKind::Actor,
            ClassArg::Repository => EntityKind::Repository,
        }),
    };
    let cycle = enricher.run(options).await;
    enricher.poller.client.flush_readings().await;
    let code = if cycle.is_ok() {
        Outcome::Success
    } else {
        Outcome::Unsuccessful
    };
    if args.json {
        let (report, error) = match &cycle {
            Ok(report) => (serde_json::to_value(report).unwrap_or_default(), None),
            Err(e) => (json!(null), Some(headroom_core::redact(&e.to_string()))),
        };
        let enrichment = enrichment_counts_json(state.as_ref()).await;
        outln!(
            "{}",
            json!({ "ok": error.is_none(), "error": error, "report": report, "enrichment": enrichment })
        );
    } else {
        match &cycle {
            Ok(report) => print_report(report),
            Err(e) => outln!(
                "Enrichment failed: {}",
                headroom_core::redact(&e.to_string())
            ),
        }
        outln!();
        print_enrichment_state(&state).await;
    }
    store.close().await;
    Ok(code)
}
