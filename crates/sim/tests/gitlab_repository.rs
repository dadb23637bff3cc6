//! The simulated GitLab's repository endpoints: branches (paged), protected branches,
//! commits of file actions, merge requests and their merge, each with GitLab's errors.

mod common;

use common::gitlab::*;
use common::*;
use http::Method;
use serde_json::{Value, json};

async fn branch(
    sim: &headroom_sim::Simulator,
    name: &str,
    from: &str,
) -> http::Response<bytes::Bytes> {
    gl(
        sim,
        Method::POST,
        &format!("/projects/alice%2Fwidgets/repository/branches?branch={name}&ref={from}"),
        "t1",
        None,
    )
    .await
}

async fn open_mr(
    sim: &headroom_sim::Simulator,
    source: &str,
    title: &str,
) -> http::Response<bytes::Bytes> {
    gl(
        sim,
        Method::POST,
        "/projects/alice%2Fwidgets/merge_requests",
        "t1",
        Some(json!({"source_branch": source, "target_branch": "main", "title": title})),
    )
    .await
}

async fn merge(
    sim: &headroom_sim::Simulator,
    iid: u64,
    body: Value,
) -> http::Response<bytes::Bytes> {
    gl(
        sim,
        Method::PUT,
        &format!("/projects/alice%2Fwidgets/merge_requests/{iid}/merge"),
        "t1",
        Some(body),
    )
    .await
}

fn file(sim: &headroom_sim::Simulator, branch: &str, path: &str) -> Option<(String, bool)> {
    sim.with_gitlab(|gl| {
        let p = gl.project("alice/widgets")?;
        let f = p.head(branch)?.tree.get(path)?;
        Some((
            String::from_utf8_lossy(&f.content).into_owned(),
            f.executable,
        ))
    })
}

#[tokio::test(start_paused = true)]
async fn branches_page_with_gitlabs_headers_and_links() {
    let sim = sim(config());
    new_project(&sim, "widgets", true).await;
    for n in 0..24 {
        assert_eq!(
            branch(&sim, &format!("b{n:02}"), "main").await.status(),
            201
        );
    }
    let mut names = Vec::new();
    let mut next = Some("1".to_owned());
    let mut pages = 0;
    while let Some(page) = next.filter(|p| !p.is_empty()) {
        let r = gl_get(
            &sim,
            &format!("/projects/alice%2Fwidgets/repository/branches?per_page=10&page={page}"),
            "t1",
        )
        .await;
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "x-page"), Some(page.as_str()));
        assert_eq!(header(&r, "x-per-page"), Some("10"));
        assert_eq!(header(&r, "x-total"), Some("25"));
        assert_eq!(header(&r, "x-total-pages"), Some("3"));
        let link = header(&r, "link").expect("link").to_owned();
        assert!(
            link.contains("rel=\"first\"") && link.contains("rel=\"last\""),
            "{link}"
        );
        let has_next = link.contains("rel=\"next\"");
        assert!(
            link.contains("<https://gitlab.test/api/v4/projects/alice%2Fwidgets/repository/branches?page=1&per_page=10>; rel=\"first\""),
            "{link}"
        );
        next = header(&r, "x-next-page").map(str::to_owned);
        assert_eq!(has_next, next.as_deref().is_some_and(|n| !n.is_empty()));
        names.extend(
            json(&r)
                .as_array()
                .expect("list")
                .iter()
                .map(|b| b["name"].as_str().expect("name").to_owned()),
        );
        pages += 1;
    }
    assert_eq!(pages, 3);
    assert_eq!(names.len(), 25);
    assert_eq!(names.last().map(String::as_str), Some("main"));
    let r = gl_get(
        &sim,
        "/projects/alice%2Fwidgets/repository/branches?per_page=10&page=3",
        "t1",
    )
    .await;
    assert_eq!(header(&r, "x-next-page"), Some(""));
    assert_eq!(header(&r, "x-prev-page"), Some("2"));
}

#[tokio::test(start_paused = true)]
async fn creating_a_branch_answers_201_or_gitlabs_400s() {
    let sim = sim(config());
    new_project(&sim, "widgets", true).await;
    let r = branch(&sim, "feature", "main").await;
    assert_eq!(r.status(), 201);
    let b = json(&r);
    assert_eq!(b["name"], "feature");
    assert_eq!(b["protected"], false);
    assert_eq!(b["default"], false);
    assert_eq!(b["merged"], true);
    assert_eq!(b["commit"]["short_id"].as_str().map(str::len), Some(8));

    let r = branch(&sim, "feature", "main").await;
    assert_eq!(r.status(), 400);
    assert_eq!(json(&r), json!({"message": "Branch already exists"}));
    let r = branch(&sim, "other", "nowhere").await;
    assert_eq!(r.status(), 400);
    assert_eq!(
        json(&r),
        json!({"message": "Invalid reference name: nowhere"})
    );
    // From a commit id as well as a branch.
    let sha = b["commit"]["id"].as_str().expect("sha").to_owned();
    assert_eq!(branch(&sim, "from-sha", &sha).await.status(), 201);
    let one = gl_get(
        &sim,
        "/projects/alice%2Fwidgets/repository/branches/from-sha",
        "t1",
    )
    .await;
    assert_eq!(json(&one)["commit"]["id"], sha.as_str());
}

#[tokio::test(start_paused = true)]
async fn protecting_a_branch_answers_201_then_409() {
    let sim = sim(config());
    new_project(&sim, "widgets", true).await;
    let body = json!({"name": "main", "push_access_level": 0, "merge_access_level": 40, "allow_force_push": false});
    let r = gl(
        &sim,
        Method::POST,
        "/projects/alice%2Fwidgets/protected_branches",
        "t1",
        Some(body.clone()),
    )
    .await;
    assert_eq!(r.status(), 201);
    let pb = json(&r);
    assert_eq!(pb["name"], "main");
    assert_eq!(pb["push_access_levels"][0]["access_level"], 0);
    assert_eq!(pb["merge_access_levels"][0]["access_level"], 40);
    assert_eq!(pb["allow_force_push"], false);
    let r = gl(
        &sim,
        Method::POST,
        "/projects/alice%2Fwidgets/protected_branches",
        "t1",
        Some(body),
    )
    .await;
    assert_eq!(r.status(), 409);
    assert_eq!(
        json(&r),
        json!({"message": "Protected branch 'main' already exists"})
    );
    let main = json(
        &gl_get(
            &sim,
            "/projects/alice%2Fwidgets/repository/branches/main",
            "t1",
        )
        .await,
    );
    assert_eq!(main["protected"], true);
}

#[tokio::test(start_paused = true)]
async fn commit_actions_change_the_tree() {
    let sim = sim(config());
    new_project(&sim, "widgets", true).await;
    let r = commit(&sim, "alice%2Fwidgets", "main", json!([
        {"action": "create", "file_path": "bin/run", "content": "IyEvYmluL3NoCg==", "encoding": "base64", "execute_filemode": true},
        {"action": "create", "file_path": "a.txt", "content": "a"},
        {"action": "update", "file_path": "README.md", "content": "# new\n"},
    ])).await;
    assert_eq!(r.status(), 201);
    let c = json(&r);
    assert_eq!(c["title"], "change main");
    assert_eq!(c["short_id"].as_str().map(str::len), Some(8));
    assert_eq!(c["parent_ids"].as_array().map(Vec::len), Some(1));
    assert!(
        c["web_url"]
            .as_str()
            .is_some_and(|u| u.ends_with(c["id"].as_str().unwrap_or("?")))
    );
    assert_eq!(
        file(&sim, "main", "bin/run"),
        Some(("#!/bin/sh\n".to_owned(), true))
    );
    assert_eq!(
        file(&sim, "main", "README.md").map(|f| f.0),
        Some("# new\n".to_owned())
    );

    let r = commit(
        &sim,
        "alice%2Fwidgets",
        "main",
        json!([
            {"action": "move", "previous_path": "a.txt", "file_path": "b.txt"},
            {"action": "chmod", "file_path": "bin/run", "execute_filemode": false},
            {"action": "delete", "file_path": "README.md"},
        ]),
    )
    .await;
    assert_eq!(r.status(), 201);
    assert_eq!(file(&sim, "main", "a.txt"), None);
    assert_eq!(file(&sim, "main", "b.txt"), Some(("a".to_owned(), false)));
    assert_eq!(file(&sim, "main", "bin/run").map(|f| f.1), Some(false));
    assert_eq!(file(&sim, "main", "README.md"), None);

    let r = commit(
        &sim,
        "alice%2Fwidgets",
        "main",
        json!([{"action": "create", "file_path": "b.txt", "content": "again"}]),
    )
    .await;
    assert_eq!(r.status(), 400);
    assert_eq!(
        json(&r),
        json!({"message": "A file with this name already exists"})
    );
    assert_eq!(
        file(&sim, "main", "b.txt").map(|f| f.0),
        Some("a".to_owned())
    );
    let r = commit(
        &sim,
        "alice%2Fwidgets",
        "main",
        json!([{"action": "update", "file_path": "nope", "content": ""}]),
    )
    .await;
    assert_eq!(r.status(), 400);
}

#[tokio::test(start_paused = true)]
async fn commits_start_a_branch_and_fill_an_empty_repository() {
    let sim = sim(config());
    new_project(&sim, "widgets", false).await;
    let r = commit(
        &sim,
        "alice%2Fwidgets",
        "main",
        json!([{"action": "create", "file_path": "x", "content": "1"}]),
    )
    .await;
    assert_eq!(r.status(), 201);
    assert_eq!(json(&r)["parent_ids"], json!([]));
    let p = json(&gl_get(&sim, "/projects/alice%2Fwidgets", "t1").await);
    assert_eq!(p["default_branch"], "main");
    let r = gl(
        &sim,
        Method::POST,
        "/projects/alice%2Fwidgets/repository/commits",
        "t1",
        Some(json!({
            "branch": "topic", "start_branch": "main", "commit_message": "topic",
            "actions": [{"action": "create", "file_path": "y", "content": "2"}],
        })),
    )
    .await;
    assert_eq!(r.status(), 201);
    assert_eq!(file(&sim, "topic", "x").map(|f| f.0), Some("1".to_owned()));
    assert_eq!(file(&sim, "main", "y"), None);
}

#[tokio::test(start_paused = true)]
async fn a_push_to_a_protected_branch_or_by_a_non_member_answers_403() {
    let sim = sim(config());
    let created = gl(
        &sim,
        Method::POST,
        "/projects",
        "t1",
        Some(json!({"name": "widgets", "visibility": "public", "initialize_with_readme": true})),
    )
    .await;
    assert_eq!(created.status(), 201);
    let r = gl(
        &sim,
        Method::POST,
        "/projects/alice%2Fwidgets/protected_branches",
        "t1",
        Some(json!({"name": "main", "push_access_level": 0})),
    )
    .await;
    assert_eq!(r.status(), 201);
    let forbidden =
        json!({"message": "403 Forbidden - You are not allowed to push into this branch"});
    let r = commit(
        &sim,
        "alice%2Fwidgets",
        "main",
        json!([{"action": "create", "file_path": "x", "content": "1"}]),
    )
    .await;
    assert_eq!(r.status(), 403);
    assert_eq!(json(&r), forbidden);
    assert_eq!(file(&sim, "main", "x"), None);
    // Bob sees the public project but is no member: no push anywhere.
    let r = gl(
        &sim,
        Method::POST,
        "/projects/alice%2Fwidgets/repository/commits",
        "tb",
        Some(json!({
            "branch": "bobs", "start_branch": "main", "commit_message": "m",
            "actions": [{"action": "create", "file_path": "x", "content": "1"}],
        })),
    )
    .await;
    assert_eq!(r.status(), 403);
    assert_eq!(json(&r), forbidden);
}

#[tokio::test(start_paused = true)]
async fn a_merge_request_opens_once_lists_and_merges() {
    let sim = sim(config());
    new_project(&sim, "widgets", true).await;
    branch(&sim, "feature", "main").await;
    commit(
        &sim,
        "alice%2Fwidgets",
        "feature",
        json!([{"action": "create", "file_path": "f.txt", "content": "f"}]),
    )
    .await;
    let r = open_mr(&sim, "feature", "Add f").await;
    assert_eq!(r.status(), 201);
    let mr = json(&r);
    assert_eq!(mr["iid"], 1);
    assert_eq!(mr["state"], "opened");
    assert_eq!(mr["merge_status"], "can_be_merged");
    assert_eq!(
        mr["web_url"],
        "https://gitlab.test/alice/widgets/-/merge_requests/1"
    );
    let head = mr["sha"].as_str().expect("sha").to_owned();

    let r = open_mr(&sim, "feature", "Again").await;
    assert_eq!(r.status(), 409);
    assert_eq!(
        json(&r),
        json!({"message": ["Another open merge request already exists for this source branch: !1"]})
    );

    let list = json(&gl_get(&sim, "/projects/alice%2Fwidgets/merge_requests?state=opened&source_branch=feature&target_branch=main", "t1").await);
    assert_eq!(list.as_array().map(Vec::len), Some(1));
    let none = json(
        &gl_get(
            &sim,
            "/projects/alice%2Fwidgets/merge_requests?state=merged",
            "t1",
        )
        .await,
    );
    assert_eq!(none, json!([]));

    let r = merge(&sim, 1, json!({"sha": "0000000"})).await;
    assert_eq!(r.status(), 409);
    assert_eq!(
        json(&r),
        json!({"message": format!("SHA does not match HEAD of source branch: {head}")})
    );
    let r = merge(
        &sim,
        1,
        json!({"sha": head, "should_remove_source_branch": true}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let merged = json(&r);
    assert_eq!(merged["state"], "merged");
    let merge_sha = merged["merge_commit_sha"]
        .as_str()
        .expect("merge commit")
        .to_owned();
    assert_eq!(
        file(&sim, "main", "f.txt").map(|f| f.0),
        Some("f".to_owned())
    );
    let main = json(
        &gl_get(
            &sim,
            "/projects/alice%2Fwidgets/repository/branches/main",
            "t1",
        )
        .await,
    );
    assert_eq!(main["commit"]["id"], merge_sha.as_str());
    assert_eq!(
        main["commit"]["parent_ids"].as_array().map(Vec::len),
        Some(2)
    );
    let gone = gl_get(
        &sim,
        "/projects/alice%2Fwidgets/repository/branches/feature",
        "t1",
    )
    .await;
    assert_eq!(gone.status(), 404);

    let r = merge(&sim, 1, json!({})).await;
    assert_eq!(r.status(), 405);
    assert_eq!(json(&r), json!({"message": "405 Method Not Allowed"}));
}

#[tokio::test(start_paused = true)]
async fn a_draft_merge_request_answers_405() {
    let sim = sim(config());
    new_project(&sim, "widgets", true).await;
    branch(&sim, "wip", "main").await;
    commit(
        &sim,
        "alice%2Fwidgets",
        "wip",
        json!([{"action": "create", "file_path": "w", "content": "w"}]),
    )
    .await;
    let mr = json(&open_mr(&sim, "wip", "Draft: not yet").await);
    assert_eq!(mr["draft"], true);
    assert_eq!(merge(&sim, 1, json!({})).await.status(), 405);
    assert_eq!(file(&sim, "main", "w"), None);
}

#[tokio::test(start_paused = true)]
async fn two_merge_requests_touching_one_file_conflict_on_the_second_merge() {
    let sim = sim(config());
    new_project(&sim, "widgets", true).await;
    for name in ["one", "two"] {
        branch(&sim, name, "main").await;
        let r = commit(
            &sim,
            "alice%2Fwidgets",
            name,
            json!([{"action": "update", "file_path": "README.md", "content": name}]),
        )
        .await;
        assert_eq!(r.status(), 201);
        assert_eq!(open_mr(&sim, name, name).await.status(), 201);
    }
    assert_eq!(merge(&sim, 1, json!({})).await.status(), 200);
    let second = json(&gl_get(&sim, "/projects/alice%2Fwidgets/merge_requests/2", "t1").await);
    assert_eq!(second["merge_status"], "cannot_be_merged");
    assert_eq!(second["has_conflicts"], true);
    let r = merge(&sim, 2, json!({})).await;
    assert_eq!(r.status(), 406);
    assert_eq!(json(&r), json!({"message": "Branch cannot be merged"}));
    assert_eq!(
        file(&sim, "main", "README.md").map(|f| f.0),
        Some("one".to_owned())
    );
}

#[tokio::test(start_paused = true)]
async fn a_squash_merge_records_its_squash_commit() {
    let sim = sim(config());
    new_project(&sim, "widgets", true).await;
    branch(&sim, "s", "main").await;
    for n in 0..3 {
        commit(
            &sim,
            "alice%2Fwidgets",
            "s",
            json!([{"action": "create", "file_path": format!("f{n}"), "content": "x"}]),
        )
        .await;
    }
    open_mr(&sim, "s", "Squash me").await;
    let merged = json(&merge(&sim, 1, json!({"squash": true})).await);
    let squash = merged["squash_commit_sha"].as_str().expect("squash commit");
    let parents = sim.with_gitlab(|gl| {
        let p = gl.project("alice/widgets").expect("project");
        p.commits.get(squash).map(|c| c.parent_ids.len())
    });
    assert_eq!(parents, Some(1));
    assert_eq!(file(&sim, "main", "f2").map(|f| f.0), Some("x".to_owned()));
}

#[tokio::test(start_paused = true)]
async fn refusals_of_malformed_or_unauthorized_requests() {
    let sim = sim(config());
    let p = gl(
        &sim,
        Method::POST,
        "/projects",
        "t1",
        Some(json!({"name": "widgets", "visibility": "public", "initialize_with_readme": true})),
    )
    .await;
    assert_eq!(p.status(), 201);
    // Unknown routes answer GitLab's 404.
    let r = gl_get(&sim, "/nothing/here", "t1").await;
    assert_eq!(r.status(), 404);
    assert_eq!(json(&r), json!({"error": "404 Not Found"}));
    // Bob reads the public project but may not create branches or protect them.
    assert_eq!(
        gl_get(&sim, "/projects/alice%2Fwidgets", "tb")
            .await
            .status(),
        200
    );
    let r = gl(
        &sim,
        Method::POST,
        "/projects/alice%2Fwidgets/repository/branches?branch=b&ref=main",
        "tb",
        None,
    )
    .await;
    assert_eq!(r.status(), 403);
    let r = gl(
        &sim,
        Method::POST,
        "/projects/alice%2Fwidgets/protected_branches",
        "tb",
        Some(json!({"name": "main"})),
    )
    .await;
    assert_eq!(r.status(), 403);
    // Missing parameters, same branches, absent branches.
    let r = gl(
        &sim,
        Method::POST,
        "/projects/alice%2Fwidgets/merge_requests",
        "t1",
        Some(json!({"source_branch": "main", "target_branch": "main"})),
    )
    .await;
    assert_eq!(r.status(), 400);
    assert_eq!(json(&r), json!({"error": "title is missing"}));
    let r = gl(
        &sim,
        Method::POST,
        "/projects/alice%2Fwidgets/merge_requests",
        "t1",
        Some(json!({"source_branch": "main", "target_branch": "main", "title": "t"})),
    )
    .await;
    assert_eq!(r.status(), 400);
    let r = open_mr(&sim, "ghost", "t").await;
    assert_eq!(r.status(), 400);
    let r = gl(
        &sim,
        Method::POST,
        "/projects/alice%2Fwidgets/repository/branches?branch=x",
        "t1",
        None,
    )
    .await;
    assert_eq!(r.status(), 400);
    assert_eq!(json(&r), json!({"error": "ref is missing"}));
    let r = gl(
        &sim,
        Method::POST,
        "/projects/alice%2Fwidgets/repository/branches?branch=a..b&ref=main",
        "t1",
        None,
    )
    .await;
    assert_eq!(r.status(), 400);
    let r = merge(&sim, 9, json!({})).await;
    assert_eq!(r.status(), 404);
    // Nothing was created by any of them.
    let names = sim.with_gitlab(|gl| {
        gl.project("alice/widgets")
            .map(|p| (p.branches.len(), p.merge_requests.len(), p.protected.len()))
    });
    assert_eq!(names, Some((1, 0, 0)));
}
