//! Cursor pagination as GitHub does it: opaque cursors, `pageInfo`, and the
//! `first`/`after`/`last`/`before` rules, plus the connection and edge types built on them.

use super::*;

pub(super) const B64: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub(super) fn b64(input: &[u8]) -> String {
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

pub(super) fn unb64(s: &str) -> Option<Vec<u8>> {
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

pub(super) fn cursor(index: usize) -> String {
    b64(format!("cursor:v2:{index}").as_bytes())
}

pub(super) fn decode_cursor(c: &str) -> Option<usize> {
    let raw = unb64(c)?;
    let s = String::from_utf8(raw).ok()?;
    s.strip_prefix("cursor:v2:")?.parse().ok()
}

/// `pageInfo`.
#[derive(SimpleObject, Clone, Debug)]
pub struct PageInfo {
    pub(super) end_cursor: Option<String>,
    pub(super) start_cursor: Option<String>,
    pub(super) has_next_page: bool,
    pub(super) has_previous_page: bool,
}

pub(super) struct Page<T> {
    pub(super) items: Vec<(String, T)>,
    pub(super) info: PageInfo,
    pub(super) total: i32,
}

pub(super) fn paginate<T: Clone>(
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
            pub(super) fn from_page(p: Page<$node>) -> Self {
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
