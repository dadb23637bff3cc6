//! GitLab's JSON shapes for the seeded group's records, after GitLab's REST documentation
//! (groups, projects, merge_requests, merge_request_approvals, notes, pipelines, jobs,
//! issues, milestones, deployments, releases, feature_flags). Times are ISO 8601 with
//! milliseconds and `Z`. Fields GitLab documents but the simulator has nothing behind are
//! sent as null, false, 0 or empty.

use headroom_core::clock::Timestamp;
use serde_json::{Value, json};

use super::model::*;
use crate::sim::ts_millis;

fn t(at: Timestamp) -> String {
    ts_millis(at)
}

fn date(at: Timestamp) -> String {
    at.strftime("%Y-%m-%d").to_string()
}

/// A user as GitLab embeds one (`UserBasic`).
pub(crate) fn user(base: &str, m: &Member) -> Value {
    json!({
        "id": m.id,
        "username": m.username,
        "name": m.name,
        "state": "active",
        "locked": false,
        "avatar_url": format!("{base}/uploads/-/system/user/avatar/{}/avatar.png", m.id),
        "web_url": format!("{base}/{}", m.username),
    })
}

fn member(base: &str, w: &GroupWorld, i: usize) -> Value {
    w.members.get(i).map_or(Value::Null, |m| user(base, m))
}

/// A group (`GET /groups/:id`, descendant_groups).
pub(crate) fn group(base: &str, w: &GroupWorld, gi: usize) -> Value {
    let g = &w.groups[gi];
    json!({
        "id": g.id,
        "web_url": format!("{base}/groups/{}", g.full_path),
        "name": g.name,
        "path": g.path,
        "description": "",
        "visibility": "private",
        "share_with_group_lock": false,
        "require_two_factor_authentication": false,
        "two_factor_grace_period": 48,
        "project_creation_level": "developer",
        "auto_devops_enabled": null,
        "subgroup_creation_level": "maintainer",
        "emails_disabled": false,
        "emails_enabled": true,
        "mentions_disabled": null,
        "lfs_enabled": true,
        "default_branch": null,
        "avatar_url": null,
        "request_access_enabled": true,
        "full_name": g.full_path.replace('/', " / "),
        "full_path": g.full_path,
        "created_at": t(g.created_at),
        "parent_id": g.parent.map(|p| w.groups[p].id),
        "organization_id": 1,
        "shared_runners_setting": "enabled",
        "ldap_cn": null,
        "ldap_access": null,
        "marked_for_deletion_on": null,
    })
}

/// A project of the group.
pub(crate) fn project(base: &str, w: &GroupWorld, p: &Project) -> Value {
    let g = &w.groups[p.group];
    let full = w.project_full_path(p);
    json!({
        "id": p.id,
        "description": null,
        "name": p.name,
        "name_with_namespace": format!("{} / {}", g.full_path.replace('/', " / "), p.name),
        "path": p.path,
        "path_with_namespace": full,
        "created_at": t(p.created_at),
        "updated_at": t(p.last_activity_at()),
        "last_activity_at": t(p.last_activity_at()),
        "default_branch": "main",
        "tag_list": [],
        "topics": [],
        "ssh_url_to_repo": format!("git@gitlab.invalid:{full}.git"),
        "http_url_to_repo": format!("{base}/{full}.git"),
        "web_url": format!("{base}/{full}"),
        "readme_url": format!("{base}/{full}/-/blob/main/README.md"),
        "avatar_url": null,
        "forks_count": 0,
        "star_count": 0,
        "visibility": "private",
        "archived": false,
        "empty_repo": false,
        "namespace": {
            "id": g.id,
            "name": g.name,
            "path": g.path,
            "kind": "group",
            "full_path": g.full_path,
            "parent_id": g.parent.map(|pi| w.groups[pi].id),
            "avatar_url": null,
            "web_url": format!("{base}/groups/{}", g.full_path),
        },
        "issues_enabled": true,
        "merge_requests_enabled": true,
        "jobs_enabled": true,
        "open_issues_count": p.issues.iter().filter(|i| i.state == "opened").count(),
    })
}

/// A milestone of a project (`project_id`) or a group (`group_id`).
pub(crate) fn milestone(base: &str, owner: (&str, u64, &str), m: &Milestone) -> Value {
    let (kind, id, path) = owner;
    let mut v = json!({
        "id": m.id,
        "iid": m.iid,
        "title": m.title,
        "description": "",
        "state": m.state,
        "created_at": t(m.created_at),
        "updated_at": t(m.updated_at),
        "due_date": date(m.due_date),
        "start_date": date(m.start_date),
        "expired": m.state == "closed",
        "web_url": if kind == "group" {
            format!("{base}/groups/{path}/-/milestones/{}", m.iid)
        } else {
            format!("{base}/{path}/-/milestones/{}", m.iid)
        },
    });
    v[format!("{kind}_id")] = json!(id);
    v
}

fn milestone_of(base: &str, w: &GroupWorld, p: &Project, i: Option<usize>) -> Value {
    let full = w.project_full_path(p);
    i.and_then(|i| p.milestones.get(i))
        .map_or(Value::Null, |m| {
            milestone(base, ("project", p.id, &full), m)
        })
}

/// A merge request as lists show it.
pub(crate) fn merge_request(base: &str, w: &GroupWorld, p: &Project, mr: &MergeRequest) -> Value {
    let full = w.project_full_path(p);
    let sha = mr.commits.last().map(|c| c.id.clone());
    let finished_by = mr.finished_by.map_or(Value::Null, |i| member(base, w, i));
    let merged = mr.state == "merged";
    let mut v = json!({
        "id": mr.id,
        "iid": mr.iid,
        "project_id": p.id,
        "title": mr.title,
        "description": format!("Closes a problem in {}.", mr.source_branch),
        "state": mr.state,
        "created_at": t(mr.created_at),
        "updated_at": t(mr.updated_at),
        "merged_by": if merged { finished_by.clone() } else { Value::Null },
        "merge_user": if merged { finished_by.clone() } else { Value::Null },
        "merged_at": mr.merged_at.map(t),
        "closed_by": if mr.state == "closed" { finished_by } else { Value::Null },
        "closed_at": mr.closed_at.map(t),
        "target_branch": mr.target_branch,
        "source_branch": mr.source_branch,
        "user_notes_count": mr.notes.iter().filter(|n| !n.system).count(),
        "upvotes": 0,
        "downvotes": 0,
        "author": member(base, w, mr.author),
        "assignees": [],
        "assignee": null,
        "reviewers": [],
        "source_project_id": p.id,
        "target_project_id": p.id,
        "labels": [],
        "draft": false,
        "work_in_progress": false,
        "milestone": milestone_of(base, w, p, mr.milestone),
    });
    let rest = json!({
        "merge_when_pipeline_succeeds": false,
        "merge_status": "can_be_merged",
        "detailed_merge_status": if mr.state == "opened" { "mergeable" } else { "not_open" },
        "sha": sha,
        "merge_commit_sha": mr.merge_commit_sha,
        "squash_commit_sha": null,
        "discussion_locked": null,
        "should_remove_source_branch": null,
        "force_remove_source_branch": true,
        "prepared_at": t(mr.created_at),
        "reference": format!("!{}", mr.iid),
        "references": {
            "short": format!("!{}", mr.iid),
            "relative": format!("!{}", mr.iid),
            "full": format!("{full}!{}", mr.iid),
        },
        "web_url": format!("{base}/{full}/-/merge_requests/{}", mr.iid),
        "time_stats": time_stats(),
        "squash": false,
        "squash_on_merge": false,
        "task_completion_status": {"count": 0, "completed_count": 0},
        "has_conflicts": false,
        "blocking_discussions_resolved": true,
    });
    merge(&mut v, rest);
    v
}

fn time_stats() -> Value {
    json!({"time_estimate": 0, "total_time_spent": 0,
        "human_time_estimate": null, "human_total_time_spent": null})
}

/// Adds `more`'s fields to `v` (both objects; `json!` cannot take GitLab's wide shapes in one).
fn merge(v: &mut Value, more: Value) {
    if let (Value::Object(a), Value::Object(b)) = (v, more) {
        a.extend(b);
    }
}

/// A commit of a merge request.
pub(crate) fn commit(base: &str, w: &GroupWorld, p: &Project, c: &Commit) -> Value {
    let author = w.members.get(c.author);
    let name = author.map_or("", |m| m.name.as_str());
    let email = author.map_or(String::new(), |m| format!("{}@example.invalid", m.username));
    json!({
        "id": c.id,
        "short_id": &c.id[..8.min(c.id.len())],
        "created_at": t(c.created_at),
        "parent_ids": c.parent_id.iter().collect::<Vec<_>>(),
        "title": c.title,
        "message": c.title,
        "author_name": name,
        "author_email": email,
        "authored_date": t(c.created_at),
        "committer_name": name,
        "committer_email": email,
        "committed_date": t(c.created_at),
        "trailers": {},
        "extended_trailers": {},
        "web_url": format!("{base}/{}/-/commit/{}", w.project_full_path(p), c.id),
    })
}

/// `GET …/merge_requests/:iid/approvals` (one object). GitLab Free requires no approvals.
pub(crate) fn approvals(base: &str, w: &GroupWorld, p: &Project, mr: &MergeRequest) -> Value {
    let approved_by: Vec<Value> = mr
        .approved_by
        .iter()
        .map(|&i| json!({"user": member(base, w, i)}))
        .collect();
    json!({
        "id": mr.id,
        "iid": mr.iid,
        "project_id": p.id,
        "title": mr.title,
        "description": format!("Closes a problem in {}.", mr.source_branch),
        "state": mr.state,
        "created_at": t(mr.created_at),
        "updated_at": t(mr.updated_at),
        "merge_status": "can_be_merged",
        "approved": true,
        "approvals_required": 0,
        "approvals_left": 0,
        "require_password_to_approve": false,
        "approved_by": approved_by,
        "suggested_approvers": [],
        "approvers": [],
        "approver_groups": [],
        "user_has_approved": false,
        "user_can_approve": true,
        "approval_rules_left": [],
        "has_approval_rules": false,
        "merge_request_approvers_available": false,
        "multiple_approval_rules_available": false,
        "invalid_approvers_rules": [],
    })
}

/// A note on a merge request or an issue.
pub(crate) fn note(base: &str, w: &GroupWorld, on: (&str, u64, u64, u64), n: &Note) -> Value {
    let (noteable_type, noteable_id, noteable_iid, project_id) = on;
    json!({
        "id": n.id,
        "type": null,
        "body": n.body,
        "attachment": null,
        "author": member(base, w, n.author),
        "created_at": t(n.created_at),
        "updated_at": t(n.updated_at),
        "system": n.system,
        "noteable_id": noteable_id,
        "noteable_type": noteable_type,
        "project_id": project_id,
        "noteable_iid": noteable_iid,
        "commands_changes": {},
        "resolvable": false,
        "confidential": false,
        "internal": false,
        "imported": false,
        "imported_from": "none",
    })
}

/// A pipeline as lists show it.
pub(crate) fn pipeline(base: &str, w: &GroupWorld, p: &Project, pl: &Pipeline) -> Value {
    json!({
        "id": pl.id,
        "iid": pl.iid,
        "project_id": p.id,
        "sha": pl.sha,
        "ref": pl.reference,
        "status": pl.status,
        "source": pl.source,
        "created_at": t(pl.created_at),
        "updated_at": t(pl.updated_at),
        "web_url": format!("{base}/{}/-/pipelines/{}", w.project_full_path(p), pl.id),
        "name": null,
    })
}

/// A job of a pipeline.
pub(crate) fn job(base: &str, w: &GroupWorld, p: &Project, pl: &Pipeline, j: &Job) -> Value {
    let duration = (j.finished_at.as_millisecond() - j.started_at.as_millisecond()) as f64 / 1e3;
    json!({
        "id": j.id,
        "status": j.status,
        "stage": j.stage,
        "name": j.name,
        "ref": pl.reference,
        "tag": false,
        "coverage": null,
        "allow_failure": false,
        "created_at": t(j.created_at),
        "started_at": t(j.started_at),
        "finished_at": t(j.finished_at),
        "erased_at": null,
        "duration": duration,
        "queued_duration": 5.0,
        "user": member(base, w, pl.user),
        "commit": {"id": pl.sha, "short_id": &pl.sha[..8.min(pl.sha.len())]},
        "pipeline": {
            "id": pl.id,
            "iid": pl.iid,
            "project_id": p.id,
            "ref": pl.reference,
            "sha": pl.sha,
            "status": pl.status,
            "source": pl.source,
            "created_at": t(pl.created_at),
            "updated_at": t(pl.updated_at),
        },
        "web_url": format!("{base}/{}/-/jobs/{}", w.project_full_path(p), j.id),
        "project": {"ci_job_token_scope_enabled": false},
        "artifacts": [],
        "runner": null,
        "failure_reason": if j.status == "failed" { json!("script_failure") } else { Value::Null },
        "archived": false,
    })
}

/// An issue.
pub(crate) fn issue(base: &str, w: &GroupWorld, p: &Project, i: &Issue) -> Value {
    let full = w.project_full_path(p);
    let mut v = json!({
        "id": i.id,
        "iid": i.iid,
        "project_id": p.id,
        "title": i.title,
        "description": "Seen on the dashboard since the last release.",
        "state": i.state,
        "created_at": t(i.created_at),
        "updated_at": t(i.updated_at),
        "closed_at": i.closed_at.map(t),
        "closed_by": i.closed_by.map_or(Value::Null, |m| member(base, w, m)),
        "labels": i.labels,
        "milestone": milestone_of(base, w, p, i.milestone),
        "assignees": [],
        "assignee": null,
        "author": member(base, w, i.author),
        "type": "ISSUE",
        "issue_type": "issue",
    });
    let rest = json!({
        "user_notes_count": i.notes.iter().filter(|n| !n.system).count(),
        "merge_requests_count": 0,
        "upvotes": 0,
        "downvotes": 0,
        "due_date": null,
        "confidential": false,
        "discussion_locked": null,
        "web_url": format!("{base}/{full}/-/issues/{}", i.iid),
        "time_stats": time_stats(),
        "task_completion_status": {"count": 0, "completed_count": 0},
        "references": {
            "short": format!("#{}", i.iid),
            "relative": format!("#{}", i.iid),
            "full": format!("{full}#{}", i.iid),
        },
        "severity": "UNKNOWN",
        "moved_to_id": null,
        "service_desk_reply_to": null,
    });
    merge(&mut v, rest);
    v
}

/// A deployment with its environment (`deployable` is null: the simulator's deployments were
/// not made by a job).
pub(crate) fn deployment(base: &str, w: &GroupWorld, p: &Project, d: &Deployment) -> Value {
    let env = p.environments.get(d.environment);
    let full = w.project_full_path(p);
    json!({
        "id": d.id,
        "iid": d.iid,
        "ref": d.reference,
        "sha": d.sha,
        "status": d.status,
        "created_at": t(d.created_at),
        "updated_at": t(d.updated_at),
        "finished_at": d.finished_at.map(t),
        "user": member(base, w, d.user),
        "environment": env.map_or(Value::Null, |e| json!({
            "id": e.id,
            "name": e.name,
            "slug": e.name,
            "external_url": format!("https://{}.{}.example.invalid", e.name, p.path),
            "created_at": t(e.created_at),
            "updated_at": t(e.created_at),
            "tier": e.name,
            "state": "available",
            "web_url": format!("{base}/{full}/-/environments/{}", e.id),
        })),
        "deployable": null,
    })
}

/// A release.
pub(crate) fn release(base: &str, w: &GroupWorld, p: &Project, r: &Release) -> Value {
    let full = w.project_full_path(p);
    let milestones: Vec<Value> = r
        .milestone
        .and_then(|i| p.milestones.get(i))
        .map(|m| milestone(base, ("project", p.id, &full), m))
        .into_iter()
        .collect();
    json!({
        "tag_name": r.tag_name,
        "description": format!("Changes in {}.", r.tag_name),
        "name": r.name,
        "created_at": t(r.created_at),
        "released_at": t(r.released_at),
        "upcoming_release": false,
        "author": member(base, w, r.author),
        "commit": {"id": r.sha, "short_id": &r.sha[..8.min(r.sha.len())],
            "title": format!("Release {}", r.tag_name), "created_at": t(r.created_at)},
        "milestones": milestones,
        "commit_path": format!("/{full}/-/commit/{}", r.sha),
        "tag_path": format!("/{full}/-/tags/{}", r.tag_name),
        "assets": {"count": 0, "sources": [], "links": []},
        "evidences": [],
        "_links": {"self": format!("{base}/{full}/-/releases/{}", r.tag_name)},
    })
}

/// A feature flag (the current `new_version_flag` shape: strategies with scopes).
pub(crate) fn feature_flag(f: &FeatureFlag) -> Value {
    json!({
        "name": f.name,
        "description": format!("Rolls out {}.", f.name),
        "active": f.active,
        "version": "new_version_flag",
        "created_at": t(f.created_at),
        "updated_at": t(f.updated_at),
        "scopes": [],
        "strategies": [{
            "id": f.strategy_id,
            "name": "default",
            "parameters": {},
            "scopes": [{"id": f.scope_id, "environment_scope": "*"}],
            "user_list": null,
        }],
    })
}
