//! The simulator refuses the file paths GitHub and GitLab refuse: a GitHub tree entry (422)
//! and a GitLab commit action (400) whose path is absolute or has an empty, `.`, `..` or
//! `.git` component, with nothing written.

mod common;

use common::gitlab::*;
use common::*;
use http::Method;
use serde_json::json;

const BAD: [&str; 7] = [
    "../x",
    "a/../../x",
    "/etc/x",
    "a//b",
    "./a",
    ".git/config",
    "a/.GIT/hooks",
];

#[tokio::test(start_paused = true)]
async fn a_github_tree_refuses_paths_github_refuses() {
    let sim = sim(config());
    let r = send(
        &sim,
        Method::POST,
        "/user/repos",
        Some("t1"),
        json!({"name": "demo", "auto_init": true}),
    )
    .await;
    assert_eq!(r.status(), 201);
    for path in BAD {
        let r = send(
            &sim,
            Method::POST,
            "/repos/alice/demo/git/trees",
            Some("t1"),
            json!({"tree": [{"path": path, "mode": "100644", "type": "blob", "content": "x"}]}),
        )
        .await;
        assert_eq!(r.status(), 422, "{path}");
    }
    let r = send(
        &sim,
        Method::POST,
        "/repos/alice/demo/git/trees",
        Some("t1"),
        json!({"tree": [{"path": "docs/a..b.md", "mode": "100644", "type": "blob", "content": "x"}]}),
    )
    .await;
    assert_eq!(r.status(), 201, "a name with dots inside it is a real name");
}

#[tokio::test(start_paused = true)]
async fn a_gitlab_commit_refuses_paths_gitlab_refuses() {
    let sim = sim(config());
    new_project(&sim, "widgets", true).await;
    let head = || {
        sim.with_gitlab(|gl| {
            gl.project("alice/widgets")
                .and_then(|p| p.head("main").map(|c| c.id.clone()))
        })
    };
    let before = head();
    for path in BAD {
        let r = commit(
            &sim,
            "alice%2Fwidgets",
            "main",
            json!([{"action": "create", "file_path": path, "content": "x"}]),
        )
        .await;
        assert_eq!(r.status(), 400, "{path}");
        assert_eq!(
            json(&r),
            json!({"error": "actions[0][file_path] should be a valid file path"})
        );
    }
    let r = commit(
        &sim,
        "alice%2Fwidgets",
        "main",
        json!([{"action": "move", "previous_path": "../README.md", "file_path": "b.md"}]),
    )
    .await;
    assert_eq!(r.status(), 400);
    assert_eq!(head(), before, "nothing was committed");
}
