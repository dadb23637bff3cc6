//! GitHub Enterprise Server with rate limiting off (its default): no `x-ratelimit-*` header on
//! any answer, no primary exhaustion, GraphQL's `rateLimit` null, `GET /rate_limit` a 404 —
//! and the secondary limits still in force.

mod common;

use bytes::Bytes;
use common::*;
use headroom_sim::{Scenario, SimConfig};
use http::{Method, Response};
use serde_json::json;

fn ghes() -> SimConfig {
    config().with_org("acme", 3).without_rate_limiting()
}

fn rate_limit_headers(r: &Response<Bytes>) -> Vec<String> {
    r.headers()
        .keys()
        .map(|k| k.as_str().to_owned())
        .filter(|k| k.starts_with("x-ratelimit"))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn rate_limit_answers_404_not_enabled() {
    let sim = sim(ghes());
    for token in [Some("t1"), None] {
        let r = get(&sim, "/rate_limit", token).await;
        assert_eq!(r.status(), 404);
        assert_eq!(
            json(&r),
            json!({
                "message": "Rate limiting is not enabled.",
                "documentation_url": "https://docs.github.com/enterprise-server/rest",
            })
        );
        assert!(rate_limit_headers(&r).is_empty());
    }
    // github.com answers it.
    let dotcom = common::sim(config());
    assert_eq!(get(&dotcom, "/rate_limit", Some("t1")).await.status(), 200);
}

#[tokio::test(start_paused = true)]
async fn no_answer_carries_rate_limit_headers_and_no_bucket_runs_out() {
    let mut config = ghes().with_scenario(Scenario::RateLimited);
    // A window github.com would exhaust at once (and the scenario pre-exhausts): neither
    // applies where rate limiting is off.
    config.core_limit = 2;
    config.search_limit = 1;
    config.graphql_limit = 1;
    let sim = sim(config);
    let mut answers = Vec::new();
    for _ in 0..5 {
        answers.push(get(&sim, "/user", Some("t1")).await);
        answers.push(get(&sim, "/orgs/acme/repos", Some("t1")).await);
        answers.push(get(&sim, "/search/users?q=user%3Aalice", Some("t1")).await);
        answers.push(get(&sim, "/events", None).await);
    }
    answers.push(
        send(
            &sim,
            Method::POST,
            "/orgs/acme/repos",
            Some("t1"),
            json!({"name": "svc"}),
        )
        .await,
    );
    answers.push(get(&sim, "/repos/acme/nope", Some("t1")).await);
    for r in &answers {
        assert!(
            rate_limit_headers(r).is_empty(),
            "{}: {:?}",
            r.status(),
            rate_limit_headers(r)
        );
        assert!(
            [200, 201, 404].contains(&r.status().as_u16()),
            "{} {:?}",
            r.status(),
            r.body()
        );
    }
    assert_eq!(answers.iter().filter(|r| r.status() == 404).count(), 1);
    // Nothing was counted against a bucket.
    assert!(
        sim.request_log()
            .iter()
            .all(|e| e.bucket.is_none() && e.cost == 0)
    );
}

#[tokio::test(start_paused = true)]
async fn graphql_rate_limit_is_null() {
    let mut config = ghes();
    config.graphql_limit = 1;
    let sim = sim(config);
    for _ in 0..3 {
        let r = graphql(
            &sim,
            "t1",
            "{ viewer { login } rateLimit { limit cost remaining used resetAt nodeCount } }",
        )
        .await;
        assert_eq!(r.status(), 200);
        assert!(rate_limit_headers(&r).is_empty());
        let body = json(&r);
        assert_eq!(body["data"]["viewer"]["login"], "alice", "{body}");
        assert!(body["data"]["rateLimit"].is_null(), "{body}");
        assert!(body.get("errors").is_none(), "{body}");
    }
}

#[tokio::test(start_paused = true)]
async fn secondary_limits_still_apply() {
    let mut config = ghes();
    config.rest_points_per_minute = 5;
    let sim = sim(config);
    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(get(&sim, "/user", Some("t1")).await);
    }
    assert!(statuses[..5].iter().all(|r| r.status() == 200));
    let blocked = &statuses[5];
    assert_eq!(blocked.status(), 403);
    assert!(
        json(blocked)["message"]
            .as_str()
            .is_some_and(|m| m.contains("secondary rate limit")),
        "{:?}",
        json(blocked)
    );
    assert!(header(blocked, "retry-after").is_some());
    assert!(rate_limit_headers(blocked).is_empty());
}
