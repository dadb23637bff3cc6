//! REST reads with Link pagination (an organization crawled end to end), renames and
//! deletions, and the Git provider contract's mutations with GitHub's status codes.

mod common;

use std::collections::HashSet;

use common::*;
use headroom_core::clock::SignedDuration;
use headroom_sim::Simulator;
use http::Method;
use serde_json::{Value, json};

fn links(r: &http::Response<bytes::Bytes>) -> Vec<(String, String)> {
    header(r, "link")
        .map(|l| {
            l.split(", ")
                .filter_map(|part| {
                    let (url, rel) = part.split_once("; rel=")?;
                    Some((
                        rel.trim_matches('"').to_owned(),
                        url.trim_start_matches('<').trim_end_matches('>').to_owned(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn next(r: &http::Response<bytes::Bytes>) -> Option<String> {
    links(r)
        .into_iter()
        .find(|(rel, _)| rel == "next")
        .map(|(_, u)| u)
}

/// A GET paced under GitHub's 900 points a minute, as a well-behaved crawler must be.
async fn paced(sim: &Simulator, url: &str) -> http::Response<bytes::Bytes> {
    sim.clock().sleep(SignedDuration::from_millis(70)).await;
    get(sim, url, Some("t1")).await
}

/// Follows `rel="next"` from `url`, collecting every item (arrays, or `key` of an object).
async fn crawl(sim: &Simulator, url: &str, key: Option<&str>) -> Vec<Value> {
    let mut out = Vec::new();
    let mut url = url.to_owned();
    for _ in 0..1000 {
        let r = paced(sim, &url).await;
        assert_eq!(r.status(), 200, "{url}");
        let body = json(&r);
        let items = match key {
            Some(k) => body[k].clone(),
            None => body,
        };
        out.extend(items.as_array().expect("a list").iter().cloned());
        match next(&r) {
            Some(n) => url = n,
            None => return out,
        }
    }
    panic!("pagination never ended at {url}");
}

#[tokio::test(start_paused = true)]
async fn an_organization_can_be_crawled_end_to_end() {
    let sim = sim(config().with_org("acme", 25));
    let org = json(&get(&sim, "/orgs/acme", Some("t1")).await);
    assert_eq!(org["public_repos"], 25);
    let repos = crawl(&sim, "/orgs/acme/repos?per_page=10", None).await;
    assert_eq!(repos.len(), 25);
    let ids: HashSet<u64> = repos.iter().filter_map(|r| r["id"].as_u64()).collect();
    assert_eq!(ids.len(), 25);
    let members = crawl(&sim, "/orgs/acme/members?per_page=5", None).await;
    assert!(members.iter().any(|m| m["login"] == "alice"));
    assert!(!crawl(&sim, "/orgs/acme/teams", None).await.is_empty());

    let (mut issues, mut pulls, mut comments, mut files, mut checks, mut jobs) = (0, 0, 0, 0, 0, 0);
    for repo in &repos {
        let full = repo["full_name"].as_str().expect("name");
        let id = repo["id"].as_u64().expect("id");
        let all = crawl(
            &sim,
            &format!("/repos/{full}/issues?state=all&per_page=7"),
            None,
        )
        .await;
        issues += all
            .iter()
            .filter(|i| i.get("pull_request").is_none())
            .count();
        let prs = crawl(
            &sim,
            &format!("/repos/{full}/pulls?state=all&per_page=4"),
            None,
        )
        .await;
        assert_eq!(
            prs.len(),
            all.iter()
                .filter(|i| i.get("pull_request").is_some())
                .count()
        );
        pulls += prs.len();
        comments += crawl(
            &sim,
            &format!("/repos/{full}/issues/comments?per_page=9"),
            None,
        )
        .await
        .len();
        for pr in &prs {
            let n = pr["number"].as_u64().expect("number");
            let commits = crawl(&sim, &format!("/repos/{full}/pulls/{n}/commits"), None).await;
            assert!(!commits.is_empty());
            for c in &commits {
                let sha = c["sha"].as_str().expect("sha");
                let detail = json(&paced(&sim, &format!("/repos/{full}/commits/{sha}")).await);
                assert!(detail["files"].as_array().is_some_and(|f| !f.is_empty()));
                checks += crawl(
                    &sim,
                    &format!("/repos/{full}/commits/{sha}/check-runs"),
                    Some("check_runs"),
                )
                .await
                .len();
            }
            files += crawl(&sim, &format!("/repos/{full}/pulls/{n}/files"), None)
                .await
                .len();
        }
        let branches = crawl(&sim, &format!("/repos/{full}/branches"), None).await;
        assert!(branches.iter().any(|b| b["name"] == "main"));
        let runs = crawl(
            &sim,
            &format!("/repos/{full}/actions/runs?per_page=2"),
            Some("workflow_runs"),
        )
        .await;
        for run in &runs {
            let run_id = run["id"].as_u64().expect("run id");
            jobs += crawl(
                &sim,
                &format!("/repos/{full}/actions/runs/{run_id}/jobs"),
                Some("jobs"),
            )
            .await
            .len();
        }
        // The repository is also reachable by id.
        assert_eq!(
            paced(&sim, &format!("/repositories/{id}")).await.status(),
            200
        );
    }
    assert!(
        issues > 0 && pulls > 0 && comments > 0 && files > 0 && jobs > 0,
        "{issues} {pulls} {comments} {files} {jobs}"
    );
    assert!(checks <= jobs);
    let log = sim.request_log();
    assert!(
        log.iter().all(|e| e.status == 200),
        "a paced crawl meets no limit"
    );
    assert!(log.len() < 5000);
    // Same seed, same data: a second simulator answers the same.
    let again = common::sim(config().with_org("acme", 25));
    let first = json(&get(&again, "/orgs/acme/repos?per_page=100", Some("t1")).await);
    assert_eq!(first.as_array().map(Vec::len), Some(25));
    assert_eq!(first[3]["full_name"], repos[3]["full_name"]);
}

#[tokio::test(start_paused = true)]
async fn link_headers_are_rewritten_to_repositories_id_and_vary_in_order() {
    let sim = sim(config().with_org("acme", 3));
    // Find a repository with several issues.
    let repos = json(&get(&sim, "/orgs/acme/repos", Some("t1")).await);
    let mut checked = false;
    for repo in repos.as_array().expect("array") {
        let full = repo["full_name"].as_str().expect("name");
        let id = repo["id"].as_u64().expect("id");
        let r = get(
            &sim,
            &format!("/repos/{full}/issues?state=all&per_page=1"),
            Some("t1"),
        )
        .await;
        let l = links(&r);
        if l.len() < 2 {
            continue;
        }
        for (_, url) in &l {
            assert!(
                url.starts_with(&format!("https://api.github.com/repositories/{id}/issues?")),
                "{url}"
            );
            assert!(url.contains("per_page=1"), "{url}");
        }
        let page2 = get(&sim, &next(&r).expect("next"), Some("t1")).await;
        assert_eq!(page2.status(), 200);
        let rels1: Vec<String> = l.iter().map(|(r, _)| r.clone()).collect();
        let rels2: Vec<String> = links(&page2).iter().map(|(r, _)| r.clone()).collect();
        assert!(rels2.contains(&"prev".to_owned()) && rels2.contains(&"first".to_owned()));
        assert_ne!(
            rels1.first(),
            rels2.first(),
            "rel order varies: {rels1:?} vs {rels2:?}"
        );
        checked = true;
        break;
    }
    assert!(checked, "some repository has more than one issue");
}

#[tokio::test(start_paused = true)]
async fn per_page_defaults_to_30_and_stops_at_100() {
    let sim = sim(config().with_org("acme", 130));
    let r = get(&sim, "/orgs/acme/repos", Some("t1")).await;
    assert_eq!(json(&r).as_array().map(Vec::len), Some(30));
    let r = get(&sim, "/orgs/acme/repos?per_page=1000", Some("t1")).await;
    assert_eq!(json(&r).as_array().map(Vec::len), Some(100));
    let last = links(&r)
        .into_iter()
        .find(|(rel, _)| rel == "last")
        .expect("last");
    assert!(last.1.ends_with("page=2"), "{}", last.1);
}

#[tokio::test(start_paused = true)]
async fn renamed_repositories_answer_301_and_deleted_ones_404() {
    let sim = sim(config().with_org("acme", 10));
    // Every seventh generated repository was renamed from old-NAME.
    let repos = json(&get(&sim, "/orgs/acme/repos?per_page=100", Some("t1")).await);
    let renamed = &repos[3];
    let name = renamed["name"].as_str().expect("name");
    let r = get(
        &sim,
        &format!("/repos/acme/old-{name}/issues?state=all"),
        Some("t1"),
    )
    .await;
    assert_eq!(r.status(), 301);
    let loc = header(&r, "location").expect("location");
    assert_eq!(
        loc,
        format!(
            "https://api.github.com/repositories/{}/issues?state=all",
            renamed["id"]
        )
    );
    assert_eq!(get(&sim, loc, Some("t1")).await.status(), 200);
    assert_eq!(
        get(&sim, "/repos/acme/no-such-repo", Some("t1"))
            .await
            .status(),
        404
    );
    assert_eq!(
        get(&sim, "/repos/octo-gone/ember", Some("t1"))
            .await
            .status(),
        404
    );
    assert_eq!(
        get(&sim, "/users/octo-gone", Some("t1")).await.status(),
        404
    );
    assert_eq!(get(&sim, "/user/7700421", Some("t1")).await.status(), 404);
    assert_eq!(
        json(&get(&sim, "/user/7700419", Some("t1")).await)["login"],
        "octo-ana"
    );
}

#[tokio::test(start_paused = true)]
async fn the_git_provider_contract_end_to_end() {
    let sim = sim(config());
    // createRepo
    let r = send(
        &sim,
        Method::POST,
        "/orgs/acme/repos",
        Some("t1"),
        json!({"name": "svc", "auto_init": true}),
    )
    .await;
    assert_eq!(r.status(), 201);
    assert_eq!(json(&r)["full_name"], "acme/svc");
    let dup = send(
        &sim,
        Method::POST,
        "/orgs/acme/repos",
        Some("t1"),
        json!({"name": "svc"}),
    )
    .await;
    assert_eq!(dup.status(), 422);
    assert_eq!(
        json(&dup)["errors"][0]["message"],
        "name already exists on this account"
    );
    let missing = send(
        &sim,
        Method::POST,
        "/orgs/acme/repos",
        Some("t1"),
        json!({}),
    )
    .await;
    assert_eq!(missing.status(), 422);
    assert_eq!(json(&missing)["message"], "Validation Failed");
    assert_eq!(
        send(
            &sim,
            Method::POST,
            "/orgs/nope/repos",
            Some("t1"),
            json!({"name": "x"})
        )
        .await
        .status(),
        404
    );
    assert_eq!(
        send(
            &sim,
            Method::POST,
            "/orgs/acme/repos",
            None,
            json!({"name": "x"})
        )
        .await
        .status(),
        401
    );
    let bad = sim
        .handle(
            request(Method::POST, "/orgs/acme/repos", Some("t1"), None)
                .map(|_| bytes::Bytes::from_static(b"{not json")),
            PEER,
        )
        .await;
    assert_eq!(bad.status(), 400);

    // getRepo, listBranches
    let repo = json(&get(&sim, "/repos/acme/svc", Some("t1")).await);
    assert_eq!(repo["default_branch"], "main");
    let branches = json(&get(&sim, "/repos/acme/svc/branches", Some("t1")).await);
    let main_sha = branches[0]["commit"]["sha"]
        .as_str()
        .expect("sha")
        .to_owned();

    // createBranch
    let r = send(
        &sim,
        Method::POST,
        "/repos/acme/svc/git/refs",
        Some("t1"),
        json!({"ref": "refs/heads/feature", "sha": main_sha}),
    )
    .await;
    assert_eq!(r.status(), 201);
    assert_eq!(json(&r)["object"]["sha"], main_sha.as_str());
    let again = send(
        &sim,
        Method::POST,
        "/repos/acme/svc/git/refs",
        Some("t1"),
        json!({"ref": "refs/heads/feature", "sha": main_sha}),
    )
    .await;
    assert_eq!(
        (again.status().as_u16(), json(&again)["message"].clone()),
        (422, json!("Reference already exists"))
    );
    let nosha = send(
        &sim,
        Method::POST,
        "/repos/acme/svc/git/refs",
        Some("t1"),
        json!({"ref": "refs/heads/x", "sha": "0000000000000000000000000000000000000000"}),
    )
    .await;
    assert_eq!(json(&nosha)["message"], "Object does not exist");

    // commitFiles (Contents API): create, then update with and without the right sha
    let put = |path: &str, body: Value| {
        let sim = sim.clone();
        let uri = format!("/repos/acme/svc/contents/{path}");
        async move { send(&sim, Method::PUT, &uri, Some("t1"), body).await }
    };
    let r = put(
        "src/lib.rs",
        json!({"message": "Add lib", "content": "Zm4gbWFpbigpIHt9", "branch": "feature"}),
    )
    .await;
    assert_eq!(r.status(), 201);
    let blob = json(&r)["content"]["sha"]
        .as_str()
        .expect("blob")
        .to_owned();
    let r = put(
        "src/lib.rs",
        json!({"message": "Edit", "content": "Zm4gbWFpbigpIHsgfQ==", "branch": "feature"}),
    )
    .await;
    assert_eq!(r.status(), 422, "an existing file needs its sha");
    let r = put("src/lib.rs", json!({"message": "Edit", "content": "Zm4gbWFpbigpIHsgfQ==", "branch": "feature", "sha": "deadbeef"})).await;
    assert_eq!(r.status(), 409);
    let r = put("src/lib.rs", json!({"message": "Edit", "content": "Zm4gbWFpbigpIHsgfQ==", "branch": "feature", "sha": blob})).await;
    assert_eq!(r.status(), 200);
    let r = put("x.txt", json!({"content": "eA=="})).await;
    assert_eq!(r.status(), 422, "message is required");
    let r = put(
        "x.txt",
        json!({"message": "m", "content": "eA==", "branch": "nope"}),
    )
    .await;
    assert_eq!(r.status(), 404);

    // openPullRequest
    let r = send(
        &sim,
        Method::POST,
        "/repos/acme/svc/pulls",
        Some("t1"),
        json!({"title": "Lib", "head": "feature", "base": "main"}),
    )
    .await;
    assert_eq!(r.status(), 201);
    let pr = json(&r);
    let number = pr["number"].as_u64().expect("number");
    assert_eq!(pr["commits"], 2);
    let dup = send(
        &sim,
        Method::POST,
        "/repos/acme/svc/pulls",
        Some("t1"),
        json!({"title": "Lib", "head": "feature", "base": "main"}),
    )
    .await;
    assert_eq!(dup.status(), 422);
    assert!(
        json(&dup)["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("A pull request already exists"))
    );
    let none = send(
        &sim,
        Method::POST,
        "/repos/acme/svc/pulls",
        Some("t1"),
        json!({"title": "x", "head": "main", "base": "main"}),
    )
    .await;
    assert_eq!(
        json(&none)["errors"][0]["message"],
        "No commits between main and main"
    );
    let badhead = send(
        &sim,
        Method::POST,
        "/repos/acme/svc/pulls",
        Some("t1"),
        json!({"title": "x", "head": "nope", "base": "main"}),
    )
    .await;
    assert_eq!(json(&badhead)["errors"][0]["field"], "head");
    assert_eq!(
        crawl(&sim, &format!("/repos/acme/svc/pulls/{number}/files"), None)
            .await
            .len(),
        1
    );

    // protectBranch: reviews required blocks the merge
    let r = send(
        &sim,
        Method::PUT,
        "/repos/acme/svc/branches/main/protection",
        Some("t1"),
        json!({"required_status_checks": null, "enforce_admins": true}),
    )
    .await;
    assert_eq!(r.status(), 422, "all four keys are required");
    let r = send(&sim, Method::PUT, "/repos/acme/svc/branches/main/protection", Some("t1"), json!({"required_status_checks": null, "enforce_admins": true, "required_pull_request_reviews": {"required_approving_review_count": 1}, "restrictions": null})).await;
    assert_eq!(r.status(), 200);
    assert_eq!(json(&r)["enforce_admins"]["enabled"], true);
    assert_eq!(
        send(
            &sim,
            Method::PUT,
            "/repos/acme/svc/branches/nope/protection",
            Some("t1"),
            json!({})
        )
        .await
        .status(),
        404
    );
    let merge_uri = format!("/repos/acme/svc/pulls/{number}/merge");
    let r = send(&sim, Method::PUT, &merge_uri, Some("t1"), json!({})).await;
    assert_eq!(r.status(), 405);
    let r = send(&sim, Method::PUT, "/repos/acme/svc/branches/main/protection", Some("t1"), json!({"required_status_checks": null, "enforce_admins": false, "required_pull_request_reviews": null, "restrictions": null})).await;
    assert_eq!(r.status(), 200);

    // mergePullRequest: a stale sha conflicts, the right one merges, a second merge is refused
    let r = send(
        &sim,
        Method::PUT,
        &merge_uri,
        Some("t1"),
        json!({"sha": main_sha}),
    )
    .await;
    assert_eq!(r.status(), 409);
    let r = send(
        &sim,
        Method::PUT,
        &merge_uri,
        Some("t1"),
        json!({"merge_method": "merge"}),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(json(&r)["merged"], true);
    let merged_sha = json(&r)["sha"].as_str().expect("sha").to_owned();
    let main = json(&get(&sim, "/repos/acme/svc/branches/main", Some("t1")).await);
    assert_eq!(main["commit"]["sha"], merged_sha.as_str());
    assert_eq!(
        send(&sim, Method::PUT, &merge_uri, Some("t1"), json!({}))
            .await
            .status(),
        405
    );
    assert_eq!(get(&sim, &merge_uri, Some("t1")).await.status(), 204);
    let file = json(&get(&sim, "/repos/acme/svc/contents/src/lib.rs", Some("t1")).await);
    assert_eq!(file["content"], "Zm4gbWFpbigpIHsgfQ==");
    assert_eq!(
        send(
            &sim,
            Method::PUT,
            "/repos/acme/svc/pulls/999/merge",
            Some("t1"),
            json!({})
        )
        .await
        .status(),
        404
    );
    // Mutations spent 1 each from core like any request.
    sim.clock().sleep(SignedDuration::from_secs(1)).await;
    assert!(sim.request_log().iter().all(|e| e.status < 500));
}

#[tokio::test(start_paused = true)]
async fn conflicting_changes_make_a_pull_request_unmergeable() {
    let sim = sim(config());
    send(
        &sim,
        Method::POST,
        "/orgs/acme/repos",
        Some("t1"),
        json!({"name": "c", "auto_init": true}),
    )
    .await;
    let main = json(&get(&sim, "/repos/acme/c/branches/main", Some("t1")).await)["commit"]["sha"]
        .as_str()
        .expect("sha")
        .to_owned();
    send(
        &sim,
        Method::POST,
        "/repos/acme/c/git/refs",
        Some("t1"),
        json!({"ref": "refs/heads/f", "sha": main}),
    )
    .await;
    let r = send(
        &sim,
        Method::PUT,
        "/repos/acme/c/contents/a.txt",
        Some("t1"),
        json!({"message": "f", "content": "YQ==", "branch": "f"}),
    )
    .await;
    assert_eq!(r.status(), 201);
    let pr = json(
        &send(
            &sim,
            Method::POST,
            "/repos/acme/c/pulls",
            Some("t1"),
            json!({"title": "t", "head": "f", "base": "main"}),
        )
        .await,
    );
    let r = send(
        &sim,
        Method::PUT,
        "/repos/acme/c/contents/a.txt",
        Some("t1"),
        json!({"message": "m", "content": "Yg==", "branch": "main"}),
    )
    .await;
    assert_eq!(r.status(), 201);
    let r = send(
        &sim,
        Method::PUT,
        &format!("/repos/acme/c/pulls/{}/merge", pr["number"]),
        Some("t1"),
        json!({}),
    )
    .await;
    assert_eq!(r.status(), 405);
    assert_eq!(json(&r)["message"], "Merge conflict");
}
