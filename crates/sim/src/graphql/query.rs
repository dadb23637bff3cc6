//! The root `Query`: entry points into organizations, repositories, users, nodes and
//! the rate limit.

use super::*;

/// The root query.
#[derive(Debug, Clone, Copy)]
pub struct Query;

pub(super) fn gid(prefix: &str, id: u64) -> ID {
    ID(b64(format!("{prefix}:{id}").as_bytes()))
}

#[Object]
impl Query {
    /// The authenticated user.
    async fn viewer(&self, ctx: &Context<'_>) -> async_graphql::Result<User> {
        let g = ctx.data::<GqlCtx>()?;
        let login = g.viewer.clone().ok_or_else(|| {
            async_graphql::Error::new("Resource not accessible by integration")
                .extend_with(|_, e| e.set("type", "FORBIDDEN"))
        })?;
        with_world(ctx, |w| w.user(&login).cloned())?
            .map(User)
            .ok_or_else(|| {
                not_found(format!(
                    "Could not resolve to a User with the login of '{login}'."
                ))
            })
    }

    /// The client's rate limit after this query.
    async fn rate_limit(
        &self,
        ctx: &Context<'_>,
        dry_run: Option<bool>,
    ) -> async_graphql::Result<Option<RateLimit>> {
        let _ = dry_run;
        let Some(r) = ctx.data::<GqlCtx>()?.rate else {
            return Ok(None);
        };
        let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        Ok(Some(RateLimit {
            limit: n(r.limit),
            cost: n(r.cost),
            remaining: n(r.remaining),
            used: n(r.used),
            reset_at: DateTime::at(r.reset_at),
            node_count: n(r.node_count),
        }))
    }

    /// An organization by login.
    async fn organization(
        &self,
        ctx: &Context<'_>,
        login: String,
    ) -> async_graphql::Result<Option<Organization>> {
        let found = with_world(ctx, |w| {
            w.user(&login).filter(|u| u.is_org && !u.deleted).cloned()
        })?;
        match found {
            Some(rec) => Ok(Some(Organization(rec))),
            None => Err(not_found(format!(
                "Could not resolve to an Organization with the login of '{login}'."
            ))),
        }
    }

    /// A repository by owner and name (renames are followed).
    async fn repository(
        &self,
        ctx: &Context<'_>,
        owner: String,
        name: String,
        follow_renames: Option<bool>,
    ) -> async_graphql::Result<Option<Repository>> {
        let follow = follow_renames.unwrap_or(true);
        let scenario = ctx.data::<GqlCtx>()?.scenario;
        let found = with_world(ctx, |w| {
            w.repo(&owner, &name)
                .or_else(|| {
                    if follow {
                        w.renamed_repo(&owner, &name)
                    } else {
                        None
                    }
                })
                .filter(|r| !r.deleted && !gone_since_listed(w, scenario, r))
                .cloned()
        })?;
        match found {
            Some(r) => Ok(Some(Repository(r))),
            None => Err(not_found(format!(
                "Could not resolve to a Repository with the name '{owner}/{name}'."
            ))),
        }
    }

    /// A user by login.
    async fn user(&self, ctx: &Context<'_>, login: String) -> async_graphql::Result<Option<User>> {
        let found = with_world(ctx, |w| w.user(&login).filter(|u| !u.deleted).cloned())?;
        match found {
            Some(u) => Ok(Some(User(u))),
            None => Err(not_found(format!(
                "Could not resolve to a User with the login of '{login}'."
            ))),
        }
    }
}
