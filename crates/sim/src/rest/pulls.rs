//! Pull requests: lists, one pull request with its commits and files, opening one,
//! and merging it (merge, squash or rebase).

use super::*;

impl Simulator {
    /// Pull requests and their commits, files and merge.
    pub(super) fn pulls_route(
        &self,
        ctx: &Ctx,
        mut w: MutexGuard<'_, World>,
        repo: &RepoRec,
        rest: &[&str],
    ) -> Reply {
        let m = &ctx.method;
        let get = *m == Method::GET || *m == Method::HEAD;
        let full = repo.full_name();
        let lpath = |suffix: &str| format!("/repositories/{}/{suffix}", repo.id);
        let base = ctx.base.as_str();
        match rest {
            ["pulls"] if get => {
                let state = ctx.param("state").unwrap_or("open").to_owned();
                let c = w.content(repo.id).clone();
                let mut items: Vec<(&IssueRec, &PullRec)> = c
                    .issues
                    .iter()
                    .filter_map(|i| i.pull.map(|p| (i, &c.pulls[p])))
                    .filter(|(i, _)| state == "all" || (state == "open") == i.open)
                    .collect();
                items.sort_by_key(|(i, _)| std::cmp::Reverse(i.number));
                paged(ctx, &items, &lpath("pulls"), |(i, p)| {
                    render::pull(base, &w, repo, i, p)
                })
            }
            ["pulls"] if *m == Method::POST => {
                drop(w);
                self.open_pull(ctx, repo)
            }
            ["pulls", n, what @ ..] => {
                let c = w.content(repo.id).clone();
                let Some((issue, pull)) = n
                    .parse::<u64>()
                    .ok()
                    .and_then(|n| c.issues.iter().find(|i| i.number == n))
                    .and_then(|i| i.pull.map(|p| (i, &c.pulls[p])))
                else {
                    return Reply::not_found();
                };
                match what {
                    [] if get => Reply::ok(&render::pull_full(base, &w, repo, issue, pull, &c)),
                    ["commits"] if get => {
                        // GitHub lists at most 250 commits of a pull request.
                        let commits: Vec<&CommitRec> = pull
                            .commits
                            .iter()
                            .take(250)
                            .filter_map(|s| c.commits.get(s))
                            .collect();
                        paged(ctx, &commits, &lpath(&format!("pulls/{n}/commits")), |cm| {
                            render::commit(base, &w, &full, cm, false)
                        })
                    }
                    ["files"] if get => {
                        let mut files: BTreeMap<String, FileRec> = BTreeMap::new();
                        for s in &pull.commits {
                            if let Some(cm) = c.commits.get(s) {
                                for f in &cm.files {
                                    files.insert(f.filename.clone(), f.clone());
                                }
                            }
                        }
                        let files: Vec<&FileRec> = files.values().take(3000).collect();
                        paged(ctx, &files, &lpath(&format!("pulls/{n}/files")), |f| {
                            render::file(base, &full, f)
                        })
                    }
                    ["merge"] if get => {
                        if pull.merged {
                            Reply {
                                status: StatusCode::NO_CONTENT,
                                headers: http::HeaderMap::new(),
                                body: bytes::Bytes::new(),
                                etag: false,
                            }
                        } else {
                            Reply::not_found()
                        }
                    }
                    ["merge"] if *m == Method::PUT => {
                        let number = pull.number;
                        drop(w);
                        self.merge_pull(ctx, repo, number)
                    }
                    _ => Reply::not_found(),
                }
            }
            _ => Reply::not_found(),
        }
    }

    pub(super) fn open_pull(&self, ctx: &Ctx, repo: &RepoRec) -> Reply {
        if !ctx.subject.is_authenticated() {
            return requires_auth();
        }
        let body = match self.body_json(ctx) {
            Ok(b) => b,
            Err(r) => return r,
        };
        let mut missing = Vec::new();
        for f in ["title", "head", "base"] {
            if body
                .get(f)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                missing
                    .push(json!({"resource": "PullRequest", "code": "missing_field", "field": f}));
            }
        }
        if !missing.is_empty() {
            return validation_failed(Value::Array(missing));
        }
        let field = |f: &str| {
            body.get(f)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let (title, head_raw, base_name) = (field("title"), field("head"), field("base"));
        let head = head_raw.rsplit(':').next().unwrap_or(&head_raw).to_owned();
        let mut w = lock(&self.inner.world);
        let issue_id = w.fresh_id();
        let pull_id = w.fresh_id();
        let user = ctx.subject.log_name();
        let c = w.content(repo.id);
        let Some(head_b) = c.branch(&head).cloned() else {
            return validation_failed(
                json!([{"resource": "PullRequest", "field": "head", "code": "invalid"}]),
            );
        };
        let Some(base_b) = c.branch(&base_name).cloned() else {
            return validation_failed(
                json!([{"resource": "PullRequest", "field": "base", "code": "invalid"}]),
            );
        };
        let open_same = c
            .issues
            .iter()
            .filter(|i| i.open)
            .filter_map(|i| i.pull.map(|p| &c.pulls[p]))
            .any(|p| p.head == head && p.base == base_name && !p.merged);
        if open_same {
            return validation_failed(
                json!([{"resource": "PullRequest", "code": "custom", "message": format!("A pull request already exists for {}:{head}.", repo.owner)}]),
            );
        }
        let base_anc = ancestors(c, &base_b.sha);
        let mut commits = Vec::new();
        let mut cur = Some(head_b.sha.clone());
        while let Some(s) = cur {
            if base_anc.contains(&s) {
                break;
            }
            cur = c.commits.get(&s).and_then(|cm| cm.parents.first().cloned());
            commits.push(s);
        }
        commits.reverse();
        if commits.is_empty() {
            return validation_failed(
                json!([{"resource": "PullRequest", "code": "custom", "message": format!("No commits between {base_name} and {head}")}]),
            );
        }
        let number = c.next_number();
        let issue = IssueRec {
            id: issue_id,
            number,
            title,
            body: body
                .get("body")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            open: true,
            user,
            labels: Vec::new(),
            created_at: ctx.now,
            updated_at: ctx.now,
            comments: Vec::new(),
            pull: Some(c.pulls.len()),
        };
        let pull = PullRec {
            id: pull_id,
            number,
            head,
            base: base_name,
            head_sha: head_b.sha,
            base_sha: base_b.sha,
            commits,
            merged: false,
            merged_at: None,
            merge_sha: None,
        };
        c.pulls.push(pull.clone());
        c.issues.push(issue.clone());
        let content = c.clone();
        let v = render::pull_full(&ctx.base, &w, repo, &issue, &pull, &content);
        let location = format!("{}/repos/{}/pulls/{number}", ctx.base, repo.full_name());
        Reply::json(StatusCode::CREATED, &v).header("location", &location)
    }

    pub(super) fn merge_pull(&self, ctx: &Ctx, repo: &RepoRec, number: u64) -> Reply {
        if !ctx.subject.is_authenticated() {
            return requires_auth();
        }
        let body = match self.body_json(ctx) {
            Ok(b) => b,
            Err(r) => return r,
        };
        let counter = {
            let mut s = lock(&self.inner.scenario_state);
            s.commit_counter += 1;
            s.commit_counter
        };
        let author = ctx.subject.log_name();
        let mut w = lock(&self.inner.world);
        let c = w.content(repo.id);
        let Some(ii) = c.issues.iter().position(|i| i.number == number) else {
            return Reply::not_found();
        };
        let Some(pi) = c.issues[ii].pull else {
            return Reply::not_found();
        };
        let pull = c.pulls[pi].clone();
        if pull.merged || !c.issues[ii].open {
            return Reply::message(
                StatusCode::METHOD_NOT_ALLOWED,
                "Pull Request is not mergeable",
                DOC,
            );
        }
        let head_now = c
            .branch(&pull.head)
            .map(|b| b.sha.clone())
            .unwrap_or(pull.head_sha.clone());
        if let Some(expected) = body.get("sha").and_then(Value::as_str)
            && expected != head_now
        {
            return Reply::message(
                StatusCode::CONFLICT,
                "Head branch was modified. Review and try the merge again.",
                DOC,
            );
        }
        let Some(base_b) = c.branch(&pull.base).cloned() else {
            return Reply::message(
                StatusCode::METHOD_NOT_ALLOWED,
                "Base branch was deleted",
                DOC,
            );
        };
        if base_b.protection.as_ref().is_some_and(|p| {
            p.get("required_pull_request_reviews")
                .is_some_and(|r| !r.is_null())
        }) {
            return Reply::message(
                StatusCode::METHOD_NOT_ALLOWED,
                "At least 1 approving review is required by reviewers with write access.",
                DOC,
            );
        }
        // Files the pull request changes, and files the base changed since it was opened.
        let pr_files = changed_by_pull(c, &pull.base_sha, &head_now);
        let base_since = changed_on_base_since(c, &pull.base_sha, &base_b.sha);
        if pr_files.intersection(&base_since).next().is_some() {
            return Reply::message(StatusCode::METHOD_NOT_ALLOWED, "Merge conflict", DOC);
        }
        let (tree, files) = merged_tree(c, &head_now, &base_b.sha, &pr_files);
        let title = body
            .get("commit_title")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| {
                format!(
                    "Merge pull request #{number} from {}/{}",
                    repo.owner, pull.head
                )
            });
        let sha = sha_of(&[&base_b.sha, &head_now, &title, &counter.to_string()]);
        c.commits.insert(
            sha.clone(),
            CommitRec {
                sha: sha.clone(),
                message: title,
                author,
                date: ctx.now,
                parents: vec![base_b.sha.clone(), head_now.clone()],
                files,
                tree,
            },
        );
        if let Some(b) = c.branches.iter_mut().find(|b| b.name == pull.base) {
            b.sha = sha.clone();
        }
        let p = &mut c.pulls[pi];
        p.merged = true;
        p.merged_at = Some(ctx.now);
        p.merge_sha = Some(sha.clone());
        p.head_sha = head_now;
        let i = &mut c.issues[ii];
        i.open = false;
        i.updated_at = ctx.now;
        Reply::json(
            StatusCode::OK,
            &json!({"sha": sha, "merged": true, "message": "Pull Request successfully merged"}),
        )
    }
}

/// The files changed by the commits from `head` back to where it left the base at `base_sha`
/// (first parents only).
fn changed_by_pull(c: &RepoContent, base_sha: &str, head: &str) -> HashSet<String> {
    let base_anc = ancestors(c, base_sha);
    let mut head_anc = Vec::new();
    let mut cur = Some(head.to_owned());
    while let Some(s) = cur {
        if base_anc.contains(&s) {
            break;
        }
        cur = c.commits.get(&s).and_then(|cm| cm.parents.first().cloned());
        head_anc.push(s);
    }
    head_anc
        .iter()
        .filter_map(|s| c.commits.get(s))
        .flat_map(|cm| cm.files.iter().map(|f| f.filename.clone()))
        .collect()
}

/// The files the base branch changed between `old_base` and `base_now`.
fn changed_on_base_since(c: &RepoContent, old_base: &str, base_now: &str) -> HashSet<String> {
    let old = ancestors(c, old_base);
    ancestors(c, base_now)
        .difference(&old)
        .filter_map(|s| c.commits.get(s))
        .flat_map(|cm| cm.files.iter().map(|f| f.filename.clone()))
        .collect()
}

/// The merge commit's tree (the base's, with the pull request's files as the head has them)
/// and the files it changes.
fn merged_tree(
    c: &RepoContent,
    head: &str,
    base: &str,
    pr_files: &HashSet<String>,
) -> (BTreeMap<String, (String, String)>, Vec<FileRec>) {
    let head_tree = c
        .commits
        .get(head)
        .map(|cm| cm.tree.clone())
        .unwrap_or_default();
    let mut tree = c
        .commits
        .get(base)
        .map(|cm| cm.tree.clone())
        .unwrap_or_default();
    let mut files = Vec::new();
    for f in pr_files {
        match head_tree.get(f) {
            Some(entry) => {
                tree.insert(f.clone(), entry.clone());
                files.push(FileRec {
                    filename: f.clone(),
                    status: "modified",
                    additions: 1,
                    deletions: 0,
                    sha: entry.0.clone(),
                });
            }
            None => {
                tree.remove(f);
            }
        }
    }
    (tree, files)
}
