//! GitLab's limits, as GitLab.com plays them: the authenticated API throttle (per user, per
//! fixed minute aligned to the clock, every authenticated request counted, refused ones too,
//! as Rack::Attack counts them) reported on every response by the `RateLimit-*` headers and
//! refused with 429 + `Retry-After` + `RateLimit-ResetTime` and a plain-text body; and an
//! application limit on project creation, which answers 429 while the headers still show
//! room. A self-managed instance throttles nothing by default and sends no `RateLimit-*`
//! header.

use std::collections::HashMap;

use headroom_core::clock::Timestamp;
use http::StatusCode;
use http::header::HeaderValue;

use crate::sim::{Reply, http_date};

/// The throttle's name, as GitLab reports it.
pub(crate) const THROTTLE_NAME: &str = "throttle_authenticated_api";

/// The throttle's state for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reading {
    pub(crate) limit: u64,
    pub(crate) observed: u64,
    pub(crate) remaining: u64,
    /// The window's end, Unix seconds.
    pub(crate) reset: i64,
    /// Seconds from now to the window's end (at least 1).
    pub(crate) retry_after: i64,
}

impl Reading {
    /// Whether this request went over the limit.
    pub(crate) fn exceeded(&self) -> bool {
        self.observed > self.limit
    }
}

/// Per-user fixed-minute counters.
#[derive(Debug, Default)]
pub(crate) struct Windows {
    /// Username → (window start, requests in it).
    counts: HashMap<String, (i64, u64)>,
}

impl Windows {
    /// Counts one request of `user` at `now` in windows of `period` seconds; returns the
    /// count in its window, the window's end and the seconds left in it.
    fn count(&mut self, user: &str, now: Timestamp, period: i64) -> (u64, i64, i64) {
        let period = period.max(1);
        let secs = now.as_second();
        let start = secs.div_euclid(period) * period;
        let entry = self.counts.entry(user.to_owned()).or_insert((start, 0));
        if entry.0 != start {
            *entry = (start, 0);
        }
        entry.1 += 1;
        let end = start + period;
        (entry.1, end, (end - secs).max(1))
    }
}

/// Both of GitLab's limits.
#[derive(Debug, Default)]
pub(crate) struct GitlabQuota {
    throttle: Windows,
    project_creation: Windows,
}

impl GitlabQuota {
    /// Counts a request against the authenticated API throttle.
    pub(crate) fn throttle(
        &mut self,
        user: &str,
        now: Timestamp,
        limit: u64,
        period: i64,
    ) -> Reading {
        let (observed, reset, retry_after) = self.throttle.count(user, now, period);
        Reading {
            limit,
            observed,
            remaining: limit.saturating_sub(observed),
            reset,
            retry_after,
        }
    }

    /// Counts a project creation; whether it stays within `per_minute` (0: no limit).
    pub(crate) fn allow_project_creation(
        &mut self,
        user: &str,
        now: Timestamp,
        per_minute: u64,
        period: i64,
    ) -> bool {
        per_minute == 0 || self.project_creation.count(user, now, period).0 <= per_minute
    }
}

/// The `RateLimit-*` headers of a reading (and on a refusal, `RateLimit-ResetTime` and
/// `Retry-After`).
pub(crate) fn add_headers(reply: Reply, r: &Reading) -> Reply {
    let mut reply = reply
        .header("ratelimit-name", THROTTLE_NAME)
        .header("ratelimit-limit", &r.limit.to_string())
        .header("ratelimit-observed", &r.observed.to_string())
        .header("ratelimit-remaining", &r.remaining.to_string())
        .header("ratelimit-reset", &r.reset.to_string());
    if r.exceeded() {
        let at = Timestamp::from_second(r.reset).unwrap_or(Timestamp::UNIX_EPOCH);
        reply = reply
            .header("ratelimit-resettime", &http_date(at))
            .header("retry-after", &r.retry_after.to_string());
    }
    reply
}

/// The throttle's refusal: 429, plain text. `retry_after` is sent when the headers are not
/// (a self-managed instance), so the refusal always says when to come back.
pub(crate) fn throttled(retry_after: Option<i64>) -> Reply {
    let mut reply = Reply::json(StatusCode::TOO_MANY_REQUESTS, &serde_json::Value::Null);
    reply.body = bytes::Bytes::from_static(b"Retry later\n");
    reply.headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain"),
    );
    match retry_after {
        Some(secs) => reply.header("retry-after", &secs.to_string()),
        None => reply,
    }
}

/// The application limit's refusal (GitLab's `check_rate_limit!`): 429 JSON, no
/// `Retry-After`, the throttle's headers unchanged.
pub(crate) fn application_limited() -> Reply {
    super::message(
        StatusCode::TOO_MANY_REQUESTS,
        serde_json::json!({"error": "This endpoint has been requested too many times. Try again later."}),
    )
}

/// The throttle's refusal as the `mutation_429` scenario plays it, whatever the count: the
/// plain-text 429 with `Retry-After` to the end of the window (`period` seconds) and, where the instance sends
/// headers, `RateLimit-ResetTime` (the other `RateLimit-*` headers are added as on every
/// answer).
pub(crate) fn scenario_throttled(reading: Option<&Reading>, now: Timestamp, period: i64) -> Reply {
    let period = period.max(1);
    let secs = now.as_second();
    let reset = secs.div_euclid(period) * period + period;
    let reply = throttled(Some((reset - secs).max(1)));
    match reading {
        Some(r) => {
            let at = Timestamp::from_second(r.reset).unwrap_or(Timestamp::UNIX_EPOCH);
            reply.header("ratelimit-resettime", &http_date(at))
        }
        None => reply,
    }
}
