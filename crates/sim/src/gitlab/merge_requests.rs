//! Merge requests: listing (filtered by state and branches, paged), one merge request, and
//! opening one.

use http::StatusCode;
use serde_json::{Value, json};

use super::paging::paged;
use super::projects::{OWNER, access_level, forbidden, visible_index};
use super::state::{GitlabState, MergeRequest, MrState};
use super::{GlCtx, created, message, missing, ok, render};
use crate::sim::Reply;

fn query<'a>(ctx: &'a GlCtx, name: &str) -> Option<&'a str> {
    ctx.query
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// `GET /projects/:id/merge_requests?state=&source_branch=&target_branch=`.
pub(super) fn list(ctx: &GlCtx, gl: &GitlabState, id: &str) -> Reply {
    let i = match visible_index(ctx, gl, id) {
        Ok(i) => i,
        Err(r) => return r,
    };
    let p = &gl.projects[i];
    let state = query(ctx, "state").unwrap_or("all");
    if !matches!(state, "opened" | "closed" | "merged" | "all" | "locked") {
        return Reply::json(
            StatusCode::BAD_REQUEST,
            &json!({"error": "state does not have a valid value"}),
        );
    }
    let source = query(ctx, "source_branch");
    let target = query(ctx, "target_branch");
    // Newest first, as GitLab orders by creation descending.
    let items: Vec<Value> = p
        .merge_requests
        .iter()
        .rev()
        .filter(|mr| state == "all" || mr.state.name() == state)
        .filter(|mr| source.is_none_or(|s| mr.source_branch == s))
        .filter(|mr| target.is_none_or(|t| mr.target_branch == t))
        .map(|mr| render::merge_request(&ctx.base, p, mr))
        .collect();
    let path = format!("/projects/{}/merge_requests", id.replace('/', "%2F"));
    paged(ctx, &path, items)
}

/// The merge request `iid` of project index `i`, as an index.
pub(super) fn mr_index(gl: &GitlabState, i: usize, iid: &str) -> Result<usize, Reply> {
    let not_found = || message(StatusCode::NOT_FOUND, "404 Not found");
    let iid: u64 = iid.parse().map_err(|_| not_found())?;
    gl.projects[i]
        .merge_requests
        .iter()
        .position(|mr| mr.iid == iid)
        .ok_or_else(not_found)
}

/// `GET /projects/:id/merge_requests/:iid`.
pub(super) fn get(ctx: &GlCtx, gl: &GitlabState, id: &str, iid: &str) -> Reply {
    let i = match visible_index(ctx, gl, id) {
        Ok(i) => i,
        Err(r) => return r,
    };
    match mr_index(gl, i, iid) {
        Ok(m) => {
            let p = &gl.projects[i];
            ok(&render::merge_request(&ctx.base, p, &p.merge_requests[m]))
        }
        Err(r) => r,
    }
}

fn refused(text: String) -> Reply {
    message(StatusCode::BAD_REQUEST, json!([text]))
}

/// `POST /projects/:id/merge_requests`.
pub(super) fn create(ctx: &GlCtx, gl: &mut GitlabState, id: &str) -> Reply {
    let i = match visible_index(ctx, gl, id) {
        Ok(i) => i,
        Err(r) => return r,
    };
    let fields = ["source_branch", "target_branch", "title"].map(|f| ctx.str_param(f));
    let [Some(source), Some(target), Some(title)] = fields else {
        let absent = ["source_branch", "target_branch", "title"]
            .iter()
            .zip(&fields)
            .find(|(_, v)| v.is_none())
            .map_or("title", |(name, _)| *name);
        return missing(absent);
    };
    let p = &gl.projects[i];
    if access_level(ctx, p) < OWNER {
        return forbidden();
    }
    if source == target {
        return refused("You can't use same project/branch for source and target".to_owned());
    }
    if !p.branches.contains_key(&source) {
        return refused(format!("Source branch \"{source}\" does not exist"));
    }
    if !p.branches.contains_key(&target) {
        return refused(format!("Target branch \"{target}\" does not exist"));
    }
    if let Some(open) = p.merge_requests.iter().find(|mr| {
        mr.state == MrState::Opened && mr.source_branch == source && mr.target_branch == target
    }) {
        return message(
            StatusCode::CONFLICT,
            json!([format!(
                "Another open merge request already exists for this source branch: !{}",
                open.iid
            )]),
        );
    }
    let sha = p.branches.get(&source).cloned().unwrap_or_default();
    let iid = p.merge_requests.iter().map(|mr| mr.iid).max().unwrap_or(0) + 1;
    let mr = MergeRequest {
        id: gl.next_mr_id(),
        iid,
        title,
        description: ctx.str_param("description").unwrap_or_default(),
        source_branch: source,
        target_branch: target,
        state: MrState::Opened,
        author: ctx.user.username.clone(),
        sha,
        merge_commit_sha: None,
        squash_commit_sha: None,
        created_at: ctx.now,
        merged_at: None,
    };
    let p = &mut gl.projects[i];
    let body = render::merge_request(&ctx.base, p, &mr);
    p.merge_requests.push(mr);
    created(&body)
}
