//! The seeded Jira site: sizes as asked, JQL search paged by `nextPageToken` over every issue
//! once, `updated >=` read in the caller's time zone across a daylight-saving change, the
//! removed `/search`, burst buckets and the app's hourly points answering 429 with Jira's
//! headers, the agile API's 50 cap and kanban boards' 400, credentials, restricted projects,
//! and every answer held to Atlassian's published descriptions (`jira_oracle`).

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use common::{PEER, anchor};
use headroom_core::clock::{Timestamp, TokioClock};
use headroom_sim::{JiraLimits, JiraSiteSpec, SimConfig, Simulator, TokenSpec};
use http::{Method, Request, Response};
use serde_json::{Value, json};

#[path = "jira_site/narrowing.rs"]
mod narrowing;
mod openapi;
#[path = "jira_site/oracle.rs"]
mod oracle;

pub fn basic(login: &str, token: &str) -> String {
    let raw = format!("{login}@example.com:{token}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

pub fn jira_sim(spec: JiraSiteSpec) -> Simulator {
    jira_sim_at(spec, anchor())
}

pub fn jira_sim_at(spec: JiraSiteSpec, at: Timestamp) -> Simulator {
    let config = SimConfig::default()
        .with_token(TokenSpec::user("t1", "alice"))
        .with_token(TokenSpec::user("tb", "bob"))
        .with_jira_site(spec);
    Simulator::new(config, TokioClock::anchored_at(at)).expect("valid config")
}

/// Sends one request with an `Authorization` header value.
pub async fn send(
    sim: &Simulator,
    method: Method,
    uri: &str,
    auth: &str,
    body: Option<Value>,
) -> Response<Bytes> {
    let body = body.map_or_else(Bytes::new, |v| Bytes::from(v.to_string()));
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header("authorization", auth)
        .header("content-type", "application/json")
        .body(body)
        .expect("request");
    sim.handle(req, PEER).await
}

/// `GET` as alice with her API token.
pub async fn get(sim: &Simulator, uri: &str) -> Response<Bytes> {
    send(sim, Method::GET, uri, &basic("alice", "t1"), None).await
}

/// `POST` as alice with her API token.
pub async fn post(sim: &Simulator, uri: &str, body: Value) -> Response<Bytes> {
    send(sim, Method::POST, uri, &basic("alice", "t1"), Some(body)).await
}

pub fn body(r: &Response<Bytes>) -> Value {
    serde_json::from_slice(r.body())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(r.body())))
}

pub fn header<'a>(r: &'a Response<Bytes>, name: &str) -> Option<&'a str> {
    r.headers().get(name).and_then(|v| v.to_str().ok())
}

pub fn small() -> JiraSiteSpec {
    JiraSiteSpec::new("acme")
        .with_size(3, 17)
        .with_children(2, 3, 1)
        .with_boards(2, 4)
}

/// Every issue of a JQL search, page by page; the pages' sizes too.
async fn walk(sim: &Simulator, jql: &str, max: u64) -> (Vec<Value>, Vec<usize>) {
    let mut all = Vec::new();
    let mut sizes = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut req = json!({"jql": jql, "maxResults": max, "fields": ["summary", "updated"]});
        if let Some(t) = &token {
            req["nextPageToken"] = json!(t);
        }
        let r = post(sim, "/rest/api/3/search/jql", req).await;
        assert_eq!(r.status(), 200, "{}", String::from_utf8_lossy(r.body()));
        let b = body(&r);
        let issues = b["issues"].as_array().expect("issues").clone();
        sizes.push(issues.len());
        all.extend(issues);
        match b["nextPageToken"].as_str() {
            Some(t) => {
                assert_eq!(b["isLast"], json!(false));
                token = Some(t.to_owned());
            }
            None => {
                assert_eq!(b["isLast"], json!(true));
                return (all, sizes);
            }
        }
    }
}

fn ids(issues: &[Value]) -> Vec<String> {
    issues
        .iter()
        .map(|i| i["id"].as_str().expect("id").to_owned())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn the_seeded_site_has_the_sizes_that_were_asked_and_the_same_seed_the_same_data() {
    let sim = jira_sim(small());
    let c = sim.jira_site_counts().expect("seeded");
    assert_eq!((c.projects, c.issues), (3, 51));
    assert_eq!(
        (c.comments, c.changelog_entries, c.worklogs),
        (102, 153, 51)
    );
    // Two boards per project, the first scrum (4 sprints), the second kanban (none).
    assert_eq!((c.boards, c.sprints), (6, 12));
    let again = jira_sim(small());
    let jql = "project in (PA, PB, PC) ORDER BY key";
    assert_eq!(walk(&sim, jql, 50).await.0, walk(&again, jql, 50).await.0);
    let other = jira_sim(small().with_seed(2));
    assert_ne!(walk(&sim, jql, 50).await.0, walk(&other, jql, 50).await.0);
}

#[tokio::test(start_paused = true)]
async fn paging_search_jql_by_next_page_token_walks_every_issue_exactly_once() {
    let sim = jira_sim(JiraSiteSpec::new("acme").with_size(4, 60));
    let (issues, sizes) = walk(&sim, "project in (PA, PB, PC, PD) ORDER BY updated DESC", 7).await;
    let all = ids(&issues);
    let unique: BTreeSet<&String> = all.iter().collect();
    assert_eq!((all.len(), unique.len()), (240, 240));
    assert!(sizes.iter().all(|&n| n <= 7), "{sizes:?}");
    let updated: Vec<&str> = issues
        .iter()
        .map(|i| i["fields"]["updated"].as_str().expect("updated"))
        .collect();
    let instants: Vec<Timestamp> = updated.iter().map(|u| parse_jira(u)).collect();
    assert!(
        instants.windows(2).all(|w| w[0] >= w[1]),
        "ORDER BY updated DESC"
    );
    // The server lowers a page asking for fields to 100 items.
    let (big, sizes) = walk(&sim, "project in (PA, PB, PC, PD)", 1_000).await;
    assert_eq!((big.len(), sizes), (240, vec![100, 100, 40]));
    // Without `fields` a search answers ids only, and a GET walks the same issues.
    let r = get(
        &sim,
        "/rest/api/3/search/jql?jql=project%20%3D%20PB&maxResults=5000",
    )
    .await;
    let b = body(&r);
    let first = &b["issues"][0];
    assert_eq!(first.as_object().map(|m| m.len()), Some(1), "{first}");
    assert_eq!(b["issues"].as_array().map(Vec::len), Some(60));
    // GET pages by the same token, in the query string.
    let mut uri =
        "/rest/api/3/search/jql?jql=project%20%3D%20PB%20ORDER%20BY%20key&maxResults=25&fields=key"
            .to_owned();
    let mut keys = Vec::new();
    loop {
        let b = body(&get(&sim, &uri).await);
        keys.extend(
            b["issues"]
                .as_array()
                .expect("issues")
                .iter()
                .map(|i| i["key"].clone()),
        );
        let Some(t) = b["nextPageToken"].as_str() else {
            break;
        };
        uri = format!(
            "/rest/api/3/search/jql?jql=project%20%3D%20PB%20ORDER%20BY%20key&maxResults=25&fields=key&nextPageToken={t}"
        );
    }
    let unique: BTreeSet<String> = keys.iter().map(Value::to_string).collect();
    assert_eq!((keys.len(), unique.len()), (60, 60));
}

/// Jira's `2026-03-08T03:30:00.000-0400`.
pub fn parse_jira(s: &str) -> Timestamp {
    let (head, offset) = s.split_at(s.len() - 5);
    format!("{head}{}:{}", &offset[..3], &offset[3..])
        .parse()
        .unwrap_or_else(|e| panic!("{s}: {e}"))
}

#[tokio::test(start_paused = true)]
async fn updated_since_is_read_in_the_users_time_zone_across_a_dst_change() {
    // New York leaves EST (UTC-5) for EDT (UTC-4) at 2026-03-08 07:00 UTC.
    let start: Timestamp = "2026-03-08T06:00:00Z".parse().expect("instant");
    let spec = JiraSiteSpec::new("acme")
        .with_size(2, 10)
        .with_time_zone("America/New_York");
    let sim = jira_sim_at(spec, start);
    let me = body(&get(&sim, "/rest/api/3/myself").await);
    assert_eq!(me["timeZone"], json!("America/New_York"));
    // One issue changes at each of these minutes after the start.
    let mut touched = Vec::new();
    let mut elapsed = 0;
    for minutes in [30, 89, 90, 149, 151] {
        tokio::time::advance(Duration::from_secs((minutes - elapsed) * 60)).await;
        elapsed = minutes;
        touched.extend(sim.jira_touch(1));
    }
    // 03:30 in New York that day is 07:30 UTC (06:00 + 90 min): the last three changes.
    // Read as UTC (03:30 UTC) it would take all five; read as EST (08:30 UTC), one.
    for date in ["2026-03-08 03:30", "2026/03/08 03:30"] {
        let jql = format!("project in (PA, PB) AND updated >= \"{date}\" ORDER BY updated ASC, id");
        let (issues, _) = walk(&sim, &jql, 50).await;
        let keys: Vec<String> = issues
            .iter()
            .map(|i| i["key"].as_str().expect("key").to_owned())
            .collect();
        assert_eq!(keys, touched[2..].to_vec(), "{jql}");
        let last = issues[2]["fields"]["updated"].as_str().expect("updated");
        assert_eq!(last, "2026-03-08T04:31:00.000-0400");
    }
    // Before the change a date reads in EST: 01:31 is 06:31 UTC, after the first change
    // (06:30 UTC, written with its EST offset); read in EDT or UTC it would take all five.
    let jql = "project in (PA, PB) AND updated >= \"2026-03-08 01:30\" ORDER BY updated";
    let (issues, _) = walk(&sim, jql, 50).await;
    assert_eq!(issues.len(), 5);
    assert_eq!(
        issues[0]["fields"]["updated"],
        json!("2026-03-08T01:30:00.000-0500")
    );
    let jql = "project in (PA, PB) AND updated >= \"2026-03-08 01:31\" ORDER BY updated";
    assert_eq!(walk(&sim, jql, 50).await.0.len(), 4);
}

#[tokio::test(start_paused = true)]
async fn the_removed_search_endpoint_answers_410_naming_search_jql() {
    let sim = jira_sim(small());
    for r in [
        get(&sim, "/rest/api/3/search?jql=project%3DPA").await,
        post(&sim, "/rest/api/3/search", json!({"jql": "project = PA"})).await,
    ] {
        assert_eq!(r.status(), 410);
        let b = body(&r);
        let message = b["errorMessages"][0].as_str().expect("a message");
        assert!(message.contains("/rest/api/3/search/jql"), "{message}");
    }
}

#[tokio::test(start_paused = true)]
async fn unbounded_and_unparseable_jql_answer_400_with_error_messages() {
    let sim = jira_sim(small());
    for (jql, words) in [
        ("ORDER BY updated DESC", "Unbounded JQL"),
        ("", "Unbounded JQL"),
        ("project = PA AND", "Expecting"),
        ("project = NOPE", "does not exist for the field 'project'"),
        (
            "project = PA AND updated >= \"yesterday at 3\"",
            "is invalid",
        ),
        ("colour = red", "does not exist"),
    ] {
        let r = post(&sim, "/rest/api/3/search/jql", json!({"jql": jql})).await;
        assert_eq!(r.status(), 400, "{jql}");
        let b = body(&r);
        let m = b["errorMessages"][0].as_str().unwrap_or_default();
        assert!(m.contains(words), "{jql}: {m}");
    }
}

/// Every issue of `jql` (one page: the site is small), with `fields`; `Err` is Jira's
/// message.
pub async fn search_all(sim: &Simulator, jql: &str, fields: &[&str]) -> Result<Vec<Value>, String> {
    let req = json!({"jql": jql, "maxResults": 100, "fields": fields});
    let r = post(sim, "/rest/api/3/search/jql", req).await;
    let b = body(&r);
    if r.status() != 200 {
        return Err(b["errorMessages"][0]
            .as_str()
            .unwrap_or_default()
            .to_owned());
    }
    assert_eq!(b["isLast"], json!(true), "{jql}: one page");
    Ok(b["issues"].as_array().expect("issues").clone())
}

pub fn keys_of<'a>(issues: impl IntoIterator<Item = &'a Value>) -> BTreeSet<String> {
    issues
        .into_iter()
        .map(|i| i["key"].as_str().expect("key").to_owned())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn an_endpoint_past_its_burst_answers_429_with_jiras_headers() {
    let mut limits = JiraLimits::default();
    limits.burst_per_sec = 2;
    limits.burst_buffer = 0;
    limits.changelog_burst_per_sec = 3;
    let sim = jira_sim(small().with_limits(limits));
    assert_eq!(get(&sim, "/rest/api/3/myself").await.status(), 200);
    assert_eq!(get(&sim, "/rest/api/3/myself").await.status(), 200);
    let r = get(&sim, "/rest/api/3/myself").await;
    assert_eq!(r.status(), 429);
    assert_eq!(header(&r, "ratelimit-reason"), Some("jira-burst-based"));
    assert_eq!(header(&r, "retry-after"), Some("1"));
    assert_eq!(header(&r, "x-ratelimit-limit"), Some("2"));
    assert_eq!(header(&r, "x-ratelimit-remaining"), Some("0"));
    let reset: Timestamp = header(&r, "x-ratelimit-reset")
        .expect("a reset")
        .parse()
        .expect("ISO 8601");
    assert_eq!(
        reset,
        "2026-11-30T10:00:01Z"
            .parse::<Timestamp>()
            .expect("instant")
    );
    // Another endpoint has its own bucket; bob shares alice's, as burst limits are per
    // site, endpoint and method.
    assert_eq!(get(&sim, "/rest/api/3/project/search").await.status(), 200);
    let r = send(
        &sim,
        Method::GET,
        "/rest/api/3/myself",
        &basic("bob", "tb"),
        None,
    )
    .await;
    assert_eq!(r.status(), 429);
    tokio::time::advance(Duration::from_millis(500)).await;
    assert_eq!(get(&sim, "/rest/api/3/myself").await.status(), 200);
    // Every issue's changelog shares one bucket.
    let mut statuses = Vec::new();
    for key in ["PA-1", "PA-2", "PB-1", "PB-2", "PC-1"] {
        let r = get(&sim, &format!("/rest/api/3/issue/{key}/changelog")).await;
        statuses.push(r.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429], "its own rate, 3");
    let log = sim.request_log();
    let refused = log.iter().filter(|e| e.status == 429).count();
    assert_eq!(refused, sim.count_status(429));
    assert!(
        log.iter()
            .all(|e| e.identity == "alice" || e.identity == "bob")
    );
}

#[tokio::test(start_paused = true)]
async fn a_reset_without_seconds_when_the_site_writes_it_so() {
    let mut limits = JiraLimits::default();
    limits.burst_per_sec = 1;
    limits.burst_buffer = 0;
    limits.reset_without_seconds = true;
    let sim = jira_sim(small().with_limits(limits));
    get(&sim, "/rest/api/3/myself").await;
    let r = get(&sim, "/rest/api/3/myself").await;
    assert_eq!(r.status(), 429);
    // 10:00:01 rounded up to its minute.
    assert_eq!(header(&r, "x-ratelimit-reset"), Some("2026-11-30T10:01Z"));
}

#[tokio::test(start_paused = true)]
async fn oauth_traffic_spends_the_apps_hourly_points_and_is_refused_past_them() {
    let mut limits = JiraLimits::default();
    limits.app_points_per_hour = 60;
    let sim = jira_sim(small().with_limits(limits));
    let bearer = "Bearer t1";
    let jql = json!({"jql": "project = PA", "fields": ["summary"], "maxResults": 17});
    let r = send(
        &sim,
        Method::POST,
        "/rest/api/3/search/jql",
        bearer,
        Some(jql.clone()),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        header(&r, "beta-ratelimit-policy"),
        Some("\"global-app-quota\";q=60;w=3600")
    );
    assert_eq!(header(&r, "beta-ratelimit"), None, "far from the limit");
    // 1 + 17 issues, twice: 36 spent, 24 left (40 %); a third leaves 6 (10 %).
    send(
        &sim,
        Method::POST,
        "/rest/api/3/search/jql",
        bearer,
        Some(jql.clone()),
    )
    .await;
    let r = send(
        &sim,
        Method::POST,
        "/rest/api/3/search/jql",
        bearer,
        Some(jql.clone()),
    )
    .await;
    assert_eq!(
        header(&r, "beta-ratelimit"),
        Some("\"global-app-quota\";r=6;t=3600")
    );
    assert_eq!(sim.request_log().last().map(|e| e.cost), Some(18));
    let r = send(
        &sim,
        Method::POST,
        "/rest/api/3/search/jql",
        bearer,
        Some(jql.clone()),
    )
    .await;
    assert_eq!(r.status(), 200, "points left: answered, and overdrawn");
    let r = send(&sim, Method::GET, "/rest/api/3/myself", bearer, None).await;
    assert_eq!(r.status(), 429);
    assert_eq!(
        header(&r, "ratelimit-reason"),
        Some("jira-quota-global-based")
    );
    assert_eq!(header(&r, "retry-after"), Some("3600"));
    assert_eq!(
        header(&r, "x-ratelimit-reset"),
        Some("2026-11-30T11:00:00Z")
    );
    // API-token traffic does not spend the app's points.
    assert_eq!(get(&sim, "/rest/api/3/myself").await.status(), 200);
    tokio::time::advance(Duration::from_secs(3_600)).await;
    let r = send(&sim, Method::GET, "/rest/api/3/myself", bearer, None).await;
    assert_eq!(r.status(), 200, "a new hour");
}

#[tokio::test(start_paused = true)]
async fn boards_are_capped_at_50_and_a_kanban_board_refuses_sprints_with_400() {
    let sim = jira_sim(JiraSiteSpec::new("acme").with_size(30, 1).with_boards(2, 3));
    let r = get(&sim, "/rest/agile/1.0/board?maxResults=200").await;
    let b = body(&r);
    assert_eq!(
        (b["maxResults"].clone(), b["isLast"].clone()),
        (json!(50), json!(false))
    );
    assert_eq!(b["values"].as_array().map(Vec::len), Some(50));
    let r = get(&sim, "/rest/agile/1.0/board?startAt=50&maxResults=200").await;
    let b = body(&r);
    assert_eq!(
        (b["values"].as_array().map(Vec::len), b["isLast"].clone()),
        (Some(10), json!(true))
    );
    let kanban = b["values"]
        .as_array()
        .and_then(|v| v.iter().find(|x| x["type"] == "kanban"))
        .expect("a kanban board")["id"]
        .clone();
    let r = get(&sim, &format!("/rest/agile/1.0/board/{kanban}/sprint")).await;
    assert_eq!(r.status(), 400);
    assert!(body(&r)["errorMessages"][0].is_string());
    let r = get(&sim, "/rest/agile/1.0/board/1/sprint?state=active,future").await;
    let states: Vec<Value> = body(&r)["values"]
        .as_array()
        .expect("values")
        .iter()
        .map(|s| s["state"].clone())
        .collect();
    assert_eq!(states, vec![json!("active"), json!("future")]);
    let active = &body(&r)["values"][0];
    let at = |k: &str| active[k].as_str().expect(k).parse::<Timestamp>().expect(k);
    assert!(
        at("startDate") < anchor() && anchor() < at("endDate"),
        "{active}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_token_is_accepted_only_with_its_owners_email_or_as_a_bearer() {
    let sim = jira_sim(small());
    let unauthenticated = json!({
        "errorMessages": ["Client must be authenticated to access this resource."],
        "errors": {},
    });
    for auth in [
        basic("bob", "t1"),
        basic("alice", "nope"),
        "Bearer nope".to_owned(),
    ] {
        let r = send(&sim, Method::GET, "/rest/api/3/myself", &auth, None).await;
        assert_eq!(
            (r.status().as_u16(), body(&r)),
            (401, unauthenticated.clone()),
            "{auth}"
        );
    }
    let r = send(&sim, Method::GET, "/rest/api/3/myself", "Bearer tb", None).await;
    assert_eq!(body(&r)["emailAddress"], json!("bob@example.com"));
    let log = sim.request_log();
    assert_eq!(log.iter().filter(|e| e.status == 401).count(), 3);
    assert!(
        log.iter()
            .all(|e| e.token_fingerprint.as_deref() != Some("t1"))
    );
}

#[tokio::test(start_paused = true)]
async fn a_project_nobody_may_browse_is_left_out_and_its_issues_answer_404() {
    let mut spec = small();
    spec.restricted_projects = 1;
    let sim = jira_sim(spec);
    let c = sim.jira_site_counts().expect("seeded");
    assert_eq!((c.projects, c.restricted_projects, c.issues), (2, 1, 34));
    let b = body(&get(&sim, "/rest/api/3/project/search").await);
    assert_eq!(b["total"], json!(2));
    let r = post(
        &sim,
        "/rest/api/3/search/jql",
        json!({"jql": "updated >= -3650d"}),
    )
    .await;
    assert_eq!(body(&r)["issues"].as_array().map(Vec::len), Some(34));
    assert_eq!(
        get(&sim, "/rest/api/3/issue/PC-1/comment").await.status(),
        404
    );
    let r = post(
        &sim,
        "/rest/api/3/search/jql",
        json!({"jql": "project = PC"}),
    )
    .await;
    assert_eq!(r.status(), 400);
}

#[tokio::test(start_paused = true)]
async fn the_bulk_changelog_pages_by_token_over_the_issues_asked() {
    let sim = jira_sim(small());
    let keys: Vec<String> = (1..=17).map(|n| format!("PA-{n}")).collect();
    let mut token: Option<String> = None;
    let mut seen = 0;
    loop {
        let mut req = json!({"issueIdsOrKeys": keys, "maxResults": 10});
        if let Some(t) = &token {
            req["nextPageToken"] = json!(t);
        }
        let b = body(&post(&sim, "/rest/api/3/changelog/bulkfetch", req).await);
        for log in b["issueChangeLogs"].as_array().expect("logs") {
            seen += log["changeHistories"].as_array().map_or(0, Vec::len);
        }
        match b["nextPageToken"].as_str() {
            Some(t) => token = Some(t.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, 17 * 3);
    // Each page is one log line of its route, as a test classifying paths needs.
    let log = sim.request_log();
    assert!(log.len() >= 6, "{}", log.len());
    assert!(
        log.iter()
            .all(|e| (e.method.as_str(), e.path.as_str(), e.status)
                == ("POST", "/rest/api/3/changelog/bulkfetch", 200))
    );
    let too_many: Vec<String> = (0..1_001).map(|n| format!("PA-{n}")).collect();
    let r = post(
        &sim,
        "/rest/api/3/changelog/bulkfetch",
        json!({"issueIdsOrKeys": too_many}),
    )
    .await;
    assert_eq!(r.status(), 400);
}

#[tokio::test(start_paused = true)]
async fn a_site_of_thousands_of_issues_is_walked_by_id_pages_of_5000() {
    let sim = jira_sim(
        JiraSiteSpec::new("big")
            .with_size(3, 2_000)
            .with_children(1, 1, 0),
    );
    assert_eq!(sim.jira_site_counts().map(|c| c.issues), Some(6_000));
    let jql = "project in (PA, PB, PC) ORDER BY key";
    let mut token: Option<String> = None;
    let mut all = BTreeSet::new();
    let mut pages = 0;
    loop {
        let mut req = json!({"jql": jql, "maxResults": 10_000, "fields": ["key"]});
        if let Some(t) = &token {
            req["nextPageToken"] = json!(t);
        }
        let b = body(&post(&sim, "/rest/api/3/search/jql", req).await);
        pages += 1;
        for i in b["issues"].as_array().expect("issues") {
            assert!(all.insert(i["key"].as_str().expect("key").to_owned()));
        }
        match b["nextPageToken"].as_str() {
            Some(t) => token = Some(t.to_owned()),
            None => break,
        }
    }
    assert_eq!((all.len(), pages), (6_000, 2));
}

#[tokio::test(start_paused = true)]
async fn an_oauth_app_reaches_the_site_through_the_gateway_by_its_cloud_id() {
    let sim = jira_sim(small());
    let uri = "/oauth/token/accessible-resources";
    let r = send(&sim, Method::GET, uri, "Bearer t1", None).await;
    assert_eq!(r.status(), 200);
    let cloud = body(&r)[0]["id"].as_str().expect("a cloudId").to_owned();
    assert_eq!(cloud.len(), 36, "a UUID: {cloud}");
    let me = format!("/ex/jira/{cloud}/rest/api/3/myself");
    let r = send(&sim, Method::GET, &me, "Bearer t1", None).await;
    assert_eq!(body(&r)["emailAddress"], json!("alice@example.com"));
    let other = "/ex/jira/00000000-0000-0000-0000-000000000000/rest/api/3/myself";
    let r = send(&sim, Method::GET, other, "Bearer t1", None).await;
    assert_eq!(r.status(), 404);
    let r = send(&sim, Method::GET, uri, &basic("alice", "t1"), None).await;
    assert_eq!(r.status(), 401, "accessible resources are an OAuth app's");
    // The gateway's path is logged as sent.
    assert!(sim.request_log().iter().any(|e| e.path == me));
}

#[tokio::test(start_paused = true)]
async fn the_approximate_count_is_what_the_search_finds_and_leaves_out_what_nobody_may_browse() {
    let mut spec = small();
    spec.restricted_projects = 1;
    let sim = jira_sim(spec);
    let count = |jql: &'static str| {
        let sim = &sim;
        async move {
            let r = post(
                sim,
                "/rest/api/3/search/approximate-count",
                json!({"jql": jql}),
            )
            .await;
            (r.status().as_u16(), body(&r))
        }
    };
    for jql in ["project in (PA, PB)", "project = PA AND status != Done"] {
        let found = search_all(&sim, jql, &["status"]).await.expect("a search");
        assert_eq!(
            count(jql).await,
            (200, json!({"count": found.len()})),
            "{jql}"
        );
    }
    let visible = sim.jira_site_counts().expect("seeded").issues;
    assert_eq!(
        count("project in (PA, PB)").await.1,
        json!({"count": visible})
    );
    // The restricted project (PC) is not there for the caller, as in a search.
    let (status, refused) = count("project = PC").await;
    assert_eq!(status, 400, "{refused}");
    let (status, refused) = count("order by key").await;
    assert_eq!(status, 400, "an unbounded count is refused: {refused}");
}
