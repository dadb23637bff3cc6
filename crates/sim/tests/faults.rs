//! Seeded random faults: a 5xx rate, timeouts, a latency distribution — on the clock.

mod common;

use common::*;
use headroom_core::clock::{Clock, SignedDuration};
use headroom_sim::Resource;

#[tokio::test(start_paused = true)]
async fn error_rate_is_seeded_and_reproducible() {
    let mut c = config();
    c.faults.error_rate = 0.3;
    c.rest_points_per_minute = 10_000;
    let run = |c: headroom_sim::SimConfig| async move {
        let sim = sim(c);
        let mut statuses = Vec::new();
        for _ in 0..200 {
            statuses.push(
                get(&sim, "/users/alice", Some("t1"))
                    .await
                    .status()
                    .as_u16(),
            );
        }
        statuses
    };
    let a = run(c.clone()).await;
    let b = run(c.clone()).await;
    assert_eq!(a, b, "same seed, same faults");
    let errors = a.iter().filter(|s| **s >= 500).count();
    assert!((30..=90).contains(&errors), "about 30% of 200: {errors}");
    assert!(a.iter().all(|s| [200, 500, 502, 503].contains(s)));
    let other = run(c.with_seed(99)).await;
    assert_ne!(a, other);
}

#[tokio::test(start_paused = true)]
async fn latency_is_slept_on_the_clock() {
    let mut c = config();
    c.faults.latency = SignedDuration::from_millis(250);
    c.faults.latency_jitter = SignedDuration::from_millis(100);
    let sim = sim(c);
    let start = sim.clock().now();
    for _ in 0..10 {
        get(&sim, "/user", Some("t1")).await;
    }
    let took = sim.clock().now().duration_since(start);
    assert!(
        took >= SignedDuration::from_millis(2500) && took <= SignedDuration::from_millis(3500),
        "{took:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_bucket_latency_replaces_the_fixed_latency_for_that_bucket_only() {
    let mut c = config();
    c.faults.latency = SignedDuration::from_millis(150);
    c.faults
        .bucket_latency
        .insert(Resource::Graphql, SignedDuration::from_millis(800));
    let sim = sim(c);
    let took = |from: headroom_core::clock::Timestamp| sim.clock().now().duration_since(from);
    let start = sim.clock().now();
    assert_eq!(get(&sim, "/users/alice", Some("t1")).await.status(), 200);
    assert_eq!(
        took(start),
        SignedDuration::from_millis(150),
        "REST: the fixed latency"
    );
    let start = sim.clock().now();
    let r = graphql(&sim, "t1", "{ viewer { login } }").await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        took(start),
        SignedDuration::from_millis(800),
        "GraphQL: its own"
    );
}

#[tokio::test(start_paused = true)]
async fn a_timeout_hangs_then_answers_504_and_a_client_deadline_fires_first() {
    let mut c = config();
    c.faults.timeout_rate = 1.0;
    c.faults.timeout_after = SignedDuration::from_secs(30);
    let sim = sim(c);
    let start = sim.clock().now();
    let r = get(&sim, "/user", Some("t1")).await;
    assert_eq!(r.status(), 504);
    assert!(sim.clock().now().duration_since(start) >= SignedDuration::from_secs(30));
    // A client with a 10 s read timeout gives up; its in-flight slot is released.
    let gave_up = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        get(&sim, "/user", Some("t1")),
    )
    .await;
    assert!(gave_up.is_err());
    let log = sim.request_log();
    assert_eq!(log.len(), 1, "the abandoned request never answered");
}
