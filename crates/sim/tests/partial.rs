//! GitHub's partial GraphQL answers and resource limits, as the four scenarios play them:
//! `data` with nulls where access was refused or an entity is gone, `errors` entries with
//! `type` and `path`; and "Resource limits for this query exceeded" for heavy pages only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use headroom_sim::graphql::SAML_MESSAGE;
use headroom_sim::{Scenario, Simulator};
use serde_json::{Value, json};

fn playing(scenario: Scenario) -> Simulator {
    sim(config().with_org("acme", 8).with_scenario(scenario))
}

async fn answer(sim: &Simulator, token: &str, q: &str) -> Value {
    let r = graphql(sim, token, q).await;
    assert_eq!(r.status(), 200);
    json(&r)
}

#[tokio::test(start_paused = true)]
async fn without_read_org_members_and_teams_are_refused_and_the_rest_served() {
    let s = playing(Scenario::NoReadOrg);
    let b = answer(
        &s,
        "t1",
        "{ organization(login: \"acme\") { login membersWithRole(first: 5) { totalCount } } }",
    )
    .await;
    assert_eq!(
        b["data"],
        json!({ "organization": { "login": "acme", "membersWithRole": null } }),
        "{b}"
    );
    assert_eq!(b["errors"][0]["type"], "FORBIDDEN");
    assert_eq!(
        b["errors"][0]["path"],
        json!(["organization", "membersWithRole"])
    );
    assert_eq!(
        b["errors"][0]["message"],
        "Resource not accessible by personal access token"
    );
    let b = answer(
        &s,
        "ghs_app",
        "{ organization(login: \"acme\") { teams(first: 5) { totalCount } } }",
    )
    .await;
    assert_eq!(b["errors"][0]["path"], json!(["organization", "teams"]));
    assert_eq!(
        b["errors"][0]["message"],
        "Resource not accessible by integration"
    );
    let b = answer(
        &s,
        "t1",
        "{ organization(login: \"acme\") { login repositories(first: 5) { totalCount } } }",
    )
    .await;
    assert_eq!(b["errors"], Value::Null, "{b}");
    assert_eq!(b["data"]["organization"]["repositories"]["totalCount"], 8);
}

#[tokio::test(start_paused = true)]
async fn under_saml_enforcement_private_repositories_contents_are_refused() {
    let s = playing(Scenario::SamlEnforced);
    let (private, public) = s.with_world(|w| {
        let repos = w.org_repos();
        let private = repos.iter().find(|r| r.private).map(|r| r.name.clone());
        let public = repos.iter().find(|r| !r.private).map(|r| r.name.clone());
        (
            private.expect("a private repository"),
            public.expect("a public one"),
        )
    });
    let q = |name: &str| {
        format!(
            "{{ repository(owner: \"acme\", name: \"{name}\") {{ name issues(first: 1) {{ totalCount }} }} }}"
        )
    };
    let b = answer(&s, "t1", &q(&private)).await;
    assert_eq!(
        b["data"],
        json!({ "repository": { "name": private, "issues": null } }),
        "{b}"
    );
    assert_eq!(b["errors"][0]["type"], "FORBIDDEN");
    assert_eq!(b["errors"][0]["path"], json!(["repository", "issues"]));
    assert_eq!(b["errors"][0]["message"], SAML_MESSAGE);
    // The same when the refused connection is all that was asked of the repository.
    let only = format!(
        "{{ repository(owner: \"acme\", name: \"{private}\") {{ issues(first: 1) {{ totalCount }} }} }}"
    );
    let b = answer(&s, "t1", &only).await;
    assert_eq!(
        b["data"],
        json!({ "repository": { "issues": null } }),
        "{b}"
    );
    let b = answer(&s, "t1", &q(&public)).await;
    assert_eq!(b["errors"], Value::Null, "{b}");
    // The listing still names the private ones.
    let b = answer(&s, "t1", "{ organization(login: \"acme\") { repositories(first: 100) { nodes { name isPrivate } } } }").await;
    let names: Vec<&str> = b["data"]["organization"]["repositories"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["name"].as_str())
        .collect();
    assert!(names.contains(&private.as_str()), "{names:?}");
}

#[tokio::test(start_paused = true)]
async fn gone_repositories_are_listed_but_not_found() {
    let s = playing(Scenario::RepositoriesGone);
    let names: Vec<String> =
        s.with_world(|w| w.org_repos().iter().map(|r| r.name.clone()).collect());
    let q = names
        .iter()
        .enumerate()
        .map(|(k, n)| format!("r{k}: repository(owner: \"acme\", name: \"{n}\") {{ name }}"))
        .collect::<Vec<_>>()
        .join(" ");
    let b = answer(&s, "t1", &format!("{{ {q} }}")).await;
    let gone: Vec<usize> = (0..names.len())
        .filter(|k| b["data"][format!("r{k}")].is_null())
        .collect();
    assert_eq!(gone, vec![3, 7], "{b}");
    let errors = b["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2);
    assert_eq!(errors[0]["type"], "NOT_FOUND");
    assert_eq!(errors[0]["path"], json!(["r3"]));
    let listed = answer(
        &s,
        "t1",
        "{ organization(login: \"acme\") { repositories(first: 1) { totalCount } } }",
    )
    .await;
    assert_eq!(
        listed["data"]["organization"]["repositories"]["totalCount"],
        8
    );
}

#[tokio::test(start_paused = true)]
async fn heavy_pages_exceed_resource_limits_and_smaller_ones_succeed() {
    let mut c = config()
        .with_org("acme", 3)
        .with_scenario(Scenario::ResourceLimited);
    c.resource_limit_nodes = 1_000;
    let s = sim(c);
    let page = |n: u32| {
        format!(
            "{{ rateLimit {{ cost used }} organization(login: \"acme\") {{ repositories(first: {n}) {{ nodes {{ issues(first: 100) {{ totalCount }} }} }} }} }}"
        )
    };
    // 20 + 2,000 nodes: over the limit.
    let r = graphql(&s, "t1", &page(20)).await;
    assert_eq!(r.status(), 200);
    let b = json(&r);
    assert_eq!(b["data"]["organization"], Value::Null, "{b}");
    assert_eq!(
        b["data"]["rateLimit"]["cost"], 1,
        "rateLimit is still answered"
    );
    assert_eq!(
        b["errors"],
        json!([{ "message": "Resource limits for this query exceeded.", "path": ["organization"] }])
    );
    assert_eq!(num(&r, "x-ratelimit-used"), 1, "it ran: charged");
    // 5 + 500 nodes: fine.
    let b = answer(&s, "t1", &page(5)).await;
    assert_eq!(b["errors"], Value::Null, "{b}");
    assert_eq!(
        b["data"]["organization"]["repositories"]["nodes"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
}
