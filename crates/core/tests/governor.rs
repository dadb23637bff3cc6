//! The governor's behaviour, through the in-memory state's synchronous entry points and
//! through the async `Governor` front. Time is a number handed in: no clock is read.

use std::sync::Arc;

use headroom_core::clock::{ManualClock, SignedDuration, Timestamp};
use headroom_core::governor::{
    Acquire, GovernorConfig, Headroom, LimitReporting, MemoryQuotaState, Permit, PointsLimit, Wait,
    WaitReason,
};
use headroom_core::signal::{LimitReason, RateLimitSignal};
use headroom_core::{Bucket, Governor, QuotaKey, RequestKind};
use proptest::prelude::*;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

fn alice() -> QuotaKey {
    QuotaKey::user("api.github.com", "alice")
}

fn state() -> MemoryQuotaState {
    MemoryQuotaState::new(GovernorConfig::default()).expect("valid config")
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

fn read(s: &MemoryQuotaState, bucket: &Bucket, cost: u32, now: Timestamp) -> Acquire {
    s.acquire_now(&alice(), bucket, cost, RequestKind::REST_READ, now)
}

#[test]
fn unknown_state_grants_up_to_the_ceiling_and_a_dropped_permit_frees_its_slot() {
    let s = state();
    let core = Bucket::core();
    let mut permits: Vec<Permit> = (0..10).map(|_| grant(read(&s, &core, 1, t(0)))).collect();
    let w = wait(read(&s, &core, 1, t(0)));
    assert!(matches!(
        w.reason,
        WaitReason::InFlightCeiling {
            in_flight: 10,
            ceiling: 10
        }
    ));
    assert!(
        w.until > t(0) && w.until <= t(1),
        "a busy wait is short: {}",
        w.until
    );
    // The ceiling is identity-wide: another bucket is refused too.
    wait(read(&s, &Bucket::graphql(), 1, t(0)));
    drop(permits.pop());
    let again = grant(read(&s, &core, 1, t(0)));
    assert_eq!(s.snapshot_now(&alice(), t(0)).in_flight, 10);
    drop(again);
    assert_eq!(s.snapshot_now(&alice(), t(0)).in_flight, 9);
    drop(permits);
    assert_eq!(s.snapshot_now(&alice(), t(0)).in_flight, 0);
}

#[test]
fn the_grant_rule_keeps_cost_times_in_flight_plus_one_plus_ceiling() {
    let s = state();
    let core = Bucket::core();
    let first = grant(read(&s, &core, 1, t(0)));
    // 11 remaining, 1 in flight: needs 1 × (1 + 1 + 10) = 12 → wait for the reset + margin.
    s.observe_now(&first, &reading("core", 11, 4989, t(1800)), t(1));
    let w = wait(read(&s, &core, 1, t(2)));
    assert_eq!(w.until, t(1860), "reset plus the 60 s margin");
    match &w.reason {
        WaitReason::Exhausted {
            bucket,
            remaining,
            needed,
            reset_at,
        } => {
            assert_eq!(
                (bucket.as_str(), *remaining, *needed, *reset_at),
                ("core", 11, 12, t(1800))
            );
        }
        other => panic!("unexpected reason {other}"),
    }
    assert!(w.to_string().contains("core quota exhausted"), "{w}");
    // With nothing in flight the same reading admits exactly one more: 11 ≥ 1 × (0 + 1 + 10).
    drop(first);
    let p = grant(read(&s, &core, 1, t(3)));
    wait(read(&s, &core, 1, t(3)));
    drop(p);
    // A new window (now ≥ reset) is unknown again and grants.
    grant(read(&s, &core, 1, t(1800)));
}

#[test]
fn cost_is_the_larger_of_the_estimate_and_the_last_observed_cost() {
    let s = state();
    let gql = Bucket::graphql();
    let p = grant(s.acquire_now(&alice(), &gql, 1, RequestKind::GRAPHQL_QUERY, t(0)));
    let mut sig = reading("graphql", 600, 4400, t(3600));
    sig.cost = Some(50);
    s.observe_now(&p, &sig, t(1));
    drop(p);
    // Needs 50 × 11 = 550 ≤ 600 even though the caller estimated 1.
    let p = grant(s.acquire_now(&alice(), &gql, 1, RequestKind::GRAPHQL_QUERY, t(2)));
    assert_eq!(p.cost(), 50);
    // With one in flight: 50 × 12 = 600 ≤ 600; an estimate of 60 needs 60 × 12 = 720.
    let w = wait(s.acquire_now(&alice(), &gql, 60, RequestKind::GRAPHQL_QUERY, t(2)));
    assert!(
        matches!(w.reason, WaitReason::Exhausted { needed: 720, .. }),
        "{w}"
    );
}

#[test]
fn readings_never_move_state_backwards() {
    let s = state();
    let core = Bucket::core();
    let p = grant(read(&s, &core, 1, t(0)));
    s.observe_now(&p, &reading("core", 4980, 20, t(3600)), t(1));
    // An older response of the same window arrives late: ignored.
    s.observe_now(&p, &reading("core", 4990, 10, t(3600)), t(2));
    // A response from the previous window: ignored.
    s.observe_now(&p, &reading("core", 1, 4999, t(0)), t(3));
    let snap = s.snapshot_now(&alice(), t(4));
    let b = &snap.buckets[0].state;
    assert_eq!(
        (b.remaining, b.used, b.reset_at),
        (Some(4980), Some(20), Some(t(3600)))
    );
    // A newer window replaces it.
    s.observe_now(&p, &reading("core", 4999, 1, t(7200)), t(3700));
    let b = s.snapshot_now(&alice(), t(3700)).buckets[0].state.clone();
    assert_eq!((b.remaining, b.reset_at), (Some(4999), Some(t(7200))));
}

#[test]
fn the_response_names_the_bucket_it_answers_for() {
    let s = state();
    let p = grant(read(&s, &Bucket::core(), 1, t(0)));
    s.observe_now(&p, &reading("search", 0, 30, t(60)), t(1));
    drop(p);
    // search is closed, core is not.
    assert!(matches!(
        wait(read(&s, &Bucket::search(), 1, t(2))).reason,
        WaitReason::Exhausted { .. }
    ));
    grant(read(&s, &Bucket::core(), 1, t(2)));
}

#[test]
fn exhausting_one_bucket_never_closes_another() {
    let s = state();
    let p = grant(read(&s, &Bucket::core(), 1, t(0)));
    s.observe_now(&p, &reading("core", 0, 5000, t(3000)), t(1));
    drop(p);
    wait(read(&s, &Bucket::core(), 1, t(2)));
    grant(s.acquire_now(
        &alice(),
        &Bucket::graphql(),
        1,
        RequestKind::GRAPHQL_QUERY,
        t(2),
    ));
    grant(read(&s, &Bucket::code_search(), 1, t(2)));
}

#[test]
fn secondary_limits_block_with_retry_after_or_escalate_and_reset_on_success() {
    let s = state();
    let core = Bucket::core();
    let secondary = |retry_after: Option<i64>| RateLimitSignal {
        reason: Some(LimitReason::Secondary),
        retry_after: retry_after.map(SignedDuration::from_secs),
        ..RateLimitSignal::default()
    };
    let p = grant(read(&s, &core, 1, t(0)));
    s.observe_now(&p, &secondary(Some(30)), t(0));
    drop(p);
    let w = wait(read(&s, &core, 1, t(10)));
    assert_eq!(w.until, t(30));
    assert!(matches!(w.reason, WaitReason::SecondaryBlock { .. }));

    // Without retry-after: 60 s, 120 s, 240 s … capped at an hour.
    let mut now = t(30);
    let mut expected = Vec::new();
    let mut seen = Vec::new();
    for strike in 2..=9u32 {
        let p = grant(read(&s, &core, 1, now));
        s.observe_now(&p, &secondary(None), now);
        drop(p);
        let w = wait(read(&s, &core, 1, now));
        seen.push(w.until.duration_since(now).as_secs());
        expected.push((60i64 << (strike - 2)).min(3600));
        now = w.until;
    }
    // The first strike of this run was the retry-after one, so escalation starts at 120 s.
    let expected: Vec<i64> = expected.iter().map(|s| (s * 2).min(3600)).collect();
    assert_eq!(seen, expected);
    assert_eq!(*seen.last().expect("some"), 3600);

    // One success resets the escalation.
    let p = grant(read(&s, &core, 1, now));
    s.observe_now(
        &p,
        &reading("core", 4000, 1000, now + SignedDuration::from_secs(600)),
        now,
    );
    s.observe_now(&p, &secondary(None), now);
    drop(p);
    assert_eq!(
        wait(read(&s, &core, 1, now)).until,
        now + SignedDuration::from_secs(60)
    );
}

#[test]
fn local_points_limiters() {
    let s = state();
    let core = Bucket::core();
    let mut now = t(0);
    // 900 REST read points within a minute, then a wait; permits dropped as we go.
    for _ in 0..900 {
        drop(grant(read(&s, &core, 1, now)));
        now += SignedDuration::from_millis(10);
    }
    let w = wait(read(&s, &core, 1, now));
    assert!(matches!(w.reason, WaitReason::LocalPoints { .. }), "{w}");
    assert!(w.until > now && w.until <= t(62));

    // Mutations spend 5 points: 180 POSTs fill a fresh minute.
    let s = state();
    let bob = QuotaKey::user("api.github.com", "bob");
    for i in 0..180 {
        drop(grant(s.acquire_now(
            &bob,
            &core,
            1,
            RequestKind::REST_MUTATION,
            t(i / 10),
        )));
    }
    assert!(matches!(
        wait(s.acquire_now(&bob, &core, 1, RequestKind::REST_MUTATION, t(18))).reason,
        WaitReason::LocalPoints { .. }
    ));
    // GraphQL has its own 2,000-point minute, untouched by REST.
    drop(grant(s.acquire_now(
        &bob,
        &Bucket::graphql(),
        1,
        RequestKind::GRAPHQL_QUERY,
        t(18),
    )));

    // Content creation: 80 a minute.
    let s = state();
    for i in 0..80 {
        drop(grant(s.acquire_now(
            &bob,
            &core,
            1,
            RequestKind::REST_CREATE,
            t(i / 4),
        )));
    }
    let w = wait(s.acquire_now(&bob, &core, 1, RequestKind::REST_CREATE, t(20)));
    assert!(
        matches!(w.reason, WaitReason::ContentCreation { .. }),
        "{w}"
    );
    // …while mutations that create nothing still pass.
    drop(grant(s.acquire_now(
        &bob,
        &core,
        1,
        RequestKind::REST_MUTATION,
        t(20),
    )));
}

#[test]
fn content_creation_hourly_limit_holds_across_minutes() {
    let config = GovernorConfig {
        content_creation: vec![PointsLimit::per_minute(80), PointsLimit::per_hour(500)],
        rest_points: None,
        ..GovernorConfig::default()
    };
    let s = MemoryQuotaState::new(config).expect("valid");
    let core = Bucket::core();
    let mut created = 0;
    let mut now = t(0);
    while now < t(3599) {
        if let Acquire::Grant(p) = s.acquire_now(&alice(), &core, 1, RequestKind::REST_CREATE, now)
        {
            created += 1;
            drop(p);
        }
        now += SignedDuration::from_secs(1);
    }
    assert_eq!(created, 500);
}

#[test]
fn headroom_applies_the_rule_without_reserving() {
    let s = state();
    let core = Bucket::core();
    for _ in 0..50 {
        assert_eq!(
            s.headroom_now(&alice(), &core, 1, RequestKind::REST_READ, t(0)),
            Headroom::Open
        );
    }
    assert_eq!(s.snapshot_now(&alice(), t(0)).in_flight, 0);
    let p = grant(read(&s, &core, 1, t(0)));
    s.observe_now(&p, &reading("core", 5, 4995, t(100)), t(0));
    assert!(
        !s.headroom_now(&alice(), &core, 1, RequestKind::REST_READ, t(1))
            .is_open()
    );
    assert_eq!(s.snapshot_now(&alice(), t(1)).in_flight, 1);
}

#[test]
fn snapshot_counts_in_flight_and_waiting_per_bucket() {
    use headroom_core::governor::QuotaState;
    let s = state();
    let core = Bucket::core();
    let a = grant(read(&s, &core, 1, t(0)));
    let b = grant(read(&s, &core, 1, t(0)));
    let ticket = s.wait_ticket(&alice(), &core);
    let ticket2 = s.wait_ticket(&alice(), &Bucket::search());
    let snap = s.snapshot_now(&alice(), t(0));
    let by_name = |name: &str| {
        snap.buckets
            .iter()
            .find(|b| b.state.bucket.as_str() == name)
            .map(|b| (b.state.in_flight, b.state.waiting))
    };
    assert_eq!(by_name("core"), Some((2, 1)));
    assert_eq!(by_name("search"), Some((0, 1)));
    drop((a, b, ticket, ticket2));
    let snap = s.snapshot_now(&alice(), t(0));
    assert!(
        snap.buckets
            .iter()
            .all(|b| b.state.in_flight == 0 && b.state.waiting == 0)
    );
}

#[test]
fn a_panicking_request_still_frees_its_slot() {
    let s = Arc::new(state());
    let s2 = Arc::clone(&s);
    let result = std::thread::spawn(move || {
        let _permit = grant(read(&s2, &Bucket::core(), 1, t(0)));
        panic!("request handler blew up");
    })
    .join();
    assert!(result.is_err());
    assert_eq!(s.snapshot_now(&alice(), t(0)).in_flight, 0);
}

#[test]
fn invalid_configuration_names_the_setting() {
    let cases = [
        (
            GovernorConfig {
                ceiling: 0,
                ..GovernorConfig::default()
            },
            "ceiling",
        ),
        (
            GovernorConfig {
                margin: SignedDuration::from_secs(-1),
                ..GovernorConfig::default()
            },
            "margin",
        ),
        (
            GovernorConfig {
                secondary_cap: SignedDuration::from_secs(1),
                ..GovernorConfig::default()
            },
            "secondary_cap",
        ),
        (
            GovernorConfig {
                rest_points: Some(PointsLimit::per_minute(0)),
                ..GovernorConfig::default()
            },
            "rest_points",
        ),
    ];
    for (config, setting) in cases {
        let message = MemoryQuotaState::new(config)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(message.contains(setting), "{message}");
    }
}

#[tokio::test]
async fn the_async_front_reads_the_injected_clock() {
    let clock = ManualClock::new(t(0));
    let governor =
        Governor::in_memory(GovernorConfig::default(), Arc::new(clock.clone())).expect("valid");
    let key = alice();
    let core = Bucket::core();
    let Acquire::Grant(p) = governor
        .acquire(&key, &core, 1, RequestKind::REST_READ)
        .await
        .expect("backend")
    else {
        panic!("expected a grant");
    };
    governor
        .observe(&p, &reading("core", 3, 4997, t(600)))
        .await
        .expect("backend");
    drop(p);
    let Headroom::Closed(w) = governor
        .headroom(&key, &core, 1, RequestKind::REST_READ)
        .await
        .expect("backend")
    else {
        panic!("expected closed");
    };
    assert_eq!(w.until, t(660));
    clock.advance(SignedDuration::from_secs(600));
    assert!(
        governor
            .headroom(&key, &core, 1, RequestKind::REST_READ)
            .await
            .expect("backend")
            .is_open()
    );
    assert_eq!(
        governor.identities().await.expect("backend"),
        vec![key.clone()]
    );
    assert_eq!(
        governor
            .snapshot(&key)
            .await
            .expect("backend")
            .buckets
            .len(),
        1
    );
}

// ---------------------------------------------------------------------------------------
// Properties: any interleaving of acquire, observe, drop and time passing.

/// GitHub Enterprise Server with rate limiting off: answers without any reading. The bucket
/// stays unknown (granted up to the ceiling, never closed), says its limits are not reported,
/// and the secondary protections still block.
#[test]
fn answers_without_rate_limit_headers_leave_the_bucket_open_and_say_so() {
    let s = state();
    let core = Bucket::core();
    let reporting = |s: &MemoryQuotaState, now| {
        s.snapshot_now(&alice(), now)
            .buckets
            .iter()
            .find(|b| b.state.bucket == core)
            .map(|b| b.limits)
    };
    assert_eq!(reporting(&s, t(0)), None, "never seen");
    let p = grant(read(&s, &core, 1, t(0)));
    assert_eq!(reporting(&s, t(0)), Some(LimitReporting::Unanswered));
    s.observe_now(&p, &RateLimitSignal::default(), t(0));
    drop(p);
    assert_eq!(reporting(&s, t(0)), Some(LimitReporting::NotReported));
    for i in 0..1_000 {
        // A thousand answers later, still granted up to the ceiling and no further.
        let permits: Vec<Permit> = (0..10).map(|_| grant(read(&s, &core, 1, t(i)))).collect();
        let w = wait(read(&s, &core, 1, t(i)));
        assert!(
            matches!(w.reason, WaitReason::InFlightCeiling { .. }),
            "{w}"
        );
        for p in &permits {
            s.observe_now(p, &RateLimitSignal::default(), t(i));
        }
    }
    let snap = s.snapshot_now(&alice(), t(1_000));
    assert!(!snap.buckets[0].known);
    assert_eq!(snap.buckets[0].limits, LimitReporting::NotReported);
    // A secondary limit without headers still blocks the bucket.
    let p = grant(read(&s, &core, 1, t(1_000)));
    let secondary = RateLimitSignal {
        reason: Some(LimitReason::Secondary),
        ..RateLimitSignal::default()
    };
    s.observe_now(&p, &secondary, t(1_000));
    drop(p);
    let w = wait(read(&s, &core, 1, t(1_001)));
    assert!(matches!(w.reason, WaitReason::SecondaryBlock { .. }), "{w}");
    // A reading (the server turned its limits on) is believed at once.
    let p = grant(read(&s, &core, 1, t(5_000)));
    s.observe_now(&p, &reading("core", 4_000, 1_000, t(8_600)), t(5_000));
    assert_eq!(reporting(&s, t(5_000)), Some(LimitReporting::Reported));
}

/// On github.com a secondary 403 can arrive without headers: it is not taken for limits
/// being off.
#[test]
fn a_refusal_without_headers_does_not_say_limits_are_off() {
    let s = state();
    let core = Bucket::core();
    let p = grant(read(&s, &core, 1, t(0)));
    let secondary = RateLimitSignal {
        reason: Some(LimitReason::Secondary),
        ..RateLimitSignal::default()
    };
    s.observe_now(&p, &secondary, t(0));
    let snap = s.snapshot_now(&alice(), t(0));
    assert_eq!(snap.buckets[0].limits, LimitReporting::Unanswered);
}

#[derive(Debug, Clone)]
enum Op {
    Acquire {
        bucket: usize,
        estimate: u32,
        graphql: bool,
    },
    Observe {
        permit: usize,
        remaining: u64,
        used: u64,
        reset_offset: i64,
        cost: Option<u64>,
    },
    Drop {
        permit: usize,
    },
    Advance {
        millis: i64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..3, 1u32..20, any::<bool>()).prop_map(|(bucket, estimate, graphql)| Op::Acquire { bucket, estimate, graphql }),
        3 => (0usize..16, 0u64..400, 0u64..5000, 0i64..7200, proptest::option::of(1u64..30))
            .prop_map(|(permit, remaining, used, reset_offset, cost)| Op::Observe { permit, remaining, used, reset_offset, cost }),
        2 => (0usize..16).prop_map(|permit| Op::Drop { permit }),
        1 => (0i64..900_000).prop_map(|millis| Op::Advance { millis }),
    ]
}

const BUCKETS: [&str; 3] = ["core", "graphql", "search"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn governor_invariants_hold_under_any_interleaving(ops in proptest::collection::vec(op(), 1..200), ceiling in 1u32..12) {
        let config = GovernorConfig { ceiling, ..GovernorConfig::default() };
        let s = MemoryQuotaState::new(config).expect("valid");
        let key = alice();
        let mut now = t(0);
        let mut permits: Vec<Permit> = Vec::new();
        for op in ops {
            match op {
                Op::Acquire { bucket, estimate, graphql } => {
                    let name = Bucket::new(BUCKETS[bucket]);
                    let kind = if graphql { RequestKind::GRAPHQL_QUERY } else { RequestKind::REST_READ };
                    let before = s.snapshot_now(&key, now);
                    let bucket_before = before.buckets.iter().find(|b| b.state.bucket == name).cloned();
                    match s.acquire_now(&key, &name, estimate, kind, now) {
                        Acquire::Grant(p) => {
                            // Never more than the ceiling in flight.
                            prop_assert!(before.in_flight < ceiling);
                            if let Some(b) = bucket_before.filter(|b| b.known) {
                                // No grant when remaining < cost × (in_flight + 1 + ceiling).
                                let cost = u64::from(estimate.max(b.state.last_cost));
                                let needed = cost * (u64::from(b.state.in_flight) + 1 + u64::from(ceiling));
                                prop_assert!(b.state.remaining.unwrap_or(0) >= needed,
                                    "granted with {:?} remaining, {} needed", b.state.remaining, needed);
                                prop_assert_eq!(u64::from(p.cost()), cost);
                            }
                            permits.push(p);
                        }
                        Acquire::Wait(w) => prop_assert!(w.until >= now),
                    }
                }
                Op::Observe { permit, remaining, used, reset_offset, cost } => {
                    if let Some(p) = permits.get(permit % permits.len().max(1)) {
                        let name = p.bucket().clone();
                        let before = s.snapshot_now(&key, now).buckets.into_iter().find(|b| b.state.bucket == name);
                        let mut sig = reading(name.as_str(), remaining, used, t(reset_offset));
                        sig.cost = cost;
                        s.observe_now(p, &sig, now);
                        let after = s.snapshot_now(&key, now).buckets.into_iter().find(|b| b.state.bucket == name);
                        // State never moves backwards: (reset, used) only grows.
                        if let (Some(b), Some(a)) = (before, after) {
                            let key_of = |s: &headroom_core::governor::BucketState| (s.reset_at, s.used);
                            prop_assert!(key_of(&a.state) >= key_of(&b.state),
                                "moved backwards: {:?} -> {:?}", key_of(&b.state), key_of(&a.state));
                        }
                    }
                }
                Op::Drop { permit } => {
                    if !permits.is_empty() {
                        let i = permit % permits.len();
                        permits.swap_remove(i);
                    }
                }
                Op::Advance { millis } => now += SignedDuration::from_millis(millis),
            }
            let snap = s.snapshot_now(&key, now);
            // In flight is exactly the live permits, and never above the ceiling.
            prop_assert_eq!(snap.in_flight as usize, permits.len());
            prop_assert!(snap.in_flight <= ceiling);
            let per_bucket: u32 = snap.buckets.iter().map(|b| b.state.in_flight).sum();
            prop_assert_eq!(per_bucket, snap.in_flight);
        }
        // Every dropped permit frees its slot.
        permits.clear();
        let snap = s.snapshot_now(&key, now);
        prop_assert_eq!(snap.in_flight, 0);
        prop_assert!(snap.buckets.iter().all(|b| b.state.in_flight == 0));
    }

    #[test]
    fn unknown_state_grants_at_most_the_ceiling(ceiling in 1u32..40, attempts in 1usize..100) {
        let s = MemoryQuotaState::new(GovernorConfig { ceiling, ..GovernorConfig::default() }).expect("valid");
        let mut held = Vec::new();
        for _ in 0..attempts {
            if let Acquire::Grant(p) = read(&s, &Bucket::core(), 1, t(0)) {
                held.push(p);
            }
        }
        prop_assert_eq!(held.len(), attempts.min(ceiling as usize));
    }

    #[test]
    fn answers_without_readings_never_close_a_bucket(
        ops in proptest::collection::vec((0u8..4, 0i64..600_000), 1..300),
        ceiling in 1u32..12,
    ) {
        // Acquires, header-less answers, drops and time passing in any order: every acquire
        // below the ceiling is granted, and once anything was answered the bucket says its
        // limits are not reported.
        let s = MemoryQuotaState::new(GovernorConfig { ceiling, ..GovernorConfig::default() }).expect("valid");
        let core = Bucket::core();
        let mut now = t(0);
        let mut held: Vec<Permit> = Vec::new();
        let mut answered = false;
        for (op, millis) in ops {
            match op {
                0 => {
                    let in_flight = s.snapshot_now(&alice(), now).in_flight;
                    match read(&s, &core, 1, now) {
                        Acquire::Grant(p) => held.push(p),
                        Acquire::Wait(w) => {
                            prop_assert!(in_flight >= ceiling, "refused below the ceiling: {}", w);
                            prop_assert!(matches!(w.reason, WaitReason::InFlightCeiling { .. }), "{}", w);
                        }
                    }
                }
                1 => if let Some(p) = held.first() {
                    s.observe_now(p, &RateLimitSignal::default(), now);
                    answered = true;
                },
                2 => { held.pop(); }
                _ => now += SignedDuration::from_millis(millis),
            }
            if answered {
                let snap = s.snapshot_now(&alice(), now);
                prop_assert_eq!(snap.buckets[0].limits, LimitReporting::NotReported);
                prop_assert!(!snap.buckets[0].known);
            }
        }
    }

    #[test]
    fn reordered_readings_converge_to_the_newest(mut readings in proptest::collection::vec((0i64..3, 0u64..100), 1..30)) {
        // Readings of three windows in any order: the state ends at the newest one, the
        // largest used of the latest reset.
        let s = state();
        let p = grant(read(&s, &Bucket::core(), 1, t(0)));
        let newest = readings.iter().copied().max().expect("non-empty");
        readings.reverse();
        for (window, used) in &readings {
            s.observe_now(&p, &reading("core", 5000 - used, *used, t(3600 * (window + 1))), t(1));
        }
        let b = s.snapshot_now(&alice(), t(1)).buckets[0].state.clone();
        prop_assert_eq!((b.reset_at, b.used), (Some(t(3600 * (newest.0 + 1))), Some(newest.1)));
    }
}

/// A request sent outside the rule (a credential's first `GET /user`) is charged to the
/// points windows even with every in-flight slot taken, and takes no slot itself.
#[test]
fn a_charged_request_spends_points_at_the_ceiling_and_holds_no_slot() {
    let s = state();
    let core = Bucket::core();
    let now = t(0);
    let held: Vec<Permit> = (0..10).map(|_| grant(read(&s, &core, 1, now))).collect();
    assert!(matches!(
        wait(read(&s, &core, 1, now)).reason,
        WaitReason::InFlightCeiling { .. }
    ));
    for _ in 0..890 {
        s.charge_now(&alice(), RequestKind::REST_READ, now);
    }
    drop(held);
    let snapshot = s.snapshot_now(&alice(), now);
    assert_eq!(snapshot.in_flight, 0);
    // 10 granted + 890 charged = 900 points: the minute is full.
    assert!(matches!(
        wait(read(&s, &core, 1, now)).reason,
        WaitReason::LocalPoints { .. }
    ));
}

/// A secondary limit met on GraphQL holds REST and search too until it ends: GitHub counts
/// secondary limits per identity, and asks to wait before trying again.
#[test]
fn a_secondary_limit_holds_every_bucket_of_the_identity() {
    let s = state();
    let graphql = Bucket::graphql();
    let p = grant(s.acquire_now(&alice(), &graphql, 1, RequestKind::GRAPHQL_QUERY, t(0)));
    let signal = RateLimitSignal {
        reason: Some(LimitReason::Secondary),
        retry_after: Some(SignedDuration::from_secs(60)),
        ..RateLimitSignal::default()
    };
    s.observe_now(&p, &signal, t(0));
    drop(p);
    for bucket in [Bucket::core(), Bucket::new("search"), graphql] {
        let w = wait(read(&s, &bucket, 1, t(30)));
        assert_eq!(w.until, t(60), "{bucket}");
        assert!(
            matches!(&w.reason, WaitReason::SecondaryBlock { bucket: b, .. } if b.as_str() == "graphql"),
            "{w}"
        );
    }
    // Bob is another identity: untouched.
    let bob = QuotaKey::user("api.github.com", "bob");
    assert!(matches!(
        s.acquire_now(&bob, &Bucket::core(), 1, RequestKind::REST_READ, t(30)),
        Acquire::Grant(_)
    ));
    assert!(matches!(
        read(&s, &Bucket::core(), 1, t(61)),
        Acquire::Grant(_)
    ));
}

#[test]
fn an_application_limit_counts_only_the_requests_that_name_it() {
    use headroom_core::AppLimit;
    use headroom_core::governor::rule::IdentityState;
    let gitlab = QuotaKey::user("gitlab.example.com", "carol");
    let core = Bucket::core();
    // GitLab's documented merge request creation rate: 150 a minute per user. The points
    // limiter is off so that only the application limit can bind.
    let config = GovernorConfig {
        rest_points: None,
        ..GovernorConfig::default()
    };
    let s = MemoryQuotaState::new(config.clone()).expect("valid config");
    let open_mr = RequestKind::REST_MUTATION.with_app_limit(AppLimit::GitlabMergeRequestCreate);
    for i in 0..150 {
        drop(grant(s.acquire_now(&gitlab, &core, 1, open_mr, t(i / 5))));
    }
    let w = wait(s.acquire_now(&gitlab, &core, 1, open_mr, t(30)));
    let WaitReason::ApplicationLimit { name, limit } = w.reason else {
        panic!("expected the application limit, got {w}");
    };
    assert_eq!(name, AppLimit::GitlabMergeRequestCreate);
    assert_eq!(limit, PointsLimit::per_minute(150));
    assert!(w.until > t(30) && w.until <= t(62), "{}", w.until);
    assert_eq!(w.reason.as_str(), "application_limit");
    // Other mutations, another limit, and another user are untouched.
    drop(grant(s.acquire_now(
        &gitlab,
        &core,
        1,
        RequestKind::REST_MUTATION,
        t(30),
    )));
    let create_project = RequestKind::REST_MUTATION.with_app_limit(AppLimit::GitlabProjectCreate);
    drop(grant(s.acquire_now(
        &gitlab,
        &core,
        1,
        create_project,
        t(30),
    )));
    let dave = QuotaKey::user("gitlab.example.com", "dave");
    drop(grant(s.acquire_now(&dave, &core, 1, open_mr, t(30))));
    // Past the minute the count has drained.
    drop(grant(s.acquire_now(&gitlab, &core, 1, open_mr, w.until)));

    // A configuration without the limit never applies it.
    let unlimited = MemoryQuotaState::new(GovernorConfig {
        app_limits: Vec::new(),
        ..config.clone()
    })
    .expect("valid config");
    for i in 0..200 {
        drop(grant(unlimited.acquire_now(
            &gitlab,
            &core,
            1,
            open_mr,
            t(i / 10),
        )));
    }

    // State stored before application limits existed reads back without them.
    let mut old = serde_json::to_value(IdentityState::new(&config)).expect("json");
    old.as_object_mut().expect("object").remove("app");
    let back: IdentityState = serde_json::from_value(old).expect("an older state reads");
    assert!(back.app.is_empty());
}

#[test]
fn an_application_limit_with_no_rate_is_refused_by_name() {
    use headroom_core::AppLimit;
    use headroom_core::governor::AppLimitRate;
    let config = GovernorConfig {
        app_limits: vec![AppLimitRate {
            limit: AppLimit::GitlabProjectCreate,
            rate: PointsLimit::per_minute(0),
        }],
        ..GovernorConfig::default()
    };
    let e = config.validate().expect_err("a zero rate");
    assert!(e.to_string().contains("app_limits"), "{e}");
}
