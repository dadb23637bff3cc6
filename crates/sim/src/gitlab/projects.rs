//! `GET /projects/:id` and `POST /projects`, and who may see and write a project: its
//! namespace's user is its owner (access level 50); anyone else may read a public or
//! internal project and write nothing.

use std::collections::{BTreeMap, HashMap};

use http::StatusCode;
use serde_json::{Value, json};

use super::state::{Commit, FileEntry, GitlabState, Project, Tree};
use super::{GlCtx, created, message, missing, ok, project_not_found, render};
use crate::sim::Reply;

/// GitLab's owner access level.
pub(super) const OWNER: u32 = 50;

/// The requester's access level on a project: the owner 50, anyone else 0.
pub(super) fn access_level(ctx: &GlCtx, p: &Project) -> u32 {
    if p.namespace.eq_ignore_ascii_case(&ctx.user.username) {
        OWNER
    } else {
        0
    }
}

/// The project `:id` names, if the requester may see it.
pub(super) fn visible_index(ctx: &GlCtx, gl: &GitlabState, id: &str) -> Result<usize, Reply> {
    let i = gl.project_index(id).ok_or_else(project_not_found)?;
    let p = &gl.projects[i];
    if p.visibility == "private" && access_level(ctx, p) == 0 {
        return Err(project_not_found());
    }
    Ok(i)
}

/// `403 Forbidden` for a write by someone who may only read.
pub(super) fn forbidden() -> Reply {
    message(StatusCode::FORBIDDEN, "403 Forbidden")
}

/// `GET /projects/:id`.
pub(super) fn get(ctx: &GlCtx, gl: &GitlabState, id: &str) -> Reply {
    match visible_index(ctx, gl, id) {
        Ok(i) => ok(&render::project(&ctx.base, &gl.projects[i])),
        Err(r) => r,
    }
}

/// A project path GitLab accepts: letters, digits, `_`, `-`, `.`; not starting or ending
/// with a special character, not ending in `.git` or `.atom`.
fn valid_path(path: &str) -> bool {
    let special = |c: char| matches!(c, '_' | '-' | '.');
    !path.is_empty()
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || special(c))
        && !path.starts_with(special)
        && !path.ends_with(special)
        && !path.ends_with(".git")
        && !path.ends_with(".atom")
}

/// The path GitLab derives from a name: lower case, runs of other characters as `-`.
fn path_from_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.trim().chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '_' | '.') {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_owned()
}

/// `POST /projects`.
pub(super) fn create(ctx: &GlCtx, gl: &mut GitlabState) -> Reply {
    let name = ctx.str_param("name");
    let path = ctx.str_param("path");
    let (name, path) = match (name, path) {
        (Some(n), Some(p)) => (n, p),
        (Some(n), None) => {
            let p = path_from_name(&n);
            (n, p)
        }
        (None, Some(p)) => (p.clone(), p),
        (None, None) => {
            return Reply::json(
                StatusCode::BAD_REQUEST,
                &json!({"error": "name, path are missing, at least one parameter must be provided"}),
            );
        }
    };
    if let Some(ns) = ctx.u64_param("namespace_id")
        && ns != ctx.user.id
    {
        return message(StatusCode::NOT_FOUND, "404 Namespace Not Found");
    }
    if name.trim().is_empty() {
        return missing("name");
    }
    if !valid_path(&path) {
        return message(
            StatusCode::BAD_REQUEST,
            json!({"path": ["can contain only letters, digits, '_', '-' and '.'. Cannot start with '-', end in '.git' or end in '.atom'"]}),
        );
    }
    let visibility = ctx
        .str_param("visibility")
        .unwrap_or_else(|| "private".to_owned());
    if !matches!(visibility.as_str(), "private" | "internal" | "public") {
        return Reply::json(
            StatusCode::BAD_REQUEST,
            &json!({"error": "visibility does not have a valid value"}),
        );
    }
    let mine = |p: &&Project| p.namespace.eq_ignore_ascii_case(&ctx.user.username);
    let mut taken = serde_json::Map::new();
    if gl.projects.iter().filter(mine).any(|p| p.name == name) {
        taken.insert("name".into(), json!(["has already been taken"]));
    }
    if gl
        .projects
        .iter()
        .filter(mine)
        .any(|p| p.path.eq_ignore_ascii_case(&path))
    {
        taken.insert("path".into(), json!(["has already been taken"]));
    }
    if !taken.is_empty() {
        return message(StatusCode::BAD_REQUEST, Value::Object(taken));
    }
    let initial_branch = ctx
        .str_param("default_branch")
        .unwrap_or_else(|| "main".to_owned());
    let mut project = Project {
        id: gl.next_project_id(),
        name: name.clone(),
        path,
        namespace: ctx.user.username.clone(),
        namespace_id: ctx.user.id,
        visibility,
        default_branch: None,
        initial_branch: initial_branch.clone(),
        created_at: ctx.now,
        commits: HashMap::new(),
        branches: BTreeMap::new(),
        protected: Vec::new(),
        merge_requests: Vec::new(),
    };
    if ctx.bool_param("initialize_with_readme") == Some(true) {
        let tree: Tree = BTreeMap::from([(
            "README.md".to_owned(),
            FileEntry {
                content: format!("# {name}\n").into_bytes(),
                executable: false,
            },
        )]);
        let message = "Initial commit".to_owned();
        let id = gl.commit_id(&[], &message, &tree);
        project.commits.insert(
            id.clone(),
            Commit {
                id: id.clone(),
                parent_ids: Vec::new(),
                message,
                author: ctx.user.username.clone(),
                created_at: ctx.now,
                tree,
            },
        );
        project.branches.insert(initial_branch.clone(), id);
        project.default_branch = Some(initial_branch);
    }
    let body = render::project(&ctx.base, &project);
    gl.projects.push(project);
    created(&body)
}
