//! GitLab's REST objects to the store's typed rows, raw JSON beside. Field names are GitLab's
//! documented response fields (docs.gitlab.com, REST API pages of each resource). A row needs
//! its identity (`id`, `iid`, `tag_name`, `name`); an object without it is skipped, not stored
//! half. Users are kept by `username`; e-mail addresses are never copied out of `raw`.

use headroom_core::clock::Timestamp;
use headroom_store::{
    GitlabDeployment, GitlabFeatureFlag, GitlabGroup, GitlabIssue, GitlabJob, GitlabMergeRequest,
    GitlabMergeRequestApproval, GitlabMergeRequestCommit, GitlabMilestone, GitlabNote,
    GitlabPipeline, GitlabProject, GitlabRelease, Record,
};
use serde_json::Value;

fn text(v: &Value, field: &str) -> Option<String> {
    v.get(field).and_then(Value::as_str).map(str::to_owned)
}

fn int(v: &Value, field: &str) -> Option<i64> {
    v.get(field).and_then(Value::as_i64)
}

fn boolean(v: &Value, field: &str) -> Option<bool> {
    v.get(field).and_then(Value::as_bool)
}

fn at(v: &Value, field: &str) -> Option<Timestamp> {
    v.get(field)
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
}

/// The `username` of a user object under `field` (`author`, `merged_by`, …).
fn username(v: &Value, field: &str) -> Option<String> {
    v.get(field).and_then(|u| text(u, "username"))
}

/// Where a row was read: the instance (API host) and when.
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    /// The API's host.
    pub instance: &'a str,
    /// When collected.
    pub now: Timestamp,
}

/// An object of `GET /groups/:id` or `GET /groups/:id/descendant_groups`.
pub fn group(v: &Value, o: Origin<'_>) -> Option<Record> {
    Some(Record::GitlabGroup(GitlabGroup {
        instance: o.instance.to_owned(),
        id: int(v, "id")?,
        parent_id: int(v, "parent_id"),
        full_path: text(v, "full_path")?,
        name: text(v, "name"),
        web_url: text(v, "web_url"),
        created_at: at(v, "created_at"),
        raw: v.clone(),
        collected_at: o.now,
    }))
}

/// An object of `GET /groups/:id/projects`.
pub fn project(v: &Value, o: Origin<'_>) -> Option<Record> {
    Some(Record::GitlabProject(GitlabProject {
        instance: o.instance.to_owned(),
        id: int(v, "id")?,
        namespace_id: v.get("namespace").and_then(|n| int(n, "id")),
        path_with_namespace: text(v, "path_with_namespace")?,
        name: text(v, "name"),
        default_branch: text(v, "default_branch"),
        visibility: text(v, "visibility"),
        archived: boolean(v, "archived"),
        web_url: text(v, "web_url"),
        created_at: at(v, "created_at"),
        last_activity_at: at(v, "last_activity_at"),
        raw: v.clone(),
        collected_at: o.now,
    }))
}

/// An object of `GET /projects/:id/merge_requests`.
pub fn merge_request(v: &Value, project: i64, o: Origin<'_>) -> Option<Record> {
    Some(Record::GitlabMergeRequest(GitlabMergeRequest {
        instance: o.instance.to_owned(),
        project_id: int(v, "project_id").unwrap_or(project),
        iid: int(v, "iid")?,
        id: int(v, "id")?,
        title: text(v, "title"),
        state: text(v, "state"),
        // `work_in_progress` is the older name of `draft`.
        draft: boolean(v, "draft").or_else(|| boolean(v, "work_in_progress")),
        author: username(v, "author"),
        source_branch: text(v, "source_branch"),
        target_branch: text(v, "target_branch"),
        sha: text(v, "sha"),
        merge_commit_sha: text(v, "merge_commit_sha"),
        squash_commit_sha: text(v, "squash_commit_sha"),
        // `merged_by` is deprecated in favour of `merge_user`; either may be sent.
        merged_by: username(v, "merge_user").or_else(|| username(v, "merged_by")),
        created_at: at(v, "created_at"),
        updated_at: at(v, "updated_at"),
        merged_at: at(v, "merged_at"),
        closed_at: at(v, "closed_at"),
        raw: v.clone(),
        collected_at: o.now,
    }))
}

/// An object of `GET /projects/:id/merge_requests/:iid/commits`.
pub fn merge_request_commit(v: &Value, project: i64, iid: i64, o: Origin<'_>) -> Option<Record> {
    let mut raw = v.clone();
    // A commit carries its author's and committer's e-mail: not kept.
    if let Some(map) = raw.as_object_mut() {
        map.remove("author_email");
        map.remove("committer_email");
    }
    Some(Record::GitlabMergeRequestCommit(GitlabMergeRequestCommit {
        instance: o.instance.to_owned(),
        project_id: project,
        merge_request_iid: iid,
        sha: text(v, "id")?,
        title: text(v, "title"),
        author_name: text(v, "author_name"),
        authored_at: at(v, "authored_date"),
        committed_at: at(v, "committed_date"),
        raw,
        collected_at: o.now,
    }))
}

/// The object of `GET /projects/:id/merge_requests/:iid/approvals`.
pub fn approvals(v: &Value, project: i64, iid: i64, o: Origin<'_>) -> Record {
    let approved_by = v
        .get("approved_by")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|a| username(a, "user"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    Record::GitlabMergeRequestApproval(GitlabMergeRequestApproval {
        instance: o.instance.to_owned(),
        project_id: project,
        merge_request_iid: iid,
        approved: boolean(v, "approved"),
        approvals_required: int(v, "approvals_required"),
        approvals_left: int(v, "approvals_left"),
        approved_by,
        raw: v.clone(),
        collected_at: o.now,
    })
}

/// A note of a merge request or an issue (`noteable_type` `MergeRequest` or `Issue`).
pub fn note(
    v: &Value,
    project: i64,
    noteable_type: &str,
    noteable_iid: i64,
    o: Origin<'_>,
) -> Option<Record> {
    Some(Record::GitlabNote(GitlabNote {
        instance: o.instance.to_owned(),
        id: int(v, "id")?,
        project_id: int(v, "project_id").unwrap_or(project),
        noteable_type: text(v, "noteable_type").unwrap_or_else(|| noteable_type.to_owned()),
        noteable_iid: int(v, "noteable_iid").unwrap_or(noteable_iid),
        author: username(v, "author"),
        body: text(v, "body"),
        system: boolean(v, "system"),
        created_at: at(v, "created_at"),
        updated_at: at(v, "updated_at"),
        raw: v.clone(),
        collected_at: o.now,
    }))
}

/// An object of `GET /projects/:id/pipelines`.
pub fn pipeline(v: &Value, project: i64, o: Origin<'_>) -> Option<Record> {
    Some(Record::GitlabPipeline(GitlabPipeline {
        instance: o.instance.to_owned(),
        id: int(v, "id")?,
        project_id: int(v, "project_id").unwrap_or(project),
        iid: int(v, "iid"),
        status: text(v, "status"),
        source: text(v, "source"),
        ref_name: text(v, "ref"),
        sha: text(v, "sha"),
        created_at: at(v, "created_at"),
        updated_at: at(v, "updated_at"),
        raw: v.clone(),
        collected_at: o.now,
    }))
}

/// An object of `GET /projects/:id/pipelines/:pipeline_id/jobs`.
pub fn job(v: &Value, project: i64, pipeline: i64, o: Origin<'_>) -> Option<Record> {
    let mut raw = v.clone();
    // A job names the commit's author's e-mail and the user's public one: not kept.
    if let Some(commit) = raw.get_mut("commit").and_then(Value::as_object_mut) {
        commit.remove("author_email");
        commit.remove("committer_email");
    }
    if let Some(user) = raw.get_mut("user").and_then(Value::as_object_mut) {
        user.remove("public_email");
    }
    let duration_ms = v
        .get("duration")
        .and_then(Value::as_f64)
        .filter(|d| d.is_finite() && *d >= 0.0)
        // Whole milliseconds: a job lasts at most days, far inside i64.
        .map(|d| (d * 1000.0).round() as i64);
    Some(Record::GitlabJob(GitlabJob {
        instance: o.instance.to_owned(),
        id: int(v, "id")?,
        project_id: project,
        pipeline_id: v
            .get("pipeline")
            .and_then(|p| int(p, "id"))
            .unwrap_or(pipeline),
        name: text(v, "name"),
        stage: text(v, "stage"),
        status: text(v, "status"),
        ref_name: text(v, "ref"),
        created_at: at(v, "created_at"),
        started_at: at(v, "started_at"),
        finished_at: at(v, "finished_at"),
        duration_ms,
        raw,
        collected_at: o.now,
    }))
}

/// An object of `GET /projects/:id/issues`.
pub fn issue(v: &Value, project: i64, o: Origin<'_>) -> Option<Record> {
    let labels = v
        .get("labels")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                // `with_labels_details=true` sends objects with a `name`.
                .filter_map(|l| l.as_str().map(str::to_owned).or_else(|| text(l, "name")))
                .collect()
        })
        .unwrap_or_default();
    Some(Record::GitlabIssue(GitlabIssue {
        instance: o.instance.to_owned(),
        id: int(v, "id")?,
        project_id: int(v, "project_id").unwrap_or(project),
        iid: int(v, "iid")?,
        title: text(v, "title"),
        state: text(v, "state"),
        author: username(v, "author"),
        labels,
        milestone_id: v.get("milestone").and_then(|m| int(m, "id")),
        created_at: at(v, "created_at"),
        updated_at: at(v, "updated_at"),
        closed_at: at(v, "closed_at"),
        raw: v.clone(),
        collected_at: o.now,
    }))
}

/// An object of `GET /projects/:id/milestones` or `GET /groups/:id/milestones`.
pub fn milestone(v: &Value, o: Origin<'_>) -> Option<Record> {
    Some(Record::GitlabMilestone(GitlabMilestone {
        instance: o.instance.to_owned(),
        id: int(v, "id")?,
        project_id: int(v, "project_id"),
        group_id: int(v, "group_id"),
        iid: int(v, "iid"),
        title: text(v, "title"),
        state: text(v, "state"),
        start_date: text(v, "start_date"),
        due_date: text(v, "due_date"),
        created_at: at(v, "created_at"),
        updated_at: at(v, "updated_at"),
        raw: v.clone(),
        collected_at: o.now,
    }))
}

/// An object of `GET /projects/:id/deployments`.
pub fn deployment(v: &Value, project: i64, o: Origin<'_>) -> Option<Record> {
    let deployable = v.get("deployable");
    Some(Record::GitlabDeployment(GitlabDeployment {
        instance: o.instance.to_owned(),
        id: int(v, "id")?,
        project_id: project,
        iid: int(v, "iid"),
        ref_name: text(v, "ref"),
        sha: text(v, "sha"),
        status: text(v, "status"),
        environment: v.get("environment").and_then(|e| text(e, "name")),
        created_at: at(v, "created_at"),
        updated_at: at(v, "updated_at"),
        finished_at: at(v, "finished_at").or_else(|| deployable.and_then(|d| at(d, "finished_at"))),
        raw: v.clone(),
        collected_at: o.now,
    }))
}

/// An object of `GET /projects/:id/releases`.
pub fn release(v: &Value, project: i64, o: Origin<'_>) -> Option<Record> {
    Some(Record::GitlabRelease(GitlabRelease {
        instance: o.instance.to_owned(),
        project_id: project,
        tag_name: text(v, "tag_name")?,
        name: text(v, "name"),
        commit_sha: v.get("commit").and_then(|c| text(c, "id")),
        created_at: at(v, "created_at"),
        released_at: at(v, "released_at"),
        raw: v.clone(),
        collected_at: o.now,
    }))
}

/// An object of `GET /projects/:id/feature_flags`.
pub fn feature_flag(v: &Value, project: i64, o: Origin<'_>) -> Option<Record> {
    Some(Record::GitlabFeatureFlag(GitlabFeatureFlag {
        instance: o.instance.to_owned(),
        project_id: project,
        name: text(v, "name")?,
        active: boolean(v, "active"),
        version: text(v, "version"),
        description: text(v, "description"),
        created_at: at(v, "created_at"),
        updated_at: at(v, "updated_at"),
        raw: v.clone(),
        collected_at: o.now,
    }))
}
