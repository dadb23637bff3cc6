//! Issues, their comments, labels and reactions.

use super::*;

/// A label's id: stable per repository and name, as GitHub's are.
pub(super) fn label_id(full: &str, name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in full.bytes().chain([0]).chain(name.bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h % 9_000_000_000 + 1_000_000_000
}

pub(super) fn labels(base: &str, full: &str, names: &[String]) -> Value {
    Value::Array(
        names
            .iter()
            .map(|n| {
                let id = label_id(full, n);
                json!({
                    "id": id,
                    "node_id": node_id("LA", id),
                    "url": format!("{base}/repos/{full}/labels/{}", percent(n)),
                    "name": n,
                    // A string: pull-request-simple's labels require one.
                    "description": "",
                    "color": "ededed",
                    "default": false,
                })
            })
            .collect(),
    )
}

/// A path segment, percent-encoded (label names have spaces).
pub(super) fn percent(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

pub(super) fn reactions(url: String) -> Value {
    json!({
        "url": url, "total_count": 0, "+1": 0, "-1": 0, "laugh": 0, "confused": 0,
        "heart": 0, "hooray": 0, "eyes": 0, "rocket": 0,
    })
}

/// An issue (pull requests carry a `pull_request` key, as in `/issues` lists).
pub fn issue(base: &str, world: &World, r: &RepoRec, i: &IssueRec) -> Value {
    let full = r.full_name();
    let api = format!("{base}/repos/{full}/issues/{}", i.number);
    let mut v = json!({
        "id": i.id,
        "node_id": node_id("I", i.id),
        "url": api,
        "repository_url": format!("{base}/repos/{full}"),
        "labels_url": format!("{api}/labels{{/name}}"),
        "comments_url": format!("{api}/comments"),
        "events_url": format!("{api}/events"),
        "html_url": format!("https://github.com/{full}/issues/{}", i.number),
        "number": i.number,
        "state": if i.open { "open" } else { "closed" },
        "state_reason": if i.open { Value::Null } else { json!("completed") },
        "title": i.title,
        "body": i.body,
        "user": user_ref(base, world, &i.user),
        "labels": labels(base, &full, &i.labels),
        "assignee": Value::Null,
        "assignees": [],
        "milestone": Value::Null,
        "locked": false,
        "active_lock_reason": Value::Null,
        "comments": i.comments.len(),
        "created_at": ts(i.created_at),
        "updated_at": ts(i.updated_at),
        "closed_at": if i.open { Value::Null } else { json!(ts(i.updated_at)) },
        "author_association": "MEMBER",
        "timeline_url": format!("{api}/timeline"),
        "reactions": reactions(format!("{api}/reactions")),
    });
    if i.pull.is_some()
        && let Value::Object(m) = &mut v
    {
        m.insert(
            "pull_request".into(),
            json!({
                "url": format!("{base}/repos/{full}/pulls/{}", i.number),
                "html_url": format!("https://github.com/{full}/pull/{}", i.number),
                "diff_url": format!("https://github.com/{full}/pull/{}.diff", i.number),
                "patch_url": format!("https://github.com/{full}/pull/{}.patch", i.number),
                "merged_at": Value::Null,
            }),
        );
    }
    v
}

/// An issue comment.
pub fn comment(base: &str, world: &World, r: &RepoRec, issue_number: u64, c: &CommentRec) -> Value {
    let full = r.full_name();
    let api = format!("{base}/repos/{full}/issues/comments/{}", c.id);
    json!({
        "id": c.id,
        "node_id": node_id("IC", c.id),
        "url": api,
        "html_url": format!("https://github.com/{full}/issues/{issue_number}#issuecomment-{}", c.id),
        "issue_url": format!("{base}/repos/{full}/issues/{issue_number}"),
        "body": c.body,
        "user": user_ref(base, world, &c.user),
        "created_at": ts(c.created_at),
        "updated_at": ts(c.created_at),
        "author_association": "MEMBER",
        "reactions": reactions(format!("{api}/reactions")),
    })
}
