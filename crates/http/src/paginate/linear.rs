//! Linear GraphQL pagination [ln-schema]: Relay connections paged forward with `first`/`after`;
//! each page's `pageInfo { hasNextPage endCursor }` says whether there is more and where it
//! starts. The next request is the same query with `after` set to `endCursor`; the walk ends
//! when `hasNextPage` is false. `hasNextPage: true` without an `endCursor` is malformed, and an
//! `endCursor` already followed would loop.

use serde_json::{Map, Value};

use super::StopReason;
use super::walk::{Verdict, Walk};

/// Forward Relay pagination of one connection.
#[derive(Debug, Clone)]
pub struct RelayPager {
    variables: Map<String, Value>,
    after_var: String,
    connection: String,
    walk: Walk<Option<String>>,
}

impl RelayPager {
    /// Pages the connection at JSON pointer `connection` of each response (e.g.
    /// `/data/issues` or `/data/team/issues`), starting from `variables` (an object; anything
    /// else is read as no variables; its `after` is replaced), fetching at most `cap` pages.
    pub fn new(variables: Value, connection: &str, cap: u32) -> Self {
        let variables = match variables {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        Self {
            variables,
            after_var: "after".to_owned(),
            connection: connection.to_owned(),
            walk: Walk::new(None, cap),
        }
    }

    /// Names the cursor variable when the query calls it something other than `after`.
    pub fn with_after_variable(mut self, name: &str) -> Self {
        name.clone_into(&mut self.after_var);
        self
    }

    /// The variables of the next request (the cursor variable null on the first page), or
    /// `None` when done.
    pub fn next_variables(&self) -> Option<Value> {
        let after = self.walk.next()?;
        let mut variables = self.variables.clone();
        variables.insert(
            self.after_var.clone(),
            after.clone().map_or(Value::Null, Value::String),
        );
        Some(Value::Object(variables))
    }

    /// The cursor the next request carries (`None` on the first page or when done).
    pub fn after(&self) -> Option<&str> {
        self.walk.next()?.as_deref()
    }

    /// The nodes of a page (`nodes`, else the `node` of each of `edges`); empty when absent.
    pub fn nodes(&self, body: &Value) -> Vec<Value> {
        let Some(connection) = body.pointer(&self.connection) else {
            return Vec::new();
        };
        if let Some(nodes) = connection.get("nodes").and_then(Value::as_array) {
            return nodes.clone();
        }
        connection
            .get("edges")
            .and_then(Value::as_array)
            .map(|edges| {
                edges
                    .iter()
                    .filter_map(|e| e.get("node").cloned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Records the parsed body of the page just fetched.
    pub fn record(&mut self, body: &Value) {
        if self.walk.next().is_none() {
            return;
        }
        let verdict = relay_verdict(body.pointer(&self.connection));
        self.walk.advance(verdict);
    }

    /// Pages recorded so far.
    pub fn pages_fetched(&self) -> u32 {
        self.walk.fetched()
    }

    /// Why it stopped, once it has.
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.walk.stop()
    }
}

fn relay_verdict(connection: Option<&Value>) -> Verdict<Option<String>> {
    let page_info = connection
        .and_then(|c| c.get("pageInfo"))
        .and_then(Value::as_object)
        .ok_or(StopReason::Malformed)?;
    match page_info.get("hasNextPage") {
        Some(Value::Bool(false)) => Ok(None),
        Some(Value::Bool(true)) => match page_info.get("endCursor") {
            Some(Value::String(cursor)) if !cursor.is_empty() => Ok(Some(Some(cursor.clone()))),
            _ => Err(StopReason::Malformed),
        },
        _ => Err(StopReason::Malformed),
    }
}
