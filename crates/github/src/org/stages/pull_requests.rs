//! Stage 5, `pull_requests`: pull requests with every commit.

use super::connection::*;

// ----------------------------------------------------------------------- 5. pull requests

/// Pull requests newest-updated first (GitHub offers no `since` here: paging stops at the
/// watermark), each with its first 100 commits; the rest by `COMMITS_MORE_QUERY`.
pub(super) const PULLS_QUERY: &str =
    "query($owner: String!, $name: String!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequests(first: $first, after: $after, orderBy: { field: UPDATED_AT, direction: DESC }) {
      nodes {
        id databaseId number title state merged mergedAt headRefName baseRefName headRefOid
        createdAt updatedAt author { login }
        commits(first: 100) {
          nodes { commit { oid message committedDate additions deletions changedFilesIfAvailable } }
          pageInfo { hasNextPage endCursor }
        }
      }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

pub(super) const COMMITS_MORE_QUERY: &str =
    "query($owner: String!, $name: String!, $number: Int!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      id number
      commits(first: $first, after: $after) {
        nodes { commit { oid message committedDate additions deletions changedFilesIfAvailable } }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

pub(super) fn pull_with_commits(
    pr: &Value,
    repo: &RepoScope,
    now: headroom_core::clock::Timestamp,
) -> Vec<Record> {
    let mut out: Vec<Record> = rows::pull_request(pr, repo.github_id, now)
        .into_iter()
        .collect();
    out.extend(
        nodes(pr.get("commits").unwrap_or(&Value::Null))
            .iter()
            .filter_map(|c| commit_of(c, pr, repo, now)),
    );
    out
}

pub(super) fn commit_of(
    commit: &Value,
    pr: &Value,
    repo: &RepoScope,
    now: headroom_core::clock::Timestamp,
) -> Option<Record> {
    rows::pull_request_commit(commit, repo.github_id, rows::int(pr, "number")?, now)
}

pub(super) const PULL_REQUESTS_CONNECTION: RepoConnection = RepoConnection {
    route: route::PULL_REQUESTS,
    query: PULLS_QUERY,
    connection: "pullRequests",
    watermark: Some(Watermark::PullRequests),
    incremental: Incremental::NewestFirst(Watermark::PullRequests),
    map: |n, repo, _, now| pull_with_commits(n, repo, now),
    nested: Some(Nested {
        route: route::COMMITS,
        field: "commits",
        parent: "pullRequest",
        query: COMMITS_MORE_QUERY,
        map: commit_of,
    }),
};

connection_stage!(
    /// Stage 5: Pull requests with every commit.
    PullRequestsStage,
    PULL_REQUESTS_CONNECTION
);
