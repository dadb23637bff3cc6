//! The seeded LaunchDarkly account: sizes as asked and deterministic, offset paging over
//! every list once (`_links.next` absent on the last page), flags unpaged without
//! `LD-API-Version`, the audit log's exclusive `after`/`before` and 20-entry cap with no entry
//! lost at a shared millisecond, the account's global and per-route windows (429 with
//! LaunchDarkly's body and headers, recovery at the reset, shared by every token, one route
//! not holding another), credentials, 404s, the request log, and every answer held to
//! LaunchDarkly's published OpenAPI description (`launchdarkly_account/oracle.rs`).

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;
use common::{PEER, anchor};
use headroom_core::clock::{SignedDuration, TokioClock};
use headroom_sim::{LdAccountSpec, LdLimits, SimConfig, Simulator, TokenSpec};
use http::{Request, Response};
use serde_json::Value;

mod openapi;
#[path = "launchdarkly_account/oracle.rs"]
mod oracle;

/// Alice's and Bob's personal tokens and a service token, all of the one account.
pub const ALICE: &str = "api-alice-1";
pub const BOB: &str = "api-bob-1";
pub const SERVICE: &str = "api-service-1";

pub fn ld_sim(spec: LdAccountSpec) -> Simulator {
    let config = SimConfig::default()
        .with_token(TokenSpec::user(ALICE, "alice"))
        .with_token(TokenSpec::user(BOB, "bob"))
        .with_token(TokenSpec::installation(SERVICE, 7))
        .with_launchdarkly_account(spec);
    Simulator::new(config, TokioClock::anchored_at(anchor())).expect("valid config")
}

/// Sends `GET uri` with these headers.
pub async fn send(sim: &Simulator, uri: &str, headers: &[(&str, &str)]) -> Response<Bytes> {
    let mut req = Request::builder().uri(uri);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    sim.handle(req.body(Bytes::new()).expect("request"), PEER)
        .await
}

/// `GET` with a token and the pinned API version.
pub async fn get_as(sim: &Simulator, uri: &str, token: &str) -> Response<Bytes> {
    send(
        sim,
        uri,
        &[("authorization", token), ("ld-api-version", "20240415")],
    )
    .await
}

/// `GET` as Alice, pinned.
pub async fn get(sim: &Simulator, uri: &str) -> Response<Bytes> {
    get_as(sim, uri, ALICE).await
}

pub fn body(r: &Response<Bytes>) -> Value {
    serde_json::from_slice(r.body())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(r.body())))
}

pub fn header<'a>(r: &'a Response<Bytes>, name: &str) -> Option<&'a str> {
    r.headers().get(name).and_then(|v| v.to_str().ok())
}

fn header_num(r: &Response<Bytes>, name: &str) -> i64 {
    header(r, name)
        .unwrap_or_else(|| panic!("no {name}"))
        .parse()
        .unwrap_or_else(|_| panic!("{name} is not a number"))
}

/// Limits that every test of content can live with.
fn roomy() -> LdLimits {
    LdLimits::default()
        .with_global(100_000)
        .with_route_default(100_000)
}

pub fn small() -> LdAccountSpec {
    LdAccountSpec::new("acme")
        .with_projects(3, 3)
        .with_flags(23)
        .with_segments(4)
        .with_members(6)
        .with_audit_entries(47)
        .with_code_ref_repositories(4)
        .with_limits(roomy())
}

/// Every item of a paged list, following `_links.next`; also each page's size.
async fn walk(sim: &Simulator, first: &str, key: &str) -> (Vec<String>, Vec<usize>) {
    let mut items = Vec::new();
    let mut sizes = Vec::new();
    let mut uri = first.to_owned();
    for _ in 0..1_000 {
        let r = get(sim, &uri).await;
        assert_eq!(
            r.status(),
            200,
            "{uri}: {}",
            String::from_utf8_lossy(r.body())
        );
        let b = body(&r);
        let page = b["items"].as_array().expect("items");
        sizes.push(page.len());
        items.extend(
            page.iter()
                .map(|i| i[key].as_str().expect("key").to_owned()),
        );
        match b["_links"]["next"]["href"].as_str() {
            Some(next) => uri = next.to_owned(),
            None => return (items, sizes),
        }
    }
    panic!("{first}: more than 1,000 pages");
}

fn once(items: &[String]) -> BTreeSet<String> {
    let set: BTreeSet<String> = items.iter().cloned().collect();
    assert_eq!(set.len(), items.len(), "an item came twice: {items:?}");
    set
}

#[tokio::test(start_paused = true)]
async fn the_seeded_account_has_the_counts_that_were_asked_and_the_same_seed_the_same_data() {
    let sim = ld_sim(small());
    let c = sim.launchdarkly_counts().expect("seeded");
    assert_eq!((c.projects, c.environments, c.flags), (3, 9, 69));
    assert_eq!((c.flag_environments, c.segments), (207, 36));
    // Six members besides the two token owners.
    assert_eq!(
        (c.members, c.audit_entries, c.code_ref_repositories),
        (8, 47, 4)
    );
    let again = ld_sim(small());
    let uri = "/api/v2/flags/default?limit=50&summary=0&env=production";
    assert_eq!(body(&get(&sim, uri).await), body(&get(&again, uri).await));
    let uri = "/api/v2/auditlog?limit=20";
    assert_eq!(body(&get(&sim, uri).await), body(&get(&again, uri).await));
}

#[tokio::test(start_paused = true)]
async fn every_paged_list_returns_every_item_exactly_once_by_following_next() {
    let sim = ld_sim(small());
    let c = sim.launchdarkly_counts().expect("seeded");
    let (projects, sizes) = walk(&sim, "/api/v2/projects?limit=2", "key").await;
    assert_eq!((once(&projects).len(), sizes), (c.projects, vec![2, 1]));
    let (members, _) = walk(&sim, "/api/v2/members?limit=3", "_id").await;
    assert_eq!(once(&members).len(), c.members);
    let (mut envs, mut flags, mut segments) = (0, 0, 0);
    for p in &projects {
        let uri = format!("/api/v2/projects/{p}/environments?limit=2");
        let (keys, _) = walk(&sim, &uri, "key").await;
        envs += once(&keys).len();
        let (keys, sizes) = walk(&sim, &format!("/api/v2/flags/{p}?limit=7&env=test"), "key").await;
        assert_eq!(sizes, vec![7, 7, 7, 2]);
        flags += once(&keys).len();
        for e in ["production", "test", "env-2"] {
            let uri = format!("/api/v2/segments/{p}/{e}?limit=3");
            segments += once(&walk(&sim, &uri, "key").await.0).len();
        }
    }
    assert_eq!(
        (envs, flags, segments),
        (c.environments, c.flags, c.segments)
    );
    // The default page is 20 flags with the version pinned; the last page has no `next`.
    let (_, sizes) = walk(&sim, "/api/v2/flags/default", "key").await;
    assert_eq!(sizes, vec![20, 3]);
    let b = body(&get(&sim, "/api/v2/flags/default?offset=20").await);
    assert_eq!(b["totalCount"], 23);
    assert!(b["_links"]["next"].is_null() && b["_links"]["last"].is_null());
    assert!(b["_links"]["prev"]["href"].is_string());
}

#[tokio::test(start_paused = true)]
async fn flags_are_one_unpaged_list_without_ld_api_version() {
    let sim = ld_sim(small());
    let unpinned = send(
        &sim,
        "/api/v2/flags/default?limit=5",
        &[("authorization", ALICE)],
    )
    .await;
    assert_eq!(unpinned.status(), 200);
    let b = body(&unpinned);
    assert_eq!(b["items"].as_array().map(Vec::len), Some(23));
    assert!(b["_links"]["next"].is_null());
    // An older version pages the same way; the pinned one pages by `limit`.
    let old = [("authorization", ALICE), ("ld-api-version", "20220603")];
    let b = body(&send(&sim, "/api/v2/flags/default?limit=5", &old).await);
    assert_eq!(b["items"].as_array().map(Vec::len), Some(23));
    let b = body(&get(&sim, "/api/v2/flags/default?limit=5").await);
    assert_eq!(b["items"].as_array().map(Vec::len), Some(5));
}

#[tokio::test(start_paused = true)]
async fn a_flag_carries_its_state_in_each_environment_and_targeting_only_when_asked() {
    let sim = ld_sim(small());
    let b = body(&get(&sim, "/api/v2/flags/proj-1?limit=1").await);
    let envs = b["items"][0]["environments"]
        .as_object()
        .expect("environments");
    let keys: Vec<&String> = envs.keys().collect();
    assert_eq!(keys, ["env-2", "production", "test"]);
    assert!(envs["test"]["on"].is_boolean() && envs["test"]["targets"].is_null());
    let b = body(&get(&sim, "/api/v2/flags/proj-1?limit=1&summary=0&env=test").await);
    let envs = b["items"][0]["environments"]
        .as_object()
        .expect("environments");
    assert_eq!(envs.keys().collect::<Vec<_>>(), ["test"]);
    assert!(envs["test"]["targets"].is_array() && envs["test"]["rules"].is_array());
}

/// Every audit entry's (id, date), by following `next` from `first`.
async fn audit_walk(sim: &Simulator, first: &str) -> (Vec<(String, i64)>, Vec<usize>) {
    let mut out = Vec::new();
    let mut sizes = Vec::new();
    let mut uri = first.to_owned();
    for _ in 0..1_000 {
        let b = body(&get(sim, &uri).await);
        let items = b["items"].as_array().expect("items");
        sizes.push(items.len());
        for i in items {
            out.push((
                i["_id"].as_str().expect("id").to_owned(),
                i["date"].as_i64().expect("date"),
            ));
        }
        match b["_links"]["next"]["href"].as_str() {
            Some(next) => uri = next.to_owned(),
            None => return (out, sizes),
        }
    }
    panic!("more than 1,000 audit pages");
}

#[tokio::test(start_paused = true)]
async fn the_audit_log_pages_newest_first_and_loses_no_entry_that_shares_a_millisecond() {
    let sim = ld_sim(small());
    let all = sim.launchdarkly_counts().expect("seeded").audit_entries;
    // The seed's ties are pairs: any page of two or more holds a whole millisecond (a page of
    // one cannot, see the simulator's `launchdarkly::routes`).
    for limit in [2, 3, 4, 7, 20] {
        let (entries, sizes) = audit_walk(&sim, &format!("/api/v2/auditlog?limit={limit}")).await;
        let ids: Vec<String> = entries.iter().map(|e| e.0.clone()).collect();
        assert_eq!(once(&ids).len(), all, "limit {limit}: pages {sizes:?}");
        assert!(entries.windows(2).all(|w| w[0].1 >= w[1].1), "newest first");
        assert!(sizes.iter().all(|&s| s <= limit));
        let dates: BTreeSet<i64> = entries.iter().map(|e| e.1).collect();
        assert!(
            dates.len() < all,
            "the seed has entries sharing a millisecond"
        );
        // A page never ends inside a millisecond whose rest comes later: moving `before` to the
        // oldest date seen (exclusive) reaches the same entries.
        let mut before: Option<i64> = None;
        let mut manual = Vec::new();
        loop {
            let uri = match before {
                Some(b) => format!("/api/v2/auditlog?limit={limit}&before={b}"),
                None => format!("/api/v2/auditlog?limit={limit}"),
            };
            let b = body(&get(&sim, &uri).await);
            let items = b["items"].as_array().expect("items");
            let Some(last) = items.last() else { break };
            manual.extend(
                items
                    .iter()
                    .map(|i| i["_id"].as_str().expect("id").to_owned()),
            );
            before = last["date"].as_i64();
        }
        assert_eq!(manual, ids, "limit {limit}");
    }
}

#[tokio::test(start_paused = true)]
async fn the_audit_log_caps_limit_at_twenty_defaults_to_ten_and_reads_after_and_before_exclusive() {
    let sim = ld_sim(small().with_audit_entries(60));
    let count = |b: &Value| b["items"].as_array().map_or(0, Vec::len);
    let capped = body(&get(&sim, "/api/v2/auditlog?limit=50").await);
    assert!((19..=20).contains(&count(&capped)), "{}", count(&capped));
    assert!(count(&body(&get(&sim, "/api/v2/auditlog").await)) <= 10);
    assert!(count(&body(&get(&sim, "/api/v2/auditlog").await)) >= 9);
    let zero = get(&sim, "/api/v2/auditlog?limit=0").await;
    assert_eq!(zero.status(), 400);
    assert_eq!(body(&zero)["code"], "invalid_request");
    // `after` and `before` at an entry's own millisecond leave it out.
    let (entries, _) = audit_walk(&sim, "/api/v2/auditlog?limit=20").await;
    let (id, date) = entries[entries.len() / 2].clone();
    let newer = audit_walk(&sim, &format!("/api/v2/auditlog?limit=20&after={date}"))
        .await
        .0;
    let older = audit_walk(&sim, &format!("/api/v2/auditlog?limit=20&before={date}"))
        .await
        .0;
    assert!(newer.iter().all(|e| e.1 > date) && older.iter().all(|e| e.1 < date));
    let at = entries.iter().filter(|e| e.1 == date).count();
    assert_eq!(newer.len() + older.len() + at, entries.len());
    assert!(!newer.iter().chain(&older).any(|e| e.0 == id));
}

fn limited(route: u64, global: u64) -> LdAccountSpec {
    small().with_limits(
        LdLimits::default()
            .with_window(SignedDuration::from_secs(1))
            .with_global(global)
            .with_route_default(route),
    )
}

fn count_429(sim: &Simulator) -> usize {
    sim.request_log().iter().filter(|e| e.status == 429).count()
}

#[tokio::test(start_paused = true)]
async fn a_route_window_refuses_the_request_over_its_limit_with_the_headers_and_recovers_at_the_reset()
 {
    let sim = ld_sim(limited(3, 100));
    let reset = anchor().as_millisecond() + 1_000;
    for left in [2, 1, 0] {
        let r = get(&sim, "/api/v2/members").await;
        assert_eq!(r.status(), 200);
        assert_eq!(header_num(&r, "x-ratelimit-route-remaining"), left);
        assert_eq!(header_num(&r, "x-ratelimit-global-remaining"), 97 + left);
        assert_eq!(header_num(&r, "x-ratelimit-reset"), reset);
        for absent in [
            "x-ratelimit-limit",
            "x-ratelimit-route-limit",
            "x-ratelimit-global-limit",
        ] {
            assert!(header(&r, absent).is_none(), "{absent}");
        }
    }
    let r = get(&sim, "/api/v2/members").await;
    assert_eq!(r.status(), 429);
    assert_eq!(
        body(&r),
        serde_json::json!({"code": "rate_limited", "message": "You've exceeded the API rate limit. Try again later."})
    );
    assert_eq!(header_num(&r, "x-ratelimit-route-remaining"), 0);
    assert_eq!(header_num(&r, "x-ratelimit-global-remaining"), 97);
    assert_eq!(header_num(&r, "x-ratelimit-reset"), reset);
    assert_eq!(header(&r, "retry-after"), Some("1"));
    assert_eq!(count_429(&sim), 1);
    // One millisecond before the reset the window still refuses; at the reset it admits.
    tokio::time::advance(Duration::from_millis(999)).await;
    let r = get(&sim, "/api/v2/members").await;
    assert_eq!(
        (r.status().as_u16(), header(&r, "retry-after")),
        (429, Some("1"))
    );
    tokio::time::advance(Duration::from_millis(1)).await;
    let r = get(&sim, "/api/v2/members").await;
    assert_eq!(r.status(), 200);
    assert_eq!(header_num(&r, "x-ratelimit-route-remaining"), 2);
    assert_eq!(header_num(&r, "x-ratelimit-reset"), reset + 1_000);
    assert_eq!(count_429(&sim), 2);
}

#[tokio::test(start_paused = true)]
async fn a_429_carries_no_retry_after_when_the_account_sends_none() {
    let mut spec = limited(1, 100);
    spec.limits = spec.limits.clone().with_retry_after(false);
    let sim = ld_sim(spec);
    assert_eq!(get(&sim, "/api/v2/members").await.status(), 200);
    let r = get(&sim, "/api/v2/members").await;
    assert_eq!(r.status(), 429);
    assert!(header(&r, "retry-after").is_none());
    assert!(header(&r, "x-ratelimit-reset").is_some());
}

#[tokio::test(start_paused = true)]
async fn two_tokens_of_the_account_share_the_global_and_the_route_windows() {
    let sim = ld_sim(limited(4, 6));
    for token in [ALICE, BOB, SERVICE, ALICE] {
        assert_eq!(
            get_as(&sim, "/api/v2/flags/default", token).await.status(),
            200
        );
    }
    // The route's four are spent, by three tokens: Bob is refused too.
    let r = get_as(&sim, "/api/v2/flags/proj-1", BOB).await;
    assert_eq!(r.status(), 429, "every project shares the flags route");
    assert_eq!(header_num(&r, "x-ratelimit-global-remaining"), 2);
    for token in [BOB, SERVICE] {
        assert_eq!(get_as(&sim, "/api/v2/members", token).await.status(), 200);
    }
    // The global window is spent: every route and token is refused.
    let r = get_as(&sim, "/api/v2/projects", ALICE).await;
    assert_eq!(r.status(), 429);
    assert_eq!(header_num(&r, "x-ratelimit-global-remaining"), 0);
    assert_eq!(header_num(&r, "x-ratelimit-route-remaining"), 4);
    assert_eq!(count_429(&sim), 2);
}

#[tokio::test(start_paused = true)]
async fn a_route_at_its_limit_does_not_hold_another_route() {
    let mut spec = limited(50, 100);
    spec.limits = spec.limits.clone().with_route("GET /api/v2/auditlog", 2);
    let sim = ld_sim(spec);
    for _ in 0..2 {
        assert_eq!(get(&sim, "/api/v2/auditlog").await.status(), 200);
    }
    assert_eq!(get(&sim, "/api/v2/auditlog").await.status(), 429);
    for uri in [
        "/api/v2/flags/default",
        "/api/v2/members",
        "/api/v2/code-refs/repositories",
    ] {
        let r = get(&sim, uri).await;
        assert_eq!(r.status(), 200, "{uri}");
        assert_eq!(header_num(&r, "x-ratelimit-route-remaining"), 49, "{uri}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_bad_or_scheme_prefixed_token_is_refused_401_and_spends_nothing() {
    let sim = ld_sim(limited(1, 100));
    for auth in [
        Some("api-nobody"),
        Some("Bearer api-alice-1"),
        Some("token api-alice-1"),
        None,
    ] {
        let mut headers = vec![("ld-api-version", "20240415")];
        if let Some(a) = auth {
            headers.push(("authorization", a));
        }
        let r = send(&sim, "/api/v2/members", &headers).await;
        assert_eq!(r.status(), 401, "{auth:?}");
        assert_eq!(body(&r)["code"], "unauthorized");
        assert!(body(&r)["message"].is_string() && body(&r)["id"].is_string());
        assert!(header(&r, "x-ratelimit-route-remaining").is_none());
    }
    // The route's one request is still there.
    assert_eq!(get(&sim, "/api/v2/members").await.status(), 200);
}

#[tokio::test(start_paused = true)]
async fn an_unknown_project_or_environment_answers_404_in_the_shared_error_shape() {
    let sim = ld_sim(small());
    for uri in [
        "/api/v2/flags/nope",
        "/api/v2/projects/nope/environments",
        "/api/v2/segments/nope/production",
        "/api/v2/segments/default/nope",
    ] {
        let r = get(&sim, uri).await;
        assert_eq!(r.status(), 404, "{uri}");
        let b = body(&r);
        assert_eq!(b["code"], "not_found", "{uri}");
        assert!(b["message"].is_string() && b["id"].is_string(), "{uri}");
        assert!(header(&r, "x-ratelimit-route-remaining").is_some(), "{uri}");
    }
}

#[tokio::test(start_paused = true)]
async fn caller_identity_names_one_account_for_every_token_and_a_token_id_per_token() {
    let sim = ld_sim(small());
    let mut accounts = BTreeSet::new();
    let mut tokens = BTreeSet::new();
    let mut members = BTreeSet::new();
    for token in [ALICE, BOB, SERVICE] {
        let b = body(&get_as(&sim, "/api/v2/caller-identity", token).await);
        accounts.insert(b["accountId"].as_str().expect("accountId").to_owned());
        tokens.insert(b["tokenId"].as_str().expect("tokenId").to_owned());
        if let Some(m) = b["memberId"].as_str() {
            members.insert(m.to_owned());
        }
        assert_eq!(b["serviceToken"], token == SERVICE);
    }
    assert_eq!((accounts.len(), tokens.len(), members.len()), (1, 3, 2));
    // Alice's member id is a member of the account.
    let alice = body(&get(&sim, "/api/v2/caller-identity").await)["memberId"].clone();
    let listed = body(&get(&sim, "/api/v2/members?limit=50").await);
    let listed = listed["items"].as_array().expect("items");
    assert!(
        listed
            .iter()
            .any(|m| m["_id"] == alice && m["email"] == "alice@example.com")
    );
}

#[tokio::test(start_paused = true)]
async fn every_request_is_in_the_request_log_with_its_route_and_status() {
    let sim = ld_sim(limited(2, 100));
    let uris = [
        "/api/v2/flags/default",
        "/api/v2/flags/proj-1",
        "/api/v2/flags/proj-2",
        "/api/v2/auditlog",
        "/api/v2/nothing-here",
    ];
    for uri in uris {
        get(&sim, uri).await;
    }
    send(&sim, "/api/v2/members", &[("authorization", "wrong")]).await;
    let log = sim.request_log();
    let seen: Vec<(String, u16, Option<String>)> = log
        .iter()
        .map(|e| (e.path.clone(), e.status, e.bucket.clone()))
        .collect();
    let flags = Some("GET /api/v2/flags/{projectKey}".to_owned());
    assert_eq!(
        seen,
        vec![
            ("/api/v2/flags/default".into(), 200, flags.clone()),
            ("/api/v2/flags/proj-1".into(), 200, flags.clone()),
            ("/api/v2/flags/proj-2".into(), 429, flags),
            (
                "/api/v2/auditlog".into(),
                200,
                Some("GET /api/v2/auditlog".into())
            ),
            ("/api/v2/nothing-here".into(), 404, None),
            ("/api/v2/members".into(), 401, None),
        ]
    );
    let families: Vec<Option<&str>> = log
        .iter()
        .map(|e| {
            let path = e.path.split('?').next().unwrap_or_default();
            headroom_sim::launchdarkly::route_of(&e.method, path)
                .and_then(headroom_sim::launchdarkly::route_family)
        })
        .collect();
    assert_eq!(
        families,
        [
            Some("flags"),
            Some("flags"),
            Some("flags"),
            Some("audit_log"),
            None,
            Some("members")
        ]
    );
    assert!(
        log.iter()
            .all(|e| e.token_fingerprint.as_deref() != Some(ALICE))
    );
    assert_eq!(log[0].identity, "alice@example.com");
}

#[tokio::test(start_paused = true)]
async fn a_touch_adds_audit_entries_that_after_the_newest_stored_date_reads_alone() {
    let sim = ld_sim(small());
    let newest = body(&get(&sim, "/api/v2/auditlog?limit=1").await)["items"][0]["date"]
        .as_i64()
        .expect("date");
    tokio::time::advance(Duration::from_secs(5)).await;
    let touched = sim.launchdarkly_touch(5);
    assert_eq!(touched.len(), 5);
    let (fresh, _) = audit_walk(&sim, &format!("/api/v2/auditlog?limit=2&after={newest}")).await;
    let ids: Vec<String> = fresh.iter().map(|e| e.0.clone()).collect();
    assert_eq!(ids, touched);
    let c = sim.launchdarkly_counts().expect("seeded");
    assert_eq!(c.audit_entries, 47 + 5);
}
