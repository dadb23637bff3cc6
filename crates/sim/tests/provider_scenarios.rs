//! The provider-operation scenarios on both providers: `mutation_response_lost` (applied,
//! answer stalled past the client's timeout), `mutation_429` (refused unapplied, once per
//! identity) and `read_502` (the gateway's 502 on the first read, counted by no limit), and
//! the per-route arrival counts that prove how often a mutation was sent.

mod common;

use std::time::Duration;

use common::gitlab::*;
use common::*;
use headroom_sim::{Scenario, SimConfig};
use http::Method;
use serde_json::json;

fn playing(scenario: Scenario) -> SimConfig {
    config().with_scenario(scenario)
}

async fn create_github_repo(
    sim: &headroom_sim::Simulator,
    token: &str,
) -> http::Response<bytes::Bytes> {
    send(
        sim,
        Method::POST,
        "/orgs/acme/repos",
        Some(token),
        json!({"name": "lost", "auto_init": true}),
    )
    .await
}

#[tokio::test(start_paused = true)]
async fn a_lost_gitlab_answer_leaves_the_project_created_and_the_request_counted_once() {
    let sim = sim(playing(Scenario::MutationResponseLost));
    let req = gl_request(
        Method::POST,
        "/projects",
        Some("t1"),
        Some(json!({"name": "lost"})),
    );
    let waited = tokio::time::timeout(Duration::from_secs(30), sim.handle(req, PEER)).await;
    assert!(
        waited.is_err(),
        "the answer must not arrive within the client's timeout"
    );
    assert!(
        sim.with_gitlab(|gl| gl.project("alice/lost").is_some()),
        "the mutation was applied"
    );
    assert_eq!(sim.count_requests("POST", "/api/v4/projects"), 1);
    // Looking is a read: served; a retry of the creation meets the first one's project.
    assert_eq!(
        gl_get(&sim, "/projects/alice%2Flost", "t1").await.status(),
        200
    );
    let again = gl(
        &sim,
        Method::POST,
        "/projects",
        "t1",
        Some(json!({"name": "lost"})),
    )
    .await;
    assert_eq!(again.status(), 400);
    assert_eq!(sim.count_requests("POST", "/api/v4/projects"), 2);
}

#[tokio::test(start_paused = true)]
async fn a_lost_answer_still_arrives_after_the_stall() {
    let sim = sim(playing(Scenario::MutationResponseLost));
    let started = now(&sim);
    let r = gl(
        &sim,
        Method::POST,
        "/projects",
        "t1",
        Some(json!({"name": "slow"})),
    )
    .await;
    assert_eq!(r.status(), 201);
    assert_eq!((now(&sim) - started).as_secs(), 60);
}

#[tokio::test(start_paused = true)]
async fn a_lost_github_answer_leaves_the_repository_created() {
    let sim = sim(playing(Scenario::MutationResponseLost));
    let req = request(
        Method::POST,
        "/orgs/acme/repos",
        Some("t1"),
        Some(json!({"name": "lost", "auto_init": true})),
    );
    let waited = tokio::time::timeout(Duration::from_secs(30), sim.handle(req, PEER)).await;
    assert!(waited.is_err());
    assert_eq!(
        get(&sim, "/repos/acme/lost", Some("t1")).await.status(),
        200
    );
    assert_eq!(
        create_github_repo(&sim, "t1").await.status(),
        422,
        "already exists"
    );
    assert_eq!(sim.count_requests("POST", "/orgs/acme/repos"), 2);
}

#[tokio::test(start_paused = true)]
async fn gitlabs_first_mutation_of_each_user_answers_its_429_unapplied() {
    let sim = sim(playing(Scenario::Mutation429));
    assert_eq!(
        gl_get(&sim, "/user", "t1").await.status(),
        200,
        "reads are served"
    );
    let r = gl(
        &sim,
        Method::POST,
        "/projects",
        "t1",
        Some(json!({"name": "w"})),
    )
    .await;
    assert_eq!(r.status(), 429);
    assert_eq!(header(&r, "content-type"), Some("text/plain"));
    assert_eq!(String::from_utf8_lossy(r.body()).trim_end(), "Retry later");
    assert_eq!(num(&r, "retry-after"), 60);
    assert_eq!(
        header(&r, "ratelimit-resettime"),
        Some("Mon, 30 Nov 2026 10:01:00 GMT")
    );
    assert_eq!(
        header(&r, "ratelimit-name"),
        Some("throttle_authenticated_api")
    );
    assert!(header(&r, "ratelimit-remaining").is_some());
    assert!(sim.with_gitlab(|gl| gl.projects.is_empty()), "not applied");
    let r = gl(
        &sim,
        Method::POST,
        "/projects",
        "t1",
        Some(json!({"name": "w"})),
    )
    .await;
    assert_eq!(r.status(), 201, "the retry is applied");
    // Bob's first mutation is his own.
    let r = gl(
        &sim,
        Method::POST,
        "/projects",
        "tb",
        Some(json!({"name": "w"})),
    )
    .await;
    assert_eq!(r.status(), 429);
}

#[tokio::test(start_paused = true)]
async fn a_self_managed_429_says_when_without_ratelimit_headers() {
    let sim = sim(playing(Scenario::Mutation429).with_gitlab_self_managed());
    let r = gl(
        &sim,
        Method::POST,
        "/projects",
        "t1",
        Some(json!({"name": "w"})),
    )
    .await;
    assert_eq!(r.status(), 429);
    assert_eq!(num(&r, "retry-after"), 60);
    assert!(
        r.headers()
            .keys()
            .all(|k| !k.as_str().starts_with("ratelimit"))
    );
}

#[tokio::test(start_paused = true)]
async fn githubs_first_mutation_of_each_identity_answers_429_with_retry_after() {
    let sim = sim(playing(Scenario::Mutation429));
    let r = create_github_repo(&sim, "t1").await;
    assert_eq!(r.status(), 429);
    assert_eq!(header(&r, "retry-after"), Some("60"));
    assert!(
        json(&r)["message"]
            .as_str()
            .is_some_and(|m| m.contains("secondary rate limit"))
    );
    assert_eq!(
        get(&sim, "/repos/acme/lost", Some("t1")).await.status(),
        404,
        "not applied"
    );
    assert_eq!(create_github_repo(&sim, "t1").await.status(), 201);
    // The GitLab side keeps its own first mutation for alice.
    let r = gl(
        &sim,
        Method::POST,
        "/projects",
        "t1",
        Some(json!({"name": "w"})),
    )
    .await;
    assert_eq!(r.status(), 429);
}

#[tokio::test(start_paused = true)]
async fn the_first_read_answers_502_uncounted_then_reads_are_served() {
    let sim = sim(playing(Scenario::Read502));
    let r = gl_get(&sim, "/user", "t1").await;
    assert_eq!(r.status(), 502);
    assert_eq!(header(&r, "content-type"), Some("text/html"));
    assert!(header(&r, "ratelimit-observed").is_none());
    let r = gl_get(&sim, "/user", "t1").await;
    assert_eq!(r.status(), 200);
    assert_eq!(num(&r, "ratelimit-observed"), 1, "the 502 counted nowhere");
    // Mutations are untouched.
    let r = gl(
        &sim,
        Method::POST,
        "/projects",
        "tb",
        Some(json!({"name": "w"})),
    )
    .await;
    assert_eq!(r.status(), 201);

    let r = get(&sim, "/user", Some("t1")).await;
    assert_eq!(r.status(), 502);
    let r = get(&sim, "/user", Some("t1")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(num(&r, "x-ratelimit-used"), 1);
}

#[test]
fn the_provider_scenarios_are_named_for_the_command_line() {
    for (name, scenario) in [
        ("mutation_response_lost", Scenario::MutationResponseLost),
        ("mutation_429", Scenario::Mutation429),
        ("read_502", Scenario::Read502),
    ] {
        assert_eq!(name.parse::<Scenario>().expect("known"), scenario);
        assert!(Scenario::help_text().contains(name));
    }
}

#[tokio::test(start_paused = true)]
async fn github_refuses_ref_updates_its_branch_protection_forbids() {
    let sim = sim(config());
    assert_eq!(create_github_repo(&sim, "t1").await.status(), 201);
    let main =
        json(&get(&sim, "/repos/acme/lost/branches/main", Some("t1")).await)["commit"]["sha"]
            .as_str()
            .expect("sha")
            .to_owned();
    let put = send(
        &sim,
        Method::PUT,
        "/repos/acme/lost/contents/a.txt",
        Some("t1"),
        json!({"message": "a", "content": "YQ=="}),
    )
    .await;
    assert_eq!(put.status(), 201);
    let head = json(&put)["commit"]["sha"]
        .as_str()
        .expect("sha")
        .to_owned();
    let protect = |admins: bool| json!({"required_status_checks": null, "enforce_admins": admins, "required_pull_request_reviews": {"required_approving_review_count": 1}, "restrictions": null});
    let r = send(
        &sim,
        Method::PUT,
        "/repos/acme/lost/branches/main/protection",
        Some("t1"),
        protect(false),
    )
    .await;
    assert_eq!(r.status(), 200);
    // Admins pass the review rule but not the force-push one.
    let back = json!({"sha": main, "force": true});
    let r = send(
        &sim,
        Method::PATCH,
        "/repos/acme/lost/git/refs/heads/main",
        Some("t1"),
        back.clone(),
    )
    .await;
    assert_eq!(r.status(), 422);
    assert_eq!(
        json(&r)["message"],
        "Protected branch update failed for refs/heads/main."
    );
    let r = send(
        &sim,
        Method::PUT,
        "/repos/acme/lost/branches/main/protection",
        Some("t1"),
        protect(true),
    )
    .await;
    assert_eq!(r.status(), 200);
    let same = json!({"sha": head});
    let r = send(
        &sim,
        Method::PATCH,
        "/repos/acme/lost/git/refs/heads/main",
        Some("t1"),
        same,
    )
    .await;
    assert_eq!(r.status(), 422, "reviews required, admins included");
    let r = send(
        &sim,
        Method::DELETE,
        "/repos/acme/lost/branches/main/protection",
        Some("t1"),
        json!({}),
    )
    .await;
    assert_eq!(r.status(), 204);
    let r = send(
        &sim,
        Method::PATCH,
        "/repos/acme/lost/git/refs/heads/main",
        Some("t1"),
        back,
    )
    .await;
    assert_eq!(
        r.status(),
        200,
        "unprotected, the force update goes through"
    );
}
