//! One request over several buckets (Linear's requests and complexity, LaunchDarkly's global
//! and route windows, Jira's endpoint burst and app points): granted by every bucket or by
//! none, the identity's in-flight counted once, one permit freeing them all. The pure rule is
//! held to the single-bucket rule by property tests; the in-memory backend and the async front
//! by examples. Time is a number handed in: no clock is read.

use std::sync::Arc;

use headroom_core::clock::{ManualClock, SignedDuration, Timestamp};
use headroom_core::governor::multi::{self, AllDecision, Ask};
use headroom_core::governor::rule::{self, BucketState, Decision, IdentityState};
use headroom_core::governor::{
    Acquire, GovernorConfig, GovernorError, MemoryQuotaState, Permit, PointsLimit, Wait, WaitReason,
};
use headroom_core::quota::{AppLimit, Surface};
use headroom_core::signal::{LimitReason, RateLimitSignal};
use headroom_core::{Bucket, Governor, QuotaKey, RequestKind};
use proptest::prelude::*;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

fn alice() -> QuotaKey {
    QuotaKey::user("api.linear.app", "alice")
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

fn reading(bucket: &str, remaining: u64, used: u64, reset: Timestamp) -> RateLimitSignal {
    RateLimitSignal {
        resource: Some(Bucket::new(bucket)),
        limit: Some(remaining + used),
        remaining: Some(remaining),
        used: Some(used),
        reset_at: Some(reset),
        ..RateLimitSignal::default()
    }
}

fn requests() -> Bucket {
    Bucket::new("requests")
}

/// A second bucket with a window (Linear's `complexity` keeps no reserve and refills
/// continuously: `governor_complexity.rs`).
fn complexity() -> Bucket {
    Bucket::new("points")
}

fn both(cost: u32) -> Vec<Ask> {
    vec![(requests(), 1), (complexity(), cost)]
}

fn in_flight(s: &MemoryQuotaState, bucket: &Bucket, now: Timestamp) -> u32 {
    s.snapshot_now(&alice(), now)
        .buckets
        .iter()
        .find(|b| b.state.bucket == *bucket)
        .map_or(0, |b| b.state.in_flight)
}

/// Teaches the state a bucket's reading through a permit over that bucket alone.
fn teach(s: &MemoryQuotaState, signal: &RateLimitSignal, now: Timestamp) {
    let bucket = signal.resource.clone().expect("named");
    let p = grant(s.acquire_now(&alice(), &bucket, 1, RequestKind::GRAPHQL_QUERY, now));
    s.observe_now(&p, signal, now);
}

#[test]
fn a_request_over_two_buckets_is_granted_by_both_or_by_neither() {
    let s = MemoryQuotaState::new(GovernorConfig::default()).expect("valid");
    // Complexity nearly spent: 100 left, a cost of 10 needs 10 × (0 + 1 + 10) = 110.
    teach(&s, &reading("points", 100, 2900, t(3600)), t(0));
    teach(&s, &reading("requests", 1400, 100, t(3600)), t(0));
    let kind = RequestKind::GRAPHQL_QUERY;
    let before = s.snapshot_now(&alice(), t(1));
    let w = wait(
        s.acquire_all_now(&alice(), &both(10), kind, t(1))
            .expect("asks"),
    );
    assert!(
        matches!(&w.reason, WaitReason::Exhausted { bucket, needed: 110, .. } if *bucket == complexity()),
        "{w}"
    );
    assert_eq!(w.until, t(3660), "complexity's reset plus the margin");
    assert_eq!(
        s.snapshot_now(&alice(), t(1)),
        before,
        "the refusal reserved nothing, not even in the bucket that had room"
    );
    // A cost that fits both: both grant, each bucket and the identity take one slot.
    let p = grant(
        s.acquire_all_now(&alice(), &both(9), kind, t(1))
            .expect("asks"),
    );
    assert_eq!(p.bucket(), &requests());
    assert_eq!(p.also(), &[(complexity(), 9)]);
    assert_eq!(in_flight(&s, &requests(), t(1)), 1);
    assert_eq!(in_flight(&s, &complexity(), t(1)), 1);
    assert_eq!(s.snapshot_now(&alice(), t(1)).in_flight, 1);
}

#[tokio::test]
async fn one_permit_releases_every_bucket_it_holds() {
    let s = MemoryQuotaState::new(GovernorConfig::default()).expect("valid");
    let kind = RequestKind::GRAPHQL_QUERY;
    let dropped = grant(
        s.acquire_all_now(&alice(), &both(1), kind, t(0))
            .expect("asks"),
    );
    let released = grant(
        s.acquire_all_now(&alice(), &both(1), kind, t(0))
            .expect("asks"),
    );
    assert_eq!(s.snapshot_now(&alice(), t(0)).in_flight, 2);
    assert_eq!(in_flight(&s, &complexity(), t(0)), 2);
    drop(dropped);
    assert_eq!(in_flight(&s, &requests(), t(0)), 1);
    assert_eq!(in_flight(&s, &complexity(), t(0)), 1);
    assert_eq!(s.snapshot_now(&alice(), t(0)).in_flight, 1);
    released.release().await;
    assert_eq!(in_flight(&s, &requests(), t(0)), 0);
    assert_eq!(in_flight(&s, &complexity(), t(0)), 0);
    assert_eq!(s.snapshot_now(&alice(), t(0)).in_flight, 0);
}

#[test]
fn a_request_over_several_buckets_counts_once_against_the_ceiling_and_the_points() {
    let config = GovernorConfig {
        ceiling: 2,
        graphql_points: Some(PointsLimit::per_minute(100)),
        ..GovernorConfig::default()
    };
    let s = MemoryQuotaState::new(config).expect("valid");
    let three = vec![
        (requests(), 1),
        (complexity(), 1),
        (Bucket::new("route"), 1),
    ];
    let kind = RequestKind::GRAPHQL_QUERY;
    let _a = grant(
        s.acquire_all_now(&alice(), &three, kind, t(0))
            .expect("asks"),
    );
    let _b = grant(
        s.acquire_all_now(&alice(), &three, kind, t(0))
            .expect("asks"),
    );
    let snapshot = s.snapshot_now(&alice(), t(0));
    assert_eq!(snapshot.in_flight, 2, "two requests, not six");
    assert_eq!(snapshot.graphql_points_used, 2, "one point a request");
    let w = wait(
        s.acquire_all_now(&alice(), &three, kind, t(0))
            .expect("asks"),
    );
    assert!(
        matches!(
            w.reason,
            WaitReason::InFlightCeiling {
                in_flight: 2,
                ceiling: 2
            }
        ),
        "{w}"
    );
}

#[test]
fn the_wait_is_the_latest_of_the_refusing_buckets_with_its_reason() {
    let s = MemoryQuotaState::new(GovernorConfig::default()).expect("valid");
    teach(&s, &reading("requests", 0, 1500, t(600)), t(0));
    teach(&s, &reading("points", 0, 3000, t(1800)), t(0));
    let kind = RequestKind::GRAPHQL_QUERY;
    for asks in [both(1), vec![(complexity(), 1), (requests(), 1)]] {
        let w = wait(
            s.acquire_all_now(&alice(), &asks, kind, t(1))
                .expect("asks"),
        );
        assert_eq!(w.until, t(1860), "the later reset plus the margin");
        assert_eq!(w.reason.bucket(), Some(&complexity()), "{w}");
    }
}

#[test]
fn a_request_naming_no_bucket_is_refused_as_a_mistake() {
    let s = MemoryQuotaState::new(GovernorConfig::default()).expect("valid");
    let outcome = s.acquire_all_now(&alice(), &[], RequestKind::REST_READ, t(0));
    assert!(
        matches!(outcome, Err(GovernorError::NoBucket)),
        "{outcome:?}"
    );
    assert_eq!(s.snapshot_now(&alice(), t(0)).in_flight, 0);
}

#[tokio::test]
async fn the_async_front_acquires_several_buckets_at_the_clocks_instant() {
    let clock = ManualClock::new(t(0));
    let governor =
        Governor::in_memory(GovernorConfig::default(), Arc::new(clock.clone())).expect("valid");
    let kind = RequestKind::GRAPHQL_QUERY;
    let p = grant(
        governor
            .acquire_all(&alice(), &both(3), kind)
            .await
            .expect("asks"),
    );
    assert_eq!(p.granted_at(), t(0));
    // The response reports complexity: the reading lands there, as for any permit.
    clock.advance(SignedDuration::from_secs(5));
    governor
        .observe(&p, &reading("points", 0, 3000, t(900)))
        .await
        .expect("backend");
    let snapshot = governor.snapshot(&alice()).await.expect("backend");
    let complexity_state = snapshot
        .buckets
        .iter()
        .find(|b| b.state.bucket == complexity())
        .expect("seen");
    assert_eq!(complexity_state.state.remaining, Some(0));
    assert_eq!(complexity_state.state.in_flight, 1);
    p.release().await;
    let w = wait(
        governor
            .acquire_all(&alice(), &both(3), kind)
            .await
            .expect("asks"),
    );
    assert_eq!(w.reason.bucket(), Some(&complexity()), "{w}");
    assert_eq!(
        governor
            .snapshot(&alice())
            .await
            .expect("backend")
            .in_flight,
        0
    );
}

// ---- The pure rule, property-tested against the single-bucket rule. ----

const NAMES: [&str; 4] = ["core", "graphql", "complexity", "search"];

#[derive(Debug, Clone)]
enum Op {
    Grant {
        bucket: usize,
        estimate: u32,
        kind: usize,
    },
    Read {
        bucket: usize,
        remaining: u64,
        used: u64,
        reset: i64,
        cost: Option<u64>,
    },
    Secondary {
        bucket: usize,
        retry_after: Option<i64>,
    },
    Release {
        bucket: usize,
    },
    Advance {
        millis: i64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..4, 1u32..8, 0usize..4)
            .prop_map(|(bucket, estimate, kind)| Op::Grant { bucket, estimate, kind }),
        3 => (0usize..4, 0u64..300, 0u64..5000, 0i64..3600, proptest::option::of(1u64..20))
            .prop_map(|(bucket, remaining, used, reset, cost)| Op::Read { bucket, remaining, used, reset, cost }),
        1 => (0usize..4, proptest::option::of(1i64..600))
            .prop_map(|(bucket, retry_after)| Op::Secondary { bucket, retry_after }),
        2 => (0usize..4).prop_map(|bucket| Op::Release { bucket }),
        1 => (0i64..200_000).prop_map(|millis| Op::Advance { millis }),
    ]
}

fn kind(i: usize) -> RequestKind {
    match i {
        0 => RequestKind::REST_READ,
        1 => RequestKind::REST_CREATE,
        2 => RequestKind::GRAPHQL_QUERY,
        _ => RequestKind::REST_READ.with_app_limit(AppLimit::GitlabProjectRead),
    }
}

fn config(ceiling: u32) -> GovernorConfig {
    GovernorConfig {
        ceiling,
        rest_points: Some(PointsLimit::per_minute(30)),
        graphql_points: Some(PointsLimit::per_minute(20)),
        content_creation: vec![PointsLimit::per_minute(4)],
        ..GovernorConfig::default()
    }
}

/// An identity's state after `ops`, built with the single-bucket rule's own functions.
fn build(config: &GovernorConfig, ops: &[Op]) -> (IdentityState, Timestamp) {
    let mut state = IdentityState::new(config);
    let mut now = t(0);
    for op in ops {
        match *op {
            Op::Grant {
                bucket,
                estimate,
                kind: k,
            } => {
                let name = Bucket::new(NAMES[bucket]);
                let slot = state.find_or_insert(&name);
                let decision = rule::evaluate(
                    config,
                    &mut state,
                    Some(slot),
                    &name,
                    estimate,
                    kind(k),
                    now,
                );
                if let Decision::Grant { .. } = decision {
                    rule::commit_grant(config, &mut state, slot, kind(k), now);
                }
            }
            Op::Read {
                bucket,
                remaining,
                used,
                reset,
                cost,
            } => {
                let mut signal = reading(NAMES[bucket], remaining, used, t(reset));
                signal.cost = cost;
                let slot = state.find_or_insert(&Bucket::new(NAMES[bucket]));
                rule::apply_reading(config, &mut state.buckets[slot], &signal, now);
            }
            Op::Secondary {
                bucket,
                retry_after,
            } => {
                let signal = RateLimitSignal {
                    reason: Some(LimitReason::Secondary),
                    retry_after: retry_after.map(SignedDuration::from_secs),
                    ..RateLimitSignal::default()
                };
                let slot = state.find_or_insert(&Bucket::new(NAMES[bucket]));
                rule::apply_reading(config, &mut state.buckets[slot], &signal, now);
            }
            Op::Release { bucket } => {
                if let Some(slot) = state.find(&Bucket::new(NAMES[bucket]))
                    && state.buckets[slot].in_flight > 0
                {
                    rule::release(&mut state, slot);
                }
            }
            Op::Advance { millis } => now += SignedDuration::from_millis(millis),
        }
    }
    (state, now)
}

/// The state as any reader sees it at `now`: points that stopped counting evicted, empty
/// application windows and buckets nothing is known about left out. The single-bucket rule
/// leaves such bookkeeping behind when it refuses; the all-or-none rule leaves nothing.
fn observable(mut state: IdentityState, now: Timestamp) -> IdentityState {
    for w in state
        .rest_points
        .iter_mut()
        .chain(state.graphql_points.iter_mut())
    {
        w.used(now);
    }
    for w in &mut state.content {
        w.used(now);
    }
    state.app.retain_mut(|(_, w)| w.used(now) > 0);
    state
        .buckets
        .retain(|b| *b != BucketState::new(b.bucket.clone()));
    state
}

fn ask() -> impl Strategy<Value = Ask> {
    (0usize..4, 1u32..8).prop_map(|(b, cost)| (Bucket::new(NAMES[b]), cost))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_single_ask_decides_and_changes_state_as_the_single_bucket_rule_does(
        ops in proptest::collection::vec(op(), 0..80),
        ceiling in 1u32..8,
        (bucket, estimate) in ask(),
        k in 0usize..4,
    ) {
        let config = config(ceiling);
        let (state, now) = build(&config, &ops);
        let mut single = state.clone();
        let slot = single.find_or_insert(&bucket);
        let expected = rule::evaluate(&config, &mut single, Some(slot), &bucket, estimate, kind(k), now);
        if let Decision::Grant { .. } = expected {
            rule::commit_grant(&config, &mut single, slot, kind(k), now);
        }
        let mut all = state.clone();
        let decision = multi::grant_all(&config, &mut all, &[(bucket.clone(), estimate)], kind(k), now);
        match (expected, decision) {
            (Decision::Grant { cost }, AllDecision::Grant(granted)) => {
                prop_assert_eq!(granted.len(), 1);
                prop_assert_eq!((&granted[0].bucket, granted[0].slot, granted[0].cost), (&bucket, slot, cost));
                prop_assert_eq!(&all, &single, "a grant changes the state exactly as the single rule's");
            }
            (Decision::Wait { until, reason }, AllDecision::Wait { until: u, reason: r }) => {
                prop_assert_eq!((until, reason), (u, r));
                prop_assert_eq!(&all, &state);
                prop_assert_eq!(observable(single, now), observable(state, now));
            }
            (e, d) => prop_assert!(false, "single rule {:?}, all-or-none {:?}", e, d),
        }
    }

    #[test]
    fn a_request_over_several_buckets_is_granted_by_all_or_changes_nothing(
        ops in proptest::collection::vec(op(), 0..80),
        ceiling in 1u32..8,
        asks in proptest::collection::vec(ask(), 1..5),
        k in 0usize..4,
    ) {
        let config = config(ceiling);
        let (state, now) = build(&config, &ops);
        let merged = multi::merge_asks(&asks);
        // What each bucket alone would answer, on the state as it was.
        let alone: Vec<Decision> = merged.iter().map(|(bucket, cost)| {
            let mut copy = state.clone();
            let slot = copy.find_or_insert(bucket);
            rule::evaluate(&config, &mut copy, Some(slot), bucket, *cost, kind(k), now)
        }).collect();
        let latest = alone.iter().filter_map(|d| match d {
            Decision::Wait { until, .. } => Some(*until),
            Decision::Grant { .. } => None,
        }).max();
        let mut after = state.clone();
        match multi::grant_all(&config, &mut after, &asks, kind(k), now) {
            AllDecision::Wait { until, reason } => {
                prop_assert_eq!(
                    serde_json::to_vec(&after).expect("serializes"),
                    serde_json::to_vec(&state).expect("serializes"),
                    "a refusal leaves the state byte for byte"
                );
                prop_assert_eq!(Some(until), latest, "the latest of the refusing buckets' waits");
                let first_latest = alone.iter().find_map(|d| match d {
                    Decision::Wait { until: u, reason: r } if Some(*u) == latest => Some(r.clone()),
                    _ => None,
                });
                prop_assert_eq!(Some(reason), first_latest);
            }
            AllDecision::Grant(granted) => {
                prop_assert_eq!(latest, None, "granted only when every bucket alone would grant");
                prop_assert_eq!(granted.len(), merged.len());
                prop_assert_eq!(after.in_flight, state.in_flight + 1, "the identity counts the request once");
                for (g, (bucket, _)) in granted.iter().zip(&merged) {
                    prop_assert_eq!(&g.bucket, bucket);
                    let before = state.find(bucket).map_or(0, |i| state.buckets[i].in_flight);
                    prop_assert_eq!(after.buckets[g.slot].in_flight, before + 1);
                }
                for b in &state.buckets {
                    if !merged.iter().any(|(name, _)| *name == b.bucket) {
                        let i = after.find(&b.bucket).expect("kept");
                        prop_assert_eq!(after.buckets[i].in_flight, b.in_flight);
                    }
                }
                let points = |s: &IdentityState| {
                    let mut s = s.clone();
                    let window = match kind(k).surface {
                        Surface::Rest => s.rest_points.as_mut(),
                        Surface::GraphQl => s.graphql_points.as_mut(),
                    };
                    window.map_or(0, |w| w.used(now))
                };
                prop_assert_eq!(
                    points(&after),
                    points(&state) + u64::from(rule::secondary_points(&config, kind(k))),
                    "the request's points are counted once"
                );
                let slots: Vec<usize> = granted.iter().map(|g| g.slot).collect();
                multi::release_all(&mut after, &slots);
                prop_assert_eq!(after.in_flight, state.in_flight);
                for b in &state.buckets {
                    let i = after.find(&b.bucket).expect("kept");
                    prop_assert_eq!(after.buckets[i].in_flight, b.in_flight, "released");
                }
            }
        }
    }
}
