//! `headroom ingest [--force]`: one polling cycle of the public events feed if one is due,
//! then the persisted state summary — on every path, busy, deferred and failing included.
//! Exit codes: 0 ran or deferred, 1 the attempt failed, 2 refused (bad option, infeasible
//! budget formula).

use clap::Args;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::lanes::CoreLaneConfig;
use headroom_github::feed::poll::{PollError, PollOutcome, PollSettings, Poller, SOURCE_TYPE};
use headroom_store::feed_state::{CoreLedger, FeedStateRead, open_feed};

use crate::config::{GlobalArgs, ProcessEnv, Settings};
use crate::outcome::{CliError, CommandResult, Outcome};
use crate::{registry, wiring};

/// The feed's budget and schedule settings (flag, else environment, else the reference's
/// default).
#[derive(Debug, Clone, Args)]
pub struct FeedArgs {
    /// Seconds between polls (the cadence; an input of the core allowance formula).
    #[arg(long, env = "POLL_INTERVAL_SECONDS", default_value_t = 300,
        value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub poll_interval: u64,
    /// Link-followed pages one poll may fetch.
    #[arg(long, env = "MAX_PAGES_PER_POLL", default_value_t = 1,
        value_parser = clap::value_parser!(u64).range(1..=10))]
    pub max_pages: u64,
    /// Core requests per hour never spent.
    #[arg(long, env = "RATE_LIMIT_RESERVE", default_value_t = 8)]
    pub reserve: u64,
    /// The detail-fallback lane's hourly allowance (clamped when polling needs more).
    #[arg(long, env = "CORE_DETAIL_FALLBACK_ALLOWANCE", default_value_t = 40)]
    pub detail_allowance: u64,
    /// The actors' share of the detail lane, 0 to 1.
    #[arg(long, env = "ACTOR_ENRICHMENT_SHARE", default_value_t = 0.5)]
    pub actor_share: f64,
    /// Seconds a one-shot waits for a source another poller holds.
    #[arg(long, env = "SOURCE_LOCK_WAIT_SECONDS", default_value_t = 30)]
    pub source_lock_wait: u64,
    /// Seconds a poller's hold on the source lasts; a killed poller's hold lapses after it.
    #[arg(long, env = "SOURCE_LEASE_SECONDS", default_value_t = 120,
        value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub source_lease: u64,
    /// Seconds an enrichment claim lasts; a killed worker's claims lapse after it.
    #[arg(long, env = "ENRICHMENT_LEASE_SECONDS", default_value_t = 600,
        value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub enrichment_lease: u64,
    #[command(flatten)]
    pub margin: crate::wiring::ResetMargin,
}

impl FeedArgs {
    /// The poll settings, at the limit that fits the credential (60 an hour per IP
    /// unauthenticated, 5,000 per user with a token) until headers say otherwise.
    pub fn poll_settings(&self, authenticated: bool) -> PollSettings {
        PollSettings {
            lanes: CoreLaneConfig {
                limit: if authenticated { 5_000 } else { 60 },
                poll_interval_secs: self.poll_interval,
                max_pages_per_poll: self.max_pages,
                sources: 1,
                reserve: self.reserve,
                detail_allowance: self.detail_allowance,
                actor_share: self.actor_share,
            },
            source_lock_wait: SignedDuration::from_secs(
                i64::try_from(self.source_lock_wait).unwrap_or(i64::MAX),
            ),
            source_lease: SignedDuration::from_secs(
                i64::try_from(self.source_lease).unwrap_or(120),
            ),
            ..PollSettings::default()
        }
    }
}

impl FeedArgs {
    /// The enrichment claim lease.
    pub fn enrichment_lease(&self) -> SignedDuration {
        SignedDuration::from_secs(i64::try_from(self.enrichment_lease).unwrap_or(600))
    }
}

/// `headroom ingest`.
#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Ignore the configured cadence and the stored ETag (nothing else: not GitHub's
    /// X-Poll-Interval floor, the source's backoff, a global block or the poll allowance).
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    feed: FeedArgs,
}

/// Builds a poller from the global settings.
pub async fn poller(
    global: &GlobalArgs,
    feed: &FeedArgs,
) -> Result<(Poller, Settings, registry::Opened), CliError> {
    let mut settings = global
        .resolve(&ProcessEnv)
        .map_err(|e| CliError::refused(&e))?;
    // The feed service sends one request at a time (the reference's request gate); with the
    // grant rule's margin this also keeps a 10-a-minute search bucket usable.
    settings.in_flight_ceiling = 1;
    let opened = registry::open(&settings.db)
        .await
        .map_err(|e| CliError::refused(&e))?;
    let clock = TokioClock::system();
    let client = wiring::client_with_margin(&settings, clock, &opened, feed.margin.get())
        .map_err(|e| CliError::refused(&e))?;
    // The feed (and `headroom run`'s sync worker) spends one quota, whatever else is set.
    crate::sync_cmd::one_quota(&client, &settings).await?;
    let (store, state) = open_feed(&settings.db)
        .await
        .map_err(|e| CliError::refused(&e))?;
    let poll_settings = feed.poll_settings(settings.credential.is_some());
    if let Err(e) = poll_settings.lanes.resolve() {
        return Err(CliError::refused(&e));
    }
    Ok((
        Poller {
            store,
            state,
            client,
            credential: settings.credential.clone(),
            clock,
            settings: poll_settings,
        },
        settings,
        opened,
    ))
}

/// Runs `headroom ingest`.
pub async fn run(global: &GlobalArgs, args: IngestArgs) -> CommandResult {
    let (poller, _, _) = poller(global, &args.feed).await?;
    let outcome = poller.poll_once(args.force).await;
    poller.client.flush_readings().await;
    let result = print_outcome(&outcome);
    outln!();
    print_summary(&poller).await;
    poller.store.close().await;
    result
}

/// Prints what a polling cycle did on stdout; returns the outcome it means (a refusal is
/// left for `main` to print).
pub fn print_outcome(outcome: &Result<PollOutcome, PollError>) -> CommandResult {
    match outcome {
        Ok(PollOutcome::Completed {
            run_id,
            counts,
            pages_fetched,
            classification,
            ..
        }) => {
            outln!("Ingestion run {run_id} completed");
            if classification == "not_modified" {
                outln!("Not modified since the last poll (304)");
            }
            outln!("Pages fetched:                    {pages_fetched}");
            outln!(
                "Events seen:                      {}",
                counts.events_received
            );
            outln!(
                "Push events created:              {}",
                counts.events_created
            );
            outln!(
                "Duplicates skipped:               {}",
                counts.duplicates_skipped
            );
            outln!(
                "Events quarantined:               {}",
                counts.events_quarantined
            );
            outln!(
                "Non-push events ignored:          {}",
                counts.events_ignored
            );
            outln!("Events failed:                    {}", counts.events_failed);
            Ok(Outcome::Success)
        }
        Ok(PollOutcome::Deferred { until, reason, .. }) => {
            match until {
                Some(until) => outln!("Ingestion deferred until {} — {reason}", fmt_ts(*until)),
                None => outln!("Ingestion deferred — {reason}"),
            }
            Ok(Outcome::Success)
        }
        Ok(PollOutcome::Busy) => {
            outln!("source busy — poller cycle in progress");
            Ok(Outcome::Success)
        }
        Ok(PollOutcome::Failed { run_id, error, .. }) => {
            outln!("Ingestion run {run_id} failed: {error}");
            Ok(Outcome::Unsuccessful)
        }
        // The plan cannot fit the limits as configured: a refusal, its text as the planner
        // wrote it.
        Err(PollError::Infeasible(e)) => Err(CliError::Refused(e.to_string())),
        Err(e) => {
            outln!(
                "Ingestion failed: {}",
                headroom_core::redact(&e.to_string())
            );
            Ok(Outcome::Unsuccessful)
        }
    }
}

pub(crate) fn fmt_ts(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The persisted state of the feed (printed after every ingest, whatever happened).
pub async fn print_summary(poller: &Poller) {
    let core = poller.core_ledger().await.map_err(|e| e.to_string());
    print_feed_summary(poller.state.as_ref(), core, poller.clock.now()).await;
}

/// [`print_summary`] from the feed's state and its core ledger (`status` reads them from a
/// read-only store).
pub async fn print_feed_summary(
    state: &dyn FeedStateRead,
    core: Result<Option<CoreLedger>, String>,
    now: Timestamp,
) {
    match state.feed_overview().await {
        Ok(o) => {
            match &o.latest_completed_run {
                Some((run, at)) => outln!(
                    "Latest successful run:            {} (run_id {run})",
                    fmt_ts(*at)
                ),
                None => outln!("Latest successful run:            none"),
            }
            outln!("Persisted push events:            {}", o.push_events);
            outln!("Pending actor enrichments:        {}", o.pending_actors);
            outln!(
                "Pending repository enrichments:   {}",
                o.pending_repositories
            );
            outln!("Quarantined envelopes:            {}", o.quarantined);
        }
        Err(e) => outln!("State unavailable:                {e}"),
    }
    match state.event_source(SOURCE_TYPE).await {
        Ok(None) => outln!("Next poll due:                    now (never polled)"),
        Ok(Some(s)) => {
            let next = s.next_poll_at.map_or_else(|| "now".to_owned(), fmt_ts);
            outln!("Next poll due:                    {next}");
            if s.status == headroom_store::feed_state::SourceStatus::Failed {
                outln!("Source status:                    failed (out of service until cleared)");
            }
        }
        Err(e) => outln!("Source unavailable:               {e}"),
    }
    match core {
        Ok(Some(l)) => {
            let remaining = l
                .remaining
                .map_or_else(|| "unknown".to_owned(), |r| r.to_string());
            let reset = l.reset_at.map_or_else(|| "unknown".to_owned(), fmt_ts);
            outln!("Budget remaining (core):          {remaining} (window resets {reset})");
            outln!(
                "Poll allowance used:              {} of {}",
                l.poll_used,
                l.poll_allowance
            );
            match l.global_blocked_until.filter(|b| *b > now) {
                Some(b) => outln!("Global block:                     until {}", fmt_ts(b)),
                None => outln!("Global block:                     none"),
            }
        }
        Ok(None) => {
            outln!("Budget remaining (core):          unknown (no window yet)");
            outln!("Global block:                     none");
        }
        Err(e) => outln!("Budget unavailable:               {e}"),
    }
}
