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
//! - The window's head. LaunchDarkly's windows are fixed and ten seconds long, one reset for
//!   all of an account's buckets, so any reading places `now` in the window ([`phase`]).
//!   The first [`EARLY`] seconds are the head: every state keeps its reserve there. A request
//!   sent blind (to a bucket not read in this window) goes only in the head's first
//!   [`BLIND`] seconds ([`blind_wait`]), where the reserves of the others cover it.
//! - The rule, per learned bucket. Alone (settled, nothing foreign): in the head a reserve of
//!   [`alone`] requests — [`ALONE`] (what a newcomer lands before either sees the other: its
//!   first request and the second that compares), or 5 % of the window where more — and a
//!   quarter of the room above it in flight. Past the head it spends the reserve one request
//!   at a time, reading each answer, so whoever else spends the bucket shows at once; every
//!   other state keeps at least one request back. So a process alone uses every window
//!   whole. The account's `global` window alone keeps one request past the head: a process
//!   joining the account asks who it is before it knows where the window stands.
//! - Shared (others' spend seen): a reserve of the ceiling plus twice the largest step (what
//!   the others may land in flight and during one stale reading), and never more than
//!   [`ALONE`] in flight. A newcomer: [`alone`] plus twice the step, and a quarter of the
//!   room in flight; it never spends its reserve past the head, since two newcomers starting
//!   together cannot yet see each other. Every reserve is capped at the learned limit less
//!   one request (a newcomer's less two where the limit allows, room for the second answer
//!   that compares), so each window grants at least one.
//! - In the dark (the window's reset has passed, nothing read since) a quarter of [`alone`]
//!   of the learned limit may go blind, at least one ([`in_flight_cap`]); before any reading,
//!   one request at a time. Two machines each granting their learned limit in the dark would
//!   together spend twice it, and the first answer reads the window.
//! - What this costs: a process joining the account mid-window sends its first request (who
//!   it is) before it can place the window; the `global` request kept past the head is for
//!   it. A quota-bound run's last window may wait out the head ([`EARLY`]) for its reserve.
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

/// The share of a window every state keeps back through the window's head, where more than
/// [`ALONE`]: 1/20.
pub const ALONE_SHARE: u64 = 20;

/// What a state that believes itself alone keeps back of a bucket of `limit` through the
/// window's head, in requests: [`ALONE`], or 1/[`ALONE_SHARE`] of the window where more. A
/// newcomer keeps as much; a quarter of it may go blind at a window's start.
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

/// LaunchDarkly's window, for the account and for every route: ten seconds [ld-api]. The
/// windows are taken as fixed and back to back, one reset for all of an account's buckets
/// (LaunchDarkly sends one `X-Ratelimit-Reset`), so any reading places `now` in the window.
pub const WINDOW: SignedDuration = SignedDuration::from_secs(10);

/// The head of each window: a state that believes itself alone keeps its reserve through it
/// and spends it after ([`late`]), and a request sent blind (to a bucket not read in this
/// window) goes only early in it ([`BLIND`], [`blind_wait`]). Three seconds leave room for a
/// blind request's round trip and for clocks a little apart, and cost a quota-bound run at
/// most that much of its last window.
pub const EARLY: SignedDuration = SignedDuration::from_secs(3);

/// How far into the window a blind request may still be sent: a second before [`EARLY`]
/// ends, so that it reaches LaunchDarkly before anyone spends a reserve.
pub const BLIND: SignedDuration = SignedDuration::from_secs(2);

/// The latest reset any learned bucket of the account read: what places `now` in the window
/// when a bucket has no reading of its own.
pub fn anchor(buckets: &[BucketState]) -> Option<Timestamp> {
    buckets
        .iter()
        .filter(|b| is_learned(&b.bucket))
        .filter_map(|b| b.reset_at)
        .max()
}

/// How far into its window `now` is, from a reset `anchor` (windows fixed and [`WINDOW`]
/// long); `None` without one.
pub fn phase(anchor: Option<Timestamp>, now: Timestamp) -> Option<SignedDuration> {
    let window = WINDOW.as_millis();
    let since = i128::from(now.as_millisecond()) - i128::from(anchor?.as_millisecond());
    let ms = i64::try_from(since.rem_euclid(window)).unwrap_or(0);
    Some(SignedDuration::from_millis(ms))
}

/// Whether a bucket that read its current window is past the window's [`EARLY`] head.
pub fn late(state: &BucketState, now: Timestamp) -> bool {
    let left = |reset: Timestamp| reset.as_millisecond() - now.as_millisecond();
    state.is_known(now)
        && state
            .reset_at
            .is_some_and(|r| i128::from(left(r)) < (WINDOW - EARLY).as_millis())
}

/// Whether a request to this learned bucket goes blind: nothing read of its current window —
/// never read at all (nor answered without a reading), or in the dark past its reset.
fn blind(state: Option<&BucketState>, now: Timestamp) -> bool {
    state.is_none_or(|s| {
        if s.seen_at.is_none() {
            s.answers_without_reading == 0
        } else {
            !s.is_known(now)
        }
    })
}

/// When a blind request to a learned bucket may go, if not now: at the next window's head,
/// where every state that believes itself alone still keeps its reserve. Past the head such a
/// state may have spent its whole window, and a blind request would meet a refusal. A state
/// that never read the account (no [`anchor`]) cannot tell where the window stands: its first
/// request goes at once.
pub fn blind_wait(
    config: &GovernorConfig,
    state: Option<&BucketState>,
    anchor: Option<Timestamp>,
    now: Timestamp,
) -> Option<Timestamp> {
    if !blind(state, now) {
        return None;
    }
    let phase = phase(anchor, now)?;
    if phase < BLIND {
        return None;
    }
    let next = now.checked_add(WINDOW - phase).ok()?;
    next.checked_add(config.margin.min(LEARNED_MARGIN)).ok()
}

/// Whether `state` believes it spends its bucket alone: settled, and no one else's spend seen
/// on any learned bucket of the account.
fn alone_now(state: &BucketState, shared: bool) -> bool {
    state.learned.settled() && !shared && !state.learned.foreign_seen()
}

/// When a state alone, held back by its reserve alone, may spend the reserve: the end of the
/// window's [`EARLY`] head. `None` when the reserve is not what holds it, or the head is past.
pub fn release_at(state: &BucketState, shared: bool, now: Timestamp) -> Option<Timestamp> {
    if !alone_now(state, shared) || !state.is_known(now) || late(state, now) {
        return None;
    }
    state.reset_at?.checked_sub(WINDOW - EARLY).ok()
}

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
/// tell; [`alone`] otherwise through the window's head, nothing after it ([`late`]); never
/// more than the learned limit less one request.
pub fn reserve(
    config: &GovernorConfig,
    state: &BucketState,
    cost: u32,
    shared: bool,
    now: Timestamp,
) -> u64 {
    let l = &state.learned;
    let cost = u64::from(cost);
    let ceiling = u64::from(config.ceiling) * cost;
    let limit = l.limit;
    if !l.settled() {
        // Leave room for a second request where the limit allows (two newcomers at the cap
        // then spend two each): the second answer in a window is what lets a state tell
        // others' spend from a lower limit.
        let keep = if limit >= 4 * cost { 2 * cost } else { cost };
        let want = alone(limit) * cost + 2 * l.step.max(l.step_before);
        return want.min(limit.saturating_sub(keep));
    }
    let want = if !alone_now(state, shared) {
        ceiling + 2 * l.step.max(l.step_before)
    } else if late(state, now) {
        // The account's window keeps one request past the head: a process joining the
        // account asks who it is before it knows where the window stands, and that request
        // spends the account's window whatever its route.
        if state.bucket.as_str() == LD_GLOBAL {
            cost
        } else {
            0
        }
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

/// How many requests a learned bucket may have in flight now, if fewer than the ceiling.
/// - Before any reading (unless answers came without one: the route is not limited): one.
/// - In the dark after a reset: a quarter of [`alone`] of the learned limit, at least one.
///   Blind requests go only at a window's start, where every state keeps at least [`alone`]
///   back, and two machines each granting their learned limit blind would spend twice it.
/// - Shared: [`ALONE`], what a state wrongly believing itself alone still covers.
/// - Alone or a newcomer: a quarter of the room over the reserve (alone: at least
///   [`alone`]). A quarter leaves the rest of the room to another process's stale reading.
///   Alone past the window's head, one at a time once the next request would spend the
///   reserve: each answer is read before the next goes.
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
    let ceiling = u64::from(config.ceiling.max(1));
    // A quarter of the room over the reserve, between `least` and the ceiling.
    let quarter = |least: u64| {
        let room = state
            .remaining
            .unwrap_or(0)
            .saturating_sub(reserve(config, state, 1, shared, now));
        let cap = (room / 4).clamp(least, ceiling.max(least));
        Some(u32::try_from(cap).unwrap_or(1))
    };
    if unread {
        Some(1)
    } else if dark {
        let blind = (alone(l.limit) / 4).clamp(1, ceiling);
        Some(u32::try_from(blind).unwrap_or(1))
    } else if newcomer {
        quarter(1)
    } else if l.limit > 0 && (shared || l.foreign_seen()) {
        Some(ALONE)
    } else if l.limit > 0 {
        // Past the head, the reserve goes one request at a time, each answer read before the
        // next: whoever else spends it shows at once, and others keep at least one back.
        let in_reserve =
            state.remaining.unwrap_or(0) < u64::from(state.in_flight) + 1 + alone(l.limit);
        if late(state, now) && in_reserve {
            Some(1)
        } else {
            quarter(alone(l.limit))
        }
    } else {
        None
    }
}
