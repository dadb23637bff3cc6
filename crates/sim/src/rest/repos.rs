//! One repository's routes: resolving it (by name, id, or a rename's redirect), the
//! dispatch of its sub-resources to their families, commits, branches and protection,
//! workflow runs, and creating a repository.

use super::*;

impl Simulator {
    #[allow(clippy::result_large_err)]
    pub(super) fn resolve_repo(
        &self,
        ctx: &Ctx,
        sel: &RepoSel<'_>,
        rest: &[&str],
    ) -> Result<RepoRec, Reply> {
        let w = lock(&self.inner.world);
        let found = match sel {
            RepoSel::Id(id) => id.parse::<u64>().ok().and_then(|id| w.repo_by_id(id)),
            RepoSel::Name(o, n) => w.repo(o, n),
        };
        if let Some(r) = found.filter(|r| !r.deleted) {
            return Ok(r.clone());
        }
        if let RepoSel::Name(o, n) = sel
            && let Some(r) = w.renamed_repo(o, n).filter(|r| !r.deleted)
        {
            let host = if self.inner.config.scenario == Scenario::HostileRedirect {
                HOSTILE_HOST.to_owned()
            } else {
                ctx.base.clone()
            };
            let mut location = format!("{host}/repositories/{}", r.id);
            for s in rest {
                location.push('/');
                location.push_str(s);
            }
            if let Some(q) = &ctx.raw_query {
                location.push('?');
                location.push_str(q);
            }
            let get = ctx.method == Method::GET || ctx.method == Method::HEAD;
            let status = if get {
                StatusCode::MOVED_PERMANENTLY
            } else {
                StatusCode::TEMPORARY_REDIRECT
            };
            let reply = Reply::json(
                status,
                &json!({"message": "Moved Permanently", "url": location, "documentation_url": "https://docs.github.com/v3/#http-redirects"}),
            );
            return Err(reply.header("location", &location));
        }
        Err(Reply::not_found())
    }

    pub(super) fn repo_route(&self, ctx: &Ctx, sel: RepoSel<'_>, rest: &[&str]) -> Reply {
        let repo = match self.resolve_repo(ctx, &sel, rest) {
            Ok(r) => r,
            Err(reply) => return reply,
        };
        let w = lock(&self.inner.world);
        match rest {
            [] if is_read(ctx) => Reply::ok(&render::repo_full(&ctx.base, &w, &repo)),
            ["issues", ..] => self.issues_route(ctx, w, &repo, rest),
            ["pulls", ..] => self.pulls_route(ctx, w, &repo, rest),
            ["commits", ..] => self.commits_route(ctx, w, &repo, rest),
            ["branches", ..] => self.branches_route(ctx, w, &repo, rest),
            ["git", ..] => self.git_route(ctx, w, &repo, rest),
            ["contents", ..] => self.contents_route(ctx, w, &repo, rest),
            ["actions", ..] => self.actions_route(ctx, w, &repo, rest),
            _ => Reply::not_found(),
        }
    }

    /// A commit and its check runs.
    pub(super) fn commits_route(
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
            ["commits", sha, what @ ..] if get => {
                let c = w.content(repo.id).clone();
                let resolved = c
                    .branch(sha)
                    .map(|b| b.sha.clone())
                    .unwrap_or_else(|| (*sha).to_owned());
                let commit = c.commits.get(&resolved).or_else(|| {
                    (resolved.len() >= 7)
                        .then(|| c.commits.values().find(|cm| cm.sha.starts_with(&resolved)))
                        .flatten()
                });
                let Some(commit) = commit else {
                    return Reply::message(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        &format!("No commit found for SHA: {sha}"),
                        "https://docs.github.com/rest/commits/commits#get-a-commit",
                    );
                };
                match what {
                    [] => Reply::ok(&render::commit(base, &w, &full, commit, true)),
                    ["check-runs"] => {
                        let checks: Vec<_> = c
                            .runs
                            .iter()
                            .filter(|r| r.head_sha == commit.sha)
                            .flat_map(|r| r.jobs.iter().map(move |j| (r, j)))
                            .collect();
                        paged_wrapped(
                            ctx,
                            "check_runs",
                            &checks,
                            &lpath(&format!("commits/{sha}/check-runs")),
                            |(r, j)| render::check_run(base, &full, r, j),
                        )
                    }
                    _ => Reply::not_found(),
                }
            }
            _ => Reply::not_found(),
        }
    }

    /// Branches, one branch, and its protection.
    pub(super) fn branches_route(
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
            ["branches"] if get => {
                let protected_only = ctx.param("protected") == Some("true");
                let branches: Vec<&BranchRec> = w
                    .content(repo.id)
                    .branches
                    .iter()
                    .filter(|b| !protected_only || b.protection.is_some())
                    .collect();
                paged(ctx, &branches, &lpath("branches"), |b| {
                    render::branch(base, &full, b)
                })
            }
            ["branches", branch] if get => {
                let c = w.content(repo.id).clone();
                match c.branch(branch) {
                    Some(b) => match c.commits.get(&b.sha) {
                        Some(cm) => Reply::ok(&render::branch_detail(base, &w, &full, b, cm)),
                        // A branch whose head the world does not hold: listed, but
                        // there is no commit to show.
                        None => Reply::ok(&render::branch(base, &full, b)),
                    },
                    None => Reply::message(StatusCode::NOT_FOUND, "Branch not found", DOC),
                }
            }
            ["branches", branch, "protection"] => {
                let body = if get {
                    json!({})
                } else {
                    match self.body_json(ctx) {
                        Ok(b) => b,
                        Err(r) => return r,
                    }
                };
                protect_branch(ctx, &mut w, repo, branch, body)
            }
            _ => Reply::not_found(),
        }
    }

    /// Workflow runs and their jobs.
    pub(super) fn actions_route(
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
            ["actions", "runs"] if get => {
                let c = w.content(repo.id).clone();
                paged_wrapped(ctx, "workflow_runs", &c.runs, &lpath("actions/runs"), |r| {
                    render::run(base, &w, repo, r, c.commits.get(&r.head_sha))
                })
            }
            ["actions", "runs", id, "jobs"] if get => {
                let runs = w.content(repo.id).runs.clone();
                match id
                    .parse::<u64>()
                    .ok()
                    .and_then(|id| runs.iter().find(|r| r.id == id))
                {
                    Some(run) => paged_wrapped(
                        ctx,
                        "jobs",
                        &run.jobs,
                        &lpath(&format!("actions/runs/{id}/jobs")),
                        |j| render::job(base, &full, run, j),
                    ),
                    None => Reply::not_found(),
                }
            }
            _ => Reply::not_found(),
        }
    }

    pub(super) fn create_repo(&self, ctx: &Ctx, org: Option<&str>) -> Reply {
        use crate::quota::Subject;
        if !ctx.subject.is_authenticated() {
            return requires_auth();
        }
        let body = match self.body_json(ctx) {
            Ok(b) => b,
            Err(r) => return r,
        };
        let mut w = lock(&self.inner.world);
        let owner = match (org, &ctx.subject) {
            (Some(o), _) => {
                if !w.org.login.eq_ignore_ascii_case(o) {
                    return Reply::not_found();
                }
                w.org.login.clone()
            }
            (None, Subject::User { login, .. }) => login.clone(),
            (None, _) => {
                return Reply::message(
                    StatusCode::FORBIDDEN,
                    "Resource not accessible by integration",
                    DOC,
                );
            }
        };
        let Some(name) = body.get("name").and_then(Value::as_str) else {
            return validation_failed(
                json!([{"resource": "Repository", "code": "missing_field", "field": "name"}]),
            );
        };
        let valid = !name.is_empty()
            && name.len() <= 100
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && name != "."
            && name != "..";
        if !valid {
            return validation_failed(
                json!([{"resource": "Repository", "code": "custom", "field": "name", "message": "name is invalid"}]),
            );
        }
        if w.repo(&owner, name).is_some() {
            return Reply::json(
                StatusCode::UNPROCESSABLE_ENTITY,
                &json!({
                    "message": "Repository creation failed.",
                    "errors": [{"resource": "Repository", "code": "custom", "field": "name", "message": "name already exists on this account"}],
                    "documentation_url": "https://docs.github.com/rest/repos/repos#create-an-organization-repository",
                    "status": "422",
                }),
            );
        }
        let id = w.fresh_id();
        let rec = RepoRec {
            id,
            owner,
            name: name.to_owned(),
            previous_names: Vec::new(),
            searchable_by_old_name: false,
            deleted: false,
            private: body
                .get("private")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            description: body
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            language: None,
            default_branch: "main".to_owned(),
            stars: 0,
            created_at: ctx.now,
            updated_at: ctx.now,
            generated: false,
            auto_init: body
                .get("auto_init")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        };
        w.add_repo(rec.clone());
        let v = render::repo_full(&ctx.base, &w, &rec);
        let location = format!("{}/repos/{}", ctx.base, rec.full_name());
        Reply::json(StatusCode::CREATED, &v).header("location", &location)
    }
}

pub(super) fn protect_branch(
    ctx: &Ctx,
    w: &mut World,
    repo: &RepoRec,
    branch: &str,
    body: Value,
) -> Reply {
    let full = repo.full_name();
    let base = ctx.base.clone();
    let c = w.content(repo.id);
    let Some(b) = c.branches.iter_mut().find(|b| b.name == branch) else {
        return Reply::message(StatusCode::NOT_FOUND, "Branch not found", DOC);
    };
    match ctx.method {
        Method::GET | Method::HEAD => match &b.protection {
            Some(p) => Reply::ok(&render::protection(&base, &full, branch, p, false)),
            None => Reply::message(StatusCode::NOT_FOUND, "Branch not protected", DOC),
        },
        Method::PUT => {
            if !ctx.subject.is_authenticated() {
                return requires_auth();
            }
            for key in [
                "required_status_checks",
                "enforce_admins",
                "required_pull_request_reviews",
                "restrictions",
            ] {
                if body.get(key).is_none() {
                    return invalid_request(key);
                }
            }
            let answer = render::protection(&base, &full, branch, &body, true);
            b.protection = Some(body);
            Reply::json(StatusCode::OK, &answer)
        }
        Method::DELETE => {
            if b.protection.take().is_some() {
                Reply {
                    status: StatusCode::NO_CONTENT,
                    headers: http::HeaderMap::new(),
                    body: bytes::Bytes::new(),
                    etag: false,
                }
            } else {
                Reply::message(StatusCode::NOT_FOUND, "Branch not protected", DOC)
            }
        }
        _ => Reply::not_found(),
    }
}
