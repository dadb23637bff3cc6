//! The `enrichment` block: each class's backlog by stage, what is claimable in which lane,
//! when enrichment can next claim work and the gate holding each lane.

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_core::lanes::{CoreLanes, DetailUsage, EntityClass};
use headroom_store::Result;
use headroom_store::feed_report::{EntityBacklog, FeedReport};
use headroom_store::feed_state::{
    CoreLedger, EnrichmentStage, EntityKind, Lane, SearchLedger, WindowStatus,
};
use serde::Serialize;
use serde::ser::SerializeMap;

use super::ledger::{guarantees, search_window_open};
use super::{StatusSettings, age};

/// The classes in the order the document lists them.
const KINDS: [EntityKind; 2] = [EntityKind::Actor, EntityKind::Repository];

/// One resting stage.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct StageBlock {
    /// Rows resting there.
    pub count: u64,
    /// The oldest one's `created_at`.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub oldest_created_at: Option<Timestamp>,
    /// Its age in seconds.
    pub oldest_age_seconds: Option<i64>,
}

/// The seven stages as a map in pipeline order.
#[derive(Debug, Clone)]
pub struct Stages(pub Vec<(EnrichmentStage, StageBlock)>);

impl Serialize for Stages {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k.as_str(), v)?;
        }
        map.end()
    }
}

/// Whether each lane of a class has a row claimable now.
#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
pub struct LaneClaimable {
    /// Search batches.
    pub batch: bool,
    /// Detail fallbacks.
    pub detail: bool,
}

/// One entity class.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
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
    #[schema(value_type = Option<String>, format = DateTime)]
    pub oldest_pending_at: Option<Timestamp>,
    /// Its age.
    pub oldest_pending_age_seconds: Option<i64>,
    /// All seven resting stages.
    #[schema(value_type = Object)]
    pub stages: Stages,
    /// Rows claimable now per lane (rows only; ledgers are judged in `claimable_now`).
    pub rows_claimable: LaneClaimable,
}

/// The enrichment block.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
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
    #[schema(value_type = Option<String>, format = DateTime)]
    pub next_enrichment_at: Option<Timestamp>,
    /// Which gate holds each lane now (null when it is open or has nothing to do).
    pub gates: Gates,
}

/// The gate of each lane.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Gates {
    /// Search batches.
    pub batch: Option<String>,
    /// Detail fallbacks.
    pub detail: Option<String>,
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
    if l.window_status == WindowStatus::Uninitialized || l.reset_at.is_none_or(|r| r <= now) {
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

/// When enrichment can next claim work, folded lane by lane across both classes.
#[derive(Default)]
struct Readiness {
    claimable_now: bool,
    /// The earliest instant a held or empty lane opens, among those whose instant is known.
    next_at: Option<Timestamp>,
    /// Some lane waits on a gate whose end is not known.
    unknown_wait: bool,
    /// The reason of each detail lane held by its gate while rows wait for it.
    detail_gates: Vec<&'static str>,
}

impl Readiness {
    /// One lane whose rows are ready at `ready` (now when `rows_now`), behind `gate`.
    fn fold(
        &mut self,
        rows_now: bool,
        ready: Timestamp,
        gate: Option<(&'static str, Option<Timestamp>)>,
    ) {
        match gate {
            None if rows_now => self.claimable_now = true,
            None => self.next_at = earliest(self.next_at, Some(ready)),
            Some((_, Some(until))) => self.next_at = earliest(self.next_at, Some(until.max(ready))),
            Some((_, None)) => self.unknown_wait = true,
        }
    }

    /// Now when something is claimable; otherwise the earliest known opening, unless only
    /// unknown waits remain.
    fn next_enrichment_at(&self, now: Timestamp) -> Option<Timestamp> {
        if self.claimable_now {
            Some(now)
        } else if self.next_at.is_none() && self.unknown_wait {
            None
        } else {
            self.next_at
        }
    }
}

/// Each class's batch lane (rows ready now or later, then the search gate) and detail lane
/// (rows, then its allowance gate).
async fn readiness(
    report: &dyn FeedReport,
    settings: &StatusSettings,
    core: Option<&CoreLedger>,
    claimable: [(bool, bool); 2],
    search_gate_now: Option<(&'static str, Option<Timestamp>)>,
    now: Timestamp,
) -> Result<Readiness> {
    let mut readiness = Readiness::default();
    for (i, kind) in KINDS.iter().enumerate() {
        let (batch_rows, detail_rows) = claimable[i];
        let other_detail = claimable[1 - i].1;
        let batch_ready = if batch_rows {
            Some(now)
        } else {
            report.next_claimable_at(*kind, Lane::Batch, now).await?
        };
        if let Some(ready) = batch_ready {
            readiness.fold(batch_rows, ready, search_gate_now);
        }
        let detail_ready = if detail_rows {
            Some(now)
        } else {
            report.next_claimable_at(*kind, Lane::Detail, now).await?
        };
        let gate = detail_gate(settings, core, *kind, other_detail, now);
        if let Some(ready) = detail_ready {
            readiness.fold(detail_rows, ready, gate);
            if let Some((reason, _)) = gate {
                readiness.detail_gates.push(reason);
            }
        }
    }
    Ok(readiness)
}

/// The enrichment block: each class's backlog, what is claimable, and the lanes' gates.
pub(super) async fn enrichment(
    report: &dyn FeedReport,
    settings: &StatusSettings,
    core: Option<&CoreLedger>,
    search: Option<&SearchLedger>,
    now: Timestamp,
) -> Result<EnrichmentBlock> {
    let mut claimable = [(false, false); 2];
    for (i, kind) in KINDS.iter().enumerate() {
        claimable[i] = (
            report.claimable(*kind, Lane::Batch, now).await?,
            report.claimable(*kind, Lane::Detail, now).await?,
        );
    }
    let search_gate_now = search_gate(settings, search, now);
    let readiness = readiness(report, settings, core, claimable, search_gate_now, now).await?;
    let any_batch_rows = claimable.iter().any(|c| c.0);
    let actors_backlog = report.entity_backlog(EntityKind::Actor).await?;
    let repositories_backlog = report.entity_backlog(EntityKind::Repository).await?;
    Ok(EnrichmentBlock {
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
        claimable_now: readiness.claimable_now,
        next_enrichment_at: readiness.next_enrichment_at(now),
        gates: Gates {
            batch: search_gate_now
                .filter(|_| any_batch_rows)
                .map(|(r, _)| r.to_owned()),
            detail: readiness.detail_gates.first().map(|r| (*r).to_owned()),
        },
    })
}
