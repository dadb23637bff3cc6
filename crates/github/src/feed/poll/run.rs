//! One opened ingestion run: the `Link` pages walked up to the cap (every fetched page
//! processed in full), the core ledger debited before each request and converged after it,
//! and the run's end (completed, deferred by a rate limit, or failed with the source's
//! backoff or failure).

use headroom_core::clock::{Clock, SignedDuration, Timestamp};
use headroom_core::lanes::CoreLanes;
use headroom_core::route;
use headroom_core::telemetry;
use headroom_http::paginate::{LinkPager, StopReason};
use headroom_http::{ApiError, ApiRequest, ApiResponse, RateLimitReason};
use headroom_store::feed_state::{
    CoreLedger, EventSource, IngestionRunEnd, IngestionRunStatus, SourceStatus, WindowStatus,
};
use headroom_store::{CredentialUsed, EventOrigin};
use serde_json::Value;

use super::ledger::{block_globally, reconcile};
use super::{
    CREDENTIAL_REJECTED, FEED_PATH, PollError, PollOutcome, Poller, Schedule, failure_text,
};
use crate::feed::new_run_id;
use crate::feed::page::{IngestContext, PageCounts, ingest_page};

/// What an opened run carries from page to page.
struct Run {
    force: bool,
    configured: CoreLanes,
    source: EventSource,
    ledger: CoreLedger,
    run_id: String,
    run_row: i64,
    ctx: IngestContext,
    counts: PageCounts,
    pages: u64,
    classification: String,
    stop: Option<String>,
    /// The first page's ETag, remembered only once every fetched page is committed: a 304
    /// on the next poll must never hide events that a crash kept from being stored.
    validator: Option<(ApiRequest, ApiResponse)>,
}

/// How a walk over the pages ended.
enum Walk {
    /// Pagination stopped, for this reason; the run completes.
    Stopped(String),
    /// A rate limit deferred the run (already recorded).
    Deferred(PollOutcome),
    /// The run failed: the error, and whether the source fails for good.
    Failed(String, bool),
}

/// What one page asked of the walk.
enum Page {
    Next,
    Stop,
    Failed(String),
}

impl Poller {
    pub(super) async fn run_opened(
        &self,
        force: bool,
        configured: CoreLanes,
        now: Timestamp,
        source: EventSource,
        ledger: CoreLedger,
        run_id: String,
    ) -> Result<PollOutcome, PollError> {
        // The run records the credential it spends: its fingerprint (never the token) and
        // the identity it resolved to, the ledger's subject.
        let credential = CredentialUsed {
            fingerprint: self.credential.as_ref().map(|c| c.fingerprint().to_owned()),
            owner: ledger.subject.clone(),
        };
        let run_row = self
            .open_run(&run_id, &source, Some(&credential), now)
            .await?;
        tracing::info!(event = telemetry::INGESTION_RUN_STARTED, run_id = %run_id,
            event_source_id = source.id, forced = force);
        let ctx = IngestContext {
            origin: EventOrigin::Feed,
            run_id: run_id.clone(),
            ingestion_run_id: Some(run_row),
        };
        let mut run = Run {
            force,
            configured,
            source,
            ledger,
            run_id,
            run_row,
            ctx,
            counts: PageCounts::default(),
            pages: 0,
            classification: "ok".to_owned(),
            stop: None,
            validator: None,
        };
        let walk = match self.client.policy().resolve(FEED_PATH) {
            Ok(first) => self.walk(&mut run, first).await?,
            Err(e) => Walk::Failed(e.to_string(), true),
        };
        match walk {
            Walk::Stopped(stop_reason) => self.completed(run, stop_reason).await,
            Walk::Deferred(outcome) => Ok(outcome),
            Walk::Failed(error, permanent) => {
                self.fail(
                    &mut run.source,
                    run.run_row,
                    &run.run_id,
                    error,
                    run.counts,
                    run.pages,
                    permanent,
                    Some(&run.ledger),
                )
                .await
            }
        }
    }

    /// Fetches pages until the pager, the ledger or a page stops it.
    async fn walk(&self, run: &mut Run, first: url::Url) -> Result<Walk, PollError> {
        let cap = u32::try_from(self.settings.lanes.max_pages_per_poll).unwrap_or(u32::MAX);
        let mut pager = LinkPager::new(first, cap);
        while let Some(url) = pager.next_url() {
            let now = self.clock.now();
            let ledger = &mut run.ledger;
            // Class exhaustion and the reserve: declined before anything is sent.
            if ledger.window_status == WindowStatus::Active
                && ledger.poll_used >= ledger.poll_allowance
            {
                run.stop = Some("poll_allowance".into());
                break;
            }
            if ledger.window_status == WindowStatus::Active
                && ledger.remaining.is_some_and(|r| r <= ledger.reserve)
            {
                run.stop = Some("reserve_reached".into());
                break;
            }
            ledger.poll_used += 1;
            self.state.save_core_ledger(ledger, now).await?;
            let mut request = ApiRequest::get(url.as_str())
                .credential(self.credential.as_ref())
                .route(route::FEED_POLL);
            if run.pages == 0 && !run.force {
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
                    let outcome = self
                        .deferred(run, until, &reason, &bucket.to_string())
                        .await?;
                    return Ok(Walk::Deferred(outcome));
                }
                Err(e) => {
                    // A 401 is not permanent: the operator replaces the token and the next
                    // attempt after the backoff succeeds. A 403 without rate-limit markers
                    // (permission, SSO) suspends the source.
                    let permanent = match &e {
                        ApiError::Forbidden { status, .. } => *status != 401,
                        ApiError::Gone { .. } | ApiError::Status { .. } | ApiError::Refused(_) => {
                            true
                        }
                        _ => false,
                    };
                    return Ok(Walk::Failed(failure_text(&e), permanent));
                }
            };
            match self.page(run, &mut pager, sent, response).await? {
                Page::Next => {}
                Page::Stop => break,
                Page::Failed(error) => return Ok(Walk::Failed(error, false)),
            }
        }
        let stop_reason = run
            .stop
            .take()
            .unwrap_or_else(|| match pager.stop_reason() {
                Some(StopReason::PageCap) => "page_cap".into(),
                Some(StopReason::LastPage) | None => "no_next_link".into(),
                Some(other) => format!("{other:?}").to_lowercase(),
            });
        Ok(Walk::Stopped(stop_reason))
    }

    /// One answered page: the ledger converged, the poll floor taken, the events ingested.
    async fn page(
        &self,
        run: &mut Run,
        pager: &mut LinkPager,
        sent: ApiRequest,
        response: ApiResponse,
    ) -> Result<Page, PollError> {
        let now = self.clock.now();
        run.pages += 1;
        // One request that completed without a secondary limit ends the escalation.
        run.ledger.consecutive_secondary_limits = 0;
        reconcile(
            &mut run.ledger,
            &response.signal,
            run.configured,
            &self.settings.lanes,
            now,
        );
        self.state.save_core_ledger(&run.ledger, now).await?;
        if let Some(secs) = response
            .headers
            .get("x-poll-interval")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<i64>().ok())
            .filter(|s| *s > 0)
        {
            run.source.poll_floor_until = Some(now + SignedDuration::from_secs(secs));
        }
        if response.not_modified() {
            tracing::debug!(event = telemetry::INGESTION_NOT_MODIFIED, run_id = %run.run_id,
                rate_limit_used = response.signal.used, rate_limit_remaining = response.signal.remaining);
            run.classification = "not_modified".into();
            run.stop = Some("not_modified".into());
            return Ok(Page::Stop);
        }
        let envelopes: Vec<Value> = match serde_json::from_slice::<Value>(&response.body) {
            Ok(Value::Array(items)) => items,
            Ok(_) | Err(_) => {
                return Ok(Page::Failed("the /events body is not a JSON array".into()));
            }
        };
        let empty = envelopes.is_empty();
        let page = ingest_page(self.store.as_ref(), envelopes, &run.ctx, now)
            .await
            .map_err(PollError::Feed)?;
        tracing::debug!(event = telemetry::INGESTION_PAGE_PROCESSED, run_id = %run.run_id, page = run.pages,
            events_received = page.events_received, events_created = page.events_created);
        run.counts.add(&page);
        pager.record(&response.url, &response.headers);
        if sent.conditional {
            run.validator = Some((sent, response));
        }
        if empty {
            run.stop = Some("empty_page".into());
            return Ok(Page::Stop);
        }
        Ok(Page::Next)
    }

    /// A rate limit: a global block, the source rescheduled, the run ended `deferred`.
    async fn deferred(
        &self,
        run: &mut Run,
        until: Timestamp,
        limit: &RateLimitReason,
        bucket: &str,
    ) -> Result<PollOutcome, PollError> {
        let now = self.clock.now();
        block_globally(&mut run.ledger, until, limit);
        let reason = limit.to_string();
        self.state.save_core_ledger(&run.ledger, now).await?;
        run.source.next_poll_at = Schedule::of(&run.source, Some(&run.ledger), now).next_poll_at();
        self.state.save_event_source(&run.source, now).await?;
        tracing::info!(event = telemetry::INGESTION_DEFERRED, run_id = %run.run_id,
            bucket = %bucket, reason = %reason, until = %until);
        let end = IngestionRunEnd {
            status: IngestionRunStatus::Deferred,
            classification: Some("rate_limited".into()),
            finished_at: Some(now),
            pages_fetched: run.pages,
            error_message: Some(reason),
            ..run_end(&run.counts)
        };
        self.state.finish_ingestion_run(run.run_row, &end).await?;
        Ok(PollOutcome::Deferred {
            until: Some(until),
            reason: "rate_limited".into(),
            run_id: Some(run.run_id.clone()),
        })
    }

    /// Pagination stopped: the source's cadence and schedule, the ETag, the run completed.
    async fn completed(&self, run: Run, stop_reason: String) -> Result<PollOutcome, PollError> {
        let Run {
            mut source,
            ledger,
            run_id,
            run_row,
            counts,
            pages,
            classification,
            validator,
            ..
        } = run;
        tracing::debug!(event = telemetry::INGESTION_PAGINATION_STOPPED, run_id = %run_id, stop_reason = %stop_reason);
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
            status: IngestionRunStatus::Completed,
            classification: Some(classification.clone()),
            stop_reason: Some(stop_reason.clone()),
            finished_at: Some(now),
            pages_fetched: pages,
            ..run_end(&counts)
        };
        self.state.finish_ingestion_run(run_row, &end).await?;
        tracing::info!(
            event = telemetry::INGESTION_RUN_COMPLETED,
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

    /// Records a feed run of `source` as started at `now`, spending `credential`; its row id.
    async fn open_run(
        &self,
        run_id: &str,
        source: &EventSource,
        credential: Option<&CredentialUsed>,
        now: Timestamp,
    ) -> Result<i64, PollError> {
        Ok(self
            .state
            .start_ingestion_run(
                run_id,
                Some(source.id),
                EventOrigin::Feed.as_str(),
                credential,
                now,
            )
            .await?)
    }

    /// The quota identity could not be resolved (the credential's `GET /user` failed, or the
    /// provider did not answer): a run is recorded, failed, and the source backs off.
    pub(super) async fn identity_failed(
        &self,
        mut source: EventSource,
        e: &ApiError,
    ) -> Result<PollOutcome, PollError> {
        let now = self.clock.now();
        let run_id = new_run_id();
        let run_row = self.open_run(&run_id, &source, None, now).await?;
        let error = match e {
            // The prefix readiness looks for comes first.
            ApiError::Forbidden { status: 401, .. } => failure_text(e),
            _ => format!("quota identity: {}", failure_text(e)),
        };
        self.fail(
            &mut source,
            run_row,
            &run_id,
            error,
            PageCounts::default(),
            0,
            false,
            None,
        )
        .await
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
            source.status = SourceStatus::Failed;
            tracing::error!(event = telemetry::INGESTION_SOURCE_FAILED, run_id = %run_id,
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
            if error.starts_with(CREDENTIAL_REJECTED) {
                tracing::error!(event = telemetry::INGESTION_CREDENTIAL_REJECTED, run_id = %run_id,
                    event_source_id = source.id, retry_not_before_at = %(now + delay),
                    consecutive_failures = source.consecutive_failures, error = %error);
            } else {
                tracing::warn!(event = telemetry::INGESTION_SOURCE_BACKOFF, run_id = %run_id,
                    event_source_id = source.id, retry_not_before_at = %(now + delay),
                    backoff_seconds = delay.as_secs(),
                    consecutive_failures = source.consecutive_failures, error = %error);
            }
        }
        source.next_poll_at = Schedule::of(source, ledger, now).next_poll_at();
        self.state.save_event_source(source, now).await?;
        let end = IngestionRunEnd {
            status: IngestionRunStatus::Failed,
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
