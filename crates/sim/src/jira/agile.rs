//! Jira Software's agile 1.0 endpoints: boards (`maxResults` silently capped at 50, pages
//! with `isLast` and no `total`) and a board's sprints (closed, active, future; a kanban
//! board answers 400). A user without Jira Software access gets 403, the description's only
//! 403 here.

use http::{Method, StatusCode};
use serde_json::{Map, Value, json};

use super::model::{BoardKind, Site};
use super::render;
use super::routes::{not_found, offset_page};
use super::{JCtx, errors};
use crate::sim::Reply;

/// The agile API's page cap, whatever is asked.
pub(crate) const AGILE_CAP: usize = 50;

/// Dispatches an agile request.
pub(crate) fn route(ctx: &JCtx, site: &Site, seg: &[&str]) -> Reply {
    let login = &site.users[ctx.user].login;
    if site
        .spec
        .agile_unlicensed
        .iter()
        .any(|u| u.eq_ignore_ascii_case(login))
    {
        return errors(
            StatusCode::FORBIDDEN,
            "You do not have a valid Jira Software license.",
        );
    }
    if ctx.method != Method::GET {
        return not_found();
    }
    match seg {
        ["board"] => boards(ctx, site),
        ["board", id, "sprint"] => sprints(ctx, site, id),
        _ => not_found(),
    }
}

fn page(start: usize, max: usize, shown: usize, total: usize, values: Vec<Value>) -> Value {
    let mut m = Map::new();
    m.insert("maxResults".into(), json!(max));
    m.insert("startAt".into(), json!(start));
    m.insert("isLast".into(), json!(start + shown >= total));
    m.insert("values".into(), Value::Array(values));
    Value::Object(m)
}

fn boards(ctx: &JCtx, site: &Site) -> Reply {
    let (start, max) = match offset_page(ctx, AGILE_CAP, AGILE_CAP) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let types = ctx.param("type").unwrap_or_default();
    let project = ctx.param("projectKeyOrId");
    let name = ctx.param("name").map(|n| n.to_lowercase());
    let list: Vec<_> = site
        .boards
        .iter()
        .filter(|b| !site.projects[b.project].restricted)
        .filter(|b| types.is_empty() || types.split(',').any(|t| t.trim() == b.kind.name()))
        .filter(|b| {
            let p = &site.projects[b.project];
            project
                .as_deref()
                .is_none_or(|k| p.key.eq_ignore_ascii_case(k) || p.id.to_string() == k)
        })
        .filter(|b| {
            name.as_deref()
                .is_none_or(|n| b.name.to_lowercase().contains(n))
        })
        .collect();
    let values: Vec<Value> = list
        .iter()
        .skip(start)
        .take(max)
        .map(|b| {
            let p = &site.projects[b.project];
            json!({
                "id": b.id,
                "self": format!("{}/rest/agile/1.0/board/{}", ctx.base, b.id),
                "name": b.name,
                "type": b.kind.name(),
                "location": {
                    "projectId": p.id,
                    "displayName": format!("{} ({})", p.name, p.key),
                    "projectName": p.name,
                    "projectKey": p.key,
                    "projectTypeKey": "software",
                    "avatarURI": format!("{}/secure/projectavatar?size=small&pid={}", ctx.base, p.id),
                    "name": format!("{} ({})", p.name, p.key),
                },
            })
        })
        .collect();
    let shown = values.len();
    Reply::json(StatusCode::OK, &page(start, max, shown, list.len(), values))
}

fn sprints(ctx: &JCtx, site: &Site, id: &str) -> Reply {
    let board = id
        .parse::<u64>()
        .ok()
        .and_then(|id| site.boards.iter().position(|b| b.id == id))
        .filter(|&b| !site.projects[site.boards[b].project].restricted);
    let Some(board) = board else {
        return errors(
            StatusCode::NOT_FOUND,
            "Board does not exist or you do not have permission to see it.",
        );
    };
    if site.boards[board].kind == BoardKind::Kanban {
        return errors(
            StatusCode::BAD_REQUEST,
            "The board does not support sprints",
        );
    }
    let (start, max) = match offset_page(ctx, AGILE_CAP, AGILE_CAP) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let states = ctx.param("state").unwrap_or_default();
    let list: Vec<_> = site
        .sprints
        .iter()
        .filter(|s| s.board == board)
        .filter(|s| states.is_empty() || states.split(',').any(|t| t.trim() == s.state))
        .collect();
    let values: Vec<Value> = list
        .iter()
        .skip(start)
        .take(max)
        .map(|s| render::sprint(site, s, Some(&ctx.base)))
        .collect();
    let shown = values.len();
    Reply::json(StatusCode::OK, &page(start, max, shown, list.len(), values))
}
