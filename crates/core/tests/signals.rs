//! Parsers on realistic header sets, one `check` per provider dialect.

use headroom_core::Bucket;
use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_core::signal::{self, Dimension, LimitReason, Provider, RateLimitSignal, WaitBounds};
use http::{HeaderMap, HeaderName, HeaderValue};

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(
            HeaderName::from_bytes(k.as_bytes()).expect("valid name"),
            HeaderValue::from_str(v).expect("valid value"),
        );
    }
    h
}

fn now() -> Timestamp {
    // 2026-11-30T14:00:00Z
    Timestamp::from_second(1_796_047_200).expect("valid")
}

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).expect("valid")
}

/// A 200 from `GET /repos/o/r` as GitHub sends it.
#[test]
fn github_rest_success_reading() {
    let h = headers(&[
        ("x-ratelimit-limit", "5000"),
        ("x-ratelimit-remaining", "4987"),
        ("x-ratelimit-reset", "1796050800"),
        ("x-ratelimit-used", "13"),
        ("x-ratelimit-resource", "core"),
        ("x-github-request-id", "C2F4:2B7A:1A2B3C:1B2C3D:6746F0A0"),
        ("x-github-api-version-selected", "2022-11-28"),
    ]);
    let s = signal::github_rest(200, &h, b"{}", now(), &WaitBounds::default());
    assert_eq!(
        s,
        RateLimitSignal {
            provider: Some(Provider::GitHub),
            resource: Some(Bucket::core()),
            dimension: Some(Dimension::RestCore),
            reason: None,
            retry_after: None,
            reset_at: Some(at(1_796_050_800)),
            limit: Some(5000),
            remaining: Some(4987),
            used: Some(13),
            cost: None,
            node_count: None,
            request_id: Some("C2F4:2B7A:1A2B3C:1B2C3D:6746F0A0".into()),
            others: Vec::new(),
        }
    );
    assert!(!s.is_rate_limited());
}

#[test]
fn github_rest_search_resource_and_unauthenticated_limits() {
    let h = headers(&[
        ("X-RateLimit-Limit", "10"),
        ("X-RateLimit-Remaining", "9"),
        ("X-RateLimit-Reset", "1796047260"),
        ("X-RateLimit-Used", "1"),
        ("X-RateLimit-Resource", "search"),
    ]);
    let s = signal::github_rest(200, &h, b"", now(), &WaitBounds::default());
    assert_eq!(s.resource, Some(Bucket::search()));
    assert_eq!(s.dimension, Some(Dimension::Search));
    assert_eq!((s.limit, s.remaining, s.used), (Some(10), Some(9), Some(1)));
}

#[test]
fn github_rest_primary_exhaustion() {
    let h = headers(&[
        ("x-ratelimit-limit", "60"),
        ("x-ratelimit-remaining", "0"),
        ("x-ratelimit-reset", "1796049000"),
        ("x-ratelimit-used", "60"),
        ("x-ratelimit-resource", "core"),
    ]);
    let body = br#"{"message":"API rate limit exceeded for 203.0.113.7. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)","documentation_url":"https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"}"#;
    let s = signal::github_rest(403, &h, body, now(), &WaitBounds::default());
    assert_eq!(s.reason, Some(LimitReason::Primary));
    assert!(s.is_rate_limited());
    assert_eq!(s.not_before(now()), Some(at(1_796_049_000)));
}

#[test]
fn github_rest_secondary_with_retry_after_and_no_rate_headers() {
    let h = headers(&[("retry-after", "45"), ("content-type", "application/json")]);
    let body = br#"{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/free-pro-team@latest/rest/overview/resources-in-the-rest-api#secondary-rate-limits"}"#;
    let s = signal::github_rest(403, &h, body, now(), &WaitBounds::default());
    assert_eq!(s.reason, Some(LimitReason::Secondary));
    assert_eq!(s.retry_after, Some(SignedDuration::from_secs(45)));
    assert_eq!(s.remaining, None);
    assert_eq!(s.not_before(now()), Some(at(1_796_047_245)));
}

#[test]
fn github_rest_permission_is_not_a_limit() {
    let h = headers(&[
        ("x-ratelimit-remaining", "4999"),
        ("x-ratelimit-limit", "5000"),
    ]);
    let s = signal::github_rest(
        403,
        &h,
        br#"{"message":"Must have admin rights to Repository.","documentation_url":"https://docs.github.com/rest"}"#,
        now(),
        &WaitBounds::default(),
    );
    assert_eq!(s.reason, Some(LimitReason::Permission));
    assert!(!s.is_rate_limited());
}

#[test]
fn github_graphql_body_rate_limit() {
    let h = headers(&[
        ("x-ratelimit-limit", "5000"),
        ("x-ratelimit-remaining", "4990"),
        ("x-ratelimit-reset", "1796050800"),
        ("x-ratelimit-used", "10"),
        ("x-ratelimit-resource", "graphql"),
    ]);
    let body = br#"{"data":{"organization":{"login":"acme"},"rateLimit":{"limit":5000,"cost":3,"remaining":4987,"used":13,"resetAt":"2026-11-30T15:00:00Z","nodeCount":251}}}"#;
    let s = signal::github_graphql(200, &h, body, now(), &WaitBounds::default());
    assert_eq!(s.resource, Some(Bucket::graphql()));
    assert_eq!(s.dimension, Some(Dimension::GraphqlCost));
    assert_eq!(s.cost, Some(3));
    assert_eq!(s.node_count, Some(251));
    assert_eq!((s.remaining, s.used), (Some(4987), Some(13)));
    assert_eq!(
        s.reset_at,
        Some("2026-11-30T15:00:00Z".parse().expect("valid"))
    );
    assert_eq!(s.reason, None);
}

#[test]
fn github_graphql_rate_limited_arrives_as_200() {
    for kind in ["RATE_LIMITED", "RATE_LIMIT"] {
        let body = format!(
            r#"{{"errors":[{{"type":"{kind}","code":"graphql_rate_limit","message":"API rate limit already exceeded for user ID 123."}}]}}"#
        );
        let h = headers(&[
            ("x-ratelimit-reset", "1796050800"),
            ("x-ratelimit-resource", "graphql"),
        ]);
        let s = signal::github_graphql(200, &h, body.as_bytes(), now(), &WaitBounds::default());
        assert_eq!(s.reason, Some(LimitReason::Primary), "{kind}");
        assert_eq!(s.remaining, Some(0));
        assert_eq!(s.not_before(now()), Some(at(1_796_050_800)));
    }
    // Other GraphQL errors are not rate limits.
    let s = signal::github_graphql(
        200,
        &HeaderMap::new(),
        br#"{"errors":[{"type":"NOT_FOUND","message":"Could not resolve to a Repository"}]}"#,
        now(),
        &WaitBounds::default(),
    );
    assert_eq!(s.reason, None);
}

#[test]
fn gitlab_headers() {
    let h = headers(&[
        ("RateLimit-Limit", "2000"),
        ("RateLimit-Observed", "2000"),
        ("RateLimit-Remaining", "0"),
        ("RateLimit-Reset", "1796047260"),
        ("RateLimit-ResetTime", "Mon, 30 Nov 2026 14:01:00 GMT"),
        ("Retry-After", "60"),
    ]);
    let s = signal::gitlab(429, &h, now(), &WaitBounds::default());
    assert_eq!(s.provider, Some(Provider::GitLab));
    assert_eq!(s.reason, Some(LimitReason::Primary));
    assert_eq!(
        (s.limit, s.remaining, s.used),
        (Some(2000), Some(0), Some(2000))
    );
    assert_eq!(s.reset_at, Some(at(1_796_047_260)));
    assert_eq!(s.retry_after, Some(SignedDuration::from_secs(60)));

    let s = signal::gitlab(403, &h, now(), &WaitBounds::default());
    assert_eq!(
        s.reason,
        Some(LimitReason::Secondary),
        "403 with rate-limit headers"
    );
    let s = signal::gitlab(403, &HeaderMap::new(), now(), &WaitBounds::default());
    assert_eq!(s.reason, Some(LimitReason::Permission), "plain 403");
    // Only the reset-time header: parsed from the HTTP date.
    let h = headers(&[("RateLimit-ResetTime", "Mon, 30 Nov 2026 14:01:00 GMT")]);
    assert_eq!(
        signal::gitlab(200, &h, now(), &WaitBounds::default()).reset_at,
        Some(at(1_796_047_260))
    );
}

#[test]
fn jira_iso_reset_and_authoritative_retry_after() {
    let h = headers(&[
        ("Retry-After", "17"),
        ("X-RateLimit-Reset", "2025-10-08T15:00:00Z"),
        ("X-RateLimit-Limit", "350"),
        ("X-RateLimit-Remaining", "0"),
    ]);
    let s = signal::jira(429, &h, now(), &WaitBounds::default());
    assert_eq!(s.reason, Some(LimitReason::Primary));
    assert_eq!(s.retry_after, Some(SignedDuration::from_secs(17)));
    assert_eq!(
        s.reset_at,
        Some("2025-10-08T15:00:00Z".parse().expect("valid"))
    );
    // Retry-After wins over the reset for when to come back.
    assert_eq!(s.not_before(now()), Some(at(1_796_047_217)));
    // A 429 without Retry-After still waits the conservative default.
    let s = signal::jira(429, &HeaderMap::new(), now(), &WaitBounds::default());
    assert_eq!(s.retry_after, Some(SignedDuration::from_secs(60)));
    // A Jira 403 is not classified as a limit.
    assert_eq!(
        signal::jira(403, &HeaderMap::new(), now(), &WaitBounds::default()).reason,
        None
    );
}

/// Linear reports two budgets on every answer: requests (the signal itself) and complexity
/// (a second reading naming its bucket), each with its own limit, remaining and reset.
#[test]
fn a_linear_answer_reads_its_complexity_bucket_beside_its_requests() {
    let h = headers(&[
        ("X-RateLimit-Requests-Limit", "2500"),
        ("X-RateLimit-Requests-Remaining", "2400"),
        ("X-RateLimit-Requests-Reset", "1796050800000"),
        ("X-RateLimit-Complexity-Limit", "3000000"),
        ("X-RateLimit-Complexity-Remaining", "2990000"),
        ("X-RateLimit-Complexity-Reset", "1796050860000"),
        ("X-Complexity", "102"),
    ]);
    let s = signal::linear(200, &h, b"{}", now(), &WaitBounds::default());
    assert_eq!((s.limit, s.remaining), (Some(2500), Some(2400)));
    assert_eq!(s.others.len(), 1);
    let c = &s.others[0];
    assert_eq!(c.resource.as_ref().map(|b| b.as_str()), Some("complexity"));
    assert_eq!((c.limit, c.remaining), (Some(3_000_000), Some(2_990_000)));
    assert_eq!(c.reset_at, Some(at(1_796_050_860)));
    assert_eq!(c.cost, Some(102));
    // No complexity headers, no second reading.
    let bare = headers(&[("X-RateLimit-Requests-Remaining", "1")]);
    assert!(
        signal::linear(200, &bare, b"{}", now(), &WaitBounds::default())
            .others
            .is_empty()
    );
}

#[test]
fn linear_requests_headers_and_complexity() {
    let h = headers(&[
        ("X-RateLimit-Requests-Limit", "1500"),
        ("X-RateLimit-Requests-Remaining", "1499"),
        ("X-RateLimit-Requests-Reset", "1796050800000"),
        ("X-Complexity", "102"),
    ]);
    let s = signal::linear(200, &h, b"{}", now(), &WaitBounds::default());
    assert_eq!((s.limit, s.remaining), (Some(1500), Some(1499)));
    assert_eq!(s.reset_at, Some(at(1_796_050_800)), "epoch milliseconds");
    // The document's complexity is what the complexity bucket spent; the request cost its
    // own bucket one.
    assert_eq!(s.cost, None);
    assert_eq!(s.others.first().and_then(|c| c.cost), Some(102));
    assert_eq!(s.reason, None);

    let complex = br#"{"errors":[{"message":"Query too complex - complexity 12000 exceeds the limit of 10000","extensions":{"code":"INVALID_INPUT"}}]}"#;
    let s = signal::linear(400, &h, complex, now(), &WaitBounds::default());
    assert_eq!(s.reason, Some(LimitReason::Complexity));
    assert!(
        !s.reason.expect("set").is_retryable(),
        "complexity is never retried"
    );

    let limited =
        br#"{"errors":[{"message":"Rate limit exceeded","extensions":{"code":"RATELIMITED"}}]}"#;
    assert_eq!(
        signal::linear(400, &h, limited, now(), &WaitBounds::default()).reason,
        Some(LimitReason::Primary)
    );
    assert_eq!(
        signal::linear(429, &h, b"", now(), &WaitBounds::default()).reason,
        Some(LimitReason::Primary)
    );
    // A 400 about something else is just a bad request.
    assert_eq!(
        signal::linear(
            400,
            &h,
            b"{\"errors\":[{\"message\":\"bad\"}]}",
            now(),
            &WaitBounds::default()
        )
        .reason,
        None
    );
}

#[test]
fn launchdarkly_route_remaining_and_millisecond_reset() {
    let h = headers(&[
        ("X-Ratelimit-Route-Remaining", "3"),
        ("X-Ratelimit-Global-Remaining", "90"),
        ("X-Ratelimit-Reset", "1796047230000"),
        ("Retry-After", "30"),
    ]);
    let route = Bucket::new("route:GET /api/v2/flags/{projectKey}");
    let s = signal::launchdarkly(429, &h, Some(&route), now(), &WaitBounds::default());
    assert_eq!(
        s.remaining,
        Some(90),
        "the main reading is the account's window"
    );
    assert_eq!(s.resource, Some(Bucket::new(signal::LD_GLOBAL)));
    assert_eq!(s.limit, None, "LaunchDarkly sends no limit");
    assert_eq!(s.reset_at, Some(at(1_796_047_230)));
    assert_eq!(s.reason, Some(LimitReason::Primary));
    assert_eq!(s.retry_after, Some(SignedDuration::from_secs(30)));
    assert_eq!(s.others.len(), 1);
    assert_eq!(s.others[0].resource, Some(route.clone()));
    assert_eq!(s.others[0].remaining, Some(3));
    assert_eq!(s.others[0].reset_at, Some(at(1_796_047_230)));
    assert_eq!(
        signal::launchdarkly(403, &h, Some(&route), now(), &WaitBounds::default()).reason,
        Some(LimitReason::Permission)
    );
    // Without a route bucket to hold it, the route's reading is dropped, never put on global.
    let unrouted = signal::launchdarkly(200, &h, None, now(), &WaitBounds::default());
    assert!(unrouted.others.is_empty());
    assert_eq!(unrouted.remaining, Some(90));
}

#[test]
fn retry_after_forms_and_garbage() {
    let bounds = WaitBounds::default();
    let parse = |v: &str| signal::parse_retry_after(Some(v), now(), &bounds);
    assert_eq!(signal::parse_retry_after(None, now(), &bounds), None);
    assert_eq!(parse("120"), Some(SignedDuration::from_secs(120)));
    assert_eq!(parse(" 7 "), Some(SignedDuration::from_secs(7)));
    assert_eq!(parse("1.5"), Some(SignedDuration::from_millis(1500)));
    // HTTP-date, in the future and in the past.
    assert_eq!(
        parse("Mon, 30 Nov 2026 14:02:00 GMT"),
        Some(SignedDuration::from_secs(120))
    );
    assert_eq!(
        parse("Mon, 30 Nov 2026 13:00:00 GMT"),
        Some(SignedDuration::ZERO)
    );
    // Garbage, negative, non-finite: the conservative default.
    for garbage in [
        "soon",
        "-5",
        "-0.5",
        "NaN",
        "inf",
        "-inf",
        "1e400",
        "0x10",
        "",
        "Tomorrow, 99 Foo",
    ] {
        assert_eq!(
            parse(garbage),
            Some(SignedDuration::from_secs(60)),
            "{garbage:?}"
        );
    }
    // Enormous: clamped to the maximum wait.
    for huge in [
        "99999999999999999999999",
        "18446744073709551615",
        "9223372036854775807",
        "1e300",
    ] {
        assert_eq!(parse(huge), Some(bounds.max_wait), "{huge:?}");
    }
    // In place, never more than five minutes.
    assert_eq!(
        bounds.in_place(SignedDuration::from_hours(1)),
        SignedDuration::from_secs(300)
    );
    assert_eq!(
        bounds.in_place(SignedDuration::from_secs(-3)),
        SignedDuration::ZERO
    );
}

#[test]
fn garbage_rate_headers_degrade_to_unknown() {
    let h = headers(&[
        ("x-ratelimit-limit", "lots"),
        ("x-ratelimit-remaining", "-1"),
        ("x-ratelimit-reset", "99999999999999999999999999"),
        ("x-ratelimit-used", "1.5"),
        ("retry-after", "NaN"),
    ]);
    let s = signal::github_rest(429, &h, b"\xff\xfe not json", now(), &WaitBounds::default());
    assert_eq!(
        (s.limit, s.remaining, s.used, s.reset_at),
        (None, None, None, None)
    );
    assert_eq!(s.retry_after, Some(SignedDuration::from_secs(60)));
    assert_eq!(s.reason, Some(LimitReason::Secondary));
}

/// The provider's `Date` against our clock: ahead, behind, in step, and unreadable.
#[test]
fn date_skew_reads_the_date_header_against_the_local_clock() {
    // now() is Mon, 30 Nov 2026 14:00:00 GMT.
    let date = |v: &str| headers(&[("date", v)]);
    let skew = |v: &str, received: Timestamp| signal::date_skew(&date(v), received);
    assert_eq!(
        skew("Mon, 30 Nov 2026 14:00:00 GMT", now()),
        Some(SignedDuration::ZERO)
    );
    assert_eq!(
        skew("Mon, 30 Nov 2026 14:00:03 GMT", now()),
        Some(SignedDuration::from_secs(3)),
        "the provider's clock is ahead"
    );
    assert_eq!(
        skew(
            "Mon, 30 Nov 2026 13:59:59 GMT",
            now() + SignedDuration::from_millis(400)
        ),
        Some(SignedDuration::from_millis(-1400)),
        "behind"
    );
    assert_eq!(skew("yesterday", now()), None);
    assert_eq!(signal::date_skew(&HeaderMap::new(), now()), None);
}

/// GitLab sends `RateLimit-*` on every response [gl-ipuser]: a 403 carrying them with quota
/// left and no `Retry-After` is a permission refusal, not a throttle.
#[test]
fn a_gitlab_403_with_quota_left_and_no_retry_after_is_a_permission_refusal() {
    let healthy = headers(&[
        ("RateLimit-Limit", "2000"),
        ("RateLimit-Observed", "3"),
        ("RateLimit-Remaining", "1997"),
        ("RateLimit-Reset", "1796047260"),
    ]);
    let s = signal::gitlab(403, &healthy, now(), &WaitBounds::default());
    assert_eq!(s.reason, Some(LimitReason::Permission));
    // Quota spent, or a wait announced, still qualifies the 403 as a limit.
    let spent = headers(&[("RateLimit-Limit", "2000"), ("RateLimit-Remaining", "0")]);
    assert_eq!(
        signal::gitlab(403, &spent, now(), &WaitBounds::default()).reason,
        Some(LimitReason::Secondary)
    );
    let waiting = headers(&[("RateLimit-Remaining", "12"), ("Retry-After", "30")]);
    assert_eq!(
        signal::gitlab(403, &waiting, now(), &WaitBounds::default()).reason,
        Some(LimitReason::Secondary)
    );
}

/// `RateLimit-Reason` names the limiter that fired [jr-build] [jr-rl]: the hourly quotas pause
/// everything until the reset (primary); burst, per-issue writes and unknown reasons slow down
/// and come back (secondary).
#[test]
fn a_jira_429_is_steered_by_its_ratelimit_reason() {
    let reason = |r: &str| {
        let h = headers(&[("Retry-After", "5"), ("RateLimit-Reason", r)]);
        signal::jira(429, &h, now(), &WaitBounds::default()).reason
    };
    assert_eq!(
        reason("jira-quota-global-based"),
        Some(LimitReason::Primary)
    );
    assert_eq!(
        reason("jira-quota-tenant-based"),
        Some(LimitReason::Primary)
    );
    assert_eq!(reason("jira-burst-based"), Some(LimitReason::Secondary));
    assert_eq!(
        reason("jira-per-issue-on-write"),
        Some(LimitReason::Secondary)
    );
    assert_eq!(reason("jira-cost-based-new"), Some(LimitReason::Secondary));
    // Without the header, still a limit.
    let h = headers(&[("Retry-After", "5")]);
    assert_eq!(
        signal::jira(429, &h, now(), &WaitBounds::default()).reason,
        Some(LimitReason::Primary)
    );
}

/// A gateway 429 without `Retry-After` comes back at `X-RateLimit-Reset` [jr-rl], which may
/// lack seconds (`2026-03-26T16:00Z`), rather than after an invented default.
#[test]
fn a_jira_429_without_retry_after_waits_for_its_reset() {
    let h = headers(&[
        ("X-RateLimit-Limit", "100"),
        ("X-RateLimit-Remaining", "0"),
        ("X-RateLimit-Reset", "2026-11-30T14:05Z"),
    ]);
    let s = signal::jira(429, &h, now(), &WaitBounds::default());
    assert_eq!(s.reset_at, Some(at(1_796_047_500)), "minutes, no seconds");
    assert_eq!(s.retry_after, None);
    assert_eq!(s.not_before(now()), Some(at(1_796_047_500)));
}

/// Linear's SDK keys on `extensions.type == "ratelimited"`, and an observed body carried
/// `extensions.statusCode: 429` [ln-error] [ln-rl400]: all of them are rate limits.
#[test]
fn a_linear_400_typed_ratelimited_or_carrying_status_429_is_a_rate_limit() {
    let h = HeaderMap::new();
    for body in [
        br#"{"errors":[{"message":"Too many","extensions":{"type":"ratelimited"}}]}"#.as_slice(),
        br#"{"errors":[{"message":"Too many","extensions":{"statusCode":429}}]}"#.as_slice(),
    ] {
        assert_eq!(
            signal::linear(400, &h, body, now(), &WaitBounds::default()).reason,
            Some(LimitReason::Primary),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
}
