//! Enrichment of the actors and repositories accepted events reference (`headroom enrich`).
//!
//! The normal path is a Search batch of up to ten exact `user:`/`repo:` qualifiers on the
//! per-minute search ledger (ceiling 10, reserve 2, pacing 6 s); results apply only by
//! matching GitHub id. Misses, renames, mismatches and contract-invalid items fall back to the
//! stored detail URL, one request each, on the core ledger's bounded detail lane with the
//! actor/repository shares and borrowing. A 404/410 is terminal for that entity only; other
//! detail failures climb a ladder of three. Every claim is a lease that expires by arithmetic
//! and every projection write is guarded by its token. Running out of budget only defers.
//!
//! Scheduling: Search batches first, the two classes rotating by weight (an empty lane yields
//! its slot; the rotation outlives one cycle so a paced service alternates across cycles), then
//! detail fallbacks. Complete rows past their refresh TTL and recently active ride Search
//! batches only under the composition rule ([`headroom_core::lanes::refresh_slots`]).

use std::sync::{Arc, Mutex, PoisonError};

use headroom_core::Dimension;
use headroom_core::clock::{Clock, SignedDuration, Timestamp};
use headroom_core::lanes::{
    BatchRotation, CoreLanes, DetailUsage, EntityClass, SearchLane, refresh_slots,
};
use headroom_core::quota::Bucket;
use headroom_http::ApiError;
use headroom_http::ApiRequest;
use headroom_store::feed_state::{
    Claimed, CoreLedger, Enriched, EntityKind, Lane, RefreshWindow, SearchLedger,
};
use serde::Serialize;
use serde_json::Value;
use tracing::Instrument as _;

use super::new_run_id;
use super::poll::{PollError, Poller};

/// Enrichment settings (the reference's defaults).
#[derive(Debug, Clone)]
pub struct EnrichSettings {
    /// The search lane.
    pub search: SearchLane,
    /// Qualifiers per search request (at most 10).
    pub batch_size: u32,
    /// Claim lease.
    pub lease: SignedDuration,
    /// Retry backoff base (doubles per attempt).
    pub retry_base: SignedDuration,
    /// Backoff cap.
    pub retry_max: SignedDuration,
    /// The detail ladder.
    pub max_detail_attempts: u64,
    /// ACTOR_ENRICHMENT_WEIGHT: the actors' weight in the batch rotation.
    pub actor_weight: u32,
    /// REPOSITORY_ENRICHMENT_WEIGHT.
    pub repository_weight: u32,
    /// ACTOR_REFRESH_TTL_SECONDS: a complete actor is not re-fetched sooner.
    pub actor_refresh_ttl: SignedDuration,
    /// REPOSITORY_REFRESH_TTL_SECONDS.
    pub repository_refresh_ttl: SignedDuration,
    /// REFRESH_ACTIVE_WITHIN_SECONDS: only entities seen pushing this recently are refreshed.
    pub refresh_active_within: SignedDuration,
}

impl Default for EnrichSettings {
    fn default() -> Self {
        Self {
            search: SearchLane::default(),
            batch_size: 10,
            lease: SignedDuration::from_secs(600),
            retry_base: SignedDuration::from_secs(60),
            retry_max: SignedDuration::from_secs(3600),
            max_detail_attempts: 3,
            actor_weight: 1,
            repository_weight: 1,
            actor_refresh_ttl: SignedDuration::from_secs(86_400),
            repository_refresh_ttl: SignedDuration::from_secs(86_400),
            refresh_active_within: SignedDuration::from_secs(604_800),
        }
    }
}

/// What `headroom enrich` may do.
#[derive(Debug, Clone, Copy, Default)]
pub struct EnrichOptions {
    /// At most this many requests (not entities).
    pub limit: Option<u64>,
    /// Only one lane.
    pub lane: Option<Lane>,
    /// Only one class.
    pub class: Option<EntityKind>,
}

/// What an enrichment cycle did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EnrichReport {
    /// Requests sent (search and detail, redirect hops included).
    pub requests: u64,
    /// Search batches sent.
    pub search_batches: u64,
    /// Detail fallbacks sent.
    pub detail_requests: u64,
    /// Entities applied (contract complete) for the first time.
    pub applied: u64,
    /// Complete entities refreshed after their TTL.
    pub refreshed: u64,
    /// Batch members admitted to the detail lane.
    pub fallbacks_admitted: u64,
    /// Entities gone terminal.
    pub terminal: u64,
    /// Retries scheduled.
    pub retries: u64,
    /// Deferrals: (reason, until).
    pub deferrals: Vec<(String, Option<Timestamp>)>,
}

enum Step {
    Sent,
    Empty,
    Deferred(String, Option<Timestamp>),
}

fn class_of(kind: EntityKind) -> EntityClass {
    match kind {
        EntityKind::Actor => EntityClass::Actor,
        EntityKind::Repository => EntityClass::Repository,
    }
}

fn other(kind: EntityKind) -> EntityKind {
    match kind {
        EntityKind::Actor => EntityKind::Repository,
        EntityKind::Repository => EntityKind::Actor,
    }
}

fn backoff(settings: &EnrichSettings, attempts: u64) -> SignedDuration {
    let exp = i32::try_from(attempts.min(16)).unwrap_or(16);
    settings
        .retry_base
        .checked_mul(2i32.saturating_pow(u32::try_from(exp).unwrap_or(16)))
        .unwrap_or(settings.retry_max)
        .min(settings.retry_max)
}

/// Runs enrichment on a poller's store, client and ledgers.
#[derive(Debug, Clone)]
pub struct Enricher {
    /// The poller (store, state, client, clock, core settings).
    pub poller: Poller,
    /// Enrichment settings.
    pub settings: EnrichSettings,
    // Shared by clones and kept across cycles: a service that sends one paced batch per
    // cycle must still alternate classes.
    rotation: Arc<Mutex<BatchRotation>>,
}

impl Enricher {
    /// An enricher with a fresh batch rotation at the settings' weights.
    pub fn new(poller: Poller, settings: EnrichSettings) -> Self {
        let rotation = BatchRotation::new(settings.actor_weight, settings.repository_weight);
        Self {
            poller,
            settings,
            rotation: Arc::new(Mutex::new(rotation)),
        }
    }

    fn refresh_window(&self, kind: EntityKind, now: Timestamp) -> RefreshWindow {
        let ttl = match kind {
            EntityKind::Actor => self.settings.actor_refresh_ttl,
            EntityKind::Repository => self.settings.repository_refresh_ttl,
        };
        RefreshWindow {
            now,
            stale_before: now - ttl,
            active_since: now - self.settings.refresh_active_within,
        }
    }

    /// Whether a class has a Search batch to send: its own backlog, or refresh candidates the
    /// composition rule lets through (only when neither class has backlog).
    async fn batch_ready(&self, kind: EntityKind, now: Timestamp) -> Result<bool, PollError> {
        let state = &self.poller.state;
        if state.has_claimable(kind, Lane::Batch, now).await? {
            return Ok(true);
        }
        if refresh_slots(
            1,
            0,
            state.has_claimable(other(kind), Lane::Batch, now).await?,
        ) == 0
        {
            return Ok(false);
        }
        Ok(state
            .has_refreshable(kind, self.refresh_window(kind, now))
            .await?)
    }
    async fn keys(&self) -> Result<(String, String), PollError> {
        let key = self
            .poller
            .quota_key()
            .await
            .map_err(|e| PollError::Identity(e.to_string()))?;
        Ok((
            key.host.to_string(),
            headroom_store::subject_label(&key.subject),
        ))
    }

    /// One enrichment cycle: Search batches first (classes rotating by weight, an empty lane
    /// yielding its slot, a search deferral holding both since they share one resource), then
    /// detail lanes, until nothing progresses or the request limit is reached. Every log line
    /// of the cycle carries its run_id.
    pub async fn run(&self, options: EnrichOptions) -> Result<EnrichReport, PollError> {
        let span = tracing::info_span!("enrichment_cycle", run_id = %new_run_id());
        self.cycle(options).instrument(span).await
    }

    async fn cycle(&self, options: EnrichOptions) -> Result<EnrichReport, PollError> {
        let mut report = EnrichReport::default();
        let classes: Vec<EntityKind> = match options.class {
            Some(k) => vec![k],
            None => vec![EntityKind::Actor, EntityKind::Repository],
        };
        let limit = options.limit.unwrap_or(u64::MAX);
        loop {
            let mut progressed = false;
            if options.lane != Some(Lane::Detail) {
                let mut open = classes.clone();
                while report.requests < limit && !open.is_empty() {
                    let now = self.poller.clock.now();
                    let mut ready = [false, false];
                    for kind in &open {
                        ready[usize::from(*kind == EntityKind::Repository)] =
                            self.batch_ready(*kind, now).await?;
                    }
                    open.retain(|k| ready[usize::from(*k == EntityKind::Repository)]);
                    let pick = self
                        .rotation
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .pick(ready[0], ready[1]);
                    let Some(class) = pick else { break };
                    let kind = match class {
                        EntityClass::Actor => EntityKind::Actor,
                        EntityClass::Repository => EntityKind::Repository,
                    };
                    match self.search_batch(kind, &mut report).await? {
                        Step::Sent => progressed = true,
                        Step::Empty => open.retain(|k| *k != kind),
                        Step::Deferred(reason, until) => {
                            tracing::info!(event = "enrichment.batch_deferred",
                                entity_type = kind.as_str(), deferral_reason = %reason);
                            report.deferrals.push((reason, until));
                            break;
                        }
                    }
                }
            }
            if options.lane != Some(Lane::Batch) {
                for kind in &classes {
                    if report.requests >= limit {
                        break;
                    }
                    match self.detail_one(*kind, &mut report).await? {
                        Step::Sent => progressed = true,
                        Step::Empty => {}
                        Step::Deferred(reason, until) => {
                            tracing::info!(event = "enrichment.detail_deferred",
                                entity_type = kind.as_str(), deferral_reason = %reason);
                            report.deferrals.push((reason, until));
                        }
                    }
                }
            }
            if !progressed || report.requests >= limit {
                break;
            }
            report.deferrals.clear();
        }
        tracing::info!(
            event = "enrichment.cycle_completed",
            requests = report.requests,
            search_batches = report.search_batches,
            detail_requests = report.detail_requests,
            applied = report.applied,
            refreshed = report.refreshed,
            fallbacks_admitted = report.fallbacks_admitted,
            terminal = report.terminal,
            retries = report.retries
        );
        Ok(report)
    }

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
            tracing::info!(event = "search_budget.window_rolled", used = l.used);
            l.used = 0;
            l.actor_used = 0;
            l.repository_used = 0;
            l.reset_at = None;
            l.remaining = None;
        }
        Ok(l)
    }

    async fn search_batch(
        &self,
        kind: EntityKind,
        report: &mut EnrichReport,
    ) -> Result<Step, PollError> {
        let state = &self.poller.state;
        let now = self.poller.clock.now();
        if !self.batch_ready(kind, now).await? {
            return Ok(Step::Empty);
        }
        let mut ledger = self.search_ledger(now).await?;
        if let Some(b) = ledger.blocked_until.filter(|b| *b > now) {
            return Ok(Step::Deferred("search_blocked".into(), Some(b)));
        }
        let spendable = ledger.request_ceiling.saturating_sub(ledger.reserve);
        if ledger.used >= spendable || ledger.remaining.is_some_and(|r| r <= ledger.reserve) {
            tracing::info!(event = "search_budget.reserve_reached", used = ledger.used);
            let until = ledger.reset_at.or(ledger
                .last_request_at
                .map(|t| t + SignedDuration::from_secs(60)));
            return Ok(Step::Deferred("search_reserve".into(), until));
        }
        if let Some(last) = ledger.last_request_at {
            let next = last + self.settings.search.pacing;
            if next > now {
                tracing::debug!(event = "search_budget.pacing_deferred", next_request_earliest_at = %next);
                return Ok(Step::Deferred("search_pacing".into(), Some(next)));
            }
        }
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
            return Ok(Step::Empty);
        }
        if !refresh_ids.is_empty() {
            tracing::info!(
                event = "enrichment.refresh_claimed",
                entity_type = kind.as_str(),
                backlog_count = backlog,
                refresh_count = refresh_ids.len()
            );
        }
        ledger.used += 1;
        match kind {
            EntityKind::Actor => ledger.actor_used += 1,
            EntityKind::Repository => ledger.repository_used += 1,
        }
        ledger.last_request_at = Some(now);
        state.save_search_ledger(&ledger, now).await?;

        let (path, qualifier) = match kind {
            EntityKind::Actor => ("/search/users", "user"),
            EntityKind::Repository => ("/search/repositories", "repo"),
        };
        let q = members
            .iter()
            .map(|m| format!("{qualifier}:{}", m.name))
            .collect::<Vec<_>>()
            .join(" ");
        let encoded: String = url::form_urlencoded::byte_serialize(q.as_bytes()).collect();
        let url = format!("{path}?q={encoded}&per_page=100");
        let request = ApiRequest::get(url)
            .credential(self.poller.credential.as_ref())
            .bucket(Bucket::search())
            .route("enrich_search", Dimension::Search);
        let started = now;
        let result = self.poller.client.send(request).await;
        let now = self.poller.clock.now();
        // A governor wait sent nothing; everything else reached the provider.
        if !matches!(result, Err(ApiError::RateLimited { .. })) {
            report.requests += 1;
            report.search_batches += 1;
        }
        let correlation = new_run_id();
        let requested = members.len() as u64;
        let response = match result {
            Ok(r) => r,
            Err(ApiError::RateLimited { until, reason, .. }) => {
                let reason = reason.to_string();
                // Nothing was sent, or search said stop: search's own block, core untouched.
                if ledger.blocked_until.is_none_or(|b| until > b) {
                    ledger.blocked_until = Some(until);
                }
                state.save_search_ledger(&ledger, now).await?;
                state.release(kind, &token, Lane::Batch, now).await?;
                state
                    .record_batch(
                        &correlation,
                        "search",
                        kind,
                        "deferred",
                        requested,
                        None,
                        None,
                        None,
                        None,
                        Some(&reason),
                        started,
                        now,
                    )
                    .await?;
                tracing::info!(event = "search_budget.blocked", blocked_until = %until, reason = %reason);
                return Ok(Step::Deferred("search_blocked".into(), Some(until)));
            }
            Err(e) => {
                self.fail_batch(
                    kind,
                    &token,
                    &members,
                    &e.to_string(),
                    &correlation,
                    started,
                    report,
                )
                .await?;
                return Ok(Step::Sent);
            }
        };
        let signal = &response.signal;
        if signal
            .resource
            .as_ref()
            .is_none_or(|b| b.as_str() == "search")
        {
            if let Some(reset) = signal.reset_at {
                ledger.reset_at = Some(reset);
            }
            if signal.remaining.is_some() {
                ledger.remaining = signal.remaining;
            }
            if signal.limit.is_some() {
                ledger.limit = signal.limit;
            }
            state.save_search_ledger(&ledger, now).await?;
        }
        let body: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
        let Some((items, incomplete)) = search_envelope(&body) else {
            self.fail_batch(
                kind,
                &token,
                &members,
                "malformed search envelope",
                &correlation,
                started,
                report,
            )
            .await?;
            return Ok(Step::Sent);
        };
        let batch_id = state
            .record_batch(
                &correlation,
                "search",
                kind,
                "succeeded",
                requested,
                Some(items.len() as u64),
                None,
                incomplete,
                Some(response.status.as_u16()),
                None,
                started,
                now,
            )
            .await?;
        let mut valid = 0u64;
        for member in &members {
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
                        .apply(kind, member.github_id, &token, &enriched, now)
                        .await?
                    {
                        valid += 1;
                        if refresh_ids.contains(&member.github_id) {
                            report.refreshed += 1;
                        } else {
                            report.applied += 1;
                        }
                    }
                }
                Err(reason) => {
                    if state
                        .admit_detail(kind, member.github_id, &token, reason, now)
                        .await?
                    {
                        report.fallbacks_admitted += 1;
                        tracing::info!(
                            event = "enrichment.fallback_admitted",
                            entity_type = kind.as_str(),
                            github_id = member.github_id,
                            reason,
                            enrichment_batch_id = batch_id
                        );
                    }
                }
            }
        }
        tracing::info!(
            event = "enrichment.batch_completed",
            status = "completed",
            entity_type = kind.as_str(),
            batch_id,
            requested_count = requested,
            refresh_count = refresh_ids.len(),
            returned_count = items.len(),
            valid_count = valid,
            fallback_count = requested - valid,
            incomplete_results = incomplete
        );
        Ok(Step::Sent)
    }

    #[allow(clippy::too_many_arguments)]
    async fn fail_batch(
        &self,
        kind: EntityKind,
        token: &str,
        members: &[Claimed],
        error: &str,
        correlation: &str,
        started: Timestamp,
        report: &mut EnrichReport,
    ) -> Result<(), PollError> {
        let state = &self.poller.state;
        let now = self.poller.clock.now();
        state
            .record_batch(
                correlation,
                "search",
                kind,
                "failed",
                members.len() as u64,
                None,
                None,
                None,
                None,
                Some(error),
                started,
                now,
            )
            .await?;
        for m in members {
            let at = now + backoff(&self.settings, m.batch_attempts);
            if state
                .schedule_retry(kind, m.github_id, token, Lane::Batch, at, error, now)
                .await?
            {
                report.retries += 1;
            }
        }
        tracing::warn!(event = "enrichment.batch_failed", entity_type = kind.as_str(),
            reason = %error, requested_count = members.len());
        Ok(())
    }

    async fn detail_one(
        &self,
        kind: EntityKind,
        report: &mut EnrichReport,
    ) -> Result<Step, PollError> {
        let state = &self.poller.state;
        let now = self.poller.clock.now();
        if !state.has_claimable(kind, Lane::Detail, now).await? {
            return Ok(Step::Empty);
        }
        let (host, subject) = self.keys().await?;
        let Some(mut ledger) = state.core_ledger(&host, &subject).await? else {
            return Ok(Step::Deferred("core_window_uninitialized".into(), None));
        };
        if let Some(b) = ledger.global_blocked_until.filter(|b| *b > now) {
            return Ok(Step::Deferred("globally_blocked".into(), Some(b)));
        }
        if ledger.window_status == "uninitialized" || ledger.reset_at.is_none_or(|r| r <= now) {
            // The first poll of each window bootstraps it; until then the lane waits.
            return Ok(Step::Deferred("core_window_uninitialized".into(), None));
        }
        if ledger.remaining.is_some_and(|r| r <= ledger.reserve) {
            return Ok(Step::Deferred("reserve_reached".into(), ledger.reset_at));
        }
        let lanes = detail_lanes(&ledger, self.poller.settings.lanes.actor_share);
        let usage = DetailUsage {
            actor: ledger.actor_share_used,
            repository: ledger.repository_share_used,
        };
        let other_claimable = state.has_claimable(other(kind), Lane::Detail, now).await?;
        if !lanes.detail_admits(class_of(kind), usage, other_claimable) {
            tracing::info!(
                event = "budget.share_exhausted",
                entity_type = kind.as_str()
            );
            return Ok(Step::Deferred("detail_allowance".into(), ledger.reset_at));
        }
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
        ledger.enrichment_used += 1;
        match kind {
            EntityKind::Actor => ledger.actor_share_used += 1,
            EntityKind::Repository => ledger.repository_share_used += 1,
        }
        state.save_core_ledger(&ledger, now).await?;
        let request = ApiRequest::get(url)
            .credential(self.poller.credential.as_ref())
            .follow_redirects()
            .route("enrich_detail", Dimension::RestCore);
        let started = now;
        let result = self.poller.client.send(request).await;
        let now = self.poller.clock.now();
        let correlation = new_run_id();
        if !matches!(result, Err(ApiError::RateLimited { .. })) {
            report.requests += 1;
            report.detail_requests += 1;
        }
        match result {
            Ok(response) => {
                // Each followed hop was its own request, debited on its own.
                if response.hops > 0 {
                    ledger.enrichment_used += u64::from(response.hops);
                    report.requests += u64::from(response.hops);
                }
                super::poll::reconcile_core(&mut ledger, &response.signal, now);
                state.save_core_ledger(&ledger, now).await?;
                let item: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
                let verdict = validate_item(kind, &member, &item, false);
                let batch_id = state
                    .record_batch(
                        &correlation,
                        "detail",
                        kind,
                        "succeeded",
                        1,
                        Some(1),
                        Some(u64::from(verdict.is_ok())),
                        None,
                        Some(response.status.as_u16()),
                        None,
                        started,
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
                            .apply(kind, member.github_id, &token, &enriched, now)
                            .await?
                        {
                            report.applied += 1;
                            tracing::info!(
                                event = "enrichment.detail_completed",
                                entity_type = kind.as_str(),
                                github_id = member.github_id
                            );
                        }
                    }
                    Err(reason) => {
                        self.detail_failed(kind, &member, &token, reason, report)
                            .await?;
                    }
                }
            }
            Err(ApiError::Gone { status }) => {
                let reason = if status == 410 {
                    "entity_gone_410"
                } else {
                    "entity_gone_404"
                };
                state
                    .record_batch(
                        &correlation,
                        "detail",
                        kind,
                        "failed",
                        1,
                        None,
                        None,
                        None,
                        Some(status),
                        Some(reason),
                        started,
                        now,
                    )
                    .await?;
                if state
                    .mark_terminal(kind, member.github_id, &token, reason, now)
                    .await?
                {
                    report.terminal += 1;
                    tracing::warn!(
                        event = "enrichment.detail_terminal",
                        entity_type = kind.as_str(),
                        github_id = member.github_id,
                        detail_attempts = member.detail_attempts + 1,
                        reason
                    );
                }
            }
            Err(ApiError::RateLimited { until, reason, .. }) => {
                let reason = reason.to_string();
                // Not sent (or refused for quota): give the debit back only if nothing went
                // out is unknowable here, so it stays spent, as the reference's ledger does.
                if ledger.global_blocked_until.is_none_or(|b| until > b) {
                    ledger.global_blocked_until = Some(until);
                }
                state.save_core_ledger(&ledger, now).await?;
                state.release(kind, &token, Lane::Detail, now).await?;
                state
                    .record_batch(
                        &correlation,
                        "detail",
                        kind,
                        "deferred",
                        1,
                        None,
                        None,
                        None,
                        None,
                        Some(&reason),
                        started,
                        now,
                    )
                    .await?;
                return Ok(Step::Deferred("rate_limited".into(), Some(until)));
            }
            Err(e) => {
                let message = e.to_string();
                state
                    .record_batch(
                        &correlation,
                        "detail",
                        kind,
                        "failed",
                        1,
                        None,
                        None,
                        None,
                        None,
                        Some(&message),
                        started,
                        now,
                    )
                    .await?;
                tracing::warn!(event = "github.request", request_class = "detail",
                    entity_type = kind.as_str(), github_id = member.github_id, error = %message);
                let reason = if matches!(e, ApiError::Refused(_)) {
                    "url_refused"
                } else {
                    "detail_request_failed"
                };
                self.detail_failed(kind, &member, &token, reason, report)
                    .await?;
            }
        }
        Ok(Step::Sent)
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
                    event = "enrichment.detail_terminal",
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
                tracing::info!(event = "enrichment.detail_retry_scheduled",
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

/// A Search answer's items and its `incomplete_results`; `None` for a malformed envelope (no
/// `items` array, or a `total_count` that is not a count).
#[doc(hidden)]
pub fn search_envelope(body: &Value) -> Option<(&[Value], Option<bool>)> {
    let items = body.get("items").and_then(Value::as_array)?;
    body.get("total_count").filter(|t| t.is_u64())?;
    let incomplete = body.get("incomplete_results").and_then(Value::as_bool);
    Some((items.as_slice(), incomplete))
}

/// The useful-data contract, on an item whose id matched. `search` items must also carry
/// the name that was asked for (a different name is a rename: detail decides).
#[doc(hidden)]
pub fn validate_item(
    kind: EntityKind,
    member: &Claimed,
    item: &Value,
    search: bool,
) -> Result<Enriched, &'static str> {
    if item.get("id").and_then(Value::as_i64) != Some(member.github_id) {
        return Err("identity_mismatch");
    }
    let str_field = |f: &str| item.get(f).and_then(Value::as_str).map(str::to_owned);
    match kind {
        EntityKind::Actor => {
            let login = str_field("login").ok_or("contract_invalid")?;
            if search && !login.eq_ignore_ascii_case(&member.name) {
                return Err("renamed_actor");
            }
            let account_type = str_field("type").ok_or("contract_invalid")?;
            Ok(Enriched {
                name: login,
                account_type: Some(account_type),
                owner_login: None,
                owner_github_id: None,
                fork: None,
                archived: None,
                default_branch: None,
                github_created_at: None,
                raw: item.clone(),
            })
        }
        EntityKind::Repository => {
            let full_name = str_field("full_name").ok_or("contract_invalid")?;
            if search && !full_name.eq_ignore_ascii_case(&member.name) {
                return Err("renamed_repository");
            }
            let owner = item.get("owner").ok_or("contract_invalid")?;
            let owner_login = owner
                .get("login")
                .and_then(Value::as_str)
                .ok_or("contract_invalid")?;
            let owner_id = owner
                .get("id")
                .and_then(Value::as_i64)
                .ok_or("contract_invalid")?;
            let fork = item
                .get("fork")
                .and_then(Value::as_bool)
                .ok_or("contract_invalid")?;
            let archived = item
                .get("archived")
                .and_then(Value::as_bool)
                .ok_or("contract_invalid")?;
            // Nullable values GitHub returns stay valid nulls; absent keys do not.
            let default_branch = match item.get("default_branch") {
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Null) => None,
                _ => return Err("contract_invalid"),
            };
            let created = match item.get("created_at") {
                Some(Value::String(s)) => Some(s.parse().map_err(|_| "contract_invalid")?),
                Some(Value::Null) => None,
                _ => return Err("contract_invalid"),
            };
            Ok(Enriched {
                name: full_name,
                account_type: None,
                owner_login: Some(owner_login.to_owned()),
                owner_github_id: Some(owner_id),
                fork: Some(fork),
                archived: Some(archived),
                default_branch,
                github_created_at: created,
                raw: item.clone(),
            })
        }
    }
}
