//! Linear's two leaky buckets per identity: requests and complexity points, each refilling
//! continuously at limit ÷ period, on the simulator's clock. API keys and OAuth tokens of one
//! user have their own pair (their limits differ). A request the buckets refuse spends
//! nothing (the simulator's guess: Linear does not say).

use std::collections::HashMap;

use headroom_core::clock::Timestamp;

use super::spec::LinearLimits;

/// How the request authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthKind {
    /// `Authorization: <API key>`.
    ApiKey,
    /// `Authorization: Bearer <token>`.
    OAuth,
}

impl AuthKind {
    /// `rateLimitStatus.kind`.
    pub fn name(self) -> &'static str {
        match self {
            AuthKind::ApiKey => "api key",
            AuthKind::OAuth => "oauth",
        }
    }
}

/// One bucket's reading after a request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BucketReading {
    /// Capacity.
    pub limit: u64,
    /// What is left (whole units, rounded down).
    pub remaining: u64,
    /// When the bucket is full again, Unix milliseconds.
    pub reset_ms: i64,
    /// The period, milliseconds.
    pub period_ms: i64,
}

/// Both buckets' readings, and whether the request was let through.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// Requests.
    pub requests: BucketReading,
    /// Complexity points.
    pub complexity: BucketReading,
    /// Whether both buckets held enough.
    pub allowed: bool,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    level: f64,
    at: Timestamp,
}

impl Bucket {
    fn refill(&mut self, limit: u64, period_ms: i64, now: Timestamp) {
        let elapsed = (now.as_millisecond() - self.at.as_millisecond()).max(0) as f64;
        let rate = limit as f64 / period_ms as f64;
        self.level = (self.level + elapsed * rate).min(limit as f64);
        self.at = now;
    }

    fn reading(&self, limit: u64, period_ms: i64) -> BucketReading {
        let missing = (limit as f64 - self.level).max(0.0);
        // Multiply first: `missing / rate` would carry the rate's rounding into the ceiling.
        let wait = (missing * period_ms as f64 / limit as f64).ceil() as i64;
        BucketReading {
            limit,
            remaining: self.level.max(0.0).floor() as u64,
            reset_ms: self.at.as_millisecond() + wait,
            period_ms,
        }
    }
}

/// Every identity's buckets.
#[derive(Debug, Default)]
pub struct Buckets {
    by: HashMap<(AuthKind, String), (Bucket, Bucket)>,
}

fn limits_of(limits: &LinearLimits, kind: AuthKind) -> (u64, u64) {
    match kind {
        AuthKind::ApiKey => (limits.api_key_requests, limits.api_key_complexity),
        AuthKind::OAuth => (limits.oauth_requests, limits.oauth_complexity),
    }
}

impl Buckets {
    /// Takes one request and `points` from `user`'s buckets if both hold enough; the readings
    /// after it either way.
    pub fn take(
        &mut self,
        limits: &LinearLimits,
        kind: AuthKind,
        user: &str,
        points: u64,
        now: Timestamp,
    ) -> Reading {
        let (req_limit, cx_limit) = limits_of(limits, kind);
        let period_ms = limits.period.as_millis().max(1) as i64;
        let full = |limit: u64| Bucket {
            level: limit as f64,
            at: now,
        };
        let (req, cx) = self
            .by
            .entry((kind, user.to_owned()))
            .or_insert_with(|| (full(req_limit), full(cx_limit)));
        req.refill(req_limit, period_ms, now);
        cx.refill(cx_limit, period_ms, now);
        let allowed = req.level >= 1.0 && cx.level >= points as f64;
        if allowed {
            req.level -= 1.0;
            cx.level -= points as f64;
        }
        Reading {
            requests: req.reading(req_limit, period_ms),
            complexity: cx.reading(cx_limit, period_ms),
            allowed,
        }
    }

    /// The readings without taking anything.
    pub fn peek(
        &mut self,
        limits: &LinearLimits,
        kind: AuthKind,
        user: &str,
        now: Timestamp,
    ) -> Reading {
        let mut copy = Buckets {
            by: self
                .by
                .get(&(kind, user.to_owned()))
                .map(|b| ((kind, user.to_owned()), *b))
                .into_iter()
                .collect(),
        };
        let mut r = copy.take(limits, kind, user, 0, now);
        // `take` spent one request on the copy; give it back in the reading.
        r.requests.remaining = (r.requests.remaining + 1).min(r.requests.limit);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_core::clock::SignedDuration;

    #[test]
    fn a_spent_complexity_bucket_refills_continuously() {
        let limits = LinearLimits {
            api_key_complexity: 3_600,
            ..LinearLimits::default()
        };
        let t0 = Timestamp::from_second(1_800_000_000).unwrap_or_default();
        let mut b = Buckets::default();
        let r = b.take(&limits, AuthKind::ApiKey, "alice", 3_600, t0);
        assert!(r.allowed);
        assert_eq!(r.complexity.remaining, 0);
        assert_eq!(r.complexity.reset_ms, t0.as_millisecond() + 3_600_000);
        assert!(!b.take(&limits, AuthKind::ApiKey, "alice", 10, t0).allowed);
        // One point a second.
        let later = t0 + SignedDuration::from_secs(10);
        let r = b.take(&limits, AuthKind::ApiKey, "alice", 10, later);
        assert!(r.allowed);
        assert_eq!(r.complexity.remaining, 0);
        // OAuth has its own buckets.
        assert!(b.take(&limits, AuthKind::OAuth, "alice", 10, t0).allowed);
    }
}
