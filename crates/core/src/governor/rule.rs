//! The grant rule and the reading rule: pure functions over one identity's state.
//!
//! The grant rule, per bucket: `remaining ≥ in_flight_points + cost + reserve`, where cost =
//! max(estimate, last cost observed), `in_flight_points` = in_flight × max(cost, the largest
//! cost granted on a complexity bucket since it last had nothing in flight) — so that a
//! small request never reserves as if the large ones in flight were as small — and `reserve`
//! = cost × ceiling on a request-count or windowed bucket (GitHub's: other processes' requests
//! in flight that this state does not see). A complexity bucket ([`is_complexity`], Linear's
//! points) is a leaky bucket the identity's own grants alone drain: it keeps no reserve, so a
//! run spends it down to what its own work in flight needs, and what it holds is read as
//! refilled since the reading, continuously up to full at its reset ([`refilled`]).
//!
//! A bucket whose answers say what remains but not the limit ([`learned::is_learned`],
//! LaunchDarkly's `global` and route windows) keeps a reserve sized to the bucket and to who
//! else spends it, not to the ceiling: a route may allow fewer requests than the ceiling, and a
//! ceiling's reserve there would never grant. Alone it keeps two requests (what a process
//! joining the account sends before either sees the other) or 5 % of the window where more
//! through the window's first three seconds, and spends them after, one at a time: one
//! process uses every window whole. While others' spend shows in the readings, a ceiling plus
//! twice the largest foreign spend seen between two readings, with at most two in flight.
//! Capped at the learned limit less one, so each window grants at least one. A request to a
//! bucket not read in this window goes only early in the window, where every reserve covers
//! it. Why: [`learned`].
//!
//! Every state backend (in memory, PostgreSQL under a row lock) loads an [`IdentityState`],
//! calls these functions, and stores the result. Nothing here reads a clock or does I/O.

use serde::{Deserialize, Serialize};

use super::endpoint::{self, PaceLog};
use super::learned::{self, Learned};
use super::limiter::PointsWindow;
use super::{BucketSnapshot, GovernorConfig, IdentitySnapshot, WaitReason};
use crate::clock::{SignedDuration, Timestamp};
use crate::quota::{AppLimit, Bucket, QuotaKey, RequestKind, Surface};
use crate::signal::{LimitReason, Provider, RateLimitSignal};

/// What the governor knows about one bucket of one identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketState {
    /// The bucket's name.
    pub bucket: Bucket,
    /// The window's limit, as last read.
    pub limit: Option<u64>,
    /// What remained, as last read.
    pub remaining: Option<u64>,
    /// What had been used, as last read.
    pub used: Option<u64>,
    /// When the window resets.
    pub reset_at: Option<Timestamp>,
    /// When the reading above was taken.
    pub seen_at: Option<Timestamp>,
    /// Granted requests not yet finished.
    pub in_flight: u32,
    /// Callers currently holding a wait ticket for this bucket.
    pub waiting: u32,
    /// The last observed cost of one request (GraphQL points; 1 for REST).
    pub last_cost: u32,
    /// A secondary limit met on this bucket blocks the whole identity until then — or, on an
    /// endpoint's burst bucket ([`endpoint::is_endpoint`]), that endpoint only.
    pub blocked_until: Option<Timestamp>,
    /// Consecutive secondary limits without a success in between.
    pub secondary_strikes: u32,
    /// Answers observed since the last one carrying a quota reading that carried none (no
    /// `x-ratelimit-*` headers, no GraphQL `rateLimit`), refusals for limits not counted: a
    /// secondary 403 may come without headers on github.com too. Absent from state stored
    /// before it existed, hence the default.
    #[serde(default)]
    pub answers_without_reading: u32,
    /// An endpoint bucket's recent grants, paced at [`GovernorConfig::endpoint_rate`]; empty
    /// on every other bucket (and in state stored before it existed).
    #[serde(default, skip_serializing_if = "is_empty_pace")]
    pub pace: PaceLog,
    /// On a complexity bucket, the largest cost granted since it last had nothing in flight:
    /// what each request in flight is held to need (0 elsewhere, and when none is recorded).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub in_flight_peak: u32,
    /// On a bucket whose answers carry no limit ([`learned::is_learned`]), what its readings
    /// taught: the limit, and others' spend (empty elsewhere, and in state stored before it).
    #[serde(default, skip_serializing_if = "Learned::is_empty")]
    pub learned: Learned,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Whether `bucket` is a complexity bucket: points drained by the identity's own requests and
/// refilled continuously up to full at its reset (Linear's `complexity`, [ln-rl]). It keeps
/// no reserve for requests this state does not see.
pub fn is_complexity(bucket: &Bucket) -> bool {
    bucket.as_str() == crate::signal::LINEAR_COMPLEXITY
}

/// What a complexity bucket holds at `now`: the last reading refilled linearly from when it
/// was taken to full at its reset (its `limit`, also once the reset has passed). `None` when
/// the bucket is no complexity bucket or its reading is not complete enough to say.
pub fn refilled(state: &BucketState, now: Timestamp) -> Option<u64> {
    if !is_complexity(&state.bucket) {
        return None;
    }
    let (remaining, reset, limit, seen) = (
        state.remaining?,
        state.reset_at?,
        state.limit?,
        state.seen_at?,
    );
    if now >= reset || remaining >= limit {
        return Some(limit);
    }
    let span = (reset.as_millisecond() - seen.as_millisecond()).max(1);
    let elapsed = (now.as_millisecond() - seen.as_millisecond()).clamp(0, span);
    let gained = u128::from(limit - remaining) * elapsed as u128 / span as u128;
    Some(
        remaining
            .saturating_add(u64::try_from(gained).unwrap_or(u64::MAX))
            .min(limit),
    )
}

/// When a complexity bucket read as [`refilled`] first holds `needed` (its reset when it never
/// will before: what is in flight must finish first).
fn refilled_by(state: &BucketState, needed: u64, now: Timestamp) -> Timestamp {
    let reset = state.reset_at.unwrap_or(now);
    match (state.remaining, state.limit, state.seen_at) {
        (Some(remaining), Some(limit), Some(seen)) if needed <= limit && remaining < limit => {
            let span = u128::try_from(reset.as_millisecond() - seen.as_millisecond())
                .unwrap_or(0)
                .max(1);
            let missing = u128::from(needed.saturating_sub(remaining));
            let ms = (missing * span).div_ceil(u128::from(limit - remaining));
            let at = i64::try_from(ms).unwrap_or(i64::MAX);
            plus(seen, SignedDuration::from_millis(at)).min(reset)
        }
        _ => reset,
    }
}

fn is_empty_pace(pace: &PaceLog) -> bool {
    *pace == PaceLog::default()
}

/// Whether a bucket's answers report its rate limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitReporting {
    /// Nothing answered for this bucket yet.
    #[default]
    Unanswered,
    /// Answers carried readings (`x-ratelimit-*` headers or GraphQL `rateLimit`).
    Reported,
    /// Answers came and none ever carried a reading: the server does not rate-limit this
    /// bucket (GitHub Enterprise Server's default). The bucket stays unknown, granted up to
    /// the identity's in-flight ceiling, and the secondary protections still apply.
    NotReported,
}

impl BucketState {
    /// A bucket nothing is known about yet.
    pub fn new(bucket: Bucket) -> Self {
        Self {
            bucket,
            limit: None,
            remaining: None,
            used: None,
            reset_at: None,
            seen_at: None,
            in_flight: 0,
            waiting: 0,
            last_cost: 1,
            blocked_until: None,
            secondary_strikes: 0,
            answers_without_reading: 0,
            pace: PaceLog::default(),
            in_flight_peak: 0,
            learned: Learned::default(),
        }
    }

    /// Whether this bucket's answers report its rate limit.
    pub fn limit_reporting(&self) -> LimitReporting {
        if self.seen_at.is_some() {
            LimitReporting::Reported
        } else if self.answers_without_reading > 0 {
            LimitReporting::NotReported
        } else {
            LimitReporting::Unanswered
        }
    }

    /// Whether the last reading still describes the current window.
    pub fn is_known(&self, now: Timestamp) -> bool {
        matches!((self.remaining, self.reset_at), (Some(_), Some(reset)) if now < reset)
    }
}

/// What the governor knows about one identity: its buckets, its total in flight and its
/// local points limiters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdentityState {
    /// Requests in flight across every bucket.
    pub in_flight: u32,
    /// Bucket states, in first-seen order (few per identity: a linear scan beats hashing).
    pub buckets: Vec<BucketState>,
    /// REST points per minute.
    pub rest_points: Option<PointsWindow>,
    /// GraphQL points per minute.
    pub graphql_points: Option<PointsWindow>,
    /// Content-creation limits (per minute, per hour).
    pub content: Vec<PointsWindow>,
    /// Application limits' counts, each created when a request first names its limit.
    #[serde(default)]
    pub app: Vec<(AppLimit, PointsWindow)>,
}

impl IdentityState {
    /// A fresh identity with the limiters `config` asks for.
    pub fn new(config: &GovernorConfig) -> Self {
        Self {
            in_flight: 0,
            buckets: Vec::new(),
            rest_points: config.rest_points.map(PointsWindow::new),
            graphql_points: config.graphql_points.map(PointsWindow::new),
            content: config
                .content_creation
                .iter()
                .copied()
                .map(PointsWindow::new)
                .collect(),
            app: Vec::new(),
        }
    }

    /// The window counting `limit` under `config`'s rate, created when first asked for;
    /// `None` when the configuration does not limit it.
    fn app_window(
        &mut self,
        config: &GovernorConfig,
        limit: AppLimit,
    ) -> Option<&mut PointsWindow> {
        let rate = config.app_limits.iter().find(|a| a.limit == limit)?.rate;
        let i = match self.app.iter().position(|(l, _)| *l == limit) {
            Some(i) => i,
            None => {
                self.app.push((limit, PointsWindow::new(rate)));
                self.app.len() - 1
            }
        };
        Some(&mut self.app[i].1)
    }

    /// The index of `bucket`, if it has been seen.
    pub fn find(&self, bucket: &Bucket) -> Option<usize> {
        self.buckets.iter().position(|b| b.bucket == *bucket)
    }

    /// The index of `bucket`, creating its state when first seen.
    pub fn find_or_insert(&mut self, bucket: &Bucket) -> usize {
        match self.find(bucket) {
            Some(i) => i,
            None => {
                self.buckets.push(BucketState::new(bucket.clone()));
                self.buckets.len() - 1
            }
        }
    }
}

/// The verdict of the grant rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Send it; `cost` is what the grant reserved against.
    Grant {
        /// max(estimate, last observed cost).
        cost: u32,
    },
    /// Do not send before `until`.
    Wait {
        /// The earliest instant trying again makes sense.
        until: Timestamp,
        /// Why, in terms a person can read.
        reason: WaitReason,
    },
}

/// Points one request spends against GitHub's secondary points limits.
pub fn secondary_points(config: &GovernorConfig, kind: RequestKind) -> u32 {
    if kind.mutation {
        config.mutation_points
    } else {
        config.read_points
    }
}

fn plus(t: Timestamp, d: SignedDuration) -> Timestamp {
    t.checked_add(d).unwrap_or(Timestamp::MAX)
}

/// Decides whether a request may be sent now, changing no state but what a grant implies
/// (points windows evicted, a complexity bucket's [`BucketState::in_flight_peak`]).
///
/// `bucket` is `None` when the identity has never seen that bucket (unknown state).
pub fn evaluate(
    config: &GovernorConfig,
    identity: &mut IdentityState,
    bucket: Option<usize>,
    bucket_name: &Bucket,
    estimated_cost: u32,
    kind: RequestKind,
    now: Timestamp,
) -> Decision {
    let state = bucket.map(|i| &identity.buckets[i]);
    let cost = estimated_cost.max(state.map_or(1, |s| s.last_cost)).max(1);

    // A secondary limit holds the whole identity, whichever bucket met it: GitHub counts its
    // concurrency across REST and GraphQL together and asks to wait before trying again, and a
    // request to another bucket meanwhile meets the same 403 (and may lengthen the block).
    // An endpoint's burst bucket is the exception: a limit met there holds that endpoint only
    // (Jira's burst limits are per endpoint and method [jr-build]).
    let own_block = state.filter(|s| endpoint::is_endpoint(&s.bucket));
    let blocking = identity
        .buckets
        .iter()
        .filter(|b| !endpoint::is_endpoint(&b.bucket))
        .chain(own_block)
        .filter(|b| b.blocked_until.is_some_and(|u| u > now))
        .max_by_key(|b| b.blocked_until);
    if let Some(blocked) = blocking {
        return Decision::Wait {
            until: blocked.blocked_until.unwrap_or(now),
            reason: WaitReason::SecondaryBlock {
                bucket: blocked.bucket.clone(),
                strikes: blocked.secondary_strikes,
            },
        };
    }

    if identity.in_flight >= config.ceiling {
        return Decision::Wait {
            until: plus(now, config.busy_retry),
            reason: WaitReason::InFlightCeiling {
                in_flight: identity.in_flight,
                ceiling: config.ceiling,
            },
        };
    }

    // Others spending any of the account's learned buckets may spend this one too.
    let shared = learned::shared(&identity.buckets);
    let anchor = learned::anchor(&identity.buckets);
    if let Some(wait) = bucket_wait(config, state, bucket_name, cost, (shared, anchor), now) {
        return wait;
    }

    let points = secondary_points(config, kind);
    let window = match kind.surface {
        Surface::Rest => identity.rest_points.as_mut(),
        Surface::GraphQl => identity.graphql_points.as_mut(),
    };
    if let Some(window) = window
        && let Some(until) = window.check(points, now)
    {
        return Decision::Wait {
            until,
            reason: WaitReason::LocalPoints {
                surface: kind.surface,
                limit: window.limit(),
            },
        };
    }
    if let Some(wait) = pace_wait(config, identity, bucket, kind, now) {
        return wait;
    }
    if kind.creates_content {
        for window in &mut identity.content {
            if let Some(until) = window.check(1, now) {
                return Decision::Wait {
                    until,
                    reason: WaitReason::ContentCreation {
                        limit: window.limit(),
                    },
                };
            }
        }
    }
    if let Some(name) = kind.app_limit
        && let Some(window) = identity.app_window(config, name)
        && let Some(until) = window.check(1, now)
    {
        return Decision::Wait {
            until,
            reason: WaitReason::ApplicationLimit {
                name,
                limit: window.limit(),
            },
        };
    }
    // A complexity bucket holds every request in flight to the largest cost granted since it
    // last had none: a small request is never granted as if the large ones were as small.
    if let Some(b) = bucket.and_then(|i| identity.buckets.get_mut(i))
        && is_complexity(&b.bucket)
    {
        b.in_flight_peak = if b.in_flight == 0 {
            cost
        } else {
            b.in_flight_peak.max(cost)
        };
    }
    Decision::Grant { cost }
}

/// The wait the bucket's own reading imposes on a request of `cost`, if any: what remains
/// against what the requests in flight and this one need, and, outside a complexity bucket,
/// the ceiling's reserve.
fn bucket_wait(
    config: &GovernorConfig,
    state: Option<&BucketState>,
    bucket_name: &Bucket,
    cost: u32,
    (shared, anchor): (bool, Option<Timestamp>),
    now: Timestamp,
) -> Option<Decision> {
    // A complexity bucket keeps no reserve, so nothing covers guesses in the dark: before its
    // first reading it sends one request at a time, and that answer tells the rest.
    if let Some(s) = state.filter(|s| is_complexity(&s.bucket))
        && s.seen_at.is_none()
        && s.in_flight > 0
    {
        return Some(Decision::Wait {
            until: plus(now, config.busy_retry),
            reason: WaitReason::InFlightCeiling {
                in_flight: s.in_flight,
                ceiling: 1,
            },
        });
    }
    // A bucket without a limit header: the same, and in the dark its learned limit stands in
    // for what remains (never more granted at a new window than one ever allowed).
    if learned::is_learned(bucket_name)
        && let Some(until) = learned::blind_wait(config, state, anchor, now)
    {
        return Some(Decision::Wait {
            until,
            reason: WaitReason::WindowStart {
                bucket: bucket_name.clone(),
            },
        });
    }
    let learned_bucket = state.filter(|s| learned::is_learned(&s.bucket));
    if let Some(s) = learned_bucket
        && let Some(cap) = learned::in_flight_cap(config, s, shared, now)
        && s.in_flight >= cap
    {
        return Some(Decision::Wait {
            until: plus(now, config.busy_retry),
            reason: WaitReason::InFlightCeiling {
                in_flight: s.in_flight,
                ceiling: cap,
            },
        });
    }
    let complexity = state.and_then(|s| refilled(s, now).map(|r| (s, r)));
    let learned = learned_bucket.and_then(|s| learned::holds(s, now).map(|r| (s, r)));
    let known = state
        .filter(|s| s.is_known(now))
        .map(|s| (s, s.remaining.unwrap_or(0)));
    if let Some((s, remaining)) = complexity.or(learned).or(known) {
        let in_flight = u64::from(s.in_flight) * u64::from(cost.max(s.in_flight_peak));
        let reserve = if is_complexity(&s.bucket) {
            0
        } else if learned::is_learned(&s.bucket) {
            learned::reserve(config, s, cost, shared, now)
        } else {
            u64::from(cost) * u64::from(config.ceiling)
        };
        let needed = in_flight + u64::from(cost) + reserve;
        if remaining < needed {
            let reset = s.reset_at.unwrap_or(now);
            let mut until = plus(reset, config.margin);
            if learned::is_learned(&s.bucket) {
                // A ten-second window cannot wait out a minute's margin for clock skew: at
                // most LEARNED_MARGIN past its reset, where the window's first request goes
                // alone into the dark and reads the new window. In the dark the reset is gone
                // by: what is in flight must answer first.
                // Alone and held by its reserve only, it spends that at the window's head's end.
                let release = learned::release_at(s, shared, now)
                    .filter(|_| remaining >= in_flight + u64::from(cost));
                until = release
                    .unwrap_or_else(|| plus(reset, config.margin.min(learned::LEARNED_MARGIN)))
                    .max(plus(now, config.busy_retry));
            }
            if complexity.is_some() {
                // More than the bucket can ever hold until what is in flight is answered:
                // soon, as for the in-flight ceiling.
                if s.in_flight > 0 && needed > s.limit.unwrap_or(0).max(remaining) {
                    return Some(Decision::Wait {
                        until: plus(now, config.busy_retry),
                        reason: WaitReason::InFlightCeiling {
                            in_flight: s.in_flight,
                            ceiling: s.in_flight,
                        },
                    });
                }
                // Never in the past: a reset gone by reads as full, not as "now".
                until = plus(refilled_by(s, needed, now), config.margin)
                    .max(plus(now, config.busy_retry));
            }
            return Some(Decision::Wait {
                until,
                reason: WaitReason::Exhausted {
                    bucket: bucket_name.clone(),
                    remaining,
                    needed,
                    reset_at: reset,
                },
            });
        }
    }
    None
}

/// The wait an endpoint bucket's local pacing imposes, if any. It reads as
/// [`WaitReason::LocalPoints`]: a short wait of this process's own pacing, which a caller may
/// sleep through in place.
fn pace_wait(
    config: &GovernorConfig,
    identity: &IdentityState,
    bucket: Option<usize>,
    kind: RequestKind,
    now: Timestamp,
) -> Option<Decision> {
    let limit = config.endpoint_rate?;
    let state = identity.buckets.get(bucket?)?;
    if !endpoint::is_endpoint(&state.bucket) {
        return None;
    }
    let until = state.pace.check(limit, now)?;
    Some(Decision::Wait {
        until,
        reason: WaitReason::LocalPoints {
            surface: kind.surface,
            limit,
        },
    })
}

/// Counts a grant on `bucket` in its endpoint pacing, when it is an endpoint bucket and
/// endpoints are paced.
pub fn record_pace(
    config: &GovernorConfig,
    identity: &mut IdentityState,
    bucket: usize,
    now: Timestamp,
) {
    if let Some(limit) = config.endpoint_rate
        && let Some(state) = identity.buckets.get_mut(bucket)
        && endpoint::is_endpoint(&state.bucket)
    {
        state.pace.record(limit, now);
    }
}

/// Records a grant: one more in flight for the bucket and the identity, points counted.
pub fn commit_grant(
    config: &GovernorConfig,
    identity: &mut IdentityState,
    bucket: usize,
    kind: RequestKind,
    now: Timestamp,
) {
    identity.in_flight += 1;
    identity.buckets[bucket].in_flight += 1;
    record_pace(config, identity, bucket, now);
    charge(config, identity, kind, now);
}

/// Records in the local points windows (and the content-creation windows) one request of
/// `kind` sent at `now`, without an in-flight slot: a grant's share of [`commit_grant`], and
/// the whole of what a request the rule never saw — a credential's first `GET /user`, sent
/// before anyone knew whose quota it spends — must still count.
pub fn charge(
    config: &GovernorConfig,
    identity: &mut IdentityState,
    kind: RequestKind,
    now: Timestamp,
) {
    let points = secondary_points(config, kind);
    let window = match kind.surface {
        Surface::Rest => identity.rest_points.as_mut(),
        Surface::GraphQl => identity.graphql_points.as_mut(),
    };
    if let Some(window) = window {
        window.record(points, now);
    }
    if kind.creates_content {
        for window in &mut identity.content {
            window.record(1, now);
        }
    }
    if let Some(name) = kind.app_limit
        && let Some(window) = identity.app_window(config, name)
    {
        window.record(1, now);
    }
}

/// Releases one in-flight slot of `bucket`. Saturating: a release can never go negative.
pub fn release(identity: &mut IdentityState, bucket: usize) {
    identity.in_flight = identity.in_flight.saturating_sub(1);
    if let Some(b) = identity.buckets.get_mut(bucket) {
        b.in_flight = b.in_flight.saturating_sub(1);
    }
}

/// The escalating wait after `strikes` consecutive secondary limits without `retry-after`:
/// base, 2·base, 4·base … capped.
pub fn secondary_escalation(config: &GovernorConfig, strikes: u32) -> SignedDuration {
    let exp = strikes.saturating_sub(1).min(30);
    let base_ms = config.secondary_base.as_millis();
    let ms = base_ms.saturating_mul(1i128 << exp);
    let capped = ms.min(config.secondary_cap.as_millis());
    SignedDuration::from_millis(i64::try_from(capped).unwrap_or(i64::MAX))
}

/// Whether `(reset, used)` of a reading is at least as new as the state's.
fn is_newer(state: &BucketState, reset: Timestamp, used: Option<u64>, remaining: u64) -> bool {
    match state.reset_at {
        None => true,
        Some(current) if reset > current => true,
        Some(current) if reset < current => false,
        Some(_) => match (used, state.used) {
            (Some(u), Some(cur)) => u >= cur,
            // Without `used`, less remaining is newer within one window.
            _ => state.remaining.is_none_or(|cur| remaining <= cur),
        },
    }
}

/// Applies what one response said to the bucket it names. The newest reading wins by
/// (reset, used); an older one is ignored, so state never moves backwards.
pub fn apply_reading(
    config: &GovernorConfig,
    state: &mut BucketState,
    signal: &RateLimitSignal,
    now: Timestamp,
) {
    if signal.provider == Some(Provider::Jira) && signal.reason.is_some_and(|r| r.is_retryable()) {
        apply_jira_limit(config, state, signal, now);
        return;
    }
    let prior = (state.reset_at, state.remaining);
    if let (Some(remaining), Some(reset)) = (signal.remaining, signal.reset_at) {
        let used = signal
            .used
            .or_else(|| signal.limit.and_then(|l| l.checked_sub(remaining)));
        if is_newer(state, reset, used, remaining) {
            state.remaining = Some(remaining);
            state.reset_at = Some(reset);
            state.used = used;
            state.limit = signal.limit.or(state.limit);
            state.seen_at = Some(now);
        }
    } else if signal.remaining == Some(0) && state.is_known(now) {
        // A refusal that says "nothing left" without a reset: nothing left in this window.
        state.remaining = Some(0);
        state.seen_at = Some(now);
    }
    if learned::is_learned(&state.bucket) {
        learned::note(state, prior, signal);
    }
    if let Some(cost) = signal.cost {
        state.last_cost = u32::try_from(cost).unwrap_or(u32::MAX).max(1);
    }
    if signal.has_reading() {
        state.answers_without_reading = 0;
    } else if signal.reason.is_none() {
        state.answers_without_reading = state.answers_without_reading.saturating_add(1);
    }
    match signal.reason {
        Some(LimitReason::Secondary | LimitReason::Unknown) => {
            state.secondary_strikes = state.secondary_strikes.saturating_add(1);
            let wait = signal
                .retry_after
                .unwrap_or_else(|| secondary_escalation(config, state.secondary_strikes));
            block(state, plus(now, wait));
        }
        Some(LimitReason::Primary) => {
            if let Some(wait) = signal.retry_after {
                block(state, plus(now, wait));
            } else if signal.reset_at.is_none_or(|r| r <= now) {
                // Exhausted with no usable reset: back off as for a secondary limit rather
                // than hammering a window we cannot see.
                state.secondary_strikes = state.secondary_strikes.saturating_add(1);
                block(
                    state,
                    plus(now, secondary_escalation(config, state.secondary_strikes)),
                );
            }
        }
        None => state.secondary_strikes = 0,
        Some(LimitReason::Permission | LimitReason::Complexity) => {}
    }
}

/// A Jira 429 on the bucket it closes ([`endpoint::reacting_bucket`] chose it): blocked until
/// the instant [`endpoint::jira_until`] names, escalating only when it named none. Its
/// `X-RateLimit-Limit`/`-Remaining` describe the current second of a burst limit [jr-rl], no
/// window to budget by, so they are not kept as a reading.
fn apply_jira_limit(
    config: &GovernorConfig,
    state: &mut BucketState,
    signal: &RateLimitSignal,
    now: Timestamp,
) {
    state.secondary_strikes = state.secondary_strikes.saturating_add(1);
    let until = endpoint::jira_until(signal, now)
        .unwrap_or_else(|| plus(now, secondary_escalation(config, state.secondary_strikes)));
    block(state, until);
}

fn block(state: &mut BucketState, until: Timestamp) {
    if state.blocked_until.is_none_or(|b| b < until) {
        state.blocked_until = Some(until);
    }
}

/// What a status page shows of one identity at `now`. Counting the points windows evicts
/// expired slots, hence `&mut`.
pub fn snapshot(
    config: &GovernorConfig,
    key: &QuotaKey,
    identity: &mut IdentityState,
    now: Timestamp,
) -> IdentitySnapshot {
    let rest_points_used = identity.rest_points.as_mut().map_or(0, |w| w.used(now));
    let graphql_points_used = identity.graphql_points.as_mut().map_or(0, |w| w.used(now));
    IdentitySnapshot {
        key: key.clone(),
        in_flight: identity.in_flight,
        ceiling: config.ceiling,
        buckets: identity
            .buckets
            .iter()
            .map(|b| BucketSnapshot {
                known: b.is_known(now),
                limits: b.limit_reporting(),
                state: b.clone(),
            })
            .collect(),
        rest_points_used,
        graphql_points_used,
    }
}
