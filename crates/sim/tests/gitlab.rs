//! The simulated GitLab's REST v4 under `/api/v4`: authentication, the user, projects.

mod common;

use common::gitlab::*;
use common::*;
use http::Method;
use serde_json::json;

#[tokio::test(start_paused = true)]
async fn private_token_and_bearer_name_the_same_user_and_others_answer_401() {
    let sim = sim(config());
    let r = gl_get(&sim, "/user", "t1").await;
    assert_eq!(r.status(), 200);
    let user = json(&r);
    assert_eq!(user["username"], "alice");
    assert_eq!(user["state"], "active");
    assert!(user["id"].as_u64().is_some_and(|id| id > 0));

    let bearer = http::Request::builder()
        .uri("/api/v4/user")
        .header("authorization", "Bearer t2")
        .body(bytes::Bytes::new())
        .expect("request");
    let r = sim.handle(bearer, PEER).await;
    assert_eq!(r.status(), 200);
    assert_eq!(json(&r)["id"], user["id"]);

    for token in [None, Some("nope")] {
        let r = sim
            .handle(gl_request(Method::GET, "/user", token, None), PEER)
            .await;
        assert_eq!(r.status(), 401);
        assert_eq!(json(&r), json!({"message": "401 Unauthorized"}));
    }
}

#[tokio::test(start_paused = true)]
async fn a_project_with_a_readme_has_main_and_one_without_is_empty() {
    let sim = sim(config());
    let p = new_project(&sim, "widgets", true).await;
    assert_eq!(p["path"], "widgets");
    assert_eq!(p["path_with_namespace"], "alice/widgets");
    assert_eq!(p["default_branch"], "main");
    assert_eq!(p["visibility"], "private");
    assert_eq!(p["namespace"]["path"], "alice");
    assert_eq!(p["namespace"]["kind"], "user");
    assert_eq!(p["web_url"], "https://gitlab.test/alice/widgets");
    let branches = json(&gl_get(&sim, "/projects/alice%2Fwidgets/repository/branches", "t1").await);
    assert_eq!(branches.as_array().map(Vec::len), Some(1));
    assert_eq!(branches[0]["name"], "main");
    assert_eq!(branches[0]["default"], true);
    assert_eq!(branches[0]["commit"]["title"], "Initial commit");
    let files = sim.with_gitlab(|gl| {
        let p = gl.project("alice/widgets").expect("created");
        p.head("main")
            .expect("main")
            .tree
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    });
    assert_eq!(files, vec!["README.md".to_owned()]);

    let empty = new_project(&sim, "Empty One", false).await;
    assert_eq!(empty["path"], "empty-one");
    assert!(empty["default_branch"].is_null());
    let id = empty["id"].as_u64().expect("id");
    let r = gl_get(&sim, &format!("/projects/{id}/repository/branches"), "t1").await;
    assert_eq!(json(&r), json!([]));
}

#[tokio::test(start_paused = true)]
async fn a_project_is_found_by_id_and_by_encoded_path_and_hidden_from_others() {
    let sim = sim(config());
    let p = new_project(&sim, "widgets", true).await;
    let id = p["id"].as_u64().expect("id");
    let by_id = json(&gl_get(&sim, &format!("/projects/{id}"), "t1").await);
    let by_path = json(&gl_get(&sim, "/projects/alice%2Fwidgets", "t1").await);
    assert_eq!(by_id, by_path);
    assert_eq!(by_id["id"], id);
    for (path, token) in [
        ("/projects/alice%2Fnothing", "t1"),
        ("/projects/999", "t1"),
        ("/projects/alice%2Fwidgets", "tb"),
    ] {
        let r = gl_get(&sim, path, token).await;
        assert_eq!(r.status(), 404, "{path} as {token}");
        assert_eq!(json(&r), json!({"message": "404 Project Not Found"}));
    }
}

#[tokio::test(start_paused = true)]
async fn a_duplicate_project_answers_400_has_already_been_taken() {
    let sim = sim(config());
    new_project(&sim, "widgets", false).await;
    let r = gl(
        &sim,
        Method::POST,
        "/projects",
        "t1",
        Some(json!({"name": "widgets"})),
    )
    .await;
    assert_eq!(r.status(), 400);
    assert_eq!(
        json(&r),
        json!({"message": {"name": ["has already been taken"], "path": ["has already been taken"]}})
    );
    // Another user's namespace is its own.
    let r = gl(
        &sim,
        Method::POST,
        "/projects",
        "tb",
        Some(json!({"name": "widgets"})),
    )
    .await;
    assert_eq!(r.status(), 201);
    assert_eq!(json(&r)["path_with_namespace"], "bob/widgets");
}

#[tokio::test(start_paused = true)]
async fn requests_are_counted_per_route() {
    let sim = sim(config());
    new_project(&sim, "widgets", true).await;
    gl_get(
        &sim,
        "/projects/alice%2Fwidgets/repository/branches?per_page=5",
        "t1",
    )
    .await;
    gl_get(&sim, "/projects/alice%2Fwidgets/repository/branches", "t1").await;
    assert_eq!(sim.count_requests("POST", "/api/v4/projects"), 1);
    assert_eq!(
        sim.count_requests(
            "GET",
            "/api/v4/projects/alice%2Fwidgets/repository/branches"
        ),
        2
    );
    assert_eq!(sim.count_requests("GET", "/api/v4/user"), 0);
}
