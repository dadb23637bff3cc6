//! Pull requests (as listed and in full) and their files.

use super::*;

/// A pull request as listed (`pull-request-simple`).
pub fn pull(base: &str, world: &World, r: &RepoRec, i: &IssueRec, p: &PullRec) -> Value {
    let full = r.full_name();
    let api = format!("{base}/repos/{full}/pulls/{}", p.number);
    let issue_api = format!("{base}/repos/{full}/issues/{}", p.number);
    let html = format!("https://github.com/{full}/pull/{}", p.number);
    let repo_v = repo(base, world, r);
    let owner = user_ref(base, world, &r.owner);
    let side = |name: &str, sha: &str| {
        json!({
            "label": format!("{}:{name}", r.owner),
            "ref": name,
            "sha": sha,
            "user": owner.clone(),
            "repo": repo_v.clone(),
        })
    };
    let statuses = format!("{base}/repos/{full}/statuses/{}", p.head_sha);
    let links = json!({
        "self": {"href": api},
        "html": {"href": html},
        "issue": {"href": issue_api},
        "comments": {"href": format!("{issue_api}/comments")},
        "review_comments": {"href": format!("{api}/comments")},
        "review_comment": {"href": format!("{base}/repos/{full}/pulls/comments{{/number}}")},
        "commits": {"href": format!("{api}/commits")},
        "statuses": {"href": statuses},
    });
    json!({
        "id": p.id,
        "node_id": node_id("PR", p.id),
        "url": api,
        "html_url": html,
        "diff_url": format!("{html}.diff"),
        "patch_url": format!("{html}.patch"),
        "issue_url": issue_api,
        "commits_url": format!("{api}/commits"),
        "review_comments_url": format!("{api}/comments"),
        "review_comment_url": format!("{base}/repos/{full}/pulls/comments{{/number}}"),
        "comments_url": format!("{issue_api}/comments"),
        "statuses_url": statuses,
        "number": p.number,
        "state": if i.open { "open" } else { "closed" },
        "locked": false,
        "active_lock_reason": Value::Null,
        "title": i.title,
        "body": i.body,
        "user": user_ref(base, world, &i.user),
        "labels": labels(base, &full, &i.labels),
        "milestone": Value::Null,
        "assignee": Value::Null,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "created_at": ts(i.created_at),
        "updated_at": ts(i.updated_at),
        "closed_at": if i.open { Value::Null } else { json!(ts(i.updated_at)) },
        "merged_at": p.merged_at.map(ts),
        "merge_commit_sha": p.merge_sha,
        "draft": false,
        "head": side(&p.head, &p.head_sha),
        "base": side(&p.base, &p.base_sha),
        "_links": links,
        "author_association": "MEMBER",
        "auto_merge": Value::Null,
    })
}

/// A single pull request (`pull-request`): the listed fields, its counts and merge state.
/// `c` is its repository's content (the commits it counts lines of).
pub fn pull_full(
    base: &str,
    world: &World,
    r: &RepoRec,
    i: &IssueRec,
    p: &PullRec,
    c: &RepoContent,
) -> Value {
    let mut v = pull(base, world, r, i, p);
    let commits: Vec<&CommitRec> = p.commits.iter().filter_map(|s| c.commits.get(s)).collect();
    let files: std::collections::BTreeSet<&str> = commits
        .iter()
        .flat_map(|cm| cm.files.iter().map(|f| f.filename.as_str()))
        .collect();
    let merged_by = p
        .merge_sha
        .as_ref()
        .and_then(|s| c.commits.get(s))
        .map_or(Value::Null, |cm| user_ref(base, world, &cm.author));
    let mergeable = i.open && !p.merged;
    if let Value::Object(m) = &mut v {
        m.insert("merged".into(), json!(p.merged));
        m.insert("mergeable".into(), json!(mergeable));
        m.insert("rebaseable".into(), json!(mergeable));
        m.insert(
            "mergeable_state".into(),
            json!(if mergeable { "clean" } else { "unknown" }),
        );
        m.insert("merged_by".into(), merged_by);
        m.insert("comments".into(), json!(i.comments.len()));
        m.insert("review_comments".into(), json!(0));
        m.insert("maintainer_can_modify".into(), json!(false));
        m.insert("commits".into(), json!(p.commits.len()));
        m.insert(
            "additions".into(),
            json!(
                commits
                    .iter()
                    .flat_map(|cm| &cm.files)
                    .map(|f| f.additions)
                    .sum::<u64>()
            ),
        );
        m.insert(
            "deletions".into(),
            json!(
                commits
                    .iter()
                    .flat_map(|cm| &cm.files)
                    .map(|f| f.deletions)
                    .sum::<u64>()
            ),
        );
        m.insert("changed_files".into(), json!(files.len()));
    }
    v
}

/// A changed file (`diff-entry`).
pub fn file(base: &str, full: &str, f: &FileRec) -> Value {
    let path = f
        .filename
        .split('/')
        .map(percent)
        .collect::<Vec<_>>()
        .join("/");
    json!({
        "sha": f.sha,
        "filename": f.filename,
        "status": f.status,
        "additions": f.additions,
        "deletions": f.deletions,
        "changes": f.additions + f.deletions,
        "blob_url": format!("https://github.com/{full}/blob/{}/{path}", f.sha),
        "raw_url": format!("https://github.com/{full}/raw/{}/{path}", f.sha),
        "contents_url": format!("{base}/repos/{full}/contents/{path}?ref={}", f.sha),
        "patch": format!("@@ -1,{} +1,{} @@", f.deletions, f.additions),
    })
}
