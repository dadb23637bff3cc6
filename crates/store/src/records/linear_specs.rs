//! Each Linear record's row: its `linear_*` table, identity (always led by `workspace`) and
//! column values. Instants are `*_at_ms`, lists JSON arrays, what the provider sent `raw_json`.

use super::linear::*;
use super::{Record, RowSpec, SqlValue, at, json, keyed, names, oat, obool, oint, otext, text};

impl LinearRecord {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        match self {
            LinearRecord::Team(r) => r.spec(),
            LinearRecord::User(r) => r.spec(),
            LinearRecord::TeamMembership(r) => r.spec(),
            LinearRecord::WorkflowState(r) => r.spec(),
            LinearRecord::Label(r) => r.spec(),
            LinearRecord::Project(r) => r.spec(),
            LinearRecord::Cycle(r) => r.spec(),
            LinearRecord::Issue(r) => r.spec(),
            LinearRecord::Comment(r) => r.spec(),
            LinearRecord::Attachment(r) => r.spec(),
            LinearRecord::IssueHistory(r) => r.spec(),
            LinearRecord::Watermark(r) => r.spec(),
        }
    }
}

impl LinearTeam {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "linear_teams",
            &["workspace", "id"],
            vec![
                ("workspace", text(&self.workspace)),
                ("id", text(&self.id)),
                ("key", otext(&self.key)),
                ("name", otext(&self.name)),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("archived_at_ms", oat(self.archived_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl From<LinearTeam> for Record {
    fn from(r: LinearTeam) -> Self {
        Record::Linear(LinearRecord::Team(r))
    }
}

impl LinearUser {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "linear_users",
            &["workspace", "id"],
            vec![
                ("workspace", text(&self.workspace)),
                ("id", text(&self.id)),
                ("name", otext(&self.name)),
                ("display_name", otext(&self.display_name)),
                ("email", otext(&self.email)),
                ("active", obool(self.active)),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl From<LinearUser> for Record {
    fn from(r: LinearUser) -> Self {
        Record::Linear(LinearRecord::User(r))
    }
}

impl LinearTeamMembership {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "linear_team_memberships",
            &["workspace", "id"],
            vec![
                ("workspace", text(&self.workspace)),
                ("id", text(&self.id)),
                ("team_id", otext(&self.team_id)),
                ("user_id", otext(&self.user_id)),
                ("owner", obool(self.owner)),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl From<LinearTeamMembership> for Record {
    fn from(r: LinearTeamMembership) -> Self {
        Record::Linear(LinearRecord::TeamMembership(r))
    }
}

impl LinearWorkflowState {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "linear_workflow_states",
            &["workspace", "id"],
            vec![
                ("workspace", text(&self.workspace)),
                ("id", text(&self.id)),
                ("team_id", otext(&self.team_id)),
                ("name", otext(&self.name)),
                ("state_type", otext(&self.state_type)),
                ("position", SqlValue::Float(self.position)),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl From<LinearWorkflowState> for Record {
    fn from(r: LinearWorkflowState) -> Self {
        Record::Linear(LinearRecord::WorkflowState(r))
    }
}

impl LinearLabel {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "linear_labels",
            &["workspace", "id"],
            vec![
                ("workspace", text(&self.workspace)),
                ("id", text(&self.id)),
                ("team_id", otext(&self.team_id)),
                ("name", otext(&self.name)),
                ("color", otext(&self.color)),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl From<LinearLabel> for Record {
    fn from(r: LinearLabel) -> Self {
        Record::Linear(LinearRecord::Label(r))
    }
}

impl LinearProject {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "linear_projects",
            &["workspace", "id"],
            vec![
                ("workspace", text(&self.workspace)),
                ("id", text(&self.id)),
                ("name", otext(&self.name)),
                ("state", otext(&self.state)),
                ("lead_id", otext(&self.lead_id)),
                ("target_date", otext(&self.target_date)),
                ("started_at_ms", oat(self.started_at)),
                ("completed_at_ms", oat(self.completed_at)),
                ("canceled_at_ms", oat(self.canceled_at)),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl From<LinearProject> for Record {
    fn from(r: LinearProject) -> Self {
        Record::Linear(LinearRecord::Project(r))
    }
}

impl LinearCycle {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "linear_cycles",
            &["workspace", "id"],
            vec![
                ("workspace", text(&self.workspace)),
                ("id", text(&self.id)),
                ("team_id", otext(&self.team_id)),
                ("number", oint(self.number)),
                ("name", otext(&self.name)),
                ("starts_at_ms", oat(self.starts_at)),
                ("ends_at_ms", oat(self.ends_at)),
                ("completed_at_ms", oat(self.completed_at)),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl From<LinearCycle> for Record {
    fn from(r: LinearCycle) -> Self {
        Record::Linear(LinearRecord::Cycle(r))
    }
}

impl LinearIssue {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "linear_issues",
            &["workspace", "id"],
            vec![
                ("workspace", text(&self.workspace)),
                ("id", text(&self.id)),
                ("identifier", otext(&self.identifier)),
                ("team_id", otext(&self.team_id)),
                ("number", oint(self.number)),
                ("title", otext(&self.title)),
                ("state_id", otext(&self.state_id)),
                ("assignee_id", otext(&self.assignee_id)),
                ("creator_id", otext(&self.creator_id)),
                ("project_id", otext(&self.project_id)),
                ("cycle_id", otext(&self.cycle_id)),
                ("parent_id", otext(&self.parent_id)),
                ("estimate", SqlValue::Float(self.estimate)),
                ("priority", oint(self.priority)),
                ("label_ids", names(&self.label_ids)),
                ("due_date", otext(&self.due_date)),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("started_at_ms", oat(self.started_at)),
                ("completed_at_ms", oat(self.completed_at)),
                ("canceled_at_ms", oat(self.canceled_at)),
                ("archived_at_ms", oat(self.archived_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl From<LinearIssue> for Record {
    fn from(r: LinearIssue) -> Self {
        Record::Linear(LinearRecord::Issue(r))
    }
}

impl LinearComment {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "linear_comments",
            &["workspace", "id"],
            vec![
                ("workspace", text(&self.workspace)),
                ("id", text(&self.id)),
                ("issue_id", otext(&self.issue_id)),
                ("user_id", otext(&self.user_id)),
                ("body", otext(&self.body)),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl From<LinearComment> for Record {
    fn from(r: LinearComment) -> Self {
        Record::Linear(LinearRecord::Comment(r))
    }
}

impl LinearAttachment {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "linear_attachments",
            &["workspace", "id"],
            vec![
                ("workspace", text(&self.workspace)),
                ("id", text(&self.id)),
                ("issue_id", otext(&self.issue_id)),
                ("title", otext(&self.title)),
                ("url", otext(&self.url)),
                ("source_type", otext(&self.source_type)),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl From<LinearAttachment> for Record {
    fn from(r: LinearAttachment) -> Self {
        Record::Linear(LinearRecord::Attachment(r))
    }
}

impl LinearIssueHistory {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "linear_issue_history",
            &["workspace", "id"],
            vec![
                ("workspace", text(&self.workspace)),
                ("id", text(&self.id)),
                ("issue_id", otext(&self.issue_id)),
                ("actor_id", otext(&self.actor_id)),
                ("from_state_id", otext(&self.from_state_id)),
                ("to_state_id", otext(&self.to_state_id)),
                ("from_assignee_id", otext(&self.from_assignee_id)),
                ("to_assignee_id", otext(&self.to_assignee_id)),
                ("from_estimate", SqlValue::Float(self.from_estimate)),
                ("to_estimate", SqlValue::Float(self.to_estimate)),
                ("from_cycle_id", otext(&self.from_cycle_id)),
                ("to_cycle_id", otext(&self.to_cycle_id)),
                ("from_project_id", otext(&self.from_project_id)),
                ("to_project_id", otext(&self.to_project_id)),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl From<LinearIssueHistory> for Record {
    fn from(r: LinearIssueHistory) -> Self {
        Record::Linear(LinearRecord::IssueHistory(r))
    }
}

impl LinearWatermark {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        RowSpec {
            never_backwards: &["collected_at_ms"],
            ..keyed(
                "linear_watermarks",
                &["workspace", "family"],
                vec![
                    ("workspace", text(&self.workspace)),
                    ("family", text(&self.family)),
                    ("collected_at_ms", at(self.collected_at)),
                ],
            )
        }
    }
}

impl From<LinearWatermark> for Record {
    fn from(r: LinearWatermark) -> Self {
        Record::Linear(LinearRecord::Watermark(r))
    }
}
