//! GitLab's JSON, read into the contract's types.

use headroom_core::provider::{Branch, ProviderError, PullRequest, PullState, RepoRef, Repository};
use serde_json::Value;

fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn undecodable(what: &str) -> ProviderError {
    ProviderError::Transient(format!("GitLab's {what} did not decode"))
}

/// A project (`GET /projects/:id`, `POST /projects`).
pub(crate) fn project(v: &Value) -> Result<Repository, ProviderError> {
    let repo =
        RepoRef::parse(&text(v, "path_with_namespace")).ok_or_else(|| undecodable("project"))?;
    Ok(Repository {
        id: v
            .get("id")
            .and_then(Value::as_u64)
            .ok_or_else(|| undecodable("project"))?,
        repo,
        default_branch: v
            .get("default_branch")
            .and_then(Value::as_str)
            .map(str::to_owned),
        private: v.get("visibility").and_then(Value::as_str) != Some("public"),
        web_url: text(v, "web_url"),
    })
}

/// A branch (`GET`/`POST /projects/:id/repository/branches`).
pub(crate) fn branch(v: &Value) -> Result<Branch, ProviderError> {
    let sha = v
        .pointer("/commit/id")
        .and_then(Value::as_str)
        .ok_or_else(|| undecodable("branch"))?;
    Ok(Branch {
        name: text(v, "name"),
        sha: sha.to_owned(),
        protected: v.get("protected").and_then(Value::as_bool).unwrap_or(false),
    })
}

/// A merge request (`GET`/`POST /projects/:id/merge_requests`).
pub(crate) fn merge_request(v: &Value) -> Result<PullRequest, ProviderError> {
    let state = match v.get("state").and_then(Value::as_str) {
        Some("opened") => PullState::Open,
        Some("merged") => PullState::Merged,
        _ => PullState::Closed,
    };
    Ok(PullRequest {
        number: v
            .get("iid")
            .and_then(Value::as_u64)
            .ok_or_else(|| undecodable("merge request"))?,
        title: text(v, "title"),
        head: text(v, "source_branch"),
        base: text(v, "target_branch"),
        state,
        web_url: text(v, "web_url"),
    })
}
