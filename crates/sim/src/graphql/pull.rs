//! `PullRequest` and its connections.

use super::*;

/// `PullRequest`.
#[derive(Clone, Debug)]
pub struct PullRequest {
    pub(super) issue: IssueRec,
    pub(super) pull: PullRec,
    pub(super) repo_id: u64,
}

impl PullRequest {
    pub(super) fn state(&self) -> PullRequestState {
        if self.pull.merged {
            PullRequestState::Merged
        } else if self.issue.open {
            PullRequestState::Open
        } else {
            PullRequestState::Closed
        }
    }
}

#[Object]
impl PullRequest {
    async fn id(&self) -> ID {
        gid("PullRequest", self.pull.id)
    }
    async fn database_id(&self) -> Option<i64> {
        Some(self.pull.id as i64)
    }
    async fn number(&self) -> i64 {
        self.pull.number as i64
    }
    async fn title(&self) -> &str {
        &self.issue.title
    }
    async fn body(&self) -> &str {
        &self.issue.body
    }
    #[graphql(name = "state")]
    async fn state_field(&self) -> PullRequestState {
        self.state()
    }
    async fn merged(&self) -> bool {
        self.pull.merged
    }
    async fn merged_at(&self) -> Option<DateTime> {
        self.pull.merged_at.map(DateTime::at)
    }
    async fn head_ref_name(&self) -> &str {
        &self.pull.head
    }
    async fn base_ref_name(&self) -> &str {
        &self.pull.base
    }
    async fn head_ref_oid(&self) -> GitObjectId {
        GitObjectId(self.pull.head_sha.clone())
    }
    async fn created_at(&self) -> DateTime {
        DateTime::at(self.issue.created_at)
    }
    async fn updated_at(&self) -> DateTime {
        DateTime::at(self.issue.updated_at)
    }
    async fn author(&self, ctx: &Context<'_>) -> async_graphql::Result<Option<Actor>> {
        let login = self.issue.user.clone();
        Ok(with_world(ctx, |w| w.user(&login).cloned())?.map(Actor::of))
    }
    /// Commits.
    async fn commits(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<PullRequestCommitConnection> {
        let (repo_id, shas) = (self.repo_id, self.pull.commits.clone());
        let all: Vec<PullRequestCommit> = with_world(ctx, |w| {
            let c = w.content(repo_id);
            shas.iter()
                .filter_map(|s| c.commits.get(s).cloned())
                .map(|commit| PullRequestCommit {
                    commit: Commit(commit),
                })
                .collect()
        })?;
        Ok(PullRequestCommitConnection::from_page(paginate(
            &all, "commits", first, after, last, before,
        )?))
    }
    /// Comments on the conversation.
    async fn comments(
        &self,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<IssueCommentConnection> {
        let all: Vec<IssueComment> = self
            .issue
            .comments
            .iter()
            .cloned()
            .map(IssueComment)
            .collect();
        Ok(IssueCommentConnection::from_page(paginate(
            &all, "comments", first, after, last, before,
        )?))
    }
}
