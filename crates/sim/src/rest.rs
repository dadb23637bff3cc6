//! REST routes: reads with Link pagination, and the Git provider contract's mutations.

use std::collections::{BTreeMap, HashSet};

use http::{Method, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::feed::{self, FeedPage};
use crate::render;
use crate::scenario::Scenario;
use std::sync::MutexGuard;

use crate::sim::{Ctx, Reply, Simulator, lock, stamp};
use crate::world::{BranchRec, CommitRec, FileRec, IssueRec, PullRec, RepoContent, RepoRec, World};

mod contents;
mod events;
mod git;
mod issues;
mod paging;
mod pulls;
mod repos;
mod search;
mod users;

use paging::{link_header, page_params, paged, paged_wrapped, slice_page};

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
}

/// A read: `GET` or `HEAD`.
fn is_read(ctx: &Ctx) -> bool {
    ctx.method == Method::GET || ctx.method == Method::HEAD
}
