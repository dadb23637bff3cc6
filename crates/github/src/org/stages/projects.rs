//! Stage 3, `projects`: projects (v2) linked to each repository, then the organization's unlinked ones.

use super::connection::*;

pub(super) const PROJECTS_QUERY: &str = concat!(
    "query($owner: String!, $name: String!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    projectsV2(first: $first, after: $after) {
      nodes {
        id number title closed createdAt
        views(first: 20) { nodes { id name number layout } }
        items(first: 100) {
          totalCount
          nodes { ",
    project_item_fields!(),
    " }
          pageInfo { hasNextPage endCursor }
        }
      }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}",
);

pub(super) const PROJECT_ITEMS_QUERY: &str = concat!(
    "query($owner: String!, $name: String!, $number: Int!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    projectV2(number: $number) {
      id number
      items(first: $first, after: $after) {
        nodes { ",
    project_item_fields!(),
    " }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}",
);

pub(super) fn project_with_items(
    node: &Value,
    org: i64,
    now: headroom_core::clock::Timestamp,
) -> Vec<Record> {
    let Some(project) = rows::project(node, org, now) else {
        return Vec::new();
    };
    let items = node.get("items").unwrap_or(&Value::Null);
    let mut out = vec![project];
    out.extend(
        nodes(items)
            .iter()
            .filter_map(|i| rows::project_item(i, node, now)),
    );
    out
}

/// The organization's projects, listed with only what tells whether a repository links them.
pub(super) const ORG_PROJECTS_QUERY: &str = "query($login: String!, $first: Int!, $after: String) {
  organization(login: $login) {
    projectsV2(first: $first, after: $after) {
      nodes { number repositories(first: 1) { totalCount } }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

/// One organization project with its views and a page of its items.
pub(super) const ORG_PROJECT_QUERY: &str = concat!(
    "query($login: String!, $number: Int!, $first: Int!, $after: String) {
  organization(login: $login) {
    projectV2(number: $number) {
      id number title closed createdAt
      views(first: 20) { nodes { id name number layout } }
      items(first: $first, after: $after) {
        totalCount
        nodes { ",
    project_item_fields!(),
    " }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}",
);

/// The scope of the projects stage that covers the organization's own listing.
pub const ORG_PROJECTS_SCOPE: &str = "organization";

/// Where the organization's listing of projects stands, stored as its scope's cursor.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct OrgProjectsCursor {
    /// The listing page to ask for next (`Some("")` for the first); `None` once listed.
    next: Option<String>,
    /// Projects linked to no repository, listed but not yet collected (by number).
    pending: Vec<i64>,
    /// Where the first pending project's items continue.
    items_after: Option<String>,
}

/// Projects linked to no repository are listed only under their organization: the
/// per-repository pass cannot see them. This pass lists the organization's projects (one
/// cheap page per 50) and collects, with views and every item, those no repository links.
pub(super) async fn collect_unlinked_projects(
    ctx: &StageCtx<'_>,
    size: &PageSize,
) -> Result<(), StageError> {
    let Some(stored) = repo_cursor(ctx, ORG_PROJECTS_SCOPE).await? else {
        return Ok(());
    };
    let mut cursor: OrgProjectsCursor = match stored {
        Some(text) => serde_json::from_str(&text)
            .map_err(|e| StageError::Permanent(format!("unreadable cursor {text:?}: {e}")))?,
        None => OrgProjectsCursor {
            next: Some(String::new()),
            ..OrgProjectsCursor::default()
        },
    };
    let login = ctx.target().to_owned();
    let org_id = organization_id(ctx).await?;
    loop {
        let records = if let Some(number) = cursor.pending.first().copied() {
            let after = cursor.items_after.clone();
            let data = gql::query(ctx, size, route::PROJECTS, ORG_PROJECT_QUERY, |_| {
                json!({ "login": login, "number": number, "first": NESTED_PAGE, "after": after })
            })
            .await?;
            let project = data
                .get("organization")
                .and_then(|o| o.get("projectV2"))
                .filter(|p| !p.is_null());
            let items = project.and_then(|p| p.get("items")).unwrap_or(&Value::Null);
            let now = ctx.now();
            let records = match project {
                Some(p) if cursor.items_after.is_none() => project_with_items(p, org_id, now),
                Some(p) => nodes(items)
                    .iter()
                    .filter_map(|i| rows::project_item(i, p, now))
                    .collect(),
                // Deleted since it was listed: nothing to store.
                None => Vec::new(),
            };
            cursor.items_after = next_cursor(items);
            if cursor.items_after.is_none() {
                cursor.pending.remove(0);
            }
            records
        } else if let Some(after) = cursor.next.clone() {
            let after = (!after.is_empty()).then_some(after);
            let data = gql::query(
                ctx,
                size,
                route::PROJECTS,
                ORG_PROJECTS_QUERY,
                |first| json!({ "login": login, "first": first, "after": after }),
            )
            .await?;
            let listing = data
                .get("organization")
                .and_then(|o| o.get("projectsV2"))
                .unwrap_or(&Value::Null);
            cursor.pending.extend(
                nodes(listing)
                    .iter()
                    .filter(|p| gql::count_at(p, &["repositories", "totalCount"]) == 0)
                    .filter_map(|p| rows::int(p, "number")),
            );
            cursor.next = next_cursor(listing);
            Vec::new()
        } else {
            ctx.finish_scope(ORG_PROJECTS_SCOPE, None).await?;
            return Ok(());
        };
        let text =
            serde_json::to_string(&cursor).map_err(|e| StageError::Permanent(e.to_string()))?;
        ctx.write_page(ORG_PROJECTS_SCOPE, &records, Some(text), false, None)
            .await?;
    }
}

/// Stage 3: Projects (v2) linked to every repository, with their views (the boards, in the
/// project's raw JSON) and every item (its own table, followed past 100); then the
/// organization's projects that no repository links.
#[derive(Debug)]
pub struct ProjectsStage {
    decl: StageDecl,
    size: PageSize,
    nested: PageSize,
}

impl ProjectsStage {
    /// The stage.
    pub fn new(decl: StageDecl) -> Self {
        Self {
            decl,
            size: PageSize::new(MIN_PAGE, MAX_PAGE),
            nested: PageSize::new(MIN_PAGE, NESTED_PAGE),
        }
    }
}

#[async_trait]
impl Stage for ProjectsStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        collect_per_repository(ctx, &self.size, &self.nested, &REPOSITORY_PROJECTS).await?;
        collect_unlinked_projects(ctx, &self.size).await
    }
}

pub(super) const REPOSITORY_PROJECTS: RepoConnection = RepoConnection {
    route: route::PROJECTS,
    query: PROJECTS_QUERY,
    connection: "projectsV2",
    watermark: None,
    incremental: Incremental::Full,
    map: |n, _, org, now| project_with_items(n, org, now),
    nested: Some(Nested {
        route: route::PROJECTS,
        field: "items",
        parent: "projectV2",
        query: PROJECT_ITEMS_QUERY,
        map: |c, parent, _, now| rows::project_item(c, parent, now),
    }),
};
