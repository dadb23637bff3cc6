//! Normalized rate-limit signals and the header dialects of every provider headroom speaks.
//!
//! A [`RateLimitSignal`] is what one response says about quota: a plain reading (limit,
//! remaining, reset…) and, when the response was refused for quota reasons, why. Parsers take
//! the status, headers and body exactly as received and never fail: absent, garbage, negative,
//! non-finite or enormous values degrade to "unknown" or to a conservative default.

use std::fmt;

use http::HeaderMap;
use serde::{Deserialize, Serialize};

use crate::clock::{SignedDuration, Timestamp};
use crate::quota::Bucket;
use crate::triage::{GithubTriage, triage_github};

mod jira_points;
pub use jira_points::JIRA_APP_POINTS;

/// The providers whose rate-limit dialects headroom understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// GitHub (github.com and Enterprise).
    GitHub,
    /// GitLab (gitlab.com and self-managed).
    GitLab,
    /// Atlassian Jira Cloud.
    Jira,
    /// Linear.
    Linear,
    /// LaunchDarkly.
    LaunchDarkly,
}

/// The budget dimension a request spends, shared across providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    /// Standard REST request budget.
    RestCore,
    /// GraphQL query-cost or complexity budget.
    GraphqlCost,
    /// Repository tree, blob and content expansion (high variance).
    ContentsBlob,
    /// Search requests (separately limited).
    Search,
    /// Calls that risk secondary (abuse) limits.
    SecondaryAbuseRisk,
}

impl Dimension {
    /// The dimension GitHub's resource name implies.
    pub fn for_github_resource(resource: &str) -> Self {
        match resource {
            "graphql" => Dimension::GraphqlCost,
            "search" | "code_search" => Dimension::Search,
            _ => Dimension::RestCore,
        }
    }

    /// The stable snake_case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Dimension::RestCore => "rest_core",
            Dimension::GraphqlCost => "graphql_cost",
            Dimension::ContentsBlob => "contents_blob",
            Dimension::Search => "search",
            Dimension::SecondaryAbuseRisk => "secondary_abuse_risk",
        }
    }

    /// The dimension [`Dimension::as_str`] names, if it names one.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            Dimension::RestCore,
            Dimension::GraphqlCost,
            Dimension::ContentsBlob,
            Dimension::Search,
            Dimension::SecondaryAbuseRisk,
        ]
        .into_iter()
        .find(|d| d.as_str() == name)
    }
}

/// Why a request was refused, when it was refused for quota reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitReason {
    /// The primary quota is spent until its reset.
    Primary,
    /// A secondary (abuse, burst, concurrency) limit: back off, then try again.
    Secondary,
    /// Not a rate limit at all: permission, SSO, disabled feature. Never retried.
    Permission,
    /// The query is too expensive to ever pass (Linear complexity): restructure, never retry.
    Complexity,
    /// Rate limited, but the response does not say how.
    Unknown,
}

impl LimitReason {
    /// Whether waiting and trying again can succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            LimitReason::Primary | LimitReason::Secondary | LimitReason::Unknown
        )
    }

    /// The stable snake_case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            LimitReason::Primary => "primary",
            LimitReason::Secondary => "secondary",
            LimitReason::Permission => "permission",
            LimitReason::Complexity => "complexity",
            LimitReason::Unknown => "unknown",
        }
    }

    /// The reason [`LimitReason::as_str`] names, if it names one.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            LimitReason::Primary,
            LimitReason::Secondary,
            LimitReason::Permission,
            LimitReason::Complexity,
            LimitReason::Unknown,
        ]
        .into_iter()
        .find(|r| r.as_str() == name)
    }
}

impl fmt::Display for LimitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Bounds applied to server-provided waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitBounds {
    /// Used when a wait is announced but unreadable (garbage, negative, non-finite).
    pub default_wait: SignedDuration,
    /// The longest wait a signal may carry; longer values are clamped to it.
    pub max_wait: SignedDuration,
    /// The longest wait anyone may spend in place (holding a task) rather than deferring.
    pub max_in_place_wait: SignedDuration,
}

impl Default for WaitBounds {
    fn default() -> Self {
        Self {
            default_wait: SignedDuration::from_secs(60),
            max_wait: SignedDuration::from_hours(2),
            max_in_place_wait: SignedDuration::from_secs(300),
        }
    }
}

impl WaitBounds {
    /// `wait` clamped to what may be spent in place.
    pub fn in_place(&self, wait: SignedDuration) -> SignedDuration {
        wait.clamp(SignedDuration::ZERO, self.max_in_place_wait)
    }
}

/// What one response said about quota, normalized across providers.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RateLimitSignal {
    /// Which provider sent it.
    pub provider: Option<Provider>,
    /// The bucket (resource) the response names, when it names one.
    pub resource: Option<Bucket>,
    /// The budget dimension.
    pub dimension: Option<Dimension>,
    /// Set when the response was refused for quota (or quota-like) reasons; `None` for a plain
    /// reading from an ordinary response.
    pub reason: Option<LimitReason>,
    /// How long the provider asked us to wait, already sanitized and clamped.
    pub retry_after: Option<SignedDuration>,
    /// When the current window resets.
    pub reset_at: Option<Timestamp>,
    /// The window's limit.
    pub limit: Option<u64>,
    /// What remains in the window.
    pub remaining: Option<u64>,
    /// What has been used in the window.
    pub used: Option<u64>,
    /// The actual cost of this request, where the provider reports it (GraphQL).
    pub cost: Option<u64>,
    /// GraphQL node count, where reported.
    pub node_count: Option<u64>,
    /// The provider's request id, for support tickets.
    pub request_id: Option<String>,
    /// Readings of the other buckets the same response reports (Linear's complexity beside its
    /// requests), each naming its bucket in `resource`: a request that spent several buckets
    /// feeds every one of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub others: Vec<RateLimitSignal>,
}

impl RateLimitSignal {
    /// Whether this response was refused for quota reasons that waiting can fix.
    pub fn is_rate_limited(&self) -> bool {
        self.reason.is_some_and(|r| r.is_retryable())
    }

    /// Whether the response carried any quota reading at all.
    pub fn has_reading(&self) -> bool {
        self.remaining.is_some() || self.reset_at.is_some() || self.limit.is_some()
    }

    /// The earliest instant at which trying again makes sense, if the signal implies one.
    pub fn not_before(&self, now: Timestamp) -> Option<Timestamp> {
        match self.reason {
            Some(LimitReason::Primary) => self
                .retry_after
                .and_then(|d| now.checked_add(d).ok())
                .or(self.reset_at),
            Some(LimitReason::Secondary | LimitReason::Unknown) => self
                .retry_after
                .and_then(|d| now.checked_add(d).ok())
                .or(self.reset_at),
            _ => None,
        }
    }
}

/// A header's value as trimmed text, if present and valid UTF-8.
pub(crate) fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// A non-negative integer header (`"5000"`, `" 12 "`); anything else is unknown.
pub(crate) fn header_u64(headers: &HeaderMap, name: &str) -> Option<u64> {
    header(headers, name).and_then(|v| v.parse::<u64>().ok())
}

/// Epoch seconds to an instant; out-of-range values are unknown.
pub(crate) fn from_epoch_seconds(secs: i64) -> Option<Timestamp> {
    Timestamp::from_second(secs).ok()
}

/// Epoch milliseconds to an instant; out-of-range values are unknown.
pub(crate) fn from_epoch_millis(ms: i64) -> Option<Timestamp> {
    Timestamp::from_millisecond(ms).ok()
}

/// How far the provider's clock, as its `Date` header states it, is ahead of ours
/// (negative: behind) for a response received at `received_at`; `None` without a readable
/// header. `Date` has whole seconds and is stamped before the response travels, so a
/// provider in step with us reads as up to a second (plus the latency) behind.
pub fn date_skew(headers: &HeaderMap, received_at: Timestamp) -> Option<SignedDuration> {
    let when = httpdate::parse_http_date(header(headers, "date")?).ok()?;
    let at = Timestamp::try_from(when).ok()?;
    Some(at.duration_since(received_at))
}

/// Parses `Retry-After` — delta-seconds or an HTTP-date — into a wait from `now`.
///
/// Returns `None` when the header is absent. Present but unreadable, negative or non-finite
/// values become `bounds.default_wait`; enormous values are clamped to `bounds.max_wait`; a date
/// in the past means "now" (zero).
pub fn parse_retry_after(
    value: Option<&str>,
    now: Timestamp,
    bounds: &WaitBounds,
) -> Option<SignedDuration> {
    let raw = value?.trim();
    if raw.is_empty() {
        return Some(bounds.default_wait);
    }
    let wait = if let Ok(secs) = raw.parse::<u64>() {
        // Anything beyond i64 seconds is enormous; clamp below.
        SignedDuration::from_secs(i64::try_from(secs).unwrap_or(i64::MAX))
    } else if let Ok(secs) = raw.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            SignedDuration::try_from_secs_f64(secs.min(bounds.max_wait.as_secs_f64()))
                .unwrap_or(bounds.default_wait)
        } else {
            bounds.default_wait
        }
    } else if let Ok(when) = httpdate::parse_http_date(raw) {
        match Timestamp::try_from(when) {
            Ok(at) => {
                let d = at.duration_since(now);
                if d.is_negative() {
                    SignedDuration::ZERO
                } else {
                    d
                }
            }
            Err(_) => bounds.default_wait,
        }
    } else {
        bounds.default_wait
    };
    Some(wait.clamp(SignedDuration::ZERO, bounds.max_wait))
}

/// Parses a reset header that should be epoch seconds but is sometimes milliseconds:
/// values beyond year ~5138 in seconds are read as milliseconds.
fn epoch_seconds_or_millis(raw: &str) -> Option<Timestamp> {
    let n: i64 = raw.trim().parse().ok()?;
    if n < 0 {
        return None;
    }
    if n >= 100_000_000_000 {
        from_epoch_millis(n)
    } else {
        from_epoch_seconds(n)
    }
}

fn request_id(headers: &HeaderMap, names: &[&str]) -> Option<String> {
    names
        .iter()
        .find_map(|n| header(headers, n))
        .map(|v| v.chars().take(128).collect())
}

/// GitHub REST: `x-ratelimit-*` headers, plus 403/429 triage.
pub fn github_rest(
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
    now: Timestamp,
    bounds: &WaitBounds,
) -> RateLimitSignal {
    let resource = header(headers, "x-ratelimit-resource").map(Bucket::new);
    let limit = header_u64(headers, "x-ratelimit-limit");
    let remaining = header_u64(headers, "x-ratelimit-remaining");
    let used = header_u64(headers, "x-ratelimit-used")
        .or_else(|| Some(limit?.checked_sub(remaining?)).flatten());
    let reset_at = header(headers, "x-ratelimit-reset").and_then(epoch_seconds_or_millis);
    let retry_after = parse_retry_after(header(headers, "retry-after"), now, bounds);
    let dimension = Some(resource.as_ref().map_or(Dimension::RestCore, |r| {
        Dimension::for_github_resource(r.as_str())
    }));
    let reason = triage_github(status, headers, body).map(|t| match t {
        GithubTriage::Primary => LimitReason::Primary,
        GithubTriage::Secondary => LimitReason::Secondary,
        GithubTriage::Permission => LimitReason::Permission,
    });
    RateLimitSignal {
        provider: Some(Provider::GitHub),
        resource,
        dimension,
        reason,
        retry_after,
        reset_at,
        limit,
        remaining,
        used,
        cost: None,
        node_count: None,
        request_id: request_id(headers, &["x-github-request-id"]),
        others: Vec::new(),
    }
}

/// GitHub GraphQL: the REST headers (GitHub sends them on `/graphql` too), the body's
/// `rateLimit { limit cost remaining used resetAt nodeCount }` wherever the query asked for it,
/// and `errors[].type` of `RATE_LIMITED` or `RATE_LIMIT` arriving with HTTP 200.
pub fn github_graphql(
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
    now: Timestamp,
    bounds: &WaitBounds,
) -> RateLimitSignal {
    let mut signal = github_rest(status, headers, body, now, bounds);
    if signal.resource.is_none() {
        signal.resource = Some(Bucket::graphql());
    }
    signal.dimension = Some(Dimension::GraphqlCost);
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(body) else {
        return signal;
    };
    if let Some(rl) = json.get("data").and_then(find_rate_limit_object) {
        let num = |k: &str| rl.get(k).and_then(serde_json::Value::as_u64);
        signal.limit = num("limit").or(signal.limit);
        signal.remaining = num("remaining").or(signal.remaining);
        signal.used = num("used").or(signal.used);
        signal.cost = num("cost");
        signal.node_count = num("nodeCount");
        if let Some(reset) = rl
            .get("resetAt")
            .and_then(serde_json::Value::as_str)
            .and_then(|s| s.parse::<Timestamp>().ok())
        {
            signal.reset_at = Some(reset);
        }
    }
    let rate_limited = json
        .get("errors")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|errors| {
            errors.iter().any(|e| {
                matches!(
                    e.get("type").and_then(serde_json::Value::as_str),
                    Some("RATE_LIMITED" | "RATE_LIMIT")
                )
            })
        });
    if rate_limited && signal.reason.is_none() {
        signal.reason = Some(LimitReason::Primary);
        signal.remaining = Some(0);
    }
    signal
}

/// Finds a `rateLimit` object among the top-level fields of `data` (aliases included: any
/// object carrying `remaining` and `resetAt`).
fn find_rate_limit_object(data: &serde_json::Value) -> Option<&serde_json::Value> {
    if let Some(rl) = data.get("rateLimit").filter(|v| v.is_object()) {
        return Some(rl);
    }
    data.as_object()?
        .values()
        .find(|v| v.get("remaining").is_some() && v.get("resetAt").is_some())
}

/// GitLab: `RateLimit-*` headers. 429 is the rate limit (primary). `RateLimit-*` headers come
/// on every response [gl-ipuser], so a 403 is a limit (secondary) only when a wait is announced
/// or the quota is spent; otherwise it is permission or a disabled feature.
pub fn gitlab(
    status: u16,
    headers: &HeaderMap,
    now: Timestamp,
    bounds: &WaitBounds,
) -> RateLimitSignal {
    let limit = header_u64(headers, "ratelimit-limit");
    let remaining = header_u64(headers, "ratelimit-remaining");
    let used = header_u64(headers, "ratelimit-observed")
        .or_else(|| Some(limit?.checked_sub(remaining?)).flatten());
    let reset_at = header(headers, "ratelimit-reset")
        .and_then(epoch_seconds_or_millis)
        .or_else(|| {
            header(headers, "ratelimit-resettime")
                .and_then(|v| httpdate::parse_http_date(v).ok())
                .and_then(|t| Timestamp::try_from(t).ok())
        });
    let retry_after = parse_retry_after(header(headers, "retry-after"), now, bounds);
    let throttled = retry_after.is_some() || remaining == Some(0);
    let reason = match status {
        429 => Some(LimitReason::Primary),
        403 if throttled => Some(LimitReason::Secondary),
        403 => Some(LimitReason::Permission),
        _ => None,
    };
    RateLimitSignal {
        provider: Some(Provider::GitLab),
        resource: None,
        dimension: Some(Dimension::RestCore),
        reason,
        retry_after,
        reset_at,
        limit,
        remaining,
        used,
        cost: None,
        node_count: None,
        request_id: request_id(headers, &["x-request-id"]),
        others: Vec::new(),
    }
}

/// Jira Cloud: `Retry-After` is authoritative on 429; without it the 429 waits for
/// `X-RateLimit-Reset`, an ISO 8601 instant sometimes without seconds [jr-rl]. `RateLimit-Reason`
/// says which limiter fired [jr-build]: the hourly quotas are primary (pause until the reset);
/// burst, per-issue writes and unknown reasons are secondary (slow down), and the governor
/// closes only the request's endpoint bucket for them (`governor::endpoint`). Jira does not
/// tell a permission 403 from a limit, so a 403 is not a signal.
pub fn jira(
    status: u16,
    headers: &HeaderMap,
    now: Timestamp,
    bounds: &WaitBounds,
) -> RateLimitSignal {
    let reset_at = header(headers, "x-ratelimit-reset").and_then(|v| v.parse::<Timestamp>().ok());
    let retry_after = parse_retry_after(header(headers, "retry-after"), now, bounds);
    let reason = (status == 429).then(|| jira_reason(header(headers, "ratelimit-reason")));
    // A 429 with neither a wait nor a future reset still waits the conservative default.
    let reset_ahead = reset_at.is_some_and(|r| r > now);
    let retry_after = match reason {
        Some(_) if !reset_ahead => retry_after.or(Some(bounds.default_wait)),
        _ => retry_after,
    };
    RateLimitSignal {
        provider: Some(Provider::Jira),
        resource: None,
        dimension: Some(Dimension::RestCore),
        reason,
        retry_after,
        reset_at,
        limit: header_u64(headers, "x-ratelimit-limit"),
        remaining: header_u64(headers, "x-ratelimit-remaining"),
        used: None,
        cost: None,
        node_count: None,
        request_id: request_id(headers, &["atl-traceid", "x-arequestid"]),
        // An OAuth app's hourly points, when the response states them.
        others: jira_points::app_points(headers, now).into_iter().collect(),
    }
}

/// The limit a Jira 429 names in `RateLimit-Reason`; none named is read as the quota.
fn jira_reason(value: Option<&str>) -> LimitReason {
    match value.map(str::to_ascii_lowercase).as_deref() {
        None | Some("jira-quota-global-based" | "jira-quota-tenant-based") => LimitReason::Primary,
        // Burst, per-issue writes, and values Atlassian has not documented [jr-rl].
        Some(_) => LimitReason::Secondary,
    }
}

/// Linear: `X-RateLimit-Requests-Limit/-Remaining/-Reset` (reset in epoch milliseconds). A
/// complexity rejection arrives as HTTP 400 and is never retryable; a 429, or a 400 whose
/// GraphQL error has code `RATELIMITED`, type `ratelimited` or `statusCode` 429, is a rate
/// limit [ln-rl] [ln-error] [ln-rl400].
pub fn linear(
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
    now: Timestamp,
    bounds: &WaitBounds,
) -> RateLimitSignal {
    let reset_at = header(headers, "x-ratelimit-requests-reset").and_then(epoch_seconds_or_millis);
    let retry_after = parse_retry_after(header(headers, "retry-after"), now, bounds);
    let reason = match status {
        429 => Some(LimitReason::Primary),
        400 => linear_400_reason(body),
        _ => None,
    };
    // The complexity bucket, when the response reports it: its own limit, remaining and reset,
    // and what this document cost.
    let complexity_limit = header_u64(headers, "x-ratelimit-complexity-limit");
    let complexity_remaining = header_u64(headers, "x-ratelimit-complexity-remaining");
    let complexity = (complexity_limit.is_some()
        || complexity_remaining.is_some()
        || headers.contains_key("x-complexity"))
    .then(|| RateLimitSignal {
        provider: Some(Provider::Linear),
        resource: Some(Bucket::new(LINEAR_COMPLEXITY)),
        dimension: Some(Dimension::GraphqlCost),
        reset_at: header(headers, "x-ratelimit-complexity-reset").and_then(epoch_seconds_or_millis),
        limit: complexity_limit,
        remaining: complexity_remaining,
        cost: header_u64(headers, "x-complexity"),
        ..RateLimitSignal::default()
    });
    RateLimitSignal {
        provider: Some(Provider::Linear),
        resource: None,
        dimension: Some(Dimension::GraphqlCost),
        reason,
        retry_after,
        reset_at,
        limit: header_u64(headers, "x-ratelimit-requests-limit"),
        remaining: header_u64(headers, "x-ratelimit-requests-remaining"),
        used: None,
        // A request costs its requests bucket one: the document's complexity is the other
        // bucket's cost, read above. Taken as the requests bucket's cost, it made the grant
        // rule keep ceiling × complexity requests in reserve and stall the run.
        cost: None,
        node_count: None,
        request_id: request_id(headers, &["x-request-id"]),
        others: complexity.into_iter().collect(),
    }
}

/// Linear's second bucket: complexity points (its first is requests, the request's own).
pub const LINEAR_COMPLEXITY: &str = "complexity";

/// Linear's first bucket: requests, one each.
pub const LINEAR_REQUESTS: &str = "requests";

fn linear_400_reason(body: &[u8]) -> Option<LimitReason> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    let errors = json.get("errors")?.as_array()?;
    let mut reason = None;
    for e in errors {
        let code = e
            .pointer("/extensions/code")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_ascii_uppercase();
        let message = e
            .get("message")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_ascii_lowercase();
        let kind = e
            .pointer("/extensions/type")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        let status = e
            .pointer("/extensions/statusCode")
            .and_then(serde_json::Value::as_u64);
        if code == "RATELIMITED" || kind.eq_ignore_ascii_case("ratelimited") || status == Some(429)
        {
            return Some(LimitReason::Primary);
        }
        if code.contains("COMPLEX")
            || message.contains("complexity")
            || message.contains("too complex")
        {
            reason = Some(LimitReason::Complexity);
        }
    }
    reason
}

/// LaunchDarkly's account-wide bucket: every request of every token of the account spends one
/// from its 10-second window (`X-Ratelimit-Global-Remaining`).
pub const LD_GLOBAL: &str = "global";

/// How a LaunchDarkly route's own bucket is named: `route:GET /api/v2/flags/{projectKey}`, the
/// method and the path template, so every project's flag pages share one bucket as they do at
/// LaunchDarkly (`X-Ratelimit-Route-Remaining`).
pub const LD_ROUTE_PREFIX: &str = "route:";

/// LaunchDarkly: the account's window (`X-Ratelimit-Global-Remaining`) is the main reading and
/// the route's (`X-Ratelimit-Route-Remaining`) an [`RateLimitSignal::others`] entry on `route`,
/// the request's route bucket ([`LD_ROUTE_PREFIX`]); `X-Ratelimit-Reset` (epoch milliseconds)
/// ends both. No limit is sent: the governor learns it (`governor::learned`). A 429 is a
/// deferral until `Retry-After` where sent, else until the reset; a 403 is a permission refusal
/// (a 401 is the client's bad credential), never a limit. A route reading without a route bucket to hold it is dropped rather
/// than spent on the global bucket.
pub fn launchdarkly(
    status: u16,
    headers: &HeaderMap,
    route: Option<&Bucket>,
    now: Timestamp,
    bounds: &WaitBounds,
) -> RateLimitSignal {
    let reset_at = header(headers, "x-ratelimit-reset")
        .and_then(|v| v.parse::<i64>().ok())
        .filter(|ms| *ms >= 0)
        .and_then(from_epoch_millis);
    let retry_after = parse_retry_after(header(headers, "retry-after"), now, bounds);
    let reason = match status {
        429 => Some(LimitReason::Primary),
        403 => Some(LimitReason::Permission),
        _ => None,
    };
    let route_reading = route
        .zip(header_u64(headers, "x-ratelimit-route-remaining"))
        .map(|(bucket, remaining)| RateLimitSignal {
            provider: Some(Provider::LaunchDarkly),
            resource: Some(bucket.clone()),
            dimension: Some(Dimension::RestCore),
            reason,
            retry_after,
            reset_at,
            remaining: Some(remaining),
            ..RateLimitSignal::default()
        });
    RateLimitSignal {
        provider: Some(Provider::LaunchDarkly),
        resource: Some(Bucket::new(LD_GLOBAL)),
        dimension: Some(Dimension::RestCore),
        reason,
        retry_after,
        reset_at,
        limit: None,
        remaining: header_u64(headers, "x-ratelimit-global-remaining"),
        used: None,
        cost: None,
        node_count: None,
        request_id: request_id(headers, &["x-request-id"]),
        others: route_reading.into_iter().collect(),
    }
}
