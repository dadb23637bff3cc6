//! The public events feed: shapes, ETag/304 with X-Poll-Interval, per_page and the 300-event
//! cap, the generated live feed, and corpus files served as the feed.

mod common;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use common::*;
use headroom_core::clock::SignedDuration;
use headroom_sim::Scenario;
use http::Method;
use serde_json::Value;

fn is_object_name(v: &Value) -> bool {
    v.as_str().is_some_and(|s| {
        (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
    })
}

fn ids(events: &Value) -> Vec<u64> {
    events
        .as_array()
        .expect("an array of events")
        .iter()
        .filter_map(|e| e["id"].as_str().and_then(|s| s.parse().ok()))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn default_page_has_the_matrix_shape() {
    let sim = sim(config());
    let r = get(&sim, "/events?per_page=100", Some("t1")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-poll-interval"), Some("60"));
    assert_eq!(header(&r, "link"), None, "one page only");
    let events = json(&r);
    let list = events.as_array().expect("array");
    assert_eq!(list.len(), 8);
    let valid: Vec<&Value> = list
        .iter()
        .filter(|e| e["type"] == "PushEvent" && is_object_name(&e["payload"]["head"]))
        .collect();
    assert_eq!(valid.len(), 4);
    let actors: HashSet<&str> = valid
        .iter()
        .filter_map(|e| e["actor"]["login"].as_str())
        .collect();
    let repos: HashSet<&str> = valid
        .iter()
        .filter_map(|e| e["repo"]["name"].as_str())
        .collect();
    assert_eq!((actors.len(), repos.len()), (3, 3));
    assert_eq!(list.iter().filter(|e| e["type"] == "WatchEvent").count(), 1);
    assert_eq!(
        list.iter().filter(|e| e.get("type").is_none()).count(),
        1,
        "one without a type"
    );
    let pushes = list.iter().filter(|e| e["type"] == "PushEvent").count();
    assert_eq!(pushes, 6, "4 valid + missing head + bad head");
    assert!(
        list.iter()
            .any(|e| e["type"] == "PushEvent" && e["payload"].get("head").is_none())
    );
    assert!(
        list.iter()
            .any(|e| e["payload"]["head"] == "not-a-valid-object-name")
    );
    // Current PushEvent payload shape, and the envelope's fields.
    for e in &valid {
        let mut keys: Vec<&String> = e["payload"].as_object().expect("payload").keys().collect();
        keys.sort();
        assert_eq!(keys, ["before", "head", "push_id", "ref", "repository_id"]);
        assert!(
            e["payload"]["ref"]
                .as_str()
                .is_some_and(|r| r.starts_with("refs/heads/"))
        );
        for k in [
            "id",
            "login",
            "display_login",
            "gravatar_id",
            "url",
            "avatar_url",
        ] {
            assert!(e["actor"].get(k).is_some(), "actor.{k}");
        }
        assert_eq!(e["public"], true);
        assert!(e["id"].is_string());
    }
    let ids = ids(&events);
    assert!(
        ids.windows(2).any(|w| w[0] < w[1]) && ids.windows(2).any(|w| w[0] > w[1]),
        "not monotonic: {ids:?}"
    );
    assert!(ids.contains(&58_000_000_008));
}

#[tokio::test(start_paused = true)]
async fn matching_etag_answers_304_with_poll_interval_and_does_not_count() {
    let sim = sim(config());
    let first = get(&sim, "/events", Some("t1")).await;
    let etag = header(&first, "etag").expect("etag").to_owned();
    assert!(etag.starts_with("W/\""));
    let mut req = request(Method::GET, "/events", Some("t2"), None);
    req.headers_mut()
        .insert("if-none-match", etag.parse().expect("header"));
    // ETags differ per token: t2's ETag for the same page is not t1's.
    let r = sim.handle(req, PEER).await;
    assert_eq!(r.status(), 200);
    let etag2 = header(&r, "etag").expect("etag").to_owned();
    assert_ne!(etag, etag2);
    let mut req = request(Method::GET, "/events", Some("t2"), None);
    req.headers_mut()
        .insert("if-none-match", etag2.parse().expect("header"));
    let r = sim.handle(req, PEER).await;
    assert_eq!(r.status(), 304);
    assert!(r.body().is_empty());
    assert_eq!(header(&r, "x-poll-interval"), Some("60"));
    assert_eq!(header(&r, "etag"), Some(etag2.as_str()));
    assert_eq!(
        num(&r, "x-ratelimit-used"),
        2,
        "an authorized 304 does not count"
    );
    assert_eq!(sim.request_log().last().map(|e| e.cost), Some(0));

    // Unauthenticated 304s have been observed to count.
    let anon = get(&sim, "/events", None).await;
    let etag = header(&anon, "etag").expect("etag").to_owned();
    let mut req = request(Method::GET, "/events", None, None);
    req.headers_mut()
        .insert("if-none-match", etag.parse().expect("header"));
    let r = sim.handle(req, PEER).await;
    assert_eq!(r.status(), 304);
    assert_eq!(num(&r, "x-ratelimit-used"), 2);
}

#[tokio::test(start_paused = true)]
async fn live_feed_caps_at_300_events_and_100_per_page() {
    let sim = sim(config().with_scenario(Scenario::LiveFeed));
    let r = get(&sim, "/events", Some("t1")).await;
    assert_eq!(
        json(&r).as_array().map(Vec::len),
        Some(30),
        "per_page defaults to 30"
    );
    let link = header(&r, "link").expect("link");
    assert!(link.contains("page=10>; rel=\"last\""), "{link}");
    let r = get(&sim, "/events?per_page=500", Some("t1")).await;
    assert_eq!(
        json(&r).as_array().map(Vec::len),
        Some(100),
        "per_page is at most 100"
    );

    let mut seen = HashSet::new();
    let mut url = "/events?per_page=100".to_owned();
    let mut pages = 0;
    loop {
        let r = get(&sim, &url, Some("t1")).await;
        assert_eq!(r.status(), 200);
        pages += 1;
        let page = json(&r);
        let page_ids = ids(&page);
        assert!(
            page_ids.windows(2).any(|w| w[0] < w[1]),
            "ids out of order within a page"
        );
        seen.extend(page_ids);
        let types: HashSet<String> = page
            .as_array()
            .expect("array")
            .iter()
            .filter_map(|e| e["type"].as_str().map(str::to_owned))
            .collect();
        assert!(types.contains("PushEvent") && types.len() >= 4, "{types:?}");
        let Some(next) = header(&r, "link").and_then(|l| {
            l.split(", ")
                .find(|p| p.ends_with("rel=\"next\""))
                .map(|p| {
                    p.trim_start_matches('<')
                        .split('>')
                        .next()
                        .unwrap_or_default()
                        .to_owned()
                })
        }) else {
            break;
        };
        url = next;
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 300, "at most 300 events are reachable");
    let beyond = get(&sim, "/events?per_page=100&page=4", Some("t1")).await;
    assert_eq!(beyond.status(), 422);

    // The feed grows; the ETag changes.
    let before = get(&sim, "/events", Some("t1")).await;
    sim.clock().sleep(SignedDuration::from_secs(60)).await;
    let after = get(&sim, "/events", Some("t1")).await;
    assert_ne!(header(&before, "etag"), header(&after, "etag"));
    let newest = ids(&json(&after));
    assert!(newest.iter().any(|id| !seen.contains(id)));
}

#[tokio::test(start_paused = true)]
async fn live_feed_actors_and_repositories_exist_or_are_gone_or_renamed() {
    let sim = sim(config().with_scenario(Scenario::LiveFeed));
    let events = json(&get(&sim, "/events?per_page=100", Some("t1")).await);
    let (mut ok, mut gone, mut moved) = (0, 0, 0);
    for e in events.as_array().expect("array") {
        let repo_url = e["repo"]["url"].as_str().expect("url");
        let r = get(&sim, repo_url, Some("t1")).await;
        match r.status().as_u16() {
            200 => ok += 1,
            404 => gone += 1,
            301 => {
                moved += 1;
                let loc = header(&r, "location").expect("location");
                assert!(loc.contains("/repositories/"), "{loc}");
                assert_eq!(get(&sim, loc, Some("t1")).await.status(), 200);
            }
            s => panic!("unexpected {s} for {repo_url}"),
        }
    }
    assert!(
        ok > 0 && gone > 0 && moved > 0,
        "ok {ok}, gone {gone}, moved {moved}"
    );
}

/// A file of the real-data corpus kept in the repository (`testdata/corpus`).
fn corpus(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/corpus/gh-pulse")
        .join(file)
}

#[tokio::test(start_paused = true)]
async fn corpus_events_can_be_served_as_the_feed() {
    let sample: Value = serde_json::from_str(
        &std::fs::read_to_string(corpus("sample_events.json")).expect("readable"),
    )
    .expect("JSON");
    let mut c = config();
    c.feed_events = Some(Arc::new(sample.as_array().expect("array").clone()));
    let sim = sim(c);
    let served = json(&get(&sim, "/events", None).await);
    assert_eq!(served, sample);

    let lines = std::fs::read_to_string(corpus("gharchive-2026-06-01-15-first5000.jsonl"))
        .expect("readable");
    let events: Vec<Value> = lines
        .lines()
        .take(400)
        .map(|l| serde_json::from_str(l).expect("one event per line"))
        .collect();
    let mut c = config();
    c.feed_events = Some(Arc::new(events.clone()));
    let sim = common::sim(c);
    let mut total = 0;
    for page in 1..=3 {
        let r = get(
            &sim,
            &format!("/events?per_page=100&page={page}"),
            Some("t1"),
        )
        .await;
        let got = json(&r);
        assert_eq!(got.as_array().map(Vec::len), Some(100));
        assert_eq!(got[0], events[(page - 1) * 100]);
        total += 100;
    }
    assert_eq!(total, 300);
    assert_eq!(
        get(&sim, "/events?per_page=100&page=4", Some("t1"))
            .await
            .status(),
        422
    );
}

#[tokio::test(start_paused = true)]
async fn live_feed_events_surface_late_beside_newer_ones() {
    let sim = sim(config().with_scenario(Scenario::LiveFeed));
    let page = json(&get(&sim, "/events?per_page=100", Some("t1")).await);
    let now = headroom_core::clock::Clock::now(&sim.clock());
    let ages: Vec<i64> = page
        .as_array()
        .expect("array")
        .iter()
        .map(|e| {
            let t: headroom_core::clock::Timestamp = e["created_at"]
                .as_str()
                .expect("created_at")
                .parse()
                .expect("a timestamp");
            now.duration_since(t).as_secs()
        })
        .collect();
    assert!(
        ages.iter().all(|a| *a >= 30),
        "nothing surfaces sooner than 30 s"
    );
    assert!(
        ages.iter().any(|a| *a >= 3_600),
        "some surface hours late: {ages:?}"
    );
    assert!(
        ages.iter().filter(|a| **a < 300).count() > 80,
        "most within minutes"
    );
}
