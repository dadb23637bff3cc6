//! The retry policy: which failures of a read are worth retrying, and how long to back off.
//!
//! Reads retry with full jitter — `random(0, min(cap, base · 2^attempt))` — so that many
//! clients failing together do not come back together. Mutations never retry automatically:
//! resending "create repository" after a timeout may create it twice; the caller decides.
//! Each provider has its own predicate, because their status codes mean different things.

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::clock::SignedDuration;
use crate::quota::RequestKind;
use crate::signal::Provider;

/// Full-jitter exponential backoff settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Attempts in total, the first included.
    pub max_attempts: u32,
    /// The backoff base.
    pub base: SignedDuration,
    /// The largest single backoff.
    pub cap: SignedDuration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base: SignedDuration::from_millis(250),
            cap: SignedDuration::from_secs(4),
        }
    }
}

/// How an attempt failed, as far as the retry decision cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The provider answered with this status. `rate_limit_remaining_zero` says whether
    /// `x-ratelimit-remaining: 0` (or the provider's equivalent) came with it.
    Status {
        /// The HTTP status.
        status: u16,
        /// Whether the response said the quota is spent.
        rate_limit_remaining_zero: bool,
    },
    /// Connecting or reading timed out.
    Timeout,
    /// The connection failed (refused, reset, DNS).
    Connection,
}

/// Whether `provider` considers `failure` worth retrying for a read. Mutations: never.
pub fn is_retryable(provider: Provider, kind: RequestKind, failure: Failure) -> bool {
    if !kind.is_read() {
        return false;
    }
    match provider {
        // 429, any 5xx, and a 403 only when remaining is 0: a 403 alone is usually a
        // permission problem, and retrying a permission problem never ends.
        Provider::GitHub => match failure {
            Failure::Status {
                status,
                rate_limit_remaining_zero,
            } => {
                status == 429
                    || (500..=599).contains(&status)
                    || (status == 403 && rate_limit_remaining_zero)
            }
            Failure::Timeout | Failure::Connection => true,
        },
        // 429 (the caller waits what the provider announced, within the in-place cap),
        // 500/502/503/504, timeouts and connection errors. A 403 is a permission problem
        // unless rate-limit headers qualify it, and then it is a limit to defer, not retry.
        // (docs/decisions/0001-gitlab-read-retries.md says why 429 and 502 are in.)
        Provider::GitLab => match failure {
            Failure::Status { status, .. } => matches!(status, 429 | 500 | 502 | 503 | 504),
            Failure::Timeout | Failure::Connection => true,
        },
        Provider::Jira | Provider::Linear | Provider::LaunchDarkly => match failure {
            Failure::Status { status, .. } => status == 429 || (500..=599).contains(&status),
            Failure::Timeout | Failure::Connection => true,
        },
    }
}

impl RetryPolicy {
    /// Whether another attempt is allowed after `attempts_made` attempts.
    pub fn allows_another(&self, attempts_made: u32) -> bool {
        attempts_made < self.max_attempts
    }

    /// The upper bound of the backoff after attempt number `attempt` (0-based):
    /// `min(cap, base · 2^attempt)`.
    pub fn ceiling(&self, attempt: u32) -> SignedDuration {
        let base = self.base.as_millis().max(0);
        let scaled = base.saturating_mul(1i128 << attempt.min(62));
        let ms = scaled.min(self.cap.as_millis().max(0));
        SignedDuration::from_millis(i64::try_from(ms).unwrap_or(i64::MAX))
    }

    /// A full-jitter backoff after attempt number `attempt` (0-based), drawn from `rng`.
    pub fn backoff<R: Rng + ?Sized>(&self, attempt: u32, rng: &mut R) -> SignedDuration {
        let ceiling_ms = self.ceiling(attempt).as_millis();
        let ceiling_ms = u64::try_from(ceiling_ms).unwrap_or(0);
        if ceiling_ms == 0 {
            return SignedDuration::ZERO;
        }
        SignedDuration::from_millis(i64::try_from(rng.random_range(0..=ceiling_ms)).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn status(status: u16, zero: bool) -> Failure {
        Failure::Status {
            status,
            rate_limit_remaining_zero: zero,
        }
    }

    #[test]
    fn backoff_stays_within_full_jitter_bounds() {
        let policy = RetryPolicy::default();
        let mut rng = StdRng::seed_from_u64(7);
        let expected_ceilings = [250, 500, 1000, 2000, 4000, 4000, 4000];
        for (attempt, ceiling) in expected_ceilings.iter().enumerate() {
            let attempt = u32::try_from(attempt).expect("small");
            assert_eq!(policy.ceiling(attempt).as_millis(), *ceiling);
            for _ in 0..1000 {
                let d = policy.backoff(attempt, &mut rng).as_millis();
                assert!((0..=*ceiling).contains(&d), "attempt {attempt}: {d}");
            }
        }
        // Huge attempt numbers cannot overflow.
        assert_eq!(policy.ceiling(u32::MAX).as_millis(), 4000);
    }

    #[test]
    fn seeded_backoff_is_deterministic_and_spread() {
        let policy = RetryPolicy::default();
        let draw = |seed| {
            let mut rng = StdRng::seed_from_u64(seed);
            (0..4)
                .map(|a| policy.backoff(a, &mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(42), draw(42));
        let mut rng = StdRng::seed_from_u64(1);
        let samples: Vec<i128> = (0..200)
            .map(|_| policy.backoff(3, &mut rng).as_millis())
            .collect();
        let distinct: std::collections::BTreeSet<_> = samples.iter().collect();
        assert!(
            distinct.len() > 100,
            "full jitter spreads: {}",
            distinct.len()
        );
        assert!(samples.iter().any(|&d| d < 1000) && samples.iter().any(|&d| d > 1000));
    }

    #[test]
    fn four_attempts_in_total() {
        let policy = RetryPolicy::default();
        assert!(policy.allows_another(1));
        assert!(policy.allows_another(3));
        assert!(!policy.allows_another(4));
    }

    #[test]
    fn github_retries_429_5xx_and_only_exhausted_403() {
        let read = RequestKind::REST_READ;
        assert!(is_retryable(Provider::GitHub, read, status(429, false)));
        for s in [500, 502, 503, 504] {
            assert!(is_retryable(Provider::GitHub, read, status(s, false)));
        }
        assert!(is_retryable(Provider::GitHub, read, status(403, true)));
        assert!(!is_retryable(Provider::GitHub, read, status(403, false)));
        assert!(!is_retryable(Provider::GitHub, read, status(404, false)));
        assert!(!is_retryable(Provider::GitHub, read, status(422, false)));
        assert!(is_retryable(Provider::GitHub, read, Failure::Timeout));
    }

    #[test]
    fn gitlab_retries_429_500_502_503_504_timeouts_and_connection_errors() {
        let read = RequestKind::REST_READ;
        for s in [429, 500, 502, 503, 504] {
            assert!(
                is_retryable(Provider::GitLab, read, status(s, false)),
                "{s}"
            );
        }
        for s in [400, 401, 403, 404, 405, 406, 409, 422, 501] {
            assert!(
                !is_retryable(Provider::GitLab, read, status(s, false)),
                "{s}"
            );
        }
        assert!(!is_retryable(Provider::GitLab, read, status(403, true)));
        assert!(is_retryable(Provider::GitLab, read, Failure::Timeout));
        assert!(is_retryable(Provider::GitLab, read, Failure::Connection));
    }

    #[test]
    fn mutations_never_retry() {
        for kind in [
            RequestKind::REST_MUTATION,
            RequestKind::REST_CREATE,
            RequestKind::GRAPHQL_MUTATION,
        ] {
            for provider in [
                Provider::GitHub,
                Provider::GitLab,
                Provider::Jira,
                Provider::Linear,
                Provider::LaunchDarkly,
            ] {
                for failure in [
                    status(429, true),
                    status(503, false),
                    Failure::Timeout,
                    Failure::Connection,
                ] {
                    assert!(
                        !is_retryable(provider, kind, failure),
                        "{provider:?} {kind:?} {failure:?}"
                    );
                }
            }
        }
    }
}
