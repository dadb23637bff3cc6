//! GraphQL at `POST /graphql`: a real engine (async-graphql) over a schema that is a subset of
//! GitHub's for what an organization sync needs (types, fields, nullability and arguments
//! exactly GitHub's; `tests/schema.rs` compares them), GitHub's validation of every document
//! against its published schema before anything runs, and GitHub's cost rules computed from
//! the query before it runs.

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

/// GitHub's published schema (the vendored `schemas/github/schema.graphql`), parsed once.
static GITHUB_SCHEMA: LazyLock<apollo_compiler::validation::Valid<apollo_compiler::Schema>> =
    LazyLock::new(|| {
        const SDL: &str = include_str!("../../../schemas/github/schema.graphql");
        match apollo_compiler::Schema::parse_and_validate(SDL, "github.graphql") {
            Ok(valid) => valid,
            // GitHub's SDL defines two fields of `EnterpriseOwnerInfo` twice, which strict SDL
            // validation refuses; GitHub serves it as it is, and documents validate against
            // it correctly.
            Err(e) => apollo_compiler::validation::Valid::assume_valid(e.partial),
        }
    });

/// GitHub's published GraphQL schema, the one every incoming document is validated against.
pub fn github_schema() -> &'static apollo_compiler::validation::Valid<apollo_compiler::Schema> {
    &GITHUB_SCHEMA
}

/// Validates a document against GitHub's schema, as GitHub does before running anything.
/// `Err` holds the `errors` entries GitHub would answer with: a `message` and its
/// `locations`, worded like GitHub's where the simulator knows GitHub's wording.
pub fn validate(query: &str) -> Result<(), Vec<serde_json::Value>> {
    let Err(e) =
        apollo_compiler::ExecutableDocument::parse_and_validate(github_schema(), query, "query")
    else {
        return Ok(());
    };
    Err(e
        .errors
        .iter()
        .map(|d| {
            let message = github_wording(&d.error.to_string());
            let mut entry = serde_json::json!({ "message": message });
            if let Some(range) = d.line_column_range() {
                entry["locations"] = serde_json::json!([
                    { "line": range.start.line, "column": range.start.column }
                ]);
            }
            entry
        })
        .collect())
}

/// GitHub's wording of a validation message, where it is known; apollo-compiler's otherwise.
fn github_wording(message: &str) -> String {
    // apollo-compiler: "type `RepositoryOwner` does not have a field `databaseId`".
    if let Some(rest) = message.strip_prefix("type `")
        && let Some((ty, rest)) = rest.split_once("` does not have a field `")
        && let Some(field) = rest.strip_suffix('`')
    {
        return format!("Field '{field}' doesn't exist on type '{ty}'");
    }
    message.to_owned()
}

/// The most nodes one call may ask for.
pub const NODE_LIMIT: u64 = 500_000;

/// What a query costs, by GitHub's rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryCost {
    /// Points: requests needed to fill every connection (each connection's parent count
    /// multiplied through), divided by 100, rounded, at least 1.
    pub cost: u64,
    /// Nodes the query may return, at most.
    pub node_count: u64,
    /// The requests before dividing by 100.
    pub requests: u64,
    /// Whether the operation is a mutation.
    pub is_mutation: bool,
}

/// Why a query was refused before running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostError {
    /// GitHub's `errors[].type`, when it has one.
    pub kind: Option<&'static str>,
    /// The message.
    pub message: String,
}

impl CostError {
    fn new(kind: Option<&'static str>, message: String) -> Self {
        Self { kind, message }
    }
}

type Fragments = HashMap<Name, Positioned<FragmentDefinition>>;

struct Walk<'a> {
    fragments: &'a Fragments,
    vars: &'a serde_json::Map<String, serde_json::Value>,
    defaults: HashMap<String, i64>,
    requests: u64,
    nodes: u64,
    visits: u64,
}

/// Fields visited while costing one query, fragments expanded: beyond this the query is
/// refused (nested fragment spreads could otherwise make the walk exponential).
const MAX_VISITS: u64 = 100_000;

impl Walk<'_> {
    fn int_arg(&self, v: &async_graphql_value::Value) -> Option<i64> {
        match v {
            async_graphql_value::Value::Number(n) => n.as_i64(),
            async_graphql_value::Value::Variable(name) => self
                .vars
                .get(name.as_str())
                .and_then(|j| j.as_i64())
                .or_else(|| self.defaults.get(name.as_str()).copied()),
            _ => None,
        }
    }

    fn selection_set(
        &mut self,
        set: &SelectionSet,
        multiplier: u64,
        depth: u32,
    ) -> Result<(), CostError> {
        if depth > 64 {
            return Err(CostError::new(
                None,
                "Query has too many nested fragments or fields.".to_owned(),
            ));
        }
        for item in &set.items {
            self.visits += 1;
            if self.visits > MAX_VISITS {
                return Err(CostError::new(
                    None,
                    "Query is too complex to run.".to_owned(),
                ));
            }
            match &item.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    let name = field.name.node.as_str();
                    let mut size: Option<i64> = None;
                    let mut arg_name = "first";
                    for (arg, value) in &field.arguments {
                        let a = arg.node.as_str();
                        if a == "first" || a == "last" {
                            arg_name = if a == "first" { "first" } else { "last" };
                            size = match self.int_arg(&value.node) {
                                Some(n) => Some(n),
                                None => continue,
                            };
                        }
                    }
                    let mut child = multiplier;
                    if let Some(n) = size {
                        if !(1..=100).contains(&n) {
                            let message = if n > 100 {
                                format!(
                                    "Requesting {n} records on the `{name}` connection exceeds the `{arg_name}` limit of 100 records."
                                )
                            } else {
                                format!(
                                    "`{arg_name}` on the `{name}` connection must be between 1 and 100."
                                )
                            };
                            return Err(CostError::new(Some("EXCESSIVE_PAGINATION"), message));
                        }
                        // Safe: 1..=100.
                        let n = n as u64;
                        self.requests = self.requests.saturating_add(multiplier);
                        child = multiplier.saturating_mul(n);
                        self.nodes = self.nodes.saturating_add(child);
                        if self.nodes > NODE_LIMIT {
                            return Err(CostError::new(
                                Some("MAX_NODE_LIMIT_EXCEEDED"),
                                format!(
                                    "By the time this query traverses to the {name} connection, it is requesting up to {} possible nodes which exceeds the maximum limit of 500,000.",
                                    self.nodes
                                ),
                            ));
                        }
                    }
                    self.selection_set(&field.selection_set.node, child, depth + 1)?;
                }
                Selection::FragmentSpread(spread) => {
                    let name = &spread.node.fragment_name.node;
                    let fragment = self.fragments.get(name).ok_or_else(|| {
                        CostError::new(None, format!("Fragment {name} was used, but not defined"))
                    })?;
                    self.selection_set(&fragment.node.selection_set.node, multiplier, depth + 1)?;
                }
                Selection::InlineFragment(inline) => {
                    self.selection_set(&inline.node.selection_set.node, multiplier, depth + 1)?;
                }
            }
        }
        Ok(())
    }
}

/// Computes GitHub's cost of a query: for every connection (a field with `first` or `last`),
/// the requests needed to fill it are the product of the sizes of the connections above it;
/// their sum divided by 100 and rounded, at least 1, is the cost. The node count is the sum of
/// every connection's size times the sizes above it.
pub fn query_cost(
    query: &str,
    operation_name: Option<&str>,
    variables: &serde_json::Value,
) -> Result<QueryCost, CostError> {
    let doc: ExecutableDocument =
        parse_query(query).map_err(|e| CostError::new(None, format!("Parse error: {e}")))?;
    let op = match &doc.operations {
        DocumentOperations::Single(op) => op,
        DocumentOperations::Multiple(ops) => match operation_name {
            Some(n) => ops
                .get(n)
                .ok_or_else(|| CostError::new(None, format!("Unknown operation named \"{n}\".")))?,
            None => {
                return Err(CostError::new(
                    None,
                    "An operation name is required when the document has several operations."
                        .to_owned(),
                ));
            }
        },
    };
    let empty = serde_json::Map::new();
    let vars = variables.as_object().unwrap_or(&empty);
    let mut defaults = HashMap::new();
    for def in &op.node.variable_definitions {
        if let Some(async_graphql::Value::Number(n)) =
            def.node.default_value.as_ref().map(|d| d.node.clone())
            && let Some(n) = n.as_i64()
        {
            defaults.insert(def.node.name.node.to_string(), n);
        }
    }
    let mut walk = Walk {
        fragments: &doc.fragments,
        vars,
        defaults,
        requests: 0,
        nodes: 0,
        visits: 0,
    };
    walk.selection_set(&op.node.selection_set.node, 1, 0)?;
    // Round half up, as `round()` does for positive numbers.
    let cost = ((walk.requests as f64) / 100.0).round() as u64;
    Ok(QueryCost {
        cost: cost.max(1),
        node_count: walk.nodes,
        requests: walk.requests,
        is_mutation: op.node.ty == OperationType::Mutation,
    })
}

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

// ---------------------------------------------------------------- pagination

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn b64(input: &[u8]) -> String {
    let mut out = String::new();
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn unb64(s: &str) -> Option<Vec<u8>> {
    let mut bits = 0u32;
    let mut nbits = 0;
    let mut out = Vec::new();
    for c in s.bytes().filter(|&c| c != b'=') {
        let v = B64.iter().position(|&x| x == c)? as u32;
        bits = (bits << 6) | v;
        nbits += 6;
        if nbits >= 8 {
            nbits -= 8;
            out.push((bits >> nbits) as u8);
        }
    }
    Some(out)
}

fn cursor(index: usize) -> String {
    b64(format!("cursor:v2:{index}").as_bytes())
}

fn decode_cursor(c: &str) -> Option<usize> {
    let raw = unb64(c)?;
    let s = String::from_utf8(raw).ok()?;
    s.strip_prefix("cursor:v2:")?.parse().ok()
}

/// `pageInfo`.
#[derive(SimpleObject, Clone, Debug)]
pub struct PageInfo {
    end_cursor: Option<String>,
    start_cursor: Option<String>,
    has_next_page: bool,
    has_previous_page: bool,
}

struct Page<T> {
    items: Vec<(String, T)>,
    info: PageInfo,
    total: i32,
}

fn paginate<T: Clone>(
    all: &[T],
    connection: &str,
    first: Option<i32>,
    after: Option<String>,
    last: Option<i32>,
    before: Option<String>,
) -> async_graphql::Result<Page<T>> {
    if first.is_none() && last.is_none() {
        return Err(async_graphql::Error::new(format!(
            "You must provide a `first` or `last` value to properly paginate the `{connection}` connection."
        ))
        .extend_with(|_, e| e.set("type", "MISSING_PAGINATION_BOUNDARIES")));
    }
    for (name, v) in [("first", first), ("last", last)] {
        if let Some(n) = v
            && !(1..=100).contains(&n)
        {
            return Err(async_graphql::Error::new(format!(
                "Requesting {n} records on the `{connection}` connection exceeds the `{name}` limit of 100 records."
            ))
            .extend_with(|_, e| e.set("type", "EXCESSIVE_PAGINATION")));
        }
    }
    let bad_cursor = |c: &str| {
        async_graphql::Error::new(format!("`{c}` does not appear to be a valid cursor."))
            .extend_with(|_, e| e.set("type", "INVALID_CURSOR_ARGUMENTS"))
    };
    let mut start = 0usize;
    let mut end = all.len();
    if let Some(a) = after {
        start = decode_cursor(&a)
            .ok_or_else(|| bad_cursor(&a))?
            .saturating_add(1);
    }
    if let Some(b) = before {
        end = decode_cursor(&b)
            .ok_or_else(|| bad_cursor(&b))?
            .min(all.len());
    }
    start = start.min(end);
    if let Some(n) = first {
        end = end.min(start.saturating_add(n as usize));
    }
    if let Some(n) = last {
        start = start.max(end.saturating_sub(n as usize));
    }
    let items: Vec<(String, T)> = (start..end).map(|i| (cursor(i), all[i].clone())).collect();
    Ok(Page {
        info: PageInfo {
            start_cursor: items.first().map(|(c, _)| c.clone()),
            end_cursor: items.last().map(|(c, _)| c.clone()),
            has_next_page: end < all.len(),
            has_previous_page: start > 0,
        },
        items,
        total: i32::try_from(all.len()).unwrap_or(i32::MAX),
    })
}

/// A connection as GitHub declares it: `edges: [Edge]`, `nodes: [Node]` (nullable lists of
/// nullable items), `pageInfo: PageInfo!`, `totalCount: Int!`; the edge's `node` nullable
/// unless the connection is one of the few whose edges carry `node: Node!` (`required`).
macro_rules! connection {
    ($conn:ident, $edge:ident, $node:ty) => {
        connection!(@types $conn, $edge, $node, Option<$node>, Some);
    };
    ($conn:ident, $edge:ident, $node:ty, required) => {
        connection!(@types $conn, $edge, $node, $node, std::convert::identity);
    };
    (@types $conn:ident, $edge:ident, $node:ty, $edge_node:ty, $wrap:expr) => {
        #[doc = concat!("An edge of `", stringify!($conn), "`.")]
        #[derive(SimpleObject, Clone, Debug)]
        pub struct $edge {
            cursor: String,
            node: $edge_node,
        }

        #[doc = concat!("`", stringify!($conn), "`.")]
        #[derive(SimpleObject, Clone, Debug)]
        pub struct $conn {
            total_count: i32,
            page_info: PageInfo,
            edges: Option<Vec<Option<$edge>>>,
            nodes: Option<Vec<Option<$node>>>,
        }

        impl $conn {
            fn from_page(p: Page<$node>) -> Self {
                $conn {
                    total_count: p.total,
                    page_info: p.info,
                    nodes: Some(p.items.iter().map(|(_, n)| Some(n.clone())).collect()),
                    edges: Some(
                        p.items
                            .into_iter()
                            .map(|(cursor, node)| {
                                Some($edge {
                                    cursor,
                                    node: $wrap(node),
                                })
                            })
                            .collect(),
                    ),
                }
            }
        }
    };
}

connection!(RepositoryConnection, RepositoryEdge, Repository);
connection!(FollowerConnection, UserEdge, User);
connection!(TeamConnection, TeamEdge, Team);
connection!(TeamMemberConnection, TeamMemberEdge, User, required);
connection!(IssueConnection, IssueEdge, Issue);
connection!(IssueCommentConnection, IssueCommentEdge, IssueComment);
connection!(PullRequestConnection, PullRequestEdge, PullRequest);
connection!(
    PullRequestCommitConnection,
    PullRequestCommitEdge,
    PullRequestCommit
);
connection!(RefConnection, RefEdge, Ref);
connection!(ProjectV2Connection, ProjectV2Edge, ProjectV2);
connection!(LabelConnection, LabelEdge, Label);
connection!(ProjectV2ItemConnection, ProjectV2ItemEdge, ProjectV2Item);
connection!(ProjectV2ViewConnection, ProjectV2ViewEdge, ProjectV2View);

/// `OrderDirection`.
#[derive(Enum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum OrderDirection {
    /// Oldest first.
    Asc,
    /// Newest first.
    Desc,
}

/// `IssueOrderField` (also used for pull requests).
#[derive(Enum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum IssueOrderField {
    /// By creation.
    CreatedAt,
    /// By last update.
    UpdatedAt,
    /// By comment count.
    Comments,
}

/// `IssueOrder`.
#[derive(InputObject, Clone, Debug)]
pub struct IssueOrder {
    field: IssueOrderField,
    direction: OrderDirection,
}

/// GitHub's `DateTime` scalar: an ISO-8601 instant.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct DateTime(pub String);
async_graphql::scalar!(DateTime, "DateTime", "An ISO-8601 encoded UTC date string.");

impl DateTime {
    fn at(t: Timestamp) -> Self {
        DateTime(ts(t))
    }
}

/// GitHub's `URI` scalar: an RFC 3986 URI.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Uri(pub String);
async_graphql::scalar!(
    Uri,
    "URI",
    "An RFC 3986, RFC 3987, and RFC 6570 (level 4) compliant URI string."
);

/// GitHub's `GitObjectID` scalar: a Git object's SHA-1.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct GitObjectId(pub String);
async_graphql::scalar!(GitObjectId, "GitObjectID", "A Git object ID.");

/// GitHub's `HTML` scalar.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Html(pub String);
async_graphql::scalar!(Html, "HTML", "A string containing HTML code.");

/// `IssueFilters`: the subset the simulator applies (`since`).
#[derive(InputObject, Clone, Debug, Default)]
pub struct IssueFilters {
    /// Issues updated at or after this instant.
    since: Option<DateTime>,
}

/// Orders issues (or pull requests through their issue side) as GitHub does: creation
/// order unless asked otherwise, ties broken by number.
fn order_issues(items: &mut [IssueRec], order: Option<&IssueOrder>) {
    let Some(order) = order else {
        return;
    };
    items.sort_by(|a, b| {
        let by = match order.field {
            IssueOrderField::CreatedAt => a.created_at.cmp(&b.created_at),
            IssueOrderField::UpdatedAt => a.updated_at.cmp(&b.updated_at),
            IssueOrderField::Comments => a.comments.len().cmp(&b.comments.len()),
        }
        .then(a.number.cmp(&b.number));
        match order.direction {
            OrderDirection::Asc => by,
            OrderDirection::Desc => by.reverse(),
        }
    });
}

fn since_of(filter: Option<&IssueFilters>) -> async_graphql::Result<Option<Timestamp>> {
    match filter.and_then(|f| f.since.as_ref()).map(|d| d.0.as_str()) {
        None => Ok(None),
        Some(text) => text
            .parse()
            .map(Some)
            .map_err(|_| async_graphql::Error::new(format!("`{text}` is not a valid DateTime."))),
    }
}

/// An edge of `membersWithRole`, with the member's role.
#[derive(SimpleObject, Clone, Debug)]
pub struct OrganizationMemberEdge {
    cursor: String,
    node: Option<User>,
    role: Option<MemberRole>,
}

/// `membersWithRole`.
#[derive(SimpleObject, Clone, Debug)]
pub struct OrganizationMemberConnection {
    total_count: i32,
    page_info: PageInfo,
    edges: Option<Vec<Option<OrganizationMemberEdge>>>,
    nodes: Option<Vec<Option<User>>>,
}

/// `OrganizationMemberRole`.
#[derive(Enum, Copy, Clone, Debug, PartialEq, Eq)]
#[graphql(name = "OrganizationMemberRole")]
pub enum MemberRole {
    /// Admin.
    Admin,
    /// Member.
    Member,
}

/// `IssueState`.
#[derive(Enum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum IssueState {
    /// Open.
    Open,
    /// Closed.
    Closed,
}

/// `PullRequestState`.
#[derive(Enum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum PullRequestState {
    /// Open.
    Open,
    /// Closed without merging.
    Closed,
    /// Merged.
    Merged,
}

/// `RateLimit`.
#[derive(SimpleObject, Clone, Debug)]
pub struct RateLimit {
    limit: i64,
    cost: i64,
    remaining: i64,
    used: i64,
    reset_at: DateTime,
    node_count: i64,
}

// ---------------------------------------------------------------- objects

/// The root query.
#[derive(Debug, Clone, Copy)]
pub struct Query;

fn gid(prefix: &str, id: u64) -> ID {
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

/// `User`.
#[derive(Clone, Debug)]
pub struct User(UserRec);

/// `RepositoryOwner`: a repository's owner, an organization or a user. Interfaces carry only
/// their own fields: `databaseId` is asked through `... on Organization` / `... on User`.
#[derive(Interface, Clone, Debug)]
#[graphql(
    field(name = "id", ty = "ID"),
    field(name = "login", ty = "String"),
    field(name = "url", ty = "Uri")
)]
pub enum RepositoryOwner {
    /// An organization.
    Organization(Organization),
    /// A user.
    User(User),
}

impl RepositoryOwner {
    fn of(rec: UserRec) -> Self {
        if rec.is_org {
            RepositoryOwner::Organization(Organization(rec))
        } else {
            RepositoryOwner::User(User(rec))
        }
    }
}

/// `Actor`: who authored something.
#[derive(Interface, Clone, Debug)]
#[graphql(field(name = "login", ty = "String"), field(name = "url", ty = "Uri"))]
pub enum Actor {
    /// An organization.
    Organization(Organization),
    /// A user.
    User(User),
}

impl Actor {
    fn of(rec: UserRec) -> Self {
        if rec.is_org {
            Actor::Organization(Organization(rec))
        } else {
            Actor::User(User(rec))
        }
    }
}

#[Object]
impl User {
    async fn login(&self) -> &str {
        &self.0.login
    }
    async fn id(&self) -> ID {
        gid("User", self.0.id)
    }
    async fn database_id(&self) -> Option<i64> {
        Some(self.0.id as i64)
    }
    async fn name(&self) -> Option<&str> {
        self.0.name.as_deref()
    }
    async fn created_at(&self) -> DateTime {
        DateTime::at(self.0.created_at)
    }
    async fn url(&self) -> Uri {
        Uri(format!("https://github.com/{}", self.0.login))
    }
    /// Repositories the user owns.
    async fn repositories(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<RepositoryConnection> {
        let login = self.0.login.clone();
        let all: Vec<Repository> = with_world(ctx, |w| {
            w.repos
                .iter()
                .filter(|r| r.owner.eq_ignore_ascii_case(&login) && !r.deleted)
                .cloned()
                .map(Repository)
                .collect()
        })?;
        Ok(RepositoryConnection::from_page(paginate(
            &all,
            "repositories",
            first,
            after,
            last,
            before,
        )?))
    }
    /// Followers (the simulator models none).
    async fn followers(
        &self,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<FollowerConnection> {
        let all: Vec<User> = Vec::new();
        Ok(FollowerConnection::from_page(paginate(
            &all,
            "followers",
            first,
            after,
            last,
            before,
        )?))
    }
}

/// `Organization`.
#[derive(Clone, Debug)]
pub struct Organization(UserRec);

impl Organization {
    /// Whether this is the generated organization, the one with members, teams and projects
    /// (other organization accounts only own repositories).
    fn is_generated(&self, w: &World) -> bool {
        w.org.login.eq_ignore_ascii_case(&self.0.login)
    }
}

#[Object]
impl Organization {
    async fn login(&self) -> &str {
        &self.0.login
    }
    async fn id(&self) -> ID {
        gid("Organization", self.0.id)
    }
    async fn database_id(&self) -> Option<i64> {
        Some(self.0.id as i64)
    }
    async fn name(&self) -> Option<&str> {
        self.0.name.as_deref()
    }
    async fn url(&self) -> Uri {
        Uri(format!("https://github.com/{}", self.0.login))
    }
    /// Every project (v2) of the organization, linked to repositories or not, by number.
    async fn projects_v2(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<ProjectV2Connection> {
        let all = with_world(ctx, |w| {
            if self.is_generated(w) {
                org_projects(w)
            } else {
                Vec::new()
            }
        })?;
        projects_page(&all, first, after, last, before)
    }
    /// One of the organization's projects (v2) by its number.
    async fn project_v2(
        &self,
        ctx: &Context<'_>,
        number: i64,
    ) -> async_graphql::Result<Option<ProjectV2>> {
        let all = with_world(ctx, |w| {
            if self.is_generated(w) {
                org_projects(w)
            } else {
                Vec::new()
            }
        })?;
        match all.into_iter().find(|p| p.rec.number as i64 == number) {
            Some(p) => Ok(Some(p)),
            None => Err(not_found(format!(
                "Could not resolve to a ProjectV2 with the number {number}."
            ))),
        }
    }
    /// Members with their role.
    async fn members_with_role(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<OrganizationMemberConnection> {
        refuse_without_read_org(ctx)?;
        let all: Vec<(User, MemberRole)> = with_world(ctx, |w| {
            if !self.is_generated(w) {
                return Vec::new();
            }
            w.org
                .members
                .iter()
                .filter_map(|m| w.user(m).cloned())
                .map(|u| {
                    let role = if w.org.admins.contains(&u.login) {
                        MemberRole::Admin
                    } else {
                        MemberRole::Member
                    };
                    (User(u), role)
                })
                .collect()
        })?;
        let p = paginate(&all, "membersWithRole", first, after, last, before)?;
        Ok(OrganizationMemberConnection {
            total_count: p.total,
            page_info: p.info,
            nodes: Some(p.items.iter().map(|(_, (u, _))| Some(u.clone())).collect()),
            edges: Some(
                p.items
                    .into_iter()
                    .map(|(cursor, (node, role))| {
                        Some(OrganizationMemberEdge {
                            cursor,
                            node: Some(node),
                            role: Some(role),
                        })
                    })
                    .collect(),
            ),
        })
    }
    /// Teams.
    async fn teams(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<TeamConnection> {
        refuse_without_read_org(ctx)?;
        let all: Vec<Team> = with_world(ctx, |w| {
            if !self.is_generated(w) {
                return Vec::new();
            }
            w.org.teams.iter().cloned().map(Team).collect()
        })?;
        Ok(TeamConnection::from_page(paginate(
            &all, "teams", first, after, last, before,
        )?))
    }
    /// Repositories.
    async fn repositories(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<RepositoryConnection> {
        let login = self.0.login.clone();
        let all: Vec<Repository> = with_world(ctx, |w| {
            w.repos
                .iter()
                .filter(|r| r.owner.eq_ignore_ascii_case(&login) && !r.deleted)
                .cloned()
                .map(Repository)
                .collect()
        })?;
        Ok(RepositoryConnection::from_page(paginate(
            &all,
            "repositories",
            first,
            after,
            last,
            before,
        )?))
    }
}

/// `Team`.
#[derive(Clone, Debug)]
pub struct Team(TeamRec);

#[Object]
impl Team {
    async fn id(&self) -> ID {
        gid("Team", self.0.id)
    }
    async fn database_id(&self) -> Option<i64> {
        Some(self.0.id as i64)
    }
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn slug(&self) -> &str {
        &self.0.slug
    }
    async fn description(&self) -> Option<&str> {
        Some(&self.0.description)
    }
    /// Members.
    async fn members(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<TeamMemberConnection> {
        let logins = self.0.members.clone();
        let all: Vec<User> = with_world(ctx, |w| {
            logins
                .iter()
                .filter_map(|l| w.user(l).cloned())
                .map(User)
                .collect()
        })?;
        Ok(TeamMemberConnection::from_page(paginate(
            &all, "members", first, after, last, before,
        )?))
    }
}

/// `Repository`.
#[derive(Clone, Debug)]
pub struct Repository(RepoRec);

#[Object]
impl Repository {
    async fn id(&self) -> ID {
        gid("Repository", self.0.id)
    }
    async fn database_id(&self) -> Option<i64> {
        Some(self.0.id as i64)
    }
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn name_with_owner(&self) -> String {
        self.0.full_name()
    }
    async fn owner(&self, ctx: &Context<'_>) -> async_graphql::Result<RepositoryOwner> {
        let owner = self.0.owner.clone();
        with_world(ctx, |w| w.user(&owner).cloned())?
            .map(RepositoryOwner::of)
            .ok_or_else(|| {
                async_graphql::Error::new("Something went wrong while executing your query.")
            })
    }
    async fn is_private(&self) -> bool {
        self.0.private
    }
    async fn description(&self) -> Option<&str> {
        self.0.description.as_deref()
    }
    async fn url(&self) -> Uri {
        Uri(format!("https://github.com/{}", self.0.full_name()))
    }
    async fn created_at(&self) -> DateTime {
        DateTime::at(self.0.created_at)
    }
    async fn updated_at(&self) -> DateTime {
        DateTime::at(self.0.updated_at)
    }
    async fn stargazer_count(&self) -> i64 {
        self.0.stars as i64
    }
    /// The default branch.
    async fn default_branch_ref(&self, ctx: &Context<'_>) -> async_graphql::Result<Option<Ref>> {
        let (id, branch) = (self.0.id, self.0.default_branch.clone());
        with_world(ctx, |w| {
            w.content(id).branch(&branch).map(|b| Ref {
                name: b.name.clone(),
                prefix: "refs/heads/".to_owned(),
                oid: b.sha.clone(),
                repo_id: id,
            })
        })
    }
    /// Issues (pull requests excluded).
    #[allow(clippy::too_many_arguments)]
    async fn issues(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
        states: Option<Vec<IssueState>>,
        filter_by: Option<IssueFilters>,
        order_by: Option<IssueOrder>,
    ) -> async_graphql::Result<IssueConnection> {
        refuse_under_saml(ctx, &self.0)?;
        let id = self.0.id;
        let since = since_of(filter_by.as_ref())?;
        let all: Vec<Issue> = with_world(ctx, |w| {
            let mut issues = w.content(id).issues.clone();
            order_issues(&mut issues, order_by.as_ref());
            issues
                .into_iter()
                .filter(|i| i.pull.is_none())
                .filter(|i| since.is_none_or(|s| i.updated_at >= s))
                .filter(|i| {
                    states.as_ref().is_none_or(|s| {
                        s.contains(if i.open {
                            &IssueState::Open
                        } else {
                            &IssueState::Closed
                        })
                    })
                })
                .map(Issue)
                .collect()
        })?;
        Ok(IssueConnection::from_page(paginate(
            &all, "issues", first, after, last, before,
        )?))
    }
    /// One issue by number (a pull request's number answers NOT_FOUND).
    async fn issue(&self, ctx: &Context<'_>, number: i64) -> async_graphql::Result<Option<Issue>> {
        refuse_under_saml(ctx, &self.0)?;
        let id = self.0.id;
        let found = with_world(ctx, |w| {
            w.content(id)
                .issues
                .iter()
                .find(|i| i.number as i64 == number && i.pull.is_none())
                .cloned()
        })?;
        match found {
            Some(i) => Ok(Some(Issue(i))),
            None => Err(not_found(format!(
                "Could not resolve to an Issue with the number of {number}."
            ))),
        }
    }
    /// One pull request by number.
    async fn pull_request(
        &self,
        ctx: &Context<'_>,
        number: i64,
    ) -> async_graphql::Result<Option<PullRequest>> {
        refuse_under_saml(ctx, &self.0)?;
        let id = self.0.id;
        let found = with_world(ctx, |w| {
            let c = w.content(id);
            c.issues
                .iter()
                .find(|i| i.number as i64 == number)
                .and_then(|i| i.pull.map(|p| (i.clone(), c.pulls[p].clone())))
        })?;
        match found {
            Some((issue, pull)) => Ok(Some(PullRequest {
                issue,
                pull,
                repo_id: id,
            })),
            None => Err(not_found(format!(
                "Could not resolve to a PullRequest with the number of {number}."
            ))),
        }
    }
    /// Pull requests.
    #[allow(clippy::too_many_arguments)]
    async fn pull_requests(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
        states: Option<Vec<PullRequestState>>,
        order_by: Option<IssueOrder>,
    ) -> async_graphql::Result<PullRequestConnection> {
        refuse_under_saml(ctx, &self.0)?;
        let id = self.0.id;
        let all: Vec<PullRequest> = with_world(ctx, |w| {
            let c = w.content(id);
            let mut issues = c.issues.clone();
            order_issues(&mut issues, order_by.as_ref());
            issues
                .iter()
                .filter_map(|i| i.pull.map(|p| (i.clone(), c.pulls[p].clone())))
                .map(|(i, p)| PullRequest {
                    issue: i,
                    pull: p,
                    repo_id: id,
                })
                .filter(|pr| states.as_ref().is_none_or(|s| s.contains(&pr.state())))
                .collect()
        })?;
        Ok(PullRequestConnection::from_page(paginate(
            &all,
            "pullRequests",
            first,
            after,
            last,
            before,
        )?))
    }
    /// Git refs under a prefix (`refs/heads/`).
    #[allow(clippy::too_many_arguments)]
    async fn refs(
        &self,
        ctx: &Context<'_>,
        ref_prefix: String,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<Option<RefConnection>> {
        refuse_under_saml(ctx, &self.0)?;
        let id = self.0.id;
        let all: Vec<Ref> = if ref_prefix == "refs/heads/" {
            with_world(ctx, |w| {
                w.content(id)
                    .branches
                    .iter()
                    .map(|b| Ref {
                        name: b.name.clone(),
                        prefix: ref_prefix.clone(),
                        oid: b.sha.clone(),
                        repo_id: id,
                    })
                    .collect()
            })?
        } else {
            Vec::new()
        };
        Ok(Some(RefConnection::from_page(paginate(
            &all, "refs", first, after, last, before,
        )?)))
    }
    /// One linked project (v2) by its number.
    async fn project_v2(
        &self,
        ctx: &Context<'_>,
        number: i64,
    ) -> async_graphql::Result<Option<ProjectV2>> {
        refuse_under_saml(ctx, &self.0)?;
        let id = self.0.id;
        let found = with_world(ctx, |w| {
            w.content(id)
                .projects
                .iter()
                .find(|p| p.number as i64 == number)
                .cloned()
        })?;
        match found {
            Some(rec) => Ok(Some(ProjectV2 { rec, repo_id: id })),
            None => Err(not_found(format!(
                "Could not resolve to a ProjectV2 with the number {number}."
            ))),
        }
    }
    /// Projects (v2).
    async fn projects_v2(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<ProjectV2Connection> {
        refuse_under_saml(ctx, &self.0)?;
        let id = self.0.id;
        let all: Vec<ProjectV2> = with_world(ctx, |w| {
            w.content(id)
                .projects
                .iter()
                .cloned()
                .map(|rec| ProjectV2 { rec, repo_id: id })
                .collect()
        })?;
        projects_page(&all, first, after, last, before)
    }
}

/// `Label`.
#[derive(SimpleObject, Clone, Debug)]
pub struct Label {
    name: String,
    color: String,
}

/// `Issue`.
#[derive(Clone, Debug)]
pub struct Issue(IssueRec);

#[Object]
impl Issue {
    async fn id(&self) -> ID {
        gid("Issue", self.0.id)
    }
    async fn database_id(&self) -> Option<i64> {
        Some(self.0.id as i64)
    }
    async fn number(&self) -> i64 {
        self.0.number as i64
    }
    async fn title(&self) -> &str {
        &self.0.title
    }
    async fn body(&self) -> &str {
        &self.0.body
    }
    #[graphql(name = "bodyHTML")]
    async fn body_html(&self) -> Html {
        Html(format!("<p>{}</p>", self.0.body))
    }
    async fn state(&self) -> IssueState {
        if self.0.open {
            IssueState::Open
        } else {
            IssueState::Closed
        }
    }
    async fn created_at(&self) -> DateTime {
        DateTime::at(self.0.created_at)
    }
    async fn updated_at(&self) -> DateTime {
        DateTime::at(self.0.updated_at)
    }
    async fn author(&self, ctx: &Context<'_>) -> async_graphql::Result<Option<Actor>> {
        let login = self.0.user.clone();
        Ok(with_world(ctx, |w| w.user(&login).cloned())?.map(Actor::of))
    }
    /// Comments.
    async fn comments(
        &self,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<IssueCommentConnection> {
        let all: Vec<IssueComment> = self.0.comments.iter().cloned().map(IssueComment).collect();
        Ok(IssueCommentConnection::from_page(paginate(
            &all, "comments", first, after, last, before,
        )?))
    }
    /// Labels.
    async fn labels(
        &self,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<Option<LabelConnection>> {
        let all: Vec<Label> = self
            .0
            .labels
            .iter()
            .map(|l| Label {
                name: l.clone(),
                color: "ededed".to_owned(),
            })
            .collect();
        Ok(Some(LabelConnection::from_page(paginate(
            &all, "labels", first, after, last, before,
        )?)))
    }
}

/// `IssueComment`.
#[derive(Clone, Debug)]
pub struct IssueComment(CommentRec);

#[Object]
impl IssueComment {
    async fn id(&self) -> ID {
        gid("IssueComment", self.0.id)
    }
    async fn database_id(&self) -> Option<i64> {
        Some(self.0.id as i64)
    }
    async fn body(&self) -> &str {
        &self.0.body
    }
    #[graphql(name = "bodyHTML")]
    async fn body_html(&self) -> Html {
        Html(format!("<p>{}</p>", self.0.body))
    }
    async fn created_at(&self) -> DateTime {
        DateTime::at(self.0.created_at)
    }
    async fn author(&self, ctx: &Context<'_>) -> async_graphql::Result<Option<Actor>> {
        let login = self.0.user.clone();
        Ok(with_world(ctx, |w| w.user(&login).cloned())?.map(Actor::of))
    }
}

/// `PullRequest`.
#[derive(Clone, Debug)]
pub struct PullRequest {
    issue: IssueRec,
    pull: PullRec,
    repo_id: u64,
}

impl PullRequest {
    fn state(&self) -> PullRequestState {
        if self.pull.merged {
            PullRequestState::Merged
        } else if self.issue.open {
            PullRequestState::Open
        } else {
            PullRequestState::Closed
        }
    }
}

#[Object]
impl PullRequest {
    async fn id(&self) -> ID {
        gid("PullRequest", self.pull.id)
    }
    async fn database_id(&self) -> Option<i64> {
        Some(self.pull.id as i64)
    }
    async fn number(&self) -> i64 {
        self.pull.number as i64
    }
    async fn title(&self) -> &str {
        &self.issue.title
    }
    async fn body(&self) -> &str {
        &self.issue.body
    }
    #[graphql(name = "state")]
    async fn state_field(&self) -> PullRequestState {
        self.state()
    }
    async fn merged(&self) -> bool {
        self.pull.merged
    }
    async fn merged_at(&self) -> Option<DateTime> {
        self.pull.merged_at.map(DateTime::at)
    }
    async fn head_ref_name(&self) -> &str {
        &self.pull.head
    }
    async fn base_ref_name(&self) -> &str {
        &self.pull.base
    }
    async fn head_ref_oid(&self) -> GitObjectId {
        GitObjectId(self.pull.head_sha.clone())
    }
    async fn created_at(&self) -> DateTime {
        DateTime::at(self.issue.created_at)
    }
    async fn updated_at(&self) -> DateTime {
        DateTime::at(self.issue.updated_at)
    }
    async fn author(&self, ctx: &Context<'_>) -> async_graphql::Result<Option<Actor>> {
        let login = self.issue.user.clone();
        Ok(with_world(ctx, |w| w.user(&login).cloned())?.map(Actor::of))
    }
    /// Commits.
    async fn commits(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<PullRequestCommitConnection> {
        let (repo_id, shas) = (self.repo_id, self.pull.commits.clone());
        let all: Vec<PullRequestCommit> = with_world(ctx, |w| {
            let c = w.content(repo_id);
            shas.iter()
                .filter_map(|s| c.commits.get(s).cloned())
                .map(|commit| PullRequestCommit {
                    commit: Commit(commit),
                })
                .collect()
        })?;
        Ok(PullRequestCommitConnection::from_page(paginate(
            &all, "commits", first, after, last, before,
        )?))
    }
    /// Comments on the conversation.
    async fn comments(
        &self,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<IssueCommentConnection> {
        let all: Vec<IssueComment> = self
            .issue
            .comments
            .iter()
            .cloned()
            .map(IssueComment)
            .collect();
        Ok(IssueCommentConnection::from_page(paginate(
            &all, "comments", first, after, last, before,
        )?))
    }
}

/// `PullRequestCommit`.
#[derive(SimpleObject, Clone, Debug)]
pub struct PullRequestCommit {
    commit: Commit,
}

/// `Commit`.
#[derive(Clone, Debug)]
pub struct Commit(CommitRec);

#[Object]
impl Commit {
    async fn oid(&self) -> GitObjectId {
        GitObjectId(self.0.sha.clone())
    }
    async fn message(&self) -> &str {
        &self.0.message
    }
    async fn committed_date(&self) -> DateTime {
        DateTime::at(self.0.date)
    }
    async fn additions(&self) -> i64 {
        self.0.files.iter().map(|f| f.additions as i64).sum()
    }
    async fn deletions(&self) -> i64 {
        self.0.files.iter().map(|f| f.deletions as i64).sum()
    }
    async fn changed_files_if_available(&self) -> Option<i64> {
        Some(self.0.files.len() as i64)
    }
}

/// `Ref`.
#[derive(Clone, Debug)]
pub struct Ref {
    name: String,
    prefix: String,
    oid: String,
    /// The repository, to find the commit the ref points at.
    repo_id: u64,
}

/// `GitObject`: what a ref points at (always a commit here).
#[derive(Interface, Clone, Debug)]
#[graphql(field(name = "oid", ty = "GitObjectId"))]
pub enum GitObject {
    /// A commit.
    Commit(Commit),
}

#[Object]
impl Ref {
    async fn name(&self) -> &str {
        &self.name
    }
    async fn prefix(&self) -> &str {
        &self.prefix
    }
    async fn target(&self, ctx: &Context<'_>) -> async_graphql::Result<Option<GitObject>> {
        let (repo_id, oid) = (self.repo_id, self.oid.clone());
        let known = with_world(ctx, |w| w.content(repo_id).commits.get(&oid).cloned())?;
        // A head the world has no commit record for still names its object.
        let commit = known.unwrap_or_else(|| CommitRec {
            sha: oid,
            message: String::new(),
            author: String::new(),
            date: Timestamp::UNIX_EPOCH,
            parents: Vec::new(),
            files: Vec::new(),
            tree: Default::default(),
        });
        Ok(Some(GitObject::Commit(Commit(commit))))
    }
}

/// `ProjectV2`, as linked to one repository (its items' contents live there), or to none
/// (`repo_id` 0: an organization's project whose items are drafts).
#[derive(Clone, Debug)]
pub struct ProjectV2 {
    rec: ProjectRec,
    repo_id: u64,
}

/// The organization's projects: every repository's, then those linked to none, by number.
fn org_projects(w: &mut World) -> Vec<ProjectV2> {
    let ids: Vec<u64> = w.org_repos().iter().map(|r| r.id).collect();
    let mut all: Vec<ProjectV2> = Vec::new();
    for id in ids {
        all.extend(
            w.content(id)
                .projects
                .iter()
                .cloned()
                .map(|rec| ProjectV2 { rec, repo_id: id }),
        );
    }
    all.extend(
        w.unlinked_org_projects()
            .into_iter()
            .map(|rec| ProjectV2 { rec, repo_id: 0 }),
    );
    all.sort_by_key(|p| p.rec.number);
    all
}

/// A page of a `projectsV2` connection.
fn projects_page(
    all: &[ProjectV2],
    first: Option<i32>,
    after: Option<String>,
    last: Option<i32>,
    before: Option<String>,
) -> async_graphql::Result<ProjectV2Connection> {
    Ok(ProjectV2Connection::from_page(paginate(
        all,
        "projectsV2",
        first,
        after,
        last,
        before,
    )?))
}

#[Object]
impl ProjectV2 {
    async fn id(&self) -> ID {
        gid("ProjectV2", self.rec.id)
    }
    async fn database_id(&self) -> Option<i64> {
        Some(self.rec.id as i64)
    }
    async fn number(&self) -> i64 {
        self.rec.number as i64
    }
    async fn title(&self) -> &str {
        &self.rec.title
    }
    async fn closed(&self) -> bool {
        self.rec.closed
    }
    async fn created_at(&self) -> DateTime {
        DateTime::at(self.rec.created_at)
    }
    /// Items on the board.
    async fn items(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<ProjectV2ItemConnection> {
        let repo_id = self.repo_id;
        let items = self.rec.items.clone();
        let all: Vec<ProjectV2Item> = with_world(ctx, |w| {
            let c = w.content(repo_id);
            items
                .into_iter()
                .map(|item| {
                    let content = match &item.content {
                        ProjectItemContent::Issue(n) => c
                            .issues
                            .iter()
                            .find(|i| i.number == *n)
                            .map(|i| match i.pull {
                                Some(p) => ProjectV2ItemContent::PullRequest(PullRequest {
                                    issue: i.clone(),
                                    pull: c.pulls[p].clone(),
                                    repo_id,
                                }),
                                None => ProjectV2ItemContent::Issue(Issue(i.clone())),
                            }),
                        ProjectItemContent::Draft(title) => {
                            Some(ProjectV2ItemContent::DraftIssue(DraftIssue {
                                id: gid("DraftIssue", item.id),
                                title: title.clone(),
                            }))
                        }
                    };
                    ProjectV2Item { rec: item, content }
                })
                .collect()
        })?;
        Ok(ProjectV2ItemConnection::from_page(paginate(
            &all, "items", first, after, last, before,
        )?))
    }
    /// The repositories it is linked to: the one it belongs to, or none.
    async fn repositories(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<RepositoryConnection> {
        let repo_id = self.repo_id;
        let all: Vec<Repository> = with_world(ctx, |w| {
            w.repo_by_id(repo_id)
                .filter(|r| !r.deleted)
                .cloned()
                .map(Repository)
                .into_iter()
                .collect()
        })?;
        Ok(RepositoryConnection::from_page(paginate(
            &all,
            "repositories",
            first,
            after,
            last,
            before,
        )?))
    }
    /// The project's views: a board and a table.
    async fn views(
        &self,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<ProjectV2ViewConnection> {
        let all: Vec<ProjectV2View> = [
            ("Board", ProjectV2ViewLayout::BoardLayout),
            ("Table", ProjectV2ViewLayout::TableLayout),
        ]
        .into_iter()
        .enumerate()
        .map(|(k, (name, layout))| ProjectV2View {
            id: gid("ProjectV2View", self.rec.id * 10 + k as u64),
            name: name.to_owned(),
            number: k as i64 + 1,
            layout,
        })
        .collect();
        Ok(ProjectV2ViewConnection::from_page(paginate(
            &all, "views", first, after, last, before,
        )?))
    }
}

/// `ProjectV2ViewLayout`.
#[derive(Enum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum ProjectV2ViewLayout {
    /// Columns of cards.
    BoardLayout,
    /// Rows.
    TableLayout,
}

/// `ProjectV2View`.
#[derive(SimpleObject, Clone, Debug)]
pub struct ProjectV2View {
    id: ID,
    name: String,
    number: i64,
    layout: ProjectV2ViewLayout,
}

/// `DraftIssue`.
#[derive(SimpleObject, Clone, Debug)]
pub struct DraftIssue {
    id: ID,
    title: String,
}

/// `ProjectV2ItemContent`.
#[derive(Union, Clone, Debug)]
pub enum ProjectV2ItemContent {
    /// An issue.
    Issue(Issue),
    /// A pull request.
    PullRequest(PullRequest),
    /// A draft.
    DraftIssue(DraftIssue),
}

/// `ProjectV2ItemType`.
#[derive(Enum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum ProjectV2ItemType {
    /// An issue.
    Issue,
    /// A pull request.
    PullRequest,
    /// A draft.
    DraftIssue,
}

/// `ProjectV2Item`.
#[derive(Clone, Debug)]
pub struct ProjectV2Item {
    rec: ProjectItemRec,
    content: Option<ProjectV2ItemContent>,
}

#[Object]
impl ProjectV2Item {
    async fn id(&self) -> ID {
        gid("ProjectV2Item", self.rec.id)
    }
    async fn database_id(&self) -> Option<i64> {
        Some(self.rec.id as i64)
    }
    #[graphql(name = "type")]
    async fn item_type(&self) -> ProjectV2ItemType {
        match &self.content {
            Some(ProjectV2ItemContent::PullRequest(_)) => ProjectV2ItemType::PullRequest,
            Some(ProjectV2ItemContent::DraftIssue(_)) => ProjectV2ItemType::DraftIssue,
            _ => ProjectV2ItemType::Issue,
        }
    }
    async fn content(&self) -> Option<ProjectV2ItemContent> {
        self.content.clone()
    }
}

/// GitHub's answer to a query that exceeded its resource limits, from the answer it would
/// have given: every top-level field but `rateLimit` null, one error each with its path and
/// no `type`, as GitHub sends them.
pub fn resource_limited(answer: serde_json::Value) -> serde_json::Value {
    let mut data = answer
        .get("data")
        .cloned()
        .unwrap_or(serde_json::Value::Null);
    let mut errors = Vec::new();
    if let Some(fields) = data.as_object_mut() {
        for (key, value) in fields.iter_mut() {
            if key == "rateLimit" {
                continue;
            }
            *value = serde_json::Value::Null;
            errors.push(serde_json::json!({
                "message": "Resource limits for this query exceeded.",
                "path": [key],
            }));
        }
    }
    serde_json::json!({ "data": data, "errors": errors })
}

/// GitHub's shape of an answer with errors, from the engine's: `extensions.type` moved to
/// the top-level `type` GitHub uses, and a field whose resolver failed present in `data` as
/// `null` at its error's `path` (the engine leaves the key out; GitHub answers the null).
pub fn github_error_shape(mut body: serde_json::Value) -> serde_json::Value {
    let mut paths = Vec::new();
    if let Some(errors) = body.get_mut("errors").and_then(|e| e.as_array_mut()) {
        for e in errors {
            if let Some(obj) = e.as_object_mut() {
                let ty = obj.get("extensions").and_then(|x| x.get("type")).cloned();
                if let Some(ty) = ty {
                    obj.insert("type".to_owned(), ty);
                    obj.remove("extensions");
                }
                if let Some(path) = obj.get("path").and_then(|p| p.as_array()) {
                    paths.push(path.clone());
                }
            }
        }
    }
    if let Some(data) = body.get_mut("data") {
        for path in &paths {
            null_at(data, path);
        }
    }
    body
}

/// Puts a `null` at `path` in `data` where nothing is. The engine leaves a failed field's key
/// out and answers an object none of whose fields resolved as `null`; but an error at
/// `[a, b]` means `a` itself resolved, so a `null` on the way is such an empty object and is
/// answered as one, holding the failed field's `null`.
fn null_at(data: &mut serde_json::Value, path: &[serde_json::Value]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut at = data;
    for (k, segment) in parents.iter().enumerate() {
        if at.is_null() && matches!(segment, serde_json::Value::String(_)) {
            *at = serde_json::Value::Object(serde_json::Map::new());
        }
        let next = match segment {
            serde_json::Value::String(key) => {
                let obj = match at.as_object_mut() {
                    Some(obj) => obj,
                    None => return,
                };
                // A parent the engine dropped entirely: present, as an object, if a key follows.
                let follows_key = matches!(
                    parents.get(k + 1).unwrap_or(last),
                    serde_json::Value::String(_)
                );
                if follows_key {
                    Some(obj.entry(key.clone()).or_insert(serde_json::Value::Null))
                } else {
                    obj.get_mut(key.as_str())
                }
            }
            serde_json::Value::Number(n) => n
                .as_u64()
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| at.get_mut(i)),
            _ => None,
        };
        match next {
            Some(v) => at = v,
            None => return,
        }
    }
    if at.is_null() {
        *at = serde_json::Value::Object(serde_json::Map::new());
    }
    if let (Some(obj), serde_json::Value::String(key)) = (at.as_object_mut(), last) {
        obj.entry(key.clone()).or_insert(serde_json::Value::Null);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip() {
        for i in [0usize, 1, 99, 12_345] {
            assert_eq!(decode_cursor(&cursor(i)), Some(i));
        }
        assert_eq!(b64(b"cursor:v2:0"), "Y3Vyc29yOnYyOjA=");
        assert_eq!(decode_cursor("not a cursor"), None);
    }
}
