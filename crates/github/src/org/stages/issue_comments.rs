//! Stage 4, `issue_comments`: every comment of every issue.

use super::connection::*;

// ---------------------------------------------------------------------- 4. issue comments

/// Issues updated since the watermark (a new comment updates its issue), each with its
/// first 100 comments; issues with more are followed with `COMMENTS_MORE_QUERY`.
pub(super) const COMMENTS_QUERY: &str =
    "query($owner: String!, $name: String!, $first: Int!, $after: String, $since: DateTime) {
  repository(owner: $owner, name: $name) {
    issues(first: $first, after: $after, filterBy: { since: $since }, orderBy: { field: UPDATED_AT, direction: ASC }) {
      nodes {
        id number
        comments(first: 100) {
          nodes { id databaseId createdAt author { login } body }
          pageInfo { hasNextPage endCursor }
        }
      }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

pub(super) const COMMENTS_MORE_QUERY: &str =
    "query($owner: String!, $name: String!, $number: Int!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    issue(number: $number) {
      id number
      comments(first: $first, after: $after) {
        nodes { id databaseId createdAt author { login } body }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

pub(super) fn comment_of(
    comment: &Value,
    issue: &Value,
    repo: &RepoScope,
    now: headroom_core::clock::Timestamp,
) -> Option<Record> {
    rows::issue_comment(comment, repo.github_id, rows::int(issue, "number")?, now)
}

pub(super) const ISSUE_COMMENTS_CONNECTION: RepoConnection = RepoConnection {
    route: route::ISSUE_COMMENTS,
    query: COMMENTS_QUERY,
    connection: "issues",
    watermark: Some(Watermark::IssueComments),
    incremental: Incremental::Since(Watermark::IssueComments),
    map: |n, repo, _, now| {
        nodes(n.get("comments").unwrap_or(&Value::Null))
            .iter()
            .filter_map(|c| comment_of(c, n, repo, now))
            .collect()
    },
    nested: Some(Nested {
        route: route::ISSUE_COMMENTS,
        field: "comments",
        parent: "issue",
        query: COMMENTS_MORE_QUERY,
        map: comment_of,
    }),
};

connection_stage!(
    /// Stage 4: Comments of every issue: the first 100 with each page of issues, the rest
    /// by follow-up queries per issue.
    IssueCommentsStage,
    ISSUE_COMMENTS_CONNECTION
);
