//! Cooldown gating: a rate-limit refusal the origin answered, remembered in the observation
//! store, keeps every other request of the same identity, provider and route family — from
//! any process, with any credential of that identity — from being sent until the refusal's
//! window ends. Pure: the exit door reads the refusals and asks [`blocking`].
//!
//! The match key is the quota identity (its host included, so GitHub Enterprise and
//! github.com never block each other), the provider and the route family; never the
//! credential, so rotating a token never slips past a cooldown. A refusal whose route family
//! could not be attributed gates by its dimension instead.

use crate::clock::{SignedDuration, Timestamp};
use crate::quota::QuotaKey;
use crate::signal::{Dimension, LimitReason, Provider};

/// How long a refusal cools its family down when it said neither a reset nor a retry-after.
pub const DEFAULT_WINDOW: SignedDuration = SignedDuration::from_secs(60);

/// How far back refusals are read: the longest window one can carry (a primary reset is at
/// most an hour ahead; a retry-after longer than that is not believed beyond it) and slack
/// for clocks that disagree.
pub const LOOKBACK: SignedDuration = SignedDuration::from_secs(3600 + 300);

/// One refusal the origin answered, as the observation store holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The provider that refused.
    pub provider: Provider,
    /// Whose quota.
    pub key: QuotaKey,
    /// The refused request's route family, when attribution was certain.
    pub route_family: Option<String>,
    /// The refused request's dimension.
    pub dimension: Option<Dimension>,
    /// Why the origin refused.
    pub reason: LimitReason,
    /// The origin's `Retry-After`.
    pub retry_after: Option<SignedDuration>,
    /// The window's reset the response named.
    pub reset_at: Option<Timestamp>,
    /// When it was observed.
    pub observed_at: Timestamp,
}

impl Refusal {
    /// When the refusal stops cooling its family down. A primary limit lasts until its
    /// reset (else the retry-after); any other until its retry-after — GitHub sends its
    /// primary window's reset on every response, and a secondary limit held until then would
    /// idle a route for up to an hour — and without either, [`DEFAULT_WINDOW`]. Never past
    /// [`LOOKBACK`] after it was observed.
    pub fn ends_at(&self) -> Timestamp {
        let after = |d: SignedDuration| self.observed_at.checked_add(d).unwrap_or(Timestamp::MAX);
        let after_retry = self.retry_after.map(after);
        let end = match self.reason {
            LimitReason::Primary => self.reset_at.or(after_retry),
            _ => after_retry,
        }
        .unwrap_or_else(|| after(DEFAULT_WINDOW));
        end.min(after(LOOKBACK))
    }

    /// Whether it gates a request of `family` and `dimension` to `provider` for `key`.
    pub fn gates(
        &self,
        provider: Provider,
        key: &QuotaKey,
        family: &str,
        dimension: Dimension,
    ) -> bool {
        if self.provider != provider || &self.key != key || !self.reason.is_retryable() {
            return false;
        }
        match &self.route_family {
            Some(f) => f == family,
            None => self.dimension == Some(dimension),
        }
    }
}

/// What holds a request back: the refusal whose window ends last among those that gate it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cooldown {
    /// When the request may go.
    pub until: Timestamp,
    /// The refusal's reason.
    pub reason: LimitReason,
}

/// The cooldown that gates a request of `family` and `dimension`, if any is active at `now`.
pub fn blocking(
    refusals: &[Refusal],
    provider: Provider,
    key: &QuotaKey,
    family: &str,
    dimension: Dimension,
    now: Timestamp,
) -> Option<Cooldown> {
    refusals
        .iter()
        .filter(|r| r.gates(provider, key, family, dimension))
        .map(|r| Cooldown {
            until: r.ends_at(),
            reason: r.reason,
        })
        .filter(|c| c.until > now)
        .max_by_key(|c| c.until)
}
