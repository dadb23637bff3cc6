//! Rows of the organization-sync tables, typed for callers and described generically for the
//! backends: every record becomes one `INSERT … ON CONFLICT (identity) DO UPDATE`, so writing
//! the same page twice leaves the same rows.

use headroom_core::clock::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::model::ms;

/// A column value, typed for binding.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SqlValue {
    Int(Option<i64>),
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

/// How one record is written: the table, the identity it conflicts on, and the columns.
#[derive(Debug, Clone)]
pub(crate) struct RowSpec {
    pub table: &'static str,
    pub conflict: &'static [&'static str],
    /// Written on insert, never overwritten by a later upsert.
    pub insert_only: &'static [&'static str],
    /// Whether the table has a surrogate `id` to return.
    pub returns_id: bool,
    pub values: Vec<(&'static str, SqlValue)>,
}

impl RowSpec {
    /// `INSERT INTO t (…) VALUES ($1…) ON CONFLICT (…) DO UPDATE SET c = excluded.c …`.
    /// Table and column names are compile-time constants of this module, never input.
    pub fn sql(&self) -> String {
        let columns: Vec<&str> = self.values.iter().map(|(c, _)| *c).collect();
        let params: Vec<String> = (1..=columns.len()).map(|i| format!("${i}")).collect();
        let updates: Vec<String> = columns
            .iter()
            .filter(|c| !self.conflict.contains(c) && !self.insert_only.contains(c))
            .map(|c| format!("{c} = excluded.{c}"))
            .collect();
        let action = if updates.is_empty() {
            "NOTHING".to_owned()
        } else {
            format!("UPDATE SET {}", updates.join(", "))
        };
        let returning = if self.returns_id { " RETURNING id" } else { "" };
        format!(
            "INSERT INTO {} ({}) VALUES ({}) ON CONFLICT ({}) DO {}{}",
            self.table,
            columns.join(", "),
            params.join(", "),
            self.conflict.join(", "),
            action,
            returning
        )
    }
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
}

impl Record {
    /// The table the record lands in.
    pub fn table(&self) -> &'static str {
        self.spec().table
    }

    pub(crate) fn spec(&self) -> RowSpec {
        match self {
            Record::Organization(r) => RowSpec {
                table: "organizations",
                conflict: &["login"],
                insert_only: &[],
                returns_id: true,
                values: vec![
                    ("login", text(&r.login)),
                    ("github_id", oint(r.github_id)),
                    ("node_id", otext(&r.node_id)),
                    ("name", otext(&r.name)),
                    ("description", otext(&r.description)),
                    ("url", otext(&r.url)),
                    ("github_created_at_ms", oat(r.github_created_at)),
                    ("github_updated_at_ms", oat(r.github_updated_at)),
                    ("raw_json", json(&r.raw)),
                    ("collected_at_ms", at(r.collected_at)),
                ],
            },
            Record::OrganizationMember(r) => RowSpec {
                table: "organization_members",
                conflict: &["organization_id", "github_id"],
                insert_only: &[],
                returns_id: false,
                values: vec![
                    ("organization_id", int(r.organization_id)),
                    ("github_id", int(r.github_id)),
                    ("node_id", otext(&r.node_id)),
                    ("login", text(&r.login)),
                    ("role", otext(&r.role)),
                    ("raw_json", json(&r.raw)),
                    ("collected_at_ms", at(r.collected_at)),
                ],
            },
            Record::Team(r) => RowSpec {
                table: "teams",
                conflict: &["node_id"],
                insert_only: &[],
                returns_id: true,
                values: vec![
                    ("organization_id", int(r.organization_id)),
                    ("node_id", text(&r.node_id)),
                    ("github_id", oint(r.github_id)),
                    ("slug", text(&r.slug)),
                    ("name", text(&r.name)),
                    ("description", otext(&r.description)),
                    ("privacy", otext(&r.privacy)),
                    ("parent_node_id", otext(&r.parent_node_id)),
                    ("members_count", oint(r.members_count)),
                    ("raw_json", json(&r.raw)),
                    ("collected_at_ms", at(r.collected_at)),
                ],
            },
            Record::Repository(r) => RowSpec {
                table: "repositories",
                conflict: &["github_id"],
                // A repository collected in full needs no feed enrichment; a row the feed
                // created keeps its enrichment state.
                insert_only: &[
                    "enrichment_status",
                    "enrichment_stage",
                    "fetched_at_ms",
                    "contract_complete_at_ms",
                    "created_at_ms",
                ],
                returns_id: true,
                values: vec![
                    ("github_id", int(r.github_id)),
                    ("node_id", otext(&r.node_id)),
                    ("full_name", text(&r.full_name)),
                    ("name", otext(&r.name)),
                    ("owner_login", otext(&r.owner_login)),
                    ("owner_github_id", oint(r.owner_github_id)),
                    ("organization_id", oint(r.organization_id)),
                    ("description", otext(&r.description)),
                    ("visibility", otext(&r.visibility)),
                    ("fork", obool(r.fork)),
                    ("archived", obool(r.archived)),
                    ("default_branch", otext(&r.default_branch)),
                    ("github_created_at_ms", oat(r.github_created_at)),
                    ("github_updated_at_ms", oat(r.github_updated_at)),
                    ("pushed_at_ms", oat(r.pushed_at)),
                    ("raw_json", json(&r.raw)),
                    ("enrichment_status", text("complete")),
                    ("enrichment_stage", text("contract_complete")),
                    ("fetched_at_ms", at(r.collected_at)),
                    ("contract_complete_at_ms", at(r.collected_at)),
                    ("created_at_ms", at(r.collected_at)),
                    ("updated_at_ms", at(r.collected_at)),
                ],
            },
            Record::Issue(r) => RowSpec {
                table: "issues",
                conflict: &["node_id"],
                insert_only: &[],
                returns_id: true,
                values: vec![
                    ("repository_github_id", int(r.repository_github_id)),
                    ("node_id", text(&r.node_id)),
                    ("github_id", oint(r.github_id)),
                    ("number", int(r.number)),
                    ("title", text(&r.title)),
                    ("state", text(&r.state)),
                    ("author_login", otext(&r.author_login)),
                    ("comments_count", oint(r.comments_count)),
                    ("github_created_at_ms", oat(r.github_created_at)),
                    ("github_updated_at_ms", oat(r.github_updated_at)),
                    ("closed_at_ms", oat(r.closed_at)),
                    ("raw_json", json(&r.raw)),
                    ("collected_at_ms", at(r.collected_at)),
                ],
            },
            Record::IssueComment(r) => RowSpec {
                table: "issue_comments",
                conflict: &["node_id"],
                insert_only: &[],
                returns_id: true,
                values: vec![
                    ("repository_github_id", int(r.repository_github_id)),
                    ("issue_number", int(r.issue_number)),
                    ("node_id", text(&r.node_id)),
                    ("github_id", oint(r.github_id)),
                    ("author_login", otext(&r.author_login)),
                    ("github_created_at_ms", oat(r.github_created_at)),
                    ("github_updated_at_ms", oat(r.github_updated_at)),
                    ("raw_json", json(&r.raw)),
                    ("collected_at_ms", at(r.collected_at)),
                ],
            },
            Record::Project(r) => RowSpec {
                table: "projects",
                conflict: &["node_id"],
                insert_only: &[],
                returns_id: true,
                values: vec![
                    ("organization_id", int(r.organization_id)),
                    ("node_id", text(&r.node_id)),
                    ("number", int(r.number)),
                    ("title", text(&r.title)),
                    ("closed", SqlValue::Bool(Some(r.closed))),
                    ("url", otext(&r.url)),
                    ("items_count", oint(r.items_count)),
                    ("github_created_at_ms", oat(r.github_created_at)),
                    ("github_updated_at_ms", oat(r.github_updated_at)),
                    ("raw_json", json(&r.raw)),
                    ("collected_at_ms", at(r.collected_at)),
                ],
            },
            Record::ProjectItem(r) => RowSpec {
                table: "project_items",
                conflict: &["node_id"],
                insert_only: &[],
                returns_id: true,
                values: vec![
                    ("project_node_id", text(&r.project_node_id)),
                    ("node_id", text(&r.node_id)),
                    ("github_id", oint(r.github_id)),
                    ("item_type", otext(&r.item_type)),
                    ("content_node_id", otext(&r.content_node_id)),
                    ("content_number", oint(r.content_number)),
                    ("content_repository", otext(&r.content_repository)),
                    ("title", otext(&r.title)),
                    ("raw_json", json(&r.raw)),
                    ("collected_at_ms", at(r.collected_at)),
                ],
            },
            Record::PullRequest(r) => RowSpec {
                table: "pull_requests",
                conflict: &["node_id"],
                insert_only: &[],
                returns_id: true,
                values: vec![
                    ("repository_github_id", int(r.repository_github_id)),
                    ("node_id", text(&r.node_id)),
                    ("github_id", oint(r.github_id)),
                    ("number", int(r.number)),
                    ("title", text(&r.title)),
                    ("state", text(&r.state)),
                    ("author_login", otext(&r.author_login)),
                    ("head_ref", otext(&r.head_ref)),
                    ("base_ref", otext(&r.base_ref)),
                    ("head_sha", otext(&r.head_sha)),
                    ("merged", SqlValue::Bool(Some(r.merged))),
                    ("merged_at_ms", oat(r.merged_at)),
                    ("github_created_at_ms", oat(r.github_created_at)),
                    ("github_updated_at_ms", oat(r.github_updated_at)),
                    ("closed_at_ms", oat(r.closed_at)),
                    ("raw_json", json(&r.raw)),
                    ("collected_at_ms", at(r.collected_at)),
                ],
            },
            Record::PullRequestCommit(r) => RowSpec {
                table: "pull_request_commits",
                conflict: &["repository_github_id", "pull_request_number", "commit_sha"],
                insert_only: &[],
                returns_id: false,
                values: vec![
                    ("repository_github_id", int(r.repository_github_id)),
                    ("pull_request_number", int(r.pull_request_number)),
                    ("commit_sha", text(&r.commit_sha)),
                    ("author_login", otext(&r.author_login)),
                    ("message_headline", otext(&r.message_headline)),
                    ("committed_at_ms", oat(r.committed_at)),
                    ("additions", oint(r.additions)),
                    ("deletions", oint(r.deletions)),
                    ("changed_files", oint(r.changed_files)),
                    ("raw_json", json(&r.raw)),
                    ("collected_at_ms", at(r.collected_at)),
                ],
            },
            Record::CommitFile(r) => RowSpec {
                table: "commit_files",
                conflict: &["repository_github_id", "commit_sha", "path"],
                insert_only: &[],
                returns_id: false,
                values: vec![
                    ("repository_github_id", int(r.repository_github_id)),
                    ("commit_sha", text(&r.commit_sha)),
                    ("path", text(&r.path)),
                    ("previous_path", otext(&r.previous_path)),
                    ("status", otext(&r.status)),
                    ("additions", oint(r.additions)),
                    ("deletions", oint(r.deletions)),
                    ("changes", oint(r.changes)),
                    ("raw_json", json(&r.raw)),
                    ("collected_at_ms", at(r.collected_at)),
                ],
            },
            Record::WorkflowRun(r) => RowSpec {
                table: "workflow_runs",
                conflict: &["github_id"],
                insert_only: &[],
                returns_id: false,
                values: vec![
                    ("github_id", int(r.github_id)),
                    ("repository_github_id", int(r.repository_github_id)),
                    ("node_id", otext(&r.node_id)),
                    ("workflow_id", oint(r.workflow_id)),
                    ("name", otext(&r.name)),
                    ("event", otext(&r.event)),
                    ("head_branch", otext(&r.head_branch)),
                    ("head_sha", otext(&r.head_sha)),
                    ("status", otext(&r.status)),
                    ("conclusion", otext(&r.conclusion)),
                    ("run_number", oint(r.run_number)),
                    ("run_attempt", oint(r.run_attempt)),
                    ("github_created_at_ms", oat(r.github_created_at)),
                    ("github_updated_at_ms", oat(r.github_updated_at)),
                    ("raw_json", json(&r.raw)),
                    ("collected_at_ms", at(r.collected_at)),
                ],
            },
            Record::WorkflowJob(r) => RowSpec {
                table: "workflow_jobs",
                conflict: &["github_id"],
                insert_only: &[],
                returns_id: false,
                values: vec![
                    ("github_id", int(r.github_id)),
                    ("workflow_run_github_id", int(r.workflow_run_github_id)),
                    ("repository_github_id", int(r.repository_github_id)),
                    ("node_id", otext(&r.node_id)),
                    ("name", otext(&r.name)),
                    ("status", otext(&r.status)),
                    ("conclusion", otext(&r.conclusion)),
                    ("started_at_ms", oat(r.started_at)),
                    ("completed_at_ms", oat(r.completed_at)),
                    ("raw_json", json(&r.raw)),
                    ("collected_at_ms", at(r.collected_at)),
                ],
            },
            Record::CheckRun(r) => RowSpec {
                table: "check_runs",
                conflict: &["github_id"],
                insert_only: &[],
                returns_id: false,
                values: vec![
                    ("github_id", int(r.github_id)),
                    ("repository_github_id", int(r.repository_github_id)),
                    ("node_id", otext(&r.node_id)),
                    ("check_suite_id", oint(r.check_suite_id)),
                    ("head_sha", otext(&r.head_sha)),
                    ("name", otext(&r.name)),
                    ("status", otext(&r.status)),
                    ("conclusion", otext(&r.conclusion)),
                    ("started_at_ms", oat(r.started_at)),
                    ("completed_at_ms", oat(r.completed_at)),
                    ("raw_json", json(&r.raw)),
                    ("collected_at_ms", at(r.collected_at)),
                ],
            },
            Record::Branch(r) => RowSpec {
                table: "branches",
                conflict: &["repository_github_id", "name"],
                insert_only: &[],
                returns_id: false,
                values: vec![
                    ("repository_github_id", int(r.repository_github_id)),
                    ("name", text(&r.name)),
                    ("head_sha", otext(&r.head_sha)),
                    ("protected", obool(r.protected)),
                    ("raw_json", json(&r.raw)),
                    ("collected_at_ms", at(r.collected_at)),
                ],
            },
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
];
