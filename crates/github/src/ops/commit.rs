//! `commit_files` through the Git data API: the branch's head, one tree on top of the head's
//! tree, one commit, then a fast-forward of the branch's ref.
//!
//! Why the Git data API rather than the contents API: the contents API
//! (`PUT /repos/{owner}/{repo}/contents/{path}`) makes one commit per file, so "commit these
//! three files" would become three commits, three mutations, and three points where a failure
//! leaves the branch half-changed. The data API writes blobs, a tree and a commit that nothing
//! references yet, and the branch moves in one last request: either all the files land in one
//! commit or none do. Text files ride inline in the tree; binary files are uploaded as blobs
//! first (base64). A symbolic link is an entry of mode `120000` whose content is its target,
//! as `git add` records one.
//!
//! Only the final ref update makes anything visible, so an unknown outcome before it (a lost
//! answer to a blob, tree or commit) leaves the branch untouched and is transient, not ambiguous.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use headroom_core::provider::path::{segment, segments};
use headroom_core::provider::{Commit, CommitFiles, FileContent, OpResult, ProviderError, RepoRef};
use http::Method;
use serde_json::{Value, json};

use super::GitHubOps;

/// Blobs, trees and commits create content nobody sees until the ref moves; they are still
/// mutations (5 secondary points each). The commit is the content-creating one.
pub(super) async fn commit_files(
    ops: &GitHubOps,
    repo: &RepoRef,
    commit: &CommitFiles,
) -> OpResult<Commit> {
    if commit.files.is_empty() {
        return Err(ProviderError::validation(
            "a commit needs at least one file",
        ));
    }
    let full = super::repo_path(repo)?;
    let what = format!("repository {}", repo.full_name());
    let head = ops.branch_head(repo, &commit.branch).await?;
    let head_commit = ops
        .read(format!("{full}/git/commits/{}", segment(&head)?), &what)
        .await?;
    let base_tree = head_commit
        .pointer("/tree/sha")
        .and_then(Value::as_str)
        .ok_or_else(|| ProviderError::Transient("GitHub's commit named no tree".into()))?
        .to_owned();
    let mut entries = Vec::with_capacity(commit.files.len());
    for file in &commit.files {
        let mode = file.mode.git_mode();
        let entry = match &file.content {
            None => json!({ "path": file.path, "mode": mode, "type": "blob", "sha": null }),
            Some(FileContent::Text(text)) => {
                json!({ "path": file.path, "mode": mode, "type": "blob", "content": text })
            }
            Some(FileContent::Binary(bytes)) => {
                let body = json!({ "content": STANDARD.encode(bytes), "encoding": "base64" });
                let blob = unseen(
                    ops.mutate(
                        Method::POST,
                        format!("{full}/git/blobs"),
                        &body,
                        false,
                        &what,
                    )
                    .await,
                )?;
                let sha = blob.get("sha").and_then(Value::as_str).unwrap_or_default();
                json!({ "path": file.path, "mode": mode, "type": "blob", "sha": sha })
            }
        };
        entries.push(entry);
    }
    let tree_body = json!({ "base_tree": base_tree, "tree": entries });
    let tree = unseen(
        ops.mutate(
            Method::POST,
            format!("{full}/git/trees"),
            &tree_body,
            false,
            &what,
        )
        .await,
    )?;
    let tree_sha = tree.get("sha").and_then(Value::as_str).unwrap_or_default();
    let commit_body = json!({ "message": commit.message, "tree": tree_sha, "parents": [head] });
    let made = unseen(
        ops.mutate(
            Method::POST,
            format!("{full}/git/commits"),
            &commit_body,
            true,
            &what,
        )
        .await,
    )?;
    let sha = made
        .get("sha")
        .and_then(Value::as_str)
        .ok_or_else(|| ProviderError::Transient("GitHub's new commit has no sha".into()))?
        .to_owned();
    let ref_body = json!({ "sha": sha, "force": false });
    let target = format!("{full}/git/refs/heads/{}", segments(&commit.branch)?);
    ops.mutate(Method::PATCH, target, &ref_body, false, &what)
        .await
        .map_err(|e| match e {
            // The branch moved since its head was read, or protection refuses the push.
            ProviderError::Validation(m) if m.contains("fast forward") => {
                ProviderError::Conflict(m)
            }
            ProviderError::Validation(m) if m.contains("rotected branch") => {
                ProviderError::Permission(m)
            }
            other => other,
        })?;
    Ok(Commit {
        sha,
        message: commit.message.clone(),
        parents: vec![head],
    })
}

/// An unknown outcome of a request whose product nothing references yet changed nothing
/// visible: transient.
fn unseen(result: OpResult<Value>) -> OpResult<Value> {
    result.map_err(|e| match e {
        ProviderError::Ambiguous(m) => {
            ProviderError::Transient(format!("{m}; the branch was not moved"))
        }
        other => other,
    })
}
