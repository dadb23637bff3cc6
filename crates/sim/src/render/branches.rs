//! Branches, their summary protection and the full branch protection.

use super::*;

/// A branch as listed (`short-branch`).
pub fn branch(base: &str, full: &str, b: &BranchRec) -> Value {
    json!({
        "name": b.name,
        "commit": {"sha": b.sha, "url": format!("{base}/repos/{full}/commits/{}", b.sha)},
        "protected": b.protection.is_some(),
        "protection": protection_summary(b),
        "protection_url": format!("{base}/repos/{full}/branches/{}/protection", percent(&b.name)),
    })
}

/// What a branch answer says of its protection (`branch-protection`, summarised).
pub(super) fn protection_summary(b: &BranchRec) -> Value {
    let p = b.protection.as_ref();
    let contexts = p
        .and_then(|p| p.get("required_status_checks"))
        .and_then(|c| c.get("contexts"))
        .cloned()
        .unwrap_or_else(|| json!([]));
    let checks = p
        .and_then(|p| p.get("required_status_checks"))
        .filter(|c| !c.is_null());
    json!({
        "enabled": p.is_some(),
        "required_status_checks": {
            "enforcement_level": if checks.is_some() { "non_admins" } else { "off" },
            "contexts": contexts,
            "checks": status_checks(checks),
        },
    })
}

/// `checks` of a status-check requirement: GitHub lists each context with its app (none).
pub(super) fn status_checks(required: Option<&Value>) -> Value {
    let from_checks = required
        .and_then(|r| r.get("checks"))
        .and_then(Value::as_array)
        .cloned();
    match from_checks {
        Some(checks) => Value::Array(checks),
        None => Value::Array(
            required
                .and_then(|r| r.get("contexts"))
                .and_then(Value::as_array)
                .map(|c| {
                    c.iter()
                        .map(|ctx| json!({"context": ctx, "app_id": Value::Null}))
                        .collect()
                })
                .unwrap_or_default(),
        ),
    }
}

/// `GET /repos/{owner}/{repo}/branches/{branch}` (`branch-with-protection`).
pub fn branch_detail(
    base: &str,
    world: &World,
    full: &str,
    b: &BranchRec,
    head: &CommitRec,
) -> Value {
    let mut v = branch(base, full, b);
    if let Value::Object(m) = &mut v {
        m.insert("commit".into(), commit(base, world, full, head, false));
        m.insert(
            "_links".into(),
            json!({
                "self": format!("{base}/repos/{full}/branches/{}", percent(&b.name)),
                "html": format!("https://github.com/{full}/tree/{}", b.name),
            }),
        );
    }
    v
}

/// A branch's protection as stored from `PUT …/protection`, in GitHub's answer shape.
/// `put` selects the PUT answer (`protected-branch`); otherwise the GET one
/// (`branch-protection`). A requirement sent as null is off, and GitHub leaves it out.
pub fn protection(base: &str, full: &str, branch: &str, p: &Value, put: bool) -> Value {
    let url = format!(
        "{base}/repos/{full}/branches/{}/protection",
        percent(branch)
    );
    let flag = |key: &str| json!({"enabled": p.get(key).and_then(Value::as_bool).unwrap_or(false)});
    let mut m = serde_json::Map::new();
    m.insert("url".into(), json!(url));
    if let Some(checks) = p.get("required_status_checks").filter(|c| !c.is_null()) {
        m.insert(
            "required_status_checks".into(),
            json!({
                "url": format!("{url}/required_status_checks"),
                "strict": checks.get("strict").and_then(Value::as_bool).unwrap_or(false),
                "contexts": checks.get("contexts").cloned().unwrap_or_else(|| json!([])),
                "contexts_url": format!("{url}/required_status_checks/contexts"),
                "checks": status_checks(Some(checks)),
            }),
        );
    }
    if let Some(reviews) = p
        .get("required_pull_request_reviews")
        .filter(|r| !r.is_null())
    {
        let b = |key: &str| reviews.get(key).and_then(Value::as_bool).unwrap_or(false);
        m.insert(
            "required_pull_request_reviews".into(),
            json!({
                "url": format!("{url}/required_pull_request_reviews"),
                "dismiss_stale_reviews": b("dismiss_stale_reviews"),
                "require_code_owner_reviews": b("require_code_owner_reviews"),
                "require_last_push_approval": b("require_last_push_approval"),
                "required_approving_review_count": reviews
                    .get("required_approving_review_count")
                    .and_then(Value::as_u64)
                    .unwrap_or(1),
            }),
        );
    }
    if let Some(r) = p.get("restrictions").filter(|r| !r.is_null()) {
        let names = |key: &str| {
            r.get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_else(Vec::<String>::new)
        };
        m.insert(
            "restrictions".into(),
            json!({
                "url": format!("{url}/restrictions"),
                "users_url": format!("{url}/restrictions/users"),
                "teams_url": format!("{url}/restrictions/teams"),
                "apps_url": format!("{url}/restrictions/apps"),
                "users": names("users").iter().map(|l| account(base, l, 0, false)).collect::<Vec<_>>(),
                "teams": [],
                "apps": [],
            }),
        );
    }
    m.insert(
        "enforce_admins".into(),
        json!({
            "url": format!("{url}/enforce_admins"),
            "enabled": p.get("enforce_admins").and_then(Value::as_bool).unwrap_or(false),
        }),
    );
    m.insert(
        "required_signatures".into(),
        json!({"url": format!("{url}/required_signatures"), "enabled": false}),
    );
    for key in [
        "required_linear_history",
        "allow_force_pushes",
        "allow_deletions",
        "block_creations",
        "required_conversation_resolution",
        "lock_branch",
        "allow_fork_syncing",
    ] {
        m.insert(key.into(), flag(key));
    }
    if !put {
        m.insert("enabled".into(), json!(true));
        m.insert("name".into(), json!(branch));
        m.insert("protection_url".into(), json!(url));
    }
    Value::Object(m)
}
