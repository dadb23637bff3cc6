//! `Repository`: its fields and the connections to its issues, pull requests, labels,
//! refs and projects.

use super::*;

/// `Repository`.
#[derive(Clone, Debug)]
pub struct Repository(pub(super) RepoRec);

#[Object]
impl Repository {
    async fn id(&self) -> ID {
        gid("Repository", self.0.id)
    }
    async fn database_id(&self) -> Option<i64> {
        Some(self.0.id as i64)
    }
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn name_with_owner(&self) -> String {
        self.0.full_name()
    }
    async fn owner(&self, ctx: &Context<'_>) -> async_graphql::Result<RepositoryOwner> {
        let owner = self.0.owner.clone();
        with_world(ctx, |w| w.user(&owner).cloned())?
            .map(RepositoryOwner::of)
            .ok_or_else(|| {
                async_graphql::Error::new("Something went wrong while executing your query.")
            })
    }
    async fn is_private(&self) -> bool {
        self.0.private
    }
    async fn description(&self) -> Option<&str> {
        self.0.description.as_deref()
    }
    async fn url(&self) -> Uri {
        Uri(format!("https://github.com/{}", self.0.full_name()))
    }
    async fn created_at(&self) -> DateTime {
        DateTime::at(self.0.created_at)
    }
    async fn updated_at(&self) -> DateTime {
        DateTime::at(self.0.updated_at)
    }
    async fn stargazer_count(&self) -> i64 {
        self.0.stars as i64
    }
    /// The default branch.
    async fn default_branch_ref(&self, ctx: &Context<'_>) -> async_graphql::Result<Option<Ref>> {
        let (id, branch) = (self.0.id, self.0.default_branch.clone());
        with_world(ctx, |w| {
            w.content(id).branch(&branch).map(|b| Ref {
                name: b.name.clone(),
                prefix: "refs/heads/".to_owned(),
                oid: b.sha.clone(),
                repo_id: id,
            })
        })
    }
    /// Issues (pull requests excluded).
    #[allow(clippy::too_many_arguments)]
    async fn issues(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
        states: Option<Vec<IssueState>>,
        filter_by: Option<IssueFilters>,
        order_by: Option<IssueOrder>,
    ) -> async_graphql::Result<IssueConnection> {
        refuse_under_saml(ctx, &self.0)?;
        let id = self.0.id;
        let since = since_of(filter_by.as_ref())?;
        let all: Vec<Issue> = with_world(ctx, |w| {
            let mut issues = w.content(id).issues.clone();
            order_issues(&mut issues, order_by.as_ref());
            issues
                .into_iter()
                .filter(|i| i.pull.is_none())
                .filter(|i| since.is_none_or(|s| i.updated_at >= s))
                .filter(|i| {
                    states.as_ref().is_none_or(|s| {
                        s.contains(if i.open {
                            &IssueState::Open
                        } else {
                            &IssueState::Closed
                        })
                    })
                })
                .map(Issue)
                .collect()
        })?;
        Ok(IssueConnection::from_page(paginate(
            &all, "issues", first, after, last, before,
        )?))
    }
    /// One issue by number (a pull request's number answers NOT_FOUND).
    async fn issue(&self, ctx: &Context<'_>, number: i64) -> async_graphql::Result<Option<Issue>> {
        refuse_under_saml(ctx, &self.0)?;
        let id = self.0.id;
        let found = with_world(ctx, |w| {
            w.content(id)
                .issues
                .iter()
                .find(|i| i.number as i64 == number && i.pull.is_none())
                .cloned()
        })?;
        match found {
            Some(i) => Ok(Some(Issue(i))),
            None => Err(not_found(format!(
                "Could not resolve to an Issue with the number of {number}."
            ))),
        }
    }
    /// One pull request by number.
    async fn pull_request(
        &self,
        ctx: &Context<'_>,
        number: i64,
    ) -> async_graphql::Result<Option<PullRequest>> {
        refuse_under_saml(ctx, &self.0)?;
        let id = self.0.id;
        let found = with_world(ctx, |w| {
            let c = w.content(id);
            c.issues
                .iter()
                .find(|i| i.number as i64 == number)
                .and_then(|i| i.pull.map(|p| (i.clone(), c.pulls[p].clone())))
        })?;
        match found {
            Some((issue, pull)) => Ok(Some(PullRequest {
                issue,
                pull,
                repo_id: id,
            })),
            None => Err(not_found(format!(
                "Could not resolve to a PullRequest with the number of {number}."
            ))),
        }
    }
    /// Pull requests.
    #[allow(clippy::too_many_arguments)]
    async fn pull_requests(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
        states: Option<Vec<PullRequestState>>,
        order_by: Option<IssueOrder>,
    ) -> async_graphql::Result<PullRequestConnection> {
        refuse_under_saml(ctx, &self.0)?;
        let id = self.0.id;
        let all: Vec<PullRequest> = with_world(ctx, |w| {
            let c = w.content(id);
            let mut issues = c.issues.clone();
            order_issues(&mut issues, order_by.as_ref());
            issues
                .iter()
                .filter_map(|i| i.pull.map(|p| (i.clone(), c.pulls[p].clone())))
                .map(|(i, p)| PullRequest {
                    issue: i,
                    pull: p,
                    repo_id: id,
                })
                .filter(|pr| states.as_ref().is_none_or(|s| s.contains(&pr.state())))
                .collect()
        })?;
        Ok(PullRequestConnection::from_page(paginate(
            &all,
            "pullRequests",
            first,
            after,
            last,
            before,
        )?))
    }
    /// Git refs under a prefix (`refs/heads/`).
    #[allow(clippy::too_many_arguments)]
    async fn refs(
        &self,
        ctx: &Context<'_>,
        ref_prefix: String,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<Option<RefConnection>> {
        refuse_under_saml(ctx, &self.0)?;
        let id = self.0.id;
        let all: Vec<Ref> = if ref_prefix == "refs/heads/" {
            with_world(ctx, |w| {
                w.content(id)
                    .branches
                    .iter()
                    .map(|b| Ref {
                        name: b.name.clone(),
                        prefix: ref_prefix.clone(),
                        oid: b.sha.clone(),
                        repo_id: id,
                    })
                    .collect()
            })?
        } else {
            Vec::new()
        };
        Ok(Some(RefConnection::from_page(paginate(
            &all, "refs", first, after, last, before,
        )?)))
    }
    /// One linked project (v2) by its number.
    async fn project_v2(
        &self,
        ctx: &Context<'_>,
        number: i64,
    ) -> async_graphql::Result<Option<ProjectV2>> {
        refuse_under_saml(ctx, &self.0)?;
        let id = self.0.id;
        let found = with_world(ctx, |w| {
            w.content(id)
                .projects
                .iter()
                .find(|p| p.number as i64 == number)
                .cloned()
        })?;
        match found {
            Some(rec) => Ok(Some(ProjectV2 { rec, repo_id: id })),
            None => Err(not_found(format!(
                "Could not resolve to a ProjectV2 with the number {number}."
            ))),
        }
    }
    /// Projects (v2).
    async fn projects_v2(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<ProjectV2Connection> {
        refuse_under_saml(ctx, &self.0)?;
        let id = self.0.id;
        let all: Vec<ProjectV2> = with_world(ctx, |w| {
            w.content(id)
                .projects
                .iter()
                .cloned()
                .map(|rec| ProjectV2 { rec, repo_id: id })
                .collect()
        })?;
        projects_page(&all, first, after, last, before)
    }
}
