//! One polling cycle of the public events feed (`headroom ingest`).
//!
//! Inside the source's lease it decides whether a poll is due — five independent components:
//! the cadence, GitHub's `X-Poll-Interval` floor, this source's own retry backoff, a global
//! block, and poll-class exhaustion in the core ledger; `--force` drops only the cadence and
//! the ETag — and only then opens a run, walks `Link` pages up to the cap (every fetched page
//! processed in full, no stop-on-known-event), debits the core ledger before each request and
//! converges it to the response headers. A poll turned away writes nothing.

use std::sync::Arc;

use headroom_core::QuotaKey;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::lanes::{CoreLaneConfig, CoreLanes, LaneError};
use headroom_core::telemetry;
use headroom_http::{ApiError, Client};
use headroom_store::Store;
use headroom_store::feed_state::{CoreLedger, EventSource, FeedState, SourceStatus};
use serde::Serialize;
use tracing::Instrument as _;

use super::page::PageCounts;
use super::{FeedError, new_run_id};

pub(crate) use self::ledger::reconcile_core;
use self::ledger::roll_window;
pub use self::schedule::{DeferralReason, Schedule};

mod ledger;
mod run;
mod schedule;

/// The one source headroom polls.
pub const SOURCE_TYPE: &str = "github_public_events";
/// Its first page.
pub const FEED_PATH: &str = "/events?per_page=100";

/// How a source's `last_error` begins when the provider rejected the credential (401): the
/// attempt failed, the source backs off, and readiness fails until a request succeeds.
pub const CREDENTIAL_REJECTED: &str = "credential rejected";

/// Whether the source's latest attempt failed because the credential was rejected (a success
/// clears its failures).
pub fn credential_rejected(source: &headroom_store::feed_state::EventSource) -> bool {
    source.consecutive_failures > 0
        && source
            .last_error
            .as_deref()
            .is_some_and(|e| e.starts_with(CREDENTIAL_REJECTED))
}

/// A failed request in the words a source records: a 401 says the credential was rejected.
fn failure_text(e: &ApiError) -> String {
    match e {
        ApiError::Forbidden {
            status: 401,
            message,
        } => format!("{CREDENTIAL_REJECTED} (401): {message}"),
        other => other.to_string(),
    }
}

/// Polling settings (the reference's defaults).
#[derive(Debug, Clone)]
pub struct PollSettings {
    /// The core allowance formula's inputs.
    pub lanes: CoreLaneConfig,
    /// How long a one-shot waits for a busy source.
    pub source_lock_wait: SignedDuration,
    /// How long a source lease lasts (a dead holder's lapses).
    pub source_lease: SignedDuration,
    /// First retry backoff after a failed poll (doubles, capped).
    pub retry_base: SignedDuration,
    /// Backoff cap.
    pub retry_max: SignedDuration,
}

impl Default for PollSettings {
    fn default() -> Self {
        Self {
            lanes: CoreLaneConfig::default(),
            source_lock_wait: SignedDuration::from_secs(30),
            source_lease: SignedDuration::from_secs(600),
            retry_base: SignedDuration::from_secs(60),
            retry_max: SignedDuration::from_secs(3600),
        }
    }
}

impl PollSettings {
    /// The formula applied at `limit` (the configured one before any header is seen).
    pub fn lanes_at(&self, limit: u64) -> Result<CoreLanes, LaneError> {
        CoreLaneConfig {
            limit,
            ..self.lanes
        }
        .resolve()
    }
}

/// What a polling cycle did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PollOutcome {
    /// A poll ran (pages fetched, or a 304).
    Completed {
        /// The run id.
        run_id: String,
        /// Counts.
        counts: PageCounts,
        /// Pages fetched.
        pages_fetched: u64,
        /// Why pagination stopped.
        stop_reason: String,
        /// `ok` or `not_modified`.
        classification: String,
    },
    /// Not attempted, or the provider/ledger declined it: exit 0.
    Deferred {
        /// Until when.
        until: Option<Timestamp>,
        /// Which constraint (or `source_failed`, `source_disabled`, `rate_limited`).
        reason: String,
        /// The run id, when a run had opened.
        run_id: Option<String>,
    },
    /// Another poller holds the source: exit 0.
    Busy,
    /// The attempt failed: exit 1.
    Failed {
        /// The run id.
        run_id: String,
        /// What went wrong (redacted).
        error: String,
        /// Counts of pages processed before the failure.
        counts: PageCounts,
    },
}

/// Why a poll refused to run at all (exit 2).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PollError {
    /// The budget formula is infeasible.
    #[error(transparent)]
    Infeasible(#[from] LaneError),
    /// Storage failed.
    #[error(transparent)]
    Feed(#[from] FeedError),
    /// The quota identity could not be established.
    #[error("cannot establish the quota identity: {0}")]
    Identity(String),
}

impl From<headroom_store::StoreError> for PollError {
    fn from(e: headroom_store::StoreError) -> Self {
        PollError::Feed(FeedError::Store(e))
    }
}

/// What a poller needs.
#[derive(Debug, Clone)]
pub struct Poller {
    /// Rows.
    pub store: Arc<dyn Store>,
    /// Schedule, runs and ledgers.
    pub state: Arc<dyn FeedState>,
    /// The exit door.
    pub client: Client,
    /// The credential to spend (none: the unauthenticated per-IP quota).
    pub credential: Option<headroom_http::Credential>,
    /// Time.
    pub clock: TokioClock,
    /// Settings.
    pub settings: PollSettings,
}

fn key_parts(key: &QuotaKey) -> (String, String) {
    (
        key.host.to_string(),
        headroom_store::subject_label(&key.subject),
    )
}

impl Poller {
    /// The identity the feed spends (unauthenticated: the outbound IP). Discovering it is a
    /// request (`GET /user`), which waits out the source's backoff as a poll would: a rejected
    /// credential is not asked again every tick ([`ApiError::Identity`] until then).
    pub async fn quota_key(&self) -> Result<QuotaKey, ApiError> {
        let credential = self.credential.as_ref();
        if let Some(key) = self.client.known_identity(credential).await {
            return Ok(key);
        }
        let now = self.clock.now();
        // A source that cannot be read holds nothing back: the request's own answer decides.
        let source = self.state.event_source(SOURCE_TYPE).await;
        let backoff = source.ok().flatten().and_then(|s| s.retry_not_before_at);
        if let Some(until) = backoff.filter(|at| *at > now) {
            return Err(ApiError::Identity(format!(
                "not asked while the feed source backs off after its last failure, until {until}"
            )));
        }
        self.client.identity(credential).await
    }

    /// The core ledger row of the identity this poller spends, if one exists yet.
    pub async fn core_ledger(&self) -> Result<Option<CoreLedger>, PollError> {
        let key = self
            .quota_key()
            .await
            .map_err(|e| PollError::Identity(e.to_string()))?;
        let (host, subject) = key_parts(&key);
        Ok(self.state.core_ledger(&host, &subject).await?)
    }

    /// One polling cycle, if due.
    pub async fn poll_once(&self, force: bool) -> Result<PollOutcome, PollError> {
        let configured = self.settings.lanes_at(self.settings.lanes.limit)?;
        tracing::info!(
            event = telemetry::CONFIG_BUDGET_RESOLVED,
            poll_interval_seconds = self.settings.lanes.poll_interval_secs,
            max_pages_per_poll = self.settings.lanes.max_pages_per_poll,
            limit = configured.limit,
            reserve = configured.reserve,
            poll_allowance = configured.poll_allowance,
            enrichment_allowance = configured.detail_allowance,
            actor_guarantee = configured.actor_guarantee,
            repository_guarantee = configured.repository_guarantee,
        );
        let now = self.clock.now();
        let source = self
            .state
            .ensure_event_source(SOURCE_TYPE, FEED_PATH, now)
            .await?;
        let holder = new_run_id();
        let wait_until = now + self.settings.source_lock_wait;
        loop {
            let now = self.clock.now();
            if self
                .state
                .try_lock_event_source(source.id, &holder, now, now + self.settings.source_lease)
                .await?
            {
                break;
            }
            if now >= wait_until {
                tracing::info!(
                    event = telemetry::INGESTION_SOURCE_BUSY,
                    event_source_id = source.id
                );
                return Ok(PollOutcome::Busy);
            }
            self.clock.sleep(SignedDuration::from_secs(1)).await;
        }
        let outcome = self.locked(force, configured).await;
        self.state.unlock_event_source(source.id, &holder).await?;
        outcome
    }

    async fn locked(&self, force: bool, configured: CoreLanes) -> Result<PollOutcome, PollError> {
        let now = self.clock.now();
        // Re-read inside the lease: another poller may have just run.
        let source = self
            .state
            .ensure_event_source(SOURCE_TYPE, FEED_PATH, now)
            .await?;
        // The source's own holds, which need no identity: while one holds, whose quota the
        // credential spends is not asked (`GET /user` is a request like a poll's).
        if let Some(deferred) = self.held_before_identity(&source, force, now).await {
            return Ok(deferred);
        }
        let key = match self.quota_key().await {
            Ok(k) => k,
            // The identity's own request met a limit: a deferral like any other.
            Err(ApiError::RateLimited { until, reason, .. }) => {
                return Ok(PollOutcome::Deferred {
                    until: Some(until),
                    reason: format!("identity: {reason}"),
                    run_id: None,
                });
            }
            // A rejected credential, an unreachable provider: the attempt failed, and the
            // source says so (never a silent deferral).
            Err(e) => return self.identity_failed(source, &e).await,
        };
        let (host, subject) = key_parts(&key);
        let ledger = self.state.core_ledger(&host, &subject).await?;
        let schedule = Schedule::of(&source, ledger.as_ref(), now);
        if let Some((until, reason)) = schedule.binding(now, force) {
            return Ok(not_due(&source, force, until, reason));
        }
        let mut ledger = ledger.unwrap_or_else(|| CoreLedger::new(&host, &subject));
        roll_window(&mut ledger, now);
        ledger.poll_allowance = configured.poll_allowance;
        ledger.enrichment_allowance = configured.detail_allowance;
        ledger.reserve = configured.reserve;

        let run_id = new_run_id();
        // Every line of the run, the exit door's included, carries its run_id.
        let span = tracing::info_span!("ingestion_run", run_id = %run_id);
        self.run_opened(force, configured, now, source, ledger, run_id)
            .instrument(span)
            .await
    }

    /// A deferral the source itself decides, before any identity is needed: a failed or
    /// disabled source; and, when the identity is not known yet (so asking would send
    /// `GET /user`), the source's schedule without the ledger — its cadence, poll floor and
    /// retry backoff.
    async fn held_before_identity(
        &self,
        source: &EventSource,
        force: bool,
        now: Timestamp,
    ) -> Option<PollOutcome> {
        if source.status == SourceStatus::Failed {
            tracing::info!(
                event = telemetry::INGESTION_NOT_DUE,
                event_source_id = source.id,
                forced = force,
                deferral_reason = "source_failed"
            );
            return Some(PollOutcome::Deferred {
                until: None,
                reason: "source_failed".into(),
                run_id: None,
            });
        }
        if !source.enabled {
            return Some(PollOutcome::Deferred {
                until: None,
                reason: "source_disabled".into(),
                run_id: None,
            });
        }
        if self
            .client
            .known_identity(self.credential.as_ref())
            .await
            .is_some()
        {
            return None;
        }
        let (until, reason) = Schedule::of(source, None, now).binding(now, force)?;
        Some(not_due(source, force, until, reason))
    }
}

/// A poll the schedule holds back until `until`, logged.
fn not_due(
    source: &EventSource,
    force: bool,
    until: Timestamp,
    reason: DeferralReason,
) -> PollOutcome {
    tracing::info!(
        event = telemetry::INGESTION_NOT_DUE,
        event_source_id = source.id,
        forced = force,
        deferral_reason = reason.as_str(),
        next_poll_at = %until,
    );
    PollOutcome::Deferred {
        until: Some(until),
        reason: reason.as_str().into(),
        run_id: None,
    }
}
