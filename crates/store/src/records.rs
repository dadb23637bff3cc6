//! Rows of the sync tables (GitHub organizations, GitLab groups, Jira sites, Linear
//! workspaces, LaunchDarkly accounts), typed for callers and described generically for the
//! backends: every record becomes one `INSERT … ON CONFLICT (identity) DO UPDATE`, so writing
//! the same page twice leaves the same rows.

use headroom_core::clock::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::model::ms;

mod gitlab;
mod gitlab_specs;
pub(crate) mod jira;
mod jira_specs;
pub(crate) mod launchdarkly;
mod launchdarkly_specs;
pub(crate) mod linear;
mod linear_specs;
pub(crate) mod queries;
mod row_spec;
mod specs;

pub use gitlab::{
    GitlabDeployment, GitlabFamily, GitlabFeatureFlag, GitlabGroup, GitlabIssue, GitlabJob,
    GitlabMergeRequest, GitlabMergeRequestApproval, GitlabMergeRequestCommit, GitlabMilestone,
    GitlabNote, GitlabPipeline, GitlabProject, GitlabRelease, GitlabWatermark,
};
use jira::JiraRecord;
use launchdarkly::LdRecord;
use linear::LinearRecord;
pub(crate) use row_spec::{ROWS_PER_STATEMENT, RowSpec};

/// A column value, typed for binding.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SqlValue {
    Int(Option<i64>),
    Float(Option<f64>),
    Text(Option<String>),
    Bool(Option<bool>),
    Json(Option<Json>),
}

fn int(v: i64) -> SqlValue {
    SqlValue::Int(Some(v))
}
fn oint(v: Option<i64>) -> SqlValue {
    SqlValue::Int(v)
}
fn text(v: &str) -> SqlValue {
    SqlValue::Text(Some(v.to_owned()))
}
fn otext(v: &Option<String>) -> SqlValue {
    SqlValue::Text(v.clone())
}
fn at(v: Timestamp) -> SqlValue {
    SqlValue::Int(Some(ms(v)))
}
fn oat(v: Option<Timestamp>) -> SqlValue {
    SqlValue::Int(v.map(ms))
}
fn obool(v: Option<bool>) -> SqlValue {
    SqlValue::Bool(v)
}
fn json(v: &Json) -> SqlValue {
    SqlValue::Json(Some(v.clone()))
}
/// A plain upsert of `values` into `table` on the identity `conflict`, with no surrogate id.
fn keyed(
    table: &'static str,
    conflict: &'static [&'static str],
    values: Vec<(&'static str, SqlValue)>,
) -> RowSpec {
    RowSpec {
        table,
        conflict,
        insert_only: &[],
        never_backwards: &[],
        returns_id: false,
        values,
    }
}

/// A list of names (or ids) as a JSON array, in the order given.
fn names(v: &[String]) -> SqlValue {
    SqlValue::Json(Some(Json::Array(
        v.iter().cloned().map(Json::String).collect(),
    )))
}

/// An organization.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Organization {
    /// Login (unique).
    pub login: String,
    /// databaseId.
    pub github_id: Option<i64>,
    /// GraphQL id.
    pub node_id: Option<String>,
    /// Display name.
    pub name: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Web URL.
    pub url: Option<String>,
    /// Created on GitHub.
    pub github_created_at: Option<Timestamp>,
    /// Updated on GitHub.
    pub github_updated_at: Option<Timestamp>,
    /// What GitHub sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A member of an organization (by the organization's surrogate id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrganizationMember {
    /// The organization's `id` in this database.
    pub organization_id: i64,
    /// The user's databaseId.
    pub github_id: i64,
    /// GraphQL id.
    pub node_id: Option<String>,
    /// Login.
    pub login: String,
    /// `ADMIN` or `MEMBER`.
    pub role: Option<String>,
    /// What GitHub sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A team.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Team {
    /// The organization's `id` in this database.
    pub organization_id: i64,
    /// GraphQL id.
    pub node_id: String,
    /// databaseId.
    pub github_id: Option<i64>,
    /// Slug.
    pub slug: String,
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// `SECRET` or `VISIBLE`.
    pub privacy: Option<String>,
    /// The parent team's GraphQL id.
    pub parent_node_id: Option<String>,
    /// Member count.
    pub members_count: Option<i64>,
    /// What GitHub sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A repository collected with its organization. Shares the `repositories` table with the
/// feed: an upsert refreshes identity and metadata, never the feed's enrichment state or the
/// watermarks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repository {
    /// databaseId.
    pub github_id: i64,
    /// GraphQL id.
    pub node_id: Option<String>,
    /// `owner/name`.
    pub full_name: String,
    /// Name.
    pub name: Option<String>,
    /// Owner's login.
    pub owner_login: Option<String>,
    /// Owner's databaseId.
    pub owner_github_id: Option<i64>,
    /// The organization's `id` in this database.
    pub organization_id: Option<i64>,
    /// Description.
    pub description: Option<String>,
    /// Visibility.
    pub visibility: Option<String>,
    /// Fork.
    pub fork: Option<bool>,
    /// Archived.
    pub archived: Option<bool>,
    /// Default branch.
    pub default_branch: Option<String>,
    /// Created on GitHub.
    pub github_created_at: Option<Timestamp>,
    /// Updated on GitHub.
    pub github_updated_at: Option<Timestamp>,
    /// Last push.
    pub pushed_at: Option<Timestamp>,
    /// What GitHub sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// An issue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Issue {
    /// The repository's databaseId.
    pub repository_github_id: i64,
    /// GraphQL id.
    pub node_id: String,
    /// databaseId.
    pub github_id: Option<i64>,
    /// Number.
    pub number: i64,
    /// Title.
    pub title: String,
    /// `OPEN` / `CLOSED`.
    pub state: String,
    /// Author.
    pub author_login: Option<String>,
    /// Comment count.
    pub comments_count: Option<i64>,
    /// Created on GitHub.
    pub github_created_at: Option<Timestamp>,
    /// Updated on GitHub.
    pub github_updated_at: Option<Timestamp>,
    /// Closed.
    pub closed_at: Option<Timestamp>,
    /// What GitHub sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// An issue comment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IssueComment {
    /// The repository's databaseId.
    pub repository_github_id: i64,
    /// The issue's number.
    pub issue_number: i64,
    /// GraphQL id.
    pub node_id: String,
    /// databaseId.
    pub github_id: Option<i64>,
    /// Author.
    pub author_login: Option<String>,
    /// Created on GitHub.
    pub github_created_at: Option<Timestamp>,
    /// Updated on GitHub.
    pub github_updated_at: Option<Timestamp>,
    /// What GitHub sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A project (v2), with its board in `raw`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Project {
    /// The organization's `id` in this database.
    pub organization_id: i64,
    /// GraphQL id.
    pub node_id: String,
    /// Number.
    pub number: i64,
    /// Title.
    pub title: String,
    /// Closed.
    pub closed: bool,
    /// Web URL.
    pub url: Option<String>,
    /// Item count.
    pub items_count: Option<i64>,
    /// Created on GitHub.
    pub github_created_at: Option<Timestamp>,
    /// Updated on GitHub.
    pub github_updated_at: Option<Timestamp>,
    /// What GitHub sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// An item on a project's board: an issue, a pull request, or a draft.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectItem {
    /// The project's GraphQL id.
    pub project_node_id: String,
    /// The item's GraphQL id.
    pub node_id: String,
    /// databaseId.
    pub github_id: Option<i64>,
    /// `ISSUE`, `PULL_REQUEST`, `DRAFT_ISSUE`.
    pub item_type: Option<String>,
    /// The issue's, pull request's or draft's GraphQL id.
    pub content_node_id: Option<String>,
    /// The issue or pull request number.
    pub content_number: Option<i64>,
    /// `owner/name` of the issue's or pull request's repository.
    pub content_repository: Option<String>,
    /// Title of what the item shows.
    pub title: Option<String>,
    /// What GitHub sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A pull request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PullRequest {
    /// The repository's databaseId.
    pub repository_github_id: i64,
    /// GraphQL id.
    pub node_id: String,
    /// databaseId.
    pub github_id: Option<i64>,
    /// Number.
    pub number: i64,
    /// Title.
    pub title: String,
    /// `OPEN` / `CLOSED` / `MERGED`.
    pub state: String,
    /// Author.
    pub author_login: Option<String>,
    /// Head branch.
    pub head_ref: Option<String>,
    /// Base branch.
    pub base_ref: Option<String>,
    /// Head commit.
    pub head_sha: Option<String>,
    /// Merged.
    pub merged: bool,
    /// Merged at.
    pub merged_at: Option<Timestamp>,
    /// Created on GitHub.
    pub github_created_at: Option<Timestamp>,
    /// Updated on GitHub.
    pub github_updated_at: Option<Timestamp>,
    /// Closed.
    pub closed_at: Option<Timestamp>,
    /// What GitHub sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A commit of a pull request. `files_collected_at` is the commit-files stage's watermark and
/// is never cleared by a later upsert of the commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PullRequestCommit {
    /// The repository's databaseId.
    pub repository_github_id: i64,
    /// The pull request's number.
    pub pull_request_number: i64,
    /// The commit.
    pub commit_sha: String,
    /// Author.
    pub author_login: Option<String>,
    /// First line of the message.
    pub message_headline: Option<String>,
    /// Committed at.
    pub committed_at: Option<Timestamp>,
    /// Lines added.
    pub additions: Option<i64>,
    /// Lines deleted.
    pub deletions: Option<i64>,
    /// Files changed.
    pub changed_files: Option<i64>,
    /// What GitHub sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A file changed by a commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommitFile {
    /// The repository's databaseId.
    pub repository_github_id: i64,
    /// The commit.
    pub commit_sha: String,
    /// The path.
    pub path: String,
    /// The path before a rename.
    pub previous_path: Option<String>,
    /// `added`, `modified`, …
    pub status: Option<String>,
    /// Lines added.
    pub additions: Option<i64>,
    /// Lines deleted.
    pub deletions: Option<i64>,
    /// Lines changed.
    pub changes: Option<i64>,
    /// What GitHub sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A workflow run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowRun {
    /// The run's id.
    pub github_id: i64,
    /// The repository's databaseId.
    pub repository_github_id: i64,
    /// GraphQL id.
    pub node_id: Option<String>,
    /// The workflow's id.
    pub workflow_id: Option<i64>,
    /// Name.
    pub name: Option<String>,
    /// Trigger.
    pub event: Option<String>,
    /// Branch.
    pub head_branch: Option<String>,
    /// Commit.
    pub head_sha: Option<String>,
    /// Status.
    pub status: Option<String>,
    /// Conclusion.
    pub conclusion: Option<String>,
    /// Run number.
    pub run_number: Option<i64>,
    /// Attempt.
    pub run_attempt: Option<i64>,
    /// Created on GitHub.
    pub github_created_at: Option<Timestamp>,
    /// Updated on GitHub.
    pub github_updated_at: Option<Timestamp>,
    /// What GitHub sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A job of a workflow run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowJob {
    /// The job's id.
    pub github_id: i64,
    /// The run's id.
    pub workflow_run_github_id: i64,
    /// The repository's databaseId.
    pub repository_github_id: i64,
    /// GraphQL id.
    pub node_id: Option<String>,
    /// Name.
    pub name: Option<String>,
    /// Status.
    pub status: Option<String>,
    /// Conclusion.
    pub conclusion: Option<String>,
    /// Started.
    pub started_at: Option<Timestamp>,
    /// Completed.
    pub completed_at: Option<Timestamp>,
    /// What GitHub sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A check run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckRun {
    /// The check run's id.
    pub github_id: i64,
    /// The repository's databaseId.
    pub repository_github_id: i64,
    /// GraphQL id.
    pub node_id: Option<String>,
    /// The check suite's id.
    pub check_suite_id: Option<i64>,
    /// Commit.
    pub head_sha: Option<String>,
    /// Name.
    pub name: Option<String>,
    /// Status.
    pub status: Option<String>,
    /// Conclusion.
    pub conclusion: Option<String>,
    /// Started.
    pub started_at: Option<Timestamp>,
    /// Completed.
    pub completed_at: Option<Timestamp>,
    /// What GitHub sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A branch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Branch {
    /// The repository's databaseId.
    pub repository_github_id: i64,
    /// Name.
    pub name: String,
    /// Head commit.
    pub head_sha: Option<String>,
    /// Protected.
    pub protected: Option<bool>,
    /// What GitHub sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// One row of a page of organization data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "table", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Record {
    /// `organizations`.
    Organization(Organization),
    /// `organization_members`.
    OrganizationMember(OrganizationMember),
    /// `teams`.
    Team(Team),
    /// `repositories`.
    Repository(Repository),
    /// `issues`.
    Issue(Issue),
    /// `issue_comments`.
    IssueComment(IssueComment),
    /// `projects`.
    Project(Project),
    /// `project_items`.
    ProjectItem(ProjectItem),
    /// `pull_requests`.
    PullRequest(PullRequest),
    /// `pull_request_commits`.
    PullRequestCommit(PullRequestCommit),
    /// `commit_files`.
    CommitFile(CommitFile),
    /// `workflow_runs`.
    WorkflowRun(WorkflowRun),
    /// `workflow_jobs`.
    WorkflowJob(WorkflowJob),
    /// `check_runs`.
    CheckRun(CheckRun),
    /// `branches`.
    Branch(Branch),
    /// `gitlab_groups`.
    GitlabGroup(GitlabGroup),
    /// `gitlab_projects`.
    GitlabProject(GitlabProject),
    /// `gitlab_merge_requests`.
    GitlabMergeRequest(GitlabMergeRequest),
    /// `gitlab_merge_request_commits`.
    GitlabMergeRequestCommit(GitlabMergeRequestCommit),
    /// `gitlab_merge_request_approvals`.
    GitlabMergeRequestApproval(GitlabMergeRequestApproval),
    /// `gitlab_notes`.
    GitlabNote(GitlabNote),
    /// `gitlab_pipelines`.
    GitlabPipeline(GitlabPipeline),
    /// `gitlab_jobs`.
    GitlabJob(GitlabJob),
    /// `gitlab_issues`.
    GitlabIssue(GitlabIssue),
    /// `gitlab_milestones`.
    GitlabMilestone(GitlabMilestone),
    /// `gitlab_deployments`.
    GitlabDeployment(GitlabDeployment),
    /// `gitlab_releases`.
    GitlabRelease(GitlabRelease),
    /// `gitlab_feature_flags`.
    GitlabFeatureFlag(GitlabFeatureFlag),
    /// `gitlab_watermarks`.
    GitlabWatermark(GitlabWatermark),
    /// A row of a `jira_*` table.
    Jira(JiraRecord),
    /// A row of a `linear_*` table.
    Linear(LinearRecord),
    /// A row of an `ld_*` table (LaunchDarkly).
    Launchdarkly(LdRecord),
}

impl Record {
    /// The table the record lands in.
    pub fn table(&self) -> &'static str {
        self.spec().table
    }

    pub(crate) fn spec(&self) -> RowSpec {
        match self {
            Record::Organization(r) => r.spec(),
            Record::OrganizationMember(r) => r.spec(),
            Record::Team(r) => r.spec(),
            Record::Repository(r) => r.spec(),
            Record::Issue(r) => r.spec(),
            Record::IssueComment(r) => r.spec(),
            Record::Project(r) => r.spec(),
            Record::ProjectItem(r) => r.spec(),
            Record::PullRequest(r) => r.spec(),
            Record::PullRequestCommit(r) => r.spec(),
            Record::CommitFile(r) => r.spec(),
            Record::WorkflowRun(r) => r.spec(),
            Record::WorkflowJob(r) => r.spec(),
            Record::CheckRun(r) => r.spec(),
            Record::Branch(r) => r.spec(),
            Record::GitlabGroup(r) => r.spec(),
            Record::GitlabProject(r) => r.spec(),
            Record::GitlabMergeRequest(r) => r.spec(),
            Record::GitlabMergeRequestCommit(r) => r.spec(),
            Record::GitlabMergeRequestApproval(r) => r.spec(),
            Record::GitlabNote(r) => r.spec(),
            Record::GitlabPipeline(r) => r.spec(),
            Record::GitlabJob(r) => r.spec(),
            Record::GitlabIssue(r) => r.spec(),
            Record::GitlabMilestone(r) => r.spec(),
            Record::GitlabDeployment(r) => r.spec(),
            Record::GitlabRelease(r) => r.spec(),
            Record::GitlabFeatureFlag(r) => r.spec(),
            Record::GitlabWatermark(r) => r.spec(),
            Record::Jira(r) => r.spec(),
            Record::Linear(r) => r.spec(),
            Record::Launchdarkly(r) => r.spec(),
        }
    }
}

/// Every table of the schema, in creation order (the tests compare both backends against it).
pub const TABLES: &[&str] = &[
    "credentials",
    "etags",
    "usage_records",
    "rate_limit_observations",
    "governor_identities",
    "governor_leases",
    "event_sources",
    "ingestion_runs",
    "actors",
    "organizations",
    "repositories",
    "push_events",
    "quarantined_events",
    "enrichment_batches",
    "enrichment_observations",
    "core_budget_ledger",
    "search_budget_ledger",
    "sync_runs",
    "sync_checkpoints",
    "organization_members",
    "teams",
    "issues",
    "issue_comments",
    "projects",
    "pull_requests",
    "pull_request_commits",
    "commit_files",
    "workflow_runs",
    "workflow_jobs",
    "check_runs",
    "branches",
    "project_items",
    "quota_readings",
    "quota_latest",
    "quota_minutes",
    "rate_limit_events_pruned",
    "spend_records",
    "gitlab_groups",
    "gitlab_projects",
    "gitlab_merge_requests",
    "gitlab_merge_request_commits",
    "gitlab_merge_request_approvals",
    "gitlab_notes",
    "gitlab_pipelines",
    "gitlab_jobs",
    "gitlab_issues",
    "gitlab_milestones",
    "gitlab_deployments",
    "gitlab_releases",
    "gitlab_feature_flags",
    "gitlab_watermarks",
    "jira_projects",
    "jira_issues",
    "jira_issue_sprints",
    "jira_changelog",
    "jira_comments",
    "jira_worklogs",
    "jira_boards",
    "jira_sprints",
    "jira_watermarks",
    "linear_teams",
    "linear_users",
    "linear_team_memberships",
    "linear_workflow_states",
    "linear_labels",
    "linear_projects",
    "linear_cycles",
    "linear_issues",
    "linear_comments",
    "linear_attachments",
    "linear_issue_history",
    "linear_watermarks",
    "ld_projects",
    "ld_environments",
    "ld_flags",
    "ld_flag_environments",
    "ld_segments",
    "ld_members",
    "ld_audit_entries",
    "ld_code_ref_repositories",
];
