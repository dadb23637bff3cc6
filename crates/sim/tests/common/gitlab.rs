//! Helpers for the simulated GitLab: requests with `PRIVATE-TOKEN`, and the few calls every
//! GitLab test starts with.
#![allow(dead_code)]

use bytes::Bytes;
use headroom_sim::Simulator;
use http::{Method, Request, Response};
use serde_json::{Value, json};

use super::{PEER, json};

/// A request to `/api/v4{path}` with `PRIVATE-TOKEN: token`.
pub fn gl_request(
    method: Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> Request<Bytes> {
    let mut b = Request::builder()
        .method(method)
        .uri(format!("/api/v4{path}"))
        .header("host", "gitlab.test");
    if let Some(t) = token {
        b = b.header("private-token", t);
    }
    if body.is_some() {
        b = b.header("content-type", "application/json");
    }
    let body = body
        .map(|v| Bytes::from(serde_json::to_vec(&v).expect("serializable")))
        .unwrap_or_default();
    b.body(body).expect("valid request")
}

/// Sends one GitLab request as `token`.
pub async fn gl(
    sim: &Simulator,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> Response<Bytes> {
    sim.handle(gl_request(method, path, Some(token), body), PEER)
        .await
}

/// `GET /api/v4{path}` as `token`.
pub async fn gl_get(sim: &Simulator, path: &str, token: &str) -> Response<Bytes> {
    gl(sim, Method::GET, path, token, None).await
}

/// Creates `alice/NAME` (as `t1`), with a README on `main` when `readme`; returns the project.
pub async fn new_project(sim: &Simulator, name: &str, readme: bool) -> Value {
    let r = gl(
        sim,
        Method::POST,
        "/projects",
        "t1",
        Some(json!({"name": name, "initialize_with_readme": readme})),
    )
    .await;
    assert_eq!(r.status(), 201, "{}", String::from_utf8_lossy(r.body()));
    json(&r)
}

/// Commits `actions` to `branch` of project `id` as `t1`.
pub async fn commit(sim: &Simulator, id: &str, branch: &str, actions: Value) -> Response<Bytes> {
    gl(
        sim,
        Method::POST,
        &format!("/projects/{id}/repository/commits"),
        "t1",
        Some(json!({"branch": branch, "commit_message": format!("change {branch}"), "actions": actions})),
    )
    .await
}
