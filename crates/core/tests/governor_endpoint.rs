//! Jira's per-endpoint burst buckets in the governor: each `endpoint:` bucket paced on its own
//! at the configured rate (never more than the limit in any window, a request over it told
//! the exact instant a slot frees, never beyond a token bucket of the steady rate), and the
//! reaction to each `RateLimit-Reason` [jr-build] [jr-rl]: a burst or unknown reason closes
//! that endpoint only; a quota holds the whole identity until its reset.

#![allow(clippy::expect_used)]

use std::sync::Arc;

use headroom_core::clock::{ManualClock, SignedDuration, Timestamp};
use headroom_core::governor::{
    Acquire, BucketState, GovernorConfig, MemoryQuotaState, PaceLog, Permit, PointsLimit, Wait,
    WaitReason,
};
use headroom_core::signal::{self, LimitReason, Provider, RateLimitSignal, WaitBounds};
use headroom_core::{Bucket, Governor, QuotaKey, RequestKind, Subject};
use http::{HeaderMap, HeaderName, HeaderValue};
use proptest::prelude::*;

const START: i64 = 1_800_000_000;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(START + secs).expect("valid")
}

fn ms(millis: i64) -> Timestamp {
    Timestamp::from_millisecond(START * 1000 + millis).expect("valid")
}

fn site() -> QuotaKey {
    QuotaKey::new(
        Provider::Jira,
        "acme.atlassian.net",
        Subject::User("557058:abc".into()),
    )
}

fn endpoint(name: &str) -> Bucket {
    Bucket::new(&format!("endpoint:GET {name}"))
}

fn comments() -> Bucket {
    endpoint("/rest/api/3/issue/{key}/comment")
}

fn changelog() -> Bucket {
    endpoint("/rest/api/3/issue/{key}/changelog")
}

fn asks(endpoint: &Bucket) -> Vec<(Bucket, u32)> {
    vec![(Bucket::core(), 1), (endpoint.clone(), 1)]
}

fn jira(rate: Option<PointsLimit>) -> MemoryQuotaState {
    MemoryQuotaState::new(GovernorConfig {
        endpoint_rate: rate,
        ..GovernorConfig::for_provider(Provider::Jira)
    })
    .expect("valid config")
}

fn send(s: &MemoryQuotaState, endpoint: &Bucket, now: Timestamp) -> Acquire {
    s.acquire_all_now(&site(), &asks(endpoint), RequestKind::REST_READ, now)
        .expect("backend")
}

fn grant(outcome: Acquire) -> Permit {
    match outcome {
        Acquire::Grant(p) => p,
        Acquire::Wait(w) => panic!("expected a grant, got a wait: {w}"),
    }
}

fn wait(outcome: Acquire) -> Wait {
    match outcome {
        Acquire::Wait(w) => w,
        Acquire::Grant(p) => panic!("expected a wait, got {p:?}"),
    }
}

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.insert(
            HeaderName::from_bytes(k.as_bytes()).expect("name"),
            HeaderValue::from_str(v).expect("value"),
        );
    }
    h
}

/// A Jira 429 as `signal::jira` reads it at `now`.
fn jira_429(pairs: &[(&str, &str)], now: Timestamp) -> RateLimitSignal {
    signal::jira(429, &headers(pairs), now, &WaitBounds::default())
}

#[test]
fn jiras_steady_rate_is_paced_in_tenths_of_a_second() {
    let jira = GovernorConfig::for_provider(Provider::Jira);
    assert_eq!(
        jira.endpoint_rate,
        Some(PointsLimit {
            points: 10,
            period: SignedDuration::from_millis(100)
        })
    );
    assert_eq!(GovernorConfig::default().endpoint_rate, None);
    assert_eq!(
        GovernorConfig::for_provider(Provider::GitLab).endpoint_rate,
        None
    );
    // A rate that does not divide a tenth of a second is rounded down, never up.
    let fifteen = PointsLimit::paced_per_second(15).expect("paced");
    assert_eq!(fifteen.points, 1);
    assert_eq!(fifteen.period, SignedDuration::from_nanos(66_666_667));
    assert_eq!(PointsLimit::paced_per_second(0), None);
    let invalid = GovernorConfig {
        endpoint_rate: Some(PointsLimit {
            points: 0,
            period: SignedDuration::from_secs(1),
        }),
        ..jira
    };
    assert!(invalid.validate().is_err());
}

#[test]
fn an_endpoint_over_its_pace_waits_for_the_exact_instant_a_slot_frees_as_local_pacing() {
    let s = jira(PointsLimit::paced_per_second(10));
    let first = grant(send(&s, &comments(), ms(0)));
    drop(first);
    let w = wait(send(&s, &comments(), ms(30)));
    assert_eq!(w.until, ms(100), "{w}");
    // Pacing reads as the local points limit, which a stage sleeps through in place.
    assert!(
        matches!(w.reason, WaitReason::LocalPoints { limit, .. } if limit.points == 1),
        "{w}"
    );
    assert_eq!(
        w.reason.to_string(),
        "REST points limit reached (1 per 100ms)"
    );
    // Another endpoint and the core bucket alone are not held by it.
    grant(send(&s, &changelog(), ms(30)));
    grant(s.acquire_now(&site(), &Bucket::core(), 1, RequestKind::REST_READ, ms(30)));
    assert!(matches!(send(&s, &comments(), ms(99)), Acquire::Wait(_)));
    grant(send(&s, &comments(), ms(100)));
}

#[test]
fn unpaced_endpoints_are_not_held_back() {
    let s = jira(None);
    for i in 0..10 {
        grant(send(&s, &comments(), ms(i)));
    }
}

#[test]
fn a_jira_burst_429_closes_only_its_endpoint_never_the_identity() {
    let s = jira(None);
    let permit = grant(send(&s, &comments(), t(0)));
    let burst = jira_429(
        &[
            ("Retry-After", "2"),
            ("RateLimit-Reason", "jira-burst-based"),
            ("X-RateLimit-Limit", "100"),
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Reset", "2027-01-15T08:00:02Z"),
        ],
        t(0),
    );
    let routed = RateLimitSignal {
        resource: headroom_core::governor::endpoint::reacting_bucket(
            &burst,
            permit.bucket(),
            permit.also(),
        ),
        ..burst
    };
    assert_eq!(routed.resource, Some(comments()));
    s.observe_now(&permit, &routed, t(0));
    drop(permit);
    let w = wait(send(&s, &comments(), t(1)));
    assert_eq!(w.until, t(2));
    assert!(
        matches!(&w.reason, WaitReason::SecondaryBlock { bucket, .. } if *bucket == comments()),
        "{w}"
    );
    // Every other endpoint, and the core bucket alone, still go.
    grant(send(&s, &changelog(), t(1)));
    grant(s.acquire_now(&site(), &Bucket::core(), 1, RequestKind::REST_READ, t(1)));
    grant(send(&s, &comments(), t(2)));
}

#[tokio::test]
async fn a_burst_unknown_or_per_issue_reason_reaches_the_endpoint_through_the_governor() {
    for reason in [
        "jira-burst-based",
        "jira-per-issue-on-write",
        "jira-cost-based",
    ] {
        let clock = Arc::new(ManualClock::new(t(0)));
        let governor = Governor::new(Arc::new(jira(None)), clock.clone());
        let take = |e: Bucket| {
            let governor = governor.clone();
            async move {
                governor
                    .acquire_all(&site(), &asks(&e), RequestKind::REST_READ)
                    .await
                    .expect("backend")
            }
        };
        let permit = grant(take(comments()).await);
        let signal = jira_429(&[("Retry-After", "3"), ("RateLimit-Reason", reason)], t(0));
        assert_eq!(signal.reason, Some(LimitReason::Secondary), "{reason}");
        governor.observe(&permit, &signal).await.expect("backend");
        drop(permit);
        clock.advance(SignedDuration::from_secs(1));
        let w = wait(take(comments()).await);
        assert_eq!(w.until, t(3), "{reason}: {w}");
        grant(take(changelog()).await);
    }
}

#[tokio::test]
async fn a_jira_quota_429_holds_every_bucket_until_its_reset_read_without_seconds() {
    let clock = Arc::new(ManualClock::new(t(0)));
    let governor = Governor::new(Arc::new(jira(None)), clock.clone());
    let permit = grant(
        governor
            .acquire_all(&site(), &asks(&comments()), RequestKind::REST_READ)
            .await
            .expect("backend"),
    );
    // The hour resets at a minute boundary, written without seconds; Retry-After is shorter.
    let reset = "2027-01-15T08:10Z".parse::<Timestamp>().expect("minutes");
    let now = reset - SignedDuration::from_secs(600);
    clock.set(now);
    let quota = jira_429(
        &[
            ("Retry-After", "30"),
            ("RateLimit-Reason", "jira-quota-tenant-based"),
            ("X-RateLimit-Reset", "2027-01-15T08:10Z"),
        ],
        now,
    );
    assert_eq!(quota.reset_at, Some(reset));
    governor.observe(&permit, &quota).await.expect("backend");
    drop(permit);
    clock.set(now + SignedDuration::from_secs(60));
    for bucket in [comments(), changelog()] {
        let w = wait(
            governor
                .acquire_all(&site(), &asks(&bucket), RequestKind::REST_READ)
                .await
                .expect("backend"),
        );
        assert_eq!(w.until, reset, "{w}");
    }
    let w = wait(
        governor
            .acquire(&site(), &Bucket::core(), 1, RequestKind::REST_READ)
            .await
            .expect("backend"),
    );
    assert_eq!(w.until, reset, "{w}");
    clock.set(reset);
    grant(
        governor
            .acquire_all(&site(), &asks(&changelog()), RequestKind::REST_READ)
            .await
            .expect("backend"),
    );
}

/// A reset far beyond any hourly quota (garbage, or a clock gone wrong) holds the identity no
/// longer than the longest wait a signal may carry.
#[test]
fn a_jira_quota_reset_far_in_the_future_holds_no_longer_than_the_longest_wait() {
    let s = jira(None);
    let permit = grant(send(&s, &comments(), t(0)));
    let quota = jira_429(
        &[
            ("RateLimit-Reason", "jira-quota-global-based"),
            ("X-RateLimit-Reset", "2100-01-01T00:00Z"),
        ],
        t(0),
    );
    s.observe_now(&permit, &quota, t(0));
    drop(permit);
    let w = wait(send(&s, &changelog(), t(1)));
    assert_eq!(w.until, t(0) + WaitBounds::default().max_wait, "{w}");
}

/// State stored before endpoints were paced reads back, and a bucket without pacing writes
/// no `pace` at all.
#[test]
fn state_and_configuration_stored_before_endpoint_pacing_still_read() {
    let s = jira(PointsLimit::paced_per_second(100));
    grant(send(&s, &comments(), t(0)));
    let snapshot = s.snapshot_now(&site(), t(0));
    let json = serde_json::to_value(&snapshot).expect("serialize");
    let buckets = json["buckets"].as_array().expect("buckets");
    assert!(buckets[0].get("pace").is_none(), "{json}");
    assert_eq!(
        buckets[1]["pace"].as_array().map(Vec::len),
        Some(1),
        "{json}"
    );
    let old_bucket: BucketState =
        serde_json::from_value(buckets[0].clone()).expect("a bucket stored without `pace`");
    assert_eq!(old_bucket.pace, PaceLog::default());
    let mut old = serde_json::to_value(GovernorConfig::default()).expect("serialize");
    old.as_object_mut().expect("object").remove("endpoint_rate");
    let read: GovernorConfig = serde_json::from_value(old).expect("old configuration");
    assert_eq!(read.endpoint_rate, None);
}

/// A token bucket of `capacity` whole requests refilled at `points / period`, counted exactly
/// in requests × period-nanoseconds: whether it admits every grant of `grants`.
fn token_bucket_admits(grants: &[i128], limit: PointsLimit, capacity: i128) -> bool {
    let period = limit.period.as_nanos();
    let full = capacity * period;
    let (mut tokens, mut at) = (full, grants.first().copied().unwrap_or(0));
    for &g in grants {
        tokens = (tokens + (g - at) * i128::from(limit.points)).min(full);
        at = g;
        if tokens < period {
            return false;
        }
        tokens -= period;
    }
    true
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Requests arriving at random, each waiting until the instant it is told when refused:
    /// no half-open window of the period ever holds more than the limit, every refusal names
    /// the first instant that admits it (not a nanosecond earlier), and what is admitted never
    /// empties a token bucket holding just the window's points at the same rate — so pacing at
    /// Jira's steady rate never meets its burst limit, whatever the buffer above it.
    #[test]
    fn pacing_never_exceeds_the_rate_in_any_window_nor_a_token_bucket_of_it(
        rate in 1u32..400,
        gaps in proptest::collection::vec(0i64..40_000_000, 1..300),
    ) {
        let limit = PointsLimit::paced_per_second(rate).expect("paced");
        let mut log = PaceLog::default();
        let mut granted: Vec<i128> = Vec::new();
        let mut now = t(0);
        for gap in gaps {
            now += SignedDuration::from_nanos(gap);
            if let Some(until) = log.check(limit, now) {
                prop_assert!(until > now);
                prop_assert!(log.check(limit, until - SignedDuration::from_nanos(1)).is_some());
                now = until;
            }
            prop_assert_eq!(log.check(limit, now), None);
            log.record(limit, now);
            granted.push(now.as_nanosecond());
        }
        let period = limit.period.as_nanos();
        for (i, &start) in granted.iter().enumerate() {
            let within = granted[i..].iter().take_while(|&&g| g < start + period).count();
            prop_assert!(within <= limit.points as usize, "{} in a window from {}", within, start);
        }
        prop_assert!(token_bucket_admits(&granted, limit, i128::from(limit.points)));
    }

    /// Through the governor (every request spends `core` and its endpoint), several endpoints
    /// at once: each is paced on its own, a wait names the instant its endpoint frees, and an
    /// endpoint is never held back by another's pace.
    #[test]
    fn each_endpoint_is_paced_on_its_own_through_the_grant_rule(
        picks in proptest::collection::vec((0usize..3, 0i64..30), 1..200),
    ) {
        let limit = PointsLimit::paced_per_second(50).expect("paced");
        let s = jira(Some(limit));
        let endpoints = [comments(), changelog(), endpoint("/rest/api/3/issue/{key}/worklog")];
        let mut granted: Vec<Vec<i128>> = vec![Vec::new(); 3];
        let mut now = t(0);
        for (which, gap_ms) in picks {
            now += SignedDuration::from_millis(gap_ms);
            let outcome = match send(&s, &endpoints[which], now) {
                Acquire::Grant(p) => Acquire::Grant(p),
                Acquire::Wait(w) => {
                    let is_pacing = matches!(w.reason, WaitReason::LocalPoints { .. });
                    prop_assert!(is_pacing, "{}", w);
                    let expected = granted[which][granted[which].len() - limit.points as usize];
                    prop_assert_eq!(w.until.as_nanosecond(), expected + limit.period.as_nanos());
                    now = w.until;
                    send(&s, &endpoints[which], now)
                }
            };
            let permit = match outcome {
                Acquire::Grant(p) => p,
                Acquire::Wait(w) => return Err(TestCaseError::fail(format!("still waiting: {w}"))),
            };
            drop(permit);
            granted[which].push(now.as_nanosecond());
        }
        for grants in &granted {
            prop_assert!(token_bucket_admits(grants, limit, i128::from(limit.points)));
        }
    }
}
