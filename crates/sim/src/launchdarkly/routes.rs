//! The endpoints headroom calls, each a route of its own window: the caller's identity,
//! projects (environments expanded on request) and a project's environments, a project's flags
//! (paged by `limit`/`offset` when the API version is pinned to 20240415 or later, all in one
//! page otherwise), an environment's segments, members, code-reference repositories (one
//! response, no paging) and the audit log.
//!
//! The audit log pages by time, newest first: `after` and `before` are epoch milliseconds and
//! both exclusive, as the description says ("occurred before the timestamp"); `limit` is 1 to
//! 20 (default 10; more is capped at 20). `_links.next` is `before` = the oldest `date` on the
//! page, `after` and `limit` kept. Because `before` is exclusive, a page never ends in the
//! middle of a millisecond: when the entry after a full page shares the page's oldest
//! millisecond, the page stops before that millisecond (it holds fewer than `limit`), so
//! following `next` — or moving `before` to the oldest date seen — loses no entry that shares a
//! millisecond with another. Only a single millisecond holding more than `limit` entries cannot
//! be paged whole; the seed never makes one (at most two entries share one).

use http::StatusCode;
use serde_json::{Value, json};

use super::model::Account;
use super::render::{self, href, link, page};
use crate::sim::Reply;

/// Every route the simulator serves, with its route family (the reference policy's names).
pub const ROUTES: [(&str, &str); 8] = [
    ("GET /api/v2/caller-identity", "caller_identity"),
    ("GET /api/v2/projects", "projects"),
    ("GET /api/v2/projects/{projectKey}/environments", "projects"),
    ("GET /api/v2/flags/{projectKey}", "flags"),
    (
        "GET /api/v2/segments/{projectKey}/{environmentKey}",
        "segments",
    ),
    ("GET /api/v2/members", "members"),
    ("GET /api/v2/code-refs/repositories", "code_refs"),
    ("GET /api/v2/auditlog", "audit_log"),
];

/// The route template of a request (`"GET /api/v2/flags/{projectKey}"`), if it is one of
/// [`ROUTES`].
pub fn route_of(method: &str, path: &str) -> Option<&'static str> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let rest = segs.strip_prefix(&["api", "v2"])?;
    let i = match rest {
        ["caller-identity"] => 0,
        ["projects"] => 1,
        ["projects", _, "environments"] => 2,
        ["flags", _] => 3,
        ["segments", _, _] => 4,
        ["members"] => 5,
        ["code-refs", "repositories"] => 6,
        ["auditlog"] => 7,
        _ => return None,
    };
    (method == "GET").then_some(ROUTES[i].0)
}

/// The route family of a route template (`flags`, `audit_log`, …).
pub fn route_family(route: &str) -> Option<&'static str> {
    ROUTES.iter().find(|(r, _)| *r == route).map(|(_, f)| *f)
}

/// Who is calling, as `caller-identity` reports it.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub(crate) token_id: String,
    /// An index into the account's members; none for a service token.
    pub(crate) member: Option<usize>,
}

/// A request as the endpoints see it.
#[derive(Debug)]
pub(crate) struct LdCtx {
    pub(crate) segments: Vec<String>,
    pub(crate) query: Vec<(String, String)>,
    /// `LD-API-Version` 20240415 or later: the flag list is paged.
    pub(crate) paged_flags: bool,
    pub(crate) caller: Caller,
    pub(crate) request_id: String,
}

/// `{"code", "message", "id"}`, the shape every LaunchDarkly error shares.
pub(crate) fn error(status: StatusCode, code: &str, message: &str, id: &str) -> Reply {
    Reply::json(status, &json!({"code": code, "message": message, "id": id}))
}

impl LdCtx {
    fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn params(&self, name: &str) -> Vec<&str> {
        self.query
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    fn invalid(&self, message: &str) -> Reply {
        error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            message,
            &self.request_id,
        )
    }

    fn not_found(&self, what: &str) -> Reply {
        error(
            StatusCode::NOT_FOUND,
            "not_found",
            &format!("Unknown {what}"),
            &self.request_id,
        )
    }

    /// An integer parameter at least `min`; a 400 when it is something else.
    fn int(&self, name: &str, min: i64) -> Result<Option<i64>, Reply> {
        match self.param(name) {
            None | Some("") => Ok(None),
            Some(v) => match v.parse::<i64>() {
                Ok(n) if n >= min => Ok(Some(n)),
                _ => Err(self.invalid(&format!("{name} must be an integer of at least {min}"))),
            },
        }
    }

    /// `limit` (default 20) and `offset` (default 0).
    fn paging(&self) -> Result<(usize, usize), Reply> {
        let limit = self.int("limit", 1)?.unwrap_or(20) as usize;
        let offset = self.int("offset", 0)?.unwrap_or(0) as usize;
        Ok((limit, offset))
    }

    /// The parameters a page's links keep besides `limit` and `offset`.
    fn kept(&self, names: &[&str]) -> Vec<(String, String)> {
        self.query
            .iter()
            .filter(|(k, _)| names.contains(&k.as_str()))
            .cloned()
            .collect()
    }
}

/// Answers a request of `route` (a template of [`ROUTES`]).
pub(crate) fn answer(a: &Account, ctx: &LdCtx, route: &str) -> Reply {
    let result = match route_family(route) {
        Some("caller_identity") => Ok(caller_identity(a, ctx)),
        Some("projects") if ctx.segments.len() == 3 => projects(a, ctx),
        Some("projects") => environments(a, ctx),
        Some("flags") => flags(a, ctx),
        Some("segments") => segments(a, ctx),
        Some("members") => members(a, ctx),
        Some("code_refs") => Ok(repositories(a)),
        Some("audit_log") => audit_log(a, ctx),
        _ => Err(ctx.not_found("resource")),
    };
    result.unwrap_or_else(|refusal| refusal)
}

fn caller_identity(a: &Account, ctx: &LdCtx) -> Reply {
    let member = ctx.caller.member.and_then(|m| a.members.get(m));
    let mut v = json!({
        "accountId": a.id,
        "authKind": "token",
        "tokenKind": if member.is_some() { "personal" } else { "service" },
        "tokenId": ctx.caller.token_id,
        "tokenName": format!("token {}", &ctx.caller.token_id[..6]),
        "serviceToken": member.is_none(),
    });
    if let Some(m) = member {
        v["memberId"] = json!(m.id);
    }
    Reply::json(StatusCode::OK, &v)
}

fn collection(items: Vec<Value>, links: Value, total: usize) -> Reply {
    Reply::json(
        StatusCode::OK,
        &json!({"_links": links, "totalCount": total, "items": items}),
    )
}

fn projects(a: &Account, ctx: &LdCtx) -> Result<Reply, Reply> {
    let (limit, offset) = ctx.paging()?;
    let expand = ctx
        .param("expand")
        .is_some_and(|e| e.split(',').any(|x| x.trim() == "environments"));
    let pg = page(
        "/api/v2/projects",
        &ctx.kept(&["expand"]),
        a.projects.len(),
        limit,
        offset,
    );
    let items = a.projects[pg.range]
        .iter()
        .map(|p| render::project(p, expand))
        .collect();
    Ok(collection(items, pg.links, a.projects.len()))
}

fn environments(a: &Account, ctx: &LdCtx) -> Result<Reply, Reply> {
    let p = a
        .project(&ctx.segments[3])
        .ok_or_else(|| ctx.not_found("project"))?;
    let (limit, offset) = ctx.paging()?;
    let path = format!("/api/v2/projects/{}/environments", p.key);
    let pg = page(&path, &[], p.environments.len(), limit, offset);
    let items = p.environments[pg.range]
        .iter()
        .map(|e| render::environment(p, e))
        .collect();
    Ok(collection(items, pg.links, p.environments.len()))
}

fn flags(a: &Account, ctx: &LdCtx) -> Result<Reply, Reply> {
    let p = a
        .project(&ctx.segments[3])
        .ok_or_else(|| ctx.not_found("project"))?;
    let wanted = ctx.params("env");
    let envs: Vec<usize> = (0..p.environments.len())
        .filter(|&e| wanted.is_empty() || wanted.contains(&p.environments[e].key.as_str()))
        .collect();
    let summary = !matches!(ctx.param("summary"), Some("0" | "false"));
    let full = !summary && !wanted.is_empty();
    let path = format!("/api/v2/flags/{}", p.key);
    let keep = ctx.kept(&["env", "summary"]);
    let total = p.flags.len();
    let (range, links) = if ctx.paged_flags {
        let (limit, offset) = ctx.paging()?;
        let pg = page(&path, &keep, total, limit, offset);
        (pg.range, pg.links)
    } else {
        // Before 20240415 the list is not paged: every flag, whatever `limit` says.
        (0..total, json!({"self": link(&href(&path, &keep, &[]))}))
    };
    let items = p.flags[range]
        .iter()
        .map(|f| render::flag(a, p, f, &envs, full))
        .collect();
    Ok(collection(items, links, total))
}

fn segments(a: &Account, ctx: &LdCtx) -> Result<Reply, Reply> {
    let p = a
        .project(&ctx.segments[3])
        .ok_or_else(|| ctx.not_found("project"))?;
    let e = p
        .environment(&ctx.segments[4])
        .ok_or_else(|| ctx.not_found("environment"))?;
    let (limit, offset) = ctx.paging()?;
    let path = format!("/api/v2/segments/{}/{}", p.key, e.key);
    let pg = page(&path, &[], e.segments.len(), limit, offset);
    let items = e.segments[pg.range]
        .iter()
        .map(|s| render::segment(p, e, s))
        .collect();
    Ok(collection(items, pg.links, e.segments.len()))
}

fn members(a: &Account, ctx: &LdCtx) -> Result<Reply, Reply> {
    let (limit, offset) = ctx.paging()?;
    let pg = page("/api/v2/members", &[], a.members.len(), limit, offset);
    let items = a.members[pg.range].iter().map(render::member).collect();
    Ok(collection(items, pg.links, a.members.len()))
}

fn repositories(a: &Account) -> Reply {
    let items: Vec<Value> = a.repos.iter().map(|r| render::repo(a, r)).collect();
    Reply::json(
        StatusCode::OK,
        &json!({"_links": {"self": link("/api/v2/code-refs/repositories")}, "items": items}),
    )
}

/// The audit log's page: see the module's documentation for the paging rule.
fn audit_log(a: &Account, ctx: &LdCtx) -> Result<Reply, Reply> {
    let limit = ctx.int("limit", 1)?.unwrap_or(10).min(20) as usize;
    let after = ctx.int("after", i64::MIN)?;
    let before = ctx.int("before", i64::MIN)?;
    let matching: Vec<_> = a
        .audit
        .iter()
        .filter(|x| after.is_none_or(|t| x.date > t) && before.is_none_or(|t| x.date < t))
        .collect();
    let mut n = matching.len().min(limit);
    if n < matching.len() && n > 0 {
        let oldest = matching[n - 1].date;
        if matching[n].date == oldest {
            // Stop before the split millisecond, unless it fills the whole page.
            let keep = matching[..n]
                .iter()
                .take_while(|x| x.date != oldest)
                .count();
            if keep > 0 {
                n = keep;
            }
        }
    }
    let shown = &matching[..n];
    let mut self_params: Vec<(&str, String)> = Vec::new();
    if let Some(t) = after {
        self_params.push(("after", t.to_string()));
    }
    let mut links = serde_json::Map::new();
    let mut own = self_params.clone();
    if let Some(t) = before {
        own.push(("before", t.to_string()));
    }
    own.push(("limit", limit.to_string()));
    links.insert("self".into(), link(&href("/api/v2/auditlog", &[], &own)));
    if let (Some(last), true) = (shown.last(), n < matching.len()) {
        self_params.push(("before", last.date.to_string()));
        self_params.push(("limit", limit.to_string()));
        links.insert(
            "next".into(),
            link(&href("/api/v2/auditlog", &[], &self_params)),
        );
    }
    let items: Vec<Value> = shown.iter().map(|x| render::audit_entry(a, x)).collect();
    Ok(Reply::json(
        StatusCode::OK,
        &json!({"_links": links, "items": items}),
    ))
}
