//! The Git data API: blobs, trees and commits written directly, and a branch moved to one.
//! Bookkeeping over the world's flat trees (path → blob), like the Contents API beside it:
//! trees are flat (an entry's path may hold `/`; subtree entries are refused), and the commit
//! a ref moves to becomes the branch's head with its files diffed against its first parent.
//! A tree entry's path is refused as GitHub refuses it (422): empty, absolute, or with an
//! empty, `.`, `..` or `.git` component. These checks are the simulator's own, not the
//! client's, so a misunderstanding cannot hide on both sides of a test.

use std::collections::BTreeMap;

use http::StatusCode;
use serde_json::{Value, json};

use super::*;
use crate::render;
use crate::sim::{Ctx, Reply};
use crate::world::{CommitRec, FileRec, RepoRec, World, tree_sha};

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding: the world keeps file contents as the Contents API sends them.
fn base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn is_base64(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'\n' | b'\r'))
}

/// Whether GitHub takes `path` as a tree entry's path: components separated by single `/`,
/// none empty, `.`, `..` or `.git` (Git refuses `.git` in any case), and no NUL.
fn valid_tree_path(path: &str) -> bool {
    !path.contains('\0')
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != ".." && !c.eq_ignore_ascii_case(".git"))
}

fn unprocessable(message: &str) -> Reply {
    Reply::message(StatusCode::UNPROCESSABLE_ENTITY, message, DOC)
}

/// `POST /repos/{owner}/{repo}/git/blobs`.
pub(super) fn create_blob(ctx: &Ctx, w: &mut World, repo: &RepoRec, body: &Value) -> Reply {
    if !ctx.subject.is_authenticated() {
        return requires_auth();
    }
    let Some(content) = body.get("content").and_then(Value::as_str) else {
        return invalid_request("content");
    };
    let stored = match body
        .get("encoding")
        .and_then(Value::as_str)
        .unwrap_or("utf-8")
    {
        "utf-8" | "utf8" => base64(content.as_bytes()),
        "base64" if is_base64(content) => content.to_owned(),
        "base64" => return unprocessable("content is not valid Base64"),
        other => {
            return unprocessable(&format!(
                "encoding must be one of utf-8, base64 (got {other:?})"
            ));
        }
    };
    let sha = sha_of(&["blob", &stored]);
    w.content(repo.id).blobs.insert(sha.clone(), stored);
    let url = format!("{}/repos/{}/git/blobs/{sha}", ctx.base, repo.full_name());
    Reply::json(StatusCode::CREATED, &json!({"sha": sha, "url": url})).header("location", &url)
}

/// `POST /repos/{owner}/{repo}/git/trees`.
pub(super) fn create_tree(ctx: &Ctx, w: &mut World, repo: &RepoRec, body: &Value) -> Reply {
    if !ctx.subject.is_authenticated() {
        return requires_auth();
    }
    let Some(entries) = body.get("tree").and_then(Value::as_array) else {
        return invalid_request("tree");
    };
    let c = w.content(repo.id);
    let mut tree: BTreeMap<String, (String, String)> =
        match body.get("base_tree").and_then(Value::as_str) {
            Some(base) => match c.tree(base) {
                Some(t) => t.clone(),
                None => return unprocessable("base_tree is not a valid tree"),
            },
            None => BTreeMap::new(),
        };
    for entry in entries {
        let Some(path) = entry
            .get("path")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty() && !p.starts_with('/') && !p.ends_with('/'))
        else {
            return unprocessable("tree.path is missing or invalid");
        };
        if !valid_tree_path(path) {
            return unprocessable("tree.path contains a malformed path component");
        }
        if entry.get("type").and_then(Value::as_str).unwrap_or("blob") != "blob" {
            // Trees here are flat: a nested entry is written as a path with slashes.
            return unprocessable("tree.type must be blob (subtrees are not modelled)");
        }
        match (
            entry.get("sha"),
            entry.get("content").and_then(Value::as_str),
        ) {
            (Some(Value::Null), _) => {
                let under = format!("{path}/");
                tree.retain(|p, _| p != path && !p.starts_with(&under));
            }
            (Some(Value::String(sha)), _) => match c.blob(sha) {
                Some(content) => {
                    tree.insert(path.to_owned(), (sha.clone(), content.to_owned()));
                }
                None => return unprocessable(&format!("tree.sha {sha} is not a valid blob")),
            },
            (None, Some(text)) => {
                let stored = base64(text.as_bytes());
                let sha = sha_of(&["blob", &stored]);
                c.blobs.insert(sha.clone(), stored.clone());
                tree.insert(path.to_owned(), (sha, stored));
            }
            _ => return unprocessable("tree entries need a sha or content"),
        }
    }
    let sha = tree_sha(&tree);
    let full = repo.full_name();
    let base = &ctx.base;
    let listed: Vec<Value> = tree
        .iter()
        .map(|(path, (blob, content))| {
            json!({
                "path": path, "mode": "100644", "type": "blob", "sha": blob,
                "size": content.len() * 3 / 4,
                "url": format!("{base}/repos/{full}/git/blobs/{blob}"),
            })
        })
        .collect();
    c.trees.insert(sha.clone(), tree);
    let url = format!("{base}/repos/{full}/git/trees/{sha}");
    Reply::json(
        StatusCode::CREATED,
        &json!({"sha": sha, "url": url, "tree": listed, "truncated": false}),
    )
    .header("location", &url)
}

/// What changed from `before` to `after`, as a commit's files.
fn diff(
    before: &BTreeMap<String, (String, String)>,
    after: &BTreeMap<String, (String, String)>,
) -> Vec<FileRec> {
    let mut files = Vec::new();
    for (path, (blob, _)) in after {
        let status = match before.get(path) {
            None => "added",
            Some((old, _)) if old != blob => "modified",
            Some(_) => continue,
        };
        files.push(FileRec {
            filename: path.clone(),
            status,
            additions: 1,
            deletions: u64::from(status == "modified"),
            sha: blob.clone(),
        });
    }
    for (path, (blob, _)) in before {
        if !after.contains_key(path) {
            files.push(FileRec {
                filename: path.clone(),
                status: "removed",
                additions: 0,
                deletions: 1,
                sha: blob.clone(),
            });
        }
    }
    files
}

/// `POST /repos/{owner}/{repo}/git/commits`.
pub(super) fn create_commit(
    ctx: &Ctx,
    w: &mut World,
    repo: &RepoRec,
    body: &Value,
    counter: u64,
) -> Reply {
    if !ctx.subject.is_authenticated() {
        return requires_auth();
    }
    let Some(message) = body.get("message").and_then(Value::as_str) else {
        return invalid_request("message");
    };
    let Some(tree_ref) = body.get("tree").and_then(Value::as_str) else {
        return invalid_request("tree");
    };
    let parents: Vec<String> = match body.get("parents") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(p)) => match p.iter().map(Value::as_str).collect::<Option<Vec<_>>>() {
            Some(p) => p.into_iter().map(str::to_owned).collect(),
            None => return unprocessable("parents must be commit shas"),
        },
        Some(_) => return unprocessable("parents must be commit shas"),
    };
    let date = match body
        .get("author")
        .and_then(|a| a.get("date"))
        .and_then(Value::as_str)
    {
        Some(d) => match d.parse() {
            Ok(t) => t,
            Err(_) => return unprocessable("author.date is not a timestamp"),
        },
        None => ctx.now,
    };
    let author = ctx.subject.log_name();
    let c = w.content(repo.id);
    let Some(tree) = c.tree(tree_ref).cloned() else {
        return unprocessable("Tree SHA does not exist");
    };
    if let Some(p) = parents.iter().find(|p| !c.commits.contains_key(*p)) {
        return unprocessable(&format!(
            "Parent SHA {p} does not exist or is not a commit object"
        ));
    }
    let before = parents
        .first()
        .and_then(|p| c.commits.get(p))
        .map(|cm| cm.tree.clone())
        .unwrap_or_default();
    let sha = sha_of(&[tree_ref, &parents.join(","), message, &counter.to_string()]);
    let commit = CommitRec {
        sha: sha.clone(),
        message: message.to_owned(),
        author,
        date,
        parents,
        files: diff(&before, &tree),
        tree,
    };
    c.commits.insert(sha.clone(), commit.clone());
    let full = repo.full_name();
    let v = render::git_commit(&ctx.base, w, &full, &commit);
    let url = format!("{}/repos/{full}/git/commits/{sha}", ctx.base);
    Reply::json(StatusCode::CREATED, &v).header("location", &url)
}

/// `PATCH /repos/{owner}/{repo}/git/refs/{ref}` (`heads/BRANCH`).
pub(super) fn update_ref(
    ctx: &Ctx,
    w: &mut World,
    repo: &RepoRec,
    refname: &str,
    body: &Value,
) -> Reply {
    if !ctx.subject.is_authenticated() {
        return requires_auth();
    }
    let Some(sha) = body.get("sha").and_then(Value::as_str) else {
        return invalid_request("sha");
    };
    let force = body.get("force").and_then(Value::as_bool).unwrap_or(false);
    let branch = refname
        .strip_prefix("refs/")
        .unwrap_or(refname)
        .strip_prefix("heads/");
    let c = w.content(repo.id);
    let Some(branch) = branch.filter(|b| c.branch(b).is_some()) else {
        return unprocessable("Reference does not exist");
    };
    if !c.commits.contains_key(sha) {
        return unprocessable("Object does not exist");
    }
    let current = c.branch(branch).map(|b| b.sha.clone()).unwrap_or_default();
    let fast_forward = current == sha || ancestors(c, sha).contains(&current);
    if !force && !fast_forward {
        return unprocessable("Update is not a fast forward");
    }
    let protection = c.branch(branch).and_then(|b| b.protection.as_ref());
    if protection.is_some_and(|p| refuses_push(p, fast_forward)) {
        return unprocessable(&format!(
            "Protected branch update failed for refs/heads/{branch}."
        ));
    }
    if let Some(b) = c.branches.iter_mut().find(|b| b.name == branch) {
        b.sha = sha.to_owned();
    }
    let full = repo.full_name();
    let base = &ctx.base;
    Reply::json(
        StatusCode::OK,
        &json!({
            "ref": format!("refs/heads/{branch}"),
            "node_id": ref_node_id(repo.id, branch),
            "url": format!("{base}/repos/{full}/git/refs/heads/{branch}"),
            "object": {"type": "commit", "sha": sha, "url": format!("{base}/repos/{full}/git/commits/{sha}")},
        }),
    )
}

/// Whether branch protection `p` (as sent to `PUT …/protection`) refuses a direct ref
/// update. The simulator's users administer what they reach, so `enforce_admins: false` lets
/// them through, as GitHub lets admins; otherwise required reviews, required status checks
/// (the simulator runs none) or push restrictions refuse any update, and a force update is
/// refused unless `allow_force_pushes` is true.
fn refuses_push(p: &Value, fast_forward: bool) -> bool {
    let set = |key: &str| {
        p.get(key)
            .is_some_and(|v| !v.is_null() && *v != json!(false))
    };
    if !fast_forward && !set("allow_force_pushes") {
        return true;
    }
    set("enforce_admins")
        && (set("required_pull_request_reviews")
            || set("required_status_checks")
            || set("restrictions"))
}

impl Simulator {
    /// The Git data API of one repository.
    pub(super) fn git_route(
        &self,
        ctx: &Ctx,
        mut w: MutexGuard<'_, World>,
        repo: &RepoRec,
        rest: &[&str],
    ) -> Reply {
        let m = &ctx.method;
        let get = *m == Method::GET || *m == Method::HEAD;
        let full = repo.full_name();
        let base = ctx.base.as_str();
        match rest {
            ["git", "refs"] if *m == Method::POST => {
                let body = match self.body_json(ctx) {
                    Ok(b) => b,
                    Err(r) => return r,
                };
                create_ref(ctx, &mut w, repo, &body)
            }
            ["git", "blobs"] if *m == Method::POST => {
                let body = match self.body_json(ctx) {
                    Ok(b) => b,
                    Err(r) => return r,
                };
                create_blob(ctx, &mut w, repo, &body)
            }
            ["git", "trees"] if *m == Method::POST => {
                let body = match self.body_json(ctx) {
                    Ok(b) => b,
                    Err(r) => return r,
                };
                create_tree(ctx, &mut w, repo, &body)
            }
            ["git", "commits"] if *m == Method::POST => {
                let body = match self.body_json(ctx) {
                    Ok(b) => b,
                    Err(r) => return r,
                };
                let counter = {
                    let mut s = lock(&self.inner.scenario_state);
                    s.commit_counter += 1;
                    s.commit_counter
                };
                create_commit(ctx, &mut w, repo, &body, counter)
            }
            ["git", "commits", sha] if get => {
                let c = w.content(repo.id).clone();
                match c.commits.get(*sha) {
                    Some(cm) => Reply::ok(&render::git_commit(base, &w, &full, cm)),
                    None => Reply::not_found(),
                }
            }
            ["git", "refs", refname @ ..] if *m == Method::PATCH && !refname.is_empty() => {
                let body = match self.body_json(ctx) {
                    Ok(b) => b,
                    Err(r) => return r,
                };
                update_ref(ctx, &mut w, repo, &refname.join("/"), &body)
            }
            ["git", "ref", refname @ ..] if get => {
                let refname = refname.join("/");
                let Some(branch) = refname.strip_prefix("heads/") else {
                    return Reply::not_found();
                };
                match w.content(repo.id).branch(branch) {
                    Some(b) => Reply::ok(&json!({
                        "ref": format!("refs/heads/{}", b.name),
                        "node_id": ref_node_id(repo.id, &b.name),
                        "url": format!("{base}/repos/{full}/git/refs/heads/{}", b.name),
                        "object": {"type": "commit", "sha": b.sha, "url": format!("{base}/repos/{full}/git/commits/{}", b.sha)},
                    })),
                    None => Reply::not_found(),
                }
            }
            _ => Reply::not_found(),
        }
    }
}

pub(super) fn create_ref(ctx: &Ctx, w: &mut World, repo: &RepoRec, body: &Value) -> Reply {
    if !ctx.subject.is_authenticated() {
        return requires_auth();
    }
    let Some(refname) = body.get("ref").and_then(Value::as_str) else {
        return invalid_request("ref");
    };
    let Some(sha) = body.get("sha").and_then(Value::as_str) else {
        return invalid_request("sha");
    };
    let Some(branch) = refname
        .strip_prefix("refs/heads/")
        .filter(|b| !b.is_empty() && !b.contains("..") && !b.ends_with('/') && !b.contains(' '))
    else {
        return Reply::message(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Reference name is invalid",
            DOC,
        );
    };
    let c = w.content(repo.id);
    if c.branch(branch).is_some() {
        return Reply::message(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Reference already exists",
            DOC,
        );
    }
    if !c.commits.contains_key(sha) {
        return Reply::message(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Object does not exist",
            DOC,
        );
    }
    c.branches.push(BranchRec {
        name: branch.to_owned(),
        sha: sha.to_owned(),
        protection: None,
    });
    let full = repo.full_name();
    let url = format!("{}/repos/{full}/git/{refname}", ctx.base);
    Reply::json(
        StatusCode::CREATED,
        &json!({
            "ref": refname,
            "node_id": ref_node_id(repo.id, branch),
            "url": url,
            "object": {"type": "commit", "sha": sha, "url": format!("{}/repos/{full}/git/commits/{sha}", ctx.base)},
        }),
    )
    .header("location", &url)
}

/// A ref's node id, stable per repository and branch (GitHub's are opaque).
pub(super) fn ref_node_id(repo_id: u64, branch: &str) -> String {
    format!(
        "REF_{}",
        sha_of(&[&repo_id.to_string(), branch])
            .get(..20)
            .unwrap_or("")
    )
}

#[cfg(test)]
mod tests {
    use super::{base64, valid_tree_path};

    #[test]
    fn tree_paths_github_refuses_are_refused() {
        for ok in ["a", "src/lib.rs", ".github/ci.yml", "a..b", "x.git"] {
            assert!(valid_tree_path(ok), "{ok}");
        }
        for bad in [
            "a//b",
            ".",
            "../x",
            "a/./b",
            "a/..",
            ".git/config",
            "a/.Git",
            "a\0b",
        ] {
            assert!(!valid_tree_path(bad), "{bad:?}");
        }
    }

    #[test]
    fn base64_pads_as_the_standard_does() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fn main() {}", "Zm4gbWFpbigpIHt9"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }
}
