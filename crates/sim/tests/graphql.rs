//! GraphQL: GitHub's cost rule (compared with GitHub's documented examples), the node limit,
//! pagination arguments, `rateLimit` in the body, RATE_LIMITED exhaustion.

mod common;

use common::*;
use headroom_sim::graphql::{NODE_LIMIT, query_cost};
use serde_json::{Value, json};

fn cost(q: &str) -> (u64, u64, u64) {
    let c = query_cost(q, None, &Value::Null).expect("valid query");
    (c.requests, c.cost, c.node_count)
}

/// GitHub's documentation: "Calculating a rate limit score before running the call".
#[test]
fn documented_example_viewer_repositories_issues_labels() {
    let q = r#"query {
      viewer {
        login
        repositories(first: 100) {
          edges { node { id
            issues(first: 50) {
              edges { node { id
                labels(first: 60) { edges { node { id name } } }
              } }
            }
          } }
        }
      }
    }"#;
    // 1 + 100 + 5,000 requests = 5,101 → 51 points; 100 + 5,000 + 300,000 nodes.
    assert_eq!(cost(q), (5_101, 51, 305_100));
}

/// GitHub's documentation: the node-limit example with 50 repositories × 10 issues.
#[test]
fn documented_example_fifty_repositories_ten_issues() {
    let q = r#"query {
      viewer {
        repositories(first: 50) {
          edges { repository: node { name
            issues(first: 10) { totalCount edges { node { title bodyHTML } } }
          } }
        }
      }
    }"#;
    // 50 + 500 = 550 nodes; 1 + 50 = 51 requests → 0.51 → 1 point.
    assert_eq!(cost(q), (51, 1, 550));
}

/// GitHub's documentation: the larger node-limit example (22,060 nodes).
#[test]
fn documented_example_pull_requests_issues_comments_followers() {
    let q = r#"query {
      viewer {
        repositories(first: 50) {
          edges { repository: node { name
            pullRequests(first: 20) { edges { pullRequest: node { title
              comments(first: 10) { edges { comment: node { bodyHTML } } }
            } } }
            issues(first: 20) { totalCount edges { issue: node { title bodyHTML
              comments(first: 10) { edges { comment: node { bodyHTML } } }
            } } }
          } }
        }
        followers(first: 10) { edges { follower: node { login } } }
      }
    }"#;
    // Requests: 1 + 50 + 1,000 + 50 + 1,000 + 1 = 2,102 → 21 points.
    assert_eq!(cost(q), (2_102, 21, 22_060));
}

#[test]
fn cost_is_at_least_one_and_rounds() {
    assert_eq!(cost("{ viewer { login } }").1, 1);
    assert_eq!(cost("{ rateLimit { cost } }").1, 1);
    // 1 + 100 requests = 1.01 → 1; 1 + 100 + 49 (two siblings under repos) …
    let q = "{ organization(login: \"acme\") { repositories(first: 100) { nodes { issues(first: 10) { nodes { id } } pullRequests(first: 50) { nodes { id } } } } } }";
    // 1 + 100 + 100 = 201 → 2.01 → 2.
    assert_eq!(cost(q), (201, 2, 100 + 1_000 + 5_000));
    let q = "{ organization(login: \"acme\") { repositories(first: 50) { nodes { issues(first: 100) { nodes { comments(first: 1) { nodes { id } } } } } } } }";
    // 1 + 50 + 5,000 = 5,051 → 50.51 → 51.
    assert_eq!(cost(q).1, 51);
}

#[test]
fn variables_fragments_and_last_count() {
    let q = "query($n: Int = 20, $m: Int) { organization(login: \"acme\") { ...Repos } } fragment Repos on Organization { repositories(first: $n) { nodes { ... on Repository { issues(last: $m) { nodes { id } } } } } }";
    let c = query_cost(q, None, &json!({"m": 30})).expect("valid");
    assert_eq!((c.requests, c.node_count), (1 + 20, 20 + 600));
}

#[test]
fn first_and_last_must_be_between_1_and_100() {
    let e = query_cost(
        "{ viewer { repositories(first: 101) { nodes { id } } } }",
        None,
        &Value::Null,
    )
    .expect_err("over 100");
    assert_eq!(e.kind, Some("EXCESSIVE_PAGINATION"));
    assert!(
        e.message
            .contains("exceeds the `first` limit of 100 records"),
        "{}",
        e.message
    );
    let e = query_cost(
        "{ viewer { repositories(last: 0) { nodes { id } } } }",
        None,
        &Value::Null,
    )
    .expect_err("zero");
    assert_eq!(e.kind, Some("EXCESSIVE_PAGINATION"));
}

#[test]
fn the_node_limit_is_500_000() {
    let q = "{ organization(login: \"acme\") { repositories(first: 100) { nodes { issues(first: 100) { nodes { comments(first: 51) { nodes { id } } } } } } } }";
    // 100 + 10,000 + 510,000 > 500,000.
    let e = query_cost(q, None, &Value::Null).expect_err("too many nodes");
    assert_eq!(e.kind, Some("MAX_NODE_LIMIT_EXCEEDED"));
    assert!(e.message.contains("500,000"));
    let ok = "{ organization(login: \"acme\") { repositories(first: 100) { nodes { issues(first: 100) { nodes { comments(first: 48) { nodes { id } } } } } } } }";
    assert!(cost(ok).2 <= NODE_LIMIT);
}

#[tokio::test(start_paused = true)]
async fn the_cost_is_charged_and_reported_in_rate_limit_and_headers() {
    let sim = sim(config().with_org("acme", 3));
    let q = "{ rateLimit { limit cost remaining used resetAt nodeCount } organization(login: \"acme\") { repositories(first: 50) { nodes { issues(first: 10) { nodes { comments(first: 5) { totalCount } } } } } } }";
    let r = graphql(&sim, "t1", q).await;
    assert_eq!(r.status(), 200);
    let b = json(&r);
    // 1 + 50 + 500 = 551 requests → 6 points; 50 + 500 + 2,500 nodes.
    assert_eq!(b["data"]["rateLimit"]["cost"], 6);
    assert_eq!(b["data"]["rateLimit"]["used"], 6);
    assert_eq!(b["data"]["rateLimit"]["remaining"], 4994);
    assert_eq!(b["data"]["rateLimit"]["limit"], 5000);
    assert_eq!(b["data"]["rateLimit"]["nodeCount"], 3050);
    assert_eq!(b["data"]["rateLimit"]["resetAt"], "2026-11-30T11:00:00Z");
    assert_eq!(header(&r, "x-ratelimit-resource"), Some("graphql"));
    assert_eq!(num(&r, "x-ratelimit-used"), 6);
    assert_eq!(num(&r, "x-ratelimit-remaining"), 4994);
    // The REST core bucket is untouched.
    assert_eq!(
        num(&get(&sim, "/user", Some("t1")).await, "x-ratelimit-used"),
        1
    );
    let log = sim.request_log();
    assert_eq!(log[0].cost, 6);
    assert_eq!(log[0].bucket.as_deref(), Some("graphql"));
}

#[tokio::test(start_paused = true)]
async fn exhaustion_is_http_200_with_rate_limited() {
    let mut c = config();
    c.graphql_limit = 10;
    let sim = sim(c);
    let q = "{ organization(login: \"acme\") { repositories(first: 100) { nodes { issues(first: 5) { nodes { id } } } } } }";
    // 1 + 100 = 101 requests → 1 point … make it costlier:
    let heavy = "{ organization(login: \"acme\") { repositories(first: 100) { nodes { issues(first: 6) { nodes { comments(first: 1) { nodes { id } } } } } } } }";
    // 1 + 100 + 600 = 701 → 7 points.
    assert_eq!(graphql(&sim, "t1", q).await.status(), 200);
    let first = graphql(&sim, "t1", heavy).await;
    assert_eq!(json(&first)["errors"], Value::Null);
    assert_eq!(num(&first, "x-ratelimit-used"), 8);
    let r = graphql(&sim, "t2", heavy).await;
    assert_eq!(r.status(), 200);
    let b = json(&r);
    assert_eq!(b["errors"][0]["type"], "RATE_LIMITED");
    assert!(
        b["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("API rate limit already exceeded for user ID"))
    );
    assert!(b.get("data").is_none_or(Value::is_null));
    assert_eq!(num(&r, "x-ratelimit-remaining"), 2, "not consumed");
    // A cheap query still fits.
    let cheap = graphql(&sim, "t1", "{ viewer { login } }").await;
    assert_eq!(json(&cheap)["data"]["viewer"]["login"], "alice");
}

#[tokio::test(start_paused = true)]
async fn errors_follow_githubs_shape() {
    let sim = sim(config());
    let r = graphql(
        &sim,
        "t1",
        "{ organization(login: \"acme\") { repositories { nodes { name } } } }",
    )
    .await;
    let b = json(&r);
    assert_eq!(b["errors"][0]["type"], "MISSING_PAGINATION_BOUNDARIES");
    assert!(
        b["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("You must provide a `first` or `last` value"))
    );

    let r = graphql(&sim, "t1", "{ organization(login: \"nope\") { login } }").await;
    let b = json(&r);
    assert_eq!(b["errors"][0]["type"], "NOT_FOUND");
    assert_eq!(b["data"]["organization"], Value::Null);

    let r = graphql(
        &sim,
        "t1",
        "{ organization(login: \"acme\") { repositories(first: 500) { nodes { name } } } }",
    )
    .await;
    assert_eq!(json(&r)["errors"][0]["type"], "EXCESSIVE_PAGINATION");
    // The two queries above ran (1 point each); this one is refused before running.
    assert_eq!(
        num(&r, "x-ratelimit-used"),
        2,
        "refused before running, not charged"
    );

    let r = graphql(&sim, "t1", "{ nonsense }").await;
    assert!(json(&r)["errors"][0]["message"].is_string());

    let anon = send(
        &sim,
        http::Method::POST,
        "/graphql",
        None,
        json!({"query": "{ viewer { login } }"}),
    )
    .await;
    assert_eq!(anon.status(), 401);
}

#[tokio::test(start_paused = true)]
async fn an_org_sync_walks_every_connection_with_cursors() {
    let sim = sim(config().with_org("acme", 7));
    let mut after: Option<String> = None;
    let mut names = Vec::new();
    let mut total;
    loop {
        let after_arg = after
            .as_ref()
            .map(|a| format!(", after: \"{a}\""))
            .unwrap_or_default();
        let q = format!(
            "{{ organization(login: \"acme\") {{ repositories(first: 3{after_arg}) {{ totalCount pageInfo {{ endCursor hasNextPage }} nodes {{ nameWithOwner databaseId issues(first: 100) {{ totalCount nodes {{ number comments(first: 100) {{ totalCount }} }} }} pullRequests(first: 100) {{ nodes {{ number commits(first: 100) {{ totalCount nodes {{ commit {{ oid }} }} }} }} }} refs(refPrefix: \"refs/heads/\", first: 100) {{ nodes {{ name target {{ oid }} }} }} projectsV2(first: 10) {{ nodes {{ title number }} }} }} }} }} }}"
        );
        let b = json(&graphql(&sim, "t1", &q).await);
        assert_eq!(b["errors"], Value::Null, "{b}");
        let conn = &b["data"]["organization"]["repositories"];
        total = conn["totalCount"].as_i64().expect("count");
        for n in conn["nodes"].as_array().expect("nodes") {
            names.push(n["nameWithOwner"].as_str().expect("name").to_owned());
            assert!(
                !n["refs"]["nodes"].as_array().expect("refs").is_empty(),
                "every repo has a default branch"
            );
        }
        if conn["pageInfo"]["hasNextPage"] == true {
            after = conn["pageInfo"]["endCursor"].as_str().map(str::to_owned);
        } else {
            break;
        }
    }
    assert_eq!(total, 7);
    assert_eq!(names.len(), 7);
    let b = json(&graphql(&sim, "t1", "{ organization(login: \"acme\") { membersWithRole(first: 100) { totalCount edges { role node { login } } } teams(first: 100) { totalCount nodes { slug members(first: 10) { totalCount } } } } }").await);
    let members = &b["data"]["organization"]["membersWithRole"];
    assert!(members["totalCount"].as_i64().expect("count") >= 5);
    assert!(
        members["edges"]
            .as_array()
            .expect("edges")
            .iter()
            .any(|e| e["node"]["login"] == "alice")
    );
    assert!(
        members["edges"]
            .as_array()
            .expect("edges")
            .iter()
            .any(|e| e["role"] == "ADMIN")
    );
    assert!(
        b["data"]["organization"]["teams"]["totalCount"]
            .as_i64()
            .expect("teams")
            >= 1
    );
}

#[tokio::test(start_paused = true)]
async fn response_fields_keep_the_querys_order() {
    let sim = sim(config());
    let r = graphql(&sim, "t1", "{ viewer { login } rateLimit { cost } }").await;
    let text = String::from_utf8(r.body().to_vec()).expect("utf-8");
    assert!(text.find("viewer") < text.find("rateLimit"), "{text}");
    let r = graphql(&sim, "t1", "{ rateLimit { cost } viewer { login } }").await;
    let text = String::from_utf8(r.body().to_vec()).expect("utf-8");
    assert!(text.find("rateLimit") < text.find("viewer"), "{text}");
}

#[tokio::test(start_paused = true)]
async fn graphql_points_belong_to_the_user_and_installations_have_their_own() {
    let sim = sim(config());
    let q = "{ organization(login: \"acme\") { repositories(first: 100) { nodes { issues(first: 100) { totalCount } } } } }";
    let a = graphql(&sim, "t1", q).await;
    // 1 + 100 requests → 1.01 → 1 point.
    assert_eq!(num(&a, "x-ratelimit-used"), 1);
    let b = graphql(&sim, "t2", q).await;
    assert_eq!(
        num(&b, "x-ratelimit-used"),
        2,
        "t2 spends alice's points too"
    );
    let app = graphql(&sim, "ghs_app", "{ rateLimit { used } viewer { login } }").await;
    let body = json(&app);
    assert_eq!(body["data"]["rateLimit"]["used"], 1);
    assert_eq!(
        body["errors"][0]["type"], "FORBIDDEN",
        "an installation has no viewer user"
    );
}

#[tokio::test(start_paused = true)]
async fn data_depends_on_the_seed_only() {
    let q = "{ organization(login: \"acme\") { repositories(first: 100) { nodes { nameWithOwner issues(first: 100) { nodes { title comments(first: 10) { totalCount } } } } } } }";
    let a = json(&graphql(&common::sim(config().with_seed(7)), "t1", q).await);
    let b = json(&graphql(&common::sim(config().with_seed(7)), "t1", q).await);
    let c = json(&graphql(&common::sim(config().with_seed(8)), "t1", q).await);
    assert_eq!(a["data"], b["data"]);
    assert_ne!(a["data"], c["data"]);
}

#[test]
fn fragment_bombs_are_refused_not_walked() {
    let mut q = String::from("{ viewer { ...F0 } }");
    for i in 0..40 {
        q.push_str(&format!(
            " fragment F{i} on User {{ login ...F{n} ...F{n} }}",
            n = i + 1
        ));
    }
    q.push_str(" fragment F40 on User { login }");
    let e = query_cost(&q, None, &Value::Null).expect_err("refused");
    assert!(e.message.contains("too complex"), "{}", e.message);
}

#[tokio::test(start_paused = true)]
async fn hostile_cursors_and_pages_are_answered_not_panicked_on() {
    let sim = sim(config());
    let huge = "Y3Vyc29yOnYyOjE4NDQ2NzQ0MDczNzA5NTUxNjE1"; // cursor:v2:18446744073709551615
    let q = format!(
        "{{ organization(login: \"acme\") {{ repositories(first: 5, after: \"{huge}\") {{ nodes {{ name }} }} }} }}"
    );
    assert_eq!(graphql(&sim, "t1", &q).await.status(), 200);
    for uri in [
        "/orgs/acme/repos?page=18446744073709551615",
        "/events?page=99999999999999&per_page=100",
    ] {
        let r = get(&sim, uri, Some("t1")).await;
        assert!(
            r.status() == 200 || r.status() == 422,
            "{uri}: {}",
            r.status()
        );
    }
}

/// GitHub validates every document against its published schema before running it: an
/// invalid one is answered whole (HTTP 200, `errors` with GitHub's wording and where, no
/// `data` key) and costs nothing.
#[tokio::test(start_paused = true)]
async fn documents_githubs_schema_refuses_are_refused_whole_and_free() {
    let sim = sim(config());
    let bad = "query {\n  organization(login: \"acme\") {\n    repositories(first: 5) {\n      nodes { owner { login databaseId } }\n    }\n  }\n}";
    let r = graphql(&sim, "t1", bad).await;
    assert_eq!(r.status(), 200);
    let b = json(&r);
    assert!(b.get("data").is_none(), "{b}");
    assert_eq!(
        b["errors"][0]["message"],
        "Field 'databaseId' doesn't exist on type 'RepositoryOwner'"
    );
    assert_eq!(
        b["errors"][0]["locations"],
        json!([{ "line": 4, "column": 29 }])
    );
    assert_eq!(
        num(&r, "x-ratelimit-used"),
        0,
        "nothing ran, nothing charged"
    );
    assert_eq!(sim.request_log()[0].cost, 0);
    // A missing required argument and an unknown enum value are refused the same way.
    for doc in [
        "{ repository(owner: \"acme\") { name } }",
        "{ organization(login: \"acme\") { repositories(first: 1, orderBy: { field: NEWEST, direction: ASC }) { totalCount } } }",
    ] {
        let b = json(&graphql(&sim, "t1", doc).await);
        assert!(
            b.get("data").is_none() && b["errors"][0]["message"].is_string(),
            "{doc}: {b}"
        );
    }
    // The interface's fields through the types that implement it run.
    let good = "{ organization(login: \"acme\") { repositories(first: 5) { nodes { owner { __typename login ... on Organization { databaseId } ... on User { databaseId } } } } } }";
    let r = graphql(&sim, "t1", good).await;
    let b = json(&r);
    assert_eq!(b["errors"], Value::Null, "{b}");
    let owner = &b["data"]["organization"]["repositories"]["nodes"][0]["owner"];
    assert_eq!(owner["__typename"], "Organization");
    assert_eq!(owner["login"], "acme");
    assert!(owner["databaseId"].as_i64().is_some(), "{owner}");
    assert_eq!(num(&r, "x-ratelimit-used"), 1);
}
