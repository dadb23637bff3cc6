//! When a poll is due: the five independent components of a source's schedule (the cadence,
//! GitHub's `X-Poll-Interval` floor, the source's retry backoff, a global block, poll-class
//! exhaustion) and which of them binds.

use headroom_core::clock::Timestamp;
use headroom_store::feed_state::{CoreLedger, EventSource, WindowStatus};
use serde::Serialize;

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
            (l.window_status != WindowStatus::Uninitialized
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
