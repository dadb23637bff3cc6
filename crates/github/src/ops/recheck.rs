//! The opt-in re-check after an ambiguous failure: look for what the mutation would have
//! created, return it when it matches the request, else report the conflict. It only reads;
//! it never sends the mutation again.

use super::{GitHubOps, wire};
use headroom_core::provider::path::query_value;
use headroom_core::provider::{
    Branch, NewBranch, NewPullRequest, NewRepository, OpResult, ProviderError, PullRequest,
    PullState, RepoRef, Repository,
};

impl GitHubOps {
    /// After an ambiguous `create_repo`: the repository by the name asked for.
    pub(super) async fn recheck_repo(
        &self,
        new: &NewRepository,
        ambiguous: ProviderError,
    ) -> OpResult<Repository> {
        let owner = match &new.owner {
            Some(org) => org.clone(),
            None => self.login().await?,
        };
        let repo = RepoRef::new(owner, new.name.clone());
        let found = match self.read(super::repo_path(&repo)?, "").await {
            Ok(v) => wire::repository(&v)?,
            Err(ProviderError::NotFound(_)) => return Err(ambiguous_not_found(ambiguous)),
            Err(e) => return Err(e),
        };
        if found.private == new.private {
            Ok(found)
        } else {
            Err(ProviderError::Conflict(format!(
                "{} exists with another visibility than asked",
                repo.full_name()
            )))
        }
    }

    /// After an ambiguous `create_branch`: the branch, if it points where it was asked to.
    pub(super) async fn recheck_branch(
        &self,
        repo: &RepoRef,
        new: &NewBranch,
        sha: &str,
        ambiguous: ProviderError,
    ) -> OpResult<Branch> {
        match self.branch_head(repo, &new.name).await {
            Ok(found) if found == sha => Ok(Branch {
                name: new.name.clone(),
                sha: found,
                protected: false,
            }),
            Ok(found) => Err(ProviderError::Conflict(format!(
                "branch {} exists at {found}, not at {sha}",
                new.name
            ))),
            Err(ProviderError::NotFound(_)) => Err(ambiguous_not_found(ambiguous)),
            Err(e) => Err(e),
        }
    }

    /// After an ambiguous `open_pull_request`: the open pull request from `head` to `base`.
    pub(super) async fn recheck_pull(
        &self,
        repo: &RepoRef,
        new: &NewPullRequest,
        ambiguous: ProviderError,
    ) -> OpResult<PullRequest> {
        let target = format!(
            "{}/pulls?state=open&head={}&base={}&per_page=100",
            super::repo_path(repo)?,
            query_value(&format!("{}:{}", repo.owner, new.head)),
            query_value(&new.base)
        );
        let list = self
            .read(target, &format!("repository {}", repo.full_name()))
            .await?;
        let open = list
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(wire::pull_request)
            .collect::<OpResult<Vec<PullRequest>>>()?;
        match open
            .into_iter()
            .find(|p| p.head == new.head && p.base == new.base && p.state == PullState::Open)
        {
            Some(p) if p.title == new.title => Ok(p),
            Some(p) => Err(ProviderError::Conflict(format!(
                "pull request #{} is open from {} to {} with another title",
                p.number, new.head, new.base
            ))),
            None => Err(ambiguous_not_found(ambiguous)),
        }
    }
}

/// Nothing was created after all: the first attempt was not applied. Still reported as
/// ambiguous, never resent: a request still in flight somewhere could land later.
fn ambiguous_not_found(ambiguous: ProviderError) -> ProviderError {
    match ambiguous {
        ProviderError::Ambiguous(m) => {
            ProviderError::Ambiguous(format!("{m}; a re-check found nothing created (yet)"))
        }
        other => other,
    }
}
