//! The seeded GitLab group, served read-only: a top group with nested subgroups, their
//! projects, and each project's merge requests (commits, approvals, notes), pipelines (jobs),
//! issues (notes), milestones, deployments, releases and feature flags; group milestones;
//! GitLab.com's per-endpoint limits; the scenarios (feature flags forbidden, a project
//! deleted after it was listed); and the test hooks that change data between two syncs and
//! count what the group holds.
//!
//! It owns its data ([`model`]), its seeding ([`seed`]) and its routes; the request pipeline,
//! the throttle and paging stay in the parent module.

// A route's error is the response itself, built at most once per request.
#![allow(clippy::result_large_err)]

mod keyset;
pub(crate) mod limits;
pub(crate) mod model;
mod params;
mod project_lists;
mod render;
mod routes;
pub(crate) mod seed;
mod spec;
mod touch;

pub use spec::{GitlabEndpointLimits, GitlabGroupSpec};
pub use touch::{GitlabGroupCounts, GitlabTouched};

pub(crate) use model::GroupState;

use http::Method;

use super::GlCtx;
use super::state::GitlabState;
use crate::sim::Reply;

/// Answers a request that belongs to the seeded group; `None` hands it back to the routes of
/// projects created through the API.
pub(crate) fn route(ctx: &GlCtx, gl: &mut GitlabState, seg: &[&str]) -> Option<Reply> {
    if !matches!(ctx.method, Method::GET | Method::HEAD) {
        return None;
    }
    let gs = &mut gl.group;
    let world = gs.world.as_mut()?;
    let reply = match seg {
        ["groups", id, rest @ ..] => routes::group(ctx, world, id, rest),
        ["projects", id, rest @ ..] => {
            world.project_index(id)?;
            Some(project_lists::project(ctx, world, id, rest))
        }
        _ => None,
    }?;
    let every = world.stall_page_every as u64;
    // A keyset page carries no paging header but is a page all the same.
    let page = reply.headers.contains_key("x-page") || keyset::asked(ctx);
    if reply.status.is_success() && page {
        gs.pages_served += 1;
        gs.stall_this_answer = every > 0 && gs.pages_served.is_multiple_of(every);
    }
    Some(reply)
}

/// Whether the answer just routed is a page the `stall_page_every` scenario stalls (and
/// clears the mark).
pub(crate) fn take_stall(gl: &mut GitlabState) -> bool {
    std::mem::take(&mut gl.group.stall_this_answer)
}
