//! Commits: the Git data API's and the REST commit with its files.

use super::*;

/// A commit's tree sha.
pub(super) fn tree_sha(c: &CommitRec) -> String {
    crate::world::tree_sha(&c.tree)
}

/// A commit of the Git data API (`git-commit`).
pub fn git_commit(base: &str, world: &World, full: &str, c: &CommitRec) -> Value {
    let person = json!({
        "name": world.user(&c.author).and_then(|u| u.name.clone()).unwrap_or_else(|| c.author.clone()),
        "email": format!("{}@users.noreply.github.com", c.author),
        "date": ts(c.date),
    });
    let tree = tree_sha(c);
    json!({
        "sha": c.sha,
        "node_id": format!("C_{}", &c.sha[..16.min(c.sha.len())]),
        "url": format!("{base}/repos/{full}/git/commits/{}", c.sha),
        "html_url": format!("https://github.com/{full}/commit/{}", c.sha),
        "author": person.clone(),
        "committer": person,
        "message": c.message,
        "tree": {"sha": tree, "url": format!("{base}/repos/{full}/git/trees/{tree}")},
        "parents": c.parents.iter().map(|p| json!({
            "sha": p,
            "url": format!("{base}/repos/{full}/git/commits/{p}"),
            "html_url": format!("https://github.com/{full}/commit/{p}"),
        })).collect::<Vec<_>>(),
        "verification": {
            "verified": false, "reason": "unsigned", "signature": Value::Null,
            "payload": Value::Null, "verified_at": Value::Null,
        },
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
    let api = format!("{base}/repos/{full}/commits/{}", c.sha);
    let tree = tree_sha(c);
    let mut v = json!({
        "sha": c.sha,
        "node_id": format!("C_{}", &c.sha[..16.min(c.sha.len())]),
        "url": api,
        "html_url": format!("https://github.com/{full}/commit/{}", c.sha),
        "comments_url": format!("{api}/comments"),
        "commit": {
            "url": format!("{base}/repos/{full}/git/commits/{}", c.sha),
            "author": person.clone(),
            "committer": person,
            "message": c.message,
            "tree": {"sha": tree, "url": format!("{base}/repos/{full}/git/trees/{tree}")},
            "comment_count": 0,
            "verification": {
                "verified": false, "reason": "unsigned", "signature": Value::Null,
                "payload": Value::Null, "verified_at": Value::Null,
            },
        },
        "author": user_ref(base, world, &c.author),
        "committer": user_ref(base, world, &c.author),
        "parents": c.parents.iter().map(|p| json!({
            "sha": p,
            "url": format!("{base}/repos/{full}/commits/{p}"),
            "html_url": format!("https://github.com/{full}/commit/{p}"),
        })).collect::<Vec<_>>(),
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
