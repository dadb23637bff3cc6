//! The simulated GitLab's limits: the per-user per-minute throttle and its `RateLimit-*`
//! headers, its 429, the self-managed mode without headers, and the project creation
//! application limit that refuses while the headers show room.

mod common;

use common::gitlab::*;
use common::*;
use headroom_core::clock::SignedDuration;
use headroom_sim::SimConfig;
use http::Method;
use serde_json::json;

fn limited(per_minute: u64) -> SimConfig {
    let mut c = config();
    c.gitlab_requests_per_minute = per_minute;
    c
}

#[tokio::test(start_paused = true)]
async fn every_response_carries_the_throttles_headers() {
    let sim = sim(config());
    let r = gl_get(&sim, "/user", "t1").await;
    assert_eq!(
        header(&r, "ratelimit-name"),
        Some("throttle_authenticated_api")
    );
    assert_eq!(num(&r, "ratelimit-limit"), 2_000);
    assert_eq!(num(&r, "ratelimit-observed"), 1);
    assert_eq!(num(&r, "ratelimit-remaining"), 1_999);
    // The anchor is on a minute boundary: the window ends a minute later.
    assert_eq!(num(&r, "ratelimit-reset"), anchor().as_second() + 60);
    assert!(header(&r, "retry-after").is_none());
    // A 404 counts and reports too; the other token of alice shares her window.
    let r = gl(&sim, Method::GET, "/projects/404", "t2", None).await;
    assert_eq!(r.status(), 404);
    assert_eq!(num(&r, "ratelimit-observed"), 2);
    // Bob has his own.
    let r = gl_get(&sim, "/user", "tb").await;
    assert_eq!(num(&r, "ratelimit-observed"), 1);
    // Unauthenticated answers carry none.
    let r = sim
        .handle(gl_request(Method::GET, "/user", None, None), PEER)
        .await;
    assert!(header(&r, "ratelimit-limit").is_none());
}

#[tokio::test(start_paused = true)]
async fn over_the_limit_answers_429_retry_later_until_the_next_minute() {
    let sim = sim(limited(3));
    sim.clock().sleep(SignedDuration::from_secs(15)).await;
    for n in 1..=3 {
        assert_eq!(
            gl_get(&sim, "/user", "t1").await.status(),
            200,
            "request {n}"
        );
    }
    let r = gl_get(&sim, "/user", "t1").await;
    assert_eq!(r.status(), 429);
    assert_eq!(header(&r, "content-type"), Some("text/plain"));
    assert_eq!(String::from_utf8_lossy(r.body()).trim_end(), "Retry later");
    assert_eq!(num(&r, "ratelimit-limit"), 3);
    assert_eq!(num(&r, "ratelimit-observed"), 4);
    assert_eq!(num(&r, "ratelimit-remaining"), 0);
    assert_eq!(num(&r, "retry-after"), 45);
    let reset = anchor().as_second() + 60;
    assert_eq!(num(&r, "ratelimit-reset"), reset);
    assert_eq!(
        header(&r, "ratelimit-resettime"),
        Some("Mon, 30 Nov 2026 10:01:00 GMT")
    );
    // A refused mutation is not applied.
    let r = gl(
        &sim,
        Method::POST,
        "/projects",
        "t1",
        Some(json!({"name": "w"})),
    )
    .await;
    assert_eq!(r.status(), 429);
    assert!(sim.with_gitlab(|gl| gl.projects.is_empty()));
    // The next minute is a new window.
    sim.clock().sleep(SignedDuration::from_secs(45)).await;
    let r = gl_get(&sim, "/user", "t1").await;
    assert_eq!(r.status(), 200);
    assert_eq!(num(&r, "ratelimit-observed"), 1);
}

#[tokio::test(start_paused = true)]
async fn a_self_managed_instance_sends_no_ratelimit_headers_and_throttles_nothing() {
    let mut c = limited(1).with_gitlab_self_managed();
    c.gitlab_project_creations_per_minute = 0;
    let sim = sim(c);
    for _ in 0..5 {
        let r = gl_get(&sim, "/user", "t1").await;
        assert_eq!(r.status(), 200);
        let names: Vec<&str> = r.headers().keys().map(|k| k.as_str()).collect();
        assert!(
            !names.iter().any(|n| n.starts_with("ratelimit")),
            "{names:?}"
        );
    }
    let r = gl(
        &sim,
        Method::POST,
        "/projects",
        "t1",
        Some(json!({"name": "w"})),
    )
    .await;
    assert_eq!(r.status(), 201);
    assert!(header(&r, "ratelimit-remaining").is_none());
}

#[tokio::test(start_paused = true)]
async fn project_creation_is_refused_by_the_application_limit_while_headers_show_room() {
    let mut c = config();
    c.gitlab_project_creations_per_minute = 2;
    let sim = sim(c);
    for name in ["a", "b"] {
        let r = gl(
            &sim,
            Method::POST,
            "/projects",
            "t1",
            Some(json!({"name": name})),
        )
        .await;
        assert_eq!(r.status(), 201);
    }
    let r = gl(
        &sim,
        Method::POST,
        "/projects",
        "t1",
        Some(json!({"name": "c"})),
    )
    .await;
    assert_eq!(r.status(), 429);
    assert_eq!(
        json(&r),
        json!({"message": {"error": "This endpoint has been requested too many times. Try again later."}})
    );
    assert!(num(&r, "ratelimit-remaining") > 0);
    assert!(header(&r, "retry-after").is_none());
    assert_eq!(sim.with_gitlab(|gl| gl.projects.len()), 2);
    // Other endpoints are not limited by it.
    assert_eq!(
        gl_get(&sim, "/projects/alice%2Fa", "t1").await.status(),
        200
    );
    sim.clock().sleep(SignedDuration::from_secs(60)).await;
    let r = gl(
        &sim,
        Method::POST,
        "/projects",
        "t1",
        Some(json!({"name": "c"})),
    )
    .await;
    assert_eq!(r.status(), 201);
}

#[tokio::test(start_paused = true)]
async fn a_zero_gitlab_limit_is_refused() {
    let c = limited(0);
    assert!(
        headroom_sim::Simulator::new(c, headroom_core::clock::TokioClock::anchored_at(anchor()))
            .is_err()
    );
}
