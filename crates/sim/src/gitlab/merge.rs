//! `PUT /projects/:id/merge_requests/:iid/merge`: the three-way merge of a merge request's
//! source into its target (a conflict when both sides changed one file differently since
//! their merge base), with GitLab's refusals: not open or draft 405, conflicts 406, a stale
//! `sha` 409.

use http::StatusCode;

use super::merge_requests::mr_index;
use super::projects::{OWNER, access_level, visible_index};
use super::state::{Commit, GitlabState, MergeRequest, MrState, Project, Tree};
use super::{GlCtx, message, ok, render};
use crate::sim::Reply;

/// Why a merge request cannot be merged cleanly.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Conflict {
    /// A branch is gone.
    MissingBranch,
    /// Both sides changed these paths differently.
    Files(Vec<String>),
}

/// The target's tree with the source's changes since the merge base applied, the merge
/// base, and both heads.
pub(super) struct Merged {
    pub(super) tree: Tree,
    pub(super) base: Option<String>,
    pub(super) source_head: String,
    pub(super) target_head: String,
}

/// Merges `mr`'s source into its target, as trees.
pub(super) fn merged_tree(p: &Project, mr: &MergeRequest) -> Result<Merged, Conflict> {
    let (Some(source), Some(target)) = (p.head(&mr.source_branch), p.head(&mr.target_branch))
    else {
        return Err(Conflict::MissingBranch);
    };
    let base = p.merge_base(&source.id, &target.id);
    let empty = Tree::new();
    let base_tree = base
        .as_ref()
        .and_then(|b| p.commits.get(b))
        .map_or(&empty, |c| &c.tree);
    let mut tree = target.tree.clone();
    let mut conflicts = Vec::new();
    let paths: std::collections::BTreeSet<&String> =
        base_tree.keys().chain(source.tree.keys()).collect();
    for path in paths {
        let (b, s, t) = (
            base_tree.get(path),
            source.tree.get(path),
            target.tree.get(path),
        );
        if s == b {
            continue;
        }
        if t != b && t != s {
            conflicts.push(path.clone());
            continue;
        }
        match s {
            Some(entry) => tree.insert(path.clone(), entry.clone()),
            None => tree.remove(path),
        };
    }
    if !conflicts.is_empty() {
        return Err(Conflict::Files(conflicts));
    }
    Ok(Merged {
        tree,
        base,
        source_head: source.id.clone(),
        target_head: target.id.clone(),
    })
}

/// Whether the requester may merge into `branch`.
fn may_merge(ctx: &GlCtx, p: &Project, branch: &str) -> bool {
    let level = access_level(ctx, p);
    match p.protection(branch) {
        None => level >= OWNER,
        Some(pb) => pb.merge_access_level > 0 && level >= pb.merge_access_level,
    }
}

fn add_commit(
    gl: &mut GitlabState,
    i: usize,
    parents: Vec<String>,
    message: String,
    tree: Tree,
    ctx: &GlCtx,
) -> String {
    let id = gl.commit_id(&parents, &message, &tree);
    let commit = Commit {
        id: id.clone(),
        parent_ids: parents,
        message,
        author: ctx.user.username.clone(),
        created_at: ctx.now,
        tree,
    };
    gl.projects[i].commits.insert(id.clone(), commit);
    id
}

/// `PUT /projects/:id/merge_requests/:iid/merge`.
pub(super) fn merge(ctx: &GlCtx, gl: &mut GitlabState, id: &str, iid: &str) -> Reply {
    let i = match visible_index(ctx, gl, id) {
        Ok(i) => i,
        Err(r) => return r,
    };
    let m = match mr_index(gl, i, iid) {
        Ok(m) => m,
        Err(r) => return r,
    };
    let p = &gl.projects[i];
    let mr = &p.merge_requests[m];
    if mr.state != MrState::Opened || mr.is_draft() {
        return message(StatusCode::METHOD_NOT_ALLOWED, "405 Method Not Allowed");
    }
    if !may_merge(ctx, p, &mr.target_branch) {
        return message(StatusCode::UNAUTHORIZED, "401 Unauthorized");
    }
    let merged = match merged_tree(p, mr) {
        Ok(merged) => merged,
        Err(_) => return message(StatusCode::NOT_ACCEPTABLE, "Branch cannot be merged"),
    };
    if let Some(sha) = ctx.str_param("sha")
        && sha != merged.source_head
    {
        return message(
            StatusCode::CONFLICT,
            format!(
                "SHA does not match HEAD of source branch: {}",
                merged.source_head
            ),
        );
    }
    let (source, target, title) = (
        mr.source_branch.clone(),
        mr.target_branch.clone(),
        mr.title.clone(),
    );
    let full = p.path_with_namespace();
    let squash = ctx.bool_param("squash").unwrap_or(false);
    let squash_sha = squash.then(|| {
        let parents: Vec<String> = merged.base.iter().cloned().collect();
        let tree = gl.projects[i]
            .commits
            .get(&merged.source_head)
            .map(|c| c.tree.clone())
            .unwrap_or_default();
        add_commit(gl, i, parents, title.clone(), tree, ctx)
    });
    let merge_message = ctx.str_param("merge_commit_message").unwrap_or_else(|| {
        format!(
            "Merge branch '{source}' into '{target}'\n\n{title}\n\nSee merge request {full}!{iid}"
        )
    });
    let second_parent = squash_sha
        .clone()
        .unwrap_or_else(|| merged.source_head.clone());
    let merge_sha = add_commit(
        gl,
        i,
        vec![merged.target_head, second_parent],
        merge_message,
        merged.tree,
        ctx,
    );
    let p = &mut gl.projects[i];
    p.branches.insert(target, merge_sha.clone());
    let remove_source = ctx
        .bool_param("should_remove_source_branch")
        .unwrap_or(false);
    if remove_source
        && p.protection(&source).is_none()
        && p.default_branch.as_deref() != Some(source.as_str())
    {
        p.branches.remove(&source);
    }
    let mr = &mut p.merge_requests[m];
    mr.state = MrState::Merged;
    mr.sha = merged.source_head;
    mr.merge_commit_sha = Some(merge_sha);
    mr.squash_commit_sha = squash_sha;
    mr.merged_at = Some(ctx.now);
    let p = &gl.projects[i];
    ok(&render::merge_request(&ctx.base, p, &p.merge_requests[m]))
}
