//! Every named scenario's observable outcome, by the names of the reference scenario matrix.

mod common;

use std::collections::HashSet;
use std::str::FromStr;

use common::*;
use headroom_core::clock::{Clock, SignedDuration};
use headroom_sim::{Scenario, Simulator};
use serde_json::Value;

const MATRIX: [&str; 14] = [
    "default",
    "paginated",
    "paginated_final_page",
    "transient_failure",
    "transient_failure_exhausted",
    "search_complete",
    "search_renamed_repository",
    "search_incomplete_results",
    "search_malformed",
    "search_rate_limited",
    "redirecting_repository",
    "hostile_redirect",
    "secondary_rate_limited",
    "rate_limited",
];

const USERS_Q: &str = "/search/users?q=user:octo-ana+user:octo-ben+user:octo-gone";
const REPOS_Q: &str =
    "/search/repositories?q=repo:octo-ana/kiln+repo:octo-ben/loom+repo:octo-gone/ember";

fn scenario(name: &str) -> Simulator {
    sim(config().with_scenario(Scenario::from_str(name).expect("known scenario")))
}

fn next_link(r: &http::Response<bytes::Bytes>) -> Option<String> {
    header(r, "link").and_then(|l| {
        l.split(", ")
            .find(|p| p.ends_with("rel=\"next\""))
            .map(|p| {
                p.trim_start_matches('<')
                    .split('>')
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            })
    })
}

fn logins(body: &Value, key: &str) -> Vec<String> {
    let mut v: Vec<String> = body["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i[key].as_str().map(str::to_owned))
        .collect();
    v.sort();
    v
}

async fn walk(sim: &Simulator) -> (usize, Vec<Value>) {
    let mut url = "/events?per_page=100".to_owned();
    let mut pages = 0;
    let mut events = Vec::new();
    loop {
        let r = get(sim, &url, Some("t1")).await;
        assert_eq!(r.status(), 200);
        pages += 1;
        events.extend(json(&r).as_array().expect("array").iter().cloned());
        match next_link(&r) {
            Some(next) => url = next,
            None => break,
        }
        assert!(pages < 10, "runaway walk");
    }
    (pages, events)
}

#[test]
fn every_matrix_row_is_a_scenario_with_a_description() {
    for name in MATRIX {
        let s = Scenario::from_str(name).expect("in the matrix");
        assert_eq!(s.name(), name);
        assert!(!s.description().is_empty());
    }
    let names: HashSet<&str> = Simulator::scenarios().iter().map(|(n, _)| *n).collect();
    assert!(MATRIX.iter().all(|m| names.contains(m)));
    assert!(Scenario::from_str("nope").is_err());
    let help = Scenario::help_text();
    assert_eq!(help.lines().count(), Scenario::ALL.len(), "one line each");
}

#[tokio::test(start_paused = true)]
async fn default_search_answers_two_of_three_and_the_missing_are_gone() {
    let sim = scenario("default");
    let users = json(&get(&sim, USERS_Q, Some("t1")).await);
    assert_eq!(logins(&users, "login"), ["octo-ana", "octo-ben"]);
    assert_eq!(users["total_count"], 2);
    assert_eq!(users["incomplete_results"], false);
    let repos = json(&get(&sim, REPOS_Q, Some("t1")).await);
    assert_eq!(
        logins(&repos, "full_name"),
        ["octo-ana/kiln", "octo-ben/loom"]
    );
    // The events carry the detail URLs the fallback uses; both answer 404.
    let events = json(&get(&sim, "/events", Some("t1")).await);
    let gone = events
        .as_array()
        .expect("array")
        .iter()
        .find(|e| e["id"] == "58000000008")
        .expect("event 58000000008");
    assert_eq!(
        get(
            &sim,
            gone["actor"]["url"].as_str().expect("url"),
            Some("t1")
        )
        .await
        .status(),
        404
    );
    assert_eq!(
        get(&sim, gone["repo"]["url"].as_str().expect("url"), Some("t1"))
            .await
            .status(),
        404
    );
    // Two search requests on the search bucket, the rest on core.
    let log = sim.request_log();
    assert_eq!(
        log.iter()
            .filter(|e| e.bucket.as_deref() == Some("search"))
            .count(),
        2
    );
}

#[tokio::test(start_paused = true)]
async fn paginated_walks_three_pages_with_one_duplicate() {
    let sim = scenario("paginated");
    let (pages, events) = walk(&sim).await;
    assert_eq!(pages, 3, "the third page is empty");
    assert_eq!(events.len(), 11);
    let unique: HashSet<&str> = events.iter().filter_map(|e| e["id"].as_str()).collect();
    assert_eq!(unique.len(), 10, "page 2 repeats page 1's first event");
    let valid: HashSet<&str> = events
        .iter()
        .filter(|e| {
            e["type"] == "PushEvent"
                && e["payload"]["head"]
                    .as_str()
                    .is_some_and(|h| h.len() == 40 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        })
        .filter_map(|e| e["id"].as_str())
        .collect();
    assert_eq!(valid.len(), 6);
    let page3 = get(&sim, "/events?per_page=100&page=3", Some("t1")).await;
    assert_eq!(json(&page3), Value::Array(Vec::new()));
}

#[tokio::test(start_paused = true)]
async fn paginated_final_page_stops_without_a_next_link() {
    let sim = scenario("paginated_final_page");
    let first = get(&sim, "/events?per_page=100", Some("t1")).await;
    assert!(next_link(&first).is_some());
    let (pages, events) = walk(&sim).await;
    assert_eq!(pages, 2);
    assert_eq!(events.len(), 8);
    let last = get(&sim, "/events?per_page=100&page=2", Some("t1")).await;
    assert!(next_link(&last).is_none());
    assert!(header(&last, "link").is_some_and(|l| l.contains("rel=\"prev\"")));
}

#[tokio::test(start_paused = true)]
async fn transient_failure_is_one_500_then_success() {
    let sim = scenario("transient_failure");
    let r = get(&sim, "/events", Some("t1")).await;
    assert_eq!(r.status(), 500);
    let r = get(&sim, "/events", Some("t1")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(json(&r).as_array().map(Vec::len), Some(8));
}

#[tokio::test(start_paused = true)]
async fn transient_failure_exhausted_never_succeeds() {
    let sim = scenario("transient_failure_exhausted");
    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(get(&sim, "/events", Some("t1")).await.status().as_u16());
    }
    assert!(
        statuses.iter().all(|s| (500..600).contains(s)),
        "{statuses:?}"
    );
    assert!(statuses.contains(&500) && statuses.contains(&502) && statuses.contains(&503));
    // Other endpoints are fine.
    assert_eq!(get(&sim, "/user", Some("t1")).await.status(), 200);
}

#[tokio::test(start_paused = true)]
async fn search_complete_returns_everything() {
    let sim = scenario("search_complete");
    let users = json(&get(&sim, USERS_Q, Some("t1")).await);
    assert_eq!(
        logins(&users, "login"),
        ["octo-ana", "octo-ben", "octo-gone"]
    );
    let repos = json(&get(&sim, REPOS_Q, Some("t1")).await);
    assert_eq!(repos["total_count"], 3);
    assert_eq!(repos["incomplete_results"], false);
}

#[tokio::test(start_paused = true)]
async fn search_renamed_repository_returns_an_id_intact_rename() {
    let sim = scenario("search_renamed_repository");
    let repos = json(&get(&sim, REPOS_Q, Some("t1")).await);
    let kiln = repos["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["id"] == 880_001)
        .expect("the renamed repository is returned by id");
    assert_eq!(
        kiln["full_name"], "octo-ana/kiln-forge",
        "not the name that was asked for"
    );
    let r = get(&sim, "/repos/octo-ana/kiln", Some("t1")).await;
    assert_eq!(r.status(), 301);
    assert_eq!(
        header(&r, "location"),
        Some("https://api.github.com/repositories/880001")
    );
}

#[tokio::test(start_paused = true)]
async fn search_incomplete_results_is_an_envelope_fact() {
    let sim = scenario("search_incomplete_results");
    let users = json(&get(&sim, USERS_Q, Some("t1")).await);
    assert_eq!(users["incomplete_results"], true);
    assert_eq!(logins(&users, "login"), ["octo-ana", "octo-ben"]);
    let repos = json(&get(&sim, REPOS_Q, Some("t1")).await);
    assert_eq!(repos["incomplete_results"], true);
    assert_eq!(repos["items"].as_array().map(Vec::len), Some(2));
    // The missing one exists: its detail fallback succeeds.
    assert_eq!(
        get(&sim, "/users/octo-gone", Some("t1")).await.status(),
        200
    );
    assert_eq!(
        get(&sim, "/repos/octo-gone/ember", Some("t1"))
            .await
            .status(),
        200
    );
}

#[tokio::test(start_paused = true)]
async fn search_malformed_returns_a_broken_envelope() {
    let sim = scenario("search_malformed");
    let r = get(&sim, USERS_Q, Some("t1")).await;
    assert_eq!(r.status(), 200);
    let b = json(&r);
    assert!(!b["items"].is_array());
    assert!(!b["total_count"].is_number());
}

#[tokio::test(start_paused = true)]
async fn search_rate_limited_blocks_search_for_under_a_minute_and_leaves_core_alone() {
    let sim = scenario("search_rate_limited");
    let r = get(&sim, USERS_Q, Some("t1")).await;
    assert_eq!(r.status(), 403);
    assert_eq!(header(&r, "x-ratelimit-resource"), Some("search"));
    assert_eq!(num(&r, "x-ratelimit-remaining"), 0);
    let now = sim.clock().now().as_second();
    let reset = num(&r, "x-ratelimit-reset");
    assert!(reset > now && reset <= now + 60);
    let core = get(&sim, "/events", Some("t1")).await;
    assert_eq!(core.status(), 200);
    assert_eq!(num(&core, "x-ratelimit-remaining"), 4999);
    sim.clock().sleep(SignedDuration::from_secs(61)).await;
    assert_eq!(get(&sim, USERS_Q, Some("t1")).await.status(), 200);
}

#[tokio::test(start_paused = true)]
async fn redirecting_repository_is_a_search_miss_then_one_followed_hop_debited_twice() {
    let sim = scenario("redirecting_repository");
    let repos = json(&get(&sim, REPOS_Q, Some("t1")).await);
    assert!(
        !logins(&repos, "full_name")
            .iter()
            .any(|n| n.ends_with("/ember")),
        "a search miss"
    );
    let r = get(
        &sim,
        "https://api.github.com/repos/octo-gone/ember",
        Some("t1"),
    )
    .await;
    assert_eq!(r.status(), 301);
    let location = header(&r, "location").expect("location").to_owned();
    assert_eq!(location, "https://api.github.com/repositories/880003");
    assert_eq!(json(&r)["message"], "Moved Permanently");
    assert_eq!(json(&r)["url"], location.as_str());
    let moved = get(&sim, &location, Some("t1")).await;
    assert_eq!(moved.status(), 200);
    assert_eq!(json(&moved)["id"], 880_003);
    assert_eq!(json(&moved)["full_name"], "octo-ben/ember");
    assert_eq!(num(&moved, "x-ratelimit-used"), 2, "both hops debited");
}

#[tokio::test(start_paused = true)]
async fn hostile_redirect_points_off_host() {
    let sim = scenario("hostile_redirect");
    let r = get(
        &sim,
        "https://api.github.com/repos/octo-gone/ember",
        Some("t1"),
    )
    .await;
    assert_eq!(r.status(), 301);
    let location = header(&r, "location").expect("location");
    assert!(
        location.starts_with("https://api.github.com.evil.invalid/"),
        "{location}"
    );
    // A PATCH to a renamed repository answers 307.
    let r = send(
        &sim,
        http::Method::PATCH,
        "/repos/octo-gone/ember",
        Some("t1"),
        serde_json::json!({}),
    )
    .await;
    assert_eq!(r.status(), 307);
}

#[tokio::test(start_paused = true)]
async fn secondary_rate_limited_blocks_for_a_minute_with_retry_after() {
    let sim = scenario("secondary_rate_limited");
    let r = get(&sim, "/events", Some("t1")).await;
    assert_eq!(r.status(), 403);
    assert!(
        json(&r)["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("You have exceeded a secondary rate limit."))
    );
    assert_eq!(header(&r, "retry-after"), Some("60"));
    assert!(num(&r, "x-ratelimit-remaining") > 0);
    sim.clock().sleep(SignedDuration::from_secs(30)).await;
    let r = get(&sim, "/events", Some("t2")).await;
    assert_eq!(r.status(), 403, "the same user is still blocked");
    assert_eq!(header(&r, "retry-after"), Some("30"));
    sim.clock().sleep(SignedDuration::from_secs(30)).await;
    assert_eq!(get(&sim, "/events", Some("t1")).await.status(), 200);
}

#[tokio::test(start_paused = true)]
async fn secondary_without_retry_after_sends_none() {
    let sim = scenario("secondary_without_retry_after");
    let r = get(&sim, "/events", None).await;
    assert_eq!(r.status(), 403);
    assert_eq!(header(&r, "retry-after"), None);
    assert!(num(&r, "x-ratelimit-remaining") > 0);
}

#[tokio::test(start_paused = true)]
async fn rate_limited_is_primary_exhaustion_with_a_one_hour_reset() {
    let sim = scenario("rate_limited");
    let r = get(&sim, "/events", None).await;
    assert_eq!(r.status(), 403);
    assert_eq!(num(&r, "x-ratelimit-remaining"), 0);
    assert_eq!(num(&r, "x-ratelimit-reset"), anchor().as_second() + 3600);
    assert!(
        json(&r)["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("API rate limit exceeded for 127.0.0.1."))
    );
    assert!(header(&r, "retry-after").is_none());
    sim.clock().sleep(SignedDuration::from_secs(3600)).await;
    let r = get(&sim, "/events", None).await;
    assert_eq!(r.status(), 200);
    assert_eq!(num(&r, "x-ratelimit-used"), 1);
}

#[tokio::test(start_paused = true)]
async fn rate_limited_429_answers_429() {
    let sim = sim(config().with_scenario(Scenario::RateLimited429));
    let r = get(&sim, "/events", Some("t1")).await;
    assert_eq!(r.status(), 429);
    assert_eq!(num(&r, "x-ratelimit-remaining"), 0);
    assert!(
        json(&r)["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("API rate limit exceeded for user ID"))
    );
}

#[tokio::test(start_paused = true)]
async fn abuse_detection_uses_the_old_wording() {
    let sim = sim(config().with_scenario(Scenario::AbuseDetection));
    let r = get(&sim, "/events", Some("t1")).await;
    assert_eq!(r.status(), 403);
    assert!(
        json(&r)["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("You have triggered an abuse detection mechanism."))
    );
    assert_eq!(header(&r, "retry-after"), Some("60"));
}
