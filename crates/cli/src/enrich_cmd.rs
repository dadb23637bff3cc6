//! `headroom enrich [--limit N] [--stage batch|detail] [--class actor|repository]`: one
//! enrichment run — Search batches first, then detail fallbacks — inside both ledgers.
//! `--limit` counts requests, not entities. Exit 0 ran, deferred or had nothing to do; 1 the
//! attempt failed; 2 refused.

use std::sync::Arc;

use clap::{Args, ValueEnum};
use headroom_core::clock::SignedDuration;
use headroom_github::feed::enrich::{EnrichOptions, EnrichReport, EnrichSettings, Enricher};
use headroom_store::feed_state::{EntityKind, FeedState, FeedStateRead, Lane};

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
    #[command(flatten)]
    tuning: EnrichTuning,
    #[command(flatten)]
    feed: FeedArgs,
}

/// Prints what an enrichment run did.
pub fn print_report(r: &EnrichReport) {
    if r.requests == 0 && r.deferrals.is_empty() {
        outln!("Nothing to enrich — no eligible candidate");
        return;
    }
    outln!(
        "Requests:                         {} ({} search batches, {} detail fallbacks)",
        r.requests,
        r.search_batches,
        r.detail_requests
    );
    outln!("Entities enriched:                {}", r.applied);
    outln!("Admitted to detail fallback:      {}", r.fallbacks_admitted);
    outln!("Terminal (entity-specific):       {}", r.terminal);
    outln!("Retries scheduled:                {}", r.retries);
    for (reason, until) in &r.deferrals {
        match until {
            Some(u) => outln!("Deferred until {} — {reason}", fmt_ts(*u)),
            None => outln!("Deferred — {reason}"),
        }
    }
}

/// Prints the enrichment status counts per class.
pub async fn print_enrichment_state(state: &Arc<dyn FeedState>) {
    print_enrichment_counts(state.as_ref()).await;
}

/// [`print_enrichment_state`] from the read half of the feed's state.
pub async fn print_enrichment_counts(state: &dyn FeedStateRead) {
    for kind in [EntityKind::Actor, EntityKind::Repository] {
        match state.enrichment_counts(kind).await {
            Ok(c) => outln!(
                "{:<14} complete {} · pending {} · retryable_failure {} · permanent_failure {}",
                match kind {
                    EntityKind::Actor => "actors:",
                    EntityKind::Repository => "repositories:",
                },
                c.complete,
                c.pending,
                c.retryable_failure,
                c.permanent_failure
            ),
            Err(e) => outln!("{}: unavailable ({e})", kind.as_str()),
        }
    }
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
    let code = match cycle {
        Ok(report) => {
            print_report(&report);
            Ok(Outcome::Success)
        }
        Err(e) => {
            outln!(
                "Enrichment failed: {}",
                headroom_core::redact(&e.to_string())
            );
            Ok(Outcome::Unsuccessful)
        }
    };
    outln!();
    print_enrichment_state(&state).await;
    store.close().await;
    code
}
