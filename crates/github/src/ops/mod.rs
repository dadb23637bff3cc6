//! The Git provider contract on GitHub's REST v3: the eight operations of
//! [`headroom_core::provider::GitProvider`] over headroom-http's exit door.
//!
//! Every request goes through [`Client::send`]. Reads are `RequestKind::REST_READ` (the door
//! retries them with full jitter); mutations are built with [`ApiRequest::mutation`], so the
//! door never retries them and the governor charges GitHub's 5 secondary points for each, and
//! the content-creation limits (80/min, 500/h) for those that create content (a repository, a
//! branch, a commit, a pull request).
//!
//! Every operation first checks its inputs with GitHub's rules ([`Host::GitHub`]): a name
//! GitHub would refuse is a validation error and nothing is sent. Every name goes into a URL
//! through [`headroom_core::provider::path`]'s encoders, so it stays inside its own segment.

use headroom_core::provider::names::Host;
use headroom_core::provider::path::{segment, segments};
use headroom_core::provider::{
    Branch, Commit, CommitFiles, GitProvider, MergeOutcome, MergePullRequest, NewBranch,
    NewPullRequest, NewRepository, OpResult, ProtectionRule, ProviderError, PullRequest, Recheck,
    RepoRef, Repository,
};
use headroom_core::{Subject, route};
use headroom_http::paginate::LinkPager;
use headroom_http::{ApiRequest, Client, Credential};
use http::Method;
use serde_json::{Value, json};

mod commit;
mod errors;
mod recheck;
mod wire;

use errors::{Sent, from_api};

/// Pages of branches fetched at most (100 each).
const BRANCH_PAGE_CAP: u32 = 100;

/// `/repos/{owner}/{repo}`, each segment encoded.
fn repo_path(repo: &RepoRef) -> OpResult<String> {
    Ok(format!(
        "/repos/{}/{}",
        segment(&repo.owner)?,
        segment(&repo.name)?
    ))
}

/// GitHub's side of the provider contract.
#[derive(Debug, Clone)]
pub struct GitHubOps {
    client: Client,
    credential: Option<Credential>,
    recheck: Recheck,
}

impl GitHubOps {
    /// Operations through `client`, spending `credential`, with no re-check.
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

    /// A read's JSON body; `what` names the thing for a not-found error.
    async fn read(&self, target: String, what: &str) -> OpResult<Value> {
        headroom_http::ops::send_json(
            &self.client,
            self.credential.as_ref(),
            target,
            headroom_http::ops::OpRequest::Read,
            what,
            errors::github_status,
            route::GITHUB_OPS,
        )
        .await
    }

    /// A mutation's JSON body (`Value::Null` for an empty one). Sent once, whatever happens.
    async fn mutate(
        &self,
        method: Method,
        target: String,
        body: &Value,
        creates_content: bool,
        what: &str,
    ) -> OpResult<Value> {
        headroom_http::ops::send_json(
            &self.client,
            self.credential.as_ref(),
            target,
            headroom_http::ops::OpRequest::Mutation {
                method: &method,
                body,
                creates_content,
                app_limit: None,
            },
            what,
            errors::github_status,
            route::GITHUB_OPS,
        )
        .await
    }

    /// The login whose token this is (the owner of a repository created for the user).
    async fn login(&self) -> OpResult<String> {
        let key = self
            .client
            .identity(self.credential.as_ref())
            .await
            .map_err(|e| from_api(e, Sent::Read, "the token's user"))?;
        match key.subject {
            Subject::User(login) => Ok(login.to_string()),
            other => Err(ProviderError::Permission(format!(
                "{other} has no user account to own a repository"
            ))),
        }
    }

    /// The commit a branch points to.
    async fn branch_head(&self, repo: &RepoRef, branch: &str) -> OpResult<String> {
        let v = self
            .read(
                format!("{}/git/ref/heads/{}", repo_path(repo)?, segments(branch)?),
                &format!("branch {branch} of {}", repo.full_name()),
            )
            .await?;
        wire::ref_sha(&v)
    }

    /// Whether the re-check applies to an error.
    fn rechecks(&self, error: &ProviderError) -> bool {
        self.recheck == Recheck::AfterAmbiguous && matches!(error, ProviderError::Ambiguous(_))
    }
}

impl GitProvider for GitHubOps {
    async fn get_repo(&self, repo: &RepoRef) -> OpResult<Repository> {
        Host::GitHub.repo(repo)?;
        let full = repo.full_name();
        let v = self
            .read(repo_path(repo)?, &format!("repository {full}"))
            .await?;
        wire::repository(&v)
    }

    async fn list_branches(&self, repo: &RepoRef) -> OpResult<Vec<Branch>> {
        Host::GitHub.repo(repo)?;
        let full = repo.full_name();
        let what = format!("repository {full}");
        let first = self
            .client
            .policy()
            .resolve(&format!("{}/branches?per_page=100", repo_path(repo)?))
            .map_err(|e| ProviderError::validation(&e.to_string()))?;
        let mut pager = LinkPager::new(first, BRANCH_PAGE_CAP);
        let mut branches = Vec::new();
        while let Some(url) = pager.next_url() {
            let request = ApiRequest::get(url.as_str())
                .credential(self.credential.as_ref())
                .route(route::GITHUB_OPS);
            let response = self
                .client
                .send(request)
                .await
                .map_err(|e| from_api(e, Sent::Read, &what))?;
            pager.record(&response.url, &response.headers);
            let page: Vec<Value> = response
                .json()
                .map_err(|e| from_api(e, Sent::Read, &what))?;
            for b in &page {
                branches.push(wire::branch(b)?);
            }
        }
        Ok(branches)
    }

    async fn create_repo(&self, new: &NewRepository) -> OpResult<Repository> {
        Host::GitHub.new_repository(new)?;
        let target = match &new.owner {
            Some(org) => format!("/orgs/{}/repos", segment(org)?),
            None => "/user/repos".to_owned(),
        };
        let body = json!({
            "name": new.name,
            "description": new.description,
            "private": new.private,
            "auto_init": new.initialize,
        });
        match self
            .mutate(
                Method::POST,
                target,
                &body,
                true,
                &format!("owner of {}", new.name),
            )
            .await
        {
            Ok(v) => wire::repository(&v),
            // GitHub answers a taken name 422 "Repository creation failed." (the detail is in
            // its `errors`).
            Err(ProviderError::Validation(m)) if m.contains("Repository creation failed") => Err(
                ProviderError::Conflict(format!("{}: name already exists", new.name)),
            ),
            Err(e) if self.rechecks(&e) => self.recheck_repo(new, e).await,
            Err(e) => Err(e),
        }
    }

    async fn create_branch(&self, repo: &RepoRef, new: &NewBranch) -> OpResult<Branch> {
        Host::GitHub.repo(repo)?;
        Host::GitHub.new_branch(new)?;
        let sha = self.branch_head(repo, &new.from).await?;
        let body = json!({ "ref": format!("refs/heads/{}", new.name), "sha": sha });
        let target = format!("{}/git/refs", repo_path(repo)?);
        match self
            .mutate(
                Method::POST,
                target,
                &body,
                true,
                &format!("repository {}", repo.full_name()),
            )
            .await
        {
            Ok(_) => Ok(Branch {
                name: new.name.clone(),
                sha,
                protected: false,
            }),
            Err(e) if self.rechecks(&e) => self.recheck_branch(repo, new, &sha, e).await,
            Err(e) => Err(e),
        }
    }

    async fn protect_branch(
        &self,
        repo: &RepoRef,
        rule: &ProtectionRule,
    ) -> OpResult<ProtectionRule> {
        Host::GitHub.repo(repo)?;
        Host::GitHub.protection(rule)?;
        let reviews = rule
            .require_pull_request
            .then(|| json!({ "required_approving_review_count": rule.required_approvals }));
        let body = json!({
            "required_status_checks": null,
            "enforce_admins": false,
            "required_pull_request_reviews": reviews,
            "restrictions": null,
            "allow_force_pushes": rule.allow_force_push,
        });
        // One segment, `/` encoded as `%2F`: GitHub reads `{branch}` as one path parameter.
        let target = format!(
            "{}/branches/{}/protection",
            repo_path(repo)?,
            segment(&rule.branch)?
        );
        self.mutate(
            Method::PUT,
            target,
            &body,
            false,
            &format!("branch {} of {}", rule.branch, repo.full_name()),
        )
        .await?;
        Ok(rule.clone())
    }

    async fn commit_files(&self, repo: &RepoRef, commit: &CommitFiles) -> OpResult<Commit> {
        Host::GitHub.repo(repo)?;
        Host::GitHub.commit(commit)?;
        commit::commit_files(self, repo, commit).await
    }

    async fn open_pull_request(
        &self,
        repo: &RepoRef,
        new: &NewPullRequest,
    ) -> OpResult<PullRequest> {
        Host::GitHub.repo(repo)?;
        Host::GitHub.pull_request(new)?;
        let body = json!({
            "title": new.title,
            "head": new.head,
            "base": new.base,
            "body": new.body,
        });
        let target = format!("{}/pulls", repo_path(repo)?);
        match self
            .mutate(
                Method::POST,
                target,
                &body,
                true,
                &format!("repository {}", repo.full_name()),
            )
            .await
        {
            Ok(v) => wire::pull_request(&v),
            Err(e) if self.rechecks(&e) => self.recheck_pull(repo, new, e).await,
            Err(e) => Err(e),
        }
    }

    async fn merge_pull_request(
        &self,
        repo: &RepoRef,
        merge: &MergePullRequest,
    ) -> OpResult<MergeOutcome> {
        Host::GitHub.repo(repo)?;
        let mut body = json!({ "merge_method": merge.method.as_str() });
        if let Some(message) = &merge.commit_message {
            body["commit_title"] = json!(message);
        }
        if let Some(sha) = &merge.expected_head_sha {
            body["sha"] = json!(sha);
        }
        let target = format!("{}/pulls/{}/merge", repo_path(repo)?, merge.number);
        let what = format!("pull request #{} of {}", merge.number, repo.full_name());
        // 405 (not mergeable: closed, conflicting, reviews missing) and 409 (the head moved)
        // are conflicts.
        let v = self
            .mutate(Method::PUT, target, &body, false, &what)
            .await?;
        let sha = v
            .get("sha")
            .and_then(Value::as_str)
            .ok_or_else(|| ProviderError::Ambiguous("the merge's answer named no commit".into()))?;
        Ok(MergeOutcome {
            number: merge.number,
            sha: sha.to_owned(),
        })
    }
}
