//! Per-endpoint burst buckets (Jira limits each site × endpoint × method on its own [jr-build]):
//! their local pacing and the reach of the limits met on them.
//!
//! A bucket named `endpoint:METHOD /path/template` ([`ENDPOINT_PREFIX`]) is paced locally at
//! [`super::GovernorConfig::endpoint_rate`], counted in an exact sliding log of its grants
//! ([`PaceLog`]), and a limit met on it holds that endpoint only — never the identity, as
//! GitHub's secondary limits do. Which bucket a Jira 429 closes is decided here too
//! ([`reacting_bucket`]): its `RateLimit-Reason` names a burst or per-issue limit (that
//! endpoint) or a quota (the whole identity).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::limiter::PointsLimit;
use crate::clock::{SignedDuration, Timestamp};
use crate::quota::Bucket;
use crate::signal::{LimitReason, Provider, RateLimitSignal, WaitBounds};

/// How an endpoint's bucket is named: `endpoint:GET /rest/api/3/myself`.
pub const ENDPOINT_PREFIX: &str = "endpoint:";

/// The longest window a per-second rate is spread over by [`PointsLimit::paced_per_second`]:
/// a tenth of a second, so that pacing at Jira's steady rate sends at most a tenth of it at
/// once — well inside a token bucket that holds the steady rate plus a buffer, with room for
/// requests that arrive bunched by network jitter.
pub const PACE_WINDOW: SignedDuration = SignedDuration::from_millis(100);

/// Whether `bucket` is one endpoint's burst bucket.
pub fn is_endpoint(bucket: &Bucket) -> bool {
    bucket.as_str().starts_with(ENDPOINT_PREFIX)
}

impl PointsLimit {
    /// `rate` requests a second, spread over windows of at most [`PACE_WINDOW`]: at most
    /// `max(1, rate / 10)` requests in any window, the window lengthened (rounded up to the
    /// nanosecond) so that the rate never exceeds `rate`. `None` for a rate of 0 (no pacing).
    ///
    /// Why short windows: a token bucket of capacity C refilled at r a second admits every
    /// sequence that never has more than N in a window of N / r seconds when N ≤ C; with
    /// N = r / 10 that holds for any C of at least a tenth of the steady rate.
    pub fn paced_per_second(rate: u32) -> Option<Self> {
        if rate == 0 {
            return None;
        }
        let points = (rate / 10).max(1);
        let nanos = (u64::from(points) * 1_000_000_000).div_ceil(u64::from(rate));
        Some(Self {
            points,
            period: SignedDuration::from_nanos(i64::try_from(nanos).unwrap_or(i64::MAX)),
        })
    }
}

/// The instants of one endpoint's recent grants, oldest first: at most as many as its limit
/// admits in a window, so it stays a handful of entries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PaceLog(VecDeque<Timestamp>);

impl PaceLog {
    /// `None` when one more request fits `limit` at `now`; otherwise the exact instant it will:
    /// when the grant that fills the window leaves it. A grant at `g` counts in every window
    /// `(t - period, t]` with `g > t - period`, so no half-open window of `period` ever holds
    /// more than `limit.points` grants.
    pub fn check(&self, limit: PointsLimit, now: Timestamp) -> Option<Timestamp> {
        let points = usize::try_from(limit.points).unwrap_or(usize::MAX).max(1);
        let live: Vec<Timestamp> = self
            .0
            .iter()
            .copied()
            .filter(|&g| leaves(g, limit) > now)
            .collect();
        if live.len() < points {
            return None;
        }
        // The oldest grant whose leaving brings the count below the limit.
        Some(leaves(live[live.len() - points], limit))
    }

    /// Records a grant at `now`, forgetting what no longer counts.
    pub fn record(&mut self, limit: PointsLimit, now: Timestamp) {
        let points = usize::try_from(limit.points).unwrap_or(usize::MAX).max(1);
        self.0.retain(|&g| leaves(g, limit) > now);
        self.0.push_back(now);
        while self.0.len() > points {
            self.0.pop_front();
        }
    }

    /// The grants that still count at `now`.
    pub fn used(&self, limit: PointsLimit, now: Timestamp) -> usize {
        self.0.iter().filter(|&&g| leaves(g, limit) > now).count()
    }
}

/// When a grant at `granted` stops counting against `limit`.
fn leaves(granted: Timestamp, limit: PointsLimit) -> Timestamp {
    granted.checked_add(limit.period).unwrap_or(Timestamp::MAX)
}

/// The endpoint bucket a limit named by `signal` closes, when it closes one endpoint only:
/// a Jira 429 for a burst, a per-issue write or a reason Atlassian has not documented
/// (all [`LimitReason::Secondary`]) closes the endpoint bucket the request spent (`bucket`
/// or one of `also`). A quota reason, a 429 naming none, or a request that spent no endpoint
/// bucket: `None`, and the limit lands on the request's own bucket, holding the identity.
pub fn reacting_bucket(
    signal: &RateLimitSignal,
    bucket: &Bucket,
    also: &[(Bucket, u32)],
) -> Option<Bucket> {
    let one_endpoint = signal.provider == Some(Provider::Jira)
        && signal.resource.is_none()
        && matches!(
            signal.reason,
            Some(LimitReason::Secondary | LimitReason::Unknown)
        );
    if !one_endpoint {
        return None;
    }
    std::iter::once(bucket)
        .chain(also.iter().map(|(b, _)| b))
        .find(|b| is_endpoint(b))
        .cloned()
}

/// When a Jira limit lets the bucket it landed on go again: a quota waits for the later of
/// `Retry-After` and `X-RateLimit-Reset` (the hour's reset, which a shorter `Retry-After`
/// must not cut short); any other limit for `Retry-After`, else the reset. Never beyond
/// [`WaitBounds::max_wait`]'s default (an hourly quota resets within the hour; a reset
/// further out is garbage). `None` when the answer said neither in the future (the caller
/// escalates).
pub(crate) fn jira_until(signal: &RateLimitSignal, now: Timestamp) -> Option<Timestamp> {
    let at_most = now
        .checked_add(WaitBounds::default().max_wait)
        .unwrap_or(Timestamp::MAX);
    let after = signal
        .retry_after
        .map(|d| now.checked_add(d).unwrap_or(Timestamp::MAX));
    let reset = signal.reset_at.filter(|r| *r > now);
    let until = match signal.reason {
        Some(LimitReason::Primary) => after.max(reset),
        _ => after.or(reset),
    };
    until.map(|u| u.min(at_most))
}
