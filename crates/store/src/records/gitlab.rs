//! Rows of the GitLab group-sync tables (`gitlab_*`). GitLab's ids are unique only within one
//! instance, so every row's identity starts with `instance` (the API's host, `gitlab.com` or a
//! self-managed host): one database can hold several instances without their ids meeting.
//! Each row keeps what GitLab sent (`raw`) beside the typed fields a delivery-metrics query
//! reads. Usernames are stored, never e-mail addresses.

use headroom_core::clock::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// A group or subgroup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitlabGroup {
    /// The API's host.
    pub instance: String,
    /// The group's id.
    pub id: i64,
    /// The parent group's id (none for a top-level group).
    pub parent_id: Option<i64>,
    /// `top/sub`.
    pub full_path: String,
    /// Display name.
    pub name: Option<String>,
    /// Web URL.
    pub web_url: Option<String>,
    /// Created on GitLab.
    pub created_at: Option<Timestamp>,
    /// What GitLab sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A project of a group or of one of its subgroups.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitlabProject {
    /// The API's host.
    pub instance: String,
    /// The project's id.
    pub id: i64,
    /// Its namespace's (group's) id.
    pub namespace_id: Option<i64>,
    /// `group/sub/project`.
    pub path_with_namespace: String,
    /// Display name.
    pub name: Option<String>,
    /// Default branch.
    pub default_branch: Option<String>,
    /// `private`, `internal` or `public`.
    pub visibility: Option<String>,
    /// Archived.
    pub archived: Option<bool>,
    /// Web URL.
    pub web_url: Option<String>,
    /// Created on GitLab.
    pub created_at: Option<Timestamp>,
    /// Last activity on GitLab.
    pub last_activity_at: Option<Timestamp>,
    /// What GitLab sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A merge request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitlabMergeRequest {
    /// The API's host.
    pub instance: String,
    /// The project's id.
    pub project_id: i64,
    /// The merge request's number within its project.
    pub iid: i64,
    /// Its id on the instance.
    pub id: i64,
    /// Title.
    pub title: Option<String>,
    /// `opened`, `closed`, `locked` or `merged`.
    pub state: Option<String>,
    /// Draft.
    pub draft: Option<bool>,
    /// Author's username.
    pub author: Option<String>,
    /// Source branch.
    pub source_branch: Option<String>,
    /// Target branch.
    pub target_branch: Option<String>,
    /// Head commit.
    pub sha: Option<String>,
    /// The merge commit, once merged.
    pub merge_commit_sha: Option<String>,
    /// The squash commit, when squashed.
    pub squash_commit_sha: Option<String>,
    /// Who merged it (username).
    pub merged_by: Option<String>,
    /// Created on GitLab.
    pub created_at: Option<Timestamp>,
    /// Updated on GitLab.
    pub updated_at: Option<Timestamp>,
    /// Merged.
    pub merged_at: Option<Timestamp>,
    /// Closed.
    pub closed_at: Option<Timestamp>,
    /// What GitLab sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A commit of a merge request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitlabMergeRequestCommit {
    /// The API's host.
    pub instance: String,
    /// The project's id.
    pub project_id: i64,
    /// The merge request's iid.
    pub merge_request_iid: i64,
    /// The commit's SHA.
    pub sha: String,
    /// Its title.
    pub title: Option<String>,
    /// Author's name as Git records it.
    pub author_name: Option<String>,
    /// Authored.
    pub authored_at: Option<Timestamp>,
    /// Committed.
    pub committed_at: Option<Timestamp>,
    /// What GitLab sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// The approval state of a merge request (one row per merge request, replaced on each read).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitlabMergeRequestApproval {
    /// The API's host.
    pub instance: String,
    /// The project's id.
    pub project_id: i64,
    /// The merge request's iid.
    pub merge_request_iid: i64,
    /// Approved.
    pub approved: Option<bool>,
    /// Approvals required.
    pub approvals_required: Option<i64>,
    /// Approvals still needed.
    pub approvals_left: Option<i64>,
    /// Usernames of the approvers, in GitLab's order.
    pub approved_by: Vec<String>,
    /// What GitLab sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A note (comment or system note) on a merge request or an issue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitlabNote {
    /// The API's host.
    pub instance: String,
    /// The note's id.
    pub id: i64,
    /// The project's id.
    pub project_id: i64,
    /// `MergeRequest` or `Issue`.
    pub noteable_type: String,
    /// The merge request's or issue's iid.
    pub noteable_iid: i64,
    /// Author's username.
    pub author: Option<String>,
    /// Text.
    pub body: Option<String>,
    /// A system note (state changes, pushes).
    pub system: Option<bool>,
    /// Created on GitLab.
    pub created_at: Option<Timestamp>,
    /// Updated on GitLab.
    pub updated_at: Option<Timestamp>,
    /// What GitLab sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A pipeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitlabPipeline {
    /// The API's host.
    pub instance: String,
    /// The pipeline's id.
    pub id: i64,
    /// The project's id.
    pub project_id: i64,
    /// Its number within the project.
    pub iid: Option<i64>,
    /// `success`, `failed`, `running`, …
    pub status: Option<String>,
    /// What started it (`push`, `merge_request_event`, …).
    pub source: Option<String>,
    /// Branch or tag.
    pub ref_name: Option<String>,
    /// Commit.
    pub sha: Option<String>,
    /// Created on GitLab.
    pub created_at: Option<Timestamp>,
    /// Updated on GitLab.
    pub updated_at: Option<Timestamp>,
    /// What GitLab sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A job of a pipeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitlabJob {
    /// The API's host.
    pub instance: String,
    /// The job's id.
    pub id: i64,
    /// The project's id.
    pub project_id: i64,
    /// The pipeline's id.
    pub pipeline_id: i64,
    /// Name.
    pub name: Option<String>,
    /// Stage.
    pub stage: Option<String>,
    /// Status.
    pub status: Option<String>,
    /// Branch or tag.
    pub ref_name: Option<String>,
    /// Created on GitLab.
    pub created_at: Option<Timestamp>,
    /// Started.
    pub started_at: Option<Timestamp>,
    /// Finished.
    pub finished_at: Option<Timestamp>,
    /// Duration in milliseconds (GitLab gives seconds with a fraction).
    pub duration_ms: Option<i64>,
    /// What GitLab sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// An issue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitlabIssue {
    /// The API's host.
    pub instance: String,
    /// The issue's id.
    pub id: i64,
    /// The project's id.
    pub project_id: i64,
    /// Its number within the project.
    pub iid: i64,
    /// Title.
    pub title: Option<String>,
    /// `opened` or `closed`.
    pub state: Option<String>,
    /// Author's username.
    pub author: Option<String>,
    /// Label names.
    pub labels: Vec<String>,
    /// The milestone's id.
    pub milestone_id: Option<i64>,
    /// Created on GitLab.
    pub created_at: Option<Timestamp>,
    /// Updated on GitLab.
    pub updated_at: Option<Timestamp>,
    /// Closed.
    pub closed_at: Option<Timestamp>,
    /// What GitLab sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A milestone of a project or a group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitlabMilestone {
    /// The API's host.
    pub instance: String,
    /// The milestone's id.
    pub id: i64,
    /// The project's id, for a project milestone.
    pub project_id: Option<i64>,
    /// The group's id, for a group milestone.
    pub group_id: Option<i64>,
    /// Its number within the project or group.
    pub iid: Option<i64>,
    /// Title.
    pub title: Option<String>,
    /// `active` or `closed`.
    pub state: Option<String>,
    /// Start date (`YYYY-MM-DD`).
    pub start_date: Option<String>,
    /// Due date (`YYYY-MM-DD`).
    pub due_date: Option<String>,
    /// Created on GitLab.
    pub created_at: Option<Timestamp>,
    /// Updated on GitLab.
    pub updated_at: Option<Timestamp>,
    /// What GitLab sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A deployment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitlabDeployment {
    /// The API's host.
    pub instance: String,
    /// The deployment's id.
    pub id: i64,
    /// The project's id.
    pub project_id: i64,
    /// Its number within the project.
    pub iid: Option<i64>,
    /// Branch or tag deployed.
    pub ref_name: Option<String>,
    /// Commit deployed.
    pub sha: Option<String>,
    /// `created`, `running`, `success`, `failed`, `canceled`, `blocked`.
    pub status: Option<String>,
    /// The environment's name.
    pub environment: Option<String>,
    /// Created on GitLab.
    pub created_at: Option<Timestamp>,
    /// Updated on GitLab.
    pub updated_at: Option<Timestamp>,
    /// Finished (from the deployment, else its job).
    pub finished_at: Option<Timestamp>,
    /// What GitLab sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitlabRelease {
    /// The API's host.
    pub instance: String,
    /// The project's id.
    pub project_id: i64,
    /// The tag it names (its identity within the project).
    pub tag_name: String,
    /// Name.
    pub name: Option<String>,
    /// The tagged commit.
    pub commit_sha: Option<String>,
    /// Created on GitLab.
    pub created_at: Option<Timestamp>,
    /// Released.
    pub released_at: Option<Timestamp>,
    /// What GitLab sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A feature flag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitlabFeatureFlag {
    /// The API's host.
    pub instance: String,
    /// The project's id.
    pub project_id: i64,
    /// Its name (its identity within the project).
    pub name: String,
    /// Whether it is on.
    pub active: Option<bool>,
    /// `new_version_flag` today.
    pub version: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Created on GitLab.
    pub created_at: Option<Timestamp>,
    /// Updated on GitLab.
    pub updated_at: Option<Timestamp>,
    /// What GitLab sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// The families a GitLab project's collection resumes from a watermark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum GitlabFamily {
    /// Merge requests (and their commits, approvals and notes).
    MergeRequests,
    /// Issues (and their notes).
    Issues,
    /// Pipelines (and their jobs).
    Pipelines,
    /// Deployments.
    Deployments,
}

impl GitlabFamily {
    /// Every family with a watermark.
    pub const ALL: [GitlabFamily; 4] = [
        GitlabFamily::MergeRequests,
        GitlabFamily::Issues,
        GitlabFamily::Pipelines,
        GitlabFamily::Deployments,
    ];

    /// Its name in `gitlab_watermarks.family`.
    pub fn as_str(self) -> &'static str {
        match self {
            GitlabFamily::MergeRequests => "merge_requests",
            GitlabFamily::Issues => "issues",
            GitlabFamily::Pipelines => "pipelines",
            GitlabFamily::Deployments => "deployments",
        }
    }
}

/// Where a project's family was last collected from: the instant its collection started,
/// written with the page that finished it. The next run asks `updated_after` it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitlabWatermark {
    /// The API's host.
    pub instance: String,
    /// The project's id.
    pub project_id: i64,
    /// The family.
    pub family: GitlabFamily,
    /// When the finished collection started.
    pub collected_at: Timestamp,
}
