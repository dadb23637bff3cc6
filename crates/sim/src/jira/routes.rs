//! The platform REST v3 endpoints a collector calls: `/myself`, the fields (`/field`), project search, JQL search
//! (`/search/jql`, and the removed `/search` answering 410), an issue's changelog, comments
//! and worklogs, and the bulk changelog. Each answer is a page as the published description
//! shapes it; the number returned alongside is the issues or projects it holds (the app
//! points they cost).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{Method, StatusCode};
use serde_json::{Map, Value, json};

use super::jql;
use super::model::Site;
use super::render;
use super::{JCtx, errors};
use crate::sim::Reply;

/// What the removed `/search` answers (CHANGE-2046).
pub(crate) const SEARCH_GONE: &str = "The requested API has been removed. Please migrate to the /rest/api/3/search/jql API. A full migration guideline is available at https://developer.atlassian.com/changelog/#CHANGE-2046";

/// Dispatches a platform request: the reply and the core objects it returned.
pub(crate) fn route(ctx: &JCtx, site: &Site, seg: &[&str]) -> (Reply, u64) {
    let get = ctx.method == Method::GET;
    let post = ctx.method == Method::POST;
    match seg {
        ["myself"] if get => (
            ok(&render::myself(&ctx.base, site, &site.users[ctx.user])),
            0,
        ),
        ["field"] if get => (ok(&render::field_list(site)), 0),
        ["project", "search"] if get => project_search(ctx, site),
        ["search", "jql"] if get || post => search(ctx, site),
        ["search", "approximate-count"] if post => (approximate_count(ctx, site), 0),
        ["search"] if get || post => (errors(StatusCode::GONE, SEARCH_GONE), 0),
        ["issue", key, "changelog"] if get => (changelog(ctx, site, key), 0),
        ["issue", key, "comment"] if get => (comments(ctx, site, key), 0),
        ["issue", key, "worklog"] if get => (worklogs(ctx, site, key), 0),
        ["changelog", "bulkfetch"] if post => (bulk_changelog(ctx, site), 0),
        _ => (not_found(), 0),
    }
}

fn ok(v: &Value) -> Reply {
    Reply::json(StatusCode::OK, v)
}

pub(crate) fn not_found() -> Reply {
    errors(
        StatusCode::NOT_FOUND,
        "The requested resource could not be found.",
    )
}

fn issue_not_found() -> Reply {
    errors(
        StatusCode::NOT_FOUND,
        "Issue does not exist or you do not have permission to see it.",
    )
}

/// `startAt` and `maxResults` of an offset page: the default size, lowered to `cap`.
pub(crate) fn offset_page(ctx: &JCtx, default: usize, cap: usize) -> Result<(usize, usize), Reply> {
    let num = |name: &str| -> Result<Option<i64>, Reply> {
        match ctx.param(name) {
            None => Ok(None),
            Some(v) => v.parse::<i64>().map(Some).map_err(|_| {
                errors(
                    StatusCode::BAD_REQUEST,
                    &format!("The '{name}' parameter must be a number."),
                )
            }),
        }
    };
    let start = num("startAt")?.unwrap_or(0).max(0) as usize;
    let max = match num("maxResults")? {
        Some(n) if n >= 0 => (n as usize).min(cap),
        Some(_) => default.min(cap),
        None => default.min(cap),
    };
    Ok((start, max))
}

/// An offset page's common fields (`isLast` only where the description has it).
fn page(start: usize, max: usize, total: usize, with_is_last: bool) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("startAt".into(), json!(start));
    m.insert("maxResults".into(), json!(max));
    m.insert("total".into(), json!(total));
    if with_is_last {
        m.insert("isLast".into(), json!(start.saturating_add(max) >= total));
    }
    m
}

fn project_search(ctx: &JCtx, site: &Site) -> (Reply, u64) {
    let (start, max) = match offset_page(ctx, 50, 100) {
        Ok(p) => p,
        Err(r) => return (r, 0),
    };
    let visible: Vec<_> = site.projects.iter().filter(|p| !p.restricted).collect();
    let values: Vec<Value> = visible
        .iter()
        .skip(start)
        .take(max)
        .map(|p| render::project(&ctx.base, p))
        .collect();
    let n = values.len() as u64;
    let mut m = page(start, max, visible.len(), true);
    let this = format!(
        "{}/rest/api/3/project/search?startAt={start}&maxResults={max}",
        ctx.base
    );
    m.insert("self".into(), json!(this));
    if start + max < visible.len() {
        let next = format!(
            "{}/rest/api/3/project/search?startAt={}&maxResults={max}",
            ctx.base,
            start + max
        );
        m.insert("nextPage".into(), json!(next));
    }
    m.insert("values".into(), Value::Array(values));
    (ok(&Value::Object(m)), n)
}

/// FNV-1a of the JQL, tying a page token to its search.
fn fingerprint(jql: &str) -> u64 {
    jql.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn token(offset: usize, tie: u64) -> String {
    URL_SAFE_NO_PAD.encode(format!("{offset}.{tie:016x}"))
}

fn untoken(t: &str, tie: u64) -> Option<usize> {
    let text = String::from_utf8(URL_SAFE_NO_PAD.decode(t).ok()?).ok()?;
    let (offset, h) = text.split_once('.')?;
    (u64::from_str_radix(h, 16).ok()? == tie).then_some(())?;
    offset.parse().ok()
}

/// The fields asked for: every list item may itself be comma-separated; `*all` and
/// `*navigable` expand, `-name` removes, unknown names are ignored as Jira does.
fn asked_fields<'s>(site: &'s Site, items: &[String]) -> Vec<&'s str> {
    let all = render::fields(site);
    let mut out: Vec<&str> = Vec::new();
    let mut removed: Vec<String> = Vec::new();
    for name in items.iter().flat_map(|i| i.split(',')).map(str::trim) {
        match name {
            "*all" => out.extend(&all),
            "*navigable" => out.extend(all.iter().filter(|f| **f != "comment")),
            n if n.starts_with('-') => removed.push(n[1..].to_owned()),
            n => out.extend(all.iter().find(|f| **f == n)),
        }
    }
    out.retain(|f| !removed.iter().any(|r| r == f));
    let mut seen = Vec::new();
    out.retain(|f| {
        let new = !seen.contains(f);
        seen.push(*f);
        new
    });
    out
}

/// `POST /search/approximate-count`: how many issues the (bounded) JQL matches among those
/// the caller may browse. The simulator's count is exact.
fn approximate_count(ctx: &JCtx, site: &Site) -> Reply {
    let jql_text = ctx.param("jql").unwrap_or_default();
    let query = match jql::parse(&jql_text, site, ctx.user, &site.tz, ctx.now) {
        Ok(q) => q,
        Err(m) => return errors(StatusCode::BAD_REQUEST, &m),
    };
    let count = site
        .issues
        .iter()
        .filter(|issue| !site.projects[issue.project].restricted)
        .filter(|issue| query.matches(site, issue))
        .count();
    ok(&json!({ "count": count }))
}

/// `POST|GET /search/jql`: a page of the matching issues the caller may browse.
fn search(ctx: &JCtx, site: &Site) -> (Reply, u64) {
    let bad = |m: &str| (errors(StatusCode::BAD_REQUEST, m), 0);
    let jql_text = ctx.param("jql").unwrap_or_default();
    let query = match jql::parse(&jql_text, site, ctx.user, &site.tz, ctx.now) {
        Ok(q) => q,
        Err(m) => return bad(&m),
    };
    let field_items = ctx.list_param("fields");
    let fields = asked_fields(site, &field_items);
    let ids_only = field_items
        .iter()
        .flat_map(|i| i.split(','))
        .all(|f| matches!(f.trim(), "id" | "key" | ""));
    let cap = if ids_only {
        5_000
    } else {
        site.spec.limits.search_max_results
    };
    let max = match ctx.param("maxResults").map(|v| v.parse::<i64>()) {
        None => 50,
        Some(Ok(n)) if n >= 0 => n as usize,
        Some(_) => return bad("The 'maxResults' parameter must be a non-negative number."),
    }
    .clamp(1, cap);
    let tie = fingerprint(&jql_text);
    let start = match ctx.param("nextPageToken") {
        None => 0,
        Some(t) => match untoken(&t, tie) {
            Some(o) => o,
            None => return bad("The provided next page token is invalid or expired."),
        },
    };
    let mut hits: Vec<usize> = (0..site.issues.len())
        .filter(|&i| !site.projects[site.issues[i].project].restricted)
        .filter(|&i| query.matches(site, &site.issues[i]))
        .collect();
    hits.sort_by(|&a, &b| query.compare(site, &site.issues[a], &site.issues[b]));
    let with_key = field_items
        .iter()
        .flat_map(|i| i.split(','))
        .any(|f| f.trim() == "key");
    let issues: Vec<Value> = hits
        .iter()
        .skip(start)
        .take(max)
        .map(|&i| issue_json(ctx, site, i, &fields, with_key))
        .collect();
    let n = issues.len() as u64;
    let mut m = Map::new();
    m.insert("issues".into(), Value::Array(issues));
    let last = start + max >= hits.len();
    if !last {
        m.insert("nextPageToken".into(), json!(token(start + max, tie)));
    }
    m.insert("isLast".into(), json!(last));
    (ok(&Value::Object(m)), n)
}

fn issue_json(ctx: &JCtx, site: &Site, i: usize, fields: &[&str], with_key: bool) -> Value {
    let issue = &site.issues[i];
    let mut m = Map::new();
    m.insert("id".into(), json!(issue.id.to_string()));
    if fields.is_empty() && !with_key {
        return Value::Object(m);
    }
    m.insert(
        "expand".into(),
        json!("renderedFields,names,schema,operations,editmeta,changelog,versionedRepresentations"),
    );
    m.insert(
        "self".into(),
        json!(format!("{}/rest/api/3/issue/{}", ctx.base, issue.id)),
    );
    m.insert("key".into(), json!(issue.key));
    let mut f = Map::new();
    for name in fields {
        if let Some(v) = render::field(&ctx.base, site, issue, name) {
            f.insert((*name).to_owned(), v);
        }
    }
    m.insert("fields".into(), Value::Object(f));
    Value::Object(m)
}

/// `GET /issue/{key}/changelog`: oldest first.
fn changelog(ctx: &JCtx, site: &Site, key: &str) -> Reply {
    let Some(i) = site.visible_issue(key) else {
        return issue_not_found();
    };
    let (start, max) = match offset_page(ctx, 100, 100) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let issue = &site.issues[i];
    let values: Vec<Value> = issue
        .changelog
        .iter()
        .skip(start)
        .take(max)
        .map(|h| render::history(&ctx.base, site, h))
        .collect();
    let total = issue.changelog.len();
    let mut m = page(start, max, total, true);
    let url = |s: usize| {
        format!(
            "{}/rest/api/3/issue/{}/changelog?maxResults={max}&startAt={s}",
            ctx.base, issue.key
        )
    };
    m.insert("self".into(), json!(url(start)));
    if start + max < total {
        m.insert("nextPage".into(), json!(url(start + max)));
    }
    m.insert("values".into(), Value::Array(values));
    ok(&Value::Object(m))
}

/// `GET /issue/{key}/comment`: by creation, oldest first unless `orderBy=-created`.
fn comments(ctx: &JCtx, site: &Site, key: &str) -> Reply {
    let Some(i) = site.visible_issue(key) else {
        return issue_not_found();
    };
    let desc = match ctx.param("orderBy").as_deref() {
        None | Some("created") | Some("+created") => false,
        Some("-created") => true,
        Some(other) => {
            let m = format!("Invalid orderBy value '{other}': only 'created' is supported.");
            return errors(StatusCode::BAD_REQUEST, &m);
        }
    };
    let (start, max) = match offset_page(ctx, 100, 5_000) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let issue = &site.issues[i];
    let mut list: Vec<_> = issue.comments.iter().collect();
    if desc {
        list.reverse();
    }
    let values: Vec<Value> = list
        .iter()
        .skip(start)
        .take(max)
        .map(|c| render::comment(&ctx.base, site, issue, c))
        .collect();
    let mut m = page(start, max, issue.comments.len(), false);
    m.insert("comments".into(), Value::Array(values));
    ok(&Value::Object(m))
}

/// `GET /issue/{key}/worklog`, optionally within `startedAfter`/`startedBefore` (epoch ms).
fn worklogs(ctx: &JCtx, site: &Site, key: &str) -> Reply {
    let Some(i) = site.visible_issue(key) else {
        return issue_not_found();
    };
    let (start, max) = match offset_page(ctx, 5_000, 5_000) {
        Ok(p) => p,
        Err(_) => return issue_not_found(),
    };
    let bound = |name: &str| ctx.param(name).and_then(|v| v.parse::<i64>().ok());
    let (after, before) = (bound("startedAfter"), bound("startedBefore"));
    let issue = &site.issues[i];
    let list: Vec<_> = issue
        .worklogs
        .iter()
        .filter(|w| after.is_none_or(|a| w.started.as_millisecond() >= a))
        .filter(|w| before.is_none_or(|b| w.started.as_millisecond() <= b))
        .collect();
    let values: Vec<Value> = list
        .iter()
        .skip(start)
        .take(max)
        .map(|w| render::worklog(&ctx.base, site, issue, w))
        .collect();
    let mut m = page(start, max, list.len(), false);
    m.insert("worklogs".into(), Value::Array(values));
    ok(&Value::Object(m))
}

/// `POST /changelog/bulkfetch`: the changelogs of up to 1,000 issues, `maxResults`
/// histories a page (default 1,000, at most 10,000), issues the caller cannot see left out.
fn bulk_changelog(ctx: &JCtx, site: &Site) -> Reply {
    let bad = |m: &str| errors(StatusCode::BAD_REQUEST, m);
    let keys = ctx.list_param("issueIdsOrKeys");
    if keys.is_empty() {
        return bad("At least one issue ID or key must be provided.");
    }
    if keys.len() > 1_000 {
        return bad("The number of issue IDs or keys must not exceed 1000.");
    }
    let field_ids = ctx.list_param("fieldIds");
    if field_ids.len() > 10 {
        return bad("The number of field IDs must not exceed 10.");
    }
    let max = match ctx.param("maxResults").map(|v| v.parse::<i64>()) {
        None => 1_000,
        Some(Ok(n)) if (1..=10_000).contains(&n) => n as usize,
        Some(_) => return bad("maxResults must be between 1 and 10000."),
    };
    let tie = fingerprint(&keys.join(","));
    let start = match ctx.param("nextPageToken") {
        None => 0,
        Some(t) => match untoken(&t, tie) {
            Some(o) => o,
            None => return bad("The provided next page token is invalid or expired."),
        },
    };
    let mut entries: Vec<(usize, usize)> = Vec::new();
    for k in &keys {
        let Some(i) = site.visible_issue(k) else {
            continue;
        };
        for (h, history) in site.issues[i].changelog.iter().enumerate() {
            let wanted = field_ids.is_empty()
                || history
                    .items
                    .iter()
                    .any(|c| field_ids.iter().any(|f| f == c.field_id));
            if wanted {
                entries.push((i, h));
            }
        }
    }
    let mut logs: Vec<(usize, Vec<Value>)> = Vec::new();
    for &(i, h) in entries.iter().skip(start).take(max) {
        let v = render::history(&ctx.base, site, &site.issues[i].changelog[h]);
        match logs.last_mut() {
            Some((last, list)) if *last == i => list.push(v),
            _ => logs.push((i, vec![v])),
        }
    }
    let mut m = Map::new();
    let logs: Vec<Value> = logs
        .into_iter()
        .map(|(i, list)| json!({"issueId": site.issues[i].id.to_string(), "changeHistories": list}))
        .collect();
    m.insert("issueChangeLogs".into(), Value::Array(logs));
    if start + max < entries.len() {
        m.insert("nextPageToken".into(), json!(token(start + max, tie)));
    }
    ok(&Value::Object(m))
}
