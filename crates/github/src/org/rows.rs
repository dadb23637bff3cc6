//! GitHub's JSON (GraphQL nodes, REST objects) to the store's typed rows, raw JSON beside.

use headroom_core::clock::Timestamp;
use headroom_store::Record;
use headroom_store::records::{
    Branch, CheckRun, CommitFile, Issue, IssueComment, Organization, OrganizationMember, Project,
    ProjectItem, PullRequest, PullRequestCommit, Repository, Team, WorkflowJob, WorkflowRun,
};
use serde_json::Value;

pub(crate) fn text(v: &Value, field: &str) -> Option<String> {
    v.get(field).and_then(Value::as_str).map(str::to_owned)
}

pub(crate) fn int(v: &Value, field: &str) -> Option<i64> {
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

fn login_of(v: &Value, field: &str) -> Option<String> {
    v.get(field).and_then(|a| text(a, "login"))
}

pub(crate) fn organization(v: &Value, login: &str, now: Timestamp) -> Record {
    Record::Organization(Organization {
        login: text(v, "login").unwrap_or_else(|| login.to_owned()),
        github_id: int(v, "databaseId"),
        node_id: text(v, "id"),
        name: text(v, "name"),
        description: text(v, "description"),
        url: text(v, "url"),
        github_created_at: at(v, "createdAt"),
        github_updated_at: at(v, "updatedAt"),
        raw: v.clone(),
        collected_at: now,
    })
}

/// A `membersWithRole` edge (the role is on the edge).
pub(crate) fn member(edge: &Value, organization_id: i64, now: Timestamp) -> Option<Record> {
    let node = edge.get("node")?;
    Some(Record::OrganizationMember(OrganizationMember {
        organization_id,
        github_id: int(node, "databaseId")?,
        node_id: text(node, "id"),
        login: text(node, "login")?,
        role: text(edge, "role"),
        raw: edge.clone(),
        collected_at: now,
    }))
}

pub(crate) fn team(v: &Value, organization_id: i64, now: Timestamp) -> Option<Record> {
    Some(Record::Team(Team {
        organization_id,
        node_id: text(v, "id")?,
        github_id: int(v, "databaseId"),
        slug: text(v, "slug")?,
        name: text(v, "name")?,
        description: text(v, "description"),
        privacy: text(v, "privacy"),
        parent_node_id: None,
        members_count: v
            .get("members")
            .and_then(|m| m.get("totalCount"))
            .and_then(Value::as_i64),
        raw: v.clone(),
        collected_at: now,
    }))
}

pub(crate) fn repository(v: &Value, organization_id: i64, now: Timestamp) -> Option<Record> {
    let full_name = text(v, "nameWithOwner")?;
    Some(Record::Repository(Repository {
        github_id: int(v, "databaseId")?,
        node_id: text(v, "id"),
        name: text(v, "name"),
        owner_login: login_of(v, "owner"),
        owner_github_id: v.get("owner").and_then(|o| int(o, "databaseId")),
        organization_id: Some(organization_id),
        description: text(v, "description"),
        visibility: boolean(v, "isPrivate")
            .map(|p| if p { "PRIVATE" } else { "PUBLIC" }.to_owned()),
        fork: boolean(v, "isFork"),
        archived: boolean(v, "isArchived"),
        default_branch: v.get("defaultBranchRef").and_then(|r| text(r, "name")),
        github_created_at: at(v, "createdAt"),
        github_updated_at: at(v, "updatedAt"),
        pushed_at: at(v, "pushedAt"),
        full_name,
        raw: v.clone(),
        collected_at: now,
    }))
}

pub(crate) fn issue(v: &Value, repo: i64, now: Timestamp) -> Option<Record> {
    Some(Record::Issue(Issue {
        repository_github_id: repo,
        node_id: text(v, "id")?,
        github_id: int(v, "databaseId"),
        number: int(v, "number")?,
        title: text(v, "title").unwrap_or_default(),
        state: text(v, "state").unwrap_or_default(),
        author_login: login_of(v, "author"),
        comments_count: None,
        github_created_at: at(v, "createdAt"),
        github_updated_at: at(v, "updatedAt"),
        closed_at: at(v, "closedAt"),
        raw: v.clone(),
        collected_at: now,
    }))
}

pub(crate) fn issue_comment(
    v: &Value,
    repo: i64,
    issue_number: i64,
    now: Timestamp,
) -> Option<Record> {
    Some(Record::IssueComment(IssueComment {
        repository_github_id: repo,
        issue_number,
        node_id: text(v, "id")?,
        github_id: int(v, "databaseId"),
        author_login: login_of(v, "author"),
        github_created_at: at(v, "createdAt"),
        github_updated_at: at(v, "updatedAt"),
        raw: v.clone(),
        collected_at: now,
    }))
}

pub(crate) fn project(v: &Value, organization_id: i64, now: Timestamp) -> Option<Record> {
    Some(Record::Project(Project {
        organization_id,
        node_id: text(v, "id")?,
        number: int(v, "number")?,
        title: text(v, "title").unwrap_or_default(),
        closed: boolean(v, "closed").unwrap_or(false),
        url: text(v, "url"),
        items_count: v
            .get("items")
            .and_then(|i| i.get("totalCount"))
            .and_then(Value::as_i64),
        github_created_at: at(v, "createdAt"),
        github_updated_at: at(v, "updatedAt"),
        // The items are stored in their own table; the views (the boards) stay here.
        raw: strip(v, "items"),
        collected_at: now,
    }))
}

/// A `ProjectV2Item` node of `project` (whose `id` it needs).
pub(crate) fn project_item(v: &Value, project: &Value, now: Timestamp) -> Option<Record> {
    let content = v.get("content").filter(|c| !c.is_null());
    Some(Record::ProjectItem(ProjectItem {
        project_node_id: text(project, "id")?,
        node_id: text(v, "id")?,
        github_id: int(v, "databaseId"),
        item_type: text(v, "type"),
        content_node_id: content.and_then(|c| text(c, "id")),
        content_number: content.and_then(|c| int(c, "number")),
        content_repository: content
            .and_then(|c| c.get("repository"))
            .and_then(|r| text(r, "nameWithOwner")),
        title: content.and_then(|c| text(c, "title")),
        raw: v.clone(),
        collected_at: now,
    }))
}

pub(crate) fn pull_request(v: &Value, repo: i64, now: Timestamp) -> Option<Record> {
    Some(Record::PullRequest(PullRequest {
        repository_github_id: repo,
        node_id: text(v, "id")?,
        github_id: int(v, "databaseId"),
        number: int(v, "number")?,
        title: text(v, "title").unwrap_or_default(),
        state: text(v, "state").unwrap_or_default(),
        author_login: login_of(v, "author"),
        head_ref: text(v, "headRefName"),
        base_ref: text(v, "baseRefName"),
        head_sha: text(v, "headRefOid"),
        merged: boolean(v, "merged").unwrap_or(false),
        merged_at: at(v, "mergedAt"),
        github_created_at: at(v, "createdAt"),
        github_updated_at: at(v, "updatedAt"),
        closed_at: at(v, "closedAt"),
        // The commits are stored in their own table.
        raw: strip(v, "commits"),
        collected_at: now,
    }))
}

/// A `PullRequestCommit` node (`{ commit { … } }`).
pub(crate) fn pull_request_commit(
    v: &Value,
    repo: i64,
    number: i64,
    now: Timestamp,
) -> Option<Record> {
    let c = v.get("commit")?;
    Some(Record::PullRequestCommit(PullRequestCommit {
        repository_github_id: repo,
        pull_request_number: number,
        commit_sha: text(c, "oid")?,
        author_login: c
            .get("author")
            .and_then(|a| a.get("user"))
            .and_then(|u| text(u, "login")),
        message_headline: text(c, "message").map(|m| m.lines().next().unwrap_or("").to_owned()),
        committed_at: at(c, "committedDate"),
        additions: int(c, "additions"),
        deletions: int(c, "deletions"),
        changed_files: int(c, "changedFilesIfAvailable"),
        raw: c.clone(),
        collected_at: now,
    }))
}

/// A `diff-entry` of `GET /repos/{owner}/{repo}/commits/{ref}` (`files[]`).
pub fn commit_file(v: &Value, repo: i64, sha: &str, now: Timestamp) -> Option<Record> {
    Some(Record::CommitFile(CommitFile {
        repository_github_id: repo,
        commit_sha: sha.to_owned(),
        path: text(v, "filename")?,
        previous_path: text(v, "previous_filename"),
        status: text(v, "status"),
        additions: int(v, "additions"),
        deletions: int(v, "deletions"),
        changes: int(v, "changes"),
        raw: v.clone(),
        collected_at: now,
    }))
}

/// A `workflow-run` of `GET /repos/{owner}/{repo}/actions/runs` (`workflow_runs[]`).
pub fn workflow_run(v: &Value, repo: i64, now: Timestamp) -> Option<Record> {
    Some(Record::WorkflowRun(WorkflowRun {
        github_id: int(v, "id")?,
        repository_github_id: repo,
        node_id: text(v, "node_id"),
        workflow_id: int(v, "workflow_id"),
        name: text(v, "name"),
        event: text(v, "event"),
        head_branch: text(v, "head_branch"),
        head_sha: text(v, "head_sha"),
        status: text(v, "status"),
        conclusion: text(v, "conclusion"),
        run_number: int(v, "run_number"),
        run_attempt: int(v, "run_attempt"),
        github_created_at: at(v, "created_at"),
        github_updated_at: at(v, "updated_at"),
        raw: v.clone(),
        collected_at: now,
    }))
}

/// A `job` of `GET …/actions/runs/{run_id}/jobs` (`jobs[]`); `run` stands in for a missing
/// `run_id`.
pub fn workflow_job(v: &Value, repo: i64, run: i64, now: Timestamp) -> Option<Record> {
    Some(Record::WorkflowJob(WorkflowJob {
        github_id: int(v, "id")?,
        workflow_run_github_id: int(v, "run_id").unwrap_or(run),
        repository_github_id: repo,
        node_id: text(v, "node_id"),
        name: text(v, "name"),
        status: text(v, "status"),
        conclusion: text(v, "conclusion"),
        started_at: at(v, "started_at"),
        completed_at: at(v, "completed_at"),
        raw: v.clone(),
        collected_at: now,
    }))
}

/// A `check-run` of `GET …/commits/{ref}/check-runs` (`check_runs[]`).
pub fn check_run(v: &Value, repo: i64, now: Timestamp) -> Option<Record> {
    Some(Record::CheckRun(CheckRun {
        github_id: int(v, "id")?,
        repository_github_id: repo,
        node_id: text(v, "node_id"),
        check_suite_id: v.get("check_suite").and_then(|s| int(s, "id")),
        head_sha: text(v, "head_sha"),
        name: text(v, "name"),
        status: text(v, "status"),
        conclusion: text(v, "conclusion"),
        started_at: at(v, "started_at"),
        completed_at: at(v, "completed_at"),
        raw: v.clone(),
        collected_at: now,
    }))
}

/// A `refs` node.
pub(crate) fn branch(v: &Value, repo: i64, now: Timestamp) -> Option<Record> {
    Some(Record::Branch(Branch {
        repository_github_id: repo,
        name: text(v, "name")?,
        head_sha: v.get("target").and_then(|t| text(t, "oid")),
        protected: None,
        raw: v.clone(),
        collected_at: now,
    }))
}

fn strip(v: &Value, field: &str) -> Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove(field);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `owner { login ... on Organization { databaseId } ... on User { databaseId } }`
    /// answers one flat object: whichever fragment matched adds its `databaseId` beside
    /// `login`, and an owner of another type (none today) has no id.
    #[test]
    fn the_owner_id_comes_from_the_owner_types_fragment() {
        let now = Timestamp::from_second(1_800_000_000).expect("valid");
        let node = |owner: Value| {
            json!({ "id": "R_1", "databaseId": 7, "name": "widgets",
                    "nameWithOwner": "acme/widgets", "owner": owner })
        };
        let owner_of = |v: Value| match repository(&v, 1, now) {
            Some(Record::Repository(r)) => (r.owner_login, r.owner_github_id),
            other => panic!("not a repository: {other:?}"),
        };
        assert_eq!(
            owner_of(node(json!({ "login": "acme", "databaseId": 9100 }))),
            (Some("acme".to_owned()), Some(9100))
        );
        assert_eq!(
            owner_of(node(json!({ "login": "someone" }))),
            (Some("someone".to_owned()), None)
        );
    }
}
