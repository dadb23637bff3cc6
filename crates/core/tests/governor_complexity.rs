//! A complexity bucket (Linear's points: a leaky bucket its identity's own requests drain) under
//! the grant rule: the points its grants in flight hold never exceed what it holds, however
//! their costs differ; it keeps no reserve, so a run spends it down to what its own work in
//! flight needs; and what it holds refills from the reading to full at its reset. A request
//! bucket keeps its reserve of `ceiling` requests. Pure functions over the state, with time
//! handed in: no clock is read.

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_core::governor::multi::{self, AllDecision, Granted};
use headroom_core::governor::rule::{self, IdentityState};
use headroom_core::governor::{GovernorConfig, WaitReason};
use headroom_core::signal::RateLimitSignal;
use headroom_core::{Bucket, RequestKind};
use proptest::prelude::*;

fn t_ms(ms: i64) -> Timestamp {
    Timestamp::from_millisecond(1_800_000_000_000 + ms).expect("valid")
}

fn config() -> GovernorConfig {
    GovernorConfig {
        margin: SignedDuration::from_secs(1),
        ..GovernorConfig::for_provider(headroom_core::signal::Provider::Linear)
    }
}

fn requests() -> Bucket {
    Bucket::new("requests")
}

fn complexity() -> Bucket {
    Bucket::new("complexity")
}

/// An identity whose `bucket` read `remaining` of `limit` at `seen`, full again at `reset`.
fn read(
    bucket: &Bucket,
    remaining: u64,
    limit: u64,
    seen: Timestamp,
    reset: Timestamp,
) -> IdentityState {
    let config = config();
    let mut identity = IdentityState::new(&config);
    let slot = identity.find_or_insert(bucket);
    let signal = RateLimitSignal {
        resource: Some(bucket.clone()),
        limit: Some(limit),
        remaining: Some(remaining),
        reset_at: Some(reset),
        ..RateLimitSignal::default()
    };
    rule::apply_reading(&config, &mut identity.buckets[slot], &signal, seen);
    identity
}

fn ask(identity: &mut IdentityState, cost: u32, now: Timestamp) -> AllDecision {
    let asks = [(requests(), 1), (complexity(), cost)];
    multi::grant_all(&config(), identity, &asks, RequestKind::GRAPHQL_QUERY, now)
}

fn granted(decision: &AllDecision) -> Option<&[Granted]> {
    match decision {
        AllDecision::Grant(g) => Some(g),
        AllDecision::Wait { .. } => None,
    }
}

/// The previous helper's run: an issues page of 1,500 points in flight, then smaller pages of
/// other stages, with 1,900 of 2,000 points left. Each was granted as if every request in
/// flight cost what it did, and together they overran the bucket.
#[test]
fn a_small_request_is_never_granted_as_if_the_large_ones_in_flight_were_as_small() {
    let (now, reset) = (t_ms(0), t_ms(4_000));
    let mut identity = read(&complexity(), 1_900, 2_000, now, reset);
    assert!(granted(&ask(&mut identity, 1_500, now)).is_some());
    assert!(
        granted(&ask(&mut identity, 300, now)).is_some(),
        "1,800 of 1,900"
    );
    let third = ask(&mut identity, 300, now);
    // Held until what is in flight is answered (or the bucket refills): soon, never now.
    assert!(
        matches!(&third, AllDecision::Wait { until, .. } if *until > now),
        "2,100 points in flight against 1,900: {third:?}"
    );
}

proptest! {
    /// Whatever the costs asked and the order requests finish in, the points the grants in
    /// flight reserved never exceed what the bucket held when they were granted, and a
    /// refusal never names an instant already come.
    #[test]
    fn the_points_in_flight_never_exceed_what_the_complexity_bucket_holds(
        steps in proptest::collection::vec((1u32..2_500, any::<bool>(), any::<prop::sample::Index>()), 1..60),
        remaining in 0u64..4_000,
    ) {
        let (now, reset) = (t_ms(0), t_ms(60_000));
        let mut identity = read(&complexity(), remaining, 4_000, now, reset);
        // The costs in flight, with each one's slots.
        let mut in_flight: Vec<(u32, Vec<usize>)> = Vec::new();
        for (cost, finish, which) in steps {
            if finish && !in_flight.is_empty() {
                let (_, slots) = in_flight.remove(which.index(in_flight.len()));
                multi::release_all(&mut identity, &slots);
                continue;
            }
            let decision = ask(&mut identity, cost, now);
            if let AllDecision::Wait { until, .. } = &decision {
                prop_assert!(*until > now, "a wait that ends at once is a spin");
            }
            if let AllDecision::Grant(g) = decision {
                let reserved = g.iter().find(|g| g.bucket == complexity()).map_or(0, |g| g.cost);
                in_flight.push((reserved, g.iter().map(|g| g.slot).collect()));
                let total: u64 = in_flight.iter().map(|(c, _)| u64::from(*c)).sum();
                prop_assert!(total <= remaining, "{total} points in flight against {remaining}");
            }
        }
    }
}

/// The run hibernated with 1,450 of 2,000 points left: the rule held back `ceiling` × the
/// last cost, a reserve for other processes' requests that a request-count bucket needs and a
/// complexity bucket, drained by its own identity's requests alone, does not.
#[test]
fn a_complexity_bucket_is_spent_down_to_what_its_own_requests_in_flight_need() {
    let (now, reset) = (t_ms(0), t_ms(60_000));
    let mut identity = read(&complexity(), 1_450, 2_000, now, reset);
    for _ in 0..4 {
        assert!(granted(&ask(&mut identity, 300, now)).is_some());
    }
    // 1,200 in flight: 300 more would pass 1,450.
    assert!(granted(&ask(&mut identity, 300, now)).is_none());
    assert!(
        granted(&ask(&mut identity, 250, now)).is_some(),
        "1,450 exactly"
    );

    // A request-count bucket keeps its reserve of `ceiling` requests (GitHub's rule).
    let config = config();
    let graphql = Bucket::new("graphql");
    let mut github = read(&graphql, 1_450, 5_000, now, reset);
    let slot = github.find(&graphql);
    let decision = rule::evaluate(
        &config,
        &mut github,
        slot,
        &graphql,
        300,
        RequestKind::GRAPHQL_QUERY,
        now,
    );
    assert!(
        matches!(
            decision,
            rule::Decision::Wait {
                reason: WaitReason::Exhausted { needed: 3_300, .. },
                ..
            }
        ),
        "{decision:?}"
    );
}

/// Linear's buckets refill continuously, full again at the reset the reading names: what was
/// spent comes back in proportion, and a refused request waits for the refill it needs, not
/// for the whole bucket.
#[test]
fn a_complexity_bucket_refills_from_its_reading_to_full_at_its_reset() {
    let (seen, reset) = (t_ms(0), t_ms(4_000));
    let mut identity = read(&complexity(), 0, 2_000, seen, reset);
    let waited = ask(&mut identity, 500, seen);
    // 500 points come back in a quarter of the refill: 1 s, plus the 1 s margin.
    assert!(
        matches!(waited, AllDecision::Wait { until, .. } if until == t_ms(2_000)),
        "{waited:?}"
    );
    // Half the refill later, 1,000 points are there.
    let half = t_ms(2_000);
    assert!(granted(&ask(&mut identity, 1_000, half)).is_some());
    assert!(granted(&ask(&mut identity, 1, half)).is_none());
    // After the reset the bucket is full, and still known: not guessed in the dark.
    let mut later = read(&complexity(), 0, 2_000, seen, reset);
    let after = t_ms(10_000);
    assert!(granted(&ask(&mut later, 2_000, after)).is_some());
    assert!(granted(&ask(&mut later, 1, after)).is_none());
}

/// Before its first reading a complexity bucket, which keeps no reserve, sends one request at
/// a time: the first answer says what it holds.
#[test]
fn an_unread_complexity_bucket_sends_one_request_before_it_knows_what_it_holds() {
    let config = config();
    let mut identity = IdentityState::new(&config);
    let now = t_ms(0);
    assert!(granted(&ask(&mut identity, 3_000, now)).is_some());
    assert!(matches!(
        ask(&mut identity, 10, now),
        AllDecision::Wait {
            reason: WaitReason::InFlightCeiling { .. },
            ..
        }
    ));
}
