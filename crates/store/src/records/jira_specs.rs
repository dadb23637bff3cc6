//! Each Jira record's row: its `jira_*` table, identity (always led by `site`) and
//! column values. Instants are `*_at_ms`, lists JSON arrays, what the provider sent `raw_json`.

use super::jira::*;
use super::{Record, RowSpec, SqlValue, at, int, json, keyed, names, oat, oint, otext, text};

impl JiraRecord {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        match self {
            JiraRecord::Project(r) => r.spec(),
            JiraRecord::Issue(r) => r.spec(),
            JiraRecord::IssueSprint(r) => r.spec(),
            JiraRecord::Changelog(r) => r.spec(),
            JiraRecord::Comment(r) => r.spec(),
            JiraRecord::Worklog(r) => r.spec(),
            JiraRecord::Board(r) => r.spec(),
            JiraRecord::Sprint(r) => r.spec(),
            JiraRecord::Watermark(r) => r.spec(),
        }
    }
}

impl JiraProject {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "jira_projects",
            &["site", "id"],
            vec![
                ("site", text(&self.site)),
                ("id", int(self.id)),
                ("key", text(&self.key)),
                ("name", otext(&self.name)),
                ("project_type", otext(&self.project_type)),
                ("lead_account_id", otext(&self.lead_account_id)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl From<JiraProject> for Record {
    fn from(r: JiraProject) -> Self {
        Record::Jira(JiraRecord::Project(r))
    }
}

impl JiraIssue {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "jira_issues",
            &["site", "id"],
            vec![
                ("site", text(&self.site)),
                ("id", int(self.id)),
                ("key", text(&self.key)),
                ("project_id", oint(self.project_id)),
                ("summary", otext(&self.summary)),
                ("issue_type", otext(&self.issue_type)),
                ("status", otext(&self.status)),
                ("status_category", otext(&self.status_category)),
                ("priority", otext(&self.priority)),
                ("assignee_account_id", otext(&self.assignee_account_id)),
                ("reporter_account_id", otext(&self.reporter_account_id)),
                ("parent_id", oint(self.parent_id)),
                ("labels", names(&self.labels)),
                ("story_points", SqlValue::Float(self.story_points)),
                (
                    "original_estimate_seconds",
                    oint(self.original_estimate_seconds),
                ),
                ("time_spent_seconds", oint(self.time_spent_seconds)),
                ("due_date", otext(&self.due_date)),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("resolved_at_ms", oat(self.resolved_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl From<JiraIssue> for Record {
    fn from(r: JiraIssue) -> Self {
        Record::Jira(JiraRecord::Issue(r))
    }
}

impl JiraIssueSprint {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "jira_issue_sprints",
            &["site", "issue_id", "sprint_id"],
            vec![
                ("site", text(&self.site)),
                ("issue_id", int(self.issue_id)),
                ("sprint_id", int(self.sprint_id)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl From<JiraIssueSprint> for Record {
    fn from(r: JiraIssueSprint) -> Self {
        Record::Jira(JiraRecord::IssueSprint(r))
    }
}

impl JiraChangelog {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "jira_changelog",
            &["site", "id"],
            vec![
                ("site", text(&self.site)),
                ("id", int(self.id)),
                ("issue_id", int(self.issue_id)),
                ("author_account_id", otext(&self.author_account_id)),
                ("created_at_ms", oat(self.created_at)),
                ("items", json(&self.items)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl From<JiraChangelog> for Record {
    fn from(r: JiraChangelog) -> Self {
        Record::Jira(JiraRecord::Changelog(r))
    }
}

impl JiraComment {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "jira_comments",
            &["site", "id"],
            vec![
                ("site", text(&self.site)),
                ("id", int(self.id)),
                ("issue_id", int(self.issue_id)),
                ("author_account_id", otext(&self.author_account_id)),
                ("body", SqlValue::Json(self.body.clone())),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl From<JiraComment> for Record {
    fn from(r: JiraComment) -> Self {
        Record::Jira(JiraRecord::Comment(r))
    }
}

impl JiraWorklog {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "jira_worklogs",
            &["site", "id"],
            vec![
                ("site", text(&self.site)),
                ("id", int(self.id)),
                ("issue_id", int(self.issue_id)),
                ("author_account_id", otext(&self.author_account_id)),
                ("started_at_ms", oat(self.started_at)),
                ("time_spent_seconds", oint(self.time_spent_seconds)),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl From<JiraWorklog> for Record {
    fn from(r: JiraWorklog) -> Self {
        Record::Jira(JiraRecord::Worklog(r))
    }
}

impl JiraBoard {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "jira_boards",
            &["site", "id"],
            vec![
                ("site", text(&self.site)),
                ("id", int(self.id)),
                ("name", otext(&self.name)),
                ("board_type", otext(&self.board_type)),
                ("project_id", oint(self.project_id)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl From<JiraBoard> for Record {
    fn from(r: JiraBoard) -> Self {
        Record::Jira(JiraRecord::Board(r))
    }
}

impl JiraSprint {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "jira_sprints",
            &["site", "id"],
            vec![
                ("site", text(&self.site)),
                ("id", int(self.id)),
                ("board_id", oint(self.board_id)),
                ("name", otext(&self.name)),
                ("state", otext(&self.state)),
                ("goal", otext(&self.goal)),
                ("start_at_ms", oat(self.start_at)),
                ("end_at_ms", oat(self.end_at)),
                ("complete_at_ms", oat(self.complete_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl From<JiraSprint> for Record {
    fn from(r: JiraSprint) -> Self {
        Record::Jira(JiraRecord::Sprint(r))
    }
}

impl JiraWatermark {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        RowSpec {
            never_backwards: &["collected_at_ms"],
            ..keyed(
                "jira_watermarks",
                &["site", "scope"],
                vec![
                    ("site", text(&self.site)),
                    ("scope", text(&self.scope)),
                    ("collected_at_ms", at(self.collected_at)),
                ],
            )
        }
    }
}

impl From<JiraWatermark> for Record {
    fn from(r: JiraWatermark) -> Self {
        Record::Jira(JiraRecord::Watermark(r))
    }
}
