//! What the status reads and publishes: the reporting windows, the published tunables of a
//! poller and an enricher, and the ledger identity to read.

use serde::Serialize;

/// The reporting windows (they change what is reported, never what the service does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
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
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
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
    pub(super) fn reporting(&self) -> Reporting {
        self.scheduler.metrics
    }
}
