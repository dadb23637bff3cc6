//! The provider pagers (GitLab offset and keyset, Jira token and startAt, Linear Relay,
//! LaunchDarkly `_links.next`) walked against pure models of each provider's answers: every
//! item is visited exactly once and in order, the walk ends for the provider's reason after the
//! expected number of pages (or at the cap), and a repeating cursor, a foreign next link or an
//! unreadable page stops it with its own reason.

use headroom_http::paginate::{StopReason, gitlab, jira, launchdarkly, linear};
use http::{HeaderMap, HeaderName, HeaderValue};
use proptest::prelude::*;
use serde_json::{Value, json};
use url::Url;

/// A walk's outcome: the items in the order visited, the pages fetched, why it stopped.
type Outcome = (Vec<u64>, u32, Option<StopReason>);

/// More requests than any walk here may make: a pager that never stops fails, not hangs.
const RUNAWAY: u32 = 10_000;

fn headers(pairs: &[(&str, String)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(
            HeaderName::from_bytes(k.as_bytes()).expect("valid name"),
            HeaderValue::from_str(v).expect("valid value"),
        );
    }
    h
}

fn url(s: &str) -> Url {
    Url::parse(s).expect("valid url")
}

fn query(url: &Url, name: &str) -> Option<u64> {
    url.query_pairs()
        .find(|(k, _)| k == name)
        .and_then(|(_, v)| v.parse().ok())
}

/// The pages a walk of `n` items in pages of `k` takes, and why it stops, under `cap`.
fn expected(n: u64, k: u64, cap: u32) -> (u32, StopReason) {
    let pages = u32::try_from(n.div_ceil(k).max(1)).expect("small");
    if cap >= pages {
        (pages, StopReason::LastPage)
    } else {
        (cap, StopReason::PageCap)
    }
}

fn assert_walk(outcome: &Outcome, n: u64, k: u64, cap: u32) {
    let (items, pages, stop) = outcome;
    let (want_pages, want_stop) = expected(n, k, cap);
    assert_eq!((*pages, *stop), (want_pages, Some(want_stop)));
    let seen = n.min(u64::from(want_pages) * k);
    assert_eq!(items, &(0..seen).collect::<Vec<_>>(), "each once, in order");
}

// ---------------------------------------------------------------------------------------------
// GitLab

const GITLAB: &str = "https://gitlab.example.com/api/v4/projects/7/merge_requests?state=all";

/// GitLab's offset answer to `url` over `n` items: `x-next-page` (empty on the last page),
/// the `Link` header, and totals only under 10,000 results (as GitLab does).
fn gitlab_offset_answer(url: &Url, n: u64, custom_headers: bool) -> (Vec<u64>, HeaderMap) {
    let page = query(url, "page").unwrap_or(1).max(1);
    let per_page = query(url, "per_page").unwrap_or(20).clamp(1, 100);
    let start = (page - 1) * per_page;
    let items: Vec<u64> = (start..n.min(start + per_page)).collect();
    let more = start + per_page < n;
    let link_to = |p: u64| {
        let mut u = url.clone();
        u.query_pairs_mut()
            .clear()
            .append_pair("page", &p.to_string())
            .append_pair("per_page", &per_page.to_string())
            .append_pair("state", "all");
        u.to_string()
    };
    let mut links = vec![format!("<{}>; rel=\"first\"", link_to(1))];
    if more {
        links.push(format!("<{}>; rel=\"next\"", link_to(page + 1)));
    }
    let mut pairs = vec![("link", links.join(", "))];
    if custom_headers {
        let next = if more {
            (page + 1).to_string()
        } else {
            String::new()
        };
        pairs.push(("x-next-page", next));
        pairs.push(("x-page", page.to_string()));
        pairs.push(("x-per-page", per_page.to_string()));
        if n <= 10_000 {
            pairs.push(("x-total", n.to_string()));
        }
    }
    (items, headers(&pairs))
}

fn walk_gitlab_offset(
    pager: &mut gitlab::OffsetPager,
    mut answer: impl FnMut(&Url) -> (Vec<u64>, HeaderMap),
) -> Outcome {
    let mut items = Vec::new();
    for _ in 0..RUNAWAY {
        let Some(next) = pager.next_url() else { break };
        let (page, h) = answer(&next);
        items.extend(page);
        pager.record(&h);
    }
    (items, pager.pages_fetched(), pager.stop_reason())
}

/// GitLab keyset over items whose ids are `ids` (ascending): items after `id_after`, and a
/// `Link: rel="next"` while a page is full; `lookahead` omits it on a full last page.
fn gitlab_keyset_answer(url: &Url, ids: &[u64], lookahead: bool) -> (Vec<u64>, HeaderMap) {
    let per_page = query(url, "per_page").unwrap_or(20).clamp(1, 100) as usize;
    let after = query(url, "id_after");
    let rest: Vec<u64> = ids
        .iter()
        .copied()
        .filter(|id| after.is_none_or(|a| *id > a))
        .collect();
    let page: Vec<u64> = rest.iter().copied().take(per_page).collect();
    let link = page.len() == per_page && !(lookahead && rest.len() == per_page);
    let mut pairs = Vec::new();
    if let (true, Some(last)) = (link, page.last()) {
        let mut next = url.clone();
        next.query_pairs_mut()
            .clear()
            .append_pair("id_after", &last.to_string())
            .append_pair("order_by", "id")
            .append_pair("pagination", "keyset")
            .append_pair("per_page", &per_page.to_string())
            .append_pair("sort", "asc");
        pairs.push(("link", format!("<{next}>; rel=\"next\"")));
    }
    (page, headers(&pairs))
}

fn walk_gitlab_keyset(
    pager: &mut gitlab::KeysetPager,
    mut answer: impl FnMut(&Url) -> (Vec<u64>, HeaderMap),
) -> (Vec<u64>, u32, Option<StopReason>) {
    let mut items = Vec::new();
    for _ in 0..RUNAWAY {
        let Some(next) = pager.next_url() else { break };
        let (page, h) = answer(&next);
        items.extend(page);
        pager.record(&h);
    }
    (items, pager.pages_fetched(), pager.stop_reason())
}

proptest! {
    /// Offset: `x-next-page` (or, with the custom headers stripped, `rel="next"`) walks every
    /// item once in ⌈N/k⌉ pages; totals never matter.
    #[test]
    fn gitlab_offset_visits_every_item_once_in_order(
        n in 0u64..700, k in 1u32..=100, cap in 0u32..40, custom in any::<bool>()
    ) {
        let mut pager = gitlab::OffsetPager::new(&url(GITLAB), k, cap);
        let outcome = walk_gitlab_offset(&mut pager, |u| gitlab_offset_answer(u, n, custom));
        assert_walk(&outcome, n, u64::from(k), cap);
    }

    /// Keyset: only `rel="next"` leads on; with or without GitLab's look-ahead on a full last
    /// page, every id is visited once and the walk ends where the links end.
    #[test]
    fn gitlab_keyset_visits_every_item_once_in_order(
        gaps in proptest::collection::vec(1u64..50, 0..300),
        k in 1u32..=100, cap in 1u32..40, lookahead in any::<bool>()
    ) {
        let ids: Vec<u64> = gaps.iter().scan(0, |id, g| { *id += g; Some(*id) }).collect();
        let n = ids.len() as u64;
        let k64 = u64::from(k);
        let mut pager = gitlab::KeysetPager::new(&url(GITLAB), "id", "asc", k, cap);
        let first = pager.next_url().expect("first");
        prop_assert_eq!(query(&first, "per_page"), Some(k64));
        prop_assert!(first.as_str().contains("pagination=keyset"));
        let (items, pages, stop) =
            walk_gitlab_keyset(&mut pager, |u| gitlab_keyset_answer(u, &ids, lookahead));
        // Without look-ahead a full last page still links on, to an empty page.
        let full = if lookahead || !n.is_multiple_of(k64) { n.div_ceil(k64).max(1) } else { n / k64 + 1 };
        let full = u32::try_from(full).expect("small");
        let want = if cap >= full { (full, StopReason::LastPage) } else { (cap, StopReason::PageCap) };
        prop_assert_eq!((pages, stop), (want.0, Some(want.1)));
        let seen = ids.len().min(want.0 as usize * k as usize);
        prop_assert_eq!(&items, &ids[..seen].to_vec());
    }

    /// A server that names the page just fetched (or an earlier one) as the next stops the walk
    /// as a loop, whether through `x-next-page` or through the `Link`.
    #[test]
    fn gitlab_offset_stops_when_the_next_page_repeats(
        at in 1u64..20, back in 0u64..20, custom in any::<bool>()
    ) {
        let mut pager = gitlab::OffsetPager::new(&url(GITLAB), 10, 100);
        let outcome = walk_gitlab_offset(&mut pager, |u| {
            let page = query(u, "page").unwrap_or(1);
            let (items, mut h) = gitlab_offset_answer(u, 10_000, custom);
            if page == at {
                let again = at.saturating_sub(back).max(1);
                let target = format!("{GITLAB}&per_page=10&page={again}");
                h.insert("link", format!("<{target}>; rel=\"next\"").parse().expect("valid"));
                if custom {
                    h.insert("x-next-page", again.to_string().parse().expect("valid"));
                }
            }
            (items, h)
        });
        prop_assert_eq!(outcome.2, Some(StopReason::RepeatedCursor));
        prop_assert_eq!(u64::from(outcome.1), at);
    }
}

#[test]
fn gitlab_refuses_a_next_link_to_another_host_scheme_port_or_path() {
    for target in [
        "https://evil.example/api/v4/projects/7/merge_requests?page=2",
        "http://gitlab.example.com/api/v4/projects/7/merge_requests?page=2",
        "https://gitlab.example.com:8443/api/v4/projects/7/merge_requests?page=2",
        "https://gitlab.example.com/api/v4/projects/8/merge_requests?page=2",
        "//evil.example/api/v4/projects/7/merge_requests?page=2",
        "https://user@gitlab.example.com/api/v4/projects/7/merge_requests?page=2",
    ] {
        let h = headers(&[("link", format!("<{target}>; rel=\"next\""))]);
        let mut offset = gitlab::OffsetPager::new(&url(GITLAB), 20, 10);
        offset.record(&h);
        assert_eq!(
            offset.stop_reason(),
            Some(StopReason::ForeignLink),
            "{target}"
        );
        assert_eq!(offset.next_url(), None);
        let mut keyset = gitlab::KeysetPager::new(&url(GITLAB), "id", "asc", 20, 10);
        keyset.record(&h);
        assert_eq!(
            keyset.stop_reason(),
            Some(StopReason::ForeignLink),
            "{target}"
        );
    }
    // A relative link on the same path is followed.
    let h = headers(&[("link", "<?page=2&per_page=20>; rel=\"next\"".to_owned())]);
    let mut offset = gitlab::OffsetPager::new(&url(GITLAB), 20, 10);
    offset.record(&h);
    assert_eq!(offset.stop_reason(), None);
    assert_eq!(offset.next_url().and_then(|u| query(&u, "page")), Some(2));
}

#[test]
fn gitlab_offset_reads_x_next_page_and_never_the_totals() {
    let mut pager = gitlab::OffsetPager::new(&url(GITLAB), 500, 10);
    let first = pager.next_url().expect("first");
    assert_eq!(first.query(), Some("state=all&per_page=100&page=1"));
    // Past 10,000 results GitLab drops x-total, x-total-pages and rel="last": still walks on.
    pager.record(&headers(&[
        ("x-next-page", "2".into()),
        ("x-page", "1".into()),
    ]));
    assert_eq!(pager.next_url().and_then(|u| query(&u, "page")), Some(2));
    // A page jump would skip items; garbage is unreadable.
    for (bad, why) in [("4", StopReason::Malformed), ("two", StopReason::Malformed)] {
        let mut p = pager.clone();
        p.record(&headers(&[("x-next-page", bad.into())]));
        assert_eq!(p.stop_reason(), Some(why), "{bad}");
    }
    // x-total saying "more" does not outweigh an empty x-next-page.
    pager.record(&headers(&[
        ("x-next-page", String::new()),
        ("x-total", "99999".into()),
        ("x-total-pages", "1000".into()),
    ]));
    assert_eq!(pager.stop_reason(), Some(StopReason::LastPage));
    assert_eq!(pager.next_url(), None);
}

// ---------------------------------------------------------------------------------------------
// Jira

const JIRA_JQL: &str = "https://acme.atlassian.net/rest/api/3/search/jql?jql=project%3DX&fields=id";

/// An opaque token for offset `at` (not guessable from the offset alone).
fn jira_token(at: u64, salt: u64) -> String {
    format!("eyJ{:x}", (at ^ salt).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// `search/jql`'s answer: issues from the token's offset, `nextPageToken` while more remain,
/// and at the end no token (absent or null) and `isLast` (present or not).
fn jira_token_answer(token: Option<&str>, n: u64, k: u64, salt: u64, style: u8) -> Value {
    let start = match token {
        None => 0,
        Some(t) => (0..=n)
            .step_by(usize::try_from(k).expect("small"))
            .find(|at| jira_token(*at, salt) == t)
            .expect("a token the model issued"),
    };
    let end = n.min(start + k);
    let issues: Vec<Value> = (start..end)
        .map(|id| json!({ "id": id.to_string() }))
        .collect();
    let mut page = json!({ "issues": issues });
    if end < n {
        page["nextPageToken"] = json!(jira_token(end, salt));
        if style & 1 == 1 {
            page["isLast"] = json!(false);
        }
    } else {
        if style & 2 == 2 {
            page["nextPageToken"] = Value::Null;
        }
        if style & 1 == 1 {
            page["isLast"] = json!(true);
        }
    }
    page
}

fn jira_ids(page: &Value, key: &str) -> Vec<u64> {
    page[key]
        .as_array()
        .expect("array")
        .iter()
        .map(|i| i["id"].as_str().and_then(|s| s.parse().ok()).expect("id"))
        .collect()
}

fn walk_jira_token(pager: &mut jira::TokenPager, mut answer: impl FnMut(&Url) -> Value) -> Outcome {
    let mut items = Vec::new();
    for _ in 0..RUNAWAY {
        let Some(next) = pager.next_url() else { break };
        let page = answer(&next);
        items.extend(jira_ids(&page, "issues"));
        pager.record(&page);
    }
    (items, pager.pages_fetched(), pager.stop_reason())
}

fn token_of(url: &Url) -> Option<String> {
    url.query_pairs()
        .find(|(k, _)| k == "nextPageToken")
        .map(|(_, v)| v.into_owned())
}

/// An agile/comments-style answer to `startAt`/`maxResults`: the server lowers `maxResults`
/// to `server_max` and sends `total`, `isLast`, both or neither.
fn jira_start_at_answer(url: &Url, n: u64, server_max: u64, style: u8) -> Value {
    let start = query(url, "startAt").unwrap_or(0);
    let max = query(url, "maxResults").unwrap_or(50).min(server_max);
    let end = n.min(start + max);
    let values: Vec<Value> = (start..end)
        .map(|id| json!({ "id": id.to_string() }))
        .collect();
    let mut page = json!({ "startAt": start, "maxResults": max, "values": values });
    if style & 1 == 1 {
        page["total"] = json!(n);
    }
    if style & 2 == 2 {
        page["isLast"] = json!(end >= n);
    }
    page
}

fn walk_jira_start_at(
    pager: &mut jira::StartAtPager,
    mut answer: impl FnMut(&Url) -> Value,
) -> Outcome {
    let mut items = Vec::new();
    for _ in 0..RUNAWAY {
        let Some(next) = pager.next_url() else { break };
        let page = answer(&next);
        items.extend(jira_ids(&page, "values"));
        pager.record(&page);
    }
    (items, pager.pages_fetched(), pager.stop_reason())
}

proptest! {
    /// `nextPageToken` walks every issue once in ⌈N/k⌉ pages, whatever shape the last page's
    /// end takes (token absent or null, `isLast` or not).
    #[test]
    fn jira_token_visits_every_issue_once_in_order(
        n in 0u64..600, k in 1u64..=100, cap in 0u32..40, salt in any::<u64>(), style in 0u8..4
    ) {
        let mut pager = jira::TokenPager::new(url(JIRA_JQL), cap);
        let outcome = walk_jira_token(&mut pager, |u| {
            jira_token_answer(token_of(u).as_deref(), n, k, salt, style)
        });
        assert_walk(&outcome, n, k, cap);
    }

    /// A token the walk already followed, served again at any page, stops it as a loop.
    #[test]
    fn jira_token_stops_when_a_token_repeats(at in 1u64..15, salt in any::<u64>()) {
        let mut pager = jira::TokenPager::new(url(JIRA_JQL), 100);
        let outcome = walk_jira_token(&mut pager, |u| {
            let mut page = jira_token_answer(token_of(u).as_deref(), 10_000, 10, salt, 1);
            if token_of(u).as_deref() == Some(jira_token(at * 10, salt).as_str()) {
                page["nextPageToken"] = json!(jira_token(10, salt));
            }
            page
        });
        prop_assert_eq!(outcome.2, Some(StopReason::RepeatedCursor));
        prop_assert_eq!(u64::from(outcome.1), at + 1);
    }

    /// `startAt` advances by the items served, so a server that lowers `maxResults` (agile caps
    /// it at 50) loses nothing; the walk ends on `isLast`, on `total`, or on a short or empty
    /// page when the answer has neither.
    #[test]
    fn jira_start_at_visits_every_item_once_even_when_the_server_lowers_max_results(
        n in 0u64..600, asked in 1u32..=200, server_max in 1u64..=100, cap in 1u32..40,
        style in 0u8..4
    ) {
        let k = u64::from(asked).min(server_max);
        let mut pager = jira::StartAtPager::new(
            url("https://acme.atlassian.net/rest/agile/1.0/board/4/sprint?state=active"),
            "values", asked, cap,
        );
        let outcome = walk_jira_start_at(&mut pager, |u| jira_start_at_answer(u, n, server_max, style));
        if style != 0 {
            assert_walk(&outcome, n, k, cap);
        } else {
            // Neither: a short page ends it; a full last page needs one empty page more.
            let (pages, stop) = if n.is_multiple_of(k) {
                (n / k + 1, StopReason::LastPage)
            } else {
                (n.div_ceil(k), StopReason::ShortPage)
            };
            let pages = u32::try_from(pages).expect("small");
            let (pages, stop) = if cap >= pages { (pages, stop) } else { (cap, StopReason::PageCap) };
            prop_assert_eq!((outcome.1, outcome.2), (pages, Some(stop)));
            let seen = n.min(u64::from(pages) * k);
            prop_assert_eq!(&outcome.0, &(0..seen).collect::<Vec<_>>());
        }
    }
}

#[test]
fn jira_token_pager_carries_the_token_for_a_post_body_and_refuses_contradictions() {
    let mut pager = jira::TokenPager::new(url(JIRA_JQL), 10);
    assert!(pager.has_next());
    assert_eq!(pager.token(), None, "the first page carries no token");
    pager.record(&json!({ "issues": [], "nextPageToken": "CAEaAggD", "isLast": false }));
    assert_eq!(pager.token(), Some("CAEaAggD"));
    let next = pager.next_url().expect("next");
    assert_eq!(token_of(&next).as_deref(), Some("CAEaAggD"));
    assert!(next.as_str().contains("jql=project%3DX"), "{next}");
    // isLast wins over a stray token.
    let mut last = pager.clone();
    last.record(&json!({ "issues": [], "nextPageToken": "zzz", "isLast": true }));
    assert_eq!(last.stop_reason(), Some(StopReason::LastPage));
    assert!(!last.has_next());
    for bad in [
        json!({ "issues": [], "isLast": false }),
        json!({ "issues": [], "nextPageToken": 7 }),
        json!({ "issues": [], "nextPageToken": "a", "isLast": "no" }),
        json!(["not", "a", "page"]),
    ] {
        let mut p = pager.clone();
        p.record(&bad);
        assert_eq!(p.stop_reason(), Some(StopReason::Malformed), "{bad}");
    }
}

#[test]
fn jira_start_at_stops_when_the_server_ignores_start_at() {
    let base = url("https://acme.atlassian.net/rest/api/3/issue/X-1/comment?orderBy=created");
    let mut pager = jira::StartAtPager::new(base, "comments", 2, 50);
    let outcome = {
        let mut items = Vec::new();
        while let Some(next) = pager.next_url() {
            assert!(next.as_str().contains("orderBy=created"));
            // Always the first page, as if startAt were not understood.
            let page = json!({ "startAt": 0, "maxResults": 2, "total": 9,
                "comments": [{ "id": "0" }, { "id": "1" }] });
            items.extend(jira_ids(&page, "comments"));
            pager.record(&page);
        }
        (items, pager.pages_fetched(), pager.stop_reason())
    };
    assert_eq!(outcome.2, Some(StopReason::RepeatedCursor));
    assert_eq!(outcome.1, 2);
    // A page without its items array is unreadable.
    let mut pager = jira::StartAtPager::new(
        url("https://acme.atlassian.net/rest/api/3/project/search"),
        "values",
        50,
        5,
    );
    pager.record(&json!({ "startAt": 0, "total": 3 }));
    assert_eq!(pager.stop_reason(), Some(StopReason::Malformed));
}

// ---------------------------------------------------------------------------------------------
// Linear

/// Linear's answer to `issues(first: k, after: $after)` over `n` issues: opaque cursors,
/// `hasNextPage`, and at the end an `endCursor` of the last node (null on an empty page).
fn linear_answer(variables: &Value, n: u64, salt: u64) -> Value {
    let k = variables["first"].as_u64().expect("first");
    let start = match variables["after"].as_str() {
        None => 0,
        Some(c) => {
            let at: u64 = c
                .strip_prefix(&format!("{salt:x}-"))
                .and_then(|s| s.parse().ok())
                .expect("issued");
            at + 1
        }
    };
    let end = n.min(start + k);
    let nodes: Vec<Value> = (start..end)
        .map(|i| json!({ "id": i.to_string() }))
        .collect();
    let end_cursor = if end > start {
        json!(format!("{salt:x}-{}", end - 1))
    } else {
        Value::Null
    };
    json!({ "data": { "team": { "issues": {
        "nodes": nodes,
        "pageInfo": { "hasNextPage": end < n, "endCursor": end_cursor, "hasPreviousPage": start > 0 }
    } } } })
}

fn walk_linear(pager: &mut linear::RelayPager, mut answer: impl FnMut(&Value) -> Value) -> Outcome {
    let mut items = Vec::new();
    for _ in 0..RUNAWAY {
        let Some(variables) = pager.next_variables() else {
            break;
        };
        let body = answer(&variables);
        items.extend(pager.nodes(&body).iter().map(|n| {
            n["id"]
                .as_str()
                .and_then(|s| s.parse::<u64>().ok())
                .expect("id")
        }));
        pager.record(&body);
    }
    (items, pager.pages_fetched(), pager.stop_reason())
}

proptest! {
    /// `after = endCursor` walks every node once in ⌈N/k⌉ pages, ending on `hasNextPage: false`;
    /// the other variables ride along unchanged.
    #[test]
    fn linear_relay_visits_every_node_once_in_order(
        n in 0u64..600, k in 1u64..=250, cap in 0u32..40, salt in any::<u64>()
    ) {
        let vars = json!({ "team": "ENG", "first": k, "after": "stale" });
        let mut pager = linear::RelayPager::new(vars, "/data/team/issues", cap);
        if cap > 0 {
            let first = pager.next_variables().expect("first");
            prop_assert_eq!(&first["after"], &Value::Null);
            prop_assert_eq!(&first["team"], &json!("ENG"));
        }
        let outcome = walk_linear(&mut pager, |v| linear_answer(v, n, salt));
        assert_walk(&outcome, n, k, cap);
    }

    /// An `endCursor` already followed, served again at any page, stops the walk as a loop.
    #[test]
    fn linear_relay_stops_when_an_end_cursor_repeats(at in 1u64..15, salt in any::<u64>()) {
        let mut pager = linear::RelayPager::new(json!({ "first": 10 }), "/data/team/issues", 100);
        let outcome = walk_linear(&mut pager, |v| {
            let mut body = linear_answer(v, 10_000, salt);
            if v["after"].as_str() == Some(format!("{salt:x}-{}", at * 10 - 1).as_str()) {
                body["data"]["team"]["issues"]["pageInfo"]["endCursor"] = json!(format!("{salt:x}-9"));
            }
            body
        });
        prop_assert_eq!(outcome.2, Some(StopReason::RepeatedCursor));
        prop_assert_eq!(u64::from(outcome.1), at + 1);
    }
}

#[test]
fn linear_relay_refuses_more_without_an_end_cursor_and_a_missing_page_info() {
    for body in [
        json!({ "data": { "issues": { "nodes": [], "pageInfo": { "hasNextPage": true } } } }),
        json!({ "data": { "issues": { "nodes": [], "pageInfo": { "hasNextPage": true, "endCursor": null } } } }),
        json!({ "data": { "issues": { "nodes": [], "pageInfo": { "hasNextPage": true, "endCursor": "" } } } }),
        json!({ "data": { "issues": { "nodes": [] } } }),
        json!({ "data": { "issues": { "pageInfo": { "hasNextPage": "yes", "endCursor": "a" } } } }),
        json!({ "data": null, "errors": [{ "message": "boom" }] }),
    ] {
        let mut pager = linear::RelayPager::new(json!({ "first": 5 }), "/data/issues", 10);
        pager.record(&body);
        assert_eq!(pager.stop_reason(), Some(StopReason::Malformed), "{body}");
        assert_eq!(pager.next_variables(), None);
    }
    // Edges are read when nodes are not asked for; a renamed cursor variable is honoured.
    let body = json!({ "data": { "issues": {
        "edges": [{ "node": { "id": "a" } }, { "node": { "id": "b" } }],
        "pageInfo": { "hasNextPage": true, "endCursor": "b" } } } });
    let mut pager = linear::RelayPager::new(json!({ "first": 2 }), "/data/issues", 10)
        .with_after_variable("cursor");
    assert_eq!(pager.nodes(&body).len(), 2);
    pager.record(&body);
    assert_eq!(pager.after(), Some("b"));
    assert_eq!(pager.next_variables().expect("next")["cursor"], json!("b"));
}

// ---------------------------------------------------------------------------------------------
// LaunchDarkly

const LD: &str = "https://app.launchdarkly.com/api/v2/flags/proj?limit=20&summary=0";

/// LaunchDarkly's answer to `?limit&offset` over `n` flags: `items`, `totalCount`, and
/// `_links` whose `next` (relative or absolute) is absent on the last page.
fn launchdarkly_answer(url: &Url, n: u64, absolute: bool) -> Value {
    let limit = query(url, "limit").unwrap_or(20);
    let offset = query(url, "offset").unwrap_or(0);
    let end = n.min(offset + limit);
    let items: Vec<Value> = (offset..end)
        .map(|i| json!({ "key": format!("flag-{i}"), "n": i }))
        .collect();
    let href = |off: u64| {
        let rel = format!("/api/v2/flags/proj?limit={limit}&offset={off}&summary=0");
        if absolute {
            format!("https://app.launchdarkly.com{rel}")
        } else {
            rel
        }
    };
    let mut links = json!({ "self": { "href": href(offset), "type": "application/json" },
        "first": { "href": href(0), "type": "application/json" } });
    if end < n {
        links["next"] = json!({ "href": href(end), "type": "application/json" });
    }
    json!({ "items": items, "_links": links, "totalCount": n })
}

fn walk_launchdarkly(
    pager: &mut launchdarkly::LinksPager,
    mut answer: impl FnMut(&Url) -> Value,
) -> Outcome {
    let mut items = Vec::new();
    for _ in 0..RUNAWAY {
        let Some(next) = pager.next_url() else { break };
        let body = answer(&next);
        items.extend(
            launchdarkly::LinksPager::items(&body)
                .iter()
                .map(|i| i["n"].as_u64().expect("n")),
        );
        pager.record(&body);
    }
    (items, pager.pages_fetched(), pager.stop_reason())
}

proptest! {
    /// `_links.next.href`, relative or absolute, walks every flag once in ⌈N/limit⌉ pages.
    #[test]
    fn launchdarkly_links_visit_every_item_once_in_order(
        n in 0u64..600, limit in 1u64..=100, cap in 0u32..40, absolute in any::<bool>()
    ) {
        let first = url(&format!("https://app.launchdarkly.com/api/v2/flags/proj?limit={limit}&summary=0"));
        let mut pager = launchdarkly::LinksPager::new(first, cap);
        let outcome = walk_launchdarkly(&mut pager, |u| launchdarkly_answer(u, n, absolute));
        assert_walk(&outcome, n, limit, cap);
    }

    /// A `next` pointing back at a page already fetched stops the walk as a loop.
    #[test]
    fn launchdarkly_stops_when_the_next_link_repeats(at in 1u64..15, back in 1u64..15) {
        let mut pager = launchdarkly::LinksPager::new(url(LD), 100);
        let outcome = walk_launchdarkly(&mut pager, |u| {
            let mut body = launchdarkly_answer(u, 10_000, false);
            if query(u, "offset").unwrap_or(0) == at * 20 {
                let again = at.saturating_sub(back).max(1) * 20;
                body["_links"]["next"]["href"] =
                    json!(format!("/api/v2/flags/proj?limit=20&offset={again}&summary=0"));
            }
            body
        });
        prop_assert_eq!(outcome.2, Some(StopReason::RepeatedCursor));
        prop_assert_eq!(u64::from(outcome.1), at + 1);
    }
}

#[test]
fn launchdarkly_refuses_a_next_link_that_leaves_the_host_or_path() {
    for href in [
        "https://evil.example/api/v2/flags/proj?offset=20",
        "//evil.example/api/v2/flags/proj?offset=20",
        "http://app.launchdarkly.com/api/v2/flags/proj?offset=20",
        "/api/v2/members?offset=20",
        "../members?offset=20",
    ] {
        let mut pager = launchdarkly::LinksPager::new(url(LD), 10);
        pager.record(&json!({ "items": [], "_links": { "next": { "href": href } } }));
        assert_eq!(pager.stop_reason(), Some(StopReason::ForeignLink), "{href}");
        assert_eq!(pager.next_url(), None);
    }
    for bad in [
        json!({ "_links": {} }),
        json!({ "items": [], "_links": { "next": {} } }),
        json!({ "items": [], "_links": { "next": { "href": 20 } } }),
        json!({ "items": [], "_links": "next" }),
    ] {
        let mut pager = launchdarkly::LinksPager::new(url(LD), 10);
        pager.record(&bad);
        assert_eq!(pager.stop_reason(), Some(StopReason::Malformed), "{bad}");
    }
    // An unpaginated collection (code references) has no `next`: one page, the end.
    let mut pager = launchdarkly::LinksPager::new(url(LD), 10);
    pager.record(&json!({ "items": [{ "n": 0 }], "_links": { "self": { "href": "/x" } } }));
    assert_eq!(pager.stop_reason(), Some(StopReason::LastPage));
}
