//! `POST /projects/:id/repository/commits`: a commit of file actions (create, update,
//! delete, move, chmod) onto a branch, refused on a protected branch the requester may not
//! push to. A `file_path` or `previous_path` GitLab refuses (absolute, with an empty, `.`, `..`
//! or `.git` component) answers 400 before any action applies; the checks are the
//! simulator's own.

use base64::Engine;
use http::StatusCode;
use serde_json::Value;

use super::projects::{OWNER, access_level, visible_index};
use super::state::{Commit, FileEntry, GitlabState, Project, Tree};
use super::{GlCtx, created, message, missing, render};
use crate::sim::Reply;

/// The refusal of a push the requester has no right to.
pub(super) fn push_forbidden() -> Reply {
    message(
        StatusCode::FORBIDDEN,
        "403 Forbidden - You are not allowed to push into this branch",
    )
}

/// Whether the requester may push to `branch`: the project's owner, unless the branch is
/// protected with a push level above the owner's or "no one" (0).
pub(super) fn may_push(ctx: &GlCtx, p: &Project, branch: &str) -> bool {
    let level = access_level(ctx, p);
    match p.protection(branch) {
        None => level >= OWNER,
        Some(pb) => pb.push_access_level > 0 && level >= pb.push_access_level,
    }
}

fn bad_request(text: impl Into<Value>) -> Reply {
    message(StatusCode::BAD_REQUEST, text)
}

fn invalid(index: usize, field: &str) -> Reply {
    Reply::json(
        StatusCode::BAD_REQUEST,
        &serde_json::json!({"error": format!("actions[{index}][{field}] is missing")}),
    )
}

/// Whether GitLab takes `path` as a file's path: relative, components separated by single
/// `/`, none empty, `.`, `..` or `.git` (in any case), and no NUL.
fn valid_file_path(path: &str) -> bool {
    !path.contains('\0')
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != ".." && !c.eq_ignore_ascii_case(".git"))
}

/// GitLab's refusal of an invalid path parameter.
fn invalid_path(index: usize, field: &str) -> Reply {
    Reply::json(
        StatusCode::BAD_REQUEST,
        &serde_json::json!({"error": format!("actions[{index}][{field}] should be a valid file path")}),
    )
}

/// The content of an action, decoded by its `encoding`.
fn content_of(index: usize, action: &Value) -> Result<Option<Vec<u8>>, Reply> {
    let Some(content) = action.get("content").and_then(Value::as_str) else {
        return Ok(None);
    };
    match action
        .get("encoding")
        .and_then(Value::as_str)
        .unwrap_or("text")
    {
        "text" => Ok(Some(content.as_bytes().to_vec())),
        "base64" => base64::engine::general_purpose::STANDARD
            .decode(content.trim())
            .map(Some)
            .map_err(|_| bad_request("Content is not valid base64")),
        _ => Err(Reply::json(
            StatusCode::BAD_REQUEST,
            &serde_json::json!({"error": format!("actions[{index}][encoding] does not have a valid value")}),
        )),
    }
}

fn exists() -> Reply {
    bad_request("A file with this name already exists")
}

fn absent() -> Reply {
    bad_request("A file with this name doesn't exist")
}

/// Applies one action to `tree`.
fn apply(tree: &mut Tree, index: usize, action: &Value) -> Result<(), Reply> {
    let Some(kind) = action.get("action").and_then(Value::as_str) else {
        return Err(invalid(index, "action"));
    };
    let Some(path) = action.get("file_path").and_then(Value::as_str) else {
        return Err(invalid(index, "file_path"));
    };
    if !valid_file_path(path) {
        return Err(invalid_path(index, "file_path"));
    }
    let path = path.to_owned();
    let content = content_of(index, action)?;
    let executable = action.get("execute_filemode").and_then(Value::as_bool);
    match kind {
        "create" => {
            if tree.contains_key(&path) {
                return Err(exists());
            }
            let entry = FileEntry {
                content: content.unwrap_or_default(),
                executable: executable.unwrap_or(false),
            };
            tree.insert(path, entry);
        }
        "update" => {
            let entry = tree.get_mut(&path).ok_or_else(absent)?;
            entry.content = content.unwrap_or_default();
            if let Some(x) = executable {
                entry.executable = x;
            }
        }
        "delete" => {
            tree.remove(&path).ok_or_else(absent)?;
        }
        "move" => {
            let Some(from) = action.get("previous_path").and_then(Value::as_str) else {
                return Err(invalid(index, "previous_path"));
            };
            if !valid_file_path(from) {
                return Err(invalid_path(index, "previous_path"));
            }
            if from != path && tree.contains_key(&path) {
                return Err(exists());
            }
            let mut entry = tree.remove(from).ok_or_else(absent)?;
            if let Some(c) = content {
                entry.content = c;
            }
            tree.insert(path, entry);
        }
        "chmod" => {
            let Some(x) = executable else {
                return Err(invalid(index, "execute_filemode"));
            };
            tree.get_mut(&path).ok_or_else(absent)?.executable = x;
        }
        _ => {
            return Err(Reply::json(
                StatusCode::BAD_REQUEST,
                &serde_json::json!({"error": format!("actions[{index}][action] does not have a valid value")}),
            ));
        }
    }
    Ok(())
}

/// The commit the new one builds on: the branch's head, else `start_branch`'s (or
/// `start_sha`), else none in an empty repository.
fn parent_of(ctx: &GlCtx, p: &Project, branch: &str) -> Result<Option<String>, Reply> {
    let start = ctx.str_param("start_branch");
    let start_sha = ctx.str_param("start_sha");
    if let Some(head) = p.branches.get(branch) {
        if start.as_deref().is_some_and(|s| s != branch) || start_sha.is_some() {
            return Err(bad_request(format!(
                "A branch called '{branch}' already exists. Switch to that branch in order to make changes"
            )));
        }
        return Ok(Some(head.clone()));
    }
    if let Some(s) = start {
        return match p.branches.get(&s) {
            Some(id) => Ok(Some(id.clone())),
            None => Err(bad_request(format!("Invalid reference name: {s}"))),
        };
    }
    if let Some(sha) = start_sha {
        return match p.commits.get(&sha) {
            Some(c) => Ok(Some(c.id.clone())),
            None => Err(bad_request(format!("Invalid reference name: {sha}"))),
        };
    }
    if p.branches.is_empty() {
        return Ok(None);
    }
    Err(bad_request(
        "You can only create or edit files when you are on a branch",
    ))
}

/// `POST /projects/:id/repository/commits`.
pub(super) fn create(ctx: &GlCtx, gl: &mut GitlabState, id: &str) -> Reply {
    let i = match visible_index(ctx, gl, id) {
        Ok(i) => i,
        Err(r) => return r,
    };
    let Some(branch) = ctx.str_param("branch") else {
        return missing("branch");
    };
    let Some(commit_message) = ctx.str_param("commit_message") else {
        return missing("commit_message");
    };
    let Some(actions) = ctx.params.get("actions").and_then(Value::as_array) else {
        return missing("actions");
    };
    if actions.is_empty() {
        return Reply::json(
            StatusCode::BAD_REQUEST,
            &serde_json::json!({"error": "actions is empty"}),
        );
    }
    let p = &gl.projects[i];
    if !super::branches::valid_branch_name(&branch) {
        return bad_request("Branch name is invalid");
    }
    if !may_push(ctx, p, &branch) {
        return push_forbidden();
    }
    let parent = match parent_of(ctx, p, &branch) {
        Ok(parent) => parent,
        Err(r) => return r,
    };
    let mut tree = parent
        .as_ref()
        .and_then(|id| p.commits.get(id))
        .map(|c| c.tree.clone())
        .unwrap_or_default();
    for (index, action) in actions.iter().enumerate() {
        if let Err(r) = apply(&mut tree, index, action) {
            return r;
        }
    }
    let parent_ids: Vec<String> = parent.into_iter().collect();
    let id = gl.commit_id(&parent_ids, &commit_message, &tree);
    let commit = Commit {
        id: id.clone(),
        parent_ids,
        message: commit_message,
        author: ctx.user.username.clone(),
        created_at: ctx.now,
        tree,
    };
    let p = &mut gl.projects[i];
    if p.branches.is_empty() {
        p.default_branch = Some(branch.clone());
    }
    let body = render::commit(&ctx.base, p, &commit);
    p.commits.insert(id.clone(), commit);
    p.branches.insert(branch, id);
    created(&body)
}
