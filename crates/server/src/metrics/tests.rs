//! The exposition's shape, from hand-made totals.

use super::*;
use headroom_store::QuotaReading;
use headroom_store::metrics::{CredentialOwner, RateLimitEventCount, RequestCount};
use headroom_store::quota_history::StoredQuotaReading;

fn at(second: i64) -> Timestamp {
    Timestamp::from_second(second).unwrap_or(Timestamp::UNIX_EPOCH)
}

fn bucket(subject: &str, bucket: &str, remaining: u64) -> BucketNow {
    BucketNow {
        latest: StoredQuotaReading {
            id: 1,
            reading: QuotaReading {
                provider: "github".into(),
                host: "api.github.com".into(),
                subject: subject.into(),
                bucket: bucket.into(),
                limit: Some(5000),
                remaining: Some(remaining),
                used: Some(5000 - remaining),
                reset_at: Some(at(1_800_000_000)),
                in_flight: 1,
                waiting: 0,
                blocked_until: None,
                last_reason: None,
                process_id: "headroom:1".into(),
                observed_at: at(1_800_000_000),
            },
        },
        in_flight: 3,
        waiting: 2,
        live_processes: 2,
    }
}

fn event(subject: &str, kind: &str, count: u64) -> RateLimitEventCount {
    RateLimitEventCount {
        host: "api.github.com".into(),
        subject: subject.into(),
        kind: kind.into(),
        reason: String::new(),
        wait_reason: "in_flight_ceiling".into(),
        count,
    }
}

fn totals() -> StoreTotals {
    StoreTotals {
        rate_limit_events: vec![event("user:alice", "deferred", 4)],
        requests: vec![RequestCount {
            host: "api.github.com".into(),
            subject: "user:alice".into(),
            route_family: "events".into(),
            dimension: "rest_core".into(),
            requests: 7,
            units: 7,
        }],
        sync_runs: vec![("hibernating".into(), 1)],
        sync_pages: 12,
        sync_rows: 340,
        feed_events: vec![("created", 4), ("quarantined", 3)],
        credential_owners: vec![],
    }
}

/// Every family has its help and type; samples carry the identity's own name only, with
/// label values escaped.
#[test]
fn the_exposition_names_identities_and_escapes_labels() {
    let text = render(
        &[
            bucket("user:alice", "core", 1234),
            bucket("user:\"q\"", "graphql", 0),
        ],
        &totals(),
    );
    for line in [
        "# TYPE headroom_quota_remaining gauge",
        "headroom_quota_remaining{host=\"api.github.com\",subject=\"user:alice\",bucket=\"core\"} 1234",
        "headroom_quota_used{host=\"api.github.com\",subject=\"user:alice\",bucket=\"core\"} 3766",
        "headroom_quota_in_flight{host=\"api.github.com\",subject=\"user:alice\",bucket=\"core\"} 3",
        "headroom_quota_reset_timestamp_seconds{host=\"api.github.com\",subject=\"user:alice\",bucket=\"core\"} 1800000000",
        "subject=\"user:\\\"q\\\"\"",
        "headroom_rate_limit_events_total{host=\"api.github.com\",subject=\"user:alice\",kind=\"deferred\",reason=\"\",wait_reason=\"in_flight_ceiling\"} 4",
        "# TYPE headroom_requests_total counter",
        "headroom_requests_total{host=\"api.github.com\",subject=\"user:alice\",route_family=\"events\",dimension=\"rest_core\"} 7",
        "headroom_sync_runs{status=\"hibernating\"} 1",
        "headroom_sync_pages_total 12",
        "headroom_feed_events_total{outcome=\"quarantined\"} 3",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    for l in text.lines().filter(|l| l.starts_with("# TYPE")) {
        let mut words = l.split(' ').skip(2);
        let (name, kind) = (words.next().unwrap_or_default(), words.next());
        match kind {
            Some("counter") => assert!(name.ends_with("_total"), "{l}"),
            Some("gauge") => assert!(!name.ends_with("_total"), "{l}"),
            _ => panic!("neither a gauge nor a counter: {l}"),
        }
    }
    assert!(!text.contains("headroom:1"), "no process id in labels");
}

/// `used` falls back to limit minus remaining when the provider sent no count of its own.
#[test]
fn used_is_limit_minus_remaining_when_the_provider_sends_none() {
    let mut b = bucket("user:alice", "core", 4000);
    b.latest.reading.used = None;
    let text = render(&[b], &totals());
    assert!(
        text.contains(
            "headroom_quota_used{host=\"api.github.com\",subject=\"user:alice\",bucket=\"core\"} 1000"
        ),
        "{text}"
    );
}

/// An identity keyed by its credential before its owner was known is published under the
/// owner (its counts added, its newest reading winning), or not at all while the owner is
/// unknown: the fingerprint is never a label value.
#[test]
fn a_credential_keyed_identity_is_published_under_its_owner_never_its_fingerprint() {
    let provisional = "user:credential:628b0f3a9c1d2e47";
    let mut early = bucket(provisional, "core", 4999);
    early.latest.reading.observed_at = at(1_799_999_000);
    let stranger = bucket("user:credential:0123456789abcdef", "core", 10);
    let mut totals = totals();
    totals.rate_limit_events.extend([
        event(provisional, "deferred", 2),
        event("user:credential:0123456789abcdef", "refused", 9),
    ]);
    totals.credential_owners = vec![CredentialOwner {
        host: "api.github.com".into(),
        fingerprint: "628b0f3a9c1d2e47".into(),
        subject: "user:alice".into(),
    }];
    let text = render(
        &[early, bucket("user:alice", "core", 1234), stranger],
        &totals,
    );
    for line in [
        "headroom_quota_remaining{host=\"api.github.com\",subject=\"user:alice\",bucket=\"core\"} 1234",
        "headroom_quota_in_flight{host=\"api.github.com\",subject=\"user:alice\",bucket=\"core\"} 6",
        "headroom_rate_limit_events_total{host=\"api.github.com\",subject=\"user:alice\",kind=\"deferred\",reason=\"\",wait_reason=\"in_flight_ceiling\"} 6",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    assert_eq!(
        text.matches("headroom_quota_remaining{").count(),
        1,
        "{text}"
    );
    assert!(!text.contains("credential:"), "{text}");
    assert!(!text.contains("628b0f3a"), "{text}");
    assert!(!text.contains("kind=\"refused\""), "{text}");
}
