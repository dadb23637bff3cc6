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

use headroom_core::clock::{Clock, SignedDuration, Timestamp};
use headroom_core::lanes::{BatchRotation, EntityClass, SearchLane, refresh_slots};
use headroom_core::telemetry;
use headroom_store::feed_state::{EntityKind, Lane, RefreshWindow};
use serde::Serialize;
use tracing::Instrument as _;

use super::new_run_id;
use super::poll::{PollError, Poller};

pub use self::contract::{search_envelope, validate_item};

mod contract;
mod detail;
mod search;

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
                            tracing::info!(event = telemetry::ENRICHMENT_BATCH_DEFERRED,
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
                            tracing::info!(event = telemetry::ENRICHMENT_DETAIL_DEFERRED,
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
            event = telemetry::ENRICHMENT_CYCLE_COMPLETED,
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
}
