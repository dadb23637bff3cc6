//! The `sources` block: each event source's poll schedule, its components side by side and
//! which one binds.

use headroom_core::clock::Timestamp;
use headroom_github::feed::poll::{SOURCE_TYPE, Schedule};
use headroom_store::Result;
use headroom_store::feed_report::FeedReport;
use headroom_store::feed_state::{CoreLedger, EventSource, SourceStatus};
use serde::Serialize;

/// One source's schedule: the five components side by side, and which one binds.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
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
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_polled_at: Option<Timestamp>,
    /// Cadence.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub cadence_due_at: Option<Timestamp>,
    /// GitHub's `X-Poll-Interval` floor.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub poll_floor_until: Option<Timestamp>,
    /// Own retry backoff.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub retry_not_before_at: Option<Timestamp>,
    /// The core ledger's global block.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub global_blocked_until: Option<Timestamp>,
    /// Poll-class exhaustion (derived).
    #[schema(value_type = Option<String>, format = DateTime)]
    pub poll_class_blocked_until: Option<Timestamp>,
    /// The cached answer (never an input).
    #[schema(value_type = Option<String>, format = DateTime)]
    pub next_poll_at: Option<Timestamp>,
    /// Whether a poll may run now (`false` with `binding` null only when the source is out
    /// of service or switched off — then `binding` names that).
    pub due_now: bool,
    /// The constraint holding it, if any.
    pub binding: Option<String>,
    /// Until when that constraint holds (null for the out-of-service ones).
    #[schema(value_type = Option<String>, format = DateTime)]
    pub binding_until: Option<Timestamp>,
}

/// One block per event source, or the never-polled default when no source has a row yet.
pub(super) async fn sources(
    report: &dyn FeedReport,
    core: Option<&CoreLedger>,
    now: Timestamp,
) -> Result<Vec<SourceBlock>> {
    let sources = report
        .event_sources()
        .await?
        .into_iter()
        .map(|source| polled(source, core, now))
        .collect::<Vec<_>>();
    // A source nobody has polled yet has no row; say so rather than print an empty list
    // that reads like "no source configured".
    Ok(if sources.is_empty() {
        vec![never_polled(core, now)]
    } else {
        sources
    })
}

/// A source with a row: its schedule's components and the one that binds.
fn polled(source: EventSource, core: Option<&CoreLedger>, now: Timestamp) -> SourceBlock {
    let schedule = Schedule::of(&source, core, now);
    let held = schedule.binding(now, false);
    let (binding, binding_until) = if source.status == SourceStatus::Failed {
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
        status: source.status.as_str().to_owned(),
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
}

/// The feed's source before its first poll: idle, due unless a global block holds.
fn never_polled(core: Option<&CoreLedger>, now: Timestamp) -> SourceBlock {
    let global_blocked_until = core.and_then(|l| l.global_blocked_until);
    SourceBlock {
        source_type: SOURCE_TYPE.to_owned(),
        present: false,
        enabled: true,
        status: SourceStatus::Idle.as_str().to_owned(),
        consecutive_failures: 0,
        last_error: None,
        last_polled_at: None,
        cadence_due_at: None,
        poll_floor_until: None,
        retry_not_before_at: None,
        global_blocked_until,
        poll_class_blocked_until: None,
        next_poll_at: None,
        due_now: global_blocked_until.is_none_or(|b| b <= now),
        binding: global_blocked_until
            .filter(|b| *b > now)
            .map(|_| "globally_blocked".to_owned()),
        binding_until: global_blocked_until.filter(|b| *b > now),
    }
}
