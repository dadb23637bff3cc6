//! Rows of the Jira sync tables (`jira_*`). Jira's ids are unique only within one site, so every
//! row's identity starts with `site` (the site's host): one database can hold several sites
//! without their ids meeting. Each row keeps what Jira sent (`raw`) beside the typed fields a
//! delivery-metrics query reads. People are named by `accountId`, never by e-mail address.

use headroom_core::clock::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// A project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JiraProject {
    /// The site's host (`acme.atlassian.net`).
    pub site: String,
    /// The project's id.
    pub id: i64,
    /// The project's key (`ENG`).
    pub key: String,
    /// Display name.
    pub name: Option<String>,
    /// `software`, `business` or `service_desk`.
    pub project_type: Option<String>,
    /// The lead's accountId.
    pub lead_account_id: Option<String>,
    /// What Jira sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// An issue (any type: story, bug, epic, sub-task).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JiraIssue {
    /// The site's host (`acme.atlassian.net`).
    pub site: String,
    /// The issue's id.
    pub id: i64,
    /// The issue's key (`ENG-12`).
    pub key: String,
    /// Its project's id.
    pub project_id: Option<i64>,
    /// Summary.
    pub summary: Option<String>,
    /// Type name.
    pub issue_type: Option<String>,
    /// Status name.
    pub status: Option<String>,
    /// Status category key: `new`, `indeterminate` or `done`.
    pub status_category: Option<String>,
    /// Priority name.
    pub priority: Option<String>,
    /// The assignee's accountId.
    pub assignee_account_id: Option<String>,
    /// The reporter's accountId.
    pub reporter_account_id: Option<String>,
    /// The parent issue's id (a sub-task's or an epic child's).
    pub parent_id: Option<i64>,
    /// Labels.
    pub labels: Vec<String>,
    /// The story-point estimate, when the site has the field.
    pub story_points: Option<f64>,
    /// Original time estimate, in seconds.
    pub original_estimate_seconds: Option<i64>,
    /// Time logged, in seconds.
    pub time_spent_seconds: Option<i64>,
    /// Due date (`yyyy-MM-dd`).
    pub due_date: Option<String>,
    /// Created on Jira.
    pub created_at: Option<Timestamp>,
    /// Last updated on Jira.
    pub updated_at: Option<Timestamp>,
    /// Resolved on Jira (`resolutiondate`).
    pub resolved_at: Option<Timestamp>,
    /// What Jira sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// An issue's membership of a sprint (Jira Software's sprint field).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JiraIssueSprint {
    /// The site's host (`acme.atlassian.net`).
    pub site: String,
    /// The issue's id.
    pub issue_id: i64,
    /// The sprint's id.
    pub sprint_id: i64,
    /// What Jira sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// One entry of an issue's changelog: who changed which fields, when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JiraChangelog {
    /// The site's host (`acme.atlassian.net`).
    pub site: String,
    /// The entry's id.
    pub id: i64,
    /// The issue's id.
    pub issue_id: i64,
    /// The author's accountId.
    pub author_account_id: Option<String>,
    /// When the change was made.
    pub created_at: Option<Timestamp>,
    /// The changed fields (`field`, `from`, `fromString`, `to`, `toString`).
    pub items: Json,
    /// What Jira sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A comment on an issue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JiraComment {
    /// The site's host (`acme.atlassian.net`).
    pub site: String,
    /// The comment's id.
    pub id: i64,
    /// The issue's id.
    pub issue_id: i64,
    /// The author's accountId.
    pub author_account_id: Option<String>,
    /// The body, in Atlassian Document Format.
    pub body: Option<Json>,
    /// Created.
    pub created_at: Option<Timestamp>,
    /// Last updated.
    pub updated_at: Option<Timestamp>,
    /// What Jira sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// Time logged on an issue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JiraWorklog {
    /// The site's host (`acme.atlassian.net`).
    pub site: String,
    /// The worklog's id.
    pub id: i64,
    /// The issue's id.
    pub issue_id: i64,
    /// The author's accountId.
    pub author_account_id: Option<String>,
    /// When the work started.
    pub started_at: Option<Timestamp>,
    /// Time spent, in seconds.
    pub time_spent_seconds: Option<i64>,
    /// Created.
    pub created_at: Option<Timestamp>,
    /// Last updated.
    pub updated_at: Option<Timestamp>,
    /// What Jira sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// An agile board.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JiraBoard {
    /// The site's host (`acme.atlassian.net`).
    pub site: String,
    /// The board's id.
    pub id: i64,
    /// Name.
    pub name: Option<String>,
    /// `scrum`, `kanban` or `simple`.
    pub board_type: Option<String>,
    /// The project it is located in, when one.
    pub project_id: Option<i64>,
    /// What Jira sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A sprint of a scrum board.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JiraSprint {
    /// The site's host (`acme.atlassian.net`).
    pub site: String,
    /// The sprint's id.
    pub id: i64,
    /// Its origin board's id.
    pub board_id: Option<i64>,
    /// Name.
    pub name: Option<String>,
    /// `future`, `active` or `closed`.
    pub state: Option<String>,
    /// Goal.
    pub goal: Option<String>,
    /// Start (`startDate`).
    pub start_at: Option<Timestamp>,
    /// Planned end (`endDate`).
    pub end_at: Option<Timestamp>,
    /// Completed (`completeDate`).
    pub complete_at: Option<Timestamp>,
    /// What Jira sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// Where a scope's incremental collection stands: issues updated since this instant were asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JiraWatermark {
    /// The site's host (`acme.atlassian.net`).
    pub site: String,
    /// The scope: a project key, or the JQL the run was given.
    pub scope: String,
    /// Objects updated since this instant were asked for; it never moves back.
    pub collected_at: Timestamp,
}

/// A row of one of the `jira_*` tables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[expect(
    clippy::large_enum_variant,
    reason = "a record lives only from its page to its write; boxing each issue buys nothing"
)]
pub enum JiraRecord {
    /// `jira_projects`.
    Project(JiraProject),
    /// `jira_issues`.
    Issue(JiraIssue),
    /// `jira_issue_sprints`.
    IssueSprint(JiraIssueSprint),
    /// `jira_changelog`.
    Changelog(JiraChangelog),
    /// `jira_comments`.
    Comment(JiraComment),
    /// `jira_worklogs`.
    Worklog(JiraWorklog),
    /// `jira_boards`.
    Board(JiraBoard),
    /// `jira_sprints`.
    Sprint(JiraSprint),
    /// `jira_watermarks`.
    Watermark(JiraWatermark),
}
