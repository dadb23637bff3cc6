//! Stage 2, `repositories`: the organization's repositories, then each one's issues.

use super::connection::*;

// ------------------------------------------------------------------------ 2. repositories

/// `owner` is the `RepositoryOwner` interface, which has no `databaseId` of its own: it is
/// asked of each type that can own a repository (GitHub refuses the whole query otherwise).
/// The organization's own fields are stage `org`'s first query's: the listing stores the
/// organization itself when it is not stored yet, so it need not wait for stage `org`.
pub(super) const REPOS_QUERY: &str = "query($login: String!, $first: Int!, $after: String) {
  organization(login: $login) {
    id databaseId login name
    repositories(first: $first, after: $after) {
      nodes {
        id databaseId name nameWithOwner isPrivate description url createdAt updatedAt
        owner { login ... on Organization { databaseId } ... on User { databaseId } }
        defaultBranchRef { name }
      }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

/// Issues oldest-updated first, since the watermark: an issue updated while the pages are
/// read moves behind the cursor, where a later page (or the next run) finds it.
pub(super) const ISSUES_QUERY: &str = "query($owner: String!, $name: String!, $first: Int!, $after: String, $since: DateTime) {
  repository(owner: $owner, name: $name) {
    issues(first: $first, after: $after, filterBy: { since: $since }, orderBy: { field: UPDATED_AT, direction: ASC }) {
      nodes { id databaseId number title state createdAt updatedAt author { login } }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

/// Stage 2's second half: each repository's issues.
pub(super) const ISSUES_CONNECTION: RepoConnection = RepoConnection {
    route: route::ISSUES,
    query: ISSUES_QUERY,
    connection: "issues",
    watermark: Some(Watermark::Issues),
    incremental: Incremental::Since(Watermark::Issues),
    map: |n, repo, _, now| rows::issue(n, repo.github_id, now).into_iter().collect(),
    nested: None,
};

/// Stage 2: The organization's repositories, then each repository's issues. Its per-repository
/// checkpoints are the list of repositories every later stage works on.
#[derive(Debug)]
pub struct RepositoriesStage {
    decl: StageDecl,
    size: PageSize,
}

impl RepositoriesStage {
    /// The stage.
    pub fn new(decl: StageDecl) -> Self {
        Self {
            decl,
            size: PageSize::new(MIN_PAGE, MAX_PAGE),
        }
    }
}

#[async_trait]
impl Stage for RepositoriesStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        let login = ctx.target().to_owned();
        let mut org_id = ctx.store().organization_id(&login).await?;
        let mut cursor = ctx.checkpoint("").await?.and_then(|c| c.page_cursor);
        while cursor.as_deref() != Some(LISTED) {
            let data = gql::query(
                ctx,
                &self.size,
                route::REPOSITORIES,
                REPOS_QUERY,
                |first| json!({ "login": login, "first": first, "after": cursor }),
            )
            .await?;
            let organization = data
                .get("organization")
                .filter(|o| !o.is_null())
                .ok_or_else(|| StageError::Permanent(format!("organization {login} not found")))?;
            let org_id = match org_id {
                Some(id) => id,
                None => {
                    let id = store_organization(ctx, organization, &login).await?;
                    *org_id.insert(id)
                }
            };
            let connection = organization.get("repositories").unwrap_or(&Value::Null);
            let now = ctx.now();
            let records: Vec<Record> = nodes(connection)
                .iter()
                .filter_map(|n| rows::repository(n, org_id, now))
                .collect();
            let scopes: Vec<RepoScope> = records
                .iter()
                .filter_map(|r| match r {
                    Record::Repository(r) => Some(RepoScope {
                        github_id: r.github_id,
                        full_name: r.full_name.clone(),
                    }),
                    _ => None,
                })
                .collect();
            let next = next_cursor(connection).unwrap_or_else(|| LISTED.to_owned());
            ctx.write_listing_page(&records, next.clone(), &scopes)
                .await?;
            cursor = Some(next);
        }
        collect_per_repository(ctx, &self.size, &self.size, &ISSUES_CONNECTION).await
    }
}

/// Stores the organization as the listing read it (its fields without the connection), the
/// row stage `org` also writes: the listing's repositories refer to it. Returns its id.
async fn store_organization(
    ctx: &StageCtx<'_>,
    organization: &Value,
    login: &str,
) -> Result<i64, StageError> {
    let mut fields = organization.clone();
    if let Some(object) = fields.as_object_mut() {
        object.remove("repositories");
    }
    ctx.write_shared_rows(&[rows::organization(&fields, login, ctx.now())])
        .await?;
    organization_id(ctx).await
}
