//! The simulated Linear: a seeded workspace served at `POST /linear/graphql` (Linear's is
//! `https://api.linear.app/graphql`; `/graphql` here is GitHub's). This module owns the Linear
//! request pipeline: identity (`Authorization: <API key>` or `Bearer <OAuth token>`, from the
//! simulator's one token table), validation of every document against the schema subset
//! before it runs ([`schema`]), its complexity ([`cost`]) against the per-query maximum and
//! the two leaky buckets ([`limits`]), execution by apollo-compiler's executor over the
//! workspace ([`resolve`]), the `X-RateLimit-*` and `X-Complexity` headers, and the request
//! log entry (its path ends `#root=FIELD,…`, the operation's root fields, so that a test can
//! classify requests into route families).

// A refusal is the response itself, built at most once per request.
#![allow(clippy::result_large_err)]

pub mod connection;
pub mod cost;
mod fields;
pub mod limits;
pub mod model;
mod resolve;
pub mod schema;
pub(crate) mod seed;
mod spec;
mod touch;

pub use spec::{LinearLimits, LinearWorkspaceSpec};
pub use touch::LinearWorkspaceCounts;

use std::net::IpAddr;

use apollo_compiler::executable::{Operation, Selection};
use apollo_compiler::resolvers::Execution;
use bytes::Bytes;
use headroom_core::clock::{Clock, Timestamp};
use http::header::{HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};

use crate::config::{SimConfig, TokenOwner};
use crate::sim::{LogEntry, PendingLog, Reply, Simulator, lock, token_fingerprint, ts_millis};
use limits::{AuthKind, Buckets, Reading};
use model::Workspace;
use resolve::{ExecCx, Kind, Obj};

/// Where the simulated Linear lives.
pub const PREFIX: &str = "/linear";

/// Whether a request path belongs to the simulated Linear.
pub(crate) fn is_linear_path(path: &str) -> bool {
    path == PREFIX || path.starts_with("/linear/")
}

/// The simulated Linear's state: the workspace and every identity's buckets.
#[derive(Debug, Default)]
pub struct LinearState {
    pub(crate) workspace: Option<Workspace>,
    pub(crate) buckets: Buckets,
}

/// The state a simulator starts with: the configured workspace, seeded, and no spending yet.
pub(crate) fn state(config: &SimConfig, now: Timestamp) -> LinearState {
    LinearState {
        workspace: config
            .linear_workspace
            .as_ref()
            .map(|spec| seed::seed(config, spec, now)),
        ..Default::default()
    }
}

/// What the pipeline knows of a request, for its headers and its log line.
struct Seen {
    path: String,
    fingerprint: Option<String>,
    identity: String,
    /// When the request arrived, before the simulated latency.
    arrived: Timestamp,
    now: Timestamp,
    reading: Option<Reading>,
    complexity: Option<u64>,
}

/// The token of a Linear `Authorization` header: raw for an API key, `Bearer` for OAuth.
fn credential(headers: &http::HeaderMap) -> Option<(String, AuthKind)> {
    let auth = headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .trim();
    match auth.split_once(' ') {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => {
            Some((rest.trim().to_owned(), AuthKind::OAuth))
        }
        Some(_) => None,
        None if auth.is_empty() => None,
        None => Some((auth.to_owned(), AuthKind::ApiKey)),
    }
}

/// The operation's root fields, sorted and once each (fragments at the root included).
fn root_fields(doc: &apollo_compiler::ExecutableDocument, op: &Operation) -> Vec<String> {
    let mut out = Vec::new();
    let mut sets = vec![&op.selection_set];
    while let Some(set) = sets.pop() {
        for s in &set.selections {
            match s {
                Selection::Field(f) => out.push(f.name.to_string()),
                Selection::InlineFragment(f) => sets.push(&f.selection_set),
                Selection::FragmentSpread(f) => {
                    if let Some(d) = f.fragment_def(doc) {
                        sets.push(&d.selection_set);
                    }
                }
            }
            if sets.len() > 64 {
                break;
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

impl Simulator {
    /// Answers one request to the simulated Linear.
    pub(crate) async fn handle_linear(&self, req: Request<Bytes>, peer: IpAddr) -> Response<Bytes> {
        let inner = &self.inner;
        let arrived = inner.clock.now();
        inner.clock.sleep(inner.config.faults.latency).await;
        let (parts, body) = req.into_parts();
        let path = parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.path().to_owned(), |p| p.as_str().to_owned());
        let cred = credential(&parts.headers);
        let mut seen = Seen {
            arrived,
            path,
            fingerprint: cred.as_ref().map(|(t, _)| token_fingerprint(t)),
            identity: peer.to_string(),
            now: inner.clock.now(),
            reading: None,
            complexity: None,
        };
        let reply = self.linear_reply(&parts.method, parts.uri.path(), cred, &body, &mut seen);
        self.finish_linear(reply, &parts.method, &seen)
    }

    fn linear_reply(
        &self,
        method: &Method,
        path: &str,
        cred: Option<(String, AuthKind)>,
        body: &[u8],
        seen: &mut Seen,
    ) -> Reply {
        let mut state = lock(&self.inner.linear);
        let state = &mut *state;
        let Some(ws) = state.workspace.as_ref() else {
            let message = "no Linear workspace is seeded (--linear-workspace)";
            return Reply::json(StatusCode::NOT_FOUND, &schema::bad_request(message));
        };
        if path.trim_end_matches('/') != "/linear/graphql" {
            return Reply::json(StatusCode::NOT_FOUND, &schema::bad_request("Not Found"));
        }
        let viewer = cred.as_ref().and_then(|(token, kind)| {
            let TokenOwner::User(login) = self.token_owner(token)? else {
                return None;
            };
            Some((ws.user_by_login(&login)?, *kind))
        });
        let Some((viewer, kind)) = viewer else {
            return Reply::json(StatusCode::UNAUTHORIZED, &schema::unauthenticated());
        };
        seen.identity = ws.users[viewer].login.clone();
        if *method != Method::POST {
            let message = "GET requests are not supported: POST the query";
            return Reply::json(StatusCode::BAD_REQUEST, &schema::bad_request(message));
        }
        let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let Some(query) = request.get("query").and_then(Value::as_str) else {
            let message = "POST body missing, invalid Content-Type, or JSON object has no keys.";
            return Reply::json(StatusCode::BAD_REQUEST, &schema::bad_request(message));
        };
        let variables = match request.get("variables") {
            None | Some(Value::Null) => json!({}),
            Some(v) => v.clone(),
        };
        let operation_name = request.get("operationName").and_then(Value::as_str);
        let limits = self
            .inner
            .config
            .linear_workspace
            .as_ref()
            .map(|s| s.limits)
            .unwrap_or_default();
        let login = ws.users[viewer].login.clone();
        let doc = match schema::validate(query) {
            Ok(doc) => doc,
            Err(refused) => {
                seen.path.push_str("#invalid");
                seen.complexity = Some(0);
                seen.reading = Some(state.buckets.take(&limits, kind, &login, 0, seen.now));
                let errors = match refused {
                    schema::Refused::Syntax(e) | schema::Refused::Invalid(e) => e,
                };
                return Reply::json(StatusCode::BAD_REQUEST, &json!({ "errors": errors }));
            }
        };
        let op = match doc.operations.get(operation_name) {
            Ok(op) => op,
            Err(e) => {
                seen.path.push_str("#invalid");
                let body = schema::bad_request(&e.message().to_string());
                return Reply::json(StatusCode::BAD_REQUEST, &body);
            }
        };
        seen.path
            .push_str(&format!("#root={}", root_fields(&doc, op).join(",")));
        let complexity = cost::complexity(schema::subset(), &doc, op, &variables);
        seen.complexity = Some(complexity.points());
        if complexity.points() > limits.max_query_complexity {
            seen.reading = Some(state.buckets.take(&limits, kind, &login, 0, seen.now));
            let body = schema::too_complex(complexity.as_float(), limits.max_query_complexity);
            return Reply::json(StatusCode::BAD_REQUEST, &body);
        }
        let reading = state
            .buckets
            .take(&limits, kind, &login, complexity.points(), seen.now);
        seen.reading = Some(reading);
        if !reading.allowed {
            return Reply::json(StatusCode::BAD_REQUEST, &schema::ratelimited());
        }
        let cx = ExecCx {
            viewer,
            kind,
            reading,
            requested: complexity.points(),
            now: seen.now,
        };
        execute(ws, &cx, &doc, op, variables)
    }

    /// Adds Linear's headers, logs the request and builds the response.
    fn finish_linear(&self, mut reply: Reply, method: &Method, seen: &Seen) -> Response<Bytes> {
        let h = &mut reply.headers;
        let mut set = |name: &'static str, value: String| {
            if let Ok(v) = HeaderValue::from_str(&value) {
                h.insert(HeaderName::from_static(name), v);
            }
        };
        if let Some(r) = &seen.reading {
            set("x-ratelimit-requests-limit", r.requests.limit.to_string());
            set(
                "x-ratelimit-requests-remaining",
                r.requests.remaining.to_string(),
            );
            set(
                "x-ratelimit-requests-reset",
                r.requests.reset_ms.to_string(),
            );
            set(
                "x-ratelimit-complexity-limit",
                r.complexity.limit.to_string(),
            );
            set(
                "x-ratelimit-complexity-remaining",
                r.complexity.remaining.to_string(),
            );
            set(
                "x-ratelimit-complexity-reset",
                r.complexity.reset_ms.to_string(),
            );
        }
        if let Some(c) = seen.complexity {
            set("x-complexity", c.to_string());
        }
        if let Ok(v) = HeaderValue::from_str(&crate::sim::http_date(seen.now)) {
            h.insert(http::header::DATE, v);
        }
        let entry = LogEntry {
            time: ts_millis(seen.now),
            arrived: ts_millis(seen.arrived),
            identity: seen.identity.clone(),
            token_fingerprint: seen.fingerprint.clone(),
            method: method.as_str().to_owned(),
            path: seen.path.clone(),
            status: reply.status.as_u16(),
            bucket: seen.reading.map(|_| "complexity".to_owned()),
            cost: if seen.reading.is_some_and(|r| r.allowed) {
                seen.complexity.unwrap_or(0)
            } else {
                0
            },
            remaining: seen.reading.map(|r| r.complexity.remaining),
            in_flight: 0,
            request_id: self.next_request_id(),
            body_fault: None,
        };
        let mut resp = Response::new(reply.body);
        *resp.status_mut() = reply.status;
        *resp.headers_mut() = reply.headers;
        resp.extensions_mut().insert(PendingLog(entry));
        resp
    }
}

/// Runs a valid, affordable document; Linear answers field errors with HTTP 200.
fn execute(
    ws: &Workspace,
    cx: &ExecCx,
    doc: &apollo_compiler::validation::Valid<apollo_compiler::ExecutableDocument>,
    op: &Operation,
    variables: Value,
) -> Reply {
    let vars: apollo_compiler::response::JsonMap =
        serde_json::from_value(variables).unwrap_or_default();
    let root = Obj {
        ws,
        cx,
        kind: Kind::Query,
    };
    let run = Execution::new(schema::subset(), doc)
        .operation(op)
        .raw_variable_values(&vars)
        .execute_sync(&root);
    match run {
        Ok(mut response) => {
            add_not_found_extensions(&mut response);
            // Serialized as it is: the response keeps the query's field order.
            let body = serde_json::to_vec(&response).unwrap_or_default();
            Reply::raw_json(StatusCode::OK, body)
        }
        Err(e) => {
            let body = json!({ "errors": [{
                "message": e.message().to_string(),
                "extensions": { "code": "BAD_USER_INPUT", "type": "invalid input", "userError": true },
            }]});
            Reply::json(StatusCode::BAD_REQUEST, &body)
        }
    }
}

/// Linear's shape of field errors: the message as the resolver gave it (the executor prefixes
/// "resolver error: "), and "Entity not found" with Linear's extensions.
fn add_not_found_extensions(response: &mut apollo_compiler::response::ExecutionResponse) {
    for e in &mut response.errors {
        if let Some(message) = e.message.strip_prefix("resolver error: ") {
            e.message = message.to_owned();
        }
        if let Some(entity) = e.message.strip_prefix("Entity not found: ") {
            let extensions = schema::not_found_extensions(entity);
            e.extensions = serde_json::from_value(extensions).unwrap_or_default();
        }
    }
}
