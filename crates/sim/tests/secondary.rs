//! Secondary limits: concurrency, REST and GraphQL points per minute, content creation; with
//! and without retry-after; x-ratelimit headers present with remaining > 0.

mod common;

use common::*;
use headroom_core::clock::SignedDuration;
use http::Method;
use serde_json::json;

const SECONDARY: &str =
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.";

fn assert_secondary(r: &http::Response<bytes::Bytes>, wording: &str) {
    assert_eq!(r.status(), 403);
    let msg = json(r)["message"].as_str().unwrap_or_default().to_owned();
    assert!(msg.starts_with(wording), "{msg}");
    assert!(msg.contains("request ID"), "{msg}");
    assert!(
        num(r, "x-ratelimit-remaining") > 0,
        "headers present with remaining > 0"
    );
}

#[tokio::test(start_paused = true)]
async fn concurrent_requests_above_the_limit_are_refused() {
    let mut c = config();
    c.concurrency_limit = 3;
    c.faults.latency = SignedDuration::from_secs(1);
    let sim = sim(c);
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let sim = sim.clone();
        tasks.push(tokio::spawn(
            async move { get(&sim, "/user", Some("t1")).await },
        ));
    }
    // Another user is not affected by alice's concurrency.
    let bob = get(&sim, "/user", Some("tb")).await;
    assert_eq!(bob.status(), 200);
    let mut statuses = Vec::new();
    for t in tasks {
        let r = t.await.expect("task ran");
        if r.status() == 403 {
            assert_secondary(&r, SECONDARY);
            assert_eq!(header(&r, "retry-after"), Some("1"));
        }
        statuses.push(r.status().as_u16());
    }
    statuses.sort_unstable();
    assert_eq!(statuses, vec![200, 200, 200, 403]);
    let log = sim.request_log();
    let refused = log.iter().find(|e| e.status == 403).expect("logged");
    assert_eq!(refused.in_flight, 3, "three were in flight when it started");
    assert_eq!(refused.cost, 0);
    // Slots are released: the next request passes.
    assert_eq!(get(&sim, "/user", Some("t2")).await.status(), 200);
}

#[tokio::test(start_paused = true)]
async fn rest_points_per_minute_with_retry_after() {
    let mut c = config();
    c.rest_points_per_minute = 10;
    let sim = sim(c);
    for _ in 0..10 {
        assert_eq!(get(&sim, "/user", Some("t1")).await.status(), 200);
    }
    sim.clock().sleep(SignedDuration::from_secs(20)).await;
    let r = get(&sim, "/user", Some("t2")).await;
    assert_secondary(&r, SECONDARY);
    assert_eq!(header(&r, "retry-after"), Some("40"));
    assert_eq!(
        num(&r, "x-ratelimit-used"),
        10,
        "the primary quota is not spent"
    );
    sim.clock().sleep(SignedDuration::from_secs(40)).await;
    assert_eq!(get(&sim, "/user", Some("t1")).await.status(), 200);
}

#[tokio::test(start_paused = true)]
async fn writes_cost_five_points() {
    let mut c = config();
    c.rest_points_per_minute = 10;
    let sim = sim(c);
    for name in ["one", "two"] {
        let r = send(
            &sim,
            Method::POST,
            "/orgs/acme/repos",
            Some("t1"),
            json!({"name": name}),
        )
        .await;
        assert_eq!(r.status(), 201);
    }
    let r = get(&sim, "/user", Some("t1")).await;
    assert_secondary(&r, SECONDARY);
}

#[tokio::test(start_paused = true)]
async fn secondary_limits_can_come_without_retry_after() {
    let mut c = config();
    c.rest_points_per_minute = 2;
    c.secondary_retry_after = false;
    let sim = sim(c);
    get(&sim, "/user", Some("t1")).await;
    get(&sim, "/user", Some("t1")).await;
    let r = get(&sim, "/user", Some("t1")).await;
    assert_secondary(&r, SECONDARY);
    assert_eq!(header(&r, "retry-after"), None);
}

#[tokio::test(start_paused = true)]
async fn graphql_points_per_minute() {
    let mut c = config();
    c.graphql_points_per_minute = 3;
    let sim = sim(c);
    for _ in 0..3 {
        let r = graphql(&sim, "t1", "{ viewer { login } }").await;
        assert_eq!(r.status(), 200);
        assert_eq!(json(&r)["data"]["viewer"]["login"], "alice");
    }
    let r = graphql(&sim, "t2", "{ viewer { login } }").await;
    assert_secondary(&r, SECONDARY);
    assert_eq!(header(&r, "x-ratelimit-resource"), Some("graphql"));
    assert_eq!(num(&r, "x-ratelimit-used"), 3);
    // REST is a separate limiter.
    assert_eq!(get(&sim, "/user", Some("t1")).await.status(), 200);
}

#[tokio::test(start_paused = true)]
async fn content_creation_per_minute() {
    let mut c = config();
    c.content_creation_per_minute = 2;
    let sim = sim(c);
    for name in ["a", "b"] {
        let r = send(
            &sim,
            Method::POST,
            "/orgs/acme/repos",
            Some("t1"),
            json!({"name": name}),
        )
        .await;
        assert_eq!(r.status(), 201);
    }
    let r = send(
        &sim,
        Method::POST,
        "/orgs/acme/repos",
        Some("t2"),
        json!({"name": "c"}),
    )
    .await;
    assert_secondary(
        &r,
        "You have exceeded a secondary rate limit and have been temporarily blocked from content creation.",
    );
    assert!(header(&r, "retry-after").is_some());
    // Reads go on.
    assert_eq!(get(&sim, "/repos/acme/a", Some("t1")).await.status(), 200);
    sim.clock().sleep(SignedDuration::from_secs(61)).await;
    let r = send(
        &sim,
        Method::POST,
        "/orgs/acme/repos",
        Some("t2"),
        json!({"name": "c"}),
    )
    .await;
    assert_eq!(r.status(), 201);
}

#[tokio::test(start_paused = true)]
async fn retry_after_can_be_an_http_date() {
    let mut c = config();
    c.rest_points_per_minute = 1;
    c.retry_after_as_http_date = true;
    let sim = sim(c);
    get(&sim, "/user", Some("t1")).await;
    let r = get(&sim, "/user", Some("t1")).await;
    assert_eq!(r.status(), 403);
    // The minute opened at 10:00:00 ends at 10:01:00.
    assert_eq!(
        header(&r, "retry-after"),
        Some("Mon, 30 Nov 2026 10:01:00 GMT")
    );
}
