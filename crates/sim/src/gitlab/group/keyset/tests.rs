//! Keyset pages of project issues against the seeded group, the 400 on lists without keyset
//! and the 405 past the maximum offset, through the simulator's request handler.

use std::collections::BTreeSet;
use std::net::IpAddr;

use bytes::Bytes;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use http::{Request, Response};
use serde_json::Value;

use crate::sim::lock;
use crate::{GitlabGroupSpec, SimConfig, Simulator, TokenSpec};

const ISSUES: usize = 23;

fn group_sim(max_offset: usize) -> Simulator {
    let mut spec = GitlabGroupSpec::new("acme")
        .with_subgroups(1, 1)
        .with_projects_per_group(1)
        .with_items(ISSUES);
    spec.max_offset = max_offset;
    let config = SimConfig::default()
        .with_token(TokenSpec::user("t1", "alice"))
        .with_gitlab_group(spec);
    let start: Timestamp = "2026-11-30T10:00:00Z".parse().expect("time");
    Simulator::new(config, TokioClock::anchored_at(start)).expect("simulator")
}

/// The first seeded project's id.
fn project_id(sim: &Simulator) -> u64 {
    let gl = lock(&sim.inner.gitlab);
    gl.group.world.as_ref().expect("seeded").projects[0].id
}

/// `GET` of `target`: an API path under `/api/v4`, or an absolute `rel="next"` URL.
async fn get(sim: &Simulator, target: &str) -> Response<Bytes> {
    let uri = match target.find("/api/v4/") {
        Some(at) => target[at..].to_owned(),
        None => format!("/api/v4{target}"),
    };
    let request = Request::get(uri)
        .header("private-token", "t1")
        .body(Bytes::new())
        .expect("request");
    sim.handle(request, IpAddr::from([127, 0, 0, 1])).await
}

fn body(r: &Response<Bytes>) -> Value {
    serde_json::from_slice(r.body()).expect("JSON")
}

/// The `rel="next"` target of a page, if any.
fn next_link(r: &Response<Bytes>) -> Option<String> {
    let link = r.headers().get("link")?.to_str().expect("ASCII");
    link.split(',')
        .find(|l| l.contains("rel=\"next\""))
        .map(|l| {
            let l = l.trim();
            l[l.find('<').expect("<") + 1..l.find('>').expect(">")].to_owned()
        })
}

/// Every page of a keyset walk from `first`, calling `between` after each page.
async fn walk(sim: &Simulator, first: &str, mut between: impl FnMut(usize)) -> Vec<Vec<Value>> {
    let mut pages = Vec::new();
    let mut target = first.to_owned();
    loop {
        let r = get(sim, &target).await;
        assert_eq!(r.status(), 200, "{target}: {}", body(&r));
        for h in [
            "x-page",
            "x-next-page",
            "x-total",
            "x-total-pages",
            "x-per-page",
        ] {
            assert!(r.headers().get(h).is_none(), "{h} on a keyset page");
        }
        let Value::Array(items) = body(&r) else {
            panic!("not a list");
        };
        pages.push(items);
        between(pages.len());
        match next_link(&r) {
            Some(next) => {
                assert!(next.contains("cursor="), "{next}");
                assert!(next.contains("pagination=keyset"), "{next}");
                target = next;
            }
            None => return pages,
        }
        assert!(pages.len() <= ISSUES, "the walk does not end");
    }
}

fn key(v: &Value, by: &str) -> (String, u64) {
    let id = v["id"].as_u64().expect("id");
    let k = match by {
        "id" => String::new(),
        _ => v[by].as_str().expect("a time").to_owned(),
    };
    (k, id)
}

#[tokio::test(start_paused = true)]
async fn a_keyset_walk_serves_every_issue_exactly_once_in_its_order() {
    let sim = group_sim(0);
    let p = project_id(&sim);
    let all: BTreeSet<u64> = {
        let gl = lock(&sim.inner.gitlab);
        let w = gl.group.world.as_ref().expect("seeded");
        w.projects[0].issues.iter().map(|i| i.id).collect()
    };
    assert_eq!(all.len(), ISSUES);
    for (by, sort) in [("updated_at", "desc"), ("created_at", "asc"), ("id", "asc")] {
        let first =
            format!("/projects/{p}/issues?pagination=keyset&order_by={by}&sort={sort}&per_page=7");
        let pages = walk(&sim, &first, |_| {}).await;
        assert_eq!(pages.len(), ISSUES.div_ceil(7), "{by} {sort}");
        let items: Vec<Value> = pages.into_iter().flatten().collect();
        let ids: Vec<u64> = items.iter().filter_map(|v| v["id"].as_u64()).collect();
        assert_eq!(ids.len(), ISSUES, "{by} {sort}: each once");
        assert_eq!(ids.iter().copied().collect::<BTreeSet<_>>(), all);
        // Times are all UTC with the same precision, so their text orders as they do.
        let keys: Vec<(String, u64)> = items.iter().map(|v| key(v, by)).collect();
        for pair in keys.windows(2) {
            let ordered = if sort == "desc" {
                pair[0] > pair[1]
            } else {
                pair[0] < pair[1]
            };
            assert!(ordered, "{by} {sort}: {pair:?}");
        }
    }
    // The listing's filters hold on keyset pages too.
    let opened = {
        let gl = lock(&sim.inner.gitlab);
        let w = gl.group.world.as_ref().expect("seeded");
        let issues = &w.projects[0].issues;
        issues.iter().filter(|i| i.state == "opened").count()
    };
    let first = format!(
        "/projects/{p}/issues?state=opened&pagination=keyset&order_by=updated_at&sort=desc&per_page=4"
    );
    let pages = walk(&sim, &first, |_| {}).await;
    let items: Vec<Value> = pages.into_iter().flatten().collect();
    assert_eq!(items.len(), opened);
    assert!(items.iter().all(|v| v["state"] == "opened"));
}

#[tokio::test(start_paused = true)]
async fn an_issue_updated_mid_walk_moves_to_the_front_and_is_not_served_again_after_the_cursor() {
    let sim = group_sim(0);
    let p = project_id(&sim);
    sim.clock().sleep(SignedDuration::from_secs(60)).await;
    let first =
        format!("/projects/{p}/issues?pagination=keyset&order_by=updated_at&sort=desc&per_page=5");
    let mut touched = None;
    let pages = walk(&sim, &first, |n| {
        if n == 1 {
            // The last issue the first page served (the one the cursor names) changes: it is
            // the newest of all now, at the front of the list, ahead of the cursor.
            let now = sim.clock().now();
            let mut gl = lock(&sim.inner.gitlab);
            let w = gl.group.world.as_mut().expect("seeded");
            let issues = &mut w.projects[0].issues;
            issues.sort_by_key(|i| std::cmp::Reverse((i.updated_at, i.id)));
            let last_served = &mut issues[4];
            last_served.updated_at = now;
            touched = Some(last_served.id);
        }
    })
    .await;
    let touched = touched.expect("touched");
    assert_eq!(
        pages[0].last().and_then(|v| v["id"].as_u64()),
        Some(touched)
    );
    let ids: Vec<u64> = pages
        .iter()
        .flatten()
        .filter_map(|v| v["id"].as_u64())
        .collect();
    assert_eq!(
        ids.iter().filter(|&&id| id == touched).count(),
        1,
        "{ids:?}"
    );
    assert_eq!(ids.len(), ISSUES);
    assert_eq!(ids.iter().copied().collect::<BTreeSet<_>>().len(), ISSUES);
    // An offset walk would have served it again on its next page: the list moved under it.
    let r = get(
        &sim,
        &format!("/projects/{p}/issues?order_by=updated_at&sort=desc&per_page=5&page=1"),
    )
    .await;
    assert_eq!(body(&r)[0]["id"].as_u64(), Some(touched));
}

#[tokio::test(start_paused = true)]
async fn oldest_change_first_an_issue_updated_before_it_was_read_is_still_served() {
    let sim = group_sim(0);
    let p = project_id(&sim);
    sim.clock().sleep(SignedDuration::from_secs(60)).await;
    let first =
        format!("/projects/{p}/issues?pagination=keyset&order_by=updated_at&sort=asc&per_page=5");
    let mut touched = None;
    let pages = walk(&sim, &first, |n| {
        if n == 1 {
            // An issue no page served yet changes: it moves behind the cursor, to the end.
            let now = sim.clock().now();
            let mut gl = lock(&sim.inner.gitlab);
            let w = gl.group.world.as_mut().expect("seeded");
            let issues = &mut w.projects[0].issues;
            issues.sort_by_key(|i| (i.updated_at, i.id));
            let unread = &mut issues[10];
            unread.updated_at = now;
            touched = Some(unread.id);
        }
    })
    .await;
    let ids: Vec<u64> = pages
        .iter()
        .flatten()
        .filter_map(|v| v["id"].as_u64())
        .collect();
    assert_eq!(ids.len(), ISSUES);
    assert_eq!(
        ids.last().copied(),
        touched,
        "served last, in its new place"
    );
    assert_eq!(ids.iter().copied().collect::<BTreeSet<_>>().len(), ISSUES);
}

#[tokio::test(start_paused = true)]
async fn keyset_on_a_list_that_does_not_offer_it_answers_400() {
    let sim = group_sim(0);
    let p = project_id(&sim);
    let keyset = "pagination=keyset&order_by=updated_at&sort=desc";
    for list in [
        format!("/projects/{p}/merge_requests"),
        format!("/projects/{p}/pipelines"),
        format!("/projects/{p}/deployments"),
        format!("/projects/{p}/issues/1/notes"),
        "/groups/acme/projects".to_owned(),
    ] {
        let r = get(&sim, &format!("{list}?{keyset}")).await;
        assert_eq!(r.status(), 400, "{list}");
        assert!(
            body(&r)["error"]
                .as_str()
                .is_some_and(|e| e.contains("Keyset"))
        );
        // Offset paging of the same list is served.
        let r = get(&sim, &format!("{list}?per_page=5&page=1")).await;
        assert_eq!(r.status(), 200, "{list}");
    }
    let r = get(&sim, &format!("/projects/{p}/issues?{keyset}")).await;
    assert_eq!(r.status(), 200);
}

#[tokio::test(start_paused = true)]
async fn offset_paging_past_the_max_offset_answers_405_and_keyset_reaches_the_rest() {
    let sim = group_sim(10);
    let p = project_id(&sim);
    let page = |n: u32| format!("/projects/{p}/issues?per_page=5&page={n}");
    assert_eq!(
        get(&sim, &page(2)).await.status(),
        200,
        "offset 10 is allowed"
    );
    let r = get(&sim, &page(3)).await;
    assert_eq!(r.status(), 405);
    assert_eq!(
        body(&r)["error"],
        "Offset pagination has a maximum allowed offset of 10 for requests that return objects \
         of type Issue. Remaining records can be retrieved using keyset pagination."
    );
    // Merge requests offer no keyset, so no maximum offset either.
    let mrs = format!("/projects/{p}/merge_requests?per_page=5&page=3");
    assert_eq!(get(&sim, &mrs).await.status(), 200);
    let first =
        format!("/projects/{p}/issues?pagination=keyset&order_by=updated_at&sort=desc&per_page=5");
    let pages = walk(&sim, &first, |_| {}).await;
    assert_eq!(pages.iter().map(Vec::len).sum::<usize>(), ISSUES);
}
