//! What a complete, incremental organization sync needs from the simulator: project numbers
//! unique per owner, connections deeper than one page and their follow-up fields, `since`
//! and `orderBy` on issues and pull requests, changes between syncs, and GraphQL timeouts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;

use common::*;
use headroom_core::clock::SignedDuration;
use headroom_sim::world::deep;
use serde_json::Value;

fn deep_config(repos: usize, deep_repos: usize) -> headroom_sim::SimConfig {
    let mut c = config().with_org("acme", repos);
    c.deep_repos = deep_repos;
    // Only the deep connections go past one page.
    c.density = headroom_sim::Density::SPARSE;
    c
}

/// The deep repository's `owner/name`: the organization's first.
fn first_repo(sim: &headroom_sim::Simulator) -> (u64, String) {
    sim.with_world(|w| {
        let r = w.org_repos()[0];
        (r.id, r.name.clone())
    })
}

async fn data(sim: &headroom_sim::Simulator, q: &str) -> Value {
    let resp = graphql(sim, "t1", q).await;
    assert_eq!(resp.status(), 200);
    let body = json(&resp);
    assert_eq!(body["errors"], Value::Null, "{body}");
    body["data"].clone()
}

#[tokio::test(start_paused = true)]
async fn project_numbers_are_unique_per_organization() {
    let s = sim(deep_config(30, 0));
    let (numbers, projects) = s.with_world(|w| {
        let ids: Vec<u64> = w.org_repos().iter().map(|r| r.id).collect();
        let mut numbers = BTreeSet::new();
        let mut projects = 0;
        for id in ids {
            for p in &w.content(id).projects {
                numbers.insert(p.number);
                projects += 1;
            }
        }
        (numbers, projects)
    });
    assert!(projects > 10, "{projects}");
    assert_eq!(numbers.len(), projects, "no two projects share a number");
}

#[tokio::test(start_paused = true)]
async fn deep_connections_continue_past_one_page_through_their_parent() {
    let s = sim(deep_config(3, 1));
    let (id, name) = first_repo(&s);
    let (issue, pull, project) = s.with_world(|w| {
        let c = w.content(id);
        let issue = c
            .issues
            .iter()
            .find(|i| i.comments.len() == deep::COMMENTS)
            .map(|i| i.number)
            .expect("the long issue");
        let pull = c
            .pulls
            .iter()
            .find(|p| p.commits.len() == deep::COMMITS)
            .map(|p| p.number)
            .expect("the long pull request");
        let project = c
            .projects
            .iter()
            .find(|p| p.items.len() == deep::PROJECT_ITEMS)
            .map(|p| p.number)
            .expect("the big project");
        (issue, pull, project)
    });
    // Each connection: 100, then the rest after the first page's cursor.
    for (parent, field, arg, total) in [
        ("issue", "comments", issue, deep::COMMENTS),
        ("pullRequest", "commits", pull, deep::COMMITS),
        ("projectV2", "items", project, deep::PROJECT_ITEMS),
    ] {
        let page = |after: Option<String>| {
            let after = after
                .map(|a| format!(", after: \"{a}\""))
                .unwrap_or_default();
            format!(
                "{{ repository(owner: \"acme\", name: \"{name}\") {{ {parent}(number: {arg}) {{ number {field}(first: 100{after}) {{ totalCount nodes {{ __typename }} pageInfo {{ hasNextPage endCursor }} }} }} }} }}"
            )
        };
        let first = data(&s, &page(None)).await;
        let conn = &first["repository"][parent][field];
        assert_eq!(conn["totalCount"], total as i64, "{parent}");
        assert_eq!(conn["nodes"].as_array().unwrap().len(), 100, "{parent}");
        assert_eq!(conn["pageInfo"]["hasNextPage"], true, "{parent}");
        let cursor = conn["pageInfo"]["endCursor"].as_str().unwrap().to_owned();
        let second = data(&s, &page(Some(cursor))).await;
        let conn = &second["repository"][parent][field];
        assert_eq!(
            conn["nodes"].as_array().unwrap().len(),
            total - 100,
            "{parent}"
        );
        assert_eq!(conn["pageInfo"]["hasNextPage"], false, "{parent}");
    }
    // A project's items say what they show.
    let items = data(
        &s,
        &format!(
            "{{ repository(owner: \"acme\", name: \"{name}\") {{ projectV2(number: {project}) {{ items(first: 100) {{ nodes {{ type content {{ __typename ... on Issue {{ number }} ... on PullRequest {{ number }} ... on DraftIssue {{ title }} }} }} }} views(first: 5) {{ nodes {{ layout }} }} }} }} }}"
        ),
    )
    .await;
    let nodes = items["repository"]["projectV2"]["items"]["nodes"]
        .as_array()
        .unwrap()
        .clone();
    let kinds: BTreeSet<&str> = nodes.iter().filter_map(|n| n["type"].as_str()).collect();
    assert!(
        kinds.contains("ISSUE") && kinds.contains("PULL_REQUEST") && kinds.contains("DRAFT_ISSUE"),
        "{kinds:?}"
    );
    for n in &nodes {
        let typename = n["content"]["__typename"].as_str().unwrap();
        let expected = match n["type"].as_str().unwrap() {
            "ISSUE" => "Issue",
            "PULL_REQUEST" => "PullRequest",
            _ => "DraftIssue",
        };
        assert_eq!(typename, expected, "{n}");
    }
    assert_eq!(
        items["repository"]["projectV2"]["views"]["nodes"][0]["layout"],
        "BOARD_LAYOUT"
    );
}

#[tokio::test(start_paused = true)]
async fn since_and_order_show_what_changed() {
    // The deep repository has an issue and a pull request for sure.
    let s = sim(deep_config(2, 1));
    let (id, name) = first_repo(&s);
    let since = now(&s) - SignedDuration::from_secs(1);
    let changed =
        |q: &str| format!("{{ repository(owner: \"acme\", name: \"{name}\") {{ {q} }} }}");
    let issues_since = changed(&format!(
        "issues(first: 100, filterBy: {{ since: \"{since}\" }}) {{ nodes {{ number }} }}"
    ));
    let none = data(&s, &issues_since).await;
    assert_eq!(none["repository"]["issues"]["nodes"], Value::Array(vec![]));

    let (issue, pull) = s.with_world(|w| {
        let c = w.content(id);
        let issue = c.issues.iter().find(|i| i.pull.is_none()).map(|i| i.number);
        let pull = c.issues.iter().find(|i| i.pull.is_some()).map(|i| i.number);
        (issue.expect("an issue"), pull.expect("a pull request"))
    });
    let at = now(&s);
    {
        let n = issue;
        s.with_world(|w| w.add_issue_comment(id, n, "alice", "New.", at))
            .expect("issue exists");
        let found = data(&s, &issues_since).await;
        assert_eq!(
            found["repository"]["issues"]["nodes"][0]["number"],
            n as i64
        );
        assert_eq!(
            found["repository"]["issues"]["nodes"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
    }
    {
        let n = pull;
        assert!(s.with_world(|w| w.retitle_issue(id, n, "Renamed", at)));
        let newest = data(
            &s,
            &changed("pullRequests(first: 1, orderBy: { field: UPDATED_AT, direction: DESC }) { nodes { number title } }"),
        )
        .await;
        let node = &newest["repository"]["pullRequests"]["nodes"][0];
        assert_eq!(
            (node["number"].as_i64(), node["title"].as_str()),
            (Some(n as i64), Some("Renamed"))
        );
    }
    // A new workflow run is the newest.
    let run = s
        .with_world(|w| w.add_workflow_run(id, at))
        .expect("a default branch");
    let runs = json(
        &get(
            &s,
            &format!("/repos/acme/{name}/actions/runs?per_page=1"),
            Some("t1"),
        )
        .await,
    );
    assert_eq!(runs["workflow_runs"][0]["id"], run as i64);
}

#[tokio::test(start_paused = true)]
async fn big_graphql_queries_time_out_a_bounded_number_of_times() {
    let mut c = deep_config(2, 0);
    c.faults.graphql_timeout_above_nodes = Some(1_000);
    c.faults.graphql_timeouts = 2;
    let s = sim(c);
    let big = "{ organization(login: \"acme\") { repositories(first: 20) { nodes { issues(first: 100) { totalCount } } } } }";
    let small = "{ organization(login: \"acme\") { repositories(first: 5) { nodes { issues(first: 100) { totalCount } } } } }";
    assert_eq!(graphql(&s, "t1", small).await.status(), 200);
    assert_eq!(graphql(&s, "t1", big).await.status(), 502);
    assert_eq!(graphql(&s, "t1", big).await.status(), 502);
    // Recovered.
    assert_eq!(graphql(&s, "t1", big).await.status(), 200);
    let asked: Vec<(u64, bool)> = s
        .graphql_queries()
        .iter()
        .map(|q| (q.node_count, q.timed_out))
        .collect();
    assert_eq!(
        asked,
        vec![(505, false), (2_020, true), (2_020, true), (2_020, false)]
    );
}
