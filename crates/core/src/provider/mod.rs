//! The Git provider contract: eight operations every Git host implements the same way
//! (GitHub in headroom-github's `ops`, GitLab in headroom-gitlab), their typed inputs and
//! outputs, and the one error type that says what happened.
//!
//! The contract's guarantees, which every implementation keeps:
//! - reads (`get_repo`, `list_branches`) are idempotent and may be retried by the exit door;
//! - mutations are sent once, by every layer; a failure after sending (a timeout, a 5xx) is
//!   [`ProviderError::Ambiguous`], unless the caller opted into the re-check
//!   ([`Recheck::AfterAmbiguous`]), which *looks* for what `create_repo`, `create_branch` or
//!   `open_pull_request` would have created — it never sends the mutation again.
//!
//! Every implementation checks its inputs with [`names::Host`] before sending anything, and
//! builds its URLs with [`path`]'s encoders only.
//!
//! The trait's futures are `Send` and name no runtime, so this crate stays runtime-free.

use std::future::Future;

mod error;
pub mod names;
pub mod path;
mod types;

pub use error::ProviderError;
pub use types::{
    Branch, Commit, CommitFiles, FileChange, FileContent, FileMode, MergeMethod, MergeOutcome,
    MergePullRequest, NewBranch, NewPullRequest, NewRepository, ProtectionRule, PullRequest,
    PullState, Recheck, RepoRef, Repository,
};

/// What an operation returns.
pub type OpResult<T> = Result<T, ProviderError>;

/// The eight operations of a Git provider.
pub trait GitProvider: Send + Sync {
    /// One repository (GitLab: project).
    fn get_repo(&self, repo: &RepoRef) -> impl Future<Output = OpResult<Repository>> + Send;

    /// Every branch of a repository, all pages.
    fn list_branches(&self, repo: &RepoRef) -> impl Future<Output = OpResult<Vec<Branch>>> + Send;

    /// Creates a repository; [`ProviderError::Conflict`] when the name is taken.
    fn create_repo(&self, new: &NewRepository)
    -> impl Future<Output = OpResult<Repository>> + Send;

    /// Creates a branch from another branch; [`ProviderError::Conflict`] when it exists.
    fn create_branch(
        &self,
        repo: &RepoRef,
        new: &NewBranch,
    ) -> impl Future<Output = OpResult<Branch>> + Send;

    /// Protects a branch with `rule`.
    fn protect_branch(
        &self,
        repo: &RepoRef,
        rule: &ProtectionRule,
    ) -> impl Future<Output = OpResult<ProtectionRule>> + Send;

    /// One commit of several files on a branch.
    fn commit_files(
        &self,
        repo: &RepoRef,
        commit: &CommitFiles,
    ) -> impl Future<Output = OpResult<Commit>> + Send;

    /// Opens a pull request (GitLab: merge request); [`ProviderError::Conflict`] when one is
    /// already open for the same head and base.
    fn open_pull_request(
        &self,
        repo: &RepoRef,
        new: &NewPullRequest,
    ) -> impl Future<Output = OpResult<PullRequest>> + Send;

    /// Merges a pull request; [`ProviderError::Conflict`] when it cannot be merged.
    fn merge_pull_request(
        &self,
        repo: &RepoRef,
        merge: &MergePullRequest,
    ) -> impl Future<Output = OpResult<MergeOutcome>> + Send;
}
