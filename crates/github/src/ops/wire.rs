//! GitHub's JSON, read into the contract's types.

use headroom_core::provider::{Branch, ProviderError, PullRequest, PullState, RepoRef, Repository};
use serde_json::Value;

fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn undecodable(what: &str) -> ProviderError {
    ProviderError::Transient(format!("GitHub's {what} did not decode"))
}

/// A repository (`GET /repos/{owner}/{repo}`, `POST /user/repos`).
pub(crate) fn repository(v: &Value) -> Result<Repository, ProviderError> {
    let full_name = text(v, "full_name");
    let repo = RepoRef::parse(&full_name).ok_or_else(|| undecodable("repository"))?;
    Ok(Repository {
        id: v
            .get("id")
            .and_then(Value::as_u64)
            .ok_or_else(|| undecodable("repository"))?,
        repo,
        default_branch: v
            .get("default_branch")
            .and_then(Value::as_str)
            .map(str::to_owned),
        private: v.get("private").and_then(Value::as_bool).unwrap_or(false),
        web_url: text(v, "html_url"),
    })
}

/// A branch of `GET /repos/{owner}/{repo}/branches`.
pub(crate) fn branch(v: &Value) -> Result<Branch, ProviderError> {
    let sha = v
        .pointer("/commit/sha")
        .and_then(Value::as_str)
        .ok_or_else(|| undecodable("branch"))?;
    Ok(Branch {
        name: text(v, "name"),
        sha: sha.to_owned(),
        protected: v.get("protected").and_then(Value::as_bool).unwrap_or(false),
    })
}

/// A pull request (`GET`/`POST /repos/{owner}/{repo}/pulls`).
pub(crate) fn pull_request(v: &Value) -> Result<PullRequest, ProviderError> {
    let state = match (
        v.get("state").and_then(Value::as_str),
        v.get("merged_at").is_some_and(|m| !m.is_null())
            || v.get("merged") == Some(&Value::Bool(true)),
    ) {
        (_, true) => PullState::Merged,
        (Some("open"), _) => PullState::Open,
        _ => PullState::Closed,
    };
    Ok(PullRequest {
        number: v
            .get("number")
            .and_then(Value::as_u64)
            .ok_or_else(|| undecodable("pull request"))?,
        title: text(v, "title"),
        head: v
            .pointer("/head/ref")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        base: v
            .pointer("/base/ref")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        state,
        web_url: text(v, "html_url"),
    })
}

/// The commit sha a ref points to (`GET /repos/{owner}/{repo}/git/ref/heads/{branch}`).
pub(crate) fn ref_sha(v: &Value) -> Result<String, ProviderError> {
    v.pointer("/object/sha")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| undecodable("ref"))
}
