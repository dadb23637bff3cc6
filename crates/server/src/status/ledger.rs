//! The `ledger` and `search_ledger` blocks: the hourly core ledger with its lanes'
//! allowances and shares, and the per-minute search ledger.

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_store::feed_state::{CoreLedger, SearchLedger};
use serde::Serialize;

use super::StatusSettings;

/// A used/allowance pair.
#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
pub struct Allowance {
    /// Spent this window.
    pub used: Option<u64>,
    /// The allowance in force.
    pub allowance: Option<u64>,
    /// allowance − used, floored at 0.
    pub available: Option<u64>,
}

/// A detail fairness share.
#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
pub struct Share {
    /// Spent this window.
    pub used: Option<u64>,
    /// The guarantee.
    pub guarantee: Option<u64>,
    /// guarantee − used, floored at 0: a floor, not a ceiling (a class may borrow).
    pub available: Option<u64>,
}

/// The core ledger.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct LedgerBlock {
    /// Whether the row exists ("no ledger yet" is not "remaining 0").
    pub present: bool,
    /// API host.
    pub host: String,
    /// Quota subject (null when the credential's owner is not known yet).
    pub subject: Option<String>,
    /// `uninitialized`, `active` or `globally_blocked`.
    pub window_status: Option<String>,
    /// Whether `reset_at` is still ahead.
    pub window_current: Option<bool>,
    /// The limit the headers reported.
    pub limit: Option<u64>,
    /// Remaining, per the newest headers.
    pub remaining: Option<u64>,
    /// Never spent.
    pub reserve: Option<u64>,
    /// When the window was initialized.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub window_started_at: Option<Timestamp>,
    /// The window's reset.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub reset_at: Option<Timestamp>,
    /// The global block, if one was ever set.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub global_blocked_until: Option<Timestamp>,
    /// Whether that block holds now.
    pub globally_blocked_now: Option<bool>,
    /// Secondary limits in a row.
    pub consecutive_secondary_limits: Option<u64>,
    /// Requests the headers counted that this application did not make.
    pub co_tenant_usage: Option<u64>,
    /// The poll lane.
    pub poll: Allowance,
    /// The detail-fallback lane.
    pub detail_fallback: Allowance,
    /// Actor detail requests.
    pub actor_requests: Share,
    /// Repository detail requests.
    pub repository_requests: Share,
}

/// The search ledger.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SearchLedgerBlock {
    /// Whether the row exists.
    pub present: bool,
    /// `search`.
    pub resource: &'static str,
    /// The limit the headers reported.
    pub limit: Option<u64>,
    /// Remaining per the headers.
    pub remaining: Option<u64>,
    /// The minute's reset.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub reset_at: Option<Timestamp>,
    /// Whether the stored minute is still open (its reset ahead, or, without headers, a
    /// request within the last 60 s); when not, `used` belongs to a past minute.
    pub window_open: Option<bool>,
    /// Configured ceiling.
    pub request_ceiling: u64,
    /// Configured reserve.
    pub reserve: u64,
    /// ceiling − reserve.
    pub spendable: u64,
    /// Used in the stored minute.
    pub used: Option<u64>,
    /// Actor batches in it.
    pub actor_used: Option<u64>,
    /// Repository batches in it.
    pub repository_used: Option<u64>,
    /// Search-scoped block.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub blocked_until: Option<Timestamp>,
    /// The last search request.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_request_at: Option<Timestamp>,
    /// last_request_at + pacing.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub next_request_earliest_at: Option<Timestamp>,
}

pub(super) fn guarantees(allowance: u64, share: f64) -> (u64, u64) {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let actor = ((allowance as f64) * share.clamp(0.0, 1.0)).floor() as u64;
    let actor = actor.min(allowance);
    (actor, allowance - actor)
}

pub(super) fn ledger_block(
    settings: &StatusSettings,
    l: Option<&CoreLedger>,
    now: Timestamp,
) -> LedgerBlock {
    let share = settings.scheduler.actor_enrichment_share;
    let pair = |used: u64, allowance: u64| Allowance {
        used: Some(used),
        allowance: Some(allowance),
        available: Some(allowance.saturating_sub(used)),
    };
    let none = Allowance {
        used: None,
        allowance: None,
        available: None,
    };
    let no_share = Share {
        used: None,
        guarantee: None,
        available: None,
    };
    let (actor_g, repo_g) = l.map_or((0, 0), |l| guarantees(l.enrichment_allowance, share));
    LedgerBlock {
        present: l.is_some(),
        host: settings.host.clone(),
        subject: settings.subject.clone(),
        window_status: l.map(|l| l.window_status.as_str().to_owned()),
        window_current: l.map(|l| l.reset_at.is_some_and(|r| r > now)),
        limit: l.and_then(|l| l.limit),
        remaining: l.and_then(|l| l.remaining),
        reserve: l.map(|l| l.reserve),
        window_started_at: l.and_then(|l| l.window_started_at),
        reset_at: l.and_then(|l| l.reset_at),
        global_blocked_until: l.and_then(|l| l.global_blocked_until),
        globally_blocked_now: l.map(|l| l.global_blocked_until.is_some_and(|b| b > now)),
        consecutive_secondary_limits: l.map(|l| l.consecutive_secondary_limits),
        co_tenant_usage: l.map(|l| l.co_tenant_usage),
        poll: l.map_or(none, |l| pair(l.poll_used, l.poll_allowance)),
        detail_fallback: l.map_or(none, |l| pair(l.enrichment_used, l.enrichment_allowance)),
        actor_requests: l.map_or(no_share, |l| Share {
            used: Some(l.actor_share_used),
            guarantee: Some(actor_g),
            available: Some(actor_g.saturating_sub(l.actor_share_used)),
        }),
        repository_requests: l.map_or(no_share, |l| Share {
            used: Some(l.repository_share_used),
            guarantee: Some(repo_g),
            available: Some(repo_g.saturating_sub(l.repository_share_used)),
        }),
    }
}

pub(super) fn search_window_open(l: &SearchLedger, now: Timestamp) -> bool {
    // The enricher's roll rule: by the reset, or after sixty header-less quiet seconds.
    match l.reset_at {
        Some(r) => r > now,
        None => l
            .last_request_at
            .is_some_and(|t| t + SignedDuration::from_secs(60) > now),
    }
}

pub(super) fn search_block(
    settings: &StatusSettings,
    l: Option<&SearchLedger>,
    now: Timestamp,
) -> SearchLedgerBlock {
    let s = &settings.scheduler;
    let pacing = SignedDuration::from_secs(s.search_pacing_seconds);
    SearchLedgerBlock {
        present: l.is_some(),
        resource: "search",
        limit: l.and_then(|l| l.limit),
        remaining: l.and_then(|l| l.remaining),
        reset_at: l.and_then(|l| l.reset_at),
        window_open: l.map(|l| search_window_open(l, now)),
        request_ceiling: s.search_request_ceiling,
        reserve: s.search_safety_reserve,
        spendable: s.search_spendable,
        used: l.map(|l| l.used),
        actor_used: l.map(|l| l.actor_used),
        repository_used: l.map(|l| l.repository_used),
        blocked_until: l.and_then(|l| l.blocked_until),
        last_request_at: l.and_then(|l| l.last_request_at),
        next_request_earliest_at: l.and_then(|l| l.last_request_at).map(|t| t + pacing),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn guarantees_always_split_the_whole_lane(allowance in 0u64..100_000, share in 0.0f64..=1.0) {
            let (actor, repository) = guarantees(allowance, share);
            proptest::prop_assert_eq!(actor + repository, allowance);
        }
    }

    #[test]
    fn guarantees_add_up_to_the_allowance() {
        assert_eq!(guarantees(40, 0.5), (20, 20));
        assert_eq!(guarantees(41, 0.5), (20, 21));
        assert_eq!(guarantees(28, 1.0), (28, 0));
        assert_eq!(guarantees(28, 0.0), (0, 28));
    }
}
