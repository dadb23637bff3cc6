//! JSON bodies in GitHub's REST shapes. `base` is the API root the client used
//! (`https://api.github.com` or the simulator's own address), so that every URL in a body
//! leads back to the simulator.

use headroom_core::clock::Timestamp;
use serde_json::{Value, json};

use crate::world::{
    BranchRec, CommentRec, CommitRec, FileRec, IssueRec, JobRec, OrgRec, PullRec, RepoRec, RunRec,
    TeamRec, UserRec, World,
};

/// GitHub's timestamp format (`2026-01-01T00:00:00Z`).
pub fn ts(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn node_id(prefix: &str, id: u64) -> String {
    format!("{prefix}_kgDO{id:08X}")
}

/// A user (or organization) as embedded in other objects.
pub fn user_simple(base: &str, u: &UserRec) -> Value {
    json!({
        "login": u.login,
        "id": u.id,
        "node_id": node_id(if u.is_org { "O" } else { "U" }, u.id),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{}?v=4", u.id),
        "gravatar_id": "",
        "url": format!("{base}/users/{}", u.login),
        "html_url": format!("https://github.com/{}", u.login),
        "repos_url": format!("{base}/users/{}/repos", u.login),
        "events_url": format!("{base}/users/{}/events{{/privacy}}", u.login),
        "type": if u.is_org { "Organization" } else { "User" },
        "user_view_type": "public",
        "site_admin": false,
    })
}

/// A user by login, falling back to a minimal object for logins the world does not know.
pub fn user_ref(base: &str, world: &World, login: &str) -> Value {
    match world.user(login) {
        Some(u) => user_simple(base, u),
        None => {
            json!({"login": login, "id": 0, "type": "User", "url": format!("{base}/users/{login}")})
        }
    }
}

/// `GET /users/{login}`.
pub fn user_full(base: &str, u: &UserRec, public_repos: usize) -> Value {
    let mut v = user_simple(base, u);
    if let Value::Object(m) = &mut v {
        m.insert("name".into(), json!(u.name));
        m.insert("company".into(), Value::Null);
        m.insert("blog".into(), json!(""));
        m.insert("location".into(), Value::Null);
        m.insert("email".into(), Value::Null);
        m.insert("bio".into(), Value::Null);
        m.insert("public_repos".into(), json!(public_repos));
        m.insert("followers".into(), json!(u.id % 97));
        m.insert("following".into(), json!(u.id % 13));
        m.insert("created_at".into(), json!(ts(u.created_at)));
        m.insert("updated_at".into(), json!(ts(u.created_at)));
    }
    v
}

/// A repository.
pub fn repo(base: &str, world: &World, r: &RepoRec) -> Value {
    let full = r.full_name();
    json!({
        "id": r.id,
        "node_id": node_id("R", r.id),
        "name": r.name,
        "full_name": full,
        "private": r.private,
        "owner": user_ref(base, world, &r.owner),
        "html_url": format!("https://github.com/{full}"),
        "description": r.description,
        "fork": false,
        "url": format!("{base}/repos/{full}"),
        "issues_url": format!("{base}/repos/{full}/issues{{/number}}"),
        "pulls_url": format!("{base}/repos/{full}/pulls{{/number}}"),
        "created_at": ts(r.created_at),
        "updated_at": ts(r.updated_at),
        "pushed_at": ts(r.updated_at),
        "homepage": Value::Null,
        "size": r.id % 5000,
        "stargazers_count": r.stars,
        "watchers_count": r.stars,
        "language": r.language,
        "has_issues": true,
        "has_projects": true,
        "forks_count": r.stars / 7,
        "archived": false,
        "disabled": false,
        "open_issues_count": r.id % 11,
        "license": Value::Null,
        "topics": [],
        "visibility": if r.private { "private" } else { "public" },
        "default_branch": r.default_branch,
    })
}

/// An organization: `GET /orgs/{org}`.
pub fn org(base: &str, o: &OrgRec, public_repos: usize) -> Value {
    json!({
        "login": o.login,
        "id": o.id,
        "node_id": node_id("O", o.id),
        "url": format!("{base}/orgs/{}", o.login),
        "repos_url": format!("{base}/orgs/{}/repos", o.login),
        "members_url": format!("{base}/orgs/{}/members{{/member}}", o.login),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{}?v=4", o.id),
        "description": "A generated organization",
        "name": format!("{} Inc.", o.login),
        "public_repos": public_repos,
        "html_url": format!("https://github.com/{}", o.login),
        "type": "Organization",
    })
}

/// A team.
pub fn team(base: &str, org: &str, t: &TeamRec) -> Value {
    json!({
        "id": t.id,
        "node_id": node_id("T", t.id),
        "name": t.name,
        "slug": t.slug,
        "description": t.description,
        "privacy": "closed",
        "permission": "pull",
        "url": format!("{base}/orgs/{org}/teams/{}", t.slug),
        "members_url": format!("{base}/orgs/{org}/teams/{}/members{{/member}}", t.slug),
        "parent": Value::Null,
    })
}

fn labels(base: &str, full: &str, names: &[String]) -> Value {
    Value::Array(
        names
            .iter()
            .map(|n| json!({"name": n, "color": "ededed", "url": format!("{base}/repos/{full}/labels/{n}")}))
            .collect(),
    )
}

/// An issue (pull requests carry a `pull_request` key, as in `/issues` lists).
pub fn issue(base: &str, world: &World, r: &RepoRec, i: &IssueRec) -> Value {
    let full = r.full_name();
    let mut v = json!({
        "id": i.id,
        "node_id": node_id("I", i.id),
        "url": format!("{base}/repos/{full}/issues/{}", i.number),
        "repository_url": format!("{base}/repos/{full}"),
        "comments_url": format!("{base}/repos/{full}/issues/{}/comments", i.number),
        "html_url": format!("https://github.com/{full}/issues/{}", i.number),
        "number": i.number,
        "state": if i.open { "open" } else { "closed" },
        "title": i.title,
        "body": i.body,
        "user": user_ref(base, world, &i.user),
        "labels": labels(base, &full, &i.labels),
        "assignees": [],
        "locked": false,
        "comments": i.comments.len(),
        "created_at": ts(i.created_at),
        "updated_at": ts(i.updated_at),
        "closed_at": if i.open { Value::Null } else { json!(ts(i.updated_at)) },
        "author_association": "MEMBER",
    });
    if i.pull.is_some()
        && let Value::Object(m) = &mut v
    {
        m.insert(
            "pull_request".into(),
            json!({
                "url": format!("{base}/repos/{full}/pulls/{}", i.number),
                "html_url": format!("https://github.com/{full}/pull/{}", i.number),
            }),
        );
    }
    v
}

/// An issue comment.
pub fn comment(base: &str, world: &World, r: &RepoRec, issue_number: u64, c: &CommentRec) -> Value {
    let full = r.full_name();
    json!({
        "id": c.id,
        "node_id": node_id("IC", c.id),
        "url": format!("{base}/repos/{full}/issues/comments/{}", c.id),
        "html_url": format!("https://github.com/{full}/issues/{issue_number}#issuecomment-{}", c.id),
        "issue_url": format!("{base}/repos/{full}/issues/{issue_number}"),
        "body": c.body,
        "user": user_ref(base, world, &c.user),
        "created_at": ts(c.created_at),
        "updated_at": ts(c.created_at),
        "author_association": "MEMBER",
    })
}

/// A pull request.
pub fn pull(base: &str, world: &World, r: &RepoRec, i: &IssueRec, p: &PullRec) -> Value {
    let full = r.full_name();
    let repo_v = repo(base, world, r);
    json!({
        "id": p.id,
        "node_id": node_id("PR", p.id),
        "url": format!("{base}/repos/{full}/pulls/{}", p.number),
        "html_url": format!("https://github.com/{full}/pull/{}", p.number),
        "number": p.number,
        "state": if i.open { "open" } else { "closed" },
        "title": i.title,
        "body": i.body,
        "user": user_ref(base, world, &i.user),
        "created_at": ts(i.created_at),
        "updated_at": ts(i.updated_at),
        "closed_at": if i.open { Value::Null } else { json!(ts(i.updated_at)) },
        "merged_at": p.merged_at.map(ts),
        "merge_commit_sha": p.merge_sha,
        "merged": p.merged,
        "draft": false,
        "commits_url": format!("{base}/repos/{full}/pulls/{}/commits", p.number),
        "head": {"label": format!("{}:{}", r.owner, p.head), "ref": p.head, "sha": p.head_sha, "repo": repo_v.clone()},
        "base": {"label": format!("{}:{}", r.owner, p.base), "ref": p.base, "sha": p.base_sha, "repo": repo_v},
        "commits": p.commits.len(),
        "author_association": "MEMBER",
    })
}

/// A changed file.
pub fn file(base: &str, full: &str, f: &FileRec) -> Value {
    json!({
        "sha": f.sha,
        "filename": f.filename,
        "status": f.status,
        "additions": f.additions,
        "deletions": f.deletions,
        "changes": f.additions + f.deletions,
        "blob_url": format!("https://github.com/{full}/blob/{}/{}", f.sha, f.filename),
        "contents_url": format!("{base}/repos/{full}/contents/{}", f.filename),
        "patch": format!("@@ -1,{} +1,{} @@", f.deletions, f.additions),
    })
}

/// A commit as listed (`/pulls/{n}/commits`); `with_files` adds stats and files
/// (`/commits/{sha}`).
pub fn commit(base: &str, world: &World, full: &str, c: &CommitRec, with_files: bool) -> Value {
    let author = world.user(&c.author);
    let person = json!({
        "name": author.and_then(|u| u.name.clone()).unwrap_or_else(|| c.author.clone()),
        "email": format!("{}@users.noreply.github.com", c.author),
        "date": ts(c.date),
    });
    let mut v = json!({
        "sha": c.sha,
        "node_id": format!("C_{}", &c.sha[..16.min(c.sha.len())]),
        "url": format!("{base}/repos/{full}/commits/{}", c.sha),
        "html_url": format!("https://github.com/{full}/commit/{}", c.sha),
        "commit": {
            "author": person.clone(),
            "committer": person,
            "message": c.message,
            "tree": {"sha": format!("{:0>40}", c.tree.len()), "url": format!("{base}/repos/{full}/git/trees/{}", c.sha)},
            "comment_count": 0,
        },
        "author": user_ref(base, world, &c.author),
        "committer": user_ref(base, world, &c.author),
        "parents": c.parents.iter().map(|p| json!({"sha": p, "url": format!("{base}/repos/{full}/commits/{p}")})).collect::<Vec<_>>(),
    });
    if with_files && let Value::Object(m) = &mut v {
        let additions: u64 = c.files.iter().map(|f| f.additions).sum();
        let deletions: u64 = c.files.iter().map(|f| f.deletions).sum();
        m.insert(
            "stats".into(),
            json!({"total": additions + deletions, "additions": additions, "deletions": deletions}),
        );
        m.insert(
            "files".into(),
            Value::Array(c.files.iter().map(|f| file(base, full, f)).collect()),
        );
    }
    v
}

/// A branch as listed.
pub fn branch(base: &str, full: &str, b: &BranchRec) -> Value {
    json!({
        "name": b.name,
        "commit": {"sha": b.sha, "url": format!("{base}/repos/{full}/commits/{}", b.sha)},
        "protected": b.protection.is_some(),
    })
}

/// A workflow run.
pub fn run(base: &str, world: &World, r: &RepoRec, run: &RunRec) -> Value {
    let full = r.full_name();
    json!({
        "id": run.id,
        "name": run.name,
        "node_id": node_id("WFR", run.id),
        "head_branch": run.head_branch,
        "head_sha": run.head_sha,
        "run_number": run.run_number,
        "event": run.event,
        "status": "completed",
        "conclusion": run.conclusion,
        "workflow_id": r.id % 100_000,
        "url": format!("{base}/repos/{full}/actions/runs/{}", run.id),
        "html_url": format!("https://github.com/{full}/actions/runs/{}", run.id),
        "jobs_url": format!("{base}/repos/{full}/actions/runs/{}/jobs", run.id),
        "created_at": ts(run.created_at),
        "updated_at": ts(run.created_at),
        "run_attempt": 1,
        "repository": {"id": r.id, "name": r.name, "full_name": full, "owner": user_ref(base, world, &r.owner)},
    })
}

/// A workflow job.
pub fn job(base: &str, full: &str, run: &RunRec, j: &JobRec) -> Value {
    json!({
        "id": j.id,
        "run_id": run.id,
        "run_url": format!("{base}/repos/{full}/actions/runs/{}", run.id),
        "node_id": node_id("CR", j.id),
        "head_sha": run.head_sha,
        "url": format!("{base}/repos/{full}/actions/jobs/{}", j.id),
        "status": "completed",
        "conclusion": j.conclusion,
        "started_at": ts(j.started_at),
        "completed_at": ts(j.completed_at),
        "name": j.name,
        "steps": [
            {"name": "Set up job", "status": "completed", "conclusion": "success", "number": 1},
            {"name": j.name, "status": "completed", "conclusion": j.conclusion, "number": 2},
        ],
        "check_run_url": format!("{base}/repos/{full}/check-runs/{}", j.id),
        "runner_name": "GitHub Actions 2",
        "workflow_name": run.name,
        "head_branch": run.head_branch,
    })
}

/// A check run (a workflow job seen from the Checks API).
pub fn check_run(base: &str, full: &str, run: &RunRec, j: &JobRec) -> Value {
    json!({
        "id": j.id,
        "head_sha": run.head_sha,
        "node_id": node_id("CR", j.id),
        "external_id": format!("{}", j.id),
        "url": format!("{base}/repos/{full}/check-runs/{}", j.id),
        "html_url": format!("https://github.com/{full}/actions/runs/{}/job/{}", run.id, j.id),
        "status": "completed",
        "conclusion": j.conclusion,
        "started_at": ts(j.started_at),
        "completed_at": ts(j.completed_at),
        "name": j.name,
        "check_suite": {"id": run.id + 1},
        "app": {"id": 15368, "slug": "github-actions", "name": "GitHub Actions"},
        "pull_requests": [],
    })
}
