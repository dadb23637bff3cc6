//! Buckets whose answers say what remains but never the limit — LaunchDarkly's account-wide
//! `global` window and one per route, 10 seconds each ([`is_learned`]). This module owns what
//! the governor learns of them from the readings alone (the limit, and whether someone else
//! spends them) and the reserve the grant rule keeps on them ([`reserve`]).
//!
//! - The limit: within one window (one reset), the lowest reading `m` came from the request
//!   served last among this state's answered ones, so `m + answers` (own answers read in that
//!   window) never exceeds the limit. The largest such sum any window showed is the learned
//!   limit; it never shrinks.
//! - Foreign spend: `learned − m − answers − own unanswered` is spend this state did not make
//!   (a lower bound: own requests served but not yet answered are at most those in flight).
//!   Its largest rise between two readings is `step`; so is the fall between two lowest
//!   readings beyond own requests that may have been served between them (which needs no
//!   limit: a process that never reads a window's start learns too low a one).
//!   It is remembered through the next window read twice that shows none.
//! - Who may be spending it: other machines on the account see this one only through the
//!   headers, and a process that never reads a window's start learns too low a limit to see
//!   others there. So a state is a newcomer until it read [`SETTLED`] windows and two answers
//!   in one; it is `shared` while foreign spend shows on any learned bucket of the account.
//! - The rule, per learned bucket. Alone (settled, nothing foreign): a reserve of [`alone`]
//!   requests — [`ALONE`], what a newcomer lands before either sees the other (its first
//!   request and the second that compares), or 5 % of the window where more — and as many in
//!   flight at most, since another process wrongly believing itself alone covers no more: a
//!   single process uses 95 % of each window (all but two of a small one). Shared: a reserve of the ceiling plus twice the largest step (what the others
//!   may land in flight and during one stale reading), and never more than [`ALONE`] in
//!   flight, since a process that wrongly believes itself alone covers only that much. A
//!   newcomer: the same reserve, one request at a time. Every reserve is capped at the
//!   learned limit less one request (a newcomer's less two where the limit allows, room for
//!   the second answer that compares), so each window grants at least one.
//! - In the dark (the window's reset has passed, nothing read since) and before any reading,
//!   one request at a time ([`in_flight_cap`]), within the learned limit: two machines each
//!   granting their learned limit in the dark would together spend twice it, and the first
//!   answer reads the window. It costs a round trip a window, not quota.
//!
//! The model of `crates/core/tests/governor_launchdarkly/sim.rs` (two machines, seeded
//! latencies and schedules, limits unknown to both, routes below the ceiling) holds this rule
//! to zero requests over a limit, both making progress.

use serde::{Deserialize, Serialize};

use super::GovernorConfig;
use super::rule::BucketState;
use crate::clock::{SignedDuration, Timestamp};
use crate::quota::Bucket;
use crate::signal::{LD_GLOBAL, LD_ROUTE_PREFIX, RateLimitSignal};

/// Windows a state reads before it trusts that no one else spends a bucket whose readings
/// never showed it: the window it joined in, the first whole one and the next.
pub const SETTLED: u32 = 3;

/// The reserve of a state that believes it spends a bucket alone, in requests: what a
/// newcomer sends before either sees the other (its first request and the second that
/// compares), and what any process that knows of others keeps in flight at most.
pub const ALONE: u32 = 2;

/// The share of a window a state that believes itself alone keeps back, and keeps in flight
/// at most, where more than [`ALONE`]: 1/20, so alone it still uses 95 % of each window.
pub const ALONE_SHARE: u64 = 20;

/// What a state that believes itself alone keeps back of a bucket of `limit`, in requests:
/// [`ALONE`], or 1/[`ALONE_SHARE`] of the window where more. It keeps no more than that in
/// flight either: another process believing the same covers no more of its requests.
pub fn alone(limit: u64) -> u64 {
    u64::from(ALONE).max(limit / ALONE_SHARE)
}

/// What the readings of a bucket without a limit header taught (all zero before any).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Learned {
    /// The largest `remaining + own answers` one window showed: a lower bound of its limit.
    #[serde(default)]
    pub limit: u64,
    /// Own answered requests (not refused) read in the current window.
    #[serde(default)]
    pub answers: u32,
    /// Windows this state read, saturating at [`SETTLED`]: until then it cannot tell whether
    /// it spends the bucket alone (its learned limit may still fall short).
    #[serde(default)]
    pub windows: u32,
    /// Whether two answers were ever read in one window: one reading a window cannot tell
    /// others' spend ahead of it from a lower limit.
    #[serde(default)]
    pub compared: bool,
    /// Foreign spend in the current window, as last estimated.
    #[serde(default)]
    pub foreign: u64,
    /// The largest foreign spend seen between two readings in the current window: a rise of
    /// [`Learned::foreign`], or a fall of the lowest reading beyond own requests.
    #[serde(default)]
    pub step: u64,
    /// The same in the windows before, kept through windows read once (which cannot show it).
    #[serde(default)]
    pub step_before: u64,
    /// Own answers read since the window's lowest reading.
    #[serde(default)]
    pub since: u32,
}

impl Learned {
    /// Whether nothing was learned yet (kept out of stored state).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Whether this state read enough to trust its learned limit: [`SETTLED`] windows, two
    /// answers in one of them. Until then it sends one request at a time.
    pub fn settled(&self) -> bool {
        self.windows >= SETTLED && self.compared
    }

    /// Whether spend by others was seen in the current window or is still remembered.
    pub fn foreign_seen(&self) -> bool {
        self.step.max(self.step_before) > 0
    }
}

/// The most a learned bucket waits past its reset, whatever the configured margin: a quarter
/// of a second, 2.5 % of LaunchDarkly's ten-second window (NTP keeps clocks far closer). Its
/// next request goes alone into the dark, so a clock that runs ahead costs one early request,
/// not a storm.
pub const LEARNED_MARGIN: SignedDuration = SignedDuration::from_millis(250);

/// Whether `bucket` learns its limit from readings (LaunchDarkly's global and route windows).
pub fn is_learned(bucket: &Bucket) -> bool {
    let name = bucket.as_str();
    name == LD_GLOBAL || name.starts_with(LD_ROUTE_PREFIX)
}

/// Learns from one answer applied to `state`, after the reading itself was applied; `prior`
/// is the state's window and lowest reading before it. A reading of an older window teaches
/// nothing (its request was served in a window gone by), nor does one with a limit.
pub fn note(
    state: &mut BucketState,
    (prior_reset, prior_low): (Option<Timestamp>, Option<u64>),
    signal: &RateLimitSignal,
) {
    let (Some(reading), Some(reset)) = (signal.remaining, signal.reset_at) else {
        return;
    };
    if state.reset_at != Some(reset) || signal.limit.is_some() {
        return;
    }
    let answered = u32::from(signal.reason.is_none());
    let l = &mut state.learned;
    // Own requests served but not answered yet (at most those in flight, this one excepted)
    // may hide in any gap: only what exceeds them is foreign.
    let unanswered = u64::from(state.in_flight.saturating_sub(1));
    if prior_reset.is_none_or(|p| reset > p) {
        // A window read once cannot show spend after its reading: it clears nothing.
        l.step_before = match prior_reset {
            None => 0,
            Some(_) if l.answers >= 2 => l.step,
            Some(_) => l.step.max(l.step_before),
        };
        l.windows = (l.windows + 1).min(SETTLED);
        l.step = 0;
        l.foreign = 0;
        l.answers = answered;
        l.since = 0;
    } else {
        l.answers = l.answers.saturating_add(answered);
        l.compared |= l.answers >= 2;
        match prior_low {
            // A new lowest reading: what it fell by beyond own requests that may have been
            // served since the last one is someone else's (whatever the learned limit).
            Some(low) if reading < low => {
                let own = u64::from(l.since) + u64::from(answered) + unanswered;
                l.step = l.step.max((low - reading).saturating_sub(own));
                l.since = 0;
            }
            _ => l.since = l.since.saturating_add(answered),
        }
    }
    let low = state.remaining.unwrap_or(reading);
    let own = low.saturating_add(u64::from(l.answers));
    l.limit = l.limit.max(own);
    let foreign = l.limit.saturating_sub(own.saturating_add(unanswered));
    if foreign > l.foreign {
        l.step = l.step.max(foreign - l.foreign);
        l.foreign = foreign;
    }
}

/// Whether others were seen spending any of `buckets` that are learned, in the current or the
/// previous window: the same account's other machines may spend every one of them. A bucket
/// alone cannot always tell: a process that never reads a window's start learns too low a
/// limit there and takes others' spend for its own.
pub fn shared(buckets: &[BucketState]) -> bool {
    buckets
        .iter()
        .any(|b| is_learned(&b.bucket) && b.learned.foreign_seen())
}

/// What the grant rule keeps in reserve on a learned bucket for a request of `cost` (see the
/// module doc): the ceiling's worth of requests in flight elsewhere plus twice the largest
/// foreign step of the bucket while others spend the account (`shared`) or it cannot yet
/// tell, [`alone`] otherwise; never more than the learned limit less one request.
pub fn reserve(config: &GovernorConfig, state: &BucketState, cost: u32, shared: bool) -> u64 {
    let l = &state.learned;
    let cost = u64::from(cost);
    let ceiling = u64::from(config.ceiling) * cost;
    let limit = l.limit;
    if !l.settled() {
        // Leave room for a second request where the limit allows (two newcomers at the cap
        // then spend two each): the second answer in a window is what lets a state tell
        // others' spend from a lower limit.
        let keep = if limit >= 4 * cost { 2 * cost } else { cost };
        return (ceiling + 2 * l.step.max(l.step_before)).min(limit.saturating_sub(keep));
    }
    let want = if shared || l.foreign_seen() {
        ceiling + 2 * l.step.max(l.step_before)
    } else {
        alone(limit) * cost
    };
    want.min(limit.saturating_sub(cost))
}

/// What a learned bucket is taken to hold now, if the rule should judge it: the reading while
/// it describes the current window, else (in the dark) the learned limit. `None` when nothing
/// was learned: before any reading the rule sends one at a time ([`in_flight_cap`]), and a
/// bucket whose answers never carry a reading is not limited.
pub fn holds(state: &BucketState, now: Timestamp) -> Option<u64> {
    if state.is_known(now) {
        state.remaining
    } else if state.learned.limit > 0 {
        Some(state.learned.limit)
    } else {
        None
    }
}

/// How many requests a learned bucket may have in flight now, if fewer than the ceiling: one
/// while nothing describes the current window — before any reading at all (unless answers
/// came without one: the route is not limited), in the dark after a reset, or while a
/// newcomer — [`ALONE`] while others spend the account (`shared`), and [`alone`] otherwise.
/// Two machines each granting their learned limit in the dark would together spend twice it;
/// one request reads the window. And a process that believes itself alone keeps back only
/// [`alone`] (of a limit it may know too low): whoever knows better keeps no more than
/// [`ALONE`] unseen in flight, and it no more than what it keeps back.
///
/// A newcomer whose fresh reading leaves room far above its reserve is the exception: a
/// quarter of that room may be in flight (up to the ceiling). Sent one at a time, a run that
/// fits in a window or two of a roomy limit never settled and crawled at one round trip a
/// request; a quarter leaves the rest of the room to every other newcomer's blind requests.
pub fn in_flight_cap(
    config: &GovernorConfig,
    state: &BucketState,
    shared: bool,
    now: Timestamp,
) -> Option<u32> {
    let l = &state.learned;
    let unread = state.seen_at.is_none() && state.answers_without_reading == 0;
    let dark = state.seen_at.is_some() && !state.is_known(now);
    let newcomer = l.limit > 0 && !l.settled();
    if unread || dark {
        Some(1)
    } else if newcomer {
        let room = state
            .remaining
            .unwrap_or(0)
            .saturating_sub(reserve(config, state, 1, shared));
        let cap = (room / 4).clamp(1, u64::from(config.ceiling.max(1)));
        Some(u32::try_from(cap).unwrap_or(1))
    } else if l.limit > 0 && (shared || l.foreign_seen()) {
        Some(ALONE)
    } else if l.limit > 0 {
        Some(u32::try_from(alone(l.limit)).unwrap_or(u32::MAX))
    } else {
        None
    }
}
