//! Each GitLab record's row: its `gitlab_*` table, identity (always led by `instance`) and
//! column values. Instants are `*_at_ms`, lists of names JSON arrays, what GitLab sent
//! `raw_json`.

use super::gitlab::*;
use super::{RowSpec, SqlValue, at, int, json, keyed, names, oat, obool, oint, otext, text};

/// A row keyed by `(instance, id)`, never returning a surrogate.
fn by_id(table: &'static str, values: Vec<(&'static str, SqlValue)>) -> RowSpec {
    keyed(table, &["instance", "id"], values)
}

impl GitlabGroup {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        by_id(
            "gitlab_groups",
            vec![
                ("instance", text(&self.instance)),
                ("id", int(self.id)),
                ("parent_id", oint(self.parent_id)),
                ("full_path", text(&self.full_path)),
                ("name", otext(&self.name)),
                ("web_url", otext(&self.web_url)),
                ("created_at_ms", oat(self.created_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl GitlabProject {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        by_id(
            "gitlab_projects",
            vec![
                ("instance", text(&self.instance)),
                ("id", int(self.id)),
                ("namespace_id", oint(self.namespace_id)),
                ("path_with_namespace", text(&self.path_with_namespace)),
                ("name", otext(&self.name)),
                ("default_branch", otext(&self.default_branch)),
                ("visibility", otext(&self.visibility)),
                ("archived", obool(self.archived)),
                ("web_url", otext(&self.web_url)),
                ("created_at_ms", oat(self.created_at)),
                ("last_activity_at_ms", oat(self.last_activity_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl GitlabMergeRequest {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "gitlab_merge_requests",
            &["instance", "project_id", "iid"],
            vec![
                ("instance", text(&self.instance)),
                ("project_id", int(self.project_id)),
                ("iid", int(self.iid)),
                ("id", int(self.id)),
                ("title", otext(&self.title)),
                ("state", otext(&self.state)),
                ("draft", obool(self.draft)),
                ("author", otext(&self.author)),
                ("source_branch", otext(&self.source_branch)),
                ("target_branch", otext(&self.target_branch)),
                ("sha", otext(&self.sha)),
                ("merge_commit_sha", otext(&self.merge_commit_sha)),
                ("squash_commit_sha", otext(&self.squash_commit_sha)),
                ("merged_by", otext(&self.merged_by)),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("merged_at_ms", oat(self.merged_at)),
                ("closed_at_ms", oat(self.closed_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl GitlabMergeRequestCommit {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "gitlab_merge_request_commits",
            &["instance", "project_id", "merge_request_iid", "sha"],
            vec![
                ("instance", text(&self.instance)),
                ("project_id", int(self.project_id)),
                ("merge_request_iid", int(self.merge_request_iid)),
                ("sha", text(&self.sha)),
                ("title", otext(&self.title)),
                ("author_name", otext(&self.author_name)),
                ("authored_at_ms", oat(self.authored_at)),
                ("committed_at_ms", oat(self.committed_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl GitlabMergeRequestApproval {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "gitlab_merge_request_approvals",
            &["instance", "project_id", "merge_request_iid"],
            vec![
                ("instance", text(&self.instance)),
                ("project_id", int(self.project_id)),
                ("merge_request_iid", int(self.merge_request_iid)),
                ("approved", obool(self.approved)),
                ("approvals_required", oint(self.approvals_required)),
                ("approvals_left", oint(self.approvals_left)),
                ("approved_by", names(&self.approved_by)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl GitlabNote {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        by_id(
            "gitlab_notes",
            vec![
                ("instance", text(&self.instance)),
                ("id", int(self.id)),
                ("project_id", int(self.project_id)),
                ("noteable_type", text(&self.noteable_type)),
                ("noteable_iid", int(self.noteable_iid)),
                ("author", otext(&self.author)),
                ("body", otext(&self.body)),
                ("system", obool(self.system)),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl GitlabPipeline {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        by_id(
            "gitlab_pipelines",
            vec![
                ("instance", text(&self.instance)),
                ("id", int(self.id)),
                ("project_id", int(self.project_id)),
                ("iid", oint(self.iid)),
                ("status", otext(&self.status)),
                ("source", otext(&self.source)),
                ("ref_name", otext(&self.ref_name)),
                ("sha", otext(&self.sha)),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl GitlabJob {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        by_id(
            "gitlab_jobs",
            vec![
                ("instance", text(&self.instance)),
                ("id", int(self.id)),
                ("project_id", int(self.project_id)),
                ("pipeline_id", int(self.pipeline_id)),
                ("name", otext(&self.name)),
                ("stage", otext(&self.stage)),
                ("status", otext(&self.status)),
                ("ref_name", otext(&self.ref_name)),
                ("created_at_ms", oat(self.created_at)),
                ("started_at_ms", oat(self.started_at)),
                ("finished_at_ms", oat(self.finished_at)),
                ("duration_ms", oint(self.duration_ms)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl GitlabIssue {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        by_id(
            "gitlab_issues",
            vec![
                ("instance", text(&self.instance)),
                ("id", int(self.id)),
                ("project_id", int(self.project_id)),
                ("iid", int(self.iid)),
                ("title", otext(&self.title)),
                ("state", otext(&self.state)),
                ("author", otext(&self.author)),
                ("labels", names(&self.labels)),
                ("milestone_id", oint(self.milestone_id)),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("closed_at_ms", oat(self.closed_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl GitlabMilestone {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        by_id(
            "gitlab_milestones",
            vec![
                ("instance", text(&self.instance)),
                ("id", int(self.id)),
                ("project_id", oint(self.project_id)),
                ("group_id", oint(self.group_id)),
                ("iid", oint(self.iid)),
                ("title", otext(&self.title)),
                ("state", otext(&self.state)),
                ("start_date", otext(&self.start_date)),
                ("due_date", otext(&self.due_date)),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl GitlabDeployment {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        by_id(
            "gitlab_deployments",
            vec![
                ("instance", text(&self.instance)),
                ("id", int(self.id)),
                ("project_id", int(self.project_id)),
                ("iid", oint(self.iid)),
                ("ref_name", otext(&self.ref_name)),
                ("sha", otext(&self.sha)),
                ("status", otext(&self.status)),
                ("environment", otext(&self.environment)),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("finished_at_ms", oat(self.finished_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl GitlabRelease {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "gitlab_releases",
            &["instance", "project_id", "tag_name"],
            vec![
                ("instance", text(&self.instance)),
                ("project_id", int(self.project_id)),
                ("tag_name", text(&self.tag_name)),
                ("name", otext(&self.name)),
                ("commit_sha", otext(&self.commit_sha)),
                ("created_at_ms", oat(self.created_at)),
                ("released_at_ms", oat(self.released_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl GitlabFeatureFlag {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "gitlab_feature_flags",
            &["instance", "project_id", "name"],
            vec![
                ("instance", text(&self.instance)),
                ("project_id", int(self.project_id)),
                ("name", text(&self.name)),
                ("active", obool(self.active)),
                ("version", otext(&self.version)),
                ("description", otext(&self.description)),
                ("created_at_ms", oat(self.created_at)),
                ("updated_at_ms", oat(self.updated_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl GitlabWatermark {
    /// The row this record writes. A write never moves the mark back: a late writer's older
    /// instant (a resumed run, a second worker) leaves the newer one in place.
    pub(crate) fn spec(&self) -> RowSpec {
        RowSpec {
            never_backwards: &["collected_at_ms"],
            ..keyed(
                "gitlab_watermarks",
                &["instance", "project_id", "family"],
                vec![
                    ("instance", text(&self.instance)),
                    ("project_id", int(self.project_id)),
                    ("family", text(self.family.as_str())),
                    ("collected_at_ms", at(self.collected_at)),
                ],
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Branch, Record};

    fn instant(ms: i64) -> headroom_core::clock::Timestamp {
        headroom_core::clock::Timestamp::from_millisecond(ms).unwrap_or_default()
    }

    /// The watermark's guard is its own: a spec without `never_backwards` renders the plain
    /// upsert it rendered before the field existed.
    #[test]
    fn only_never_backwards_columns_are_guarded() {
        let mark = Record::GitlabWatermark(GitlabWatermark {
            instance: "gitlab.com".into(),
            project_id: 1,
            family: GitlabFamily::Issues,
            collected_at: instant(1),
        });
        assert_eq!(
            mark.spec().sql_rows(1),
            "INSERT INTO gitlab_watermarks (instance, project_id, family, collected_at_ms) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (instance, project_id, family) DO UPDATE SET \
             collected_at_ms = CASE WHEN gitlab_watermarks.collected_at_ms IS NULL \
             OR excluded.collected_at_ms > gitlab_watermarks.collected_at_ms \
             THEN excluded.collected_at_ms ELSE gitlab_watermarks.collected_at_ms END"
        );
        let branch = Record::Branch(Branch {
            repository_github_id: 1,
            name: "main".into(),
            head_sha: None,
            protected: None,
            raw: serde_json::Value::Null,
            collected_at: instant(1),
        });
        assert_eq!(
            branch.spec().sql_rows(1),
            "INSERT INTO branches (repository_github_id, name, head_sha, protected, raw_json, \
             collected_at_ms) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT \
             (repository_github_id, name) DO UPDATE SET head_sha = excluded.head_sha, \
             protected = excluded.protected, raw_json = excluded.raw_json, \
             collected_at_ms = excluded.collected_at_ms"
        );
    }
}
