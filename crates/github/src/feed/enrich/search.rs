//! The Search lane: the per-minute search ledger, a batch's admission (block, reserve,
//! pacing), its claim (backlog plus the refreshes the composition rule lets through), the
//! request, and the recording of each member's outcome (applied by matching id, or admitted
//! to the detail lane).

use headroom_core::clock::{Clock, SignedDuration, Timestamp};
use headroom_core::lanes::refresh_slots;
use headroom_core::quota::Bucket;
use headroom_core::route;
use headroom_core::signal::RateLimitSignal;
use headroom_core::telemetry;
use headroom_http::{ApiError, ApiRequest};
use headroom_store::feed_state::{
    BatchEnvelope, BatchStatus, Claimed, EntityKind, Lane, RequestKind, SearchLedger,
};
use serde_json::Value;

use super::{EnrichReport, Enricher, Step, backoff, other, search_envelope, validate_item};
use crate::feed::new_run_id;
use crate::feed::poll::PollError;

/// A claimed Search batch: the lease token, the members, and which of them are refreshes.
struct Batch {
    kind: EntityKind,
    token: String,
    members: Vec<Claimed>,
    refresh_ids: Vec<i64>,
    backlog: u32,
}

/// One sent batch's bookkeeping: its correlation id, member count and start instant.
struct Sent {
    correlation: String,
    requested: u64,
    started: Timestamp,
}

impl Enricher {
    async fn search_ledger(&self, now: Timestamp) -> Result<SearchLedger, PollError> {
        let (host, subject) = self.keys().await?;
        let lane = self.settings.search;
        let mut l = self
            .poller
            .state
            .search_ledger(&host, &subject)
            .await?
            .unwrap_or(SearchLedger {
                host,
                subject,
                limit: None,
                remaining: None,
                request_ceiling: lane.ceiling,
                reserve: lane.reserve,
                used: 0,
                actor_used: 0,
                repository_used: 0,
                blocked_until: None,
                last_request_at: None,
                reset_at: None,
            });
        l.request_ceiling = lane.ceiling;
        l.reserve = lane.reserve;
        // A minute rolls by its reset, or after sixty header-less seconds of inactivity.
        let rolled = match l.reset_at {
            Some(r) => r <= now,
            None => l
                .last_request_at
                .is_none_or(|t| t + SignedDuration::from_secs(60) <= now),
        };
        if rolled && (l.used > 0 || l.reset_at.is_some()) {
            tracing::info!(
                event = telemetry::SEARCH_BUDGET_WINDOW_ROLLED,
                used = l.used
            );
            l.used = 0;
            l.actor_used = 0;
            l.repository_used = 0;
            l.reset_at = None;
            l.remaining = None;
        }
        Ok(l)
    }

    /// Why the search ledger holds the next batch back, if it does: a block, the reserve, or
    /// pacing.
    fn search_deferral(&self, ledger: &SearchLedger, now: Timestamp) -> Option<Step> {
        if let Some(b) = ledger.blocked_until.filter(|b| *b > now) {
            return Some(Step::Deferred("search_blocked".into(), Some(b)));
        }
        let spendable = ledger.request_ceiling.saturating_sub(ledger.reserve);
        if ledger.used >= spendable || ledger.remaining.is_some_and(|r| r <= ledger.reserve) {
            tracing::info!(
                event = telemetry::SEARCH_BUDGET_RESERVE_REACHED,
                used = ledger.used
            );
            let until = ledger.reset_at.or(ledger
                .last_request_at
                .map(|t| t + SignedDuration::from_secs(60)));
            return Some(Step::Deferred("search_reserve".into(), until));
        }
        if let Some(last) = ledger.last_request_at {
            let next = last + self.settings.search.pacing;
            if next > now {
                tracing::debug!(event = telemetry::SEARCH_BUDGET_PACING_DEFERRED, next_request_earliest_at = %next);
                return Some(Step::Deferred("search_pacing".into(), Some(next)));
            }
        }
        None
    }

    /// Sends one Search batch of `kind`, when one is ready and the ledger admits it.
    pub(super) async fn search_batch(
        &self,
        kind: EntityKind,
        report: &mut EnrichReport,
    ) -> Result<Step, PollError> {
        let now = self.poller.clock.now();
        if !self.batch_ready(kind, now).await? {
            return Ok(Step::Empty);
        }
        let mut ledger = self.search_ledger(now).await?;
        if let Some(step) = self.search_deferral(&ledger, now) {
            return Ok(step);
        }
        let Some(batch) = self.claim_batch(kind, now).await? else {
            return Ok(Step::Empty);
        };
        if !batch.refresh_ids.is_empty() {
            tracing::info!(
                event = telemetry::ENRICHMENT_REFRESH_CLAIMED,
                entity_type = kind.as_str(),
                backlog_count = batch.backlog,
                refresh_count = batch.refresh_ids.len()
            );
        }
        ledger.used += 1;
        match kind {
            EntityKind::Actor => ledger.actor_used += 1,
            EntityKind::Repository => ledger.repository_used += 1,
        }
        ledger.last_request_at = Some(now);
        self.poller.state.save_search_ledger(&ledger, now).await?;
        self.send_batch(&batch, &mut ledger, now, report).await
    }

    /// Claims up to a batch of backlog members, topped up with refreshes.
    async fn claim_batch(
        &self,
        kind: EntityKind,
        now: Timestamp,
    ) -> Result<Option<Batch>, PollError> {
        let state = &self.poller.state;
        let token = new_run_id();
        let size = self.settings.batch_size.clamp(1, 10);
        let mut members = state
            .claim(
                kind,
                Lane::Batch,
                size,
                now,
                &token,
                now + self.settings.lease,
            )
            .await?;
        let backlog = u32::try_from(members.len()).unwrap_or(size);
        let other_backlog = state.has_claimable(other(kind), Lane::Batch, now).await?;
        let spare = refresh_slots(size, backlog, other_backlog);
        let refresh = state
            .claim_refresh(
                kind,
                spare,
                self.refresh_window(kind, now),
                &token,
                now + self.settings.lease,
            )
            .await?;
        let refresh_ids: Vec<i64> = refresh.iter().map(|m| m.github_id).collect();
        members.extend(refresh);
        if members.is_empty() {
            return Ok(None);
        }
        Ok(Some(Batch {
            kind,
            token,
            members,
            refresh_ids,
            backlog,
        }))
    }

    /// Sends the batch's query and records what came back.
    async fn send_batch(
        &self,
        batch: &Batch,
        ledger: &mut SearchLedger,
        started: Timestamp,
        report: &mut EnrichReport,
    ) -> Result<Step, PollError> {
        let state = &self.poller.state;
        let kind = batch.kind;
        let request = self.search_request(batch);
        let result = self.poller.client.send(request).await;
        let now = self.poller.clock.now();
        // A governor wait sent nothing; everything else reached the provider.
        if !matches!(result, Err(ApiError::RateLimited { .. })) {
            report.requests += 1;
            report.search_batches += 1;
        }
        let sent = Sent {
            correlation: new_run_id(),
            requested: batch.members.len() as u64,
            started,
        };
        let response = match result {
            Ok(r) => r,
            Err(ApiError::RateLimited { until, reason, .. }) => {
                let reason = reason.to_string();
                return self
                    .batch_blocked(batch, ledger, &sent, (until, &reason), now)
                    .await;
            }
            Err(e) => {
                self.fail_batch(batch, &e.to_string(), &sent, report)
                    .await?;
                return Ok(Step::Sent);
            }
        };
        if converge_search(ledger, &response.signal) {
            state.save_search_ledger(ledger, now).await?;
        }
        let body: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
        let Some((items, incomplete)) = search_envelope(&body) else {
            self.fail_batch(batch, "malformed search envelope", &sent, report)
                .await?;
            return Ok(Step::Sent);
        };
        let batch_id = state
            .record_batch(&BatchEnvelope {
                correlation_id: &sent.correlation,
                request_kind: RequestKind::Search,
                kind,
                status: BatchStatus::Succeeded,
                requested: sent.requested,
                returned: Some(items.len() as u64),
                valid: None,
                incomplete_results: incomplete,
                http_status: Some(response.status.as_u16()),
                error: None,
                started_at: sent.started,
                finished_at: now,
            })
            .await?;
        let valid = self
            .record_members(batch, items, batch_id, now, report)
            .await?;
        tracing::info!(
            event = telemetry::ENRICHMENT_BATCH_COMPLETED,
            status = "completed",
            entity_type = kind.as_str(),
            batch_id,
            requested_count = sent.requested,
            refresh_count = batch.refresh_ids.len(),
            returned_count = items.len(),
            valid_count = valid,
            fallback_count = sent.requested - valid,
            incomplete_results = incomplete
        );
        Ok(Step::Sent)
    }

    /// The exact `user:`/`repo:` qualifiers of the batch's members.
    fn search_request(&self, batch: &Batch) -> ApiRequest {
        let (path, qualifier) = match batch.kind {
            EntityKind::Actor => ("/search/users", "user"),
            EntityKind::Repository => ("/search/repositories", "repo"),
        };
        let q = batch
            .members
            .iter()
            .map(|m| format!("{qualifier}:{}", m.name))
            .collect::<Vec<_>>()
            .join(" ");
        let encoded: String = url::form_urlencoded::byte_serialize(q.as_bytes()).collect();
        let url = format!("{path}?q={encoded}&per_page=100");
        ApiRequest::get(url)
            .credential(self.poller.credential.as_ref())
            .bucket(Bucket::search())
            .route(route::ENRICH_SEARCH)
    }

    /// Nothing was sent, or search said stop: search's own block, core untouched.
    async fn batch_blocked(
        &self,
        batch: &Batch,
        ledger: &mut SearchLedger,
        sent: &Sent,
        (until, reason): (Timestamp, &str),
        now: Timestamp,
    ) -> Result<Step, PollError> {
        let state = &self.poller.state;
        if ledger.blocked_until.is_none_or(|b| until > b) {
            ledger.blocked_until = Some(until);
        }
        state.save_search_ledger(ledger, now).await?;
        state
            .release(batch.kind, &batch.token, Lane::Batch, now)
            .await?;
        state
            .record_batch(&BatchEnvelope {
                correlation_id: &sent.correlation,
                request_kind: RequestKind::Search,
                kind: batch.kind,
                status: BatchStatus::Deferred,
                requested: sent.requested,
                returned: None,
                valid: None,
                incomplete_results: None,
                http_status: None,
                error: Some(reason),
                started_at: sent.started,
                finished_at: now,
            })
            .await?;
        tracing::info!(event = telemetry::SEARCH_BUDGET_BLOCKED, blocked_until = %until, reason = %reason);
        Ok(Step::Deferred("search_blocked".into(), Some(until)))
    }

    /// Each member's outcome: applied when its item matches by id and meets the contract,
    /// otherwise admitted to the detail lane. Returns how many applied.
    async fn record_members(
        &self,
        batch: &Batch,
        items: &[Value],
        batch_id: i64,
        now: Timestamp,
        report: &mut EnrichReport,
    ) -> Result<u64, PollError> {
        let state = &self.poller.state;
        let kind = batch.kind;
        let mut valid = 0u64;
        for member in &batch.members {
            let item = items
                .iter()
                .find(|i| i.get("id").and_then(Value::as_i64) == Some(member.github_id));
            let verdict = match item {
                None => Err("missing_search_result"),
                Some(item) => validate_item(kind, member, item, true),
            };
            if let Some(item) = item {
                let outcome = verdict.as_ref().map_or_else(|r| *r, |_| "valid");
                state
                    .record_observation(
                        kind,
                        member.github_id,
                        "search",
                        outcome,
                        Some(batch_id),
                        item,
                        now,
                    )
                    .await?;
            }
            match verdict {
                Ok(enriched) => {
                    if state
                        .apply(kind, member.github_id, &batch.token, &enriched, now)
                        .await?
                    {
                        valid += 1;
                        if batch.refresh_ids.contains(&member.github_id) {
                            report.refreshed += 1;
                        } else {
                            report.applied += 1;
                        }
                    }
                }
                Err(reason) => {
                    if state
                        .admit_detail(kind, member.github_id, &batch.token, reason, now)
                        .await?
                    {
                        report.fallbacks_admitted += 1;
                        tracing::info!(
                            event = telemetry::ENRICHMENT_FALLBACK_ADMITTED,
                            entity_type = kind.as_str(),
                            github_id = member.github_id,
                            reason,
                            enrichment_batch_id = batch_id
                        );
                    }
                }
            }
        }
        Ok(valid)
    }

    async fn fail_batch(
        &self,
        batch: &Batch,
        error: &str,
        sent: &Sent,
        report: &mut EnrichReport,
    ) -> Result<(), PollError> {
        let state = &self.poller.state;
        let kind = batch.kind;
        let now = self.poller.clock.now();
        state
            .record_batch(&BatchEnvelope {
                correlation_id: &sent.correlation,
                request_kind: RequestKind::Search,
                kind,
                status: BatchStatus::Failed,
                requested: batch.members.len() as u64,
                returned: None,
                valid: None,
                incomplete_results: None,
                http_status: None,
                error: Some(error),
                started_at: sent.started,
                finished_at: now,
            })
            .await?;
        for m in &batch.members {
            let at = now + backoff(&self.settings, m.batch_attempts);
            if state
                .schedule_retry(kind, m.github_id, &batch.token, Lane::Batch, at, error, now)
                .await?
            {
                report.retries += 1;
            }
        }
        tracing::warn!(event = telemetry::ENRICHMENT_BATCH_FAILED, entity_type = kind.as_str(),
            reason = %error, requested_count = batch.members.len());
        Ok(())
    }
}

/// Converges the ledger to a search answer's headers; whether anything was search's to take.
fn converge_search(ledger: &mut SearchLedger, signal: &RateLimitSignal) -> bool {
    if signal
        .resource
        .as_ref()
        .is_some_and(|b| b.as_str() != "search")
    {
        return false;
    }
    if let Some(reset) = signal.reset_at {
        ledger.reset_at = Some(reset);
    }
    if signal.remaining.is_some() {
        ledger.remaining = signal.remaining;
    }
    if signal.limit.is_some() {
        ledger.limit = signal.limit;
    }
    true
}
