//! The group endpoints: `GET /groups/:id`, `…/descendant_groups`, `…/projects` and
//! `…/milestones`, and who may see a group (its members: every token owner).

use std::cell::RefCell;

use http::StatusCode;
use serde_json::Value;

use super::super::paging::paged_by;
use super::super::{GlCtx, message, ok};
use super::model::GroupWorld;
use super::params::{Key, order, q, sort_by};
use super::render;
use crate::sim::Reply;

/// `404 Group Not Found`.
fn group_not_found() -> Reply {
    message(StatusCode::NOT_FOUND, "404 Group Not Found")
}

/// The group `id` names, if the requester may see it.
fn visible_group(ctx: &GlCtx, w: &GroupWorld, id: &str) -> Result<usize, Reply> {
    let gi = w.group_index(id).ok_or_else(group_not_found)?;
    if !w.is_member(&ctx.user.username) {
        return Err(group_not_found());
    }
    Ok(gi)
}

/// A boolean query parameter with its default.
fn flag(ctx: &GlCtx, name: &str, default: bool) -> bool {
    match q(ctx, name) {
        Some(v) => matches!(v, "true" | "1" | "yes"),
        None => default,
    }
}

/// Routes `/groups/:id/…`.
pub(super) fn group(ctx: &GlCtx, w: &mut GroupWorld, id: &str, rest: &[&str]) -> Option<Reply> {
    // The seeded group is the simulator's only group: any other id or path is not found.
    let gi = match visible_group(ctx, w, id) {
        Ok(gi) => gi,
        Err(r) => return Some(r),
    };
    let path = format!("/groups/{}", id.replace('/', "%2F"));
    // No group list offers keyset pagination.
    let list = matches!(rest, ["descendant_groups"] | ["projects"] | ["milestones"]);
    if list && super::keyset::asked(ctx) {
        return Some(super::keyset::unsupported());
    }
    Some(match rest {
        [] => show(ctx, w, gi),
        ["descendant_groups"] => descendants(ctx, w, gi, &format!("{path}/descendant_groups")),
        ["projects"] => projects(ctx, w, gi, &format!("{path}/projects")),
        ["milestones"] => milestones(ctx, w, gi, &format!("{path}/milestones")),
        _ => return None,
    })
}

/// `GET /groups/:id`, with its own projects (up to 100) unless `with_projects=false`.
fn show(ctx: &GlCtx, w: &GroupWorld, gi: usize) -> Reply {
    let mut v = render::group(&ctx.base, w, gi);
    if flag(ctx, "with_projects", true) {
        let projects: Vec<Value> = w
            .projects
            .iter()
            .filter(|p| p.group == gi && !p.deleted)
            .take(100)
            .map(|p| render::project(&ctx.base, w, p))
            .collect();
        v["projects"] = Value::Array(projects);
        v["shared_projects"] = Value::Array(Vec::new());
    }
    ok(&v)
}

/// `GET /groups/:id/descendant_groups` (`order_by` name|path|id, default name asc).
fn descendants(ctx: &GlCtx, w: &GroupWorld, gi: usize, path: &str) -> Reply {
    let (by, desc) = match order(ctx, &["name", "path", "id"], "name", false) {
        Ok(o) => o,
        Err(r) => return r,
    };
    let mut found: Vec<&usize> = Vec::new();
    let all: Vec<usize> = (0..w.groups.len())
        .filter(|&g| g != gi && w.is_within(g, gi))
        .collect();
    found.extend(all.iter());
    sort_by(&mut found, desc, |&g| {
        let group = &w.groups[g];
        match by {
            "id" => Key::Id(group.id),
            "path" => Key::Text(group.path.clone(), group.id),
            _ => Key::Text(group.name.clone(), group.id),
        }
    });
    paged_by(ctx, path, &found, |&&g| render::group(&ctx.base, w, g))
}

/// `GET /groups/:id/projects`: `include_subgroups` (default false), `with_shared` (default
/// true; the seeded group shares no project in), `order_by` (default created_at desc). A
/// project the `deleted_after_listing` scenario marks is deleted once a page has served it.
fn projects(ctx: &GlCtx, w: &mut GroupWorld, gi: usize, path: &str) -> Reply {
    let allowed = [
        "id",
        "name",
        "path",
        "created_at",
        "updated_at",
        "last_activity_at",
        "similarity",
        "star_count",
    ];
    let (by, desc) = match order(ctx, &allowed, "created_at", true) {
        Ok(o) => o,
        Err(r) => return r,
    };
    let subgroups = flag(ctx, "include_subgroups", false);
    let served: RefCell<Vec<u64>> = RefCell::new(Vec::new());
    let reply = {
        let w: &GroupWorld = w;
        let mut found: Vec<&super::model::Project> = w
            .projects
            .iter()
            .filter(|p| !p.deleted)
            .filter(|p| p.group == gi || (subgroups && w.is_within(p.group, gi)))
            .collect();
        sort_by(&mut found, desc, |p| match by {
            "id" | "similarity" | "star_count" => Key::Id(p.id),
            "name" => Key::Text(p.name.clone(), p.id),
            "path" => Key::Text(p.path.clone(), p.id),
            "updated_at" | "last_activity_at" => Key::Time(p.last_activity_at(), p.id),
            _ => Key::Time(p.created_at, p.id),
        });
        paged_by(ctx, path, &found, |p| {
            served.borrow_mut().push(p.id);
            render::project(&ctx.base, w, p)
        })
    };
    for p in w.projects.iter_mut() {
        if p.deleted_after_listing && served.borrow().contains(&p.id) {
            p.deleted = true;
        }
    }
    reply
}

/// `GET /groups/:id/milestones` (the group's own; `state` active|closed).
fn milestones(ctx: &GlCtx, w: &GroupWorld, gi: usize, path: &str) -> Reply {
    let state = q(ctx, "state");
    if state.is_some_and(|s| !matches!(s, "active" | "closed" | "all")) {
        return super::params::invalid_value("state");
    }
    let g = &w.groups[gi];
    let found: Vec<_> = g
        .milestones
        .iter()
        .filter(|m| state.is_none_or(|s| s == "all" || m.state == s))
        .collect();
    paged_by(ctx, path, &found, |m| {
        render::milestone(&ctx.base, ("group", g.id, &g.full_path), m)
    })
}
