//! Commits and refs: `PullRequestCommit`, `Commit`, `Ref` and its target.

use super::*;

/// `PullRequestCommit`.
#[derive(SimpleObject, Clone, Debug)]
pub struct PullRequestCommit {
    pub(super) commit: Commit,
}

/// `Commit`.
#[derive(Clone, Debug)]
pub struct Commit(pub(super) CommitRec);

#[Object]
impl Commit {
    async fn oid(&self) -> GitObjectId {
        GitObjectId(self.0.sha.clone())
    }
    async fn message(&self) -> &str {
        &self.0.message
    }
    async fn committed_date(&self) -> DateTime {
        DateTime::at(self.0.date)
    }
    async fn additions(&self) -> i64 {
        self.0.files.iter().map(|f| f.additions as i64).sum()
    }
    async fn deletions(&self) -> i64 {
        self.0.files.iter().map(|f| f.deletions as i64).sum()
    }
    async fn changed_files_if_available(&self) -> Option<i64> {
        Some(self.0.files.len() as i64)
    }
}

/// `Ref`.
#[derive(Clone, Debug)]
pub struct Ref {
    pub(super) name: String,
    pub(super) prefix: String,
    pub(super) oid: String,
    /// The repository, to find the commit the ref points at.
    pub(super) repo_id: u64,
}

/// `GitObject`: what a ref points at (always a commit here).
#[derive(Interface, Clone, Debug)]
#[graphql(field(name = "oid", ty = "GitObjectId"))]
pub enum GitObject {
    /// A commit.
    Commit(Commit),
}

#[Object]
impl Ref {
    async fn name(&self) -> &str {
        &self.name
    }
    async fn prefix(&self) -> &str {
        &self.prefix
    }
    async fn target(&self, ctx: &Context<'_>) -> async_graphql::Result<Option<GitObject>> {
        let (repo_id, oid) = (self.repo_id, self.oid.clone());
        let known = with_world(ctx, |w| w.content(repo_id).commits.get(&oid).cloned())?;
        // A head the world has no commit record for still names its object.
        let commit = known.unwrap_or_else(|| CommitRec {
            sha: oid,
            message: String::new(),
            author: String::new(),
            date: Timestamp::UNIX_EPOCH,
            parents: Vec::new(),
            files: Vec::new(),
            tree: Default::default(),
        });
        Ok(Some(GitObject::Commit(Commit(commit))))
    }
}
