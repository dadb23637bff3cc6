//! GitHub's 403/429 triage: primary limit, secondary limit, or a permission problem.
//!
//! GitHub answers a spent quota, a burst or abuse limit, and a plain "you may not" with the
//! same status codes; only the body and headers tell them apart. Getting this wrong either
//! spins forever on a permission error or gives up on a limit that would have lifted.

use http::HeaderMap;

use crate::signal::{header, header_u64};

/// What a 403 or 429 from GitHub means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GithubTriage {
    /// The primary quota is spent; wait for its reset.
    Primary,
    /// A secondary (abuse, burst, concurrency, content-creation) limit; back off and retry.
    Secondary,
    /// Permission, SAML SSO, or another refusal with no rate-limit markers: never retried.
    Permission,
}

/// Wording GitHub uses for secondary limits, current and historical, lowercase.
const SECONDARY_WORDING: &[&str] = &[
    "secondary rate limit",
    "abuse detection mechanism",
    "temporarily blocked from content creation",
];

/// Wording GitHub uses for the primary limit, lowercase.
const PRIMARY_WORDING: &[&str] = &[
    "api rate limit exceeded",
    "api rate limit already exceeded",
    "rate limit exceeded for",
];

/// Classifies a 403 or 429; other statuses are not a triage question and give `None`.
///
/// Order, as GitHub documents it: the body's wording, then `retry-after`, then
/// `x-ratelimit-remaining: 0`; a 429 with none of these is still a limit (secondary, to be
/// backed off exponentially); a 403 with none of these is a permission problem.
pub fn triage_github(status: u16, headers: &HeaderMap, body: &[u8]) -> Option<GithubTriage> {
    if status != 403 && status != 429 {
        return None;
    }
    let message = body_message(body);
    if SECONDARY_WORDING.iter().any(|w| message.contains(w)) {
        return Some(GithubTriage::Secondary);
    }
    if PRIMARY_WORDING.iter().any(|w| message.contains(w)) {
        return Some(GithubTriage::Primary);
    }
    if header(headers, "retry-after").is_some() {
        return Some(GithubTriage::Secondary);
    }
    if header_u64(headers, "x-ratelimit-remaining") == Some(0) {
        return Some(GithubTriage::Primary);
    }
    if status == 429 {
        return Some(GithubTriage::Secondary);
    }
    Some(GithubTriage::Permission)
}

/// The lowercase text to search for wording: the JSON `message` when the body is GitHub's
/// error object, else the body itself (lossily decoded, bounded).
fn body_message(body: &[u8]) -> String {
    let text = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(json) => match json.get("message").and_then(serde_json::Value::as_str) {
            Some(m) => m.to_owned(),
            None => String::from_utf8_lossy(&body[..body.len().min(8192)]).into_owned(),
        },
        Err(_) => String::from_utf8_lossy(&body[..body.len().min(8192)]).into_owned(),
    };
    text.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    fn check(
        status: u16,
        pairs: &[(&'static str, &'static str)],
        body: &str,
        expect: Option<GithubTriage>,
    ) {
        assert_eq!(
            triage_github(status, &headers(pairs), body.as_bytes()),
            expect,
            "status {status}, headers {pairs:?}, body {body}"
        );
    }

    const DOC: &str = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api";

    #[test]
    fn primary_bodies_from_github_facts() {
        let exhausted = [
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-limit", "5000"),
            ("x-ratelimit-reset", "1700003600"),
        ];
        for msg in [
            "API rate limit exceeded for user ID 123.",
            "API rate limit exceeded for installation ID 456.",
            "API rate limit exceeded for 1.2.3.4. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)",
            "API rate limit already exceeded for user ID 123.",
        ] {
            let body = serde_json::json!({"message": msg, "documentation_url": DOC}).to_string();
            check(403, &exhausted, &body, Some(GithubTriage::Primary));
            check(429, &exhausted, &body, Some(GithubTriage::Primary));
            // The wording alone is enough, even when a proxy stripped the headers.
            check(403, &[], &body, Some(GithubTriage::Primary));
        }
    }

    #[test]
    fn secondary_bodies_from_github_facts() {
        for msg in [
            "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID ABCD:1234.",
            "You have exceeded a secondary rate limit and have been temporarily blocked from content creation. Please retry your request again later.",
            "You have triggered an abuse detection mechanism. Please wait a few minutes before you try again.",
        ] {
            let body = serde_json::json!({"message": msg, "documentation_url": DOC}).to_string();
            // Secondary responses may carry no x-ratelimit headers at all…
            check(403, &[], &body, Some(GithubTriage::Secondary));
            // …or carry them with remaining > 0.
            check(
                403,
                &[
                    ("x-ratelimit-remaining", "4321"),
                    ("x-ratelimit-limit", "5000"),
                ],
                &body,
                Some(GithubTriage::Secondary),
            );
            check(
                429,
                &[("retry-after", "30")],
                &body,
                Some(GithubTriage::Secondary),
            );
        }
    }

    #[test]
    fn retry_after_without_wording_is_secondary() {
        check(
            403,
            &[("retry-after", "60")],
            r#"{"message":"Forbidden"}"#,
            Some(GithubTriage::Secondary),
        );
    }

    #[test]
    fn remaining_zero_without_wording_is_primary() {
        check(
            403,
            &[("x-ratelimit-remaining", "0")],
            "",
            Some(GithubTriage::Primary),
        );
    }

    #[test]
    fn bare_429_is_secondary_and_bare_403_is_permission() {
        check(429, &[], "", Some(GithubTriage::Secondary));
        check(
            403,
            &[("x-ratelimit-remaining", "4999")],
            r#"{"message":"Resource not accessible by integration","documentation_url":"https://docs.github.com/rest"}"#,
            Some(GithubTriage::Permission),
        );
        check(
            403,
            &[],
            r#"{"message":"Resource protected by organization SAML enforcement. You must grant your Personal Access token access to this organization."}"#,
            Some(GithubTriage::Permission),
        );
        check(
            403,
            &[],
            "<html>not json</html>",
            Some(GithubTriage::Permission),
        );
    }

    #[test]
    fn other_statuses_are_not_triaged() {
        for status in [200, 304, 401, 404, 422, 500, 502] {
            check(status, &[("x-ratelimit-remaining", "0")], "", None);
        }
    }
}
