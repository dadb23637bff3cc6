//! GitLab's JSON shapes for users, projects, branches, commits, protected branches and merge
//! requests.

use serde_json::{Value, json};

use super::GlUser;
use super::state::{Commit, MergeRequest, MrState, Project, ProtectedBranch};
use crate::render::ts;

/// What an access level is called.
fn access_description(level: u32) -> &'static str {
    match level {
        0 => "No one",
        30 => "Developers + Maintainers",
        40 => "Maintainers",
        60 => "Admins",
        _ => "Custom",
    }
}

/// `GET /user`.
pub(super) fn user(base: &str, u: &GlUser) -> Value {
    json!({
        "id": u.id,
        "username": u.username,
        "name": u.name,
        "state": "active",
        "locked": false,
        "avatar_url": null,
        "web_url": format!("{base}/{}", u.username),
        "bot": false,
    })
}

/// A project.
pub(super) fn project(base: &str, p: &Project) -> Value {
    let full = p.path_with_namespace();
    json!({
        "id": p.id,
        "name": p.name,
        "path": p.path,
        "path_with_namespace": full,
        "name_with_namespace": format!("{} / {}", p.namespace, p.name),
        "description": null,
        "default_branch": p.default_branch,
        "visibility": p.visibility,
        "empty_repo": p.branches.is_empty(),
        "archived": false,
        "web_url": format!("{base}/{full}"),
        "http_url_to_repo": format!("{base}/{full}.git"),
        "created_at": ts(p.created_at),
        "namespace": {
            "id": p.namespace_id,
            "name": p.namespace,
            "path": p.namespace,
            "kind": "user",
            "full_path": p.namespace,
        },
    })
}

/// A commit as branch listings embed it, and as the commits API answers.
pub(super) fn commit(base: &str, p: &Project, c: &Commit) -> Value {
    json!({
        "id": c.id,
        "short_id": c.short_id(),
        "title": c.title(),
        "message": c.message,
        "parent_ids": c.parent_ids,
        "author_name": c.author,
        "author_email": format!("{}@users.noreply.gitlab.invalid", c.author),
        "authored_date": ts(c.created_at),
        "committer_name": c.author,
        "committer_email": format!("{}@users.noreply.gitlab.invalid", c.author),
        "committed_date": ts(c.created_at),
        "created_at": ts(c.created_at),
        "web_url": format!("{base}/{}/-/commit/{}", p.path_with_namespace(), c.id),
    })
}

/// A branch.
pub(super) fn branch(base: &str, p: &Project, name: &str) -> Value {
    let head = p.head(name);
    let default = p.default_branch.as_deref() == Some(name);
    let merged = !default
        && match (p.branches.get(name), p.default_branch.as_deref()) {
            (Some(id), Some(d)) => p
                .branches
                .get(d)
                .is_some_and(|dh| p.ancestors(dh).contains(id)),
            _ => false,
        };
    let protection = p.protection(name);
    json!({
        "name": name,
        "commit": head.map(|c| commit(base, p, c)),
        "merged": merged,
        "protected": protection.is_some(),
        "default": default,
        "developers_can_push": protection.is_none_or(|pb| pb.push_access_level == 30),
        "developers_can_merge": protection.is_none_or(|pb| pb.merge_access_level == 30),
        "can_push": protection.is_none_or(|pb| pb.push_access_level > 0),
        "web_url": format!("{base}/{}/-/tree/{name}", p.path_with_namespace()),
    })
}

fn levels(level: u32) -> Value {
    json!([{
        "id": level + 1,
        "access_level": level,
        "access_level_description": access_description(level),
        "user_id": null,
        "group_id": null,
    }])
}

/// A protected branch.
pub(super) fn protected_branch(pb: &ProtectedBranch) -> Value {
    json!({
        "id": pb.id,
        "name": pb.name,
        "push_access_levels": levels(pb.push_access_level),
        "merge_access_levels": levels(pb.merge_access_level),
        "unprotect_access_levels": [],
        "allow_force_push": pb.allow_force_push,
        "code_owner_approval_required": false,
    })
}
/// A merge request, its merge status computed from the branches as they are now.
pub(super) fn merge_request(base: &str, p: &Project, mr: &MergeRequest) -> Value {
    let open = mr.state == MrState::Opened;
    let sha = if open {
        p.branches.get(&mr.source_branch).cloned()
    } else {
        Some(mr.sha.clone())
    };
    let conflicts = open && super::merge::merged_tree(p, mr).is_err();
    let status = if !open {
        "can_be_merged"
    } else if conflicts {
        "cannot_be_merged"
    } else {
        "can_be_merged"
    };
    let detailed = if !open {
        "not_open"
    } else if mr.is_draft() {
        "draft_status"
    } else if conflicts {
        "broken_status"
    } else {
        "mergeable"
    };
    json!({
        "id": mr.id,
        "iid": mr.iid,
        "project_id": p.id,
        "title": mr.title,
        "description": mr.description,
        "state": mr.state.name(),
        "created_at": ts(mr.created_at),
        "updated_at": ts(mr.merged_at.unwrap_or(mr.created_at)),
        "merged_at": mr.merged_at.map(ts),
        "source_branch": mr.source_branch,
        "target_branch": mr.target_branch,
        "source_project_id": p.id,
        "target_project_id": p.id,
        "author": {"username": mr.author, "name": mr.author},
        "draft": mr.is_draft(),
        "work_in_progress": mr.is_draft(),
        "merge_status": status,
        "detailed_merge_status": detailed,
        "has_conflicts": conflicts,
        "sha": sha,
        "merge_commit_sha": mr.merge_commit_sha,
        "squash_commit_sha": mr.squash_commit_sha,
        "web_url": format!("{base}/{}/-/merge_requests/{}", p.path_with_namespace(), mr.iid),
    })
}
