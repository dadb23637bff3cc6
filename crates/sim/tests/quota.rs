//! Primary limits: identities, buckets, fixed windows, headers, exhaustion bodies,
//! `/rate_limit`, external spend.

mod common;

use std::net::{IpAddr, Ipv4Addr};

use common::*;
use headroom_core::clock::Clock;
use headroom_core::clock::SignedDuration;
use headroom_sim::{ExternalSpend, Resource, Subject};
use http::Method;

fn reset_of(resp: &http::Response<bytes::Bytes>) -> i64 {
    num(resp, "x-ratelimit-reset")
}

#[tokio::test(start_paused = true)]
async fn every_response_carries_rate_limit_headers_and_a_request_id() {
    let sim = sim(config());
    for (uri, token, resource) in [
        ("/user", Some("t1"), "core"),
        ("/users/does-not-exist", Some("t1"), "core"),
        ("/events", None, "core"),
        ("/search/users?q=user:alice", Some("t1"), "search"),
        ("/search/code?q=foo", Some("t1"), "code_search"),
        ("/rate_limit", Some("t1"), "core"),
    ] {
        let r = get(&sim, uri, token).await;
        for h in [
            "x-ratelimit-limit",
            "x-ratelimit-remaining",
            "x-ratelimit-used",
            "x-ratelimit-reset",
        ] {
            assert!(num(&r, h) >= 0, "{uri}: {h}");
        }
        assert_eq!(header(&r, "x-ratelimit-resource"), Some(resource), "{uri}");
        assert!(
            header(&r, "x-github-request-id").is_some_and(|v| v.len() > 10),
            "{uri}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn window_starts_at_first_request_and_resets_one_hour_later() {
    let sim = sim(config());
    let start = anchor().as_second();
    let first = get(&sim, "/user", Some("t1")).await;
    assert_eq!(num(&first, "x-ratelimit-limit"), 5000);
    assert_eq!(num(&first, "x-ratelimit-remaining"), 4999);
    assert_eq!(num(&first, "x-ratelimit-used"), 1);
    assert_eq!(reset_of(&first), start + 3600);

    sim.clock().sleep(SignedDuration::from_secs(1800)).await;
    let mid = get(&sim, "/user", Some("t1")).await;
    assert_eq!(num(&mid, "x-ratelimit-used"), 2);
    assert_eq!(reset_of(&mid), start + 3600, "same window");

    // Nothing happens for a while after the reset: the next window starts at the next
    // request, not at the old reset.
    sim.clock()
        .sleep(SignedDuration::from_secs(1800 + 7200 + 25))
        .await;
    let later = get(&sim, "/user", Some("t1")).await;
    let now = sim.clock().now().as_second();
    assert_eq!(num(&later, "x-ratelimit-used"), 1, "a fresh window");
    assert_eq!(reset_of(&later), now + 3600);
}

#[tokio::test(start_paused = true)]
async fn two_tokens_of_one_user_share_one_quota_other_users_do_not() {
    let sim = sim(config());
    get(&sim, "/user", Some("t1")).await;
    get(&sim, "/user", Some("t1")).await;
    let via_t2 = get(&sim, "/user", Some("t2")).await;
    assert_eq!(num(&via_t2, "x-ratelimit-used"), 3, "t2 sees t1's spending");
    assert_eq!(
        json(&via_t2)["login"],
        "alice",
        "GET /user returns the token's owner"
    );
    let bob = get(&sim, "/user", Some("tb")).await;
    assert_eq!(num(&bob, "x-ratelimit-used"), 1);
    assert_eq!(json(&bob)["login"], "bob");
}

#[tokio::test(start_paused = true)]
async fn an_installation_has_its_own_quota_and_wording() {
    let mut c = config();
    c.installation_core_limit = 2;
    let sim = sim(c);
    get(&sim, "/user", Some("t1")).await;
    let a = get(&sim, "/orgs/acme", Some("ghs_app")).await;
    assert_eq!(num(&a, "x-ratelimit-used"), 1, "not alice's quota");
    assert_eq!(num(&a, "x-ratelimit-limit"), 2);
    let me = get(&sim, "/user", Some("ghs_app")).await;
    assert_eq!(me.status(), 403, "an installation is not a user");
    let exhausted = get(&sim, "/orgs/acme", Some("ghs_app")).await;
    assert_eq!(exhausted.status(), 403);
    let msg = json(&exhausted)["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        msg.starts_with("API rate limit exceeded for installation ID 42."),
        "{msg}"
    );
}

#[tokio::test(start_paused = true)]
async fn unauthenticated_requests_are_keyed_by_ip_with_60_an_hour() {
    let sim = sim(config());
    for i in 1..=60 {
        let r = get(&sim, "/users/alice", None).await;
        assert_eq!(r.status(), 200, "request {i}");
        assert_eq!(num(&r, "x-ratelimit-limit"), 60);
    }
    let over = get(&sim, "/users/alice", None).await;
    assert_eq!(over.status(), 403);
    assert_eq!(num(&over, "x-ratelimit-remaining"), 0);
    let body = json(&over);
    assert_eq!(
        body["message"],
        "API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)"
    );
    assert!(
        body["documentation_url"]
            .as_str()
            .is_some_and(|d| d.starts_with("https://docs.github.com/"))
    );

    // Another address has its own quota; a token has its own too.
    let other = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
    let r = sim
        .handle(request(Method::GET, "/users/alice", None, None), other)
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(num(&r, "x-ratelimit-used"), 1);
    assert_eq!(get(&sim, "/users/alice", Some("t1")).await.status(), 200);
}

#[tokio::test(start_paused = true)]
async fn unauthenticated_search_is_10_a_minute_authenticated_30() {
    let sim = sim(config());
    let anon = get(&sim, "/search/users?q=user:alice", None).await;
    assert_eq!(num(&anon, "x-ratelimit-limit"), 10);
    assert_eq!(reset_of(&anon), anchor().as_second() + 60);
    let authed = get(&sim, "/search/users?q=user:alice", Some("t1")).await;
    assert_eq!(num(&authed, "x-ratelimit-limit"), 30);
}

#[tokio::test(start_paused = true)]
async fn rejected_requests_do_not_consume_and_the_next_window_serves_again() {
    let mut c = config();
    c.core_limit = 3;
    let sim = sim(c);
    for _ in 0..3 {
        assert_eq!(get(&sim, "/user", Some("t1")).await.status(), 200);
    }
    for _ in 0..5 {
        let r = get(&sim, "/user", Some("t2")).await;
        assert_eq!(r.status(), 403);
        assert_eq!(num(&r, "x-ratelimit-remaining"), 0);
        assert_eq!(
            num(&r, "x-ratelimit-used"),
            3,
            "a rejected request is not counted"
        );
        let id = sim.subject_for_token("t1").map(|s| match s {
            Subject::User { id, .. } => id,
            _ => 0,
        });
        let msg = json(&r)["message"].as_str().unwrap_or_default().to_owned();
        assert!(
            msg.starts_with(&format!(
                "API rate limit exceeded for user ID {}.",
                id.unwrap_or(0)
            )),
            "{msg}"
        );
    }
    let log = sim.request_log();
    assert_eq!(log.iter().filter(|e| e.status == 403).count(), 5);
    assert!(log.iter().filter(|e| e.status == 403).all(|e| e.cost == 0));
    let reset = reset_of(&get(&sim, "/user", Some("t1")).await);
    sim.clock()
        .sleep_until(headroom_core::clock::Timestamp::from_second(reset).expect("valid"))
        .await;
    let again = get(&sim, "/user", Some("t1")).await;
    assert_eq!(again.status(), 200);
    assert_eq!(num(&again, "x-ratelimit-used"), 1);
}

#[tokio::test(start_paused = true)]
async fn window_secs_shortens_the_primary_window_only() {
    let c = config().with_window(SignedDuration::from_secs(120));
    let sim = sim(c);
    let r = get(&sim, "/user", Some("t1")).await;
    assert_eq!(reset_of(&r), anchor().as_second() + 120);
    assert_eq!(num(&r, "x-ratelimit-limit"), 5000, "limits stay as given");
    sim.clock().sleep(SignedDuration::from_secs(121)).await;
    assert_eq!(
        num(&get(&sim, "/user", Some("t1")).await, "x-ratelimit-used"),
        1
    );
}

#[tokio::test(start_paused = true)]
async fn rate_limit_is_free_and_reports_every_bucket() {
    let sim = sim(config());
    get(&sim, "/user", Some("t1")).await;
    for _ in 0..5 {
        let r = get(&sim, "/rate_limit", Some("t1")).await;
        assert_eq!(r.status(), 200);
        let b = json(&r);
        assert_eq!(
            b["resources"]["core"]["used"], 1,
            "free for the primary limit"
        );
        assert_eq!(b["resources"]["core"]["remaining"], 4999);
        assert_eq!(b["rate"]["used"], 1);
        assert_eq!(b["resources"]["search"]["limit"], 30);
        assert_eq!(b["resources"]["graphql"]["limit"], 5000);
        assert_eq!(b["resources"]["code_search"]["limit"], 10);
    }
    let log = sim.request_log();
    assert!(
        log.iter()
            .filter(|e| e.path == "/rate_limit")
            .all(|e| e.cost == 0)
    );
    // API version 2026-03-10 dropped the top-level `rate`.
    let mut req = request(Method::GET, "/rate_limit", Some("t1"), None);
    req.headers_mut().insert(
        "x-github-api-version",
        http::HeaderValue::from_static("2026-03-10"),
    );
    let r = sim.handle(req, PEER).await;
    assert!(json(&r).get("rate").is_none());
}

#[tokio::test(start_paused = true)]
async fn lying_rate_limit_reports_a_full_quota_while_headers_tell_the_truth() {
    let mut c = config();
    c.lying_rate_limit = true;
    let sim = sim(c);
    for _ in 0..10 {
        get(&sim, "/user", Some("t1")).await;
    }
    sim.clock().sleep(SignedDuration::from_secs(600)).await;
    let r = get(&sim, "/rate_limit", Some("t1")).await;
    let b = json(&r);
    let now = sim.clock().now().as_second();
    assert_eq!(b["resources"]["core"]["remaining"], 5000);
    assert_eq!(b["resources"]["core"]["used"], 0);
    assert_eq!(b["resources"]["core"]["reset"], now + 3600);
    let truth = get(&sim, "/user", Some("t1")).await;
    assert_eq!(num(&truth, "x-ratelimit-used"), 11);
    assert_eq!(reset_of(&truth), anchor().as_second() + 3600);
}

#[tokio::test(start_paused = true)]
async fn external_spend_uses_the_same_users_quota_from_elsewhere() {
    let c = config().with_external_spend(ExternalSpend::parse("alice:120").expect("valid"));
    let sim = sim(c);
    // A client that counts for itself would believe 4,999 remain after its one request.
    sim.clock().sleep(SignedDuration::from_secs(600)).await;
    let r = get(&sim, "/user", Some("t1")).await;
    assert_eq!(
        num(&r, "x-ratelimit-used"),
        1200 + 1,
        "10 minutes at 120/min, plus ours"
    );
    assert_eq!(
        num(&get(&sim, "/user", Some("tb")).await, "x-ratelimit-used"),
        1,
        "bob untouched"
    );
    // 120/min is 7,200/h: the quota runs out after about 41.7 minutes of the window.
    sim.clock().sleep(SignedDuration::from_secs(40 * 60)).await;
    let r = get(&sim, "/user", Some("t2")).await;
    assert_eq!(r.status(), 403);
    assert_eq!(num(&r, "x-ratelimit-remaining"), 0);
    let q = sim.quota(
        &sim.subject_for_token("t1").expect("known token"),
        Resource::Core,
    );
    assert_eq!(q.remaining, 0);
    // The spender opens the next window at the reset; it is partly spent at once.
    sim.clock()
        .sleep(SignedDuration::from_secs(10 * 60 + 30))
        .await;
    let r = get(&sim, "/user", Some("t1")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(reset_of(&r), anchor().as_second() + 7200);
    assert_eq!(num(&r, "x-ratelimit-used"), 60 + 1);
}

#[tokio::test(start_paused = true)]
async fn bad_credentials_answer_401_and_do_not_count() {
    let sim = sim(config());
    let r = get(&sim, "/user", Some("nope")).await;
    assert_eq!(r.status(), 401);
    assert_eq!(json(&r)["message"], "Bad credentials");
    let anon = get(&sim, "/user", None).await;
    assert_eq!(anon.status(), 401);
    assert_eq!(json(&anon)["message"], "Requires authentication");
    let log = sim.request_log();
    assert_eq!(log[0].cost, 0);
    assert_eq!(log[0].identity, "127.0.0.1");
}

#[tokio::test(start_paused = true)]
async fn the_log_records_identity_fingerprint_bucket_cost_and_remaining() {
    let path = std::env::temp_dir().join(format!("headroom-sim-log-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let mut c = config();
    c.log_file = Some(path.clone());
    let sim = sim(c);
    get(&sim, "/events?per_page=5", Some("t1")).await;
    get(&sim, "/search/users?q=user:alice", None).await;
    let text = std::fs::read_to_string(&path).expect("log written");
    let _ = std::fs::remove_file(&path);
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(lines.len(), 2);
    let first = &lines[0];
    assert_eq!(first["identity"], "alice");
    assert_eq!(first["method"], "GET");
    assert_eq!(first["path"], "/events?per_page=5");
    assert_eq!(first["status"], 200);
    assert_eq!(first["bucket"], "core");
    assert_eq!(first["cost"], 1);
    assert_eq!(first["remaining"], 4999);
    assert_eq!(first["in_flight"], 0);
    assert_eq!(first["time"], "2026-11-30T10:00:00.000Z");
    let fp = first["token_fingerprint"].as_str().expect("fingerprint");
    assert_eq!(fp, headroom_sim::token_fingerprint("t1"));
    assert_eq!(fp.len(), 16);
    assert!(!text.contains("\"t1\""), "the token itself is never logged");
    assert_eq!(lines[1]["identity"], "127.0.0.1");
    assert_eq!(lines[1]["bucket"], "search");
    assert!(lines[1]["token_fingerprint"].is_null());
}
