//! GitHub's REST description as the oracle of the simulator's REST responses: every operation
//! of the vendored subset that the simulator serves is driven in-process, and every body it
//! answers is validated against the schema the description declares for that operation and
//! status (errors included). Operations of the subset the simulator does not serve must answer
//! 404, so a new route cannot appear without its check here.

mod common;
mod openapi;

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use common::*;
use headroom_core::clock::SignedDuration;
use headroom_sim::{Scenario, SimConfig, Simulator};
use http::{Method, Response};
use openapi::{Description, Op};
use serde_json::{Value, json};

/// Operations of the subset the simulator does not serve (yet). Each must answer 404, asked
/// with identifiers that exist (so a served route would answer something else).
const NOT_SERVED: [(&str, &str); 1] = [("get", "/repos/{owner}/{repo}/commits")];

/// One request that was answered as expected, kept to replay against other simulators.
#[derive(Debug, Clone)]
struct Sample {
    method: Method,
    uri: String,
    token: Option<&'static str>,
    body: Option<Value>,
}

/// Drives requests, validates every answer, and remembers what was exercised.
struct Oracle {
    d: Description,
    failures: Vec<String>,
    exercised: BTreeMap<Op, BTreeSet<u16>>,
    samples: BTreeMap<Op, Sample>,
}

impl Oracle {
    fn new() -> Oracle {
        Oracle {
            d: Description::load(),
            failures: Vec::new(),
            exercised: BTreeMap::new(),
            samples: BTreeMap::new(),
        }
    }

    /// Sends one request for operation (`method`, `template`), expects `status`, validates the
    /// body against the description, and returns the body (JSON, or null).
    #[allow(clippy::too_many_arguments)]
    async fn call(
        &mut self,
        sim: &Simulator,
        method: Method,
        template: &str,
        uri: &str,
        token: Option<&'static str>,
        body: Option<Value>,
        status: u16,
    ) -> Value {
        // Paced under GitHub's 900 points a minute, as a well-behaved client is.
        sim.clock().sleep(SignedDuration::from_millis(400)).await;
        let resp = sim
            .handle(request(method.clone(), uri, token, body.clone()), PEER)
            .await;
        let op = (method.as_str().to_ascii_lowercase(), template.to_owned());
        let got = resp.status().as_u16();
        self.verify(&op, uri, status, &resp);
        self.exercised.entry(op.clone()).or_default().insert(got);
        // 304 where declared: the same read again, conditional on the ETag just answered.
        let etag = header(&resp, "etag").map(str::to_owned);
        if let Some(etag) = etag.as_deref().filter(|_| {
            method == Method::GET && got == 200 && self.d.statuses(&op.0, &op.1).contains(&304)
        }) {
            let mut again = request(Method::GET, uri, token, None);
            again.headers_mut().insert(
                "if-none-match",
                etag.parse().expect("an etag is a header value"),
            );
            let resp = sim.handle(again, PEER).await;
            self.verify(&op, uri, 304, &resp);
            self.exercised.entry(op.clone()).or_default().insert(304);
        }
        if got == status && (200..300).contains(&got) && !self.samples.contains_key(&op) {
            self.samples.insert(
                op,
                Sample {
                    method,
                    uri: uri.to_owned(),
                    token,
                    body,
                },
            );
        }
        serde_json::from_slice(resp.body()).unwrap_or(Value::Null)
    }

    /// Like [`Oracle::call`], for an answer the caller validates itself: only the status is
    /// checked.
    #[allow(clippy::too_many_arguments)]
    async fn call_raw(
        &mut self,
        sim: &Simulator,
        method: Method,
        template: &str,
        uri: &str,
        token: Option<&'static str>,
        body: Option<Value>,
        status: u16,
    ) -> Value {
        let resp = sim
            .handle(request(method.clone(), uri, token, body), PEER)
            .await;
        let op = (method.as_str().to_ascii_lowercase(), template.to_owned());
        let got = resp.status().as_u16();
        if got != status {
            self.failures.push(format!(
                "{} {template} ({uri}) → {got}: expected {status}",
                op.0.to_ascii_uppercase()
            ));
        }
        self.exercised.entry(op).or_default().insert(got);
        serde_json::from_slice(resp.body()).unwrap_or(Value::Null)
    }

    fn verify(&mut self, op: &Op, uri: &str, status: u16, resp: &Response<Bytes>) {
        let got = resp.status().as_u16();
        let label = format!("{} {} ({uri}) → {got}", op.0.to_ascii_uppercase(), op.1);
        if got != status {
            self.failures.push(format!(
                "{label}: expected {status}; body {:.300}",
                String::from_utf8_lossy(resp.body())
            ));
            return;
        }
        if let Err(why) = self.d.check(&op.0, &op.1, got, resp.body()) {
            self.failures.push(format!("{label}: {why}"));
        }
    }

    /// Replays every sample whose operation declares `status` against `sim` (a simulator
    /// playing a scenario that answers it) and validates the answers.
    async fn replay(&mut self, sim: &Simulator, status: u16, only: impl Fn(&Op) -> bool) {
        let samples: Vec<(Op, Sample)> = self
            .samples
            .iter()
            .filter(|(op, _)| only(op) && self.d.statuses(&op.0, &op.1).contains(&status))
            .map(|(op, s)| (op.clone(), s.clone()))
            .collect();
        for (op, s) in samples {
            let resp = sim
                .handle(request(s.method, &s.uri, s.token, s.body), PEER)
                .await;
            self.verify(&op, &s.uri, status, &resp);
            self.exercised
                .entry(op)
                .or_default()
                .insert(resp.status().as_u16());
        }
    }
}

fn world() -> SimConfig {
    config().with_org("acme", 8)
}

/// The organization's reads, on generated data.
async fn reads(o: &mut Oracle, sim: &Simulator) {
    let t = Some("t1");
    o.call(sim, Method::GET, "/orgs/{org}", "/orgs/acme", t, None, 200)
        .await;
    o.call(sim, Method::GET, "/orgs/{org}", "/orgs/nope", t, None, 404)
        .await;
    o.call(
        sim,
        Method::GET,
        "/orgs/{org}/members",
        "/orgs/acme/members",
        t,
        None,
        200,
    )
    .await;
    o.call(
        sim,
        Method::GET,
        "/orgs/{org}/teams",
        "/orgs/acme/teams",
        t,
        None,
        200,
    )
    .await;
    let repos = o
        .call(
            sim,
            Method::GET,
            "/orgs/{org}/repos",
            "/orgs/acme/repos?per_page=100",
            t,
            None,
            200,
        )
        .await;
    let repos: Vec<Value> = repos.as_array().cloned().unwrap_or_default();
    assert!(repos.len() >= 8, "the organization's repositories");

    // Every repository's lists are read until one of each kind of item has been checked.
    let (mut pull_seen, mut run_seen, mut issue_seen, mut comment_seen) =
        (false, false, false, false);
    for repo in &repos {
        let full = repo["full_name"].as_str().expect("full_name").to_owned();
        let r = |suffix: &str| format!("/repos/{full}{suffix}");
        o.call(
            sim,
            Method::GET,
            "/repos/{owner}/{repo}",
            &r(""),
            t,
            None,
            200,
        )
        .await;
        let issues = o
            .call(
                sim,
                Method::GET,
                "/repos/{owner}/{repo}/issues",
                &r("/issues?state=all&per_page=5"),
                t,
                None,
                200,
            )
            .await;
        if let Some(n) = issues[0]["number"].as_u64().filter(|_| !issue_seen) {
            issue_seen = true;
            o.call(
                sim,
                Method::GET,
                "/repos/{owner}/{repo}/issues/{issue_number}",
                &r(&format!("/issues/{n}")),
                t,
                None,
                200,
            )
            .await;
        }
        if !comment_seen {
            let comments = o
                .call(
                    sim,
                    Method::GET,
                    "/repos/{owner}/{repo}/issues/comments",
                    &r("/issues/comments?per_page=5"),
                    t,
                    None,
                    200,
                )
                .await;
            comment_seen = comments.as_array().is_some_and(|c| !c.is_empty());
        }
        let branches = o
            .call(
                sim,
                Method::GET,
                "/repos/{owner}/{repo}/branches",
                &r("/branches?per_page=5"),
                t,
                None,
                200,
            )
            .await;
        if let Some(b) = branches[0]["name"].as_str() {
            o.call(
                sim,
                Method::GET,
                "/repos/{owner}/{repo}/branches/{branch}",
                &r(&format!("/branches/{b}")),
                t,
                None,
                200,
            )
            .await;
        }
        if !pull_seen {
            let pulls = o
                .call(
                    sim,
                    Method::GET,
                    "/repos/{owner}/{repo}/pulls",
                    &r("/pulls?state=all&per_page=5"),
                    t,
                    None,
                    200,
                )
                .await;
            if let Some(n) = pulls[0]["number"].as_u64() {
                pull_seen = true;
                o.call(
                    sim,
                    Method::GET,
                    "/repos/{owner}/{repo}/pulls/{pull_number}",
                    &r(&format!("/pulls/{n}")),
                    t,
                    None,
                    200,
                )
                .await;
                let commits = o
                    .call(
                        sim,
                        Method::GET,
                        "/repos/{owner}/{repo}/pulls/{pull_number}/commits",
                        &r(&format!("/pulls/{n}/commits")),
                        t,
                        None,
                        200,
                    )
                    .await;
                o.call(
                    sim,
                    Method::GET,
                    "/repos/{owner}/{repo}/pulls/{pull_number}/files",
                    &r(&format!("/pulls/{n}/files")),
                    t,
                    None,
                    200,
                )
                .await;
                if let Some(sha) = commits[0]["sha"].as_str() {
                    o.call(
                        sim,
                        Method::GET,
                        "/repos/{owner}/{repo}/commits/{ref}",
                        &r(&format!("/commits/{sha}")),
                        t,
                        None,
                        200,
                    )
                    .await;
                }
            }
        }
        if !run_seen {
            let runs = o
                .call(
                    sim,
                    Method::GET,
                    "/repos/{owner}/{repo}/actions/runs",
                    &r("/actions/runs?per_page=3"),
                    t,
                    None,
                    200,
                )
                .await;
            let run = &runs["workflow_runs"][0];
            if let (Some(id), Some(sha)) = (run["id"].as_u64(), run["head_sha"].as_str()) {
                run_seen = true;
                o.call(
                    sim,
                    Method::GET,
                    "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs",
                    &r(&format!("/actions/runs/{id}/jobs")),
                    t,
                    None,
                    200,
                )
                .await;
                let checks = o
                    .call(
                        sim,
                        Method::GET,
                        "/repos/{owner}/{repo}/commits/{ref}/check-runs",
                        &r(&format!("/commits/{sha}/check-runs")),
                        t,
                        None,
                        200,
                    )
                    .await;
                assert!(
                    checks["check_runs"]
                        .as_array()
                        .is_some_and(|c| !c.is_empty()),
                    "a run's head commit has check runs"
                );
            }
        }
    }
    assert!(
        pull_seen && run_seen && issue_seen && comment_seen,
        "the generated data has a pull request, a run, an issue and a comment"
    );

    // Errors on reads.
    let renamed = repos[3]["name"].as_str().expect("name");
    for (template, suffix, status) in [
        ("/repos/{owner}/{repo}", "", 301),
        ("/repos/{owner}/{repo}/issues", "/issues", 301),
        (
            "/repos/{owner}/{repo}/issues/{issue_number}",
            "/issues/1",
            301,
        ),
        (
            "/repos/{owner}/{repo}/branches/{branch}",
            "/branches/main",
            301,
        ),
    ] {
        o.call(
            sim,
            Method::GET,
            template,
            &format!("/repos/acme/old-{renamed}{suffix}"),
            t,
            None,
            status,
        )
        .await;
    }
    for (template, suffix) in [
        ("/repos/{owner}/{repo}", ""),
        ("/repos/{owner}/{repo}/issues", "/issues"),
        ("/repos/{owner}/{repo}/issues/comments", "/issues/comments"),
        ("/repos/{owner}/{repo}/issues/{issue_number}", "/issues/1"),
        ("/repos/{owner}/{repo}/branches", "/branches"),
        ("/repos/{owner}/{repo}/branches/{branch}", "/branches/main"),
        ("/repos/{owner}/{repo}/commits/{ref}", "/commits/main"),
    ] {
        o.call(
            sim,
            Method::GET,
            template,
            &format!("/repos/acme/no-such-repo{suffix}"),
            t,
            None,
            404,
        )
        .await;
    }
    let full = repos[0]["full_name"].as_str().expect("full_name");
    o.call(
        sim,
        Method::GET,
        "/repos/{owner}/{repo}/issues/{issue_number}",
        &format!("/repos/{full}/issues/999999"),
        t,
        None,
        404,
    )
    .await;
    o.call(
        sim,
        Method::GET,
        "/repos/{owner}/{repo}/branches/{branch}",
        &format!("/repos/{full}/branches/no-such-branch"),
        t,
        None,
        404,
    )
    .await;
    o.call(
        sim,
        Method::GET,
        "/repos/{owner}/{repo}/pulls/{pull_number}",
        &format!("/repos/{full}/pulls/999999"),
        t,
        None,
        404,
    )
    .await;
    o.call(
        sim,
        Method::GET,
        "/repos/{owner}/{repo}/commits/{ref}",
        &format!("/repos/{full}/commits/0000000000000000000000000000000000000000"),
        t,
        None,
        422,
    )
    .await;
}

/// Users, search, the feed and `/rate_limit`.
async fn accounts(o: &mut Oracle, sim: &Simulator) {
    let t = Some("t1");
    o.call(sim, Method::GET, "/user", "/user", t, None, 200)
        .await;
    o.call(sim, Method::GET, "/user", "/user", None, None, 401)
        .await;
    o.call(
        sim,
        Method::GET,
        "/user",
        "/user",
        Some("ghs_app"),
        None,
        403,
    )
    .await;
    o.call(
        sim,
        Method::GET,
        "/users/{username}",
        "/users/octo-ana",
        t,
        None,
        200,
    )
    .await;
    o.call(
        sim,
        Method::GET,
        "/users/{username}",
        "/users/acme",
        t,
        None,
        200,
    )
    .await;
    o.call(
        sim,
        Method::GET,
        "/users/{username}",
        "/users/no-such-user",
        t,
        None,
        404,
    )
    .await;
    o.call(
        sim,
        Method::GET,
        "/user/{account_id}",
        "/user/7700419",
        t,
        None,
        200,
    )
    .await;
    o.call(
        sim,
        Method::GET,
        "/user/{account_id}",
        "/user/1",
        t,
        None,
        404,
    )
    .await;
    for (kind, q) in [
        ("users", "user:octo-ana user:octo-ben"),
        ("repositories", "repo:octo-ana/kiln repo:octo-ben/loom"),
        ("issues", "repo:octo-ana/kiln is:issue"),
        ("commits", "repo:octo-ana/kiln fix"),
    ] {
        let uri = format!(
            "/search/{kind}?q={}&per_page=100",
            q.replace(' ', "+").replace(':', "%3A").replace('/', "%2F")
        );
        let body = o
            .call(
                sim,
                Method::GET,
                &format!("/search/{kind}"),
                &uri,
                t,
                None,
                200,
            )
            .await;
        if matches!(kind, "users" | "repositories") {
            assert_eq!(body["total_count"], 2, "{kind}: {body}");
        }
    }
    for kind in ["users", "repositories", "issues"] {
        o.call(
            sim,
            Method::GET,
            &format!("/search/{kind}"),
            &format!("/search/{kind}?q="),
            t,
            None,
            422,
        )
        .await;
    }
    events(o, sim).await;
    o.call(sim, Method::GET, "/rate_limit", "/rate_limit", t, None, 200)
        .await;
    // GitHub Enterprise Server with rate limiting off: the 404 the description declares.
    let ghes = common::sim(world().without_rate_limiting());
    o.call(
        &ghes,
        Method::GET,
        "/rate_limit",
        "/rate_limit",
        t,
        None,
        404,
    )
    .await;
}

/// Envelope ids of the default feed page that are malformed on purpose (the quarantine
/// fixtures: a push without `head`, an envelope without `type`).
const MALFORMED_ON_PURPOSE: [&str; 2] = ["58000000005", "58000000007"];

/// `GET /events`: the default page's deliberately malformed envelopes must be exactly the ones
/// GitHub's description rejects; the rest, and every envelope of the generated live feed, pass.
async fn events(o: &mut Oracle, sim: &Simulator) {
    let page = o
        .call_raw(
            sim,
            Method::GET,
            "/events",
            "/events?per_page=100",
            None,
            None,
            200,
        )
        .await;
    let envelopes = page.as_array().cloned().unwrap_or_default();
    let rejected: Vec<String> = envelopes
        .iter()
        .filter(|e| o.d.check_event(e).is_err())
        .map(|e| e["id"].as_str().unwrap_or("?").to_owned())
        .collect();
    if rejected != MALFORMED_ON_PURPOSE {
        o.failures.push(format!(
            "GET /events: the description rejects envelopes {rejected:?}; only {MALFORMED_ON_PURPOSE:?} are malformed on purpose"
        ));
    }
    let valid: Vec<Value> = envelopes
        .into_iter()
        .filter(|e| !MALFORMED_ON_PURPOSE.contains(&e["id"].as_str().unwrap_or("")))
        .collect();
    if let Err(why) = o.d.check(
        "get",
        "/events",
        200,
        &serde_json::to_vec(&valid).expect("serializable"),
    ) {
        o.failures
            .push(format!("GET /events (default page): {why}"));
    }
    let live = common::sim(world().with_scenario(Scenario::LiveFeed));
    live.clock().sleep(SignedDuration::from_secs(600)).await;
    let body = o
        .call(
            &live,
            Method::GET,
            "/events",
            "/events?per_page=100",
            None,
            None,
            200,
        )
        .await;
    let live_events = body.as_array().cloned().unwrap_or_default();
    assert!(live_events.len() > 10, "the live feed has events");
    for e in &live_events {
        if let Err(why) = o.d.check_event(e) {
            o.failures.push(format!(
                "GET /events (live feed) envelope {}: {why}",
                e["id"]
            ));
        }
    }
}

/// The Git provider contract's mutations, with their errors.
async fn mutations(o: &mut Oracle, sim: &Simulator) {
    let t = Some("t1");
    let post = Method::POST;
    let put = Method::PUT;
    o.call(
        sim,
        post.clone(),
        "/orgs/{org}/repos",
        "/orgs/acme/repos",
        t,
        Some(json!({"name": "svc", "auto_init": true, "description": "A service"})),
        201,
    )
    .await;
    o.call(
        sim,
        post.clone(),
        "/orgs/{org}/repos",
        "/orgs/acme/repos",
        t,
        Some(json!({"name": "svc"})),
        422,
    )
    .await;
    o.call(
        sim,
        post.clone(),
        "/orgs/{org}/repos",
        "/orgs/acme/repos",
        t,
        Some(json!({})),
        422,
    )
    .await;
    o.call(
        sim,
        post.clone(),
        "/user/repos",
        "/user/repos",
        t,
        Some(json!({"name": "scratch", "private": true})),
        201,
    )
    .await;
    o.call(
        sim,
        post.clone(),
        "/user/repos",
        "/user/repos",
        None,
        Some(json!({"name": "x"})),
        401,
    )
    .await;
    o.call(
        sim,
        post.clone(),
        "/user/repos",
        "/user/repos",
        Some("ghs_app"),
        Some(json!({"name": "x"})),
        403,
    )
    .await;
    o.call(
        sim,
        post.clone(),
        "/user/repos",
        "/user/repos",
        t,
        Some(json!({"name": "bad name!"})),
        422,
    )
    .await;

    // 400: a body that is not JSON.
    let bad = sim
        .handle(
            request(Method::POST, "/user/repos", t, None).map(|_| Bytes::from_static(b"{not json")),
            PEER,
        )
        .await;
    let op = ("post".to_owned(), "/user/repos".to_owned());
    o.verify(&op, "/user/repos", 400, &bad);
    o.exercised.entry(op).or_default().insert(400);

    let main = o
        .call(
            sim,
            Method::GET,
            "/repos/{owner}/{repo}/git/ref/{ref}",
            "/repos/acme/svc/git/ref/heads/main",
            t,
            None,
            200,
        )
        .await;
    let main_sha = main["object"]["sha"].as_str().expect("sha").to_owned();
    o.call(
        sim,
        Method::GET,
        "/repos/{owner}/{repo}/git/ref/{ref}",
        "/repos/acme/svc/git/ref/heads/nope",
        t,
        None,
        404,
    )
    .await;
    o.call(
        sim,
        post.clone(),
        "/repos/{owner}/{repo}/git/refs",
        "/repos/acme/svc/git/refs",
        t,
        Some(json!({"ref": "refs/heads/feature", "sha": main_sha})),
        201,
    )
    .await;
    o.call(
        sim,
        post.clone(),
        "/repos/{owner}/{repo}/git/refs",
        "/repos/acme/svc/git/refs",
        t,
        Some(json!({"ref": "refs/heads/feature", "sha": main_sha})),
        422,
    )
    .await;

    let contents = "/repos/{owner}/{repo}/contents/{path}";
    let created = o
        .call(
            sim,
            put.clone(),
            contents,
            "/repos/acme/svc/contents/src/lib.rs",
            t,
            Some(json!({"message": "Add lib", "content": "Zm4gbWFpbigpIHt9", "branch": "feature"})),
            201,
        )
        .await;
    let blob = created["content"]["sha"].as_str().expect("blob").to_owned();
    o.call(
        sim,
        put.clone(),
        contents,
        "/repos/acme/svc/contents/src/lib.rs",
        t,
        Some(json!({"message": "Edit lib", "content": "Zm4gbWFpbigpIHsgfQ==", "branch": "feature", "sha": blob})),
        200,
    )
    .await;
    o.call(
        sim,
        put.clone(),
        contents,
        "/repos/acme/svc/contents/src/lib.rs",
        t,
        Some(json!({"message": "Stale", "content": "eA==", "branch": "feature", "sha": blob})),
        409,
    )
    .await;
    o.call(
        sim,
        put.clone(),
        contents,
        "/repos/acme/svc/contents/src/x.rs",
        t,
        Some(json!({"message": "Bad", "content": "not base64 !", "branch": "feature"})),
        422,
    )
    .await;
    o.call(
        sim,
        put.clone(),
        contents,
        "/repos/acme/svc/contents/src/x.rs",
        t,
        Some(json!({"message": "Nowhere", "content": "eA==", "branch": "no-such-branch"})),
        404,
    )
    .await;
    o.call(
        sim,
        Method::GET,
        contents,
        "/repos/acme/svc/contents/src/lib.rs?ref=feature",
        t,
        None,
        200,
    )
    .await;
    o.call(
        sim,
        Method::GET,
        contents,
        "/repos/acme/svc/contents/no/such/file",
        t,
        None,
        404,
    )
    .await;

    let pulls = "/repos/{owner}/{repo}/pulls";
    let pr = o
        .call(
            sim,
            post.clone(),
            pulls,
            "/repos/acme/svc/pulls",
            t,
            Some(json!({"title": "Add lib", "head": "feature", "base": "main", "body": "Please"})),
            201,
        )
        .await;
    let number = pr["number"].as_u64().expect("number");
    o.call(
        sim,
        post.clone(),
        pulls,
        "/repos/acme/svc/pulls",
        t,
        Some(json!({"title": "Again", "head": "feature", "base": "main"})),
        422,
    )
    .await;
    o.call(
        sim,
        post.clone(),
        pulls,
        "/repos/acme/svc/pulls",
        t,
        Some(json!({"head": "feature"})),
        422,
    )
    .await;
    let pr_path = format!("/repos/acme/svc/pulls/{number}");
    o.call(
        sim,
        Method::GET,
        "/repos/{owner}/{repo}/pulls/{pull_number}",
        &pr_path,
        t,
        None,
        200,
    )
    .await;
    let merge = "/repos/{owner}/{repo}/pulls/{pull_number}/merge";
    o.call(
        sim,
        Method::GET,
        merge,
        &format!("{pr_path}/merge"),
        t,
        None,
        404,
    )
    .await;
    o.call(
        sim,
        put.clone(),
        merge,
        &format!("{pr_path}/merge"),
        t,
        Some(json!({"sha": "0000000000000000000000000000000000000000"})),
        409,
    )
    .await;
    o.call(
        sim,
        put.clone(),
        merge,
        "/repos/acme/svc/pulls/999/merge",
        t,
        Some(json!({})),
        404,
    )
    .await;
    o.call(
        sim,
        put.clone(),
        merge,
        &format!("{pr_path}/merge"),
        t,
        Some(json!({"commit_title": "Merge the lib"})),
        200,
    )
    .await;
    o.call(
        sim,
        Method::GET,
        merge,
        &format!("{pr_path}/merge"),
        t,
        None,
        204,
    )
    .await;
    o.call(
        sim,
        put.clone(),
        merge,
        &format!("{pr_path}/merge"),
        t,
        Some(json!({})),
        405,
    )
    .await;
    o.call(
        sim,
        Method::GET,
        "/repos/{owner}/{repo}/pulls/{pull_number}",
        &pr_path,
        t,
        None,
        200,
    )
    .await;

    let protection = "/repos/{owner}/{repo}/branches/{branch}/protection";
    o.call(
        sim,
        Method::GET,
        protection,
        "/repos/acme/svc/branches/main/protection",
        t,
        None,
        404,
    )
    .await;
    o.call(
        sim,
        put.clone(),
        protection,
        "/repos/acme/svc/branches/main/protection",
        t,
        Some(json!({"required_status_checks": null, "enforce_admins": true})),
        422,
    )
    .await;
    o.call(
        sim,
        put.clone(),
        protection,
        "/repos/acme/svc/branches/no-such-branch/protection",
        t,
        Some(json!({
            "required_status_checks": null, "enforce_admins": true,
            "required_pull_request_reviews": null, "restrictions": null,
        })),
        404,
    )
    .await;
    o.call(
        sim,
        put.clone(),
        protection,
        "/repos/acme/svc/branches/main/protection",
        t,
        Some(json!({
            "required_status_checks": {"strict": true, "contexts": ["ci"]},
            "enforce_admins": true,
            "required_pull_request_reviews": {"required_approving_review_count": 1},
            "restrictions": null,
        })),
        200,
    )
    .await;
    o.call(
        sim,
        Method::GET,
        protection,
        "/repos/acme/svc/branches/main/protection",
        t,
        None,
        200,
    )
    .await;
    o.call(
        sim,
        Method::GET,
        "/repos/{owner}/{repo}/branches/{branch}",
        "/repos/acme/svc/branches/main",
        t,
        None,
        200,
    )
    .await;
    o.call(
        sim,
        Method::GET,
        "/repos/{owner}/{repo}/branches",
        "/repos/acme/svc/branches",
        t,
        None,
        200,
    )
    .await;
    o.call(
        sim,
        Method::GET,
        "/repos/{owner}/{repo}",
        "/repos/acme/svc",
        t,
        None,
        200,
    )
    .await;
}

/// The Git data API: a blob, a tree on the default branch's, a commit of it, and the branch
/// moved to it — then read back through the REST reads.
async fn git_data(o: &mut Oracle, sim: &Simulator) {
    let t = Some("t1");
    let post = Method::POST;
    let main = o
        .call(
            sim,
            Method::GET,
            "/repos/{owner}/{repo}/git/ref/{ref}",
            "/repos/acme/svc/git/ref/heads/main",
            t,
            None,
            200,
        )
        .await;
    let head = main["object"]["sha"].as_str().expect("sha").to_owned();
    let commit_of = "/repos/{owner}/{repo}/git/commits/{commit_sha}";
    let parent = o
        .call(
            sim,
            Method::GET,
            commit_of,
            &format!("/repos/acme/svc/git/commits/{head}"),
            t,
            None,
            200,
        )
        .await;
    let base_tree = parent["tree"]["sha"].as_str().expect("tree").to_owned();
    let blobs = "/repos/{owner}/{repo}/git/blobs";
    let blob = o
        .call(
            sim,
            post.clone(),
            blobs,
            "/repos/acme/svc/git/blobs",
            t,
            Some(json!({"content": "hello", "encoding": "utf-8"})),
            201,
        )
        .await;
    let blob = blob["sha"].as_str().expect("blob").to_owned();
    o.call(
        sim,
        post.clone(),
        blobs,
        "/repos/acme/svc/git/blobs",
        t,
        Some(json!({"content": "!!", "encoding": "base64"})),
        422,
    )
    .await;
    let trees = "/repos/{owner}/{repo}/git/trees";
    let tree = o
        .call(
            sim,
            post.clone(),
            trees,
            "/repos/acme/svc/git/trees",
            t,
            Some(json!({"base_tree": base_tree, "tree": [
                {"path": "docs/hello.md", "mode": "100644", "type": "blob", "sha": blob},
                {"path": "notes.txt", "mode": "100644", "type": "blob", "content": "inline"},
            ]})),
            201,
        )
        .await;
    let tree = tree["sha"].as_str().expect("tree").to_owned();
    o.call(
        sim,
        post.clone(),
        trees,
        "/repos/acme/svc/git/trees",
        t,
        Some(json!({"tree": [{"path": "x", "mode": "100644", "type": "blob", "sha": "0000000000000000000000000000000000000000"}]})),
        422,
    )
    .await;
    let commits = "/repos/{owner}/{repo}/git/commits";
    let created = o
        .call(
            sim,
            post.clone(),
            commits,
            "/repos/acme/svc/git/commits",
            t,
            Some(json!({"message": "Add docs", "tree": tree, "parents": [head]})),
            201,
        )
        .await;
    let new = created["sha"].as_str().expect("commit").to_owned();
    o.call(
        sim,
        post.clone(),
        commits,
        "/repos/acme/svc/git/commits",
        t,
        Some(json!({"message": "Nowhere", "tree": "0000000000000000000000000000000000000000"})),
        422,
    )
    .await;
    o.call(
        sim,
        Method::GET,
        commit_of,
        &format!("/repos/acme/svc/git/commits/{new}"),
        t,
        None,
        200,
    )
    .await;
    o.call(
        sim,
        Method::GET,
        commit_of,
        "/repos/acme/svc/git/commits/0000000000000000000000000000000000000000",
        t,
        None,
        404,
    )
    .await;
    let refs = "/repos/{owner}/{repo}/git/refs/{ref}";
    // `mutations` left main protected (reviews required, admins included): GitHub refuses the
    // move until the protection is lifted.
    let refused = o
        .call(
            sim,
            Method::PATCH,
            refs,
            "/repos/acme/svc/git/refs/heads/main",
            t,
            Some(json!({"sha": new})),
            422,
        )
        .await;
    assert_eq!(
        refused["message"],
        "Protected branch update failed for refs/heads/main."
    );
    // The vendored description lacks this operation: lifted outside the oracle.
    let lifted = sim
        .handle(
            request(
                Method::DELETE,
                "/repos/acme/svc/branches/main/protection",
                t,
                None,
            ),
            PEER,
        )
        .await;
    assert_eq!(lifted.status(), 204);
    let moved = o
        .call(
            sim,
            Method::PATCH,
            refs,
            "/repos/acme/svc/git/refs/heads/main",
            t,
            Some(json!({"sha": new})),
            200,
        )
        .await;
    assert_eq!(moved["object"]["sha"], new.as_str());
    o.call(
        sim,
        Method::PATCH,
        refs,
        "/repos/acme/svc/git/refs/heads/main",
        t,
        Some(json!({"sha": head})),
        422,
    )
    .await;
    o.call(
        sim,
        Method::PATCH,
        refs,
        "/repos/acme/svc/git/refs/heads/no-such-branch",
        t,
        Some(json!({"sha": new})),
        422,
    )
    .await;
    // The world moved: the commit lists its files and the branch serves the new file.
    let detail = o
        .call(
            sim,
            Method::GET,
            "/repos/{owner}/{repo}/commits/{ref}",
            &format!("/repos/acme/svc/commits/{new}"),
            t,
            None,
            200,
        )
        .await;
    let files: Vec<&str> = detail["files"]
        .as_array()
        .expect("files")
        .iter()
        .filter_map(|f| f["filename"].as_str())
        .collect();
    assert_eq!(files, ["docs/hello.md", "notes.txt"], "{detail}");
    let file = o
        .call(
            sim,
            Method::GET,
            "/repos/{owner}/{repo}/contents/{path}",
            "/repos/acme/svc/contents/docs/hello.md",
            t,
            None,
            200,
        )
        .await;
    assert_eq!(file["content"], "aGVsbG8=");
}

fn rate_limited(scenario: Scenario) -> Simulator {
    sim(world().with_scenario(scenario))
}

#[tokio::test(start_paused = true)]
async fn every_served_operation_answers_what_github_describes() {
    let sim = sim(world());
    let mut o = Oracle::new();
    reads(&mut o, &sim).await;
    accounts(&mut o, &sim).await;
    mutations(&mut o, &sim).await;
    git_data(&mut o, &sim).await;

    assert!(
        o.exercised.values().any(|s| s.contains(&304)),
        "some operation declares 304 and was answered it"
    );

    // 403 where declared: primary exhaustion (core, then search), GitHub's own body.
    o.replay(&rate_limited(Scenario::RateLimited), 403, |op| {
        !op.1.starts_with("/search/")
    })
    .await;
    o.replay(&rate_limited(Scenario::SearchRateLimited), 403, |op| {
        op.1.starts_with("/search/")
    })
    .await;

    // Coverage: every operation of the description is either served and exercised with a
    // success, or listed as not served and answers 404.
    let not_served: BTreeSet<Op> = NOT_SERVED
        .iter()
        .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
        .collect();
    let svc_head =
        json(&get(&sim, "/repos/acme/svc/git/ref/heads/main", Some("t1")).await)["object"]["sha"]
            .as_str()
            .expect("acme/svc has a main branch")
            .to_owned();
    for op in o.d.operations() {
        if not_served.contains(&op) {
            let uri =
                op.1.replace("{owner}", "acme")
                    .replace("{repo}", "svc")
                    .replace("{ref}", "heads/main")
                    .replace("{commit_sha}", &svc_head);
            let method: Method = op.0.to_ascii_uppercase().parse().expect("a method");
            let body = (method != Method::GET).then(|| json!({}));
            let resp = sim
                .handle(request(method, &uri, Some("t1"), body), PEER)
                .await;
            if resp.status() != 404 {
                o.failures.push(format!(
                    "{} {}: listed as not served but answered {}; validate it here and remove it from NOT_SERVED",
                    op.0.to_ascii_uppercase(),
                    op.1,
                    resp.status()
                ));
            }
            continue;
        }
        let statuses = o.exercised.get(&op).cloned().unwrap_or_default();
        if !statuses.iter().any(|s| (200..300).contains(s)) {
            o.failures.push(format!(
                "{} {}: in the description but never exercised with a success (answered {statuses:?})",
                op.0.to_ascii_uppercase(),
                op.1
            ));
        }
    }
    for op in &not_served {
        assert!(
            o.d.operations().contains(op),
            "NOT_SERVED lists {op:?}, which the description does not have"
        );
    }

    // The error answers the description declares were met, not only successes.
    let statuses: BTreeSet<u16> = o.exercised.values().flatten().copied().collect();
    for status in [204, 301, 304, 400, 401, 403, 404, 405, 409, 422] {
        assert!(statuses.contains(&status), "no operation answered {status}");
    }
    let exercised: usize = o.exercised.values().map(BTreeSet::len).sum();
    assert!(
        o.failures.is_empty(),
        "{} of {exercised} (operation, status) pairs disagree with GitHub's REST description:\n  - {}",
        o.failures.len(),
        o.failures.join("\n  - ")
    );
}

/// The oracle can fail: a body the description rejects is reported, naming the field.
#[test]
fn the_oracle_rejects_what_github_would_not_send() {
    let d = Description::load();
    let ok = json!({"login": "a", "id": 1});
    assert!(
        d.check("get", "/orgs/{org}/members", 200, ok.to_string().as_bytes())
            .is_err(),
        "a simple-user without its required fields"
    );
    let wrong = d
        .check(
            "get",
            "/repos/{owner}/{repo}/git/ref/{ref}",
            200,
            br#"{"ref": 1}"#,
        )
        .expect_err("ref must be a string");
    assert!(wrong.contains("/ref"), "{wrong}");
    // `nullable: true` is a type union: a null `description` is valid, a number is not.
    let team = |description: Value| {
        json!([{
            "id": 1, "node_id": "T", "url": "https://x", "html_url": "https://x", "name": "n",
            "slug": "n", "description": description, "privacy": "closed", "permission": "pull",
            "members_url": "https://x{/member}", "repositories_url": "https://x",
            "parent": null, "type": "enterprise"
        }])
    };
    let check = |v: Value| d.check("get", "/orgs/{org}/teams", 200, v.to_string().as_bytes());
    assert!(
        check(team(Value::Null)).is_ok(),
        "{:?}",
        check(team(Value::Null))
    );
    assert!(check(team(json!(3))).is_err());
    assert!(
        d.check("get", "/orgs/{org}", 418, b"{}").is_err(),
        "an undeclared status"
    );
    assert!(
        d.check(
            "get",
            "/repos/{owner}/{repo}/pulls/{pull_number}/merge",
            204,
            b"x"
        )
        .is_err()
    );
}
