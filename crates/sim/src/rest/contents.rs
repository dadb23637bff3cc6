//! The Contents API: reading a file at a ref and creating or updating one as a commit.

use super::*;

impl Simulator {
    /// Reading or writing one file.
    pub(super) fn contents_route(
        &self,
        ctx: &Ctx,
        mut w: MutexGuard<'_, World>,
        repo: &RepoRec,
        rest: &[&str],
    ) -> Reply {
        let m = &ctx.method;
        let get = *m == Method::GET || *m == Method::HEAD;
        match rest {
            ["contents", path @ ..] if !path.is_empty() => {
                let path = path.join("/");
                if get {
                    get_contents(ctx, &mut w, repo, &path)
                } else if *m == Method::PUT {
                    let body = match self.body_json(ctx) {
                        Ok(b) => b,
                        Err(r) => return r,
                    };
                    let counter = {
                        let mut s = lock(&self.inner.scenario_state);
                        s.commit_counter += 1;
                        s.commit_counter
                    };
                    put_contents(ctx, &mut w, repo, &path, &body, counter)
                } else {
                    Reply::not_found()
                }
            }
            _ => Reply::not_found(),
        }
    }
}

/// A file of the Contents API (`content-file`), as read from `git_ref`.
pub(super) fn content_json(
    ctx: &Ctx,
    full: &str,
    path: &str,
    git_ref: &str,
    blob: &str,
    content: &str,
) -> Value {
    let name = path.rsplit('/').next().unwrap_or(path);
    let url = format!("{}/repos/{full}/contents/{path}?ref={git_ref}", ctx.base);
    let git_url = format!("{}/repos/{full}/git/blobs/{blob}", ctx.base);
    let html_url = format!("https://github.com/{full}/blob/{git_ref}/{path}");
    json!({
        "type": "file",
        "encoding": "base64",
        "size": content.len() * 3 / 4,
        "name": name,
        "path": path,
        "content": content,
        "sha": blob,
        "url": url,
        "git_url": git_url,
        "html_url": html_url,
        "download_url": format!("https://raw.githubusercontent.com/{full}/{git_ref}/{path}"),
        "_links": {"self": url, "git": git_url, "html": html_url},
    })
}

pub(super) fn get_contents(ctx: &Ctx, w: &mut World, repo: &RepoRec, path: &str) -> Reply {
    let c = w.content(repo.id);
    let reference = ctx.param("ref").unwrap_or(&repo.default_branch).to_owned();
    let sha = c
        .branch(&reference)
        .map(|b| b.sha.clone())
        .unwrap_or_else(|| reference.clone());
    match c.commits.get(&sha).and_then(|cm| cm.tree.get(path)) {
        Some((blob, content)) => Reply::ok(&content_json(
            ctx,
            &repo.full_name(),
            path,
            &reference,
            blob,
            content,
        )),
        None => Reply::not_found(),
    }
}

pub(super) fn put_contents(
    ctx: &Ctx,
    w: &mut World,
    repo: &RepoRec,
    path: &str,
    body: &Value,
    counter: u64,
) -> Reply {
    if !ctx.subject.is_authenticated() {
        return requires_auth();
    }
    let Some(message) = body.get("message").and_then(Value::as_str) else {
        return invalid_request("message");
    };
    let Some(content) = body.get("content").and_then(Value::as_str) else {
        return invalid_request("content");
    };
    let valid_b64 = content
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'\n' | b'\r'));
    if !valid_b64 {
        return validation_failed(
            json!([{"resource": "Commit", "field": "content", "code": "invalid"}]),
        );
    }
    let branch = body
        .get("branch")
        .and_then(Value::as_str)
        .unwrap_or(&repo.default_branch)
        .to_owned();
    let author = ctx.subject.log_name();
    let full = repo.full_name();
    let c = w.content(repo.id);
    let parent = match c.branch(&branch) {
        Some(b) => Some(b.sha.clone()),
        None if c.branches.is_empty() && branch == repo.default_branch => None,
        None => {
            return Reply::message(
                StatusCode::NOT_FOUND,
                &format!("Branch {branch} not found"),
                DOC,
            );
        }
    };
    let mut tree = parent
        .as_ref()
        .and_then(|p| c.commits.get(p))
        .map(|cm| cm.tree.clone())
        .unwrap_or_default();
    let existing = tree.get(path).map(|(blob, _)| blob.clone());
    if let Err(refusal) = check_given_sha(path, existing.as_deref(), body.get("sha")) {
        return refusal;
    }
    let blob = sha_of(&["blob", content]);
    tree.insert(path.to_owned(), (blob.clone(), content.to_owned()));
    let sha = sha_of(&[
        parent.as_deref().unwrap_or(""),
        path,
        &blob,
        message,
        &counter.to_string(),
    ]);
    let status = if existing.is_some() {
        "modified"
    } else {
        "added"
    };
    c.commits.insert(
        sha.clone(),
        CommitRec {
            sha: sha.clone(),
            message: message.to_owned(),
            author,
            date: ctx.now,
            parents: parent.iter().cloned().collect(),
            files: vec![FileRec {
                filename: path.to_owned(),
                status,
                additions: 1,
                deletions: u64::from(existing.is_some()),
                sha: blob.clone(),
            }],
            tree,
        },
    );
    match c.branches.iter_mut().find(|b| b.name == branch) {
        Some(b) => b.sha = sha.clone(),
        None => c.branches.push(BranchRec {
            name: branch.clone(),
            sha: sha.clone(),
            protection: None,
        }),
    }
    let code = if existing.is_some() {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Reply::json(
        code,
        &json!({
            "content": content_json(ctx, &full, path, &branch, &blob, content),
            "commit": {
                "sha": sha,
                "url": format!("{}/repos/{full}/git/commits/{sha}", ctx.base),
                "html_url": format!("https://github.com/{full}/commit/{sha}"),
                "message": message,
                "author": {"name": ctx.subject.log_name(), "date": stamp(ctx.now)},
                "parents": parent.iter().map(|p| json!({"sha": p})).collect::<Vec<_>>(),
            },
        }),
    )
}

/// The `sha` a write gives must be the blob it replaces: required over an existing file,
/// refused for a new one.
// The error is the response itself, built at most once per request.
#[allow(clippy::result_large_err)]
fn check_given_sha(path: &str, existing: Option<&str>, given: Option<&Value>) -> Result<(), Reply> {
    match (existing, given.and_then(Value::as_str)) {
        (Some(_), None) => Err(invalid_request("sha")),
        (Some(blob), Some(s)) if s != blob => Err(Reply::message(
            StatusCode::CONFLICT,
            &format!("{path} does not match {s}"),
            DOC,
        )),
        (None, Some(s)) => Err(Reply::message(
            StatusCode::CONFLICT,
            &format!("{path} does not match {s}"),
            DOC,
        )),
        _ => Ok(()),
    }
}
