//! GraphQL through the exit door: a page size that shrinks when GitHub times out or its
//! resource limits are exceeded, and partial answers kept with what GitHub refused in them
//! recorded on the run.

use std::sync::atomic::{AtomicU32, Ordering};

use headroom_core::RouteFamily;
use headroom_core::telemetry;
use headroom_http::{ApiError, ApiRequest};
use headroom_sync::{StageCtx, StageError};
use serde_json::Value;

/// A GraphQL page size that halves on 502/504 or a timeout (GitHub gives up on queries that
/// take too long) and doubles back after a few successes, between `min` and `max`.
#[derive(Debug)]
pub struct PageSize {
    current: AtomicU32,
    streak: AtomicU32,
    min: u32,
    max: u32,
}

/// Successes in a row before the size grows back.
const GROW_AFTER: u32 = 3;

impl PageSize {
    /// Starts at `max`.
    pub fn new(min: u32, max: u32) -> Self {
        Self {
            current: AtomicU32::new(max),
            streak: AtomicU32::new(0),
            min: min.max(1),
            max: max.max(min.max(1)),
        }
    }

    /// The size to ask for now.
    pub fn get(&self) -> u32 {
        self.current.load(Ordering::Relaxed)
    }

    /// Halves the size; `false` when it is already at the minimum.
    pub fn shrink(&self) -> bool {
        self.shrink_from(self.get())
    }

    /// A page of `asked` was too much: halves the size from `asked`, unless a concurrent
    /// scope of the stage has already made it smaller (then that size is tried; scopes that
    /// meet the limit together halve it once, not once each). `false` when `asked` was
    /// already the minimum.
    pub fn shrink_from(&self, asked: u32) -> bool {
        self.streak.store(0, Ordering::Relaxed);
        if asked <= self.min {
            return false;
        }
        let halved = (asked / 2).max(self.min);
        let _ = self
            .current
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
                (now > halved).then_some(halved)
            });
        true
    }

    /// Counts a success; doubles the size after a few in a row.
    pub fn success(&self) {
        let streak = self.streak.fetch_add(1, Ordering::Relaxed) + 1;
        if streak >= GROW_AFTER {
            self.streak.store(0, Ordering::Relaxed);
            let now = self.get();
            self.current
                .store(now.saturating_mul(2).min(self.max), Ordering::Relaxed);
        }
    }
}

/// A field GitHub refused in an answer that is otherwise kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Where: the response path without list indices (`organization.membersWithRole`); the
    /// probes' aliases `r0`…`r24` read as the `repository` they alias. Empty when GitHub
    /// gave no path.
    pub path: String,
    /// `FORBIDDEN` or `NOT_FOUND`.
    pub kind: String,
    /// GitHub's message.
    pub message: String,
}

/// How a GraphQL answer (HTTP 200) is to be taken.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// `data` to use, nulls read as empty, with the fields GitHub refused in it: access
    /// refused (`FORBIDDEN`: a token without `read:org`, SAML enforcement) or an entity gone
    /// (`NOT_FOUND`), each error with its path.
    Data {
        /// The `data` object.
        data: Value,
        /// What was refused in it.
        refused: Vec<Refusal>,
    },
    /// "Resource limits for this query exceeded": a smaller page succeeds.
    ResourceLimited,
    /// Refused as a whole (no `data`, or an error the rest cannot stand on): the messages.
    Refused(String),
}

/// GitHub's message when a query's nested connections need more than it will spend.
const RESOURCE_LIMITS: &str = "Resource limits for this query exceeded";

fn message_of(error: &Value) -> &str {
    error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("GraphQL error")
}

/// A response path as recorded: field names only (list indices dropped), so the same refusal
/// on every node of a list is one record.
fn field_path(path: &[Value]) -> String {
    let mut names: Vec<&str> = path.iter().filter_map(Value::as_str).collect();
    // `probe_query` aliases `repository` as r0…r24.
    if let Some(first) = names.first_mut()
        && first.len() > 1
        && first.starts_with('r')
        && first[1..].bytes().all(|b| b.is_ascii_digit())
    {
        *first = "repository";
    }
    names.join(".")
}

/// Reads a GraphQL response body: whether to use its data, shrink the page, or fail.
pub fn read_answer(body: &Value) -> Answer {
    let errors = body
        .get("errors")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let data = body.get("data").cloned().unwrap_or(Value::Null);
    if errors.is_empty() {
        return Answer::Data {
            data,
            refused: Vec::new(),
        };
    }
    // With data or without (GitHub nulls what it gave up on): smaller pages get all of it.
    if errors
        .iter()
        .any(|e| message_of(e).contains(RESOURCE_LIMITS))
    {
        return Answer::ResourceLimited;
    }
    let whole = || {
        let text: Vec<&str> = errors.iter().map(message_of).collect();
        Answer::Refused(text.join("; "))
    };
    if data.is_null() {
        return whole();
    }
    let mut refused = Vec::new();
    for e in errors {
        match e.get("type").and_then(Value::as_str) {
            Some(kind @ ("FORBIDDEN" | "NOT_FOUND")) => refused.push(Refusal {
                path: e
                    .get("path")
                    .and_then(Value::as_array)
                    .map(|p| field_path(p))
                    .unwrap_or_default(),
                kind: kind.to_owned(),
                message: message_of(e).to_owned(),
            }),
            _ => return whole(),
        }
    }
    Answer::Data { data, refused }
}

/// Sends a query built for the current page size; on 502/504, a timeout or GitHub's
/// resource limits, shrinks the page and asks again (each attempt goes through the
/// governor). Returns `data` — a partial answer's too, its refused fields recorded on the
/// run (see [`read_answer`]) — or an error carrying GraphQL's errors when GitHub refused
/// the query as a whole.
pub async fn query(
    ctx: &StageCtx<'_>,
    size: &PageSize,
    route: RouteFamily,
    query: &str,
    variables: impl Fn(u32) -> Value,
) -> Result<Value, StageError> {
    loop {
        let asked = size.get();
        let mut request = ApiRequest::graphql(query, &variables(asked))
            .map_err(|e| StageError::Permanent(e.to_string()))?
            .route(route);
        // GitHub ignores the query string; logs and proxies see which stage asked.
        request.target = format!("/graphql?stage={}", ctx.decl().name);
        match ctx.send(request).await {
            Ok(response) => {
                let body: Value = response
                    .json()
                    .map_err(|e| StageError::Transient(e.to_string()))?;
                match read_answer(&body) {
                    Answer::Data { data, refused } => {
                        size.success();
                        for r in refused {
                            tracing::info!(
                                event = telemetry::ORG_FIELD_REFUSED,
                                stage = ctx.decl().name,
                                path = %r.path,
                                kind = %r.kind,
                                "GitHub refused a field; keeping the rest of the answer"
                            );
                            ctx.record_refused(&r.path, &r.kind, &r.message);
                        }
                        return Ok(data);
                    }
                    Answer::ResourceLimited if size.shrink_from(asked) => {
                        tracing::info!(
                            event = telemetry::ORG_RESOURCE_LIMITED,
                            stage = ctx.decl().name,
                            page_size = size.get(),
                            "GitHub's resource limits exceeded; asking for smaller pages"
                        );
                        continue;
                    }
                    // Load-dependent: worth another try later, not a fact about the data.
                    Answer::ResourceLimited => {
                        return Err(StageError::Transient(format!(
                            "{RESOURCE_LIMITS} at the smallest page size ({asked})"
                        )));
                    }
                    Answer::Refused(text) => {
                        return Err(StageError::Permanent(headroom_core::redact(&text)));
                    }
                }
            }
            Err(ApiError::Server {
                status: 502 | 504, ..
            })
            | Err(ApiError::Timeout { .. })
                if size.shrink_from(asked) =>
            {
                tracing::info!(
                    event = telemetry::ORG_QUERY_TIMED_OUT,
                    stage = ctx.decl().name,
                    page_size = size.get(),
                    "GraphQL timed out; asking for smaller pages"
                );
                continue;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// `pageInfo` of a connection: the cursor after it, when there is a next page.
pub fn next_cursor(connection: &Value) -> Option<String> {
    let info = connection.get("pageInfo")?;
    if info.get("hasNextPage").and_then(Value::as_bool) == Some(true) {
        info.get("endCursor")
            .and_then(Value::as_str)
            .map(str::to_owned)
    } else {
        None
    }
}

/// The number at `path` in a response (a `totalCount`), 0 when absent.
pub fn count_at(v: &Value, path: &[&str]) -> u64 {
    path.iter()
        .try_fold(v, |v, k| v.get(*k))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// The `nodes` of a connection.
pub fn nodes(connection: &Value) -> &[Value] {
    connection
        .get("nodes")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn partial_answers_are_kept_with_what_was_refused() {
        let body = json!({
            "data": { "organization": { "login": "acme", "membersWithRole": null }, "r3": null },
            "errors": [
                { "type": "FORBIDDEN", "path": ["organization", "membersWithRole"],
                  "message": "Resource not accessible by personal access token" },
                { "type": "NOT_FOUND", "path": ["r3"], "message": "Could not resolve" },
                { "type": "FORBIDDEN", "path": ["organization", "teams", "nodes", 4, "members"],
                  "message": "SAML" }
            ]
        });
        let Answer::Data { data, refused } = read_answer(&body) else {
            panic!("kept");
        };
        assert_eq!(data["organization"]["login"], "acme");
        let paths: Vec<(&str, &str)> = refused
            .iter()
            .map(|r| (r.path.as_str(), r.kind.as_str()))
            .collect();
        assert_eq!(
            paths,
            vec![
                ("organization.membersWithRole", "FORBIDDEN"),
                ("repository", "NOT_FOUND"),
                ("organization.teams.nodes.members", "FORBIDDEN"),
            ]
        );
    }

    #[test]
    fn whole_refusals_and_resource_limits_are_told_apart() {
        // No data: refused whole, whatever the type.
        let invalid = json!({ "errors": [{ "message": "Field 'x' doesn't exist on type 'Y'" }] });
        assert_eq!(
            read_answer(&invalid),
            Answer::Refused("Field 'x' doesn't exist on type 'Y'".into())
        );
        let null = json!({ "data": null, "errors": [{ "type": "FORBIDDEN", "path": ["organization"], "message": "no" }] });
        assert_eq!(read_answer(&null), Answer::Refused("no".into()));
        // Data, but an error of another kind: the rest cannot be trusted to be complete.
        let other = json!({ "data": { "a": null }, "errors": [{ "type": "INTERNAL", "path": ["a"], "message": "boom" }] });
        assert_eq!(read_answer(&other), Answer::Refused("boom".into()));
        // Resource limits, with nulls or without data.
        for body in [
            json!({ "data": { "repository": null }, "errors": [{ "message": "Resource limits for this query exceeded.", "path": ["repository"] }] }),
            json!({ "errors": [{ "message": "Resource limits for this query exceeded." }] }),
        ] {
            assert_eq!(read_answer(&body), Answer::ResourceLimited, "{body}");
        }
        assert_eq!(
            read_answer(&json!({ "data": { "a": 1 } })),
            Answer::Data {
                data: json!({ "a": 1 }),
                refused: vec![]
            }
        );
    }

    #[test]
    fn the_page_size_shrinks_to_the_minimum_and_grows_back() {
        let p = PageSize::new(5, 50);
        assert_eq!(p.get(), 50);
        assert!(p.shrink());
        assert_eq!(p.get(), 25);
        assert!(p.shrink());
        assert!(p.shrink());
        assert_eq!(p.get(), 6);
        assert!(p.shrink());
        assert_eq!(p.get(), 5);
        assert!(!p.shrink());
        for _ in 0..GROW_AFTER {
            p.success();
        }
        assert_eq!(p.get(), 10);
        for _ in 0..(GROW_AFTER * 5) {
            p.success();
        }
        assert_eq!(p.get(), 50);
    }

    #[test]
    fn scopes_that_meet_the_limit_together_halve_the_page_once() {
        let p = PageSize::new(5, 80);
        // Ten scopes asked 80 at once; each is told the page was too much.
        for _ in 0..10 {
            assert!(p.shrink_from(80));
        }
        assert_eq!(p.get(), 40);
        // One that asked 40 and failed halves again; a late one that asked 80 does not
        // undo it.
        assert!(p.shrink_from(40));
        assert!(p.shrink_from(80));
        assert_eq!(p.get(), 20);
        assert!(!p.shrink_from(5));
    }
}
