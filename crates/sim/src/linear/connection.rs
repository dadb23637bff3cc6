//! Relay connections over the workspace: Linear's filters (`and`, `or`, `id`, `createdAt`,
//! `updatedAt`, `number`, `team`, `key`, `name` with their comparators), its `orderBy`
//! (`createdAt` by default, or `updatedAt`), and cursor paging with `first`/`after` or
//! `last`/`before` (50 by default). Only the page asked for is rendered.
//!
//! Order is newest first ("to get the most recently updated resources, order by
//! `updatedAt`", Linear's pagination guide), with the id breaking ties. A cursor holds the
//! order key and the id of its row, so a row that moves while a client pages is neither
//! repeated nor skipped on the rows that did not move.

use headroom_core::clock::Timestamp;
use jiff::tz::TimeZone;
use serde_json::Value;

use super::cost::DEFAULT_PAGE;
use super::model::Workspace;

/// A row of any connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ent {
    /// A user.
    User(usize),
    /// A team.
    Team(usize),
    /// A team membership.
    Membership(usize),
    /// A workflow state.
    State(usize),
    /// A label.
    Label(usize),
    /// A project.
    Project(usize),
    /// A cycle.
    Cycle(usize),
    /// An issue.
    Issue(usize),
    /// A comment.
    Comment(usize),
    /// An attachment.
    Attachment(usize),
    /// A history entry.
    History(usize),
}

impl Ent {
    /// The GraphQL type.
    pub fn type_name(self) -> &'static str {
        match self {
            Ent::User(_) => "User",
            Ent::Team(_) => "Team",
            Ent::Membership(_) => "TeamMembership",
            Ent::State(_) => "WorkflowState",
            Ent::Label(_) => "IssueLabel",
            Ent::Project(_) => "Project",
            Ent::Cycle(_) => "Cycle",
            Ent::Issue(_) => "Issue",
            Ent::Comment(_) => "Comment",
            Ent::Attachment(_) => "Attachment",
            Ent::History(_) => "IssueHistory",
        }
    }

    /// The UUID.
    pub fn id(self, ws: &Workspace) -> &str {
        match self {
            Ent::User(i) => &ws.users[i].id,
            Ent::Team(i) => &ws.teams[i].id,
            Ent::Membership(i) => &ws.memberships[i].id,
            Ent::State(i) => &ws.states[i].id,
            Ent::Label(i) => &ws.labels[i].id,
            Ent::Project(i) => &ws.projects[i].id,
            Ent::Cycle(i) => &ws.cycles[i].id,
            Ent::Issue(i) => &ws.issues[i].id,
            Ent::Comment(i) => &ws.comments[i].id,
            Ent::Attachment(i) => &ws.attachments[i].id,
            Ent::History(i) => &ws.history[i].id,
        }
    }

    /// `createdAt`.
    pub fn created(self, ws: &Workspace) -> Timestamp {
        match self {
            Ent::User(i) => ws.users[i].created_at,
            Ent::Team(i) => ws.teams[i].created_at,
            Ent::Membership(i) => ws.memberships[i].created_at,
            Ent::State(i) => ws.states[i].created_at,
            Ent::Label(i) => ws.labels[i].created_at,
            Ent::Project(i) => ws.projects[i].created_at,
            Ent::Cycle(i) => ws.cycles[i].created_at,
            Ent::Issue(i) => ws.issues[i].created_at,
            Ent::Comment(i) => ws.comments[i].created_at,
            Ent::Attachment(i) => ws.attachments[i].created_at,
            Ent::History(i) => ws.history[i].created_at,
        }
    }

    /// `updatedAt`: the last meaningful update, the creation if none.
    pub fn updated(self, ws: &Workspace) -> Timestamp {
        match self {
            Ent::User(i) => ws.users[i].updated_at,
            Ent::Team(i) => ws.teams[i].updated_at,
            Ent::Project(i) => ws.projects[i].updated_at,
            Ent::Cycle(i) => ws.cycles[i].updated_at,
            Ent::Issue(i) => ws.issues[i].updated_at,
            Ent::Comment(i) => ws.comments[i].updated_at,
            other => other.created(ws),
        }
    }

    /// The team a row belongs to, for `team:` filters.
    fn team(self, ws: &Workspace) -> Option<usize> {
        match self {
            Ent::Team(i) => Some(i),
            Ent::State(i) => Some(ws.states[i].team),
            Ent::Cycle(i) => Some(ws.cycles[i].team),
            Ent::Issue(i) => Some(ws.issues[i].team),
            Ent::Label(i) => ws.labels[i].team,
            _ => None,
        }
    }

    fn number(self, ws: &Workspace) -> Option<f64> {
        match self {
            Ent::Issue(i) => Some(f64::from(ws.issues[i].number)),
            Ent::Cycle(i) => Some(f64::from(ws.cycles[i].number)),
            _ => None,
        }
    }

    fn text(self, ws: &Workspace, field: &str) -> Option<String> {
        match (self, field) {
            (Ent::Team(i), "key") => Some(ws.teams[i].key.clone()),
            (Ent::Team(i), "name") => Some(ws.teams[i].name.clone()),
            _ => None,
        }
    }
}

/// Which timestamp orders a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// `createdAt` (the default).
    Created,
    /// `updatedAt`.
    Updated,
}

impl Order {
    fn key(self, ws: &Workspace, e: Ent) -> i64 {
        match self {
            Order::Created => e.created(ws).as_millisecond(),
            Order::Updated => e.updated(ws).as_millisecond(),
        }
    }

    /// A row's cursor.
    pub fn cursor(self, ws: &Workspace, e: Ent) -> String {
        format!("{}/{}", self.key(ws, e), e.id(ws))
    }
}

/// One page of a connection.
#[derive(Debug, Clone)]
pub struct Page {
    /// The rows, in order.
    pub rows: Vec<Ent>,
    /// The order (for the cursors).
    pub order: Order,
    /// Rows remain after the page.
    pub has_next: bool,
    /// Rows remain before the page.
    pub has_previous: bool,
}

fn parse_cursor(cursor: &str) -> Result<(i64, String), String> {
    cursor
        .split_once('/')
        .and_then(|(k, id)| Some((k.parse().ok()?, id.to_owned())))
        .ok_or_else(|| format!("Argument Validation Error: invalid cursor {cursor:?}"))
}

fn count_arg(args: &Value, name: &str) -> Result<Option<usize>, String> {
    match args.get(name).and_then(Value::as_i64) {
        None => Ok(None),
        Some(n) if n < 0 => Err(format!(
            "Argument Validation Error: {name} must be positive"
        )),
        Some(n) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
    }
}

/// The page `args` asks for among `rows`.
pub fn page(ws: &Workspace, rows: Vec<Ent>, args: &Value, now: Timestamp) -> Result<Page, String> {
    let order = match args.get("orderBy").and_then(Value::as_str) {
        Some("updatedAt") => Order::Updated,
        _ => Order::Created,
    };
    let filter = args.get("filter").unwrap_or(&Value::Null);
    let mut keyed = Vec::with_capacity(rows.len());
    for e in rows {
        if matches(ws, e, filter, now)? {
            keyed.push((order.key(ws, e), e.id(ws), e));
        }
    }
    // Newest first, the id breaking ties.
    keyed.sort_by(|a, b| (b.0, b.1).cmp(&(a.0, a.1)));
    if let Some(after) = args.get("after").and_then(Value::as_str) {
        let (k, id) = parse_cursor(after)?;
        keyed.retain(|(rk, rid, _)| (*rk, *rid) < (k, id.as_str()));
    }
    let mut has_previous = args.get("after").is_some_and(|v| !v.is_null());
    let mut has_next = false;
    if let Some(before) = args.get("before").and_then(Value::as_str) {
        let (k, id) = parse_cursor(before)?;
        let len = keyed.len();
        keyed.retain(|(rk, rid, _)| (*rk, *rid) > (k, id.as_str()));
        has_next = keyed.len() < len;
    }
    let first = count_arg(args, "first")?;
    let last = count_arg(args, "last")?;
    let total = keyed.len();
    let (from, to) = match (first, last) {
        (Some(n), _) => (0, n.min(total)),
        (None, Some(n)) => (total.saturating_sub(n), total),
        (None, None) => (0, (DEFAULT_PAGE as usize).min(total)),
    };
    has_next |= to < total;
    has_previous |= from > 0;
    Ok(Page {
        rows: keyed[from..to].iter().map(|r| r.2).collect(),
        order,
        has_next,
        has_previous,
    })
}

/// Whether `e` passes `filter` (null passes).
fn matches(ws: &Workspace, e: Ent, filter: &Value, now: Timestamp) -> Result<bool, String> {
    let Some(fields) = filter.as_object() else {
        return Ok(true);
    };
    for (name, cmp) in fields {
        if cmp.is_null() {
            continue;
        }
        let list = || cmp.as_array().map(Vec::as_slice).unwrap_or(&[]);
        let ok = match name.as_str() {
            "and" => {
                let mut all = true;
                for f in list() {
                    all &= matches(ws, e, f, now)?;
                }
                all
            }
            "or" => {
                let mut any = list().is_empty();
                for f in list() {
                    any |= matches(ws, e, f, now)?;
                }
                any
            }
            "id" => compare(cmp, |v| Some(v.as_str()? == e.id(ws)), |_| None),
            "createdAt" => compare_dates(cmp, e.created(ws), now)?,
            "updatedAt" => compare_dates(cmp, e.updated(ws), now)?,
            "number" => match e.number(ws) {
                Some(n) => compare(
                    cmp,
                    |v| Some(v.as_f64()? == n),
                    |v| v.as_f64()?.partial_cmp(&n),
                ),
                None => false,
            },
            "team" => match e.team(ws) {
                Some(t) => matches(ws, Ent::Team(t), cmp, now)?,
                None => false,
            },
            "key" | "name" => match e.text(ws, name) {
                Some(s) => compare(cmp, |v| Some(v.as_str()? == s), |_| None),
                None => false,
            },
            other => return Err(format!("filtering on {other} is not simulated")),
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Applies a comparator: `equal` says whether a value equals the row's; `order` orders a
/// value against the row's (value ⋚ row) where the comparator has an order.
fn compare(
    cmp: &Value,
    equal: impl Fn(&Value) -> Option<bool>,
    order: impl Fn(&Value) -> Option<std::cmp::Ordering>,
) -> bool {
    use std::cmp::Ordering::{Greater, Less};
    let Some(ops) = cmp.as_object() else {
        return true;
    };
    ops.iter().filter(|(_, v)| !v.is_null()).all(|(op, v)| {
        let list = || v.as_array().map(Vec::as_slice).unwrap_or(&[]);
        match op.as_str() {
            "eq" => equal(v) == Some(true),
            "neq" => equal(v) == Some(false),
            "in" => list().iter().any(|x| equal(x) == Some(true)),
            "nin" => !list().iter().any(|x| equal(x) == Some(true)),
            // The row is greater than the value: the value orders below it.
            "gt" => order(v) == Some(Less),
            "gte" => matches!(order(v), Some(o) if o != Greater),
            "lt" => order(v) == Some(Greater),
            "lte" => matches!(order(v), Some(o) if o != Less),
            _ => false,
        }
    })
}

fn compare_dates(cmp: &Value, at: Timestamp, now: Timestamp) -> Result<bool, String> {
    // Every value must parse; a bad one is the client's error, not a non-match.
    if let Some(ops) = cmp.as_object() {
        for v in ops.values() {
            let values = v.as_array().cloned().unwrap_or_else(|| vec![v.clone()]);
            for x in values.iter().filter(|x| !x.is_null()) {
                date_value(x, now)?;
            }
        }
    }
    let ms = at.as_millisecond();
    let value = |v: &Value| date_value(v, now).ok().map(|t| t.as_millisecond());
    Ok(compare(
        cmp,
        |v| Some(value(v)? == ms),
        |v| Some(value(v)?.cmp(&ms)),
    ))
}

/// A `DateTimeOrDuration`: an ISO 8601 time, or an ISO 8601 duration from now (`-P2W`).
pub fn date_value(v: &Value, now: Timestamp) -> Result<Timestamp, String> {
    let s = v
        .as_str()
        .ok_or_else(|| "Argument Validation Error: a date must be a string".to_owned())?;
    if let Ok(t) = s.parse::<Timestamp>() {
        return Ok(t);
    }
    s.parse::<jiff::Span>()
        .ok()
        .and_then(|span| now.to_zoned_datetime(TimeZone::UTC).checked_add(span).ok())
        .map(|z| z.timestamp())
        .ok_or_else(|| format!("Argument Validation Error: {s:?} is neither a date nor a duration"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_duration_counts_back_from_now() {
        let now: Timestamp = "2026-12-07T00:00:00Z".parse().unwrap_or_default();
        let two_weeks_ago = date_value(&json!("-P2W"), now);
        assert_eq!(
            two_weeks_ago.map(|t| t.to_string()),
            Ok("2026-11-23T00:00:00Z".to_owned())
        );
        assert!(date_value(&json!("yesterday"), now).is_err());
    }

    #[test]
    fn comparators_compare_the_row_against_the_value() {
        let row = 10.0_f64;
        let num = |cmp: Value| {
            compare(
                &cmp,
                |v| Some(v.as_f64()? == row),
                |v| v.as_f64()?.partial_cmp(&row),
            )
        };
        assert!(num(json!({ "gt": 9 })));
        assert!(!num(json!({ "gt": 10 })));
        assert!(num(json!({ "gte": 10, "lte": 10 })));
        assert!(num(json!({ "in": [1, 10] })));
        assert!(!num(json!({ "nin": [10] })));
    }
}
