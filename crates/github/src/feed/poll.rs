//! One polling cycle of the public events feed (`headroom ingest`).
//!
//! Inside the source's lease it decides whether a poll is due — five independent components:
//! the cadence, GitHub's `X-Poll-Interval` floor, this source's own retry backoff, a global
//! block, and poll-class exhaustion in the core ledger; `--force` drops only the cadence and
//! the ETag — and only then opens a run, walks `Link` pages up to the cap (every fetched page
//! processed in full, no stop-on-known-event), debits the core ledger before each request and
//! converges it to the response headers. A poll turned away writes nothing.

use std::sync::Arc;

use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::lanes::{CoreLaneConfig, CoreLanes, LaneError};
use headroom_core::{Dimension, QuotaKey};
use headroom_http::paginate::{LinkPager, StopReason};
use headroom_http::{ApiError, ApiRequest, ApiResponse, Client};
use headroom_store::feed_state::{CoreLedger, EventSource, FeedState, IngestionRunEnd};
use headroom_store::{EventOrigin, Store};
use serde::Serialize;
use serde_json::Value;
use tracing::Instrument as _;

use super::page::{IngestContext, PageCounts, ingest_page};
use super::{FeedError, new_run_id};

/// The one source headroom polls.
pub const SOURCE_TYPE: &str = "github_public_events";
/// Its first page.
pub const FEED_PATH: &str = "/events?per_page=100";

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

/// Which of the five constraints holds a poll back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeferralReason {
    /// Not yet due by the cadence.
    CadenceDueAt,
    /// GitHub's `X-Poll-Interval` floor.
    PollFloorUntil,
    /// This source's own backoff after a failure.
    RetryNotBeforeAt,
    /// A global block (primary exhaustion, reserve breach, secondary limit).
    GloballyBlocked,
    /// The poll class spent its allowance for this window.
    PollAllowance,
}

impl DeferralReason {
    /// The name printed and logged.
    pub fn as_str(&self) -> &'static str {
        match self {
            DeferralReason::CadenceDueAt => "cadence_due_at",
            DeferralReason::PollFloorUntil => "poll_floor_until",
            DeferralReason::RetryNotBeforeAt => "retry_not_before_at",
            DeferralReason::GloballyBlocked => "globally_blocked",
            DeferralReason::PollAllowance => "poll_allowance",
        }
    }
}

/// The five components of a source's schedule, side by side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Schedule {
    /// Cadence.
    pub cadence_due_at: Option<Timestamp>,
    /// GitHub's floor.
    pub poll_floor_until: Option<Timestamp>,
    /// Own backoff.
    pub retry_not_before_at: Option<Timestamp>,
    /// Global block.
    pub global_blocked_until: Option<Timestamp>,
    /// Poll-class exhaustion (derived: the window's reset while the allowance is spent).
    pub poll_class_blocked_until: Option<Timestamp>,
}

impl Schedule {
    /// The schedule of `source` under `ledger` at the allowance in force.
    pub fn of(source: &EventSource, ledger: Option<&CoreLedger>, now: Timestamp) -> Self {
        let class = ledger.and_then(|l| {
            let reset = l.reset_at?;
            (l.window_status != "uninitialized"
                && reset > now
                && l.poll_allowance > 0
                && l.poll_used >= l.poll_allowance)
                .then_some(reset)
        });
        Self {
            cadence_due_at: source.cadence_due_at,
            poll_floor_until: source.poll_floor_until,
            retry_not_before_at: source.retry_not_before_at,
            global_blocked_until: ledger.and_then(|l| l.global_blocked_until),
            poll_class_blocked_until: class,
        }
    }

    /// The binding constraint at `now`, if any holds (`force` ignores the cadence).
    pub fn binding(&self, now: Timestamp, force: bool) -> Option<(Timestamp, DeferralReason)> {
        let parts = [
            (
                (!force).then_some(self.cadence_due_at).flatten(),
                DeferralReason::CadenceDueAt,
            ),
            (self.poll_floor_until, DeferralReason::PollFloorUntil),
            (self.retry_not_before_at, DeferralReason::RetryNotBeforeAt),
            (self.global_blocked_until, DeferralReason::GloballyBlocked),
            (self.poll_class_blocked_until, DeferralReason::PollAllowance),
        ];
        parts
            .into_iter()
            .filter_map(|(at, reason)| at.filter(|t| *t > now).map(|t| (t, reason)))
            .max_by_key(|(t, _)| *t)
    }

    /// `next_poll_at`: the latest of all five (a cache of the answer, never an input).
    pub fn next_poll_at(&self) -> Option<Timestamp> {
        [
            self.cadence_due_at,
            self.poll_floor_until,
            self.retry_not_before_at,
            self.global_blocked_until,
            self.poll_class_blocked_until,
        ]
        .into_iter()
        .flatten()
        .max()
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
    /// The identity the feed spends (unauthenticated: the outbound IP).
    pub async fn quota_key(&self) -> Result<QuotaKey, ApiError> {
        self.client.identity(self.credential.as_ref()).await
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
            event = "config.budget_resolved",
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
                tracing::info!(event = "ingestion.source_busy", event_source_id = source.id);
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
        let key = match self.quota_key().await {
            Ok(k) => k,
            Err(e) => {
                return Ok(PollOutcome::Deferred {
                    until: None,
                    reason: format!("identity: {e}"),
                    run_id: None,
                });
            }
        };
        let (host, subject) = key_parts(&key);
        let ledger = self.state.core_ledger(&host, &subject).await?;
        if source.status == "failed" {
            tracing::info!(
                event = "ingestion.not_due",
                event_source_id = source.id,
                forced = force,
                deferral_reason = "source_failed"
            );
            return Ok(PollOutcome::Deferred {
                until: None,
                reason: "source_failed".into(),
                run_id: None,
            });
        }
        if !source.enabled {
            return Ok(PollOutcome::Deferred {
                until: None,
                reason: "source_disabled".into(),
                run_id: None,
            });
        }
        let schedule = Schedule::of(&source, ledger.as_ref(), now);
        if let Some((until, reason)) = schedule.binding(now, force) {
            tracing::info!(
                event = "ingestion.not_due",
                event_source_id = source.id,
                forced = force,
                deferral_reason = reason.as_str(),
                next_poll_at = %until,
            );
            return Ok(PollOutcome::Deferred {
                until: Some(until),
                reason: reason.as_str().into(),
                run_id: None,
            });
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

    async fn run_opened(
        &self,
        force: bool,
        configured: CoreLanes,
        now: Timestamp,
        mut source: EventSource,
        mut ledger: CoreLedger,
        run_id: String,
    ) -> Result<PollOutcome, PollError> {
        let run_row = self
            .state
            .start_ingestion_run(&run_id, Some(source.id), EventOrigin::Feed.as_str(), now)
            .await?;
        tracing::info!(event = "ingestion.run_started", run_id = %run_id,
            event_source_id = source.id, forced = force);
        let ctx = IngestContext {
            origin: EventOrigin::Feed,
            run_id: run_id.clone(),
            ingestion_run_id: Some(run_row),
        };
        let first = match self.client.policy().resolve(FEED_PATH) {
            Ok(u) => u,
            Err(e) => {
                return self
                    .fail(
                        &mut source,
                        run_row,
                        &run_id,
                        e.to_string(),
                        PageCounts::default(),
                        0,
                        true,
                        Some(&ledger),
                    )
                    .await;
            }
        };
        let cap = u32::try_from(self.settings.lanes.max_pages_per_poll).unwrap_or(u32::MAX);
        let mut pager = LinkPager::new(first, cap);
        let mut counts = PageCounts::default();
        let mut pages = 0u64;
        let mut classification = "ok".to_owned();
        let mut stop: Option<String> = None;
        // The first page's ETag, remembered only once every fetched page is committed: a 304
        // on the next poll must never hide events that a crash kept from being stored.
        let mut validator: Option<(ApiRequest, ApiResponse)> = None;
        while let Some(url) = pager.next_url() {
            let now = self.clock.now();
            // Class exhaustion and the reserve: declined before anything is sent.
            if ledger.window_status == "active" && ledger.poll_used >= ledger.poll_allowance {
                stop = Some("poll_allowance".into());
                break;
            }
            if ledger.window_status == "active"
                && ledger.remaining.is_some_and(|r| r <= ledger.reserve)
            {
                stop = Some("reserve_reached".into());
                break;
            }
            ledger.poll_used += 1;
            self.state.save_core_ledger(&ledger, now).await?;
            let mut request = ApiRequest::get(url.as_str())
                .credential(self.credential.as_ref())
                .route("feed_poll", Dimension::RestCore);
            if pages == 0 && !force {
                request = request.conditional();
            }
            let sent = request.clone();
            let response = match self.client.send(request).await {
                Ok(r) => r,
                Err(ApiError::RateLimited {
                    until,
                    reason,
                    bucket,
                    ..
                }) => {
                    let reason = reason.to_string();
                    let now = self.clock.now();
                    block_globally(&mut ledger, until, &reason);
                    self.state.save_core_ledger(&ledger, now).await?;
                    source.next_poll_at = Schedule::of(&source, Some(&ledger), now).next_poll_at();
                    self.state.save_event_source(&source, now).await?;
                    tracing::info!(event = "ingestion.deferred", run_id = %run_id,
                        bucket = %bucket, reason = %reason, until = %until);
                    let end = IngestionRunEnd {
                        status: "deferred".into(),
                        classification: Some("rate_limited".into()),
                        finished_at: Some(now),
                        pages_fetched: pages,
                        error_message: Some(reason),
                        ..run_end(&counts)
                    };
                    self.state.finish_ingestion_run(run_row, &end).await?;
                    return Ok(PollOutcome::Deferred {
                        until: Some(until),
                        reason: "rate_limited".into(),
                        run_id: Some(run_id),
                    });
                }
                Err(e) => {
                    let permanent = matches!(
                        e,
                        ApiError::Gone { .. }
                            | ApiError::Status { .. }
                            | ApiError::Forbidden { .. }
                            | ApiError::Refused(_)
                    );
                    if permanent {
                        return self
                            .fail(
                                &mut source,
                                run_row,
                                &run_id,
                                e.to_string(),
                                counts,
                                pages,
                                true,
                                Some(&ledger),
                            )
                            .await;
                    }
                    return self
                        .fail(
                            &mut source,
                            run_row,
                            &run_id,
                            e.to_string(),
                            counts,
                            pages,
                            false,
                            Some(&ledger),
                        )
                        .await;
                }
            };
            let now = self.clock.now();
            pages += 1;
            // One request that completed without a secondary limit ends the escalation.
            ledger.consecutive_secondary_limits = 0;
            reconcile(
                &mut ledger,
                &response.signal,
                configured,
                &self.settings.lanes,
                now,
            );
            self.state.save_core_ledger(&ledger, now).await?;
            if let Some(secs) = response
                .headers
                .get("x-poll-interval")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<i64>().ok())
                .filter(|s| *s > 0)
            {
                source.poll_floor_until = Some(now + SignedDuration::from_secs(secs));
            }
            if response.not_modified() {
                tracing::debug!(event = "ingestion.not_modified", run_id = %run_id,
                    rate_limit_used = response.signal.used, rate_limit_remaining = response.signal.remaining);
                classification = "not_modified".into();
                stop = Some("not_modified".into());
                break;
            }
            let envelopes: Vec<Value> = match serde_json::from_slice::<Value>(&response.body) {
                Ok(Value::Array(items)) => items,
                Ok(_) | Err(_) => {
                    return self
                        .fail(
                            &mut source,
                            run_row,
                            &run_id,
                            "the /events body is not a JSON array".into(),
                            counts,
                            pages,
                            false,
                            Some(&ledger),
                        )
                        .await;
                }
            };
            let empty = envelopes.is_empty();
            let page = ingest_page(self.store.as_ref(), envelopes, &ctx, now)
                .await
                .map_err(PollError::Feed)?;
            tracing::debug!(event = "ingestion.page_processed", run_id = %run_id, page = pages,
                events_received = page.events_received, events_created = page.events_created);
            counts.add(&page);
            pager.record(&response.url, &response.headers);
            if sent.conditional {
                validator = Some((sent, response));
            }
            if empty {
                stop = Some("empty_page".into());
                break;
            }
        }
        let stop_reason = stop.unwrap_or_else(|| match pager.stop_reason() {
            Some(StopReason::PageCap) => "page_cap".into(),
            Some(StopReason::LastPage) | None => "no_next_link".into(),
            Some(other) => format!("{other:?}").to_lowercase(),
        });
        tracing::debug!(event = "ingestion.pagination_stopped", run_id = %run_id, stop_reason = %stop_reason);
        let now = self.clock.now();
        if pages > 0 {
            source.cadence_due_at = Some(
                now + SignedDuration::from_secs(
                    i64::try_from(self.settings.lanes.poll_interval_secs).unwrap_or(i64::MAX),
                ),
            );
            source.last_polled_at = Some(now);
            source.consecutive_failures = 0;
            source.retry_not_before_at = None;
            source.last_error = None;
        }
        source.next_poll_at = Schedule::of(&source, Some(&ledger), now).next_poll_at();
        self.state.save_event_source(&source, now).await?;
        if let Some((request, response)) = &validator {
            self.client.remember_etag(request, response).await;
        }
        let end = IngestionRunEnd {
            status: "completed".into(),
            classification: Some(classification.clone()),
            stop_reason: Some(stop_reason.clone()),
            finished_at: Some(now),
            pages_fetched: pages,
            ..run_end(&counts)
        };
        self.state.finish_ingestion_run(run_row, &end).await?;
        tracing::info!(
            event = "ingestion.run_completed",
            run_id = %run_id,
            event_source_id = source.id,
            run_status = "completed",
            classification = %classification,
            stop_reason = %stop_reason,
            pages_fetched = pages,
            events_received = counts.events_received,
            push_events_seen = counts.push_events_seen,
            events_created = counts.events_created,
            duplicates_skipped = counts.duplicates_skipped,
            events_quarantined = counts.events_quarantined,
            events_ignored = counts.events_ignored,
            events_failed = counts.events_failed,
            next_poll_at = ?source.next_poll_at.map(|t| t.to_string()),
        );
        Ok(PollOutcome::Completed {
            run_id,
            counts,
            pages_fetched: pages,
            stop_reason,
            classification,
        })
    }

    #[allow(clippy::too_many_arguments)]
    async fn fail(
        &self,
        source: &mut EventSource,
        run_row: i64,
        run_id: &str,
        error: String,
        counts: PageCounts,
        pages: u64,
        permanent: bool,
        ledger: Option<&CoreLedger>,
    ) -> Result<PollOutcome, PollError> {
        let now = self.clock.now();
        let error = headroom_core::redact(&error);
        source.consecutive_failures += 1;
        source.last_error = Some(error.clone());
        if permanent {
            source.status = "failed".into();
            tracing::error!(event = "ingestion.source_failed", run_id = %run_id,
                event_source_id = source.id, deferral_reason = "source_failed", error = %error);
        } else {
            let exp =
                u32::try_from(source.consecutive_failures.saturating_sub(1).min(16)).unwrap_or(16);
            let delay = self
                .settings
                .retry_base
                .checked_mul(2i32.saturating_pow(exp))
                .unwrap_or(self.settings.retry_max)
                .min(self.settings.retry_max);
            source.retry_not_before_at = Some(now + delay);
            tracing::warn!(event = "ingestion.source_backoff", run_id = %run_id,
                event_source_id = source.id, retry_not_before_at = %(now + delay),
                backoff_seconds = delay.as_secs(), consecutive_failures = source.consecutive_failures,
                error = %error);
        }
        source.next_poll_at = Schedule::of(source, ledger, now).next_poll_at();
        self.state.save_event_source(source, now).await?;
        let end = IngestionRunEnd {
            status: "failed".into(),
            classification: Some(
                if permanent {
                    "permanent_failure"
                } else {
                    "transient_failure"
                }
                .into(),
            ),
            finished_at: Some(now),
            pages_fetched: pages,
            error_message: Some(error.clone()),
            ..run_end(&counts)
        };
        self.state.finish_ingestion_run(run_row, &end).await?;
        Ok(PollOutcome::Failed {
            run_id: run_id.to_owned(),
            error,
            counts,
        })
    }
}

fn run_end(c: &PageCounts) -> IngestionRunEnd {
    IngestionRunEnd {
        events_received: c.events_received,
        push_events_seen: c.push_events_seen,
        events_created: c.events_created,
        duplicates_skipped: c.duplicates_skipped,
        events_quarantined: c.events_quarantined,
        events_ignored: c.events_ignored,
        events_failed: c.events_failed,
        ..IngestionRunEnd::default()
    }
}

/// A window whose reset has passed rolls: counters restart, the secondary-limit strikes stay.
fn roll_window(ledger: &mut CoreLedger, now: Timestamp) {
    if ledger.window_status != "uninitialized" && ledger.reset_at.is_some_and(|r| r <= now) {
        tracing::info!(
            event = "budget.window_rolled",
            poll_used = ledger.poll_used,
            enrichment_used = ledger.enrichment_used
        );
        ledger.window_status = "uninitialized".into();
        ledger.poll_used = 0;
        ledger.enrichment_used = 0;
        ledger.actor_share_used = 0;
        ledger.repository_share_used = 0;
        ledger.co_tenant_usage = 0;
        ledger.remaining = None;
        ledger.reset_at = None;
        ledger.window_started_at = None;
    }
    if ledger.global_blocked_until.is_some_and(|b| b <= now)
        && ledger.window_status == "globally_blocked"
    {
        tracing::info!(event = "budget.global_block_cleared");
        ledger.window_status = if ledger.reset_at.is_some() {
            "active".into()
        } else {
            "uninitialized".into()
        };
    }
}

/// Converges the ledger to a core response's headers (other resources are ignored).
fn reconcile(
    ledger: &mut CoreLedger,
    signal: &headroom_core::RateLimitSignal,
    configured: CoreLanes,
    formula: &CoreLaneConfig,
    now: Timestamp,
) {
    if signal
        .resource
        .as_ref()
        .is_some_and(|b| b.as_str() != "core")
    {
        return;
    }
    let (Some(limit), Some(remaining), Some(reset)) =
        (signal.limit, signal.remaining, signal.reset_at)
    else {
        return;
    };
    let used = signal.used.unwrap_or(limit.saturating_sub(remaining));
    let new_window =
        ledger.window_status == "uninitialized" || ledger.reset_at.is_none_or(|r| reset > r);
    if new_window {
        ledger.window_status = "active".into();
        ledger.window_started_at = Some(now);
        ledger.reset_at = Some(reset);
        ledger.limit = Some(limit);
        ledger.remaining = Some(remaining);
        tracing::info!(event = "budget.window_initialized", limit, reserve = ledger.reserve,
            poll_allowance = ledger.poll_allowance, enrichment_allowance = ledger.enrichment_allowance,
            rate_limit_resource = "core", rate_limit_limit = limit, rate_limit_remaining = remaining,
            rate_limit_used = used, rate_limit_reset_at = %reset, poll_used = ledger.poll_used);
    } else if ledger.reset_at == Some(reset) {
        // Within one window the smaller remaining is newer: never move backwards.
        ledger.remaining = Some(ledger.remaining.map_or(remaining, |r| r.min(remaining)));
        ledger.limit = Some(limit);
    }
    if reset <= now {
        tracing::warn!(event = "budget.window_reset_in_past", rate_limit_reset_at = %reset);
    }
    // A limit that cannot fund the configured formula clamps the detail lane.
    if limit != configured.limit {
        let at_limit = CoreLaneConfig { limit, ..*formula }
            .resolve()
            .map_or(0, |lanes| lanes.detail_allowance);
        if at_limit < ledger.enrichment_allowance {
            tracing::warn!(
                event = "budget.allowances_clamped",
                limit,
                enrichment_allowance = at_limit
            );
            ledger.enrichment_allowance = at_limit;
        }
    }
    let ours = ledger.poll_used + ledger.enrichment_used;
    let co_tenant = used.saturating_sub(ours);
    if co_tenant > 0 {
        ledger.co_tenant_usage = co_tenant;
        tracing::debug!(
            event = "budget.co_tenant_usage",
            co_tenant_usage = co_tenant,
            rate_limit_used = used,
            application_used = ours
        );
        if ledger.remaining.is_some_and(|r| r <= ledger.reserve) {
            tracing::info!(
                event = "budget.co_tenant_pressure",
                co_tenant_usage = co_tenant,
                rate_limit_remaining = remaining,
                reserve = ledger.reserve
            );
        }
    }
    if ledger.poll_allowance > 0 && ledger.poll_used == ledger.poll_allowance {
        tracing::info!(
            event = "budget.class_exhausted",
            class = "poll",
            poll_used = ledger.poll_used
        );
    }
}

/// Converges the core ledger to a response's headers outside a poll (the detail lane).
pub(crate) fn reconcile_core(
    ledger: &mut CoreLedger,
    signal: &headroom_core::RateLimitSignal,
    now: Timestamp,
) {
    if signal
        .resource
        .as_ref()
        .is_some_and(|b| b.as_str() != "core")
    {
        return;
    }
    if let (Some(remaining), Some(reset)) = (signal.remaining, signal.reset_at) {
        if ledger.reset_at == Some(reset) {
            ledger.remaining = Some(ledger.remaining.map_or(remaining, |r| r.min(remaining)));
        } else if ledger.reset_at.is_none_or(|r| reset > r) && reset > now {
            ledger.reset_at = Some(reset);
            ledger.remaining = Some(remaining);
        }
    }
}

/// A global block only ever moves later. Secondary limits count strikes that survive rollover.
fn block_globally(ledger: &mut CoreLedger, until: Timestamp, reason: &str) {
    if ledger.global_blocked_until.is_none_or(|b| until > b) {
        ledger.global_blocked_until = Some(until);
        tracing::info!(event = "budget.global_block_set", global_blocked_until = %until, reason = %reason);
    }
    ledger.window_status = "globally_blocked".into();
    if reason.contains("secondary") || reason.contains("abuse") {
        ledger.consecutive_secondary_limits += 1;
    }
}
