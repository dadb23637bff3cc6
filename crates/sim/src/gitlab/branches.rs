//! Branches: listing (paged), one branch, creation, and protection.

use http::StatusCode;
use serde_json::Value;

use super::paging::paged;
use super::projects::{OWNER, access_level, forbidden, visible_index};
use super::state::{GitlabState, ProtectedBranch};
use super::{GlCtx, created, message, missing, ok, render};
use crate::sim::Reply;

/// GitLab's default push and merge access level for a protected branch: maintainers.
const MAINTAINER: u32 = 40;

/// A branch name git accepts (`git check-ref-format --branch`, the common rules).
pub(super) fn valid_branch_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && !name.starts_with('/')
        && !name.ends_with('/')
        && !name.ends_with('.')
        && !name.ends_with(".lock")
        && !name.contains("..")
        && !name.contains("//")
        && !name.contains("@{")
        && !name
            .chars()
            .any(|c| c.is_ascii_control() || " ~^:?*[\\".contains(c))
}

/// The project's path as a URL segment (`alice%2Fwidgets` or the id the client used).
fn encoded(id: &str) -> String {
    id.replace('/', "%2F")
}

/// `GET /projects/:id/repository/branches`.
pub(super) fn list(ctx: &GlCtx, gl: &GitlabState, id: &str) -> Reply {
    let i = match visible_index(ctx, gl, id) {
        Ok(i) => i,
        Err(r) => return r,
    };
    let p = &gl.projects[i];
    let search = ctx
        .query
        .iter()
        .find(|(k, _)| k == "search")
        .map(|(_, v)| v.to_ascii_lowercase());
    let items: Vec<Value> = p
        .branches
        .keys()
        .filter(|n| {
            search
                .as_deref()
                .is_none_or(|s| n.to_ascii_lowercase().contains(s))
        })
        .map(|n| render::branch(&ctx.base, p, n))
        .collect();
    let path = format!("/projects/{}/repository/branches", encoded(id));
    paged(ctx, &path, items)
}

/// `GET /projects/:id/repository/branches/:branch`.
pub(super) fn get(ctx: &GlCtx, gl: &GitlabState, id: &str, name: &str) -> Reply {
    let i = match visible_index(ctx, gl, id) {
        Ok(i) => i,
        Err(r) => return r,
    };
    let p = &gl.projects[i];
    if p.branches.contains_key(name) {
        ok(&render::branch(&ctx.base, p, name))
    } else {
        message(StatusCode::NOT_FOUND, "404 Branch Not Found")
    }
}

/// `POST /projects/:id/repository/branches?branch=NAME&ref=REF`.
pub(super) fn create(ctx: &GlCtx, gl: &mut GitlabState, id: &str) -> Reply {
    let i = match visible_index(ctx, gl, id) {
        Ok(i) => i,
        Err(r) => return r,
    };
    let Some(branch) = ctx.str_param("branch") else {
        return missing("branch");
    };
    let Some(reference) = ctx.str_param("ref") else {
        return missing("ref");
    };
    let p = &mut gl.projects[i];
    if access_level(ctx, p) < OWNER {
        return forbidden();
    }
    if !valid_branch_name(&branch) {
        return message(StatusCode::BAD_REQUEST, "Branch name is invalid");
    }
    if p.branches.contains_key(&branch) {
        return message(StatusCode::BAD_REQUEST, "Branch already exists");
    }
    let Some(sha) = p.resolve(&reference) else {
        return message(
            StatusCode::BAD_REQUEST,
            format!("Invalid reference name: {reference}"),
        );
    };
    p.branches.insert(branch.clone(), sha);
    created(&render::branch(&ctx.base, p, &branch))
}

fn level_param(ctx: &GlCtx, name: &str) -> Result<u32, Reply> {
    match ctx.u64_param(name) {
        None if ctx.params.contains_key(name) => Err(bad_level(name)),
        None => Ok(MAINTAINER),
        Some(l @ (0 | 30 | 40 | 60)) => Ok(l as u32),
        Some(_) => Err(bad_level(name)),
    }
}

fn bad_level(name: &str) -> Reply {
    Reply::json(
        StatusCode::BAD_REQUEST,
        &serde_json::json!({"error": format!("{name} does not have a valid value")}),
    )
}

/// `POST /projects/:id/protected_branches`.
pub(super) fn protect(ctx: &GlCtx, gl: &mut GitlabState, id: &str) -> Reply {
    let i = match visible_index(ctx, gl, id) {
        Ok(i) => i,
        Err(r) => return r,
    };
    let Some(name) = ctx.str_param("name") else {
        return missing("name");
    };
    let (push, merge) = match (
        level_param(ctx, "push_access_level"),
        level_param(ctx, "merge_access_level"),
    ) {
        (Ok(p), Ok(m)) => (p, m),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    let allow_force_push = ctx.bool_param("allow_force_push").unwrap_or(false);
    if access_level(ctx, &gl.projects[i]) < OWNER {
        return forbidden();
    }
    if gl.projects[i].protection(&name).is_some() {
        return message(
            StatusCode::CONFLICT,
            format!("Protected branch '{name}' already exists"),
        );
    }
    let pb = ProtectedBranch {
        id: gl.next_protected_id(),
        name,
        push_access_level: push,
        merge_access_level: merge,
        allow_force_push,
    };
    let body = render::protected_branch(&pb);
    gl.projects[i].protected.push(pb);
    created(&body)
}
