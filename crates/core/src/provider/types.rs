//! The typed inputs and outputs of the provider contract, the same for every Git host.

use serde::{Deserialize, Serialize};

/// A repository by owner and name (GitLab: namespace path and project path).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RepoRef {
    /// The user, organization or namespace (may contain `/` for GitLab subgroups).
    pub owner: String,
    /// The repository's name (GitLab: the project's path).
    pub name: String,
}

impl RepoRef {
    /// `owner/name`.
    pub fn new(owner: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            owner: owner.into(),
            name: name.into(),
        }
    }

    /// Parses `owner/name` (the last `/` separates them); `None` when either part is empty.
    /// It does not judge the names: `names::Host::repo` does, before anything is sent.
    pub fn parse(full_name: &str) -> Option<Self> {
        let (owner, name) = full_name.trim().rsplit_once('/')?;
        (!owner.is_empty() && !name.is_empty()).then(|| Self::new(owner, name))
    }

    /// `owner/name`.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }
}

/// A repository as the provider describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repository {
    /// The provider's numeric id.
    pub id: u64,
    /// Owner and name.
    pub repo: RepoRef,
    /// The default branch, when the repository has one (an empty repository may not).
    pub default_branch: Option<String>,
    /// Whether only members can see it.
    pub private: bool,
    /// Its page on the web.
    pub web_url: String,
}

/// What `create_repo` asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewRepository {
    /// The name (GitLab: also its path).
    pub name: String,
    /// The organization (GitLab: namespace id or path) to create it in; `None`: the token's user.
    pub owner: Option<String>,
    /// A description.
    pub description: Option<String>,
    /// Private rather than public.
    pub private: bool,
    /// Create a first commit (a README) so the repository has a default branch.
    pub initialize: bool,
}

/// A branch and the commit it points to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Branch {
    /// The name.
    pub name: String,
    /// The commit at its head.
    pub sha: String,
    /// Whether a protection rule covers it.
    pub protected: bool,
}

/// What `create_branch` asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewBranch {
    /// The new branch's name.
    pub name: String,
    /// The branch it starts from.
    pub from: String,
}

/// A branch protection rule, in the terms both providers share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtectionRule {
    /// The branch.
    pub branch: String,
    /// Changes land through pull requests only (GitLab: nobody may push directly).
    pub require_pull_request: bool,
    /// Approvals a pull request needs (GitHub; GitLab sets approvals elsewhere).
    pub required_approvals: u32,
    /// Whether force pushes are allowed.
    pub allow_force_push: bool,
}

/// A file's mode in a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum FileMode {
    /// A regular file (`100644`).
    #[default]
    Regular,
    /// An executable file (`100755`).
    Executable,
    /// A symbolic link (`120000`): its content is the link's target, never what it points
    /// to. GitHub writes one; GitLab's commits API cannot, so GitLab refuses it.
    Symlink,
}

impl FileMode {
    /// The Git mode string.
    pub fn git_mode(self) -> &'static str {
        match self {
            FileMode::Regular => "100644",
            FileMode::Executable => "100755",
            FileMode::Symlink => "120000",
        }
    }
}

/// A file's new contents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileContent {
    /// UTF-8 text.
    Text(String),
    /// Bytes, sent base64-encoded.
    Binary(Vec<u8>),
}

/// One file of a commit: written with these contents and mode, or deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// The path from the repository's root, `/`-separated.
    pub path: String,
    /// The contents; `None` deletes the file.
    pub content: Option<FileContent>,
    /// The mode of a written file.
    pub mode: FileMode,
    /// Whether the file exists already (GitLab's actions tell `create` from `update`; a
    /// create over an existing file is a [`crate::provider::ProviderError::Conflict`]).
    pub exists: bool,
}

/// What `commit_files` asks for: one commit of several files on a branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitFiles {
    /// The branch the commit goes on (it must exist).
    pub branch: String,
    /// The commit message.
    pub message: String,
    /// The files.
    pub files: Vec<FileChange>,
}

/// A commit that was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    /// Its sha.
    pub sha: String,
    /// Its message.
    pub message: String,
    /// Its parents' shas.
    pub parents: Vec<String>,
}

/// What `open_pull_request` asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewPullRequest {
    /// The title.
    pub title: String,
    /// The branch with the changes.
    pub head: String,
    /// The branch to merge into.
    pub base: String,
    /// The description.
    pub body: Option<String>,
}

/// Where a pull request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PullState {
    /// Open.
    Open,
    /// Closed without merging.
    Closed,
    /// Merged.
    Merged,
}

/// A pull request (GitLab: merge request).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequest {
    /// The number in its repository (GitLab: the `iid`).
    pub number: u64,
    /// The title.
    pub title: String,
    /// The branch with the changes.
    pub head: String,
    /// The branch to merge into.
    pub base: String,
    /// Where it stands.
    pub state: PullState,
    /// Its page on the web.
    pub web_url: String,
}

/// How a pull request is merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum MergeMethod {
    /// A merge commit.
    #[default]
    Merge,
    /// One squashed commit.
    Squash,
    /// The commits replayed on the base (GitLab: only where the project is set to rebase;
    /// refused as a validation error otherwise).
    Rebase,
}

impl MergeMethod {
    /// The name GitHub's `merge_method` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            MergeMethod::Merge => "merge",
            MergeMethod::Squash => "squash",
            MergeMethod::Rebase => "rebase",
        }
    }
}

/// What `merge_pull_request` asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergePullRequest {
    /// The pull request's number (GitLab: `iid`).
    pub number: u64,
    /// How.
    pub method: MergeMethod,
    /// The merge commit's message, when not the provider's default.
    pub commit_message: Option<String>,
    /// Merge only if the head is still this commit.
    pub expected_head_sha: Option<String>,
}

/// A merge that happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeOutcome {
    /// The merged pull request's number.
    pub number: u64,
    /// The commit the merge made on the base.
    pub sha: String,
}

/// What a mutation does after an ambiguous failure (a timeout or 5xx after sending).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recheck {
    /// Report [`crate::provider::ProviderError::Ambiguous`].
    #[default]
    Never,
    /// `create_repo`, `create_branch` and `open_pull_request` read whether what they would
    /// have created exists: they return it when it matches the request, else a conflict.
    /// The other mutations still report ambiguous. Never a second send.
    AfterAmbiguous,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_refs_parse_owner_and_name_at_the_last_slash() {
        assert_eq!(
            RepoRef::parse("alice/widgets"),
            Some(RepoRef::new("alice", "widgets"))
        );
        assert_eq!(
            RepoRef::parse("group/sub/proj"),
            Some(RepoRef::new("group/sub", "proj"))
        );
        assert_eq!(RepoRef::parse("widgets"), None);
        assert_eq!(RepoRef::parse("alice/"), None);
        assert_eq!(RepoRef::new("a", "b").full_name(), "a/b");
    }

    #[test]
    fn modes_and_methods_have_their_wire_names() {
        assert_eq!(FileMode::Executable.git_mode(), "100755");
        assert_eq!(FileMode::Regular.git_mode(), "100644");
        assert_eq!(FileMode::Symlink.git_mode(), "120000");
        assert_eq!(MergeMethod::Squash.as_str(), "squash");
    }
}
