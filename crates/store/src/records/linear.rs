//! Rows of the Linear sync tables (`linear_*`). Linear's ids are UUIDs, but one database may hold
//! several workspaces, so every row's identity starts with `workspace` (the organization's id).
//! Each row keeps what Linear sent (`raw`) beside the typed fields a delivery-metrics query
//! reads. People are named by id; e-mail addresses are kept only on users.

use headroom_core::clock::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// A team.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearTeam {
    /// The workspace's (organization's) id.
    pub workspace: String,
    /// The team's id.
    pub id: String,
    /// The team's key (`ENG`).
    pub key: Option<String>,
    /// Name.
    pub name: Option<String>,
    /// Created.
    pub created_at: Option<Timestamp>,
    /// Last updated.
    pub updated_at: Option<Timestamp>,
    /// Archived.
    pub archived_at: Option<Timestamp>,
    /// What Linear sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A user of the workspace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearUser {
    /// The workspace's (organization's) id.
    pub workspace: String,
    /// The user's id.
    pub id: String,
    /// Full name.
    pub name: Option<String>,
    /// Display name.
    pub display_name: Option<String>,
    /// E-mail address, as Linear shows it to the caller.
    pub email: Option<String>,
    /// Whether the account is active.
    pub active: Option<bool>,
    /// Created.
    pub created_at: Option<Timestamp>,
    /// Last updated.
    pub updated_at: Option<Timestamp>,
    /// What Linear sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A user's membership of a team.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearTeamMembership {
    /// The workspace's (organization's) id.
    pub workspace: String,
    /// The membership's id.
    pub id: String,
    /// The team's id.
    pub team_id: Option<String>,
    /// The user's id.
    pub user_id: Option<String>,
    /// Whether the user owns the team.
    pub owner: Option<bool>,
    /// Created.
    pub created_at: Option<Timestamp>,
    /// Last updated.
    pub updated_at: Option<Timestamp>,
    /// What Linear sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A team's workflow state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearWorkflowState {
    /// The workspace's (organization's) id.
    pub workspace: String,
    /// The state's id.
    pub id: String,
    /// The team's id.
    pub team_id: Option<String>,
    /// Name.
    pub name: Option<String>,
    /// `triage`, `backlog`, `unstarted`, `started`, `completed` or `canceled`.
    pub state_type: Option<String>,
    /// Position in the team's workflow.
    pub position: Option<f64>,
    /// Created.
    pub created_at: Option<Timestamp>,
    /// Last updated.
    pub updated_at: Option<Timestamp>,
    /// What Linear sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// An issue label (a team's, or the workspace's when `team_id` is null).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearLabel {
    /// The workspace's (organization's) id.
    pub workspace: String,
    /// The label's id.
    pub id: String,
    /// The team's id, if a team label.
    pub team_id: Option<String>,
    /// Name.
    pub name: Option<String>,
    /// Colour.
    pub color: Option<String>,
    /// Created.
    pub created_at: Option<Timestamp>,
    /// Last updated.
    pub updated_at: Option<Timestamp>,
    /// What Linear sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearProject {
    /// The workspace's (organization's) id.
    pub workspace: String,
    /// The project's id.
    pub id: String,
    /// Name.
    pub name: Option<String>,
    /// State (`planned`, `started`, `completed`, …).
    pub state: Option<String>,
    /// The lead's user id.
    pub lead_id: Option<String>,
    /// Target date (`yyyy-MM-dd`).
    pub target_date: Option<String>,
    /// Started.
    pub started_at: Option<Timestamp>,
    /// Completed.
    pub completed_at: Option<Timestamp>,
    /// Canceled.
    pub canceled_at: Option<Timestamp>,
    /// Created.
    pub created_at: Option<Timestamp>,
    /// Last updated.
    pub updated_at: Option<Timestamp>,
    /// What Linear sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A team's cycle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearCycle {
    /// The workspace's (organization's) id.
    pub workspace: String,
    /// The cycle's id.
    pub id: String,
    /// The team's id.
    pub team_id: Option<String>,
    /// The cycle's number in its team.
    pub number: Option<i64>,
    /// Name.
    pub name: Option<String>,
    /// Start.
    pub starts_at: Option<Timestamp>,
    /// End.
    pub ends_at: Option<Timestamp>,
    /// Completed.
    pub completed_at: Option<Timestamp>,
    /// Created.
    pub created_at: Option<Timestamp>,
    /// Last updated.
    pub updated_at: Option<Timestamp>,
    /// What Linear sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// An issue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearIssue {
    /// The workspace's (organization's) id.
    pub workspace: String,
    /// The issue's id.
    pub id: String,
    /// The identifier (`ENG-12`).
    pub identifier: Option<String>,
    /// The team's id.
    pub team_id: Option<String>,
    /// The issue's number in its team.
    pub number: Option<i64>,
    /// Title.
    pub title: Option<String>,
    /// Its workflow state's id.
    pub state_id: Option<String>,
    /// The assignee's user id.
    pub assignee_id: Option<String>,
    /// The creator's user id.
    pub creator_id: Option<String>,
    /// Its project's id.
    pub project_id: Option<String>,
    /// Its cycle's id.
    pub cycle_id: Option<String>,
    /// The parent issue's id.
    pub parent_id: Option<String>,
    /// The estimate, in the team's scale.
    pub estimate: Option<f64>,
    /// Priority: 0 none, 1 urgent … 4 low.
    pub priority: Option<i64>,
    /// Its labels' ids.
    pub label_ids: Vec<String>,
    /// Due date (`yyyy-MM-dd`).
    pub due_date: Option<String>,
    /// Created.
    pub created_at: Option<Timestamp>,
    /// Last updated.
    pub updated_at: Option<Timestamp>,
    /// Moved to a started state.
    pub started_at: Option<Timestamp>,
    /// Completed.
    pub completed_at: Option<Timestamp>,
    /// Canceled.
    pub canceled_at: Option<Timestamp>,
    /// Archived.
    pub archived_at: Option<Timestamp>,
    /// What Linear sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A comment on an issue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearComment {
    /// The workspace's (organization's) id.
    pub workspace: String,
    /// The comment's id.
    pub id: String,
    /// The issue's id.
    pub issue_id: Option<String>,
    /// The author's user id.
    pub user_id: Option<String>,
    /// The body, in Markdown.
    pub body: Option<String>,
    /// Created.
    pub created_at: Option<Timestamp>,
    /// Last updated.
    pub updated_at: Option<Timestamp>,
    /// What Linear sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// An attachment of an issue (a link to a pull request, a document, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearAttachment {
    /// The workspace's (organization's) id.
    pub workspace: String,
    /// The attachment's id.
    pub id: String,
    /// The issue's id.
    pub issue_id: Option<String>,
    /// Title.
    pub title: Option<String>,
    /// URL.
    pub url: Option<String>,
    /// Where it comes from (`github`, `slack`, …).
    pub source_type: Option<String>,
    /// Created.
    pub created_at: Option<Timestamp>,
    /// Last updated.
    pub updated_at: Option<Timestamp>,
    /// What Linear sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// One entry of an issue's history: the only record of its state, assignee, estimate and cycle changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearIssueHistory {
    /// The workspace's (organization's) id.
    pub workspace: String,
    /// The entry's id.
    pub id: String,
    /// The issue's id.
    pub issue_id: Option<String>,
    /// Who made the change (a user id).
    pub actor_id: Option<String>,
    /// State before.
    pub from_state_id: Option<String>,
    /// State after.
    pub to_state_id: Option<String>,
    /// Assignee before.
    pub from_assignee_id: Option<String>,
    /// Assignee after.
    pub to_assignee_id: Option<String>,
    /// Estimate before.
    pub from_estimate: Option<f64>,
    /// Estimate after.
    pub to_estimate: Option<f64>,
    /// Cycle before.
    pub from_cycle_id: Option<String>,
    /// Cycle after.
    pub to_cycle_id: Option<String>,
    /// Project before.
    pub from_project_id: Option<String>,
    /// Project after.
    pub to_project_id: Option<String>,
    /// When the change was made.
    pub created_at: Option<Timestamp>,
    /// Last updated.
    pub updated_at: Option<Timestamp>,
    /// What Linear sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// Where an entity's incremental collection stands: objects updated since this instant were asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearWatermark {
    /// The workspace's (organization's) id.
    pub workspace: String,
    /// The entity (`issues`, `projects`, …), or a team's issues (`issues:TEAM_ID`).
    pub family: String,
    /// Objects updated since this instant were asked for; it never moves back.
    pub collected_at: Timestamp,
}

/// A row of one of the `linear_*` tables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum LinearRecord {
    /// `linear_teams`.
    Team(LinearTeam),
    /// `linear_users`.
    User(LinearUser),
    /// `linear_team_memberships`.
    TeamMembership(LinearTeamMembership),
    /// `linear_workflow_states`.
    WorkflowState(LinearWorkflowState),
    /// `linear_labels`.
    Label(LinearLabel),
    /// `linear_projects`.
    Project(LinearProject),
    /// `linear_cycles`.
    Cycle(LinearCycle),
    /// `linear_issues`.
    Issue(LinearIssue),
    /// `linear_comments`.
    Comment(LinearComment),
    /// `linear_attachments`.
    Attachment(LinearAttachment),
    /// `linear_issue_history`.
    IssueHistory(LinearIssueHistory),
    /// `linear_watermarks`.
    Watermark(LinearWatermark),
}
