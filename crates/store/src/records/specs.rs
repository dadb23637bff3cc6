//! Each organization-sync record's row: its table, identity columns and column values, one
//! `spec` per table.

use super::*;

impl Organization {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        RowSpec {
            table: "organizations",
            conflict: &["login"],
            insert_only: &[],
            never_backwards: &[],
            returns_id: true,
            values: vec![
                ("login", text(&self.login)),
                ("github_id", oint(self.github_id)),
                ("node_id", otext(&self.node_id)),
                ("name", otext(&self.name)),
                ("description", otext(&self.description)),
                ("url", otext(&self.url)),
                ("github_created_at_ms", oat(self.github_created_at)),
                ("github_updated_at_ms", oat(self.github_updated_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        }
    }
}

impl OrganizationMember {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        RowSpec {
            table: "organization_members",
            conflict: &["organization_id", "github_id"],
            insert_only: &[],
            never_backwards: &[],
            returns_id: false,
            values: vec![
                ("organization_id", int(self.organization_id)),
                ("github_id", int(self.github_id)),
                ("node_id", otext(&self.node_id)),
                ("login", text(&self.login)),
                ("role", otext(&self.role)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        }
    }
}

impl Team {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        RowSpec {
            table: "teams",
            conflict: &["node_id"],
            insert_only: &[],
            never_backwards: &[],
            returns_id: true,
            values: vec![
                ("organization_id", int(self.organization_id)),
                ("node_id", text(&self.node_id)),
                ("github_id", oint(self.github_id)),
                ("slug", text(&self.slug)),
                ("name", text(&self.name)),
                ("description", otext(&self.description)),
                ("privacy", otext(&self.privacy)),
                ("parent_node_id", otext(&self.parent_node_id)),
                ("members_count", oint(self.members_count)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        }
    }
}

impl Repository {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        RowSpec {
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
            never_backwards: &[],
            returns_id: true,
            values: vec![
                ("github_id", int(self.github_id)),
                ("node_id", otext(&self.node_id)),
                ("full_name", text(&self.full_name)),
                ("name", otext(&self.name)),
                ("owner_login", otext(&self.owner_login)),
                ("owner_github_id", oint(self.owner_github_id)),
                ("organization_id", oint(self.organization_id)),
                ("description", otext(&self.description)),
                ("visibility", otext(&self.visibility)),
                ("fork", obool(self.fork)),
                ("archived", obool(self.archived)),
                ("default_branch", otext(&self.default_branch)),
                ("github_created_at_ms", oat(self.github_created_at)),
                ("github_updated_at_ms", oat(self.github_updated_at)),
                ("pushed_at_ms", oat(self.pushed_at)),
                ("raw_json", json(&self.raw)),
                ("enrichment_status", text("complete")),
                ("enrichment_stage", text("contract_complete")),
                ("fetched_at_ms", at(self.collected_at)),
                ("contract_complete_at_ms", at(self.collected_at)),
                ("created_at_ms", at(self.collected_at)),
                ("updated_at_ms", at(self.collected_at)),
            ],
        }
    }
}

impl Issue {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        RowSpec {
            table: "issues",
            conflict: &["node_id"],
            insert_only: &[],
            never_backwards: &[],
            returns_id: true,
            values: vec![
                ("repository_github_id", int(self.repository_github_id)),
                ("node_id", text(&self.node_id)),
                ("github_id", oint(self.github_id)),
                ("number", int(self.number)),
                ("title", text(&self.title)),
                ("state", text(&self.state)),
                ("author_login", otext(&self.author_login)),
                ("comments_count", oint(self.comments_count)),
                ("github_created_at_ms", oat(self.github_created_at)),
                ("github_updated_at_ms", oat(self.github_updated_at)),
                ("closed_at_ms", oat(self.closed_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        }
    }
}

impl IssueComment {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        RowSpec {
            table: "issue_comments",
            conflict: &["node_id"],
            insert_only: &[],
            never_backwards: &[],
            returns_id: true,
            values: vec![
                ("repository_github_id", int(self.repository_github_id)),
                ("issue_number", int(self.issue_number)),
                ("node_id", text(&self.node_id)),
                ("github_id", oint(self.github_id)),
                ("author_login", otext(&self.author_login)),
                ("github_created_at_ms", oat(self.github_created_at)),
                ("github_updated_at_ms", oat(self.github_updated_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        }
    }
}

impl Project {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        RowSpec {
            table: "projects",
            conflict: &["node_id"],
            insert_only: &[],
            never_backwards: &[],
            returns_id: true,
            values: vec![
                ("organization_id", int(self.organization_id)),
                ("node_id", text(&self.node_id)),
                ("number", int(self.number)),
                ("title", text(&self.title)),
                ("closed", SqlValue::Bool(Some(self.closed))),
                ("url", otext(&self.url)),
                ("items_count", oint(self.items_count)),
                ("github_created_at_ms", oat(self.github_created_at)),
                ("github_updated_at_ms", oat(self.github_updated_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        }
    }
}

impl ProjectItem {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        RowSpec {
            table: "project_items",
            conflict: &["node_id"],
            insert_only: &[],
            never_backwards: &[],
            returns_id: true,
            values: vec![
                ("project_node_id", text(&self.project_node_id)),
                ("node_id", text(&self.node_id)),
                ("github_id", oint(self.github_id)),
                ("item_type", otext(&self.item_type)),
                ("content_node_id", otext(&self.content_node_id)),
                ("content_number", oint(self.content_number)),
                ("content_repository", otext(&self.content_repository)),
                ("title", otext(&self.title)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        }
    }
}

impl PullRequest {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        RowSpec {
            table: "pull_requests",
            conflict: &["node_id"],
            insert_only: &[],
            never_backwards: &[],
            returns_id: true,
            values: vec![
                ("repository_github_id", int(self.repository_github_id)),
                ("node_id", text(&self.node_id)),
                ("github_id", oint(self.github_id)),
                ("number", int(self.number)),
                ("title", text(&self.title)),
                ("state", text(&self.state)),
                ("author_login", otext(&self.author_login)),
                ("head_ref", otext(&self.head_ref)),
                ("base_ref", otext(&self.base_ref)),
                ("head_sha", otext(&self.head_sha)),
                ("merged", SqlValue::Bool(Some(self.merged))),
                ("merged_at_ms", oat(self.merged_at)),
                ("github_created_at_ms", oat(self.github_created_at)),
                ("github_updated_at_ms", oat(self.github_updated_at)),
                ("closed_at_ms", oat(self.closed_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        }
    }
}

impl PullRequestCommit {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        RowSpec {
            table: "pull_request_commits",
            conflict: &["repository_github_id", "pull_request_number", "commit_sha"],
            insert_only: &[],
            never_backwards: &[],
            returns_id: false,
            values: vec![
                ("repository_github_id", int(self.repository_github_id)),
                ("pull_request_number", int(self.pull_request_number)),
                ("commit_sha", text(&self.commit_sha)),
                ("author_login", otext(&self.author_login)),
                ("message_headline", otext(&self.message_headline)),
                ("committed_at_ms", oat(self.committed_at)),
                ("additions", oint(self.additions)),
                ("deletions", oint(self.deletions)),
                ("changed_files", oint(self.changed_files)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        }
    }
}

impl CommitFile {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        RowSpec {
            table: "commit_files",
            conflict: &["repository_github_id", "commit_sha", "path"],
            insert_only: &[],
            never_backwards: &[],
            returns_id: false,
            values: vec![
                ("repository_github_id", int(self.repository_github_id)),
                ("commit_sha", text(&self.commit_sha)),
                ("path", text(&self.path)),
                ("previous_path", otext(&self.previous_path)),
                ("status", otext(&self.status)),
                ("additions", oint(self.additions)),
                ("deletions", oint(self.deletions)),
                ("changes", oint(self.changes)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        }
    }
}

impl WorkflowRun {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        RowSpec {
            table: "workflow_runs",
            conflict: &["github_id"],
            insert_only: &[],
            never_backwards: &[],
            returns_id: false,
            values: vec![
                ("github_id", int(self.github_id)),
                ("repository_github_id", int(self.repository_github_id)),
                ("node_id", otext(&self.node_id)),
                ("workflow_id", oint(self.workflow_id)),
                ("name", otext(&self.name)),
                ("event", otext(&self.event)),
                ("head_branch", otext(&self.head_branch)),
                ("head_sha", otext(&self.head_sha)),
                ("status", otext(&self.status)),
                ("conclusion", otext(&self.conclusion)),
                ("run_number", oint(self.run_number)),
                ("run_attempt", oint(self.run_attempt)),
                ("github_created_at_ms", oat(self.github_created_at)),
                ("github_updated_at_ms", oat(self.github_updated_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        }
    }
}

impl WorkflowJob {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        RowSpec {
            table: "workflow_jobs",
            conflict: &["github_id"],
            insert_only: &[],
            never_backwards: &[],
            returns_id: false,
            values: vec![
                ("github_id", int(self.github_id)),
                ("workflow_run_github_id", int(self.workflow_run_github_id)),
                ("repository_github_id", int(self.repository_github_id)),
                ("node_id", otext(&self.node_id)),
                ("name", otext(&self.name)),
                ("status", otext(&self.status)),
                ("conclusion", otext(&self.conclusion)),
                ("started_at_ms", oat(self.started_at)),
                ("completed_at_ms", oat(self.completed_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        }
    }
}

impl CheckRun {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        RowSpec {
            table: "check_runs",
            conflict: &["github_id"],
            insert_only: &[],
            never_backwards: &[],
            returns_id: false,
            values: vec![
                ("github_id", int(self.github_id)),
                ("repository_github_id", int(self.repository_github_id)),
                ("node_id", otext(&self.node_id)),
                ("check_suite_id", oint(self.check_suite_id)),
                ("head_sha", otext(&self.head_sha)),
                ("name", otext(&self.name)),
                ("status", otext(&self.status)),
                ("conclusion", otext(&self.conclusion)),
                ("started_at_ms", oat(self.started_at)),
                ("completed_at_ms", oat(self.completed_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        }
    }
}

impl Branch {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        RowSpec {
            table: "branches",
            conflict: &["repository_github_id", "name"],
            insert_only: &[],
            never_backwards: &[],
            returns_id: false,
            values: vec![
                ("repository_github_id", int(self.repository_github_id)),
                ("name", text(&self.name)),
                ("head_sha", otext(&self.head_sha)),
                ("protected", obool(self.protected)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        }
    }
}
