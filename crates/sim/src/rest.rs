//! REST routes: reads with Link pagination, and the Git provider contract's mutations.

use std::collections::{BTreeMap, HashSet};

use http::{Method, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::feed::{self, FeedPage};
use crate::render;
use crate::scenario::Scenario;
use crate::sim::{Ctx, Reply, Simulator, lock, stamp};
use crate::world::{BranchRec, CommitRec, FileRec, IssueRec, PullRec, RepoContent, RepoRec, World};

mod git;

const DOC: &str = "https://docs.github.com/rest";
/// Query components keep RFC 3986's unreserved characters.
const QUERY: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');
/// Where a hostile redirect points: looks like GitHub, is not.
pub const HOSTILE_HOST: &str = "https://api.github.com.evil.invalid";

enum RepoSel<'a> {
    Name(&'a str, &'a str),
    Id(&'a str),
}

pub(super) fn validation_failed(errors: Value) -> Reply {
    Reply::json(
        StatusCode::UNPROCESSABLE_ENTITY,
        &json!({"message": "Validation Failed", "errors": errors, "documentation_url": DOC, "status": "422"}),
    )
}

pub(super) fn invalid_request(field: &str) -> Reply {
    Reply::message(
        StatusCode::UNPROCESSABLE_ENTITY,
        &format!("Invalid request.\n\n\"{field}\" wasn't supplied."),
        DOC,
    )
}

pub(super) fn requires_auth() -> Reply {
    Reply::message(StatusCode::UNAUTHORIZED, "Requires authentication", DOC)
}

fn hex(bytes: &[u8], n: usize) -> String {
    bytes
        .iter()
        .take(n / 2)
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub(super) fn sha_of(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    hex(&h.finalize(), 40)
}

/// `page` and `per_page` (default 30, at most 100).
fn page_params(ctx: &Ctx) -> (u64, usize) {
    let page = ctx
        .param("page")
        .and_then(|p| p.parse::<u64>().ok())
        .filter(|&p| p >= 1)
        .unwrap_or(1)
        // No list is that long; keeps page arithmetic far from overflow.
        .min(1_000_000);
    let per_page = ctx
        .param("per_page")
        .and_then(|p| p.parse::<usize>().ok())
        .filter(|&p| p >= 1)
        .map(|p| p.min(100))
        .unwrap_or(30);
    (page, per_page)
}

/// An RFC 8288 Link header. The order of rels varies from page to page, as GitHub's does.
fn link_header(ctx: &Ctx, path: &str, page: u64, last: u64, has_next: bool) -> Option<String> {
    let others: Vec<String> = ctx
        .query
        .iter()
        .filter(|(k, _)| k != "page")
        .map(|(k, v)| {
            format!(
                "{}={}",
                percent_encoding::utf8_percent_encode(k, QUERY),
                percent_encoding::utf8_percent_encode(v, QUERY)
            )
        })
        .collect();
    let url = |n: u64| {
        let mut q = others.clone();
        q.push(format!("page={n}"));
        format!("<{}{}?{}>", ctx.base, path, q.join("&"))
    };
    let mut rels: Vec<String> = Vec::new();
    if page > 1 {
        rels.push(format!("{}; rel=\"prev\"", url(page - 1)));
    }
    if has_next {
        rels.push(format!("{}; rel=\"next\"", url(page + 1)));
        rels.push(format!("{}; rel=\"last\"", url(last.max(page + 1))));
    }
    if page > 1 {
        rels.push(format!("{}; rel=\"first\"", url(1)));
    }
    if rels.is_empty() {
        return None;
    }
    if page.is_multiple_of(2) {
        rels.reverse();
    }
    if page.is_multiple_of(3) {
        rels.rotate_left(1);
    }
    Some(rels.join(", "))
}

/// The page's items, rendered: only the page is rendered, since a full REST object costs
/// far more than the record it comes from.
fn slice_page<T>(
    items: &[T],
    page: u64,
    per_page: usize,
    render: impl Fn(&T) -> Value,
) -> (Vec<Value>, u64, bool) {
    let total = items.len();
    let last = total.div_ceil(per_page).max(1) as u64;
    let start = ((page - 1) as usize).saturating_mul(per_page);
    let page_items: Vec<Value> = items
        .iter()
        .skip(start)
        .take(per_page)
        .map(render)
        .collect();
    (page_items, last, page < last)
}

/// A JSON array page with its Link header; `path` is the path the links use.
fn paged<T>(ctx: &Ctx, items: &[T], path: &str, render: impl Fn(&T) -> Value) -> Reply {
    let (page, per_page) = page_params(ctx);
    let (items, last, has_next) = slice_page(items, page, per_page, render);
    let reply = Reply::ok(&Value::Array(items));
    match link_header(ctx, path, page, last, has_next) {
        Some(l) => reply.header("link", &l),
        None => reply,
    }
}

/// A `{total_count, <key>: [...]}` page with its Link header.
fn paged_wrapped<T>(
    ctx: &Ctx,
    key: &str,
    items: &[T],
    path: &str,
    render: impl Fn(&T) -> Value,
) -> Reply {
    let (page, per_page) = page_params(ctx);
    let total = items.len();
    let (items, last, has_next) = slice_page(items, page, per_page, render);
    let mut body = serde_json::Map::new();
    body.insert("total_count".to_owned(), json!(total));
    body.insert(key.to_owned(), Value::Array(items));
    let reply = Reply::ok(&Value::Object(body));
    match link_header(ctx, path, page, last, has_next) {
        Some(l) => reply.header("link", &l),
        None => reply,
    }
}

pub(super) fn ancestors(c: &RepoContent, sha: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    let mut stack = vec![sha.to_owned()];
    while let Some(s) = stack.pop() {
        if !seen.insert(s.clone()) {
            continue;
        }
        if let Some(commit) = c.commits.get(&s) {
            stack.extend(commit.parents.iter().cloned());
        }
    }
    seen
}

impl Simulator {
    // The error is the response itself, built at most once per request.
    #[allow(clippy::result_large_err)]
    fn body_json(&self, ctx: &Ctx) -> Result<Value, Reply> {
        if ctx.body.is_empty() {
            return Ok(json!({}));
        }
        serde_json::from_slice(&ctx.body)
            .map_err(|_| Reply::message(StatusCode::BAD_REQUEST, "Problems parsing JSON", DOC))
    }

    /// Dispatches a REST request (identity and limits are already settled).
    pub(crate) fn route(&self, ctx: &Ctx) -> Reply {
        let seg: Vec<&str> = ctx.segments.iter().map(String::as_str).collect();
        let m = &ctx.method;
        let get = *m == Method::GET || *m == Method::HEAD;
        match seg.as_slice() {
            ["user"] if get => self.authenticated_user(ctx),
            ["user", "repos"] if *m == Method::POST => self.create_repo(ctx, None),
            ["user", id] if get => {
                let w = lock(&self.inner.world);
                match id.parse::<u64>().ok().and_then(|id| w.user_by_id(id)) {
                    Some(u) if !u.deleted => {
                        let n = w
                            .repos
                            .iter()
                            .filter(|r| r.owner.eq_ignore_ascii_case(&u.login))
                            .count();
                        Reply::ok(&render::user_full(&ctx.base, u, n))
                    }
                    _ => Reply::not_found(),
                }
            }
            ["users", login] if get => {
                let w = lock(&self.inner.world);
                match w.user(login) {
                    Some(u) if !u.deleted => {
                        let n = w
                            .repos
                            .iter()
                            .filter(|r| r.owner.eq_ignore_ascii_case(&u.login))
                            .count();
                        Reply::ok(&render::user_full(&ctx.base, u, n))
                    }
                    _ => Reply::not_found(),
                }
            }
            ["events"] if get => self.events(ctx),
            ["search", kind] if get => self.search(ctx, kind),
            ["orgs", org] if get => {
                let w = lock(&self.inner.world);
                if !w.org.login.eq_ignore_ascii_case(org) {
                    return Reply::not_found();
                }
                let created = w.user(&w.org.login).map_or(ctx.now, |u| u.created_at);
                Reply::ok(&render::org(
                    &ctx.base,
                    &w.org,
                    w.org_repos().len(),
                    created,
                ))
            }
            ["orgs", org, "repos"] if *m == Method::POST => self.create_repo(ctx, Some(org)),
            ["orgs", org, what] if get => {
                let w = lock(&self.inner.world);
                if !w.org.login.eq_ignore_ascii_case(org) {
                    return Reply::not_found();
                }
                let path = format!("/orgs/{}/{what}", w.org.login);
                match *what {
                    "repos" => paged(ctx, &w.org_repos(), &path, |r| {
                        render::repo(&ctx.base, &w, r)
                    }),
                    "members" => {
                        let members: Vec<_> =
                            w.org.members.iter().filter_map(|l| w.user(l)).collect();
                        paged(ctx, &members, &path, |u| render::user_simple(&ctx.base, u))
                    }
                    "teams" => paged(ctx, &w.org.teams, &path, |t| {
                        render::team(&ctx.base, &w.org.login, t)
                    }),
                    _ => Reply::not_found(),
                }
            }
            ["repos", owner, name, rest @ ..] => {
                self.repo_route(ctx, RepoSel::Name(owner, name), rest)
            }
            ["repositories", id, rest @ ..] => self.repo_route(ctx, RepoSel::Id(id), rest),
            _ => Reply::not_found(),
        }
    }

    fn authenticated_user(&self, ctx: &Ctx) -> Reply {
        use crate::quota::Subject;
        match &ctx.subject {
            Subject::User { login, .. } => {
                let w = lock(&self.inner.world);
                match w.user(login) {
                    Some(u) => {
                        let owned = || {
                            w.repos
                                .iter()
                                .filter(|r| r.owner.eq_ignore_ascii_case(login) && !r.deleted)
                        };
                        let public = owned().filter(|r| !r.private).count();
                        let private = owned().filter(|r| r.private).count();
                        Reply::ok(&render::user_private(&ctx.base, u, public, private))
                    }
                    None => Reply::not_found(),
                }
            }
            Subject::Installation { .. } => Reply::message(
                StatusCode::FORBIDDEN,
                "Resource not accessible by integration",
                "https://docs.github.com/rest/users/users#get-the-authenticated-user",
            ),
            Subject::Ip(_) => Reply::message(
                StatusCode::UNAUTHORIZED,
                "Requires authentication",
                "https://docs.github.com/rest/users/users#get-the-authenticated-user",
            ),
        }
    }

    // ------------------------------------------------------------------ events

    fn events(&self, ctx: &Ctx) -> Reply {
        let inner = &self.inner;
        let n = {
            let mut s = lock(&inner.scenario_state);
            s.events_requests += 1;
            s.events_requests
        };
        match inner.config.scenario {
            Scenario::TransientFailure if n == 1 => {
                return Reply::json(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &json!({"message": "Server Error"}),
                );
            }
            Scenario::TransientFailureExhausted => {
                return match n % 3 {
                    1 => Reply::json(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        &json!({"message": "Server Error"}),
                    ),
                    2 => Reply {
                        status: StatusCode::BAD_GATEWAY,
                        headers: http::HeaderMap::new(),
                        body: bytes::Bytes::from_static(
                            b"<html><body><h1>502 Bad Gateway</h1></body></html>",
                        ),
                        etag: false,
                    },
                    _ => Reply::json(
                        StatusCode::SERVICE_UNAVAILABLE,
                        &json!({"message": "Service Unavailable"}),
                    ),
                };
            }
            _ => {}
        }
        let (page, per_page) = page_params(ctx);
        let cap = inner.config.feed_cap;
        let scripted = |p: FeedPage| -> Reply {
            let reply = Reply::ok(&Value::Array(p.events));
            match link_header(
                ctx,
                "/events",
                page,
                p.last_page.unwrap_or(page),
                p.has_next,
            ) {
                Some(l) => reply.header("link", &l),
                None => reply,
            }
        };
        let list: Option<Vec<Value>> = if let Some(events) = &inner.config.feed_events {
            Some(events.iter().take(cap).cloned().collect())
        } else {
            match inner.config.scenario {
                Scenario::LiveFeed => {
                    let w = lock(&inner.world);
                    Some(feed::live_window(
                        &ctx.base,
                        &w,
                        inner.config.seed,
                        inner.started,
                        ctx.now,
                        cap,
                    ))
                }
                _ => None,
            }
        };
        let reply = match list {
            Some(items) => {
                if page > 1 && ((page - 1) as usize).saturating_mul(per_page) >= cap {
                    return Reply::message(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "In order to keep the API fast for everyone, pagination is limited for this resource.",
                        "https://docs.github.com/v3/#pagination",
                    );
                }
                paged(ctx, &items, "/events", Value::clone)
            }
            None => match inner.config.scenario {
                Scenario::Paginated => scripted(feed::paginated_page(&ctx.base, page)),
                Scenario::PaginatedFinalPage => scripted(feed::final_page_walk(&ctx.base, page)),
                _ => {
                    let events = if page == 1 {
                        feed::default_page(&ctx.base)
                    } else {
                        Vec::new()
                    };
                    Reply::ok(&Value::Array(events))
                }
            },
        };
        reply
            .header(
                "x-poll-interval",
                &inner.config.poll_interval_secs.to_string(),
            )
            .header("cache-control", "private, max-age=60, s-maxage=60")
    }

    // ------------------------------------------------------------------ search

    fn search(&self, ctx: &Ctx, kind: &str) -> Reply {
        let inner = &self.inner;
        let Some(q) = ctx.param("q").filter(|q| !q.trim().is_empty()) else {
            return validation_failed(
                json!([{"resource": "Search", "field": "q", "code": "missing"}]),
            );
        };
        if inner.config.scenario == Scenario::SearchMalformed {
            let mut r = Reply::json(
                StatusCode::OK,
                &json!({"total_count": "2", "incomplete_results": false, "items": {"unavailable": true}}),
            );
            r.etag = false;
            return r;
        }
        let mut users = Vec::new();
        let mut repos = Vec::new();
        let mut orgs = Vec::new();
        let mut words = Vec::new();
        for term in q.split_whitespace() {
            match term.split_once(':') {
                Some(("user", v)) => users.push(v.to_ascii_lowercase()),
                Some(("repo", v)) => repos.push(v.to_ascii_lowercase()),
                Some(("org", v)) => orgs.push(v.to_ascii_lowercase()),
                Some(_) => {}
                None => words.push(term.to_ascii_lowercase()),
            }
        }
        let incomplete_scenario = inner.config.scenario == Scenario::SearchIncompleteResults;
        let hidden_user = crate::world::fixture::ACTORS[2].0;
        let hidden_repo = crate::world::fixture::REPOS[2].0;
        let w = lock(&inner.world);
        let (items, incomplete): (Vec<Value>, bool) = match kind {
            "users" => {
                let found: Vec<Value> = w
                    .users
                    .iter()
                    .filter(|u| !u.deleted)
                    .filter(|u| !(incomplete_scenario && u.id == hidden_user))
                    .filter(|u| {
                        let login = u.login.to_ascii_lowercase();
                        let by_user = users.is_empty() || users.contains(&login);
                        let by_word = words.iter().all(|wd| login.contains(wd.as_str()));
                        (!users.is_empty() || !words.is_empty()) && by_user && by_word
                    })
                    .map(|u| {
                        let mut v = render::user_simple(&ctx.base, u);
                        if let Some(o) = v.as_object_mut() {
                            o.insert("score".into(), json!(1.0));
                        }
                        v
                    })
                    .collect();
                (found, incomplete_scenario)
            }
            "repositories" => {
                let found: Vec<Value> = w
                    .repos
                    .iter()
                    .filter(|r| !r.deleted && !r.private)
                    .filter(|r| !(incomplete_scenario && r.id == hidden_repo))
                    .filter(|r| {
                        let full = r.full_name().to_ascii_lowercase();
                        let owner = r.owner.to_ascii_lowercase();
                        let by_repo = repos.is_empty()
                            || repos.contains(&full)
                            || (r.searchable_by_old_name
                                && r.previous_names
                                    .iter()
                                    .any(|p| repos.contains(&p.to_ascii_lowercase())));
                        let by_owner = (users.is_empty() && orgs.is_empty())
                            || users.contains(&owner)
                            || orgs.contains(&owner);
                        let by_word = words
                            .iter()
                            .all(|wd| r.name.to_ascii_lowercase().contains(wd.as_str()));
                        let any = !repos.is_empty()
                            || !users.is_empty()
                            || !orgs.is_empty()
                            || !words.is_empty();
                        any && by_repo && by_owner && by_word
                    })
                    .map(|r| {
                        let mut v = render::repo(&ctx.base, &w, r);
                        if let Some(o) = v.as_object_mut() {
                            o.insert("score".into(), json!(1.0));
                        }
                        v
                    })
                    .collect();
                (found, incomplete_scenario)
            }
            "code" | "issues" | "commits" | "topics" | "labels" => (Vec::new(), false),
            _ => return Reply::not_found(),
        };
        drop(w);
        let (page, per_page) = page_params(ctx);
        let total = items.len();
        // Search serves at most the first 1,000 results.
        let (items, last, has_next) = slice_page(
            &items[..items.len().min(1000)],
            page,
            per_page,
            Value::clone,
        );
        let mut body =
            json!({"total_count": total, "incomplete_results": incomplete, "items": items});
        // Issue search says which engine answered; the simulator's is plain lexical matching.
        if kind == "issues"
            && let Some(o) = body.as_object_mut()
        {
            o.insert("search_type".into(), json!("lexical"));
        }
        let mut reply = Reply::json(StatusCode::OK, &body);
        reply.etag = false;
        match link_header(ctx, &format!("/search/{kind}"), page, last, has_next) {
            Some(l) => reply.header("link", &l),
            None => reply,
        }
    }

    // ------------------------------------------------------------------ repositories

    #[allow(clippy::result_large_err)]
    fn resolve_repo(&self, ctx: &Ctx, sel: &RepoSel<'_>, rest: &[&str]) -> Result<RepoRec, Reply> {
        let w = lock(&self.inner.world);
        let found = match sel {
            RepoSel::Id(id) => id.parse::<u64>().ok().and_then(|id| w.repo_by_id(id)),
            RepoSel::Name(o, n) => w.repo(o, n),
        };
        if let Some(r) = found.filter(|r| !r.deleted) {
            return Ok(r.clone());
        }
        if let RepoSel::Name(o, n) = sel
            && let Some(r) = w.renamed_repo(o, n).filter(|r| !r.deleted)
        {
            let host = if self.inner.config.scenario == Scenario::HostileRedirect {
                HOSTILE_HOST.to_owned()
            } else {
                ctx.base.clone()
            };
            let mut location = format!("{host}/repositories/{}", r.id);
            for s in rest {
                location.push('/');
                location.push_str(s);
            }
            if let Some(q) = &ctx.raw_query {
                location.push('?');
                location.push_str(q);
            }
            let get = ctx.method == Method::GET || ctx.method == Method::HEAD;
            let status = if get {
                StatusCode::MOVED_PERMANENTLY
            } else {
                StatusCode::TEMPORARY_REDIRECT
            };
            let reply = Reply::json(
                status,
                &json!({"message": "Moved Permanently", "url": location, "documentation_url": "https://docs.github.com/v3/#http-redirects"}),
            );
            return Err(reply.header("location", &location));
        }
        Err(Reply::not_found())
    }

    fn repo_route(&self, ctx: &Ctx, sel: RepoSel<'_>, rest: &[&str]) -> Reply {
        let repo = match self.resolve_repo(ctx, &sel, rest) {
            Ok(r) => r,
            Err(reply) => return reply,
        };
        let m = &ctx.method;
        let get = *m == Method::GET || *m == Method::HEAD;
        let full = repo.full_name();
        let lpath = |suffix: &str| format!("/repositories/{}/{suffix}", repo.id);
        let base = ctx.base.as_str();
        let mut w = lock(&self.inner.world);
        match rest {
            [] if get => Reply::ok(&render::repo_full(base, &w, &repo)),
            ["issues"] if get => {
                let state = ctx.param("state").unwrap_or("open").to_owned();
                let mut issues: Vec<IssueRec> = w.content(repo.id).issues.clone();
                issues.retain(|i| state == "all" || (state == "open") == i.open);
                issues.sort_by_key(|i| std::cmp::Reverse(i.number));
                paged(ctx, &issues, &lpath("issues"), |i| {
                    render::issue(base, &w, &repo, i)
                })
            }
            ["issues", "comments"] if get => {
                let issues = w.content(repo.id).issues.clone();
                let mut comments: Vec<(u64, &crate::world::CommentRec)> = issues
                    .iter()
                    .flat_map(|i| i.comments.iter().map(move |c| (i.number, c)))
                    .collect();
                comments.sort_by_key(|(_, c)| (c.created_at, c.id));
                paged(ctx, &comments, &lpath("issues/comments"), |(n, c)| {
                    render::comment(base, &w, &repo, *n, c)
                })
            }
            ["issues", n] if get => {
                let c = w.content(repo.id).clone();
                match n
                    .parse::<u64>()
                    .ok()
                    .and_then(|n| c.issues.iter().find(|i| i.number == n))
                {
                    Some(i) => Reply::ok(&render::issue(base, &w, &repo, i)),
                    None => Reply::not_found(),
                }
            }
            ["pulls"] if get => {
                let state = ctx.param("state").unwrap_or("open").to_owned();
                let c = w.content(repo.id).clone();
                let mut items: Vec<(&IssueRec, &PullRec)> = c
                    .issues
                    .iter()
                    .filter_map(|i| i.pull.map(|p| (i, &c.pulls[p])))
                    .filter(|(i, _)| state == "all" || (state == "open") == i.open)
                    .collect();
                items.sort_by_key(|(i, _)| std::cmp::Reverse(i.number));
                paged(ctx, &items, &lpath("pulls"), |(i, p)| {
                    render::pull(base, &w, &repo, i, p)
                })
            }
            ["pulls"] if *m == Method::POST => {
                drop(w);
                self.open_pull(ctx, &repo)
            }
            ["pulls", n, what @ ..] => {
                let c = w.content(repo.id).clone();
                let Some((issue, pull)) = n
                    .parse::<u64>()
                    .ok()
                    .and_then(|n| c.issues.iter().find(|i| i.number == n))
                    .and_then(|i| i.pull.map(|p| (i, &c.pulls[p])))
                else {
                    return Reply::not_found();
                };
                match what {
                    [] if get => Reply::ok(&render::pull_full(base, &w, &repo, issue, pull, &c)),
                    ["commits"] if get => {
                        // GitHub lists at most 250 commits of a pull request.
                        let commits: Vec<&CommitRec> = pull
                            .commits
                            .iter()
                            .take(250)
                            .filter_map(|s| c.commits.get(s))
                            .collect();
                        paged(ctx, &commits, &lpath(&format!("pulls/{n}/commits")), |cm| {
                            render::commit(base, &w, &full, cm, false)
                        })
                    }
                    ["files"] if get => {
                        let mut files: BTreeMap<String, FileRec> = BTreeMap::new();
                        for s in &pull.commits {
                            if let Some(cm) = c.commits.get(s) {
                                for f in &cm.files {
                                    files.insert(f.filename.clone(), f.clone());
                                }
                            }
                        }
                        let files: Vec<&FileRec> = files.values().take(3000).collect();
                        paged(ctx, &files, &lpath(&format!("pulls/{n}/files")), |f| {
                            render::file(base, &full, f)
                        })
                    }
                    ["merge"] if get => {
                        if pull.merged {
                            Reply {
                                status: StatusCode::NO_CONTENT,
                                headers: http::HeaderMap::new(),
                                body: bytes::Bytes::new(),
                                etag: false,
                            }
                        } else {
                            Reply::not_found()
                        }
                    }
                    ["merge"] if *m == Method::PUT => {
                        let number = pull.number;
                        drop(w);
                        self.merge_pull(ctx, &repo, number)
                    }
                    _ => Reply::not_found(),
                }
            }
            ["commits", sha, what @ ..] if get => {
                let c = w.content(repo.id).clone();
                let resolved = c
                    .branch(sha)
                    .map(|b| b.sha.clone())
                    .unwrap_or_else(|| (*sha).to_owned());
                let commit = c.commits.get(&resolved).or_else(|| {
                    (resolved.len() >= 7)
                        .then(|| c.commits.values().find(|cm| cm.sha.starts_with(&resolved)))
                        .flatten()
                });
                let Some(commit) = commit else {
                    return Reply::message(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        &format!("No commit found for SHA: {sha}"),
                        "https://docs.github.com/rest/commits/commits#get-a-commit",
                    );
                };
                match what {
                    [] => Reply::ok(&render::commit(base, &w, &full, commit, true)),
                    ["check-runs"] => {
                        let checks: Vec<_> = c
                            .runs
                            .iter()
                            .filter(|r| r.head_sha == commit.sha)
                            .flat_map(|r| r.jobs.iter().map(move |j| (r, j)))
                            .collect();
                        paged_wrapped(
                            ctx,
                            "check_runs",
                            &checks,
                            &lpath(&format!("commits/{sha}/check-runs")),
                            |(r, j)| render::check_run(base, &full, r, j),
                        )
                    }
                    _ => Reply::not_found(),
                }
            }
            ["branches"] if get => {
                let protected_only = ctx.param("protected") == Some("true");
                let branches: Vec<&BranchRec> = w
                    .content(repo.id)
                    .branches
                    .iter()
                    .filter(|b| !protected_only || b.protection.is_some())
                    .collect();
                paged(ctx, &branches, &lpath("branches"), |b| {
                    render::branch(base, &full, b)
                })
            }
            ["branches", branch] if get => {
                let c = w.content(repo.id).clone();
                match c.branch(branch) {
                    Some(b) => match c.commits.get(&b.sha) {
                        Some(cm) => Reply::ok(&render::branch_detail(base, &w, &full, b, cm)),
                        // A branch whose head the world does not hold: listed, but
                        // there is no commit to show.
                        None => Reply::ok(&render::branch(base, &full, b)),
                    },
                    None => Reply::message(StatusCode::NOT_FOUND, "Branch not found", DOC),
                }
            }
            ["branches", branch, "protection"] => {
                let body = if get {
                    json!({})
                } else {
                    match self.body_json(ctx) {
                        Ok(b) => b,
                        Err(r) => return r,
                    }
                };
                protect_branch(ctx, &mut w, &repo, branch, body)
            }
            ["git", "refs"] if *m == Method::POST => {
                let body = match self.body_json(ctx) {
                    Ok(b) => b,
                    Err(r) => return r,
                };
                create_ref(ctx, &mut w, &repo, &body)
            }
            ["git", "blobs"] if *m == Method::POST => {
                let body = match self.body_json(ctx) {
                    Ok(b) => b,
                    Err(r) => return r,
                };
                git::create_blob(ctx, &mut w, &repo, &body)
            }
            ["git", "trees"] if *m == Method::POST => {
                let body = match self.body_json(ctx) {
                    Ok(b) => b,
                    Err(r) => return r,
                };
                git::create_tree(ctx, &mut w, &repo, &body)
            }
            ["git", "commits"] if *m == Method::POST => {
                let body = match self.body_json(ctx) {
                    Ok(b) => b,
                    Err(r) => return r,
                };
                let counter = {
                    let mut s = lock(&self.inner.scenario_state);
                    s.commit_counter += 1;
                    s.commit_counter
                };
                git::create_commit(ctx, &mut w, &repo, &body, counter)
            }
            ["git", "commits", sha] if get => {
                let c = w.content(repo.id).clone();
                match c.commits.get(*sha) {
                    Some(cm) => Reply::ok(&render::git_commit(base, &w, &full, cm)),
                    None => Reply::not_found(),
                }
            }
            ["git", "refs", refname @ ..] if *m == Method::PATCH && !refname.is_empty() => {
                let body = match self.body_json(ctx) {
                    Ok(b) => b,
                    Err(r) => return r,
                };
                git::update_ref(ctx, &mut w, &repo, &refname.join("/"), &body)
            }
            ["git", "ref", refname @ ..] if get => {
                let refname = refname.join("/");
                let Some(branch) = refname.strip_prefix("heads/") else {
                    return Reply::not_found();
                };
                match w.content(repo.id).branch(branch) {
                    Some(b) => Reply::ok(&json!({
                        "ref": format!("refs/heads/{}", b.name),
                        "node_id": ref_node_id(repo.id, &b.name),
                        "url": format!("{base}/repos/{full}/git/refs/heads/{}", b.name),
                        "object": {"type": "commit", "sha": b.sha, "url": format!("{base}/repos/{full}/git/commits/{}", b.sha)},
                    })),
                    None => Reply::not_found(),
                }
            }
            ["contents", path @ ..] if !path.is_empty() => {
                let path = path.join("/");
                if get {
                    get_contents(ctx, &mut w, &repo, &path)
                } else if *m == Method::PUT {
                    let body = match self.body_json(ctx) {
                        Ok(b) => b,
                        Err(r) => return r,
                    };
                    let counter = {
                        let mut s = lock(&self.inner.scenario_state);
                        s.commit_counter += 1;
                        s.commit_counter
                    };
                    put_contents(ctx, &mut w, &repo, &path, &body, counter)
                } else {
                    Reply::not_found()
                }
            }
            ["actions", "runs"] if get => {
                let c = w.content(repo.id).clone();
                paged_wrapped(ctx, "workflow_runs", &c.runs, &lpath("actions/runs"), |r| {
                    render::run(base, &w, &repo, r, c.commits.get(&r.head_sha))
                })
            }
            ["actions", "runs", id, "jobs"] if get => {
                let runs = w.content(repo.id).runs.clone();
                match id
                    .parse::<u64>()
                    .ok()
                    .and_then(|id| runs.iter().find(|r| r.id == id))
                {
                    Some(run) => paged_wrapped(
                        ctx,
                        "jobs",
                        &run.jobs,
                        &lpath(&format!("actions/runs/{id}/jobs")),
                        |j| render::job(base, &full, run, j),
                    ),
                    None => Reply::not_found(),
                }
            }
            _ => Reply::not_found(),
        }
    }

    // ------------------------------------------------------------------ mutations

    fn create_repo(&self, ctx: &Ctx, org: Option<&str>) -> Reply {
        use crate::quota::Subject;
        if !ctx.subject.is_authenticated() {
            return requires_auth();
        }
        let body = match self.body_json(ctx) {
            Ok(b) => b,
            Err(r) => return r,
        };
        let mut w = lock(&self.inner.world);
        let owner = match (org, &ctx.subject) {
            (Some(o), _) => {
                if !w.org.login.eq_ignore_ascii_case(o) {
                    return Reply::not_found();
                }
                w.org.login.clone()
            }
            (None, Subject::User { login, .. }) => login.clone(),
            (None, _) => {
                return Reply::message(
                    StatusCode::FORBIDDEN,
                    "Resource not accessible by integration",
                    DOC,
                );
            }
        };
        let Some(name) = body.get("name").and_then(Value::as_str) else {
            return validation_failed(
                json!([{"resource": "Repository", "code": "missing_field", "field": "name"}]),
            );
        };
        let valid = !name.is_empty()
            && name.len() <= 100
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && name != "."
            && name != "..";
        if !valid {
            return validation_failed(
                json!([{"resource": "Repository", "code": "custom", "field": "name", "message": "name is invalid"}]),
            );
        }
        if w.repo(&owner, name).is_some() {
            return Reply::json(
                StatusCode::UNPROCESSABLE_ENTITY,
                &json!({
                    "message": "Repository creation failed.",
                    "errors": [{"resource": "Repository", "code": "custom", "field": "name", "message": "name already exists on this account"}],
                    "documentation_url": "https://docs.github.com/rest/repos/repos#create-an-organization-repository",
                    "status": "422",
                }),
            );
        }
        let id = w.fresh_id();
        let rec = RepoRec {
            id,
            owner,
            name: name.to_owned(),
            previous_names: Vec::new(),
            searchable_by_old_name: false,
            deleted: false,
            private: body
                .get("private")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            description: body
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            language: None,
            default_branch: "main".to_owned(),
            stars: 0,
            created_at: ctx.now,
            updated_at: ctx.now,
            generated: false,
            auto_init: body
                .get("auto_init")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        };
        w.add_repo(rec.clone());
        let v = render::repo_full(&ctx.base, &w, &rec);
        let location = format!("{}/repos/{}", ctx.base, rec.full_name());
        Reply::json(StatusCode::CREATED, &v).header("location", &location)
    }

    fn open_pull(&self, ctx: &Ctx, repo: &RepoRec) -> Reply {
        if !ctx.subject.is_authenticated() {
            return requires_auth();
        }
        let body = match self.body_json(ctx) {
            Ok(b) => b,
            Err(r) => return r,
        };
        let mut missing = Vec::new();
        for f in ["title", "head", "base"] {
            if body
                .get(f)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                missing
                    .push(json!({"resource": "PullRequest", "code": "missing_field", "field": f}));
            }
        }
        if !missing.is_empty() {
            return validation_failed(Value::Array(missing));
        }
        let field = |f: &str| {
            body.get(f)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let (title, head_raw, base_name) = (field("title"), field("head"), field("base"));
        let head = head_raw.rsplit(':').next().unwrap_or(&head_raw).to_owned();
        let mut w = lock(&self.inner.world);
        let issue_id = w.fresh_id();
        let pull_id = w.fresh_id();
        let user = ctx.subject.log_name();
        let c = w.content(repo.id);
        let Some(head_b) = c.branch(&head).cloned() else {
            return validation_failed(
                json!([{"resource": "PullRequest", "field": "head", "code": "invalid"}]),
            );
        };
        let Some(base_b) = c.branch(&base_name).cloned() else {
            return validation_failed(
                json!([{"resource": "PullRequest", "field": "base", "code": "invalid"}]),
            );
        };
        let open_same = c
            .issues
            .iter()
            .filter(|i| i.open)
            .filter_map(|i| i.pull.map(|p| &c.pulls[p]))
            .any(|p| p.head == head && p.base == base_name && !p.merged);
        if open_same {
            return validation_failed(
                json!([{"resource": "PullRequest", "code": "custom", "message": format!("A pull request already exists for {}:{head}.", repo.owner)}]),
            );
        }
        let base_anc = ancestors(c, &base_b.sha);
        let mut commits = Vec::new();
        let mut cur = Some(head_b.sha.clone());
        while let Some(s) = cur {
            if base_anc.contains(&s) {
                break;
            }
            cur = c.commits.get(&s).and_then(|cm| cm.parents.first().cloned());
            commits.push(s);
        }
        commits.reverse();
        if commits.is_empty() {
            return validation_failed(
                json!([{"resource": "PullRequest", "code": "custom", "message": format!("No commits between {base_name} and {head}")}]),
            );
        }
        let number = c.next_number();
        let issue = IssueRec {
            id: issue_id,
            number,
            title,
            body: body
                .get("body")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            open: true,
            user,
            labels: Vec::new(),
            created_at: ctx.now,
            updated_at: ctx.now,
            comments: Vec::new(),
            pull: Some(c.pulls.len()),
        };
        let pull = PullRec {
            id: pull_id,
            number,
            head,
            base: base_name,
            head_sha: head_b.sha,
            base_sha: base_b.sha,
            commits,
            merged: false,
            merged_at: None,
            merge_sha: None,
        };
        c.pulls.push(pull.clone());
        c.issues.push(issue.clone());
        let content = c.clone();
        let v = render::pull_full(&ctx.base, &w, repo, &issue, &pull, &content);
        let location = format!("{}/repos/{}/pulls/{number}", ctx.base, repo.full_name());
        Reply::json(StatusCode::CREATED, &v).header("location", &location)
    }

    fn merge_pull(&self, ctx: &Ctx, repo: &RepoRec, number: u64) -> Reply {
        if !ctx.subject.is_authenticated() {
            return requires_auth();
        }
        let body = match self.body_json(ctx) {
            Ok(b) => b,
            Err(r) => return r,
        };
        let counter = {
            let mut s = lock(&self.inner.scenario_state);
            s.commit_counter += 1;
            s.commit_counter
        };
        let author = ctx.subject.log_name();
        let mut w = lock(&self.inner.world);
        let c = w.content(repo.id);
        let Some(ii) = c.issues.iter().position(|i| i.number == number) else {
            return Reply::not_found();
        };
        let Some(pi) = c.issues[ii].pull else {
            return Reply::not_found();
        };
        let pull = c.pulls[pi].clone();
        if pull.merged || !c.issues[ii].open {
            return Reply::message(
                StatusCode::METHOD_NOT_ALLOWED,
                "Pull Request is not mergeable",
                DOC,
            );
        }
        let head_now = c
            .branch(&pull.head)
            .map(|b| b.sha.clone())
            .unwrap_or(pull.head_sha.clone());
        if let Some(expected) = body.get("sha").and_then(Value::as_str)
            && expected != head_now
        {
            return Reply::message(
                StatusCode::CONFLICT,
                "Head branch was modified. Review and try the merge again.",
                DOC,
            );
        }
        let Some(base_b) = c.branch(&pull.base).cloned() else {
            return Reply::message(
                StatusCode::METHOD_NOT_ALLOWED,
                "Base branch was deleted",
                DOC,
            );
        };
        if base_b.protection.as_ref().is_some_and(|p| {
            p.get("required_pull_request_reviews")
                .is_some_and(|r| !r.is_null())
        }) {
            return Reply::message(
                StatusCode::METHOD_NOT_ALLOWED,
                "At least 1 approving review is required by reviewers with write access.",
                DOC,
            );
        }
        // Files the pull request changes, and files the base changed since it was opened.
        let head_anc: Vec<String> = {
            let base_anc = ancestors(c, &pull.base_sha);
            let mut v = Vec::new();
            let mut cur = Some(head_now.clone());
            while let Some(s) = cur {
                if base_anc.contains(&s) {
                    break;
                }
                cur = c.commits.get(&s).and_then(|cm| cm.parents.first().cloned());
                v.push(s);
            }
            v
        };
        let pr_files: HashSet<String> = head_anc
            .iter()
            .filter_map(|s| c.commits.get(s))
            .flat_map(|cm| cm.files.iter().map(|f| f.filename.clone()))
            .collect();
        let base_since: HashSet<String> = {
            let old = ancestors(c, &pull.base_sha);
            ancestors(c, &base_b.sha)
                .difference(&old)
                .filter_map(|s| c.commits.get(s))
                .flat_map(|cm| cm.files.iter().map(|f| f.filename.clone()))
                .collect()
        };
        if pr_files.intersection(&base_since).next().is_some() {
            return Reply::message(
                StatusCode::METHOD_NOT_ALLOWED,
                "Pull Request is not mergeable",
                DOC,
            );
        }
        let head_tree = c
            .commits
            .get(&head_now)
            .map(|cm| cm.tree.clone())
            .unwrap_or_default();
        let mut tree = c
            .commits
            .get(&base_b.sha)
            .map(|cm| cm.tree.clone())
            .unwrap_or_default();
        let mut files = Vec::new();
        for f in &pr_files {
            match head_tree.get(f) {
                Some(entry) => {
                    tree.insert(f.clone(), entry.clone());
                    files.push(FileRec {
                        filename: f.clone(),
                        status: "modified",
                        additions: 1,
                        deletions: 0,
                        sha: entry.0.clone(),
                    });
                }
                None => {
                    tree.remove(f);
                }
            }
        }
        let title = body
            .get("commit_title")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| {
                format!(
                    "Merge pull request #{number} from {}/{}",
                    repo.owner, pull.head
                )
            });
        let sha = sha_of(&[&base_b.sha, &head_now, &title, &counter.to_string()]);
        c.commits.insert(
            sha.clone(),
            CommitRec {
                sha: sha.clone(),
                message: title,
                author,
                date: ctx.now,
                parents: vec![base_b.sha.clone(), head_now.clone()],
                files,
                tree,
            },
        );
        if let Some(b) = c.branches.iter_mut().find(|b| b.name == pull.base) {
            b.sha = sha.clone();
        }
        let p = &mut c.pulls[pi];
        p.merged = true;
        p.merged_at = Some(ctx.now);
        p.merge_sha = Some(sha.clone());
        p.head_sha = head_now;
        let i = &mut c.issues[ii];
        i.open = false;
        i.updated_at = ctx.now;
        Reply::json(
            StatusCode::OK,
            &json!({"sha": sha, "merged": true, "message": "Pull Request successfully merged"}),
        )
    }
}

fn protect_branch(ctx: &Ctx, w: &mut World, repo: &RepoRec, branch: &str, body: Value) -> Reply {
    let full = repo.full_name();
    let base = ctx.base.clone();
    let c = w.content(repo.id);
    let Some(b) = c.branches.iter_mut().find(|b| b.name == branch) else {
        return Reply::message(StatusCode::NOT_FOUND, "Branch not found", DOC);
    };
    match ctx.method {
        Method::GET | Method::HEAD => match &b.protection {
            Some(p) => Reply::ok(&render::protection(&base, &full, branch, p, false)),
            None => Reply::message(StatusCode::NOT_FOUND, "Branch not protected", DOC),
        },
        Method::PUT => {
            if !ctx.subject.is_authenticated() {
                return requires_auth();
            }
            for key in [
                "required_status_checks",
                "enforce_admins",
                "required_pull_request_reviews",
                "restrictions",
            ] {
                if body.get(key).is_none() {
                    return invalid_request(key);
                }
            }
            let answer = render::protection(&base, &full, branch, &body, true);
            b.protection = Some(body);
            Reply::json(StatusCode::OK, &answer)
        }
        Method::DELETE => {
            if b.protection.take().is_some() {
                Reply {
                    status: StatusCode::NO_CONTENT,
                    headers: http::HeaderMap::new(),
                    body: bytes::Bytes::new(),
                    etag: false,
                }
            } else {
                Reply::message(StatusCode::NOT_FOUND, "Branch not protected", DOC)
            }
        }
        _ => Reply::not_found(),
    }
}

fn create_ref(ctx: &Ctx, w: &mut World, repo: &RepoRec, body: &Value) -> Reply {
    if !ctx.subject.is_authenticated() {
        return requires_auth();
    }
    let Some(refname) = body.get("ref").and_then(Value::as_str) else {
        return invalid_request("ref");
    };
    let Some(sha) = body.get("sha").and_then(Value::as_str) else {
        return invalid_request("sha");
    };
    let Some(branch) = refname
        .strip_prefix("refs/heads/")
        .filter(|b| !b.is_empty() && !b.contains("..") && !b.ends_with('/') && !b.contains(' '))
    else {
        return Reply::message(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Reference name is invalid",
            DOC,
        );
    };
    let c = w.content(repo.id);
    if c.branch(branch).is_some() {
        return Reply::message(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Reference already exists",
            DOC,
        );
    }
    if !c.commits.contains_key(sha) {
        return Reply::message(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Object does not exist",
            DOC,
        );
    }
    c.branches.push(BranchRec {
        name: branch.to_owned(),
        sha: sha.to_owned(),
        protection: None,
    });
    let full = repo.full_name();
    let url = format!("{}/repos/{full}/git/{refname}", ctx.base);
    Reply::json(
        StatusCode::CREATED,
        &json!({
            "ref": refname,
            "node_id": ref_node_id(repo.id, branch),
            "url": url,
            "object": {"type": "commit", "sha": sha, "url": format!("{}/repos/{full}/git/commits/{sha}", ctx.base)},
        }),
    )
    .header("location", &url)
}

/// A ref's node id, stable per repository and branch (GitHub's are opaque).
pub(super) fn ref_node_id(repo_id: u64, branch: &str) -> String {
    format!(
        "REF_{}",
        sha_of(&[&repo_id.to_string(), branch])
            .get(..20)
            .unwrap_or("")
    )
}

/// A file of the Contents API (`content-file`), as read from `git_ref`.
fn content_json(
    ctx: &Ctx,
    full: &str,
    path: &str,
    git_ref: &str,
    blob: &str,
    content: &str,
) -> Value {
    let name = path.rsplit('/').next().unwrap_or(path);
    let url = format!("{}/repos/{full}/contents/{path}?ref={git_ref}", ctx.base);
    let git_url = format!("{}/repos/{full}/git/blobs/{blob}", ctx.base);
    let html_url = format!("https://github.com/{full}/blob/{git_ref}/{path}");
    json!({
        "type": "file",
        "encoding": "base64",
        "size": content.len() * 3 / 4,
        "name": name,
        "path": path,
        "content": content,
        "sha": blob,
        "url": url,
        "git_url": git_url,
        "html_url": html_url,
        "download_url": format!("https://raw.githubusercontent.com/{full}/{git_ref}/{path}"),
        "_links": {"self": url, "git": git_url, "html": html_url},
    })
}

fn get_contents(ctx: &Ctx, w: &mut World, repo: &RepoRec, path: &str) -> Reply {
    let c = w.content(repo.id);
    let reference = ctx.param("ref").unwrap_or(&repo.default_branch).to_owned();
    let sha = c
        .branch(&reference)
        .map(|b| b.sha.clone())
        .unwrap_or_else(|| reference.clone());
    match c.commits.get(&sha).and_then(|cm| cm.tree.get(path)) {
        Some((blob, content)) => Reply::ok(&content_json(
            ctx,
            &repo.full_name(),
            path,
            &reference,
            blob,
            content,
        )),
        None => Reply::not_found(),
    }
}

fn put_contents(
    ctx: &Ctx,
    w: &mut World,
    repo: &RepoRec,
    path: &str,
    body: &Value,
    counter: u64,
) -> Reply {
    if !ctx.subject.is_authenticated() {
        return requires_auth();
    }
    let Some(message) = body.get("message").and_then(Value::as_str) else {
        return invalid_request("message");
    };
    let Some(content) = body.get("content").and_then(Value::as_str) else {
        return invalid_request("content");
    };
    let valid_b64 = content
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'\n' | b'\r'));
    if !valid_b64 {
        return validation_failed(
            json!([{"resource": "Commit", "field": "content", "code": "invalid"}]),
        );
    }
    let branch = body
        .get("branch")
        .and_then(Value::as_str)
        .unwrap_or(&repo.default_branch)
        .to_owned();
    let author = ctx.subject.log_name();
    let full = repo.full_name();
    let c = w.content(repo.id);
    let parent = match c.branch(&branch) {
        Some(b) => Some(b.sha.clone()),
        None if c.branches.is_empty() && branch == repo.default_branch => None,
        None => {
            return Reply::message(
                StatusCode::NOT_FOUND,
                &format!("Branch {branch} not found"),
                DOC,
            );
        }
    };
    let mut tree = parent
        .as_ref()
        .and_then(|p| c.commits.get(p))
        .map(|cm| cm.tree.clone())
        .unwrap_or_default();
    let existing = tree.get(path).map(|(blob, _)| blob.clone());
    let given = body.get("sha").and_then(Value::as_str);
    match (&existing, given) {
        (Some(_), None) => return invalid_request("sha"),
        (Some(blob), Some(s)) if s != blob => {
            return Reply::message(
                StatusCode::CONFLICT,
                &format!("{path} does not match {s}"),
                DOC,
            );
        }
        (None, Some(s)) => {
            return Reply::message(
                StatusCode::CONFLICT,
                &format!("{path} does not match {s}"),
                DOC,
            );
        }
        _ => {}
    }
    let blob = sha_of(&["blob", content]);
    tree.insert(path.to_owned(), (blob.clone(), content.to_owned()));
    let sha = sha_of(&[
        parent.as_deref().unwrap_or(""),
        path,
        &blob,
        message,
        &counter.to_string(),
    ]);
    let status = if existing.is_some() {
        "modified"
    } else {
        "added"
    };
    c.commits.insert(
        sha.clone(),
        CommitRec {
            sha: sha.clone(),
            message: message.to_owned(),
            author,
            date: ctx.now,
            parents: parent.iter().cloned().collect(),
            files: vec![FileRec {
                filename: path.to_owned(),
                status,
                additions: 1,
                deletions: u64::from(existing.is_some()),
                sha: blob.clone(),
            }],
            tree,
        },
    );
    match c.branches.iter_mut().find(|b| b.name == branch) {
        Some(b) => b.sha = sha.clone(),
        None => c.branches.push(BranchRec {
            name: branch.clone(),
            sha: sha.clone(),
            protection: None,
        }),
    }
    let code = if existing.is_some() {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Reply::json(
        code,
        &json!({
            "content": content_json(ctx, &full, path, &branch, &blob, content),
            "commit": {
                "sha": sha,
                "url": format!("{}/repos/{full}/git/commits/{sha}", ctx.base),
                "html_url": format!("https://github.com/{full}/commit/{sha}"),
                "message": message,
                "author": {"name": ctx.subject.log_name(), "date": stamp(ctx.now)},
                "parents": parent.iter().map(|p| json!({"sha": p})).collect::<Vec<_>>(),
            },
        }),
    )
}
