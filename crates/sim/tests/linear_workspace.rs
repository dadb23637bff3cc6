//! The seeded Linear workspace at `POST /linear/graphql`: identity by API key or OAuth token,
//! Relay paging in `updatedAt` order, `updatedAt` filters, the touch hook, validation against
//! the schema subset (held to Linear's published schema), complexity and its per-query
//! maximum, the two leaky buckets with their headers, and the request log's route families.

mod common;

#[path = "linear_workspace/subset.rs"]
mod subset;

use std::collections::BTreeSet;

use bytes::Bytes;
use common::*;
use headroom_core::clock::SignedDuration;
use headroom_sim::{LinearLimits, LinearWorkspaceSpec, SimConfig, Simulator};
use http::{Request, Response};
use serde_json::{Value, json};

fn spec() -> LinearWorkspaceSpec {
    LinearWorkspaceSpec::new("acme")
        .with_teams(3)
        .with_issues_per_team(40)
}

fn linear_sim(spec: LinearWorkspaceSpec) -> Simulator {
    sim(config().with_linear_workspace(spec))
}

/// Sends a document with `authorization` as given (a raw API key, or `Bearer …`).
async fn post(
    sim: &Simulator,
    authorization: &str,
    query: &str,
    variables: Value,
) -> Response<Bytes> {
    let body = json!({ "query": query, "variables": variables });
    let req = Request::post("/linear/graphql")
        .header("authorization", authorization)
        .header("content-type", "application/json")
        .body(Bytes::from(body.to_string()))
        .expect("request");
    sim.handle(req, PEER).await
}

fn header(r: &Response<Bytes>, name: &str) -> u64 {
    r.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no numeric {name} header"))
}

/// Answers 200 with no errors, or panics with the body.
fn data(r: &Response<Bytes>) -> Value {
    let body = json(r);
    assert_eq!(r.status(), 200, "{body}");
    assert!(body.get("errors").is_none(), "{body}");
    body["data"].clone()
}

const ISSUE_PAGE: &str = "query($after: String) {
  issues(first: 25, after: $after, orderBy: updatedAt) {
    nodes { id identifier updatedAt }
    pageInfo { hasNextPage endCursor }
  }
}";

/// Every issue of a Relay walk, in order, with its `updatedAt`.
async fn walk_issues(sim: &Simulator, filter: Option<Value>) -> Vec<(String, String)> {
    let query = match filter {
        None => ISSUE_PAGE.to_owned(),
        Some(_) => ISSUE_PAGE
            .replace("$after: String", "$after: String, $filter: IssueFilter")
            .replace("orderBy: updatedAt", "orderBy: updatedAt, filter: $filter"),
    };
    let mut after = Value::Null;
    let mut out = Vec::new();
    loop {
        let vars = json!({ "after": after, "filter": filter.clone().unwrap_or(Value::Null) });
        let page = data(&post(sim, "t1", &query, vars).await)["issues"].clone();
        for n in page["nodes"].as_array().expect("nodes") {
            let s = |k: &str| n[k].as_str().expect("string").to_owned();
            out.push((s("id"), s("updatedAt")));
        }
        if page["pageInfo"]["hasNextPage"] != json!(true) {
            return out;
        }
        after = page["pageInfo"]["endCursor"].clone();
    }
}

#[tokio::test(start_paused = true)]
async fn relay_paging_walks_every_issue_once_in_updated_at_order() {
    let sim = linear_sim(spec());
    let counts = sim.linear_workspace_counts();
    assert_eq!(counts.issues, 120);
    let walked = walk_issues(&sim, None).await;
    let ids: BTreeSet<&String> = walked.iter().map(|(id, _)| id).collect();
    assert_eq!(walked.len(), counts.issues, "every issue once");
    assert_eq!(ids.len(), counts.issues, "no issue twice");
    // Newest first: the most recently updated lead.
    assert!(walked.windows(2).all(|w| w[0].1 >= w[1].1), "{walked:?}");
    // Seeded from the seed: a second simulator serves the same workspace.
    let again = walk_issues(&linear_sim(spec()), None).await;
    assert_eq!(again, walked);
}

#[tokio::test(start_paused = true)]
async fn an_updated_at_filter_returns_only_the_issues_changed_since() {
    let sim = linear_sim(spec());
    let since = now(&sim);
    sim.clock().sleep(SignedDuration::from_secs(60)).await;
    let touched = sim.linear_touch(5);
    assert_eq!(touched.len(), 5);
    let stamp = since.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
    let changed = walk_issues(&sim, Some(json!({ "updatedAt": { "gt": stamp } }))).await;
    assert_eq!(changed.len(), 5, "{changed:?}");
    // The touched issues, each with its new history entry at its new updatedAt.
    for identifier in &touched {
        let q = "query($id: String!) { issue(id: $id) {
            updatedAt history(first: 50) { nodes { createdAt toPriority } } } }";
        let issue = data(&post(&sim, "t1", q, json!({ "id": identifier })).await)["issue"].clone();
        assert!(
            changed.iter().any(|(_, u)| *u == issue["updatedAt"]),
            "{issue}"
        );
        let entries = issue["history"]["nodes"]
            .as_array()
            .expect("history")
            .clone();
        assert!(
            entries.iter().any(|h| h["createdAt"] == issue["updatedAt"]),
            "{issue}"
        );
    }
    // A duration counts back from now.
    let recent = walk_issues(&sim, Some(json!({ "updatedAt": { "gt": "-PT2M" } }))).await;
    assert_eq!(recent.len(), 5);
}

#[tokio::test(start_paused = true)]
async fn a_document_invalid_against_linears_schema_is_refused_before_it_runs() {
    let sim = linear_sim(spec());
    for (query, words) in [
        (
            "{ issues { nodes { id nickname } } }",
            "Cannot query field \"nickname\" on type \"Issue\".",
        ),
        // `issueHistory` is not a root field of Linear's: history lives only under an issue.
        (
            "{ issueHistory { nodes { id } } }",
            "Cannot query field \"issueHistory\" on type \"Query\".",
        ),
    ] {
        let r = post(&sim, "t1", query, json!({})).await;
        let body = json(&r);
        assert_eq!(r.status(), 400, "{body}");
        assert_eq!(
            body["errors"][0]["extensions"]["code"],
            "GRAPHQL_VALIDATION_FAILED"
        );
        assert_eq!(body["errors"][0]["message"], words);
        assert!(body.get("data").is_none(), "{body}");
    }
    // A filter field Linear does not have is refused too, not ignored.
    let r = post(
        &sim,
        "t1",
        "{ issues(filter: { modifiedAt: { gt: \"2026-01-01\" } }) { nodes { id } } }",
        json!({}),
    )
    .await;
    assert_eq!(r.status(), 400);
    let log = sim.request_log();
    assert!(
        log.iter()
            .all(|e| e.path.ends_with("#invalid") && e.cost == 0),
        "{log:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_unknown_key_answers_linears_authentication_error_and_oauth_is_bearer() {
    let sim = linear_sim(spec());
    let q = "{ viewer { id displayName } rateLimitStatus { kind identifier limits { type allowedAmount } } }";
    for auth in ["nope", "Bearer nope", "token t1"] {
        let r = post(&sim, auth, q, json!({})).await;
        let body = json(&r);
        assert_eq!(r.status(), 401, "{auth}: {body}");
        assert_eq!(
            body["errors"][0]["extensions"]["code"],
            "AUTHENTICATION_ERROR"
        );
        assert_eq!(
            body["errors"][0]["extensions"]["type"],
            "authentication error"
        );
    }
    let key = data(&post(&sim, "t1", q, json!({})).await);
    assert_eq!(key["viewer"]["displayName"], "alice");
    assert_eq!(key["rateLimitStatus"]["kind"], "api key");
    assert_eq!(
        key["rateLimitStatus"]["limits"][0]["allowedAmount"],
        json!(2500.0)
    );
    let r = post(&sim, "Bearer tb", q, json!({})).await;
    assert_eq!(header(&r, "x-ratelimit-requests-limit"), 5_000);
    let oauth = data(&r);
    assert_eq!(oauth["viewer"]["displayName"], "bob");
    assert_eq!(oauth["rateLimitStatus"]["kind"], "oauth");
}

#[tokio::test(start_paused = true)]
async fn a_spent_complexity_budget_answers_ratelimited_and_refills_over_time() {
    let limits = LinearLimits {
        api_key_complexity: 1_000,
        ..LinearLimits::default()
    };
    let sim = linear_sim(spec().with_limits(limits));
    // 1 + 50 × (1 + 2 × 0.1) = 61 points.
    let q = "{ issues(first: 50) { nodes { id title } } }";
    let mut allowed = 0;
    let refused = loop {
        let r = post(&sim, "t1", q, json!({})).await;
        assert_eq!(header(&r, "x-complexity"), 61);
        if r.status() != 200 {
            break r;
        }
        allowed += 1;
        assert!(allowed <= 16, "the budget of 1,000 points never ran out");
    };
    assert_eq!(allowed, 16, "16 × 61 points fit in 1,000");
    let body = json(&refused);
    assert_eq!(refused.status(), 400, "{body}");
    assert_eq!(body["errors"][0]["extensions"]["code"], "RATELIMITED");
    assert_eq!(body["errors"][0]["extensions"]["type"], "ratelimited");
    assert_eq!(header(&refused, "x-ratelimit-complexity-limit"), 1_000);
    assert_eq!(
        header(&refused, "x-ratelimit-complexity-remaining"),
        1_000 - 16 * 61
    );
    assert_eq!(
        header(&refused, "x-ratelimit-requests-remaining"),
        2_500 - 16
    );
    let now_ms = now(&sim).as_millisecond() as u64;
    let reset = header(&refused, "x-ratelimit-complexity-reset");
    // Full again when 976 points have leaked back at 1,000 an hour.
    assert_eq!(reset, now_ms + 976 * 3_600);
    // Within a few minutes the bucket holds 61 points again.
    sim.clock().sleep(SignedDuration::from_secs(200)).await;
    let r = post(&sim, "t1", q, json!({})).await;
    assert_eq!(r.status(), 200, "{}", json(&r));
    // OAuth has its own buckets.
    let r = post(&sim, "Bearer t1", q, json!({})).await;
    assert_eq!(r.status(), 200);
}

#[tokio::test(start_paused = true)]
async fn a_spent_request_budget_answers_ratelimited_whatever_the_points_left() {
    let limits = LinearLimits {
        api_key_requests: 3,
        ..LinearLimits::default()
    };
    let sim = linear_sim(spec().with_limits(limits));
    let q = "{ viewer { id } }";
    for left in [2, 1, 0] {
        let r = post(&sim, "t1", q, json!({})).await;
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "x-ratelimit-requests-remaining"), left);
    }
    let r = post(&sim, "t1", q, json!({})).await;
    assert_eq!(r.status(), 400);
    assert_eq!(json(&r)["errors"][0]["extensions"]["code"], "RATELIMITED");
    assert!(header(&r, "x-ratelimit-complexity-remaining") > 2_999_000);
    // One request leaks back every 20 minutes.
    sim.clock().sleep(SignedDuration::from_secs(1_200)).await;
    assert_eq!(post(&sim, "t1", q, json!({})).await.status(), 200);
}

#[tokio::test(start_paused = true)]
async fn a_workspace_of_thousands_of_issues_pages_in_full() {
    let sim = linear_sim(spec().with_teams(5).with_issues_per_team(1_000));
    assert_eq!(sim.linear_workspace_counts().issues, 5_000);
    let q = "query($after: String) { issues(first: 250, after: $after, orderBy: updatedAt) {
        nodes { id } pageInfo { hasNextPage endCursor } } }";
    let (mut after, mut seen, mut pages) = (Value::Null, BTreeSet::new(), 0);
    loop {
        let d = data(&post(&sim, "t1", q, json!({ "after": after })).await);
        for n in d["issues"]["nodes"].as_array().expect("nodes") {
            assert!(seen.insert(n["id"].to_string()), "{n} twice");
        }
        pages += 1;
        if d["issues"]["pageInfo"]["hasNextPage"] != json!(true) {
            break;
        }
        after = d["issues"]["pageInfo"]["endCursor"].clone();
    }
    assert_eq!((seen.len(), pages), (5_000, 20));
}

#[tokio::test(start_paused = true)]
async fn a_query_over_the_maximum_complexity_is_refused_as_too_complex() {
    let sim = linear_sim(spec());
    let q = "{ issues(first: 100) { nodes { id comments(first: 100) { nodes { id } } } } }";
    let r = post(&sim, "t1", q, json!({})).await;
    let body = json(&r);
    assert_eq!(r.status(), 400, "{body}");
    let e = &body["errors"][0];
    assert_eq!(e["message"], "Query too complex");
    assert_eq!(e["extensions"]["code"], "INPUT_ERROR");
    assert_eq!(e["extensions"]["type"], "invalid input");
    let words = e["extensions"]["userPresentableMessage"]
        .as_str()
        .unwrap_or("");
    assert!(words.contains("Complexity: 11211."), "{words}");
    assert!(
        words.contains("Maximum allowed complexity: 10000."),
        "{words}"
    );
    assert_eq!(header(&r, "x-complexity"), 11_211);
    // No points spent (a too-complex document never ran), one request.
    assert_eq!(header(&r, "x-ratelimit-complexity-remaining"), 3_000_000);
    assert_eq!(header(&r, "x-ratelimit-requests-remaining"), 2_499);
    // Half the page fits.
    let r = post(
        &sim,
        "t1",
        &q.replace(
            "first: 100) { nodes { id comments",
            "first: 50) { nodes { id comments",
        ),
        json!({}),
    )
    .await;
    assert_eq!(r.status(), 200);
}

#[tokio::test(start_paused = true)]
async fn the_request_log_names_each_operations_root_fields() {
    let sim = linear_sim(spec());
    let q = "query Sync { teams { nodes { id } } ...More }
             fragment More on Query { issues(first: 1) { nodes { id } } }";
    let r = post(&sim, "t1", q, json!({})).await;
    data(&r);
    // The answer keeps the query's order, as graphql-js does.
    let text = String::from_utf8_lossy(r.body()).into_owned();
    assert!(text.starts_with("{\"data\":{\"teams\":"), "{text}");
    let log = sim.request_log();
    let entry = log.last().expect("logged");
    assert_eq!(entry.path, "/linear/graphql#root=issues,teams");
    assert_eq!(entry.identity, "alice");
    assert_eq!(entry.method, "POST");
    assert_eq!(entry.status, 200);
    assert_eq!(entry.cost, header(&r, "x-complexity"));
}

#[tokio::test(start_paused = true)]
async fn an_unknown_issue_id_answers_linears_entity_not_found() {
    let sim = linear_sim(spec());
    let r = post(&sim, "t1", "{ issue(id: \"NOPE-1\") { id } }", json!({})).await;
    let body = json(&r);
    assert_eq!(r.status(), 200, "{body}");
    assert_eq!(body["data"], Value::Null);
    assert_eq!(body["errors"][0]["message"], "Entity not found: Issue");
    assert_eq!(body["errors"][0]["extensions"]["code"], "INPUT_ERROR");
    // By identifier or by id, a seeded issue is found.
    let found = data(
        &post(
            &sim,
            "t1",
            "{ issue(id: \"ENG-1\") { id identifier } }",
            json!({}),
        )
        .await,
    );
    assert_eq!(found["issue"]["identifier"], "ENG-1");
}

#[tokio::test(start_paused = true)]
async fn every_entity_walks_to_the_seeded_counts() {
    let sim = linear_sim(spec());
    let c = sim.linear_workspace_counts();
    let total = |root: &'static str| {
        let sim = sim.clone();
        async move {
            let q = format!(
                "query($after: String) {{ {root}(first: 100, after: $after) {{
                    edges {{ cursor node {{ id }} }} pageInfo {{ hasNextPage endCursor }} }} }}"
            );
            let (mut after, mut n) = (Value::Null, 0);
            loop {
                let d = data(&post(&sim, "t1", &q, json!({ "after": after })).await);
                n += d[root]["edges"].as_array().map_or(0, Vec::len);
                if d[root]["pageInfo"]["hasNextPage"] != json!(true) {
                    return n;
                }
                after = d[root]["pageInfo"]["endCursor"].clone();
            }
        }
    };
    assert_eq!(total("teams").await, c.teams);
    assert_eq!(total("users").await, c.users);
    assert_eq!(total("teamMemberships").await, c.memberships);
    assert_eq!(total("workflowStates").await, c.states);
    assert_eq!(total("issueLabels").await, c.labels);
    assert_eq!(total("projects").await, c.projects);
    assert_eq!(total("cycles").await, c.cycles);
    assert_eq!(total("comments").await, c.comments);
    assert_eq!(total("attachments").await, c.attachments);
    // History only through its issue.
    let q = "query($after: String) { issues(first: 20, after: $after) {
        nodes { history(first: 10) { nodes { id } pageInfo { hasNextPage } } }
        pageInfo { hasNextPage endCursor } } }";
    let (mut after, mut history) = (Value::Null, 0);
    loop {
        let d = data(&post(&sim, "t1", q, json!({ "after": after })).await);
        for n in d["issues"]["nodes"].as_array().expect("nodes") {
            assert_eq!(n["history"]["pageInfo"]["hasNextPage"], json!(false));
            history += n["history"]["nodes"].as_array().map_or(0, Vec::len);
        }
        if d["issues"]["pageInfo"]["hasNextPage"] != json!(true) {
            break;
        }
        after = d["issues"]["pageInfo"]["endCursor"].clone();
    }
    assert_eq!(history, c.history);
    assert!(
        c.comments > 0 && c.attachments > 0 && c.history >= c.issues,
        "{c:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_linear_subset_is_linears_published_schema() {
    let Some(oracle) = headroom_testkit::oracles::read(
        "the_linear_subset_is_linears_published_schema",
        "linear/schema.graphql",
    ) else {
        return;
    };
    let differences = subset::differences(headroom_sim::linear::schema::SUBSET_SDL, &oracle);
    assert!(
        differences.is_empty(),
        "the simulator's Linear schema differs from Linear's:\n{}",
        differences.join("\n")
    );
    // The comparison can fail: a field Linear does not have is caught.
    let altered = headroom_sim::linear::schema::SUBSET_SDL.replacen(
        "identifier: String!",
        "identifier: String",
        1,
    );
    assert!(!subset::differences(&altered, &oracle).is_empty());
}

#[test]
fn an_invalid_workspace_spec_is_refused() {
    let mut spec = LinearWorkspaceSpec::new("acme corp");
    let config = SimConfig::default().with_linear_workspace(spec.clone());
    assert!(config.validate().is_err());
    spec.name = "acme".to_owned();
    spec.max_history = 0;
    assert!(
        SimConfig::default()
            .with_linear_workspace(spec)
            .validate()
            .is_err()
    );
}
