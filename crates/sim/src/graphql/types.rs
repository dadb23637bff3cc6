//! The schema's scalars, enums, input objects and the small objects several families share
//! (orders, filters, member edges, `RateLimit`).

use super::*;

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
    pub(super) field: IssueOrderField,
    pub(super) direction: OrderDirection,
}

/// GitHub's `DateTime` scalar: an ISO-8601 instant.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct DateTime(pub String);
async_graphql::scalar!(DateTime, "DateTime", "An ISO-8601 encoded UTC date string.");

impl DateTime {
    pub(super) fn at(t: Timestamp) -> Self {
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
    pub(super) since: Option<DateTime>,
}

/// Orders issues (or pull requests through their issue side) as GitHub does: creation
/// order unless asked otherwise, ties broken by number.
pub(super) fn order_issues(items: &mut [IssueRec], order: Option<&IssueOrder>) {
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

pub(super) fn since_of(filter: Option<&IssueFilters>) -> async_graphql::Result<Option<Timestamp>> {
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
    pub(super) cursor: String,
    pub(super) node: Option<User>,
    pub(super) role: Option<MemberRole>,
}

/// `membersWithRole`.
#[derive(SimpleObject, Clone, Debug)]
pub struct OrganizationMemberConnection {
    pub(super) total_count: i32,
    pub(super) page_info: PageInfo,
    pub(super) edges: Option<Vec<Option<OrganizationMemberEdge>>>,
    pub(super) nodes: Option<Vec<Option<User>>>,
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
    pub(super) limit: i64,
    pub(super) cost: i64,
    pub(super) remaining: i64,
    pub(super) used: i64,
    pub(super) reset_at: DateTime,
    pub(super) node_count: i64,
}
