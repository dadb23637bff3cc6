//! Jira's limits as Atlassian states them: a token bucket per site, endpoint and method for
//! every request (steady rate plus a buffer; `RateLimit-Reason: jira-burst-based`), and an
//! OAuth app's points per UTC hour (1 per request plus 1 per issue or project returned;
//! `jira-quota-global-based`). Both answer 429 with `Retry-After` and an ISO 8601
//! `X-RateLimit-Reset`; a 403 is never a limit.

use std::collections::HashMap;

use headroom_core::clock::Timestamp;
use http::StatusCode;
use serde_json::json;

use super::spec::JiraLimits;
use crate::sim::Reply;

/// One endpoint's bucket, in thousandths of a request.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    milli: u64,
    at: Timestamp,
}

/// The buckets of the site and the app's hour.
#[derive(Debug, Default)]
pub(crate) struct Buckets {
    burst: HashMap<(String, String), Bucket>,
    /// The UTC hour (seconds) the app's points count in, and the points spent in it.
    app_hour: i64,
    app_used: u64,
}

/// The app quota's name in `Beta-RateLimit-Policy`.
pub(crate) const APP_POLICY: &str = "global-app-quota";

/// An endpoint's template: the path with its issue, board and project ids replaced, so that
/// every issue's changelog shares one bucket, as Jira's per-endpoint limits do.
pub(crate) fn endpoint_of(path: &str) -> String {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let mut out = String::new();
    for (i, s) in segs.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| segs[j]);
        let shown = match prev {
            Some("issue") => "{issueIdOrKey}",
            Some("board") => "{boardId}",
            Some("project") if *s != "search" => "{projectIdOrKey}",
            _ => s,
        };
        out.push('/');
        out.push_str(shown);
    }
    out
}

/// An instant as `X-RateLimit-Reset` writes it.
fn reset_text(t: Timestamp, without_seconds: bool) -> String {
    if without_seconds {
        // Rounded up, so that waiting until the written minute is never too early.
        let s = t.as_second();
        let up = if s % 60 == 0 {
            s
        } else {
            s - s.rem_euclid(60) + 60
        };
        Timestamp::from_second(up)
            .unwrap_or(t)
            .strftime("%Y-%m-%dT%H:%MZ")
            .to_string()
    } else {
        t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    }
}

/// A 429 with Jira's headers. The body is not specified by Atlassian; this is a guess.
fn refusal(reason: &str, retry_secs: i64, now: Timestamp, limits: &JiraLimits) -> Reply {
    let reset = Timestamp::from_second(now.as_second() + retry_secs).unwrap_or(now);
    Reply::json(
        StatusCode::TOO_MANY_REQUESTS,
        &json!({"errorMessages": ["Rate limit exceeded."], "errors": {}}),
    )
    .header("retry-after", &retry_secs.to_string())
    .header(
        "x-ratelimit-reset",
        &reset_text(reset, limits.reset_without_seconds),
    )
    .header("ratelimit-reason", reason)
}

impl Buckets {
    /// Takes one request from the bucket of `method` on `endpoint`; the refusal when empty.
    pub(crate) fn burst(
        &mut self,
        limits: &JiraLimits,
        method: &str,
        endpoint: &str,
        now: Timestamp,
    ) -> Option<Reply> {
        let changelog = method == "GET" && endpoint.ends_with("/issue/{issueIdOrKey}/changelog");
        let rate = if changelog {
            limits.changelog_burst_per_sec
        } else {
            limits.burst_per_sec
        };
        if rate == 0 {
            return None;
        }
        let capacity = (rate + limits.burst_buffer) * 1_000;
        let key = (method.to_owned(), endpoint.to_owned());
        let b = self.burst.entry(key).or_insert(Bucket {
            milli: capacity,
            at: now,
        });
        let elapsed = now
            .as_millisecond()
            .saturating_sub(b.at.as_millisecond())
            .max(0) as u64;
        b.milli = (b.milli + elapsed.saturating_mul(rate)).min(capacity);
        b.at = now;
        if b.milli >= 1_000 {
            b.milli -= 1_000;
            return None;
        }
        let wait_ms = (1_000 - b.milli).div_ceil(rate);
        let secs = wait_ms.div_ceil(1_000).max(1) as i64;
        Some(
            refusal("jira-burst-based", secs, now, limits)
                .header("x-ratelimit-limit", &rate.to_string())
                .header("x-ratelimit-remaining", &(b.milli / 1_000).to_string()),
        )
    }

    fn roll_hour(&mut self, now: Timestamp) -> i64 {
        let hour = now.as_second().div_euclid(3_600) * 3_600;
        if hour != self.app_hour {
            self.app_hour = hour;
            self.app_used = 0;
        }
        hour + 3_600 - now.as_second()
    }

    /// The app's refusal when its hour's points are spent.
    pub(crate) fn app_check(&mut self, limits: &JiraLimits, now: Timestamp) -> Option<Reply> {
        let q = limits.app_points_per_hour;
        if q == 0 {
            return None;
        }
        let left = self.roll_hour(now);
        (self.app_used >= q).then(|| {
            refusal("jira-quota-global-based", left, now, limits)
                .header("beta-ratelimit-policy", &policy(q))
                .header("beta-ratelimit", &format!("\"{APP_POLICY}\";r=0;t={left}"))
        })
    }

    /// Spends `points` of the app's hour and adds its headers: the policy always, the
    /// remaining points only near the limit (under 20 %). The points spent.
    pub(crate) fn app_charge(
        &mut self,
        limits: &JiraLimits,
        now: Timestamp,
        points: u64,
        reply: Reply,
    ) -> (Reply, u64) {
        let q = limits.app_points_per_hour;
        if q == 0 {
            return (reply, 0);
        }
        let left = self.roll_hour(now);
        self.app_used += points;
        let remaining = q.saturating_sub(self.app_used);
        let mut reply = reply.header("beta-ratelimit-policy", &policy(q));
        if remaining * 5 < q {
            reply = reply
                .header(
                    "beta-ratelimit",
                    &format!("\"{APP_POLICY}\";r={remaining};t={left}"),
                )
                .header("x-ratelimit-nearlimit", "true");
        }
        (reply, points)
    }

    /// The app's remaining points this hour.
    pub(crate) fn app_remaining(&self, limits: &JiraLimits) -> u64 {
        limits.app_points_per_hour.saturating_sub(self.app_used)
    }
}

fn policy(q: u64) -> String {
    format!("\"{APP_POLICY}\";q={q};w=3600")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_issue_of_an_endpoint_shares_one_bucket() {
        assert_eq!(
            endpoint_of("/rest/api/3/issue/PA-1/changelog"),
            endpoint_of("/rest/api/3/issue/10042/changelog")
        );
        assert_eq!(
            endpoint_of("/rest/api/3/project/search"),
            "/rest/api/3/project/search"
        );
        assert_eq!(
            endpoint_of("/rest/agile/1.0/board/7/sprint"),
            "/rest/agile/1.0/board/{boardId}/sprint"
        );
    }

    #[test]
    fn a_reset_without_seconds_is_rounded_up_to_its_minute() {
        let t: Timestamp = "2026-03-26T15:59:01Z".parse().expect("instant");
        assert_eq!(reset_text(t, true), "2026-03-26T16:00Z");
        assert_eq!(reset_text(t, false), "2026-03-26T15:59:01Z");
    }

    #[test]
    fn the_bucket_refills_at_its_steady_rate() {
        let limits = JiraLimits {
            burst_per_sec: 2,
            burst_buffer: 0,
            ..JiraLimits::default()
        };
        let mut b = Buckets::default();
        let t: Timestamp = "2026-03-26T15:00:00Z".parse().expect("instant");
        assert!(b.burst(&limits, "GET", "/x", t).is_none());
        assert!(b.burst(&limits, "GET", "/x", t).is_none());
        assert!(b.burst(&limits, "GET", "/x", t).is_some());
        // Another method of the same endpoint has its own bucket.
        assert!(b.burst(&limits, "POST", "/x", t).is_none());
        let later = Timestamp::from_millisecond(t.as_millisecond() + 500).expect("instant");
        assert!(b.burst(&limits, "GET", "/x", later).is_none());
        assert!(b.burst(&limits, "GET", "/x", later).is_some());
    }
}
