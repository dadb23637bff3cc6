//! Stage 8, `branches`.

use super::connection::*;

// ----------------------------------------------------------------------------- 8. branches

pub(super) const BRANCHES_QUERY: &str =
    "query($owner: String!, $name: String!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    refs(refPrefix: \"refs/heads/\", first: $first, after: $after) {
      nodes { name target { oid } }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

pub(super) const BRANCHES_CONNECTION: RepoConnection = RepoConnection {
    route: route::BRANCHES,
    query: BRANCHES_QUERY,
    connection: "refs",
    watermark: Some(Watermark::Branches),
    incremental: Incremental::Full,
    map: |n, repo, _, now| rows::branch(n, repo.github_id, now).into_iter().collect(),
    nested: None,
};

connection_stage!(
    /// Stage 8: Branches of every repository.
    BranchesStage,
    BRANCHES_CONNECTION
);
