//! LaunchDarkly's two kinds of bucket under the grant rule: the account's `global` window and
//! one per route, 10 seconds each, whose answers say what remains but never the limit. The
//! governor learns each limit from a window's readings, never grants more in the dark at a new
//! window than it learned, sends one request at a time before the first reading, holds a low
//! route back while other routes go on, and sizes its reserve to the bucket and to who else
//! spends it: alone it uses nearly every window, and two machines sharing the account, each
//! with its own state, never send over the limit (the model in `governor_launchdarkly/sim.rs`).

#[path = "governor_launchdarkly/sim.rs"]
mod sim;

use headroom_core::governor::WaitReason;
use headroom_core::governor::learned;
use headroom_core::governor::multi::{self, AllDecision};
use headroom_core::governor::rule::{self, BucketState, IdentityState};
use headroom_core::signal::{LimitReason, RateLimitSignal};
use headroom_core::{Bucket, RequestKind};
use proptest::prelude::*;
use sim::{Setup, WINDOW_MS, config, global, route, t_ms};

/// An answer of LaunchDarkly's for `bucket`: `remaining` left, the window ending at `reset`.
fn reading(bucket: &Bucket, remaining: u64, reset: i64) -> RateLimitSignal {
    RateLimitSignal {
        resource: Some(bucket.clone()),
        remaining: Some(remaining),
        reset_at: Some(t_ms(reset)),
        ..RateLimitSignal::default()
    }
}

fn ask(identity: &mut IdentityState, r: usize, now: i64) -> AllDecision {
    let asks = [(global(), 1), (route(r), 1)];
    multi::grant_all(
        &config(10),
        identity,
        &asks,
        RequestKind::REST_READ,
        t_ms(now),
    )
}

/// Sends one request on route `r` at `now` and answers it with the given remainings.
fn round_trip(identity: &mut IdentityState, r: usize, now: i64, global_left: u64, route_left: u64) {
    let AllDecision::Grant(granted) = ask(identity, r, now) else {
        panic!("expected a grant at {now} ms");
    };
    answer(identity, r, now, global_left, route_left);
    let slots: Vec<usize> = granted.iter().map(|g| g.slot).collect();
    multi::release_all(identity, &slots);
}

fn answer(identity: &mut IdentityState, r: usize, now: i64, global_left: u64, route_left: u64) {
    let reset = (now.div_euclid(WINDOW_MS) + 1) * WINDOW_MS;
    for (bucket, left) in [(global(), global_left), (route(r), route_left)] {
        let slot = identity.find_or_insert(&bucket);
        let signal = reading(&bucket, left, reset);
        rule::apply_reading(&config(10), &mut identity.buckets[slot], &signal, t_ms(now));
    }
}

fn bucket<'a>(identity: &'a IdentityState, b: &Bucket) -> &'a BucketState {
    &identity.buckets[identity.find(b).expect("seen")]
}

/// Grants on route `r` at `now` until the first wait; how many.
fn grants_until_wait(identity: &mut IdentityState, r: usize, now: i64) -> (u32, WaitReason) {
    let mut n = 0;
    loop {
        match ask(identity, r, now) {
            AllDecision::Grant(_) => n += 1,
            AllDecision::Wait { reason, .. } => return (n, reason),
        }
        assert!(n < 1_000, "never waits");
    }
}

/// Reads `windows` windows alone, one request per route each at its start and, in the first,
/// a second one where the limit leaves room for it: the account allows `global_limit`, route
/// `r` `route_limits[r]`.
fn settle(identity: &mut IdentityState, global_limit: u64, route_limits: &[u64], windows: i64) {
    for w in 0..windows {
        let mut spent = 0;
        for (r, limit) in route_limits.iter().enumerate() {
            let at = w * WINDOW_MS + 100 * r as i64;
            spent += 1;
            round_trip(identity, r, at, global_limit - spent, limit - 1);
            if w == 0 && *limit >= 4 {
                spent += 1;
                round_trip(identity, r, at + 50, global_limit - spent, limit - 2);
            }
        }
    }
}

#[test]
fn a_window_s_readings_teach_the_limit_and_it_never_shrinks() {
    let mut identity = IdentityState::new(&config(10));
    // Window 0: a route of 30, the account of 100; this process alone answers 3 requests.
    for (i, left) in [29, 28, 27].into_iter().enumerate() {
        round_trip(&mut identity, 0, i as i64 * 100, 100 - 1 - i as u64, left);
    }
    assert_eq!(bucket(&identity, &route(0)).learned.limit, 30);
    assert_eq!(bucket(&identity, &global()).learned.limit, 100);
    assert!(!bucket(&identity, &route(0)).learned.foreign_seen());
    // Window 1: someone else spent 4 before this process's one request: still 30, and seen.
    round_trip(&mut identity, 0, WINDOW_MS + 100, 95, 25);
    let route_state = bucket(&identity, &route(0));
    assert_eq!(route_state.learned.limit, 30);
    assert_eq!(bucket(&identity, &global()).learned.limit, 100);
    assert_eq!(route_state.learned.foreign, 4);
    assert!(route_state.learned.foreign_seen());
}

#[test]
fn at_a_new_window_a_small_bucket_reads_it_with_one_request() {
    let mut identity = IdentityState::new(&config(10));
    settle(&mut identity, 1_000, &[40], 3);
    assert_eq!(bucket(&identity, &route(0)).learned.limit, 40);
    // The window is gone by and nothing was read since: the ceiling (10) would allow more.
    let (granted, reason) = grants_until_wait(&mut identity, 0, 3 * WINDOW_MS + 1);
    assert_eq!(granted, 1, "{reason}");
    assert!(
        matches!(reason, WaitReason::InFlightCeiling { ceiling: 1, .. }),
        "{reason}"
    );
    // Its answer reads the window: then the rest is granted against the reading.
    answer(&mut identity, 0, 3 * WINDOW_MS + 50, 999, 39);
    let (granted, _) = grants_until_wait(&mut identity, 0, 3 * WINDOW_MS + 60);
    // Alone, a quarter of the room over its reserve in flight: (39 − 2) / 4 = 9, one of them
    // still in flight.
    assert_eq!(granted, 8);
}

/// Every state keeps at least `alone(L)` back in a window's head: a quarter of it may go
/// blind, so a roomy bucket does not spend a round trip a window reading it.
#[test]
fn at_a_new_window_a_roomy_bucket_sends_a_quarter_of_its_alone_reserve_blind() {
    for (limit, blind) in [(200, 2), (800, 10)] {
        let mut identity = IdentityState::new(&config(10));
        settle(&mut identity, 100_000, &[limit], 3);
        let (granted, reason) = grants_until_wait(&mut identity, 0, 3 * WINDOW_MS + 1);
        assert_eq!(granted, blind, "limit {limit}: {reason}");
        assert_eq!(learned::alone(limit) / 4, u64::from(blind));
    }
}

#[test]
fn in_the_dark_never_more_than_the_learned_limit_is_granted() {
    // Learned 1 a window: its reserve is capped at nothing, and one request goes out.
    let mut identity = IdentityState::new(&config(10));
    settle(&mut identity, 100, &[1], 3);
    assert_eq!(bucket(&identity, &route(0)).learned.limit, 1);
    let (granted, _) = grants_until_wait(&mut identity, 0, 3 * WINDOW_MS + 1);
    assert_eq!(granted, 1);
}

#[test]
fn before_any_reading_one_request_at_a_time() {
    let mut identity = IdentityState::new(&config(10));
    let AllDecision::Grant(first) = ask(&mut identity, 0, 0) else {
        panic!("the first request is granted");
    };
    match ask(&mut identity, 0, 0) {
        AllDecision::Wait {
            reason: WaitReason::InFlightCeiling { ceiling: 1, .. },
            ..
        } => {}
        other => panic!("a second request before the first reading: {other:?}"),
    }
    answer(&mut identity, 0, 10, 99, 49);
    let slots: Vec<usize> = first.iter().map(|g| g.slot).collect();
    multi::release_all(&mut identity, &slots);
    assert!(matches!(ask(&mut identity, 0, 20), AllDecision::Grant(_)));
}

#[test]
fn a_route_allowing_fewer_requests_than_the_ceiling_still_grants() {
    let mut identity = IdentityState::new(&config(10));
    // A route of 5 a window, learned alone; the next window reads 4 left.
    settle(&mut identity, 100, &[5], 3);
    round_trip(&mut identity, 0, 3 * WINDOW_MS + 1, 99, 4);
    // A ceiling's reserve (10) over 4 left would never grant; sized to the bucket it does.
    let (granted, _) = grants_until_wait(&mut identity, 0, 3 * WINDOW_MS + 2);
    assert_eq!(granted, 2, "all but the two requests kept for a newcomer");
}

#[test]
fn a_low_route_is_held_back_while_other_routes_go_on() {
    let mut identity = IdentityState::new(&config(10));
    settle(&mut identity, 100, &[20, 30], 3);
    let start = 3 * WINDOW_MS;
    round_trip(&mut identity, 0, start + 1, 99, 19);
    round_trip(&mut identity, 1, start + 2, 98, 29);
    // Route 0 is nearly spent (someone else took 17 of it); route 1 and the account are not.
    round_trip(&mut identity, 0, start + 3, 80, 1);
    let reset = t_ms(4 * WINDOW_MS);
    match ask(&mut identity, 0, start + 4) {
        AllDecision::Wait {
            until,
            reason: WaitReason::Exhausted {
                bucket, reset_at, ..
            },
        } => {
            assert_eq!(bucket, route(0));
            assert_eq!(reset_at, reset);
            assert!(until >= reset, "held until the route's reset");
        }
        other => panic!("route 0 should be held back: {other:?}"),
    }
    assert!(
        matches!(ask(&mut identity, 1, start + 4), AllDecision::Grant(_)),
        "route 1 goes on"
    );
}

/// The configured margin is a minute (room for clock skew on hour-long windows); a ten-second
/// window held back for a minute past its reset lost six windows, so a learned bucket waits
/// at most `LEARNED_MARGIN` past it.
#[test]
fn a_held_route_waits_a_moment_past_its_reset_not_the_minutes_margin() {
    let mut cfg = config(10);
    cfg.margin = headroom_core::SignedDuration::from_secs(60);
    let mut identity = IdentityState::new(&cfg);
    settle(&mut identity, 100, &[20], 3);
    let start = 3 * WINDOW_MS;
    round_trip(&mut identity, 0, start + 1, 99, 1);
    let reset = t_ms(4 * WINDOW_MS);
    let decision = multi::grant_all(
        &cfg,
        &mut identity,
        &[(global(), 1), (route(0), 1)],
        RequestKind::REST_READ,
        t_ms(start + 2),
    );
    match decision {
        AllDecision::Wait { until, .. } => assert_eq!(
            until,
            reset
                .checked_add(learned::LEARNED_MARGIN)
                .expect("in range")
        ),
        other => panic!("the spent route should be held back: {other:?}"),
    }
}

/// A newcomer sent one request at a time whatever its reading said: a run inside a window or
/// two of a roomy limit never settled and crawled at a round trip a request (5× the latency
/// bound). With a fresh reading far above its reserve it may have a quarter of the room in
/// flight, up to the ceiling; near its reserve, still one.
#[test]
fn a_newcomer_with_room_to_spare_sends_more_than_one_at_a_time() {
    let mut identity = IdentityState::new(&config(10));
    round_trip(&mut identity, 0, 1, 99_999, 99_999);
    let (roomy, _) = grants_until_wait(&mut identity, 0, 2);
    assert_eq!(roomy, 10, "a roomy reading lets the ceiling fill");

    let mut identity = IdentityState::new(&config(10));
    round_trip(&mut identity, 0, 1, 99, 9);
    let (tight, reason) = grants_until_wait(&mut identity, 0, 2);
    assert_eq!(tight, 1, "near its reserve, one at a time: {reason:?}");
}

#[test]
fn alone_a_process_uses_every_window_whole() {
    // The account binds (200 over two routes of 150), then a route binds (40 of 100).
    for (global_limit, route_limits) in [(200, vec![150, 150]), (100, vec![40])] {
        let outcome = sim::run(&Setup {
            seed: 7,
            global_limit,
            route_limits: route_limits.clone(),
            starts: vec![0],
            ceiling: 10,
            latency: (5, 60),
            until_ms: 12 * WINDOW_MS - 1,
        });
        assert_eq!(outcome.over_limit, 0);
        let binding: u64 = global_limit.min(route_limits.iter().sum());
        // The account's window keeps one request for a process joining it.
        let whole = if binding == global_limit {
            binding - 1
        } else {
            binding
        };
        // The first windows learn (a newcomer keeps its reserve: it cannot yet tell whether
        // it is alone); every later one is used whole past its head.
        for (w, served) in outcome.per_window.iter().enumerate().skip(3).take(9) {
            assert_eq!(*served, whole, "window {w} ({route_limits:?})");
        }
    }
}

fn assert_shared_safely(setup: &Setup) {
    let outcome = sim::run(setup);
    assert_eq!(
        outcome.over_limit, 0,
        "sent over the limit: {setup:?} {outcome:?}"
    );
    for (p, late) in outcome.served_late.iter().enumerate() {
        assert!(
            *late > 0,
            "process {p} made no progress late in the run: {setup:?} {outcome:?}"
        );
    }
}

#[test]
fn two_machines_sharing_the_account_never_send_over_the_limit() {
    assert_shared_safely(&Setup {
        seed: 1,
        global_limit: 100,
        route_limits: vec![30, 5],
        starts: vec![0, 12_345],
        ceiling: 10,
        latency: (5, 80),
        until_ms: 8 * WINDOW_MS,
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Over seeded schedules, latencies and limits unknown to either governor — a route
    /// smaller than the ceiling among them — two machines never send over a limit and both
    /// keep making progress.
    #[test]
    fn two_governors_sharing_windows_never_exceed_them(
        seed in any::<u64>(),
        global_limit in 20u64..3000,
        route_limits in prop::collection::vec(2u64..80, 1..4),
        second in 0i64..40_000,
        ceiling in 2u32..12,
        lat_max in 2i64..400,
    ) {
        let setup = Setup {
            seed,
            global_limit,
            route_limits,
            starts: vec![0, second],
            ceiling,
            latency: (1, lat_max),
            until_ms: 8 * WINDOW_MS,
        };
        let outcome = sim::run(&setup);
        prop_assert_eq!(outcome.over_limit, 0, "{:?} {:?}", setup, outcome);
        for late in &outcome.served_late {
            prop_assert!(*late > 0, "{:?} {:?}", setup, outcome);
        }
    }

    /// However this state's answers are ordered and others' spend interleaved, what it learns
    /// never exceeds the true limit, and alone it sees no foreign spend.
    #[test]
    fn the_learned_limit_never_exceeds_the_true_one(
        limit in 1u64..60,
        foreign in prop::collection::vec(any::<bool>(), 0..60),
        order in prop::collection::vec(any::<prop::sample::Index>(), 0..60),
    ) {
        let mut state = BucketState::new(route(0));
        let reset = WINDOW_MS;
        let mut left = limit;
        let mut own_out: Vec<u64> = Vec::new();
        let mut someone_else = false;
        for (i, theirs) in foreign.iter().enumerate() {
            if left == 0 {
                break;
            }
            left -= 1;
            if *theirs {
                someone_else = true;
            } else {
                state.in_flight += 1;
                own_out.push(left);
            }
            // Answer one of ours, chosen at random, now and then.
            if let Some(pick) = order.get(i)
                && !own_out.is_empty()
                && i % 2 == 0
            {
                let left_then = own_out.swap_remove(pick.index(own_out.len()));
                let signal = reading(&route(0), left_then, reset);
                rule::apply_reading(&config(10), &mut state, &signal, t_ms(i as i64));
                state.in_flight -= 1;
            }
        }
        while let Some(left_then) = own_out.pop() {
            rule::apply_reading(&config(10), &mut state, &reading(&route(0), left_then, reset), t_ms(100));
            state.in_flight -= 1;
        }
        prop_assert!(state.learned.limit <= limit);
        if !someone_else {
            prop_assert!(!state.learned.foreign_seen(), "{:?}", state.learned);
            if state.learned.answers > 0 {
                prop_assert_eq!(state.learned.limit, limit);
            }
        }
    }

    /// A refused answer spent nothing: what remains is all it teaches.
    #[test]
    fn a_refusal_counts_as_no_own_spend(left in 0u64..50) {
        let mut state = BucketState::new(global());
        let mut signal = reading(&global(), left, WINDOW_MS);
        signal.reason = Some(LimitReason::Primary);
        rule::apply_reading(&config(10), &mut state, &signal, t_ms(0));
        prop_assert_eq!(state.learned.limit, left);
        prop_assert!(learned::reserve(&config(10), &state, 1, false, t_ms(0)) < state.learned.limit.max(1));
    }
}
