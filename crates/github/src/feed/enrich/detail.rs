//! The detail lane: one entity's stored detail URL on the core ledger's bounded lane, its
//! admission (window, block, reserve, the class shares and borrowing), the request with its
//! redirect hops, and the outcome (applied, terminal on 404/410, or the retry ladder).

use headroom_core::clock::{Clock, Timestamp};
use headroom_core::lanes::{CoreLanes, DetailUsage};
use headroom_core::route;
use headroom_core::telemetry;
use headroom_http::{ApiError, ApiRequest, ApiResponse};
use headroom_store::feed_state::{
    BatchEnvelope, BatchStatus, Claimed, CoreLedger, EntityKind, Lane, RequestKind, WindowStatus,
};
use serde_json::Value;

use super::{EnrichReport, Enricher, Step, backoff, class_of, other, validate_item};
use crate::feed::poll::PollError;
use crate::feed::{new_run_id, shape};

/// One claimed, sent detail request: the member, its lease token, the correlation id, and
/// when it started.
struct Sent {
    kind: EntityKind,
    member: Claimed,
    token: String,
    correlation: String,
    started: Timestamp,
}

impl Enricher {
    /// Sends one detail request of `kind`, when a member is claimable and the lane admits it.
    pub(super) async fn detail_one(
        &self,
        kind: EntityKind,
        report: &mut EnrichReport,
    ) -> Result<Step, PollError> {
        let state = &self.poller.state;
        let now = self.poller.clock.now();
        if !state.has_claimable(kind, Lane::Detail, now).await? {
            return Ok(Step::Empty);
        }
        let mut ledger = match self.detail_admission(kind, now).await? {
            Ok(ledger) => ledger,
            Err(step) => return Ok(step),
        };
        let token = new_run_id();
        let claimed = state
            .claim(
                kind,
                Lane::Detail,
                1,
                now,
                &token,
                now + self.settings.lease,
            )
            .await?;
        let Some(member) = claimed.into_iter().next() else {
            return Ok(Step::Empty);
        };
        let Some(url) = member.detail_url.clone() else {
            state
                .mark_terminal(kind, member.github_id, &token, "no_detail_url", now)
                .await?;
            report.terminal += 1;
            return Ok(Step::Empty);
        };
        // The URL came with the data: only a path of this entity kind's shape is sent with
        // the token (issue 20, defect 3).
        let url = match shape::detail_url(kind, &url, self.poller.client.policy().base()) {
            Ok(url) => url.to_string(),
            Err(refusal) => {
                tracing::warn!(
                    event = telemetry::ENRICHMENT_DETAIL_URL_REFUSED,
                    entity_type = kind.as_str(),
                    github_id = member.github_id,
                    reason = refusal.as_str()
                );
                state
                    .mark_terminal(kind, member.github_id, &token, refusal.as_str(), now)
                    .await?;
                report.terminal += 1;
                return Ok(Step::Empty);
            }
        };
        ledger.enrichment_used += 1;
        match kind {
            EntityKind::Actor => ledger.actor_share_used += 1,
            EntityKind::Repository => ledger.repository_share_used += 1,
        }
        state.save_core_ledger(&ledger, now).await?;
        let request = ApiRequest::get(url)
            .credential(self.poller.credential.as_ref())
            .follow_redirects()
            .route(route::ENRICH_DETAIL);
        let started = now;
        let result = self.poller.client.send(request).await;
        let now = self.poller.clock.now();
        let sent = Sent {
            kind,
            member,
            token,
            correlation: new_run_id(),
            started,
        };
        if !matches!(result, Err(ApiError::RateLimited { .. })) {
            report.requests += 1;
            report.detail_requests += 1;
        }
        match result {
            Ok(response) => {
                self.detail_answered(&sent, &mut ledger, &response, now, report)
                    .await?;
            }
            Err(ApiError::Gone { status }) => self.detail_gone(&sent, status, now, report).await?,
            Err(ApiError::RateLimited { until, reason, .. }) => {
                let reason = reason.to_string();
                // Not sent (or refused for quota): give the debit back only if nothing went
                // out is unknowable here, so it stays spent, as the reference's ledger does.
                if ledger.global_blocked_until.is_none_or(|b| until > b) {
                    ledger.global_blocked_until = Some(until);
                }
                state.save_core_ledger(&ledger, now).await?;
                state.release(kind, &sent.token, Lane::Detail, now).await?;
                self.record_detail(&sent, BatchStatus::Deferred, None, None, Some(&reason), now)
                    .await?;
                return Ok(Step::Deferred("rate_limited".into(), Some(until)));
            }
            Err(e) => self.detail_errored(&sent, &e, now, report).await?,
        }
        Ok(Step::Sent)
    }

    /// The core ledger when the detail lane may spend from it now, else the deferral.
    async fn detail_admission(
        &self,
        kind: EntityKind,
        now: Timestamp,
    ) -> Result<Result<CoreLedger, Step>, PollError> {
        let state = &self.poller.state;
        let (host, subject) = self.keys().await?;
        let Some(ledger) = state.core_ledger(&host, &subject).await? else {
            return Ok(Err(Step::Deferred(
                "core_window_uninitialized".into(),
                None,
            )));
        };
        if let Some(b) = ledger.global_blocked_until.filter(|b| *b > now) {
            return Ok(Err(Step::Deferred("globally_blocked".into(), Some(b))));
        }
        if ledger.window_status == WindowStatus::Uninitialized
            || ledger.reset_at.is_none_or(|r| r <= now)
        {
            // The first poll of each window bootstraps it; until then the lane waits.
            return Ok(Err(Step::Deferred(
                "core_window_uninitialized".into(),
                None,
            )));
        }
        if ledger.remaining.is_some_and(|r| r <= ledger.reserve) {
            return Ok(Err(Step::Deferred(
                "reserve_reached".into(),
                ledger.reset_at,
            )));
        }
        let lanes = detail_lanes(&ledger, self.poller.settings.lanes.actor_share);
        let usage = DetailUsage {
            actor: ledger.actor_share_used,
            repository: ledger.repository_share_used,
        };
        let other_claimable = state.has_claimable(other(kind), Lane::Detail, now).await?;
        if !lanes.detail_admits(class_of(kind), usage, other_claimable) {
            tracing::info!(
                event = telemetry::BUDGET_SHARE_EXHAUSTED,
                entity_type = kind.as_str()
            );
            return Ok(Err(Step::Deferred(
                "detail_allowance".into(),
                ledger.reset_at,
            )));
        }
        Ok(Ok(ledger))
    }

    /// An answer: the hops debited, the ledger converged, the item judged and recorded, and
    /// the entity applied or sent down the retry ladder.
    async fn detail_answered(
        &self,
        sent: &Sent,
        ledger: &mut CoreLedger,
        response: &ApiResponse,
        now: Timestamp,
        report: &mut EnrichReport,
    ) -> Result<(), PollError> {
        let state = &self.poller.state;
        let (kind, member) = (sent.kind, &sent.member);
        // Each followed hop was its own request, debited on its own.
        if response.hops > 0 {
            ledger.enrichment_used += u64::from(response.hops);
            report.requests += u64::from(response.hops);
        }
        crate::feed::poll::reconcile_core(ledger, &response.signal, now);
        state.save_core_ledger(ledger, now).await?;
        let item: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
        let verdict = validate_item(kind, member, &item, false);
        let batch_id = self
            .record_detail(
                sent,
                BatchStatus::Succeeded,
                Some(u64::from(verdict.is_ok())),
                Some(response.status.as_u16()),
                None,
                now,
            )
            .await?;
        let outcome = verdict.as_ref().map_or_else(|r| *r, |_| "valid");
        state
            .record_observation(
                kind,
                member.github_id,
                "detail",
                outcome,
                Some(batch_id),
                &item,
                now,
            )
            .await?;
        match verdict {
            Ok(enriched) => {
                if state
                    .apply(kind, member.github_id, &sent.token, &enriched, now)
                    .await?
                {
                    report.applied += 1;
                    tracing::info!(
                        event = telemetry::ENRICHMENT_DETAIL_COMPLETED,
                        entity_type = kind.as_str(),
                        github_id = member.github_id
                    );
                }
            }
            Err(reason) => {
                self.detail_failed(kind, member, &sent.token, reason, report)
                    .await?;
            }
        }
        Ok(())
    }

    /// A 404 or 410: terminal for this entity only.
    async fn detail_gone(
        &self,
        sent: &Sent,
        status: u16,
        now: Timestamp,
        report: &mut EnrichReport,
    ) -> Result<(), PollError> {
        let (kind, member) = (sent.kind, &sent.member);
        let reason = if status == 410 {
            "entity_gone_410"
        } else {
            "entity_gone_404"
        };
        self.record_detail(
            sent,
            BatchStatus::Failed,
            None,
            Some(status),
            Some(reason),
            now,
        )
        .await?;
        if self
            .poller
            .state
            .mark_terminal(kind, member.github_id, &sent.token, reason, now)
            .await?
        {
            report.terminal += 1;
            tracing::warn!(
                event = telemetry::ENRICHMENT_DETAIL_TERMINAL,
                entity_type = kind.as_str(),
                github_id = member.github_id,
                detail_attempts = member.detail_attempts + 1,
                reason
            );
        }
        Ok(())
    }

    /// Any other failure: recorded, then the retry ladder.
    async fn detail_errored(
        &self,
        sent: &Sent,
        error: &ApiError,
        now: Timestamp,
        report: &mut EnrichReport,
    ) -> Result<(), PollError> {
        let message = error.to_string();
        self.record_detail(sent, BatchStatus::Failed, None, None, Some(&message), now)
            .await?;
        tracing::warn!(event = telemetry::GITHUB_REQUEST, request_class = "detail",
            entity_type = sent.kind.as_str(), github_id = sent.member.github_id, error = %message);
        let reason = if matches!(error, ApiError::Refused(_)) {
            "url_refused"
        } else {
            "detail_request_failed"
        };
        self.detail_failed(sent.kind, &sent.member, &sent.token, reason, report)
            .await
    }

    /// The request's batch row (one member; `valid` given when an answer was judged).
    async fn record_detail(
        &self,
        sent: &Sent,
        status: BatchStatus,
        valid: Option<u64>,
        http_status: Option<u16>,
        error: Option<&str>,
        now: Timestamp,
    ) -> Result<i64, PollError> {
        Ok(self
            .poller
            .state
            .record_batch(&BatchEnvelope {
                correlation_id: &sent.correlation,
                request_kind: RequestKind::Detail,
                kind: sent.kind,
                status,
                requested: 1,
                returned: valid.map(|_| 1),
                valid,
                incomplete_results: None,
                http_status,
                error,
                started_at: sent.started,
                finished_at: now,
            })
            .await?)
    }

    async fn detail_failed(
        &self,
        kind: EntityKind,
        member: &Claimed,
        token: &str,
        reason: &str,
        report: &mut EnrichReport,
    ) -> Result<(), PollError> {
        let state = &self.poller.state;
        let now = self.poller.clock.now();
        let attempts = member.detail_attempts + 1;
        if attempts >= self.settings.max_detail_attempts {
            if state
                .mark_terminal(
                    kind,
                    member.github_id,
                    token,
                    "detail_attempts_exhausted",
                    now,
                )
                .await?
            {
                report.terminal += 1;
                tracing::warn!(
                    event = telemetry::ENRICHMENT_DETAIL_TERMINAL,
                    entity_type = kind.as_str(),
                    github_id = member.github_id,
                    detail_attempts = attempts,
                    reason = "detail_attempts_exhausted",
                    last_error = reason
                );
            }
        } else {
            let at = now + backoff(&self.settings, member.detail_attempts);
            if state
                .schedule_retry(kind, member.github_id, token, Lane::Detail, at, reason, now)
                .await?
            {
                report.retries += 1;
                tracing::info!(event = telemetry::ENRICHMENT_DETAIL_RETRY_SCHEDULED,
                    entity_type = kind.as_str(), github_id = member.github_id,
                    detail_attempts = attempts, next_retry_at = %at, reason);
            }
        }
        Ok(())
    }
}

fn detail_lanes(ledger: &CoreLedger, actor_share: f64) -> CoreLanes {
    let allowance = ledger.enrichment_allowance;
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let actor = ((allowance as f64) * actor_share.clamp(0.0, 1.0)).floor() as u64;
    let actor = actor.min(allowance);
    CoreLanes {
        limit: ledger.limit.unwrap_or(0),
        poll_allowance: ledger.poll_allowance,
        detail_allowance: allowance,
        detail_clamped: false,
        reserve: ledger.reserve,
        actor_guarantee: actor,
        repository_guarantee: allowance - actor,
        unspent: 0,
    }
}
