//! Stage 1, `org`: the organization, its members with their roles, and its teams.

use super::connection::*;

// ---------------------------------------------------------------------------------- 1. org

pub(super) const ORG_QUERY: &str = "query($login: String!) {
  organization(login: $login) { id databaseId login name }
  rateLimit { limit cost remaining used resetAt }
}";

pub(super) const MEMBERS_QUERY: &str = "query($login: String!, $first: Int!, $after: String) {
  organization(login: $login) {
    membersWithRole(first: $first, after: $after) {
      edges { role node { id databaseId login name } }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

pub(super) const TEAMS_QUERY: &str = "query($login: String!, $first: Int!, $after: String) {
  organization(login: $login) {
    teams(first: $first, after: $after) {
      nodes { id databaseId name slug description members(first: 1) { totalCount } }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

/// Stage 1: The organization, its members (with roles) and its teams. Once per run; its cursor
/// walks `members:<after>` then `teams:<after>` then `end`.
#[derive(Debug)]
pub struct OrgStage {
    decl: StageDecl,
    size: PageSize,
}

impl OrgStage {
    /// The stage.
    pub fn new(decl: StageDecl) -> Self {
        Self {
            decl,
            size: PageSize::new(MIN_PAGE, MAX_PAGE),
        }
    }
}

#[async_trait]
impl Stage for OrgStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        let login = ctx.target().to_owned();
        let mut cursor = ctx.checkpoint("").await?.and_then(|c| c.page_cursor);
        loop {
            match cursor.as_deref() {
                None => {
                    let data = gql::query(
                        ctx,
                        &self.size,
                        route::ORGANIZATION,
                        ORG_QUERY,
                        |_| json!({ "login": login }),
                    )
                    .await?;
                    let org = data
                        .get("organization")
                        .filter(|o| !o.is_null())
                        .ok_or_else(|| {
                            StageError::Permanent(format!("organization {login} not found"))
                        })?;
                    let next = "members:".to_owned();
                    ctx.write_page(
                        "",
                        &[rows::organization(org, &login, ctx.now())],
                        Some(next.clone()),
                        false,
                        None,
                    )
                    .await?;
                    cursor = Some(next);
                }
                Some(c) if c.starts_with("members:") || c.starts_with("teams:") => {
                    let (phase, after) = c.split_once(':').unwrap_or((c, ""));
                    let after = (!after.is_empty()).then(|| after.to_owned());
                    let members = phase == "members";
                    let (query, field) = if members {
                        (MEMBERS_QUERY, "membersWithRole")
                    } else {
                        (TEAMS_QUERY, "teams")
                    };
                    let data = gql::query(
                        ctx,
                        &self.size,
                        route::ORGANIZATION,
                        query,
                        |first| json!({ "login": login, "first": first, "after": after }),
                    )
                    .await?;
                    let connection = data
                        .get("organization")
                        .and_then(|o| o.get(field))
                        .unwrap_or(&Value::Null);
                    let org_id = organization_id(ctx).await?;
                    let now = ctx.now();
                    let records: Vec<Record> = if members {
                        connection
                            .get("edges")
                            .and_then(Value::as_array)
                            .map_or(&[][..], Vec::as_slice)
                            .iter()
                            .filter_map(|e| rows::member(e, org_id, now))
                            .collect()
                    } else {
                        nodes(connection)
                            .iter()
                            .filter_map(|n| rows::team(n, org_id, now))
                            .collect()
                    };
                    let next = match (next_cursor(connection), members) {
                        (Some(after), _) => format!("{phase}:{after}"),
                        (None, true) => "teams:".to_owned(),
                        (None, false) => END.to_owned(),
                    };
                    ctx.write_page("", &records, Some(next.clone()), false, None)
                        .await?;
                    cursor = Some(next);
                }
                Some(_) => return Ok(()),
            }
        }
    }
}
