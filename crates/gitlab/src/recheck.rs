//! The opt-in re-check after an ambiguous failure on GitLab: read whether the project, branch
//! or merge request the mutation would have created exists; return it when it matches, else
//! report the conflict. It never sends the mutation again.

use crate::ops::{GitLabOps, project_id};
use crate::wire;
use headroom_core::provider::path::query_value;
use headroom_core::provider::{
    Branch, GitProvider, NewBranch, NewPullRequest, NewRepository, OpResult, ProviderError,
    PullRequest, RepoRef, Repository,
};

impl GitLabOps {
    /// After an ambiguous `create_repo`: the project by the path asked for (in the user's
    /// namespace, or by namespace id when one was given).
    pub(crate) async fn recheck_project(
        &self,
        new: &NewRepository,
        ambiguous: ProviderError,
    ) -> OpResult<Repository> {
        let found = match &new.owner {
            None => {
                let repo = RepoRef::new(self.username().await?, new.name.clone());
                match self.get_repo(&repo).await {
                    Ok(found) => found,
                    Err(ProviderError::NotFound(_)) => return Err(nothing_found(ambiguous)),
                    Err(e) => return Err(e),
                }
            }
            // A namespace by id has no path to look up without another API; say so.
            Some(_) => return Err(ambiguous),
        };
        if found.private == new.private {
            Ok(found)
        } else {
            Err(ProviderError::Conflict(format!(
                "{} exists with another visibility than asked",
                found.repo.full_name()
            )))
        }
    }

    /// After an ambiguous `create_branch`: the branch, if it points where its start does.
    pub(crate) async fn recheck_branch(
        &self,
        repo: &RepoRef,
        new: &NewBranch,
        ambiguous: ProviderError,
    ) -> OpResult<Branch> {
        let branches = self.list_branches(repo).await?;
        let Some(found) = branches.iter().find(|b| b.name == new.name) else {
            return Err(nothing_found(ambiguous));
        };
        let start = branches.iter().find(|b| b.name == new.from);
        if start.is_some_and(|s| s.sha == found.sha) || found.sha == new.from {
            Ok(found.clone())
        } else {
            Err(ProviderError::Conflict(format!(
                "branch {} exists at {}, not at {}",
                new.name, found.sha, new.from
            )))
        }
    }

    /// After an ambiguous `open_pull_request`: the open merge request from `head` to `base`.
    pub(crate) async fn recheck_merge_request(
        &self,
        repo: &RepoRef,
        new: &NewPullRequest,
        ambiguous: ProviderError,
    ) -> OpResult<PullRequest> {
        let target = format!(
            "/projects/{}/merge_requests?state=opened&source_branch={}&target_branch={}",
            project_id(repo)?,
            query_value(&new.head),
            query_value(&new.base)
        );
        let list = self
            .read(target, &format!("project {}", repo.full_name()))
            .await?;
        let open = list
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(wire::merge_request)
            .collect::<OpResult<Vec<PullRequest>>>()?;
        match open
            .into_iter()
            .find(|m| m.head == new.head && m.base == new.base)
        {
            Some(m) if m.title == new.title => Ok(m),
            Some(m) => Err(ProviderError::Conflict(format!(
                "merge request !{} is open from {} to {} with another title",
                m.number, new.head, new.base
            ))),
            None => Err(nothing_found(ambiguous)),
        }
    }
}

/// Nothing was created after all; still ambiguous (a request in flight could land later), and
/// never resent.
fn nothing_found(ambiguous: ProviderError) -> ProviderError {
    match ambiguous {
        ProviderError::Ambiguous(m) => {
            ProviderError::Ambiguous(format!("{m}; a re-check found nothing created (yet)"))
        }
        other => other,
    }
}
