//! The seeded GitLab group: sizes as asked, every endpoint walked page by page against the
//! group's counts, totals that vanish past 10,000, `updated_after` filters, the touch hook,
//! GitLab.com's per-endpoint limits without headers, and the 403/404 scenarios.

mod common;

use std::collections::BTreeSet;

use common::gitlab::*;
use common::*;
use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_sim::{GitlabEndpointLimits, GitlabGroupSpec, SimConfig, Simulator};
use serde_json::Value;

fn spec() -> GitlabGroupSpec {
    GitlabGroupSpec::new("acme")
        .with_subgroups(3, 2)
        .with_projects_per_group(2)
        .with_items(5)
}

fn group_sim(spec: GitlabGroupSpec) -> Simulator {
    sim(config().with_gitlab_group(spec))
}

/// Every item of a listing, following `X-Next-Page` (never the totals).
async fn walk(sim: &Simulator, path: &str) -> Vec<Value> {
    let sep = if path.contains('?') { '&' } else { '?' };
    let mut page = "1".to_owned();
    let mut all = Vec::new();
    loop {
        let r = gl_get(sim, &format!("{path}{sep}per_page=100&page={page}"), "t1").await;
        assert_eq!(
            r.status(),
            200,
            "{path}: {}",
            String::from_utf8_lossy(r.body())
        );
        let Value::Array(items) = json(&r) else {
            panic!("{path} did not answer an array");
        };
        all.extend(items);
        match header(&r, "x-next-page") {
            Some(n) if !n.is_empty() => page = n.to_owned(),
            _ => return all,
        }
    }
}

fn ids(items: &[Value], field: &str) -> Vec<u64> {
    items.iter().filter_map(|v| v[field].as_u64()).collect()
}

fn at(v: &Value, field: &str) -> Timestamp {
    v[field]
        .as_str()
        .expect("a time")
        .parse()
        .expect("ISO 8601")
}

#[tokio::test(start_paused = true)]
async fn the_seeded_group_has_the_sizes_that_were_asked() {
    let sim = group_sim(spec());
    let c = sim.gitlab_group_counts("acme").expect("seeded");
    assert_eq!((c.groups, c.projects), (4, 8));
    assert_eq!((c.merge_requests, c.issues, c.pipelines), (40, 40, 40));
    assert_eq!((c.deployments, c.releases, c.feature_flags), (16, 16, 24));
    // Three per project and two per group.
    assert_eq!(c.milestones, 8 * 3 + 4 * 2);
    assert_eq!(c.merge_request_approvals, 40);
    assert!((40..=160).contains(&c.merge_request_commits), "{c:?}");
    assert!((40..=160).contains(&c.merge_request_notes), "{c:?}");
    assert!((40..=160).contains(&c.jobs), "{c:?}");
    let groups = walk(&sim, "/groups/acme/descendant_groups").await;
    assert_eq!(groups.len(), 3);
    // Nested two levels: some subgroup's parent is another subgroup.
    let sub_ids = ids(&groups, "id");
    assert!(
        groups
            .iter()
            .any(|g| sub_ids.contains(&g["parent_id"].as_u64().unwrap_or(0)))
    );
    let own = gl_get(&sim, "/groups/acme/projects", "t1").await;
    assert_eq!(
        header(&own, "x-total"),
        Some("2"),
        "include_subgroups defaults to false"
    );
    let all = gl_get(&sim, "/groups/acme/projects?include_subgroups=true", "t1").await;
    assert_eq!(header(&all, "x-total"), Some("8"));
    // The same seed seeds the same group; another seed another.
    let again = group_sim(spec());
    let r1 = walk(&sim, "/groups/acme/projects?include_subgroups=true").await;
    let r2 = walk(&again, "/groups/acme/projects?include_subgroups=true").await;
    assert_eq!(r1, r2);
    let other = sim_of(config().with_seed(2).with_gitlab_group(spec()));
    let r3 = walk(&other, "/groups/acme/projects?include_subgroups=true").await;
    assert_ne!(r1, r3);
}

#[tokio::test(start_paused = true)]
async fn a_walk_of_every_endpoint_finds_exactly_the_groups_counts() {
    let sim = group_sim(spec());
    let c = sim.gitlab_group_counts("acme").expect("seeded");
    let mut seen = headroom_sim::GitlabGroupCounts::default();
    let groups = walk(&sim, "/groups/acme/descendant_groups").await;
    seen.groups = 1 + groups.len();
    for g in std::iter::once("acme".to_owned()).chain(groups.iter().map(|g| {
        g["full_path"]
            .as_str()
            .expect("full_path")
            .replace('/', "%2F")
    })) {
        let r = gl_get(&sim, &format!("/groups/{g}"), "t1").await;
        assert_eq!(r.status(), 200);
        seen.milestones += walk(&sim, &format!("/groups/{g}/milestones")).await.len();
    }
    let projects = walk(&sim, "/groups/acme/projects?include_subgroups=true").await;
    seen.projects = projects.len();
    let now = now(&sim);
    for p in &projects {
        let id = p["id"].as_u64().expect("id");
        let base = format!("/projects/{id}");
        let mrs = walk(&sim, &format!("{base}/merge_requests")).await;
        seen.merge_requests += mrs.len();
        for mr in &mrs {
            assert_eq!(mr["project_id"].as_u64(), Some(id));
            assert!(mr["author"]["username"].is_string());
            assert!(at(mr, "updated_at") >= at(mr, "created_at"));
            assert!(at(mr, "updated_at") < now);
            let iid = mr["iid"].as_u64().expect("iid");
            let mrp = format!("{base}/merge_requests/{iid}");
            seen.merge_request_commits += walk(&sim, &format!("{mrp}/commits")).await.len();
            seen.merge_request_notes += walk(&sim, &format!("{mrp}/notes")).await.len();
            let a = gl_get(&sim, &format!("{mrp}/approvals"), "t1").await;
            assert_eq!(json(&a)["iid"].as_u64(), Some(iid));
            seen.merge_request_approvals += 1;
        }
        let pipelines = walk(&sim, &format!("{base}/pipelines")).await;
        seen.pipelines += pipelines.len();
        for pl in ids(&pipelines, "id") {
            seen.jobs += walk(&sim, &format!("{base}/pipelines/{pl}/jobs"))
                .await
                .len();
        }
        let issues = walk(&sim, &format!("{base}/issues")).await;
        seen.issues += issues.len();
        for iid in ids(&issues, "iid") {
            seen.issue_notes += walk(&sim, &format!("{base}/issues/{iid}/notes"))
                .await
                .len();
        }
        seen.milestones += walk(&sim, &format!("{base}/milestones")).await.len();
        seen.deployments += walk(&sim, &format!("{base}/deployments")).await.len();
        seen.releases += walk(&sim, &format!("{base}/releases")).await.len();
        seen.feature_flags += walk(&sim, &format!("{base}/feature_flags")).await.len();
    }
    assert_eq!(seen, c);
    // Times are ISO 8601 with milliseconds and Z.
    let r = gl_get(
        &sim,
        &format!("/projects/{}/issues", projects[0]["id"]),
        "t1",
    )
    .await;
    let created = json(&r)[0]["created_at"]
        .as_str()
        .expect("a time")
        .to_owned();
    assert!(
        created.len() == 24 && created.ends_with('Z') && &created[19..20] == ".",
        "{created}"
    );
}

#[tokio::test(start_paused = true)]
async fn projects_and_groups_are_found_by_url_encoded_full_path() {
    let sim = group_sim(spec());
    let projects = walk(&sim, "/groups/acme/projects?include_subgroups=true").await;
    let nested = projects
        .iter()
        .find(|p| {
            p["path_with_namespace"]
                .as_str()
                .is_some_and(|s| s.matches('/').count() == 2)
        })
        .expect("a project two levels down");
    let full = nested["path_with_namespace"]
        .as_str()
        .expect("path")
        .replace('/', "%2F");
    let r = gl_get(&sim, &format!("/projects/{full}"), "t1").await;
    assert_eq!(r.status(), 200);
    assert_eq!(json(&r)["id"], nested["id"]);
    assert_eq!(json(&r)["namespace"]["kind"], "group");
    let group = nested["namespace"]["full_path"]
        .as_str()
        .expect("group")
        .replace('/', "%2F");
    let r = gl_get(&sim, &format!("/groups/{group}"), "t1").await;
    assert_eq!(r.status(), 200);
    assert_eq!(json(&r)["id"], nested["namespace"]["id"]);
    let r = gl_get(&sim, "/groups/nobody", "t1").await;
    assert_eq!(r.status(), 404);
    assert_eq!(
        json(&r),
        serde_json::json!({"message": "404 Group Not Found"})
    );
    let r = gl_get(&sim, "/projects/acme%2Fnothing-here/merge_requests", "t1").await;
    assert_eq!(
        json(&r),
        serde_json::json!({"message": "404 Project Not Found"})
    );
}

/// A group of one project holding `mrs` merge requests and nothing else.
fn wide(mrs: usize) -> GitlabGroupSpec {
    let mut s = GitlabGroupSpec::new("wide")
        .with_subgroups(0, 1)
        .with_projects_per_group(1)
        .with_items(0);
    s.merge_requests_per_project = mrs;
    s.max_commits_per_merge_request = 1;
    s.max_notes = 1;
    s.milestones_per_project = 0;
    s.releases_per_project = 0;
    s.feature_flags_per_project = 0;
    s.group_milestones = 0;
    s
}

#[tokio::test(start_paused = true)]
async fn past_ten_thousand_results_the_totals_and_the_last_link_vanish() {
    let sim = group_sim(wide(10_001));
    let p = walk(&sim, "/groups/wide/projects").await[0]["id"]
        .as_u64()
        .expect("id");
    let path = format!("/projects/{p}/merge_requests");
    let r = gl_get(&sim, &format!("{path}?per_page=100"), "t1").await;
    assert_eq!(header(&r, "x-total"), None);
    assert_eq!(header(&r, "x-total-pages"), None);
    let link = header(&r, "link").expect("a link header");
    assert!(
        link.contains("rel=\"next\"") && !link.contains("rel=\"last\""),
        "{link}"
    );
    assert_eq!(header(&r, "x-next-page"), Some("2"));
    let all = walk(&sim, &path).await;
    let unique: BTreeSet<u64> = ids(&all, "iid").into_iter().collect();
    assert_eq!((all.len(), unique.len()), (10_001, 10_001));
    // At exactly 10,000 GitLab still counts.
    let sim = group_sim(wide(10_000));
    let r = gl_get(
        &sim,
        &format!("/projects/{p}/merge_requests?per_page=100"),
        "t1",
    )
    .await;
    assert_eq!(header(&r, "x-total"), Some("10000"));
    assert_eq!(header(&r, "x-total-pages"), Some("100"));
    assert!(header(&r, "link").is_some_and(|l| l.contains("rel=\"last\"")));
}

#[tokio::test(start_paused = true)]
async fn updated_after_returns_exactly_what_changed_since() {
    let sim = group_sim(spec().with_items(12));
    let p = walk(&sim, "/groups/acme/projects").await[0]["id"]
        .as_u64()
        .expect("id");
    for (list, strict) in [
        ("merge_requests", false),
        ("issues", false),
        ("pipelines", true),
        ("deployments", false),
    ] {
        let base = format!("/projects/{p}/{list}");
        let all = walk(&sim, &base).await;
        let mut times: Vec<Timestamp> = all.iter().map(|v| at(v, "updated_at")).collect();
        times.sort();
        let cut = times[times.len() / 2];
        let expected: BTreeSet<u64> = all
            .iter()
            .filter(|v| {
                if strict {
                    at(v, "updated_at") > cut
                } else {
                    at(v, "updated_at") >= cut
                }
            })
            .filter_map(|v| v["id"].as_u64())
            .collect();
        let since = cut.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
        let got = walk(&sim, &format!("{base}?updated_after={since}")).await;
        let got: BTreeSet<u64> = ids(&got, "id").into_iter().collect();
        assert!(
            !got.is_empty() && got.len() < all.len(),
            "{list}: {}",
            got.len()
        );
        assert_eq!(got, expected, "{list}");
    }
    let bad = gl_get(
        &sim,
        &format!("/projects/{p}/merge_requests?updated_after=yesterday"),
        "t1",
    )
    .await;
    assert_eq!(bad.status(), 400);
}

#[tokio::test(start_paused = true)]
async fn touching_the_group_changes_exactly_what_it_reports() {
    let sim = group_sim(spec());
    let before = sim.gitlab_group_counts("acme").expect("seeded");
    sim.clock().sleep(SignedDuration::from_secs(3_600)).await;
    let since = now(&sim).strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
    let touched = sim.gitlab_touch("acme", 3).expect("seeded");
    assert_eq!(touched.merge_requests.len(), 3);
    assert_eq!(touched.issues.len(), 3);
    assert_eq!(touched.pipelines.len(), 3);
    assert_eq!(touched.deployments.len(), 3);
    let after = sim.gitlab_group_counts("acme").expect("seeded");
    let mut expected = before;
    expected.merge_request_notes += 3;
    expected.issue_notes += 3;
    expected.jobs += 3;
    assert_eq!(after, expected);
    let projects = walk(&sim, "/groups/acme/projects?include_subgroups=true").await;
    let mut mrs = BTreeSet::new();
    let mut issues = BTreeSet::new();
    let mut deployments = BTreeSet::new();
    for id in ids(&projects, "id") {
        let q = format!("updated_after={since}");
        for v in walk(&sim, &format!("/projects/{id}/merge_requests?{q}")).await {
            mrs.insert((id, v["iid"].as_u64().expect("iid")));
        }
        for v in walk(&sim, &format!("/projects/{id}/issues?{q}")).await {
            issues.insert((id, v["iid"].as_u64().expect("iid")));
        }
        for v in walk(&sim, &format!("/projects/{id}/deployments?{q}")).await {
            deployments.insert((id, v["id"].as_u64().expect("id")));
        }
    }
    assert_eq!(mrs, touched.merge_requests.iter().copied().collect());
    assert_eq!(issues, touched.issues.iter().copied().collect());
    assert_eq!(deployments, touched.deployments.iter().copied().collect());
    // A touched merge request's newest note is the new one.
    let (p, iid) = touched.merge_requests[0];
    let notes = gl_get(
        &sim,
        &format!("/projects/{p}/merge_requests/{iid}/notes"),
        "t1",
    )
    .await;
    assert_eq!(at(&json(&notes)[0], "created_at"), now(&sim));
    assert!(sim.gitlab_touch("nobody", 1).is_none());
}

fn small_limits() -> SimConfig {
    let mut c = config().with_gitlab_group(spec());
    c.gitlab_endpoint_limits = Some(GitlabEndpointLimits {
        group_per_minute: 2,
        project_per_minute: 2,
        group_projects_per_minute: 3,
    });
    c
}

#[tokio::test(start_paused = true)]
async fn per_endpoint_limits_refuse_without_ratelimit_headers_while_the_throttle_shows_room() {
    let sim = sim(small_limits());
    sim.clock().sleep(SignedDuration::from_secs(20)).await;
    // One listing of the group's projects, spent here to learn a project's path.
    let listed = walk(&sim, "/groups/acme/projects").await;
    let name = listed[0]["path"].as_str().expect("path").to_owned();
    for (path, limit) in [
        ("/groups/acme", 2),
        ("/groups/acme/projects", 3),
        ("/projects/acme%2F{p}", 2),
    ] {
        let path = path.replace("{p}", &name);
        let start = if path.ends_with("/projects") { 1 } else { 0 };
        for n in start..limit {
            let r = gl_get(&sim, &path, "t1").await;
            assert_eq!(r.status(), 200, "{path} request {n}");
            assert!(header(&r, "ratelimit-remaining").is_some());
        }
        let r = gl_get(&sim, &path, "t1").await;
        assert_eq!(r.status(), 429, "{path}");
        assert_eq!(num(&r, "retry-after"), 40);
        let names: Vec<&str> = r.headers().keys().map(|k| k.as_str()).collect();
        assert!(
            !names.iter().any(|n| n.starts_with("ratelimit")),
            "{path}: {names:?}"
        );
        // Another endpoint's answer still shows plenty of room in the throttle.
        let ok = gl_get(&sim, "/user", "t1").await;
        assert_eq!(ok.status(), 200);
        assert!(num(&ok, "ratelimit-remaining") > 1_900);
        // Bob has his own window.
        assert_eq!(gl_get(&sim, &path, "tb").await.status(), 200);
    }
    // The next minute is a new window.
    sim.clock().sleep(SignedDuration::from_secs(40)).await;
    assert_eq!(gl_get(&sim, "/groups/acme", "t1").await.status(), 200);
}

#[tokio::test(start_paused = true)]
async fn a_self_managed_instance_has_no_per_endpoint_limits_unless_set() {
    let sim = sim(config()
        .with_gitlab_self_managed()
        .with_gitlab_group(spec()));
    for _ in 0..401 {
        assert_eq!(gl_get(&sim, "/groups/acme", "t1").await.status(), 200);
    }
    let mut c = small_limits().with_gitlab_self_managed();
    c.gitlab_requests_per_minute = 2_000;
    let sim = sim_of(c);
    for _ in 0..2 {
        assert_eq!(gl_get(&sim, "/groups/acme", "t1").await.status(), 200);
    }
    assert_eq!(gl_get(&sim, "/groups/acme", "t1").await.status(), 429);
}

fn sim_of(c: SimConfig) -> Simulator {
    sim(c)
}

#[tokio::test(start_paused = true)]
async fn forbidden_feature_flags_answer_403_on_the_projects_the_scenario_names() {
    let mut s = spec();
    s.feature_flags_forbidden_every = 2;
    let sim = group_sim(s);
    let projects = walk(
        &sim,
        "/groups/acme/projects?include_subgroups=true&order_by=id&sort=asc",
    )
    .await;
    let mut forbidden = 0;
    for id in ids(&projects, "id") {
        let r = gl_get(&sim, &format!("/projects/{id}/feature_flags"), "t1").await;
        match r.status().as_u16() {
            403 => {
                assert_eq!(json(&r), serde_json::json!({"message": "403 Forbidden"}));
                forbidden += 1;
            }
            200 => assert_eq!(json(&r).as_array().map(Vec::len), Some(3)),
            s => panic!("feature flags answered {s}"),
        }
    }
    assert_eq!(forbidden, 4);
    let c = sim.gitlab_group_counts("acme").expect("seeded");
    assert_eq!(
        (c.feature_flags, c.feature_flags_forbidden_projects),
        (12, 4)
    );
    let mut all = spec();
    all.feature_flags_forbidden_every = 1;
    let sim = group_sim(all);
    assert_eq!(
        sim.gitlab_group_counts("acme")
            .expect("seeded")
            .feature_flags,
        0
    );
}

#[tokio::test(start_paused = true)]
async fn a_project_deleted_after_it_was_listed_answers_404_project_not_found() {
    let mut s = spec();
    s.deleted_after_listing = 1;
    let sim = group_sim(s);
    let c = sim.gitlab_group_counts("acme").expect("seeded");
    assert_eq!((c.projects, c.deleted_projects), (8, 1));
    let listed = walk(&sim, "/groups/acme/projects?include_subgroups=true").await;
    assert_eq!(listed.len(), 8, "listed before it is deleted");
    let mut gone = Vec::new();
    for id in ids(&listed, "id") {
        let r = gl_get(&sim, &format!("/projects/{id}"), "t1").await;
        if r.status() == 404 {
            assert_eq!(
                json(&r),
                serde_json::json!({"message": "404 Project Not Found"})
            );
            let mrs = gl_get(&sim, &format!("/projects/{id}/merge_requests"), "t1").await;
            assert_eq!(mrs.status(), 404);
            assert_eq!(json(&mrs)["message"], "404 Project Not Found");
            gone.push(id);
        }
    }
    assert_eq!(gone.len(), 1);
    let relisted = walk(&sim, "/groups/acme/projects?include_subgroups=true").await;
    assert_eq!(relisted.len(), 7);
    assert!(!ids(&relisted, "id").contains(&gone[0]));
}

#[tokio::test(start_paused = true)]
async fn a_stalled_page_is_served_and_counted_but_answers_only_after_the_timeout() {
    let mut s = spec();
    s.stall_page_every = 2;
    let mut c = config().with_gitlab_group(s);
    c.faults.timeout_after = SignedDuration::from_secs(30);
    let sim = sim_of(c);
    let took = |before: Timestamp, sim: &Simulator| now(sim).as_second() - before.as_second();
    let t0 = now(&sim);
    let r = gl_get(&sim, "/groups/acme/projects", "t1").await;
    assert_eq!((r.status().as_u16(), took(t0, &sim)), (200, 0));
    // A single object is no page: it neither counts nor stalls.
    let t1 = now(&sim);
    assert_eq!(gl_get(&sim, "/groups/acme", "t1").await.status(), 200);
    assert_eq!(took(t1, &sim), 0);
    let t2 = now(&sim);
    let r = gl_get(&sim, "/groups/acme/descendant_groups", "t1").await;
    assert_eq!(r.status(), 200);
    assert_eq!(json(&r).as_array().map(Vec::len), Some(3));
    assert_eq!(took(t2, &sim), 30, "the second page stalls");
    let t3 = now(&sim);
    assert_eq!(
        gl_get(&sim, "/groups/acme/milestones", "t1").await.status(),
        200
    );
    assert_eq!(took(t3, &sim), 0);
    // The stalled request was served and logged as such.
    let log = sim.request_log();
    let entry = log
        .iter()
        .find(|e| e.path.contains("descendant_groups"))
        .expect("logged");
    assert_eq!(entry.status, 200);
}
