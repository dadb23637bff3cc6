//! LaunchDarkly's limits as it documents them: the account's global window and one window
//! per route (method and URL pattern), both fixed windows of [`LdLimits::window`] (10 s)
//! aligned to multiples of it on the simulator's clock, so they reset together. Every token of
//! the account spends the same windows. A request is admitted when both windows have room and
//! then spends one from each; a refused request spends nothing. Every response of a limited
//! route says what is left: `X-Ratelimit-Global-Remaining`, `X-Ratelimit-Route-Remaining` and
//! `X-Ratelimit-Reset` (epoch milliseconds, the window's end) — and no limit, as LaunchDarkly
//! sends none. Over either limit: 429 `{"code":"rate_limited",…}` with the same headers and,
//! when [`LdLimits::retry_after`] is set, `Retry-After` in whole seconds rounded up.

use std::collections::HashMap;

use http::StatusCode;
use serde_json::json;

use super::spec::LdLimits;
use crate::sim::Reply;

/// The 429's message, as LaunchDarkly's description writes it.
pub(crate) const RATE_LIMITED: &str = "You've exceeded the API rate limit. Try again later.";

/// The account's windows: which window they count in and what each has spent.
#[derive(Debug, Default)]
pub(crate) struct Windows {
    /// The current window's index (`now / window`).
    index: i64,
    global: u64,
    routes: HashMap<String, u64>,
}

/// What one request met: admitted or not, and the headers' values after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub(crate) admitted: bool,
    pub(crate) global_remaining: u64,
    pub(crate) route_remaining: u64,
    /// The window's end, epoch milliseconds.
    pub(crate) reset_ms: i64,
    /// Milliseconds from now to the reset.
    pub(crate) wait_ms: i64,
}

impl Windows {
    /// Rolls to the window of `now_ms`, then admits one request of `route` or refuses it.
    pub(crate) fn admit(&mut self, limits: &LdLimits, route: &str, now_ms: i64) -> Verdict {
        let len = limits.window.as_millis().max(1) as i64;
        let index = now_ms.div_euclid(len);
        if index != self.index {
            self.index = index;
            self.global = 0;
            self.routes.clear();
        }
        let route_limit = limits.route_limit(route);
        let used = self.routes.get(route).copied().unwrap_or(0);
        let admitted = self.global < limits.global_per_window && used < route_limit;
        if admitted {
            self.global += 1;
            self.routes.insert(route.to_owned(), used + 1);
        }
        let reset_ms = (index + 1) * len;
        Verdict {
            admitted,
            global_remaining: limits.global_per_window.saturating_sub(self.global),
            route_remaining: route_limit.saturating_sub(used + u64::from(admitted)),
            reset_ms,
            wait_ms: reset_ms - now_ms,
        }
    }
}

impl Verdict {
    /// Adds the window headers to a reply.
    pub(crate) fn headers(&self, reply: Reply) -> Reply {
        reply
            .header(
                "x-ratelimit-global-remaining",
                &self.global_remaining.to_string(),
            )
            .header(
                "x-ratelimit-route-remaining",
                &self.route_remaining.to_string(),
            )
            .header("x-ratelimit-reset", &self.reset_ms.to_string())
    }

    /// The refusal of a request over a limit, with the window headers.
    pub(crate) fn refusal(&self, limits: &LdLimits) -> Reply {
        let reply = Reply::json(
            StatusCode::TOO_MANY_REQUESTS,
            &json!({"code": "rate_limited", "message": RATE_LIMITED}),
        );
        let reply = self.headers(reply);
        if limits.retry_after {
            let secs = (self.wait_ms.max(1) + 999) / 1_000;
            reply.header("retry-after", &secs.to_string())
        } else {
            reply
        }
    }
}

#[cfg(test)]
mod tests {
    use headroom_core::clock::SignedDuration;

    use super::*;

    fn limits() -> LdLimits {
        LdLimits::default()
            .with_window(SignedDuration::from_secs(1))
            .with_global(3)
            .with_route_default(2)
    }

    #[test]
    fn a_route_window_refuses_its_third_request_and_leaves_other_routes_alone() {
        let l = limits();
        let mut w = Windows::default();
        let t = 1_000_000_400;
        assert!(w.admit(&l, "GET /a", t).admitted);
        let second = w.admit(&l, "GET /a", t);
        assert_eq!((second.route_remaining, second.global_remaining), (0, 1));
        assert_eq!(second.reset_ms, 1_000_001_000);
        let third = w.admit(&l, "GET /a", t);
        assert!(!third.admitted);
        assert_eq!((third.route_remaining, third.global_remaining), (0, 1));
        assert!(w.admit(&l, "GET /b", t).admitted);
        // The global window is now spent for every route.
        assert!(!w.admit(&l, "GET /c", t).admitted);
        // The next window starts empty.
        assert!(w.admit(&l, "GET /a", 1_000_001_000).admitted);
    }

    #[test]
    fn retry_after_rounds_the_wait_up_to_whole_seconds() {
        let l = limits();
        let v = Verdict {
            admitted: false,
            global_remaining: 0,
            route_remaining: 0,
            reset_ms: 2_001,
            wait_ms: 1_001,
        };
        let r = v.refusal(&l);
        assert_eq!(
            r.headers.get("retry-after").map(|v| v.as_bytes()),
            Some(&b"2"[..])
        );
        let r = v.refusal(&l.with_retry_after(false));
        assert!(r.headers.get("retry-after").is_none());
    }
}
