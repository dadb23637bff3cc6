//! GraphQL at `POST /graphql`: a real engine (async-graphql) over a schema that is a subset of
//! GitHub's for what an organization sync needs (types, fields, nullability and arguments
//! exactly GitHub's; `tests/schema.rs` compares them), GitHub's validation of every document
//! against its published schema before anything runs, and GitHub's cost rules computed from
//! the query before it runs.

mod commit;
mod cost;
mod errors;
mod issue;
mod owner;
mod page;
mod project;
mod pull;
mod query;
mod repository;
mod types;
mod validate;

pub use commit::*;
pub use cost::*;
pub use errors::*;
pub use issue::*;
pub use owner::*;
pub use page::*;
pub use project::*;
pub use pull::*;
pub use query::*;
pub use repository::*;
pub use types::*;
pub use validate::*;

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use async_graphql::parser::types::{
    DocumentOperations, ExecutableDocument, FragmentDefinition, OperationType, Selection,
    SelectionSet,
};
use async_graphql::parser::{Positioned, parse_query};
use async_graphql::{
    Context, EmptyMutation, EmptySubscription, Enum, ErrorExtensions, ID, InputObject, Interface,
    Name, Object, Schema, SimpleObject, Union,
};
use headroom_core::clock::Timestamp;

use crate::render::ts;
use crate::scenario::Scenario;
use crate::world::{
    CommentRec, CommitRec, IssueRec, ProjectItemContent, ProjectItemRec, ProjectRec, PullRec,
    RepoRec, TeamRec, UserRec, World,
};

/// The `rateLimit` answer of one request.
#[derive(Debug, Clone, Copy)]
pub struct RateInfo {
    /// Points per window.
    pub limit: u64,
    /// This query's cost.
    pub cost: u64,
    /// Remaining after it.
    pub remaining: u64,
    /// Used after it.
    pub used: u64,
    /// Window reset.
    pub reset_at: Timestamp,
    /// Nodes requested.
    pub node_count: u64,
}

/// Per-request context handed to resolvers.
#[derive(Debug, Clone)]
pub struct GqlCtx {
    /// The data.
    pub world: Arc<Mutex<World>>,
    /// The viewer's login (None for installations).
    pub viewer: Option<String>,
    /// The rate limit after this query; `None` where rate limiting is off (Enterprise Server).
    pub rate: Option<RateInfo>,
    /// API root for URLs.
    pub base: String,
    /// The scenario played (some refuse parts of an answer).
    pub scenario: Scenario,
}

fn with_world<R>(ctx: &Context<'_>, f: impl FnOnce(&mut World) -> R) -> async_graphql::Result<R> {
    let g = ctx.data::<GqlCtx>()?;
    let mut w = g.world.lock().map_err(|_| {
        async_graphql::Error::new("Something went wrong while executing your query.")
    })?;
    Ok(f(&mut w))
}

fn not_found(message: String) -> async_graphql::Error {
    async_graphql::Error::new(message).extend_with(|_, e| e.set("type", "NOT_FOUND"))
}

fn forbidden(message: &str) -> async_graphql::Error {
    async_graphql::Error::new(message).extend_with(|_, e| e.set("type", "FORBIDDEN"))
}

/// GitHub's message for a token not authorized for an organization that enforces SAML SSO.
pub const SAML_MESSAGE: &str = "Resource protected by organization SAML enforcement. You must grant your Personal Access token access to this organization.";

/// `no_read_org`: the organization's members and teams need `read:org`, which the token
/// lacks. GitHub's wording depends on the kind of token.
fn refuse_without_read_org(ctx: &Context<'_>) -> async_graphql::Result<()> {
    let g = ctx.data::<GqlCtx>()?;
    if g.scenario != Scenario::NoReadOrg {
        return Ok(());
    }
    Err(forbidden(if g.viewer.is_some() {
        "Resource not accessible by personal access token"
    } else {
        "Resource not accessible by integration"
    }))
}

/// `saml_enforced`: the contents of the organization's private repositories are protected.
fn refuse_under_saml(ctx: &Context<'_>, repo: &RepoRec) -> async_graphql::Result<()> {
    let g = ctx.data::<GqlCtx>()?;
    if g.scenario != Scenario::SamlEnforced || !repo.private {
        return Ok(());
    }
    let of_org = with_world(ctx, |w| repo.owner.eq_ignore_ascii_case(&w.org.login))?;
    if of_org {
        Err(forbidden(SAML_MESSAGE))
    } else {
        Ok(())
    }
}

/// `repositories_gone`: every fourth of the organization's repositories, in listing order.
fn gone_since_listed(w: &World, scenario: Scenario, repo: &RepoRec) -> bool {
    scenario == Scenario::RepositoriesGone
        && w.org_repos()
            .iter()
            .position(|r| r.id == repo.id)
            .is_some_and(|i| i % 4 == 3)
}

/// The GitHub schema subset.
pub type GitHubSchema = Schema<Query, EmptyMutation, EmptySubscription>;

/// Builds the schema.
pub fn schema() -> GitHubSchema {
    Schema::build(Query, EmptyMutation, EmptySubscription)
        .limit_depth(64)
        .finish()
}
