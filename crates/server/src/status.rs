//! The status document: persisted state only, as nine blocks in a fixed order — captured_at,
//! sources, ledger, search_ledger, scheduler, enrichment, batches, throughput, coverage.
//!
//! Built here once and served by `GET /status` and printed by `headroom status --json`.
//! Conventions: a counted zero is `0`, a number that does not exist is `null` (an empty
//! window's percentages, a ratio with nothing requested, a rate with no sample); every ratio
//! has its denominator beside it; there is no ETA anywhere.

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_core::lanes::{CoreLanes, DetailUsage, EntityClass};
use headroom_github::feed::poll::{SOURCE_TYPE, Schedule};
use headroom_store::Result;
use headroom_store::feed_report::{BatchGroup, EntityBacklog, EntityFlow, FeedReport};
use headroom_store::feed_state::{CoreLedger, EntityKind, FeedState, Lane, SearchLedger};
use serde::Serialize;
use serde::ser::SerializeMap;

/// The reporting windows (they change what is reported, never what the service does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Reporting {
    /// `ENRICHMENT_METRICS_WINDOW_SECONDS`: behind the batches and throughput blocks.
    pub metrics_window_seconds: u64,
    /// `CATCH_UP_MIN_SAMPLE_SECONDS`: below it the catch-up verdict is `insufficient_sample`.
    pub catch_up_min_sample_seconds: u64,
    /// `ENRICHMENT_COVERAGE_WINDOW_SECONDS`: the coverage window, on `created_at`.
    pub coverage_window_seconds: u64,
}

impl Default for Reporting {
    fn default() -> Self {
        Self {
            metrics_window_seconds: 3600,
            catch_up_min_sample_seconds: 900,
            coverage_window_seconds: 86_400,
        }
    }
}

/// Every staged tunable, published so reading the status needs no shell access.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SchedulerSettings {
    /// The core quota's configured limit (before any header corrects it).
    pub core_limit: u64,
    /// Seconds between polls.
    pub poll_interval_seconds: u64,
    /// Pages one poll may fetch.
    pub max_pages_per_poll: u64,
    /// Poll attempts an hour (the formula's answer).
    pub poll_allowance: u64,
    /// Core requests an hour never spent.
    pub rate_limit_reserve: u64,
    /// The configured detail-fallback allowance.
    pub detail_fallback_allowance_configured: u64,
    /// The detail-fallback allowance in force after clamping.
    pub detail_fallback_allowance: u64,
    /// Whether polling clamped the detail lane.
    pub detail_fallback_clamped: bool,
    /// The actors' share of the detail lane.
    pub actor_enrichment_share: f64,
    /// floor(detail allowance × share).
    pub actor_detail_guarantee: u64,
    /// The rest of the detail lane.
    pub repository_detail_guarantee: u64,
    /// Search requests a minute GitHub allows.
    pub search_request_ceiling: u64,
    /// Search requests a minute never spent.
    pub search_safety_reserve: u64,
    /// ceiling − reserve.
    pub search_spendable: u64,
    /// Qualifiers per search request.
    pub search_batch_size: u64,
    /// Minimum spacing between search requests.
    pub search_pacing_seconds: i64,
    /// Search requests in flight at once (the request gate makes it one).
    pub search_worker_concurrency: u64,
    /// Batch-lane rotation weight, actors.
    pub actor_enrichment_weight: u64,
    /// Batch-lane rotation weight, repositories.
    pub repository_enrichment_weight: u64,
    /// The detail ladder's length.
    pub detail_fallback_max_attempts: u64,
    /// The claim lease.
    pub enrichment_lease_seconds: i64,
    /// Backoff base.
    pub enrichment_retry_base_seconds: i64,
    /// Backoff cap.
    pub enrichment_retry_max_seconds: i64,
    /// A poller's hold on the source.
    pub source_lease_seconds: i64,
    /// How long a one-shot waits for a busy source.
    pub source_lock_wait_seconds: i64,
    /// Seconds between service ticks, when the service runs.
    pub tick_seconds: Option<u64>,
    /// Refresh after the TTL, under the composition rule.
    pub refresh: Option<RefreshSettings>,
    /// The reporting windows.
    pub metrics: Reporting,
}

/// Refresh tunables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RefreshSettings {
    /// Earliest re-fetch of an actor.
    pub actor_refresh_ttl_seconds: i64,
    /// Earliest re-fetch of a repository.
    pub repository_refresh_ttl_seconds: i64,
    /// Only entities seen this recently are refreshed.
    pub refresh_active_within_seconds: i64,
}

impl SchedulerSettings {
    /// The published tunables of a poller and an enricher.
    pub fn of(
        poll: &headroom_github::feed::poll::PollSettings,
        enrich: &headroom_github::feed::enrich::EnrichSettings,
        tick_seconds: Option<u64>,
        metrics: Reporting,
    ) -> std::result::Result<Self, headroom_core::lanes::LaneError> {
        let lanes = poll.lanes.resolve()?;
        Ok(Self {
            core_limit: lanes.limit,
            poll_interval_seconds: poll.lanes.poll_interval_secs,
            max_pages_per_poll: poll.lanes.max_pages_per_poll,
            poll_allowance: lanes.poll_allowance,
            rate_limit_reserve: lanes.reserve,
            detail_fallback_allowance_configured: poll.lanes.detail_allowance,
            detail_fallback_allowance: lanes.detail_allowance,
            detail_fallback_clamped: lanes.detail_clamped,
            actor_enrichment_share: poll.lanes.actor_share,
            actor_detail_guarantee: lanes.actor_guarantee,
            repository_detail_guarantee: lanes.repository_guarantee,
            search_request_ceiling: enrich.search.ceiling,
            search_safety_reserve: enrich.search.reserve,
            search_spendable: enrich.search.spendable(),
            search_batch_size: u64::from(enrich.batch_size),
            search_pacing_seconds: enrich.search.pacing.as_secs(),
            search_worker_concurrency: 1,
            actor_enrichment_weight: u64::from(enrich.actor_weight),
            repository_enrichment_weight: u64::from(enrich.repository_weight),
            detail_fallback_max_attempts: enrich.max_detail_attempts,
            enrichment_lease_seconds: enrich.lease.as_secs(),
            enrichment_retry_base_seconds: enrich.retry_base.as_secs(),
            enrichment_retry_max_seconds: enrich.retry_max.as_secs(),
            source_lease_seconds: poll.source_lease.as_secs(),
            source_lock_wait_seconds: poll.source_lock_wait.as_secs(),
            tick_seconds,
            refresh: Some(RefreshSettings {
                actor_refresh_ttl_seconds: enrich.actor_refresh_ttl.as_secs(),
                repository_refresh_ttl_seconds: enrich.repository_refresh_ttl.as_secs(),
                refresh_active_within_seconds: enrich.refresh_active_within.as_secs(),
            }),
            metrics,
        })
    }
}

/// What the status reads and publishes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatusSettings {
    /// The API host whose ledgers are read.
    pub host: String,
    /// The quota subject's label (`ip:outbound` without a token); `None` when the credential's
    /// owner is not known yet — then no ledger row can exist for it.
    pub subject: Option<String>,
    /// Published tunables (and the reporting windows).
    pub scheduler: SchedulerSettings,
}

impl StatusSettings {
    fn reporting(&self) -> Reporting {
        self.scheduler.metrics
    }
}

/// The whole document, blocks in their fixed order.
#[derive(Debug, Clone, Serialize)]
pub struct StatusDocument {
    /// When it was read.
    pub captured_at: Timestamp,
    /// The poll schedule per event source.
    pub sources: Vec<SourceBlock>,
    /// The hourly core ledger.
    pub ledger: LedgerBlock,
    /// The per-minute search ledger.
    pub search_ledger: SearchLedgerBlock,
    /// Every tunable.
    pub scheduler: SchedulerSettings,
    /// The backlog per class.
    pub enrichment: EnrichmentBlock,
    /// Batch quality over the metrics window.
    pub batches: BatchesBlock,
    /// Measured rates and the catch-up verdict.
    pub throughput: ThroughputBlock,
    /// The three coverage percentages.
    pub coverage: CoverageBlock,
}

/// One source's schedule: the five components side by side, and which one binds.
#[derive(Debug, Clone, Serialize)]
pub struct SourceBlock {
    /// `github_public_events`.
    pub source_type: String,
    /// Whether the source has a row yet (none until its first poll attempt; the values
    /// below are then the defaults a first poll would start from).
    pub present: bool,
    /// The operator's switch.
    pub enabled: bool,
    /// `idle` or `failed`.
    pub status: String,
    /// Failed polls in a row.
    pub consecutive_failures: u64,
    /// The last failure, redacted.
    pub last_error: Option<String>,
    /// When it was last polled.
    pub last_polled_at: Option<Timestamp>,
    /// Cadence.
    pub cadence_due_at: Option<Timestamp>,
    /// GitHub's `X-Poll-Interval` floor.
    pub poll_floor_until: Option<Timestamp>,
    /// Own retry backoff.
    pub retry_not_before_at: Option<Timestamp>,
    /// The core ledger's global block.
    pub global_blocked_until: Option<Timestamp>,
    /// Poll-class exhaustion (derived).
    pub poll_class_blocked_until: Option<Timestamp>,
    /// The cached answer (never an input).
    pub next_poll_at: Option<Timestamp>,
    /// Whether a poll may run now (`false` with `binding` null only when the source is out
    /// of service or switched off — then `binding` names that).
    pub due_now: bool,
    /// The constraint holding it, if any.
    pub binding: Option<String>,
    /// Until when that constraint holds (null for the out-of-service ones).
    pub binding_until: Option<Timestamp>,
}

/// A used/allowance pair.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Allowance {
    /// Spent this window.
    pub used: Option<u64>,
    /// The allowance in force.
    pub allowance: Option<u64>,
    /// allowance − used, floored at 0.
    pub available: Option<u64>,
}

/// A detail fairness share.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Share {
    /// Spent this window.
    pub used: Option<u64>,
    /// The guarantee.
    pub guarantee: Option<u64>,
    /// guarantee − used, floored at 0: a floor, not a ceiling (a class may borrow).
    pub available: Option<u64>,
}

/// The core ledger.
#[derive(Debug, Clone, Serialize)]
pub struct LedgerBlock {
    /// Whether the row exists ("no ledger yet" is not "remaining 0").
    pub present: bool,
    /// API host.
    pub host: String,
    /// Quota subject (null when the credential's owner is not known yet).
    pub subject: Option<String>,
    /// `uninitialized`, `active` or `globally_blocked`.
    pub window_status: Option<String>,
    /// Whether `reset_at` is still ahead.
    pub window_current: Option<bool>,
    /// The limit the headers reported.
    pub limit: Option<u64>,
    /// Remaining, per the newest headers.
    pub remaining: Option<u64>,
    /// Never spent.
    pub reserve: Option<u64>,
    /// When the window was initialized.
    pub window_started_at: Option<Timestamp>,
    /// The window's reset.
    pub reset_at: Option<Timestamp>,
    /// The global block, if one was ever set.
    pub global_blocked_until: Option<Timestamp>,
    /// Whether that block holds now.
    pub globally_blocked_now: Option<bool>,
    /// Secondary limits in a row.
    pub consecutive_secondary_limits: Option<u64>,
    /// Requests the headers counted that this application did not make.
    pub co_tenant_usage: Option<u64>,
    /// The poll lane.
    pub poll: Allowance,
    /// The detail-fallback lane.
    pub detail_fallback: Allowance,
    /// Actor detail requests.
    pub actor_requests: Share,
    /// Repository detail requests.
    pub repository_requests: Share,
}

/// The search ledger.
#[derive(Debug, Clone, Serialize)]
pub struct SearchLedgerBlock {
    /// Whether the row exists.
    pub present: bool,
    /// `search`.
    pub resource: &'static str,
    /// The limit the headers reported.
    pub limit: Option<u64>,
    /// Remaining per the headers.
    pub remaining: Option<u64>,
    /// The minute's reset.
    pub reset_at: Option<Timestamp>,
    /// Whether the stored minute is still open (its reset ahead, or, without headers, a
    /// request within the last 60 s); when not, `used` belongs to a past minute.
    pub window_open: Option<bool>,
    /// Configured ceiling.
    pub request_ceiling: u64,
    /// Configured reserve.
    pub reserve: u64,
    /// ceiling − reserve.
    pub spendable: u64,
    /// Used in the stored minute.
    pub used: Option<u64>,
    /// Actor batches in it.
    pub actor_used: Option<u64>,
    /// Repository batches in it.
    pub repository_used: Option<u64>,
    /// Search-scoped block.
    pub blocked_until: Option<Timestamp>,
    /// The last search request.
    pub last_request_at: Option<Timestamp>,
    /// last_request_at + pacing.
    pub next_request_earliest_at: Option<Timestamp>,
}

/// One resting stage.
#[derive(Debug, Clone, Serialize)]
pub struct StageBlock {
    /// Rows resting there.
    pub count: u64,
    /// The oldest one's `created_at`.
    pub oldest_created_at: Option<Timestamp>,
    /// Its age in seconds.
    pub oldest_age_seconds: Option<i64>,
}

/// The seven stages as a map in pipeline order.
#[derive(Debug, Clone)]
pub struct Stages(pub Vec<(&'static str, StageBlock)>);

impl Serialize for Stages {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// Whether each lane of a class has a row claimable now.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct LaneClaimable {
    /// Search batches.
    pub batch: bool,
    /// Detail fallbacks.
    pub detail: bool,
}

/// One entity class.
#[derive(Debug, Clone, Serialize)]
pub struct ClassBlock {
    /// `enrichment_status = 'pending'` exactly.
    pub pending: u64,
    /// `complete`.
    pub complete: u64,
    /// `retryable_failure`.
    pub retryable_failure: u64,
    /// `permanent_failure`.
    pub permanent_failure: u64,
    /// pending + retryable_failure: the work left.
    pub backlog_count: u64,
    /// Rows neither at the contract nor terminal, counted by stage.
    pub contract_backlog_count: u64,
    /// The oldest backlog row's `created_at`.
    pub oldest_pending_at: Option<Timestamp>,
    /// Its age.
    pub oldest_pending_age_seconds: Option<i64>,
    /// All seven resting stages.
    pub stages: Stages,
    /// Rows claimable now per lane (rows only; ledgers are judged in `claimable_now`).
    pub rows_claimable: LaneClaimable,
}

/// The enrichment block.
#[derive(Debug, Clone, Serialize)]
pub struct EnrichmentBlock {
    /// Actors.
    pub actors: ClassBlock,
    /// Repositories.
    pub repositories: ClassBlock,
    /// Whether some work is eligible now under the persisted backlog and ledger state.
    pub claimable_now: bool,
    /// When work next becomes eligible: now when `claimable_now`; null with an empty
    /// backlog, or when the instant depends on something not yet known (a core window no
    /// poll has opened yet).
    pub next_enrichment_at: Option<Timestamp>,
    /// Which gate holds each lane now (null when it is open or has nothing to do).
    pub gates: Gates,
}

/// The gate of each lane.
#[derive(Debug, Clone, Serialize)]
pub struct Gates {
    /// Search batches.
    pub batch: Option<String>,
    /// Detail fallbacks.
    pub detail: Option<String>,
}

/// One request-kind × entity-kind group.
#[derive(Debug, Clone, Serialize)]
pub struct BatchGroupBlock {
    /// The counts.
    #[serde(flatten)]
    pub counts: BatchGroup,
    /// returned_items / requested_items; null when nothing was requested.
    pub fill_ratio: Option<f64>,
}

/// Batch quality over the metrics window.
#[derive(Debug, Clone, Serialize)]
pub struct BatchesBlock {
    /// The window's length.
    pub window_seconds: u64,
    /// Its start (on `started_at`).
    pub window_start: Timestamp,
    /// Its end.
    pub window_end: Timestamp,
    /// Search batches for actors.
    pub search_actors: BatchGroupBlock,
    /// Search batches for repositories.
    pub search_repositories: BatchGroupBlock,
    /// Detail fallbacks for actors.
    pub detail_actors: BatchGroupBlock,
    /// Detail fallbacks for repositories.
    pub detail_repositories: BatchGroupBlock,
}

/// Measured flow of one lane (or both).
#[derive(Debug, Clone, Serialize)]
pub struct FlowBlock {
    /// New entity rows in the sample.
    pub arrivals: u64,
    /// Rows that first reached the contract.
    pub completions: u64,
    /// Rows that went terminal.
    pub terminals: u64,
    /// completions + terminals: rows that left the backlog.
    pub exits: u64,
    /// arrivals per hour over the sample (null without a sample).
    pub arrivals_per_hour: Option<f64>,
    /// completions per hour.
    pub completions_per_hour: Option<f64>,
    /// exits per hour.
    pub exits_per_hour: Option<f64>,
    /// arrivals − exits over the sample.
    pub backlog_delta: i64,
    /// `keeping_up`, `not_keeping_up` or `insufficient_sample`.
    pub catch_up_state: &'static str,
}

/// The catch-up verdict.
#[derive(Debug, Clone, Serialize)]
pub struct CatchUp {
    /// `keeping_up`, `not_keeping_up` or `insufficient_sample`.
    pub state: &'static str,
    /// The rule behind it.
    pub rule: &'static str,
    /// The sample needed before a verdict.
    pub min_sample_seconds: u64,
    /// The sample there is.
    pub sample_seconds: u64,
}

/// Throughput over the metrics window.
#[derive(Debug, Clone, Serialize)]
pub struct ThroughputBlock {
    /// The metrics window's length.
    pub window_seconds: u64,
    /// The sample's start: the window's start, or the first recorded activity if later
    /// (null when nothing was ever recorded).
    pub sample_start: Option<Timestamp>,
    /// The sample's end (captured_at).
    pub sample_end: Timestamp,
    /// Its length.
    pub sample_seconds: u64,
    /// Actors.
    pub actors: FlowBlock,
    /// Repositories.
    pub repositories: FlowBlock,
    /// Both classes.
    pub combined: FlowBlock,
    /// The verdict on both classes.
    pub catch_up: CatchUp,
}

/// One coverage percentage with its numerator.
#[derive(Debug, Clone, Serialize)]
pub struct Coverage {
    /// Events counted.
    pub events: u64,
    /// events / events_in_window × 100, two decimals; null on an empty window.
    pub percent: Option<f64>,
}

/// §11's three coverage percentages.
#[derive(Debug, Clone, Serialize)]
pub struct CoverageBlock {
    /// What the window is measured on: `created_at` (when headroom persisted the event).
    pub basis: &'static str,
    /// The window's length.
    pub window_seconds: u64,
    /// Its start.
    pub window_start: Timestamp,
    /// Its end.
    pub window_end: Timestamp,
    /// The denominator: push events persisted in the window.
    pub events_in_window: u64,
    /// Events whose actor is enriched (`complete`).
    pub actor_enriched: Coverage,
    /// Events whose repository is enriched.
    pub repository_enriched: Coverage,
    /// Events whose actor and repository are both enriched.
    pub fully_enriched: Coverage,
}

fn secs(n: u64) -> SignedDuration {
    SignedDuration::from_secs(i64::try_from(n).unwrap_or(i64::MAX))
}

fn age(now: Timestamp, then: Option<Timestamp>) -> Option<i64> {
    then.map(|t| now.duration_since(t).as_secs().max(0))
}

fn guarantees(allowance: u64, share: f64) -> (u64, u64) {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let actor = ((allowance as f64) * share.clamp(0.0, 1.0)).floor() as u64;
    let actor = actor.min(allowance);
    (actor, allowance - actor)
}

#[allow(clippy::cast_precision_loss)]
fn ratio(numerator: u64, denominator: u64) -> Option<f64> {
    (denominator > 0).then(|| numerator as f64 / denominator as f64)
}

#[allow(clippy::cast_precision_loss)]
fn percent(numerator: u64, denominator: u64) -> Option<f64> {
    ratio(numerator, denominator).map(|r| (r * 10_000.0).round() / 100.0)
}

#[allow(clippy::cast_precision_loss)]
fn per_hour(count: u64, sample_seconds: u64) -> Option<f64> {
    (sample_seconds > 0).then(|| (count as f64) * 3600.0 / sample_seconds as f64)
}

/// The catch-up verdict: no verdict below the minimum sample; otherwise keeping up while
/// measured arrivals do not exceed measured exits.
pub fn catch_up_state(
    arrivals: u64,
    exits: u64,
    sample_seconds: u64,
    min_sample_seconds: u64,
) -> &'static str {
    if sample_seconds < min_sample_seconds || sample_seconds == 0 {
        "insufficient_sample"
    } else if arrivals <= exits {
        "keeping_up"
    } else {
        "not_keeping_up"
    }
}

fn flow(f: EntityFlow, sample_seconds: u64, min_sample: u64) -> FlowBlock {
    let exits = f.completions + f.terminals;
    FlowBlock {
        arrivals: f.arrivals,
        completions: f.completions,
        terminals: f.terminals,
        exits,
        arrivals_per_hour: per_hour(f.arrivals, sample_seconds),
        completions_per_hour: per_hour(f.completions, sample_seconds),
        exits_per_hour: per_hour(exits, sample_seconds),
        backlog_delta: i64::try_from(f.arrivals).unwrap_or(i64::MAX)
            - i64::try_from(exits).unwrap_or(i64::MAX),
        catch_up_state: catch_up_state(f.arrivals, exits, sample_seconds, min_sample),
    }
}

fn class_block(b: EntityBacklog, rows_claimable: LaneClaimable, now: Timestamp) -> ClassBlock {
    let stages = b
        .stages
        .iter()
        .map(|s| {
            (
                s.stage,
                StageBlock {
                    count: s.count,
                    oldest_created_at: s.oldest_created_at,
                    oldest_age_seconds: age(now, s.oldest_created_at),
                },
            )
        })
        .collect();
    ClassBlock {
        pending: b.pending,
        complete: b.complete,
        retryable_failure: b.retryable_failure,
        permanent_failure: b.permanent_failure,
        backlog_count: b.pending + b.retryable_failure,
        contract_backlog_count: b.contract_backlog,
        oldest_pending_at: b.oldest_backlog_created_at,
        oldest_pending_age_seconds: age(now, b.oldest_backlog_created_at),
        stages: Stages(stages),
        rows_claimable,
    }
}

fn ledger_block(settings: &StatusSettings, l: Option<&CoreLedger>, now: Timestamp) -> LedgerBlock {
    let share = settings.scheduler.actor_enrichment_share;
    let pair = |used: u64, allowance: u64| Allowance {
        used: Some(used),
        allowance: Some(allowance),
        available: Some(allowance.saturating_sub(used)),
    };
    let none = Allowance {
        used: None,
        allowance: None,
        available: None,
    };
    let no_share = Share {
        used: None,
        guarantee: None,
        available: None,
    };
    let (actor_g, repo_g) = l.map_or((0, 0), |l| guarantees(l.enrichment_allowance, share));
    LedgerBlock {
        present: l.is_some(),
        host: settings.host.clone(),
        subject: settings.subject.clone(),
        window_status: l.map(|l| l.window_status.clone()),
        window_current: l.map(|l| l.reset_at.is_some_and(|r| r > now)),
        limit: l.and_then(|l| l.limit),
        remaining: l.and_then(|l| l.remaining),
        reserve: l.map(|l| l.reserve),
        window_started_at: l.and_then(|l| l.window_started_at),
        reset_at: l.and_then(|l| l.reset_at),
        global_blocked_until: l.and_then(|l| l.global_blocked_until),
        globally_blocked_now: l.map(|l| l.global_blocked_until.is_some_and(|b| b > now)),
        consecutive_secondary_limits: l.map(|l| l.consecutive_secondary_limits),
        co_tenant_usage: l.map(|l| l.co_tenant_usage),
        poll: l.map_or(none, |l| pair(l.poll_used, l.poll_allowance)),
        detail_fallback: l.map_or(none, |l| pair(l.enrichment_used, l.enrichment_allowance)),
        actor_requests: l.map_or(no_share, |l| Share {
            used: Some(l.actor_share_used),
            guarantee: Some(actor_g),
            available: Some(actor_g.saturating_sub(l.actor_share_used)),
        }),
        repository_requests: l.map_or(no_share, |l| Share {
            used: Some(l.repository_share_used),
            guarantee: Some(repo_g),
            available: Some(repo_g.saturating_sub(l.repository_share_used)),
        }),
    }
}

fn search_window_open(l: &SearchLedger, now: Timestamp) -> bool {
    // The enricher's roll rule: by the reset, or after sixty header-less quiet seconds.
    match l.reset_at {
        Some(r) => r > now,
        None => l
            .last_request_at
            .is_some_and(|t| t + SignedDuration::from_secs(60) > now),
    }
}

fn search_block(
    settings: &StatusSettings,
    l: Option<&SearchLedger>,
    now: Timestamp,
) -> SearchLedgerBlock {
    let s = &settings.scheduler;
    let pacing = SignedDuration::from_secs(s.search_pacing_seconds);
    SearchLedgerBlock {
        present: l.is_some(),
        resource: "search",
        limit: l.and_then(|l| l.limit),
        remaining: l.and_then(|l| l.remaining),
        reset_at: l.and_then(|l| l.reset_at),
        window_open: l.map(|l| search_window_open(l, now)),
        request_ceiling: s.search_request_ceiling,
        reserve: s.search_safety_reserve,
        spendable: s.search_spendable,
        used: l.map(|l| l.used),
        actor_used: l.map(|l| l.actor_used),
        repository_used: l.map(|l| l.repository_used),
        blocked_until: l.and_then(|l| l.blocked_until),
        last_request_at: l.and_then(|l| l.last_request_at),
        next_request_earliest_at: l.and_then(|l| l.last_request_at).map(|t| t + pacing),
    }
}

/// The search lane's gate at `now`: `None` when open, else (reason, until if known).
fn search_gate(
    settings: &StatusSettings,
    l: Option<&SearchLedger>,
    now: Timestamp,
) -> Option<(&'static str, Option<Timestamp>)> {
    let s = &settings.scheduler;
    let l = l?;
    if let Some(b) = l.blocked_until.filter(|b| *b > now) {
        return Some(("search_blocked", Some(b)));
    }
    if search_window_open(l, now)
        && (l.used >= s.search_spendable
            || l.remaining.is_some_and(|r| r <= s.search_safety_reserve))
    {
        let until = l
            .reset_at
            .or(l.last_request_at.map(|t| t + SignedDuration::from_secs(60)));
        return Some(("search_reserve", until));
    }
    let next = l.last_request_at? + SignedDuration::from_secs(s.search_pacing_seconds);
    (next > now).then_some(("search_pacing", Some(next)))
}

/// The detail lane's gate at `now` for `kind`: `None` when open.
fn detail_gate(
    settings: &StatusSettings,
    l: Option<&CoreLedger>,
    kind: EntityKind,
    other_has_claimable: bool,
    now: Timestamp,
) -> Option<(&'static str, Option<Timestamp>)> {
    let Some(l) = l else {
        return Some(("core_window_uninitialized", None));
    };
    if let Some(b) = l.global_blocked_until.filter(|b| *b > now) {
        return Some(("globally_blocked", Some(b)));
    }
    if l.window_status == "uninitialized" || l.reset_at.is_none_or(|r| r <= now) {
        return Some(("core_window_uninitialized", None));
    }
    if l.remaining.is_some_and(|r| r <= l.reserve) {
        return Some(("reserve_reached", l.reset_at));
    }
    let (actor_guarantee, repository_guarantee) = guarantees(
        l.enrichment_allowance,
        settings.scheduler.actor_enrichment_share,
    );
    let lanes = CoreLanes {
        limit: l.limit.unwrap_or(0),
        poll_allowance: l.poll_allowance,
        detail_allowance: l.enrichment_allowance,
        detail_clamped: false,
        reserve: l.reserve,
        actor_guarantee,
        repository_guarantee,
        unspent: 0,
    };
    let class = match kind {
        EntityKind::Actor => EntityClass::Actor,
        EntityKind::Repository => EntityClass::Repository,
    };
    let usage = DetailUsage {
        actor: l.actor_share_used,
        repository: l.repository_share_used,
    };
    (!lanes.detail_admits(class, usage, other_has_claimable))
        .then_some(("detail_allowance", l.reset_at))
}

fn earliest(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Reads everything and builds the document at `now`. Plain reads only.
pub async fn build(
    report: &dyn FeedReport,
    feed: &dyn FeedState,
    settings: &StatusSettings,
    now: Timestamp,
) -> Result<StatusDocument> {
    let reporting = settings.reporting();
    let (core, search) = match &settings.subject {
        Some(subject) => (
            feed.core_ledger(&settings.host, subject).await?,
            feed.search_ledger(&settings.host, subject).await?,
        ),
        None => (None, None),
    };

    // sources
    let sources = report
        .event_sources()
        .await?
        .into_iter()
        .map(|source| {
            let schedule = Schedule::of(&source, core.as_ref(), now);
            let held = schedule.binding(now, false);
            let (binding, binding_until) = if source.status == "failed" {
                (Some("source_failed".to_owned()), None)
            } else if !source.enabled {
                (Some("source_disabled".to_owned()), None)
            } else {
                match held {
                    Some((until, reason)) => (Some(reason.as_str().to_owned()), Some(until)),
                    None => (None, None),
                }
            };
            SourceBlock {
                source_type: source.source_type,
                present: true,
                enabled: source.enabled,
                status: source.status,
                consecutive_failures: source.consecutive_failures,
                last_error: source.last_error,
                last_polled_at: source.last_polled_at,
                cadence_due_at: schedule.cadence_due_at,
                poll_floor_until: schedule.poll_floor_until,
                retry_not_before_at: schedule.retry_not_before_at,
                global_blocked_until: schedule.global_blocked_until,
                poll_class_blocked_until: schedule.poll_class_blocked_until,
                next_poll_at: source.next_poll_at,
                due_now: binding.is_none(),
                binding,
                binding_until,
            }
        })
        .collect::<Vec<_>>();
    // A source nobody has polled yet has no row; say so rather than print an empty list
    // that reads like "no source configured".
    let sources = if sources.is_empty() {
        vec![SourceBlock {
            source_type: SOURCE_TYPE.to_owned(),
            present: false,
            enabled: true,
            status: "idle".to_owned(),
            consecutive_failures: 0,
            last_error: None,
            last_polled_at: None,
            cadence_due_at: None,
            poll_floor_until: None,
            retry_not_before_at: None,
            global_blocked_until: core.as_ref().and_then(|l| l.global_blocked_until),
            poll_class_blocked_until: None,
            next_poll_at: None,
            due_now: core
                .as_ref()
                .and_then(|l| l.global_blocked_until)
                .is_none_or(|b| b <= now),
            binding: core
                .as_ref()
                .and_then(|l| l.global_blocked_until)
                .filter(|b| *b > now)
                .map(|_| "globally_blocked".to_owned()),
            binding_until: core
                .as_ref()
                .and_then(|l| l.global_blocked_until)
                .filter(|b| *b > now),
        }]
    } else {
        sources
    };

    // enrichment
    let mut claimable = [(false, false); 2];
    let kinds = [EntityKind::Actor, EntityKind::Repository];
    for (i, kind) in kinds.iter().enumerate() {
        claimable[i] = (
            report.claimable(*kind, Lane::Batch, now).await?,
            report.claimable(*kind, Lane::Detail, now).await?,
        );
    }
    let search_gate_now = search_gate(settings, search.as_ref(), now);
    let mut claimable_now = false;
    let mut next_at: Option<Timestamp> = None;
    let mut unknown_wait = false;
    let mut detail_gates = Vec::new();
    for (i, kind) in kinds.iter().enumerate() {
        let (batch_rows, detail_rows) = claimable[i];
        let other_detail = claimable[1 - i].1;
        // Batch lane: rows ready now or later, then the search gate.
        let batch_ready = if batch_rows {
            Some(now)
        } else {
            report.next_claimable_at(*kind, Lane::Batch, now).await?
        };
        if let Some(ready) = batch_ready {
            match search_gate_now {
                None if batch_rows => claimable_now = true,
                None => next_at = earliest(next_at, Some(ready)),
                Some((_, Some(until))) => next_at = earliest(next_at, Some(until.max(ready))),
                Some((_, None)) => unknown_wait = true,
            }
        }
        let detail_ready = if detail_rows {
            Some(now)
        } else {
            report.next_claimable_at(*kind, Lane::Detail, now).await?
        };
        let gate = detail_gate(settings, core.as_ref(), *kind, other_detail, now);
        if let Some(ready) = detail_ready {
            match gate {
                None if detail_rows => claimable_now = true,
                None => next_at = earliest(next_at, Some(ready)),
                Some((_, Some(until))) => next_at = earliest(next_at, Some(until.max(ready))),
                Some((_, None)) => unknown_wait = true,
            }
            if let Some((reason, _)) = gate {
                detail_gates.push(reason);
            }
        }
    }
    let next_enrichment_at = if claimable_now {
        Some(now)
    } else if next_at.is_none() && unknown_wait {
        None
    } else {
        next_at
    };
    let any_batch_rows = claimable.iter().any(|c| c.0);
    let actors_backlog = report.entity_backlog(EntityKind::Actor).await?;
    let repositories_backlog = report.entity_backlog(EntityKind::Repository).await?;
    let enrichment = EnrichmentBlock {
        actors: class_block(
            actors_backlog,
            LaneClaimable {
                batch: claimable[0].0,
                detail: claimable[0].1,
            },
            now,
        ),
        repositories: class_block(
            repositories_backlog,
            LaneClaimable {
                batch: claimable[1].0,
                detail: claimable[1].1,
            },
            now,
        ),
        claimable_now,
        next_enrichment_at,
        gates: Gates {
            batch: search_gate_now
                .filter(|_| any_batch_rows)
                .map(|(r, _)| r.to_owned()),
            detail: detail_gates.first().map(|r| (*r).to_owned()),
        },
    };

    // batches
    let metrics_start = now - secs(reporting.metrics_window_seconds);
    let groups = report.batch_groups(metrics_start, now).await?;
    let group = |request: &str, entity: &str| {
        let counts = groups
            .iter()
            .find(|(r, e, _)| r == request && e == entity)
            .map(|(_, _, g)| g.clone())
            .unwrap_or_default();
        BatchGroupBlock {
            fill_ratio: ratio(counts.returned_items, counts.requested_items),
            counts,
        }
    };
    let batches = BatchesBlock {
        window_seconds: reporting.metrics_window_seconds,
        window_start: metrics_start,
        window_end: now,
        search_actors: group("search", "actor"),
        search_repositories: group("search", "repository"),
        detail_actors: group("detail", "actor"),
        detail_repositories: group("detail", "repository"),
    };

    // throughput
    let first = report.first_activity_at().await?;
    let sample_start = first.map(|f| f.max(metrics_start));
    let sample_seconds = sample_start.map_or(0, |s| {
        u64::try_from(now.duration_since(s).as_secs()).unwrap_or(0)
    });
    let since = sample_start.unwrap_or(now);
    let min_sample = reporting.catch_up_min_sample_seconds;
    let actor_flow = report.entity_flow(EntityKind::Actor, since, now).await?;
    let repository_flow = report
        .entity_flow(EntityKind::Repository, since, now)
        .await?;
    let combined_flow = EntityFlow {
        arrivals: actor_flow.arrivals + repository_flow.arrivals,
        completions: actor_flow.completions + repository_flow.completions,
        terminals: actor_flow.terminals + repository_flow.terminals,
    };
    let combined = flow(combined_flow, sample_seconds, min_sample);
    let throughput = ThroughputBlock {
        window_seconds: reporting.metrics_window_seconds,
        sample_start,
        sample_end: now,
        sample_seconds,
        actors: flow(actor_flow, sample_seconds, min_sample),
        repositories: flow(repository_flow, sample_seconds, min_sample),
        catch_up: CatchUp {
            state: combined.catch_up_state,
            rule: "keeping_up while measured arrivals do not exceed measured exits \
                   (completions + terminals) over the sample",
            min_sample_seconds: min_sample,
            sample_seconds,
        },
        combined,
    };

    // coverage
    let coverage_start = now - secs(reporting.coverage_window_seconds);
    let c = report.coverage(coverage_start, now).await?;
    let coverage = CoverageBlock {
        basis: "created_at",
        window_seconds: reporting.coverage_window_seconds,
        window_start: coverage_start,
        window_end: now,
        events_in_window: c.events,
        actor_enriched: Coverage {
            events: c.actor_complete,
            percent: percent(c.actor_complete, c.events),
        },
        repository_enriched: Coverage {
            events: c.repository_complete,
            percent: percent(c.repository_complete, c.events),
        },
        fully_enriched: Coverage {
            events: c.both_complete,
            percent: percent(c.both_complete, c.events),
        },
    };

    Ok(StatusDocument {
        captured_at: now,
        sources,
        ledger: ledger_block(settings, core.as_ref(), now),
        search_ledger: search_block(settings, search.as_ref(), now),
        scheduler: settings.scheduler.clone(),
        enrichment,
        batches,
        throughput,
        coverage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_needs_the_minimum_sample() {
        assert_eq!(catch_up_state(0, 0, 0, 900), "insufficient_sample");
        assert_eq!(catch_up_state(10, 100, 899, 900), "insufficient_sample");
        assert_eq!(catch_up_state(10, 100, 900, 900), "keeping_up");
        assert_eq!(catch_up_state(10, 10, 3600, 900), "keeping_up");
        assert_eq!(catch_up_state(11, 10, 3600, 900), "not_keeping_up");
    }

    #[test]
    fn empty_denominators_are_null_not_zero() {
        assert_eq!(percent(0, 0), None);
        assert_eq!(percent(0, 4), Some(0.0));
        assert_eq!(percent(1, 3), Some(33.33));
        assert_eq!(ratio(0, 0), None);
        assert_eq!(per_hour(5, 0), None);
        assert_eq!(per_hour(5, 1800), Some(10.0));
    }

    proptest::proptest! {
        #[test]
        fn the_verdict_follows_the_rule(
            arrivals in 0u64..10_000,
            exits in 0u64..10_000,
            sample in 0u64..10_000,
            min in 0u64..10_000,
        ) {
            let state = catch_up_state(arrivals, exits, sample, min);
            if sample < min || sample == 0 {
                proptest::prop_assert_eq!(state, "insufficient_sample");
            } else if arrivals > exits {
                proptest::prop_assert_eq!(state, "not_keeping_up");
            } else {
                proptest::prop_assert_eq!(state, "keeping_up");
            }
        }

        #[test]
        fn percentages_stay_in_range(den in 0u64..1_000_000, frac in 0.0f64..=1.0) {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
            let num = ((den as f64) * frac).floor() as u64;
            match percent(num, den) {
                None => proptest::prop_assert_eq!(den, 0),
                Some(p) => proptest::prop_assert!((0.0..=100.0).contains(&p)),
            }
        }

        #[test]
        fn guarantees_always_split_the_whole_lane(allowance in 0u64..100_000, share in 0.0f64..=1.0) {
            let (actor, repository) = guarantees(allowance, share);
            proptest::prop_assert_eq!(actor + repository, allowance);
        }
    }

    #[test]
    fn guarantees_add_up_to_the_allowance() {
        assert_eq!(guarantees(40, 0.5), (20, 20));
        assert_eq!(guarantees(41, 0.5), (20, 21));
        assert_eq!(guarantees(28, 1.0), (28, 0));
        assert_eq!(guarantees(28, 0.0), (0, 28));
    }
}
