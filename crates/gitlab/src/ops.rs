//! The eight operations on GitLab's REST v4.
//!
//! Reads are `REST_READ` (the exit door retries them: 429 within the in-place cap, 500, 502,
//! 503, 504, timeouts, connection errors); mutations are built with [`ApiRequest::mutation`]
//! and sent once. `commit_files` is one request (`POST /projects/:id/repository/commits` with
//! one action per file), so several files always land in one commit.
//!
//! Every operation first checks its inputs with GitLab's rules ([`Host::GitLab`]): a name
//! GitLab would refuse, or a symbolic link (its commits API cannot write one), is a validation
//! error and nothing is sent. Names go into URLs through headroom-core's `provider::path`
//! encoders, the same as GitHub's.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use headroom_core::provider::names::Host;
use headroom_core::provider::path::{query_value, segment};
use headroom_core::provider::{
    Branch, Commit, CommitFiles, FileContent, FileMode, GitProvider, MergeMethod, MergeOutcome,
    MergePullRequest, NewBranch, NewPullRequest, NewRepository, OpResult, ProtectionRule,
    ProviderError, PullRequest, Recheck, RepoRef, Repository,
};
use headroom_core::{AppLimit, Subject, route};
use headroom_http::{ApiRequest, ApiResponse, Client, Credential};
use http::Method;
use serde_json::{Value, json};

use crate::errors::{Sent, from_api};
use crate::wire;

/// Pages of branches fetched at most (100 each).
const BRANCH_PAGE_CAP: u32 = 100;

/// Access levels GitLab's protected branches take.
const NO_ONE: u32 = 0;
const DEVELOPERS: u32 = 30;

/// GitLab's side of the provider contract.
#[derive(Debug, Clone)]
pub struct GitLabOps {
    client: Client,
    credential: Option<Credential>,
    recheck: Recheck,
}

/// `:id` of a project: its path as one URL-encoded segment (`alice%2Fwidgets`).
pub(crate) fn project_id(repo: &RepoRef) -> OpResult<String> {
    Ok(segment(&repo.full_name())?)
}

impl GitLabOps {
    /// Operations through `client` (built for `Provider::GitLab`), spending `credential`.
    pub fn new(client: Client, credential: Option<Credential>) -> Self {
        Self {
            client,
            credential,
            recheck: Recheck::Never,
        }
    }

    /// What mutations do after an ambiguous failure.
    pub fn with_recheck(mut self, recheck: Recheck) -> Self {
        self.recheck = recheck;
        self
    }

    async fn get(
        &self,
        target: String,
        what: &str,
        app_limit: Option<AppLimit>,
    ) -> OpResult<ApiResponse> {
        let request = ApiRequest::get(target)
            .credential(self.credential.as_ref())
            .route(route::GITLAB_OPS);
        let request = match app_limit {
            Some(limit) => request.app_limit(limit),
            None => request,
        };
        self.client
            .send(request)
            .await
            .map_err(|e| from_api(e, Sent::Read, what))
    }

    /// A read's JSON body.
    pub(crate) async fn read(&self, target: String, what: &str) -> OpResult<Value> {
        self.read_limited(target, what, None).await
    }

    /// A read's JSON body, spending an application limit too.
    async fn read_limited(
        &self,
        target: String,
        what: &str,
        app_limit: Option<AppLimit>,
    ) -> OpResult<Value> {
        self.get(target, what, app_limit)
            .await?
            .json()
            .map_err(|e| from_api(e, Sent::Read, what))
    }

    /// A mutation's JSON body. Sent once, whatever happens.
    async fn mutate(
        &self,
        method: Method,
        target: String,
        body: &Value,
        what: &str,
        app_limit: Option<AppLimit>,
    ) -> OpResult<Value> {
        headroom_http::ops::send_json(
            &self.client,
            self.credential.as_ref(),
            target,
            headroom_http::ops::OpRequest::Mutation {
                method: &method,
                body,
                // GitHub's content-creation limits are GitHub's: a GitLab mutation spends
                // GitLab's application limit where GitLab documents one (`app_limit`).
                creates_content: false,
                app_limit,
            },
            what,
            crate::errors::gitlab_status,
            route::GITLAB_OPS,
        )
        .await
    }

    /// The username whose token this is.
    pub(crate) async fn username(&self) -> OpResult<String> {
        let key = self
            .client
            .identity(self.credential.as_ref())
            .await
            .map_err(|e| from_api(e, Sent::Read, "the token's user"))?;
        match key.subject {
            Subject::User(login) => Ok(login.to_string()),
            other => Err(ProviderError::Permission(format!(
                "{other} has no user namespace"
            ))),
        }
    }

    fn rechecks(&self, error: &ProviderError) -> bool {
        self.recheck == Recheck::AfterAmbiguous && matches!(error, ProviderError::Ambiguous(_))
    }
}

impl GitProvider for GitLabOps {
    async fn get_repo(&self, repo: &RepoRef) -> OpResult<Repository> {
        Host::GitLab.repo(repo)?;
        let what = format!("project {}", repo.full_name());
        let v = self
            .read_limited(
                format!("/projects/{}", project_id(repo)?),
                &what,
                Some(AppLimit::GitlabProjectRead),
            )
            .await?;
        wire::project(&v)
    }

    async fn list_branches(&self, repo: &RepoRef) -> OpResult<Vec<Branch>> {
        Host::GitLab.repo(repo)?;
        let what = format!("project {}", repo.full_name());
        let mut branches = Vec::new();
        let mut page = 1u32;
        loop {
            let target = format!(
                "/projects/{}/repository/branches?per_page=100&page={page}",
                project_id(repo)?
            );
            let response = self.get(target, &what, None).await?;
            let items: Vec<Value> = response
                .json()
                .map_err(|e| from_api(e, Sent::Read, &what))?;
            for b in &items {
                branches.push(wire::branch(b)?);
            }
            // `X-Next-Page` is empty on the last page; without it, a short page is the last.
            let next = response
                .headers
                .get("x-next-page")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u32>().ok());
            match next {
                Some(n) if n > page && page < BRANCH_PAGE_CAP => page = n,
                None if items.len() == 100
                    && !response.headers.contains_key("x-next-page")
                    && page < BRANCH_PAGE_CAP =>
                {
                    page += 1;
                }
                _ => return Ok(branches),
            }
        }
    }

    async fn create_repo(&self, new: &NewRepository) -> OpResult<Repository> {
        Host::GitLab.new_repository(new)?;
        let mut body = json!({
            "name": new.name,
            "path": new.name,
            "description": new.description,
            "visibility": if new.private { "private" } else { "public" },
            "initialize_with_readme": new.initialize,
        });
        if let Some(owner) = &new.owner {
            let id: u64 = owner.parse().map_err(|_| {
                ProviderError::validation(
                    "GitLab creates a project in a namespace by its numeric id (--owner ID)",
                )
            })?;
            body["namespace_id"] = json!(id);
        }
        match self
            .mutate(
                Method::POST,
                "/projects".into(),
                &body,
                "namespace",
                Some(AppLimit::GitlabProjectCreate),
            )
            .await
        {
            Ok(v) => wire::project(&v),
            Err(e) if self.rechecks(&e) => self.recheck_project(new, e).await,
            Err(e) => Err(e),
        }
    }

    async fn create_branch(&self, repo: &RepoRef, new: &NewBranch) -> OpResult<Branch> {
        Host::GitLab.repo(repo)?;
        Host::GitLab.new_branch(new)?;
        let target = format!(
            "/projects/{}/repository/branches?branch={}&ref={}",
            project_id(repo)?,
            query_value(&new.name),
            query_value(&new.from)
        );
        let what = format!("project {}", repo.full_name());
        match self
            .mutate(Method::POST, target, &json!({}), &what, None)
            .await
        {
            Ok(v) => wire::branch(&v),
            Err(e) if self.rechecks(&e) => self.recheck_branch(repo, new, e).await,
            Err(e) => Err(e),
        }
    }

    async fn protect_branch(
        &self,
        repo: &RepoRef,
        rule: &ProtectionRule,
    ) -> OpResult<ProtectionRule> {
        Host::GitLab.repo(repo)?;
        Host::GitLab.protection(rule)?;
        if rule.required_approvals > 0 {
            return Err(ProviderError::validation(
                "GitLab sets required approvals in merge request approval rules, not in branch protection",
            ));
        }
        let body = json!({
            "name": rule.branch,
            "push_access_level": if rule.require_pull_request { NO_ONE } else { DEVELOPERS },
            "merge_access_level": DEVELOPERS,
            "allow_force_push": rule.allow_force_push,
        });
        let target = format!("/projects/{}/protected_branches", project_id(repo)?);
        let what = format!("project {}", repo.full_name());
        let v = self
            .mutate(Method::POST, target, &body, &what, None)
            .await?;
        let push = v
            .pointer("/push_access_levels/0/access_level")
            .and_then(Value::as_u64);
        Ok(ProtectionRule {
            branch: v
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or(&rule.branch)
                .to_owned(),
            require_pull_request: push.map_or(rule.require_pull_request, |p| p == 0),
            required_approvals: 0,
            allow_force_push: v
                .get("allow_force_push")
                .and_then(Value::as_bool)
                .unwrap_or(rule.allow_force_push),
        })
    }

    async fn commit_files(&self, repo: &RepoRef, commit: &CommitFiles) -> OpResult<Commit> {
        Host::GitLab.repo(repo)?;
        Host::GitLab.commit(commit)?;
        if commit.files.is_empty() {
            return Err(ProviderError::validation(
                "a commit needs at least one file",
            ));
        }
        let actions: Vec<Value> = commit
            .files
            .iter()
            .map(|f| {
                let mut action = json!({ "file_path": f.path });
                match &f.content {
                    None => action["action"] = json!("delete"),
                    Some(content) => {
                        action["action"] = json!(if f.exists { "update" } else { "create" });
                        let (text, encoding) = match content {
                            FileContent::Text(t) => (t.clone(), "text"),
                            FileContent::Binary(b) => (STANDARD.encode(b), "base64"),
                        };
                        action["content"] = json!(text);
                        action["encoding"] = json!(encoding);
                        action["execute_filemode"] = json!(f.mode == FileMode::Executable);
                    }
                }
                action
            })
            .collect();
        let body = json!({
            "branch": commit.branch,
            "commit_message": commit.message,
            "actions": actions,
        });
        let target = format!("/projects/{}/repository/commits", project_id(repo)?);
        let what = format!("project {}", repo.full_name());
        let v = self
            .mutate(Method::POST, target, &body, &what, None)
            .await?;
        let sha = v
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| ProviderError::Ambiguous("GitLab's commit answer had no id".into()))?;
        let parents = v
            .get("parent_ids")
            .and_then(Value::as_array)
            .map(|p| {
                p.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        Ok(Commit {
            sha: sha.to_owned(),
            message: commit.message.clone(),
            parents,
        })
    }

    async fn open_pull_request(
        &self,
        repo: &RepoRef,
        new: &NewPullRequest,
    ) -> OpResult<PullRequest> {
        Host::GitLab.repo(repo)?;
        Host::GitLab.pull_request(new)?;
        let body = json!({
            "source_branch": new.head,
            "target_branch": new.base,
            "title": new.title,
            "description": new.body,
        });
        let target = format!("/projects/{}/merge_requests", project_id(repo)?);
        let what = format!("project {}", repo.full_name());
        match self
            .mutate(
                Method::POST,
                target,
                &body,
                &what,
                Some(AppLimit::GitlabMergeRequestCreate),
            )
            .await
        {
            Ok(v) => wire::merge_request(&v),
            Err(e) if self.rechecks(&e) => self.recheck_merge_request(repo, new, e).await,
            Err(e) => Err(e),
        }
    }

    async fn merge_pull_request(
        &self,
        repo: &RepoRef,
        merge: &MergePullRequest,
    ) -> OpResult<MergeOutcome> {
        Host::GitLab.repo(repo)?;
        if merge.method == MergeMethod::Rebase {
            return Err(ProviderError::validation(
                "GitLab rebases through the project's merge method, not per merge",
            ));
        }
        let mut body = json!({ "squash": merge.method == MergeMethod::Squash });
        if let Some(message) = &merge.commit_message {
            body["merge_commit_message"] = json!(message);
        }
        if let Some(sha) = &merge.expected_head_sha {
            body["sha"] = json!(sha);
        }
        let target = format!(
            "/projects/{}/merge_requests/{}/merge",
            project_id(repo)?,
            merge.number
        );
        let what = format!("merge request !{} of {}", merge.number, repo.full_name());
        // 405 (not open, draft), 406 (conflicts) and 409 (head moved) are conflicts.
        let v = self.mutate(Method::PUT, target, &body, &what, None).await?;
        let sha = ["merge_commit_sha", "squash_commit_sha", "sha"]
            .iter()
            .find_map(|k| v.get(*k).and_then(Value::as_str))
            .ok_or_else(|| {
                ProviderError::Ambiguous("GitLab's merge answer named no commit".into())
            })?;
        Ok(MergeOutcome {
            number: merge.number,
            sha: sha.to_owned(),
        })
    }
}
