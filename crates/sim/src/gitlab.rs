//! The simulated GitLab: REST v4 under `/api/v4`, beside the GitHub API on the same port.
//! This module owns the GitLab request pipeline (identity by `PRIVATE-TOKEN` or `Bearer`,
//! the request as GitLab routes see it, the common headers, the request log entry); the
//! submodules own the data, the rendering and each group of endpoints.
//!
//! Tokens map to users through the simulator's one token table: a GitHub login is the GitLab
//! `username`, and the user's GitHub id is its GitLab id (and its namespace's id).

// A route's error is the response itself, built at most once per request.
#![allow(clippy::result_large_err)]

use std::net::IpAddr;

use bytes::Bytes;
use headroom_core::clock::Clock;
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use serde_json::{Map, Value, json};

use crate::config::TokenOwner;
use crate::sim::{
    LogEntry, PendingLog, Provider, ProviderFault, Reply, Simulator, bad_gateway, http_date, lock,
    token_fingerprint, ts_millis,
};

mod branches;
mod commits;
pub mod group;
mod merge;
mod merge_requests;
mod paging;
mod projects;
mod quota;
mod render;
pub mod state;

pub use state::GitlabState;

/// Where GitLab's REST API lives.
pub const API_PREFIX: &str = "/api/v4";

/// Whether a request path belongs to the GitLab API.
pub(crate) fn is_gitlab_path(path: &str) -> bool {
    path == API_PREFIX || path.starts_with("/api/v4/")
}

/// The authenticated GitLab user.
#[derive(Debug, Clone)]
pub(crate) struct GlUser {
    pub(crate) id: u64,
    pub(crate) username: String,
    pub(crate) name: String,
}

/// A GitLab request as the routes see it.
#[derive(Debug)]
pub(crate) struct GlCtx {
    pub(crate) method: Method,
    /// Path segments after `/api/v4`, percent-decoded (so `alice%2Fwidgets` is one segment).
    pub(crate) segments: Vec<String>,
    /// Query string pairs.
    pub(crate) query: Vec<(String, String)>,
    /// The request's body parameters (JSON or form), merged over the query's.
    pub(crate) params: Map<String, Value>,
    /// The instance's web root (`http://127.0.0.1:PORT`), for `web_url`s and Link headers.
    pub(crate) base: String,
    pub(crate) user: GlUser,
    pub(crate) now: headroom_core::clock::Timestamp,
}

impl GlCtx {
    /// A parameter as a string (numbers and booleans are written out).
    pub(crate) fn str_param(&self, name: &str) -> Option<String> {
        match self.params.get(name)? {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    }

    /// A boolean parameter (`true`, `"true"`, `1`, `"1"`).
    pub(crate) fn bool_param(&self, name: &str) -> Option<bool> {
        match self.params.get(name)? {
            Value::Bool(b) => Some(*b),
            Value::Number(n) => Some(n.as_u64() != Some(0)),
            Value::String(s) => Some(matches!(s.as_str(), "true" | "1" | "yes")),
            _ => None,
        }
    }

    /// An unsigned integer parameter.
    pub(crate) fn u64_param(&self, name: &str) -> Option<u64> {
        match self.params.get(name)? {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.parse().ok(),
            _ => None,
        }
    }
}

/// `{"message": …}` with a status.
pub(crate) fn message(status: StatusCode, message: impl Into<Value>) -> Reply {
    let mut r = Reply::json(status, &json!({ "message": message.into() }));
    r.etag = false;
    r
}

/// GitLab's answer to a missing required parameter.
pub(crate) fn missing(param: &str) -> Reply {
    Reply::json(
        StatusCode::BAD_REQUEST,
        &json!({ "error": format!("{param} is missing") }),
    )
}

/// `404 Project Not Found`.
pub(crate) fn project_not_found() -> Reply {
    message(StatusCode::NOT_FOUND, "404 Project Not Found")
}

/// `201 Created` with a JSON body.
pub(crate) fn created(v: &Value) -> Reply {
    Reply::json(StatusCode::CREATED, v)
}

/// `200 OK` with a JSON body.
pub(crate) fn ok(v: &Value) -> Reply {
    Reply::json(StatusCode::OK, v)
}

/// The token of a `PRIVATE-TOKEN` header, else of `Authorization: Bearer …`.
fn token_of(headers: &HeaderMap) -> Option<String> {
    if let Some(t) = headers.get("private-token").and_then(|h| h.to_str().ok()) {
        return Some(t.trim().to_owned());
    }
    let auth = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())?;
    let (scheme, rest) = auth.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| rest.trim().to_owned())
}

/// Body parameters (a JSON object or a form) over the query's.
fn params_of(query: &[(String, String)], headers: &HeaderMap, body: &[u8]) -> Map<String, Value> {
    let mut params: Map<String, Value> = query
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let form = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"));
    if form {
        let text = String::from_utf8_lossy(body);
        for (k, v) in crate::sim::parse_query(Some(&text)) {
            params.insert(k, Value::String(v));
        }
    } else if let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) {
        params.extend(map);
    }
    params
}

/// What the pipeline knows of a request before routing it, for the log.
pub(crate) struct Seen {
    pub(crate) method: Method,
    pub(crate) path_and_query: String,
    pub(crate) fingerprint: Option<String>,
    pub(crate) identity: String,
    /// When the request arrived, before the simulated latency.
    pub(crate) arrived: headroom_core::clock::Timestamp,
    pub(crate) request_id: String,
    pub(crate) now: headroom_core::clock::Timestamp,
    /// The throttle's reading, when the instance reports one.
    pub(crate) reading: Option<quota::Reading>,
}

impl Simulator {
    /// The GitLab user a token belongs to (app installations have no GitLab identity).
    fn gitlab_user(&self, token: &str) -> Option<GlUser> {
        let TokenOwner::User(login) = self.token_owner(token)? else {
            return None;
        };
        let w = lock(&self.inner.world);
        let (id, name) = match w.user(&login) {
            Some(u) => (u.id, u.name.clone().unwrap_or_else(|| u.login.clone())),
            None => (0, login.clone()),
        };
        Some(GlUser {
            id,
            username: login,
            name,
        })
    }

    /// Answers one GitLab request.
    pub(crate) async fn handle_gitlab(&self, req: Request<Bytes>, peer: IpAddr) -> Response<Bytes> {
        let inner = &self.inner;
        // The fixed latency GitHub's requests get (`--latency-ms`), taken before the request is
        // counted, so the log's time is the answer's, as GitHub's is.
        let arrived = inner.clock.now();
        inner.clock.sleep(inner.config.faults.latency).await;
        let now = inner.clock.now();
        let (parts, body) = req.into_parts();
        let base = self.request_base(&parts.uri, &parts.headers);
        let path_and_query = parts
            .uri
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_else(|| parts.uri.path().to_owned());
        let token = token_of(&parts.headers);
        let user = token.as_deref().and_then(|t| self.gitlab_user(t));
        let mut seen = Seen {
            arrived,
            method: parts.method.clone(),
            path_and_query,
            fingerprint: token.as_deref().map(token_fingerprint),
            identity: peer.to_string(),
            request_id: self.next_request_id(),
            now,
            reading: None,
        };
        let Some(user) = user else {
            let reply = message(StatusCode::UNAUTHORIZED, "401 Unauthorized");
            return self.finish_gitlab(reply, &seen);
        };
        seen.identity = user.username.clone();
        let mutation = !matches!(parts.method, Method::GET | Method::HEAD);
        let fault = self.provider_fault(Provider::GitLab, &user.username, mutation);
        if fault == Some(ProviderFault::Read502) {
            return self.finish_gitlab(bad_gateway(), &seen);
        }
        if let Some(refusal) = self.gitlab_limits(&parts.method, parts.uri.path(), &user, &mut seen)
        {
            return self.finish_gitlab(refusal, &seen);
        }
        if fault == Some(ProviderFault::Mutation429) {
            let refusal = quota::scenario_throttled(
                seen.reading.as_ref(),
                now,
                self.inner.config.gitlab_window_secs,
            );
            return self.finish_gitlab(refusal, &seen);
        }
        let query = crate::sim::parse_query(parts.uri.query());
        let params = params_of(&query, &parts.headers, &body);
        let segments = crate::sim::path_segments(parts.uri.path())
            .into_iter()
            .skip(2)
            .collect();
        let ctx = GlCtx {
            method: parts.method,
            segments,
            query,
            params,
            base,
            user,
            now,
        };
        let reply = self.gitlab_route(&ctx);
        let stall = group::take_stall(&mut lock(&self.inner.gitlab));
        if fault == Some(ProviderFault::ResponseLost) || stall {
            self.lose_response().await;
        }
        self.finish_gitlab(reply, &seen)
    }

    /// Counts the request against the throttle (unless self-managed) and, for a project
    /// creation, the application limit; the refusal, if either refuses.
    fn gitlab_limits(
        &self,
        method: &Method,
        path: &str,
        user: &GlUser,
        seen: &mut Seen,
    ) -> Option<Reply> {
        let config = &self.inner.config;
        let mut gl = lock(&self.inner.gitlab);
        if !config.gitlab_self_managed {
            let reading = gl.quota.throttle(
                &user.username,
                seen.now,
                config.gitlab_requests_per_minute,
                config.gitlab_window_secs,
            );
            seen.reading = Some(reading);
            if reading.exceeded() {
                return Some(quota::throttled(None));
            }
        }
        if let Some(endpoint) = group::limits::endpoint_of(method, path) {
            let limits = config.gitlab_endpoint_limits_in_force();
            let refusal = gl.group.windows.check(
                &limits,
                endpoint,
                &user.username,
                seen.now,
                config.gitlab_window_secs,
            );
            if refusal.is_some() {
                // GitLab.com's Projects and Groups API limits answer without RateLimit-*.
                seen.reading = None;
                return refusal;
            }
        }
        let creation = *method == Method::POST && path.trim_end_matches('/') == "/api/v4/projects";
        if creation
            && !gl.quota.allow_project_creation(
                &user.username,
                seen.now,
                config.gitlab_project_creations_per_minute,
                config.gitlab_window_secs,
            )
        {
            return Some(quota::application_limited());
        }
        None
    }

    /// Dispatches a GitLab request whose identity is settled.
    fn gitlab_route(&self, ctx: &GlCtx) -> Reply {
        let seg: Vec<&str> = ctx.segments.iter().map(String::as_str).collect();
        let m = &ctx.method;
        let get = *m == Method::GET || *m == Method::HEAD;
        let mut gl = lock(&self.inner.gitlab);
        if let Some(reply) = group::route(ctx, &mut gl, &seg) {
            return reply;
        }
        match seg.as_slice() {
            ["user"] if get => ok(&render::user(&ctx.base, &ctx.user)),
            ["projects"] if *m == Method::POST => projects::create(ctx, &mut gl),
            ["projects", id] if get => projects::get(ctx, &gl, id),
            ["projects", id, "repository", "branches"] if get => branches::list(ctx, &gl, id),
            ["projects", id, "repository", "branches"] if *m == Method::POST => {
                branches::create(ctx, &mut gl, id)
            }
            ["projects", id, "repository", "branches", name] if get => {
                branches::get(ctx, &gl, id, name)
            }
            ["projects", id, "protected_branches"] if *m == Method::POST => {
                branches::protect(ctx, &mut gl, id)
            }
            ["projects", id, "repository", "commits"] if *m == Method::POST => {
                commits::create(ctx, &mut gl, id)
            }
            ["projects", id, "merge_requests"] if get => merge_requests::list(ctx, &gl, id),
            ["projects", id, "merge_requests"] if *m == Method::POST => {
                merge_requests::create(ctx, &mut gl, id)
            }
            ["projects", id, "merge_requests", iid] if get => {
                merge_requests::get(ctx, &gl, id, iid)
            }
            ["projects", id, "merge_requests", iid, "merge"] if *m == Method::PUT => {
                merge::merge(ctx, &mut gl, id, iid)
            }
            _ => Reply::json(StatusCode::NOT_FOUND, &json!({"error": "404 Not Found"})),
        }
    }

    /// Adds GitLab's common headers, logs the request and builds the response.
    pub(crate) fn finish_gitlab(&self, reply: Reply, seen: &Seen) -> Response<Bytes> {
        let mut reply = match &seen.reading {
            Some(r) => quota::add_headers(reply, r),
            None => reply,
        };
        let h = &mut reply.headers;
        if let Ok(v) = HeaderValue::from_str(&seen.request_id) {
            h.insert(HeaderName::from_static("x-request-id"), v);
        }
        if let Ok(v) = HeaderValue::from_str(&http_date(seen.now)) {
            h.insert(http::header::DATE, v);
        }
        h.insert(http::header::SERVER, HeaderValue::from_static("nginx"));
        if let Ok(v) = HeaderValue::from_str(&reply.body.len().to_string()) {
            h.insert(http::header::CONTENT_LENGTH, v);
        }
        let entry = LogEntry {
            time: ts_millis(seen.now),
            arrived: ts_millis(seen.arrived),
            identity: seen.identity.clone(),
            token_fingerprint: seen.fingerprint.clone(),
            method: seen.method.as_str().to_owned(),
            path: seen.path_and_query.clone(),
            status: reply.status.as_u16(),
            bucket: seen.reading.map(|_| quota::THROTTLE_NAME.to_owned()),
            cost: u64::from(seen.reading.is_some()),
            remaining: seen.reading.map(|r| r.remaining),
            in_flight: 0,
            request_id: seen.request_id.clone(),
            body_fault: None,
        };
        let mut resp = Response::new(reply.body);
        *resp.status_mut() = reply.status;
        *resp.headers_mut() = reply.headers;
        resp.extensions_mut().insert(PendingLog(entry));
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SimConfig, TokenSpec};
    use headroom_core::clock::{SignedDuration, Timestamp, TokioClock};

    #[tokio::test(start_paused = true)]
    async fn a_gitlab_request_takes_the_simulators_latency_and_logs_its_answers_time() {
        let mut config = SimConfig::default().with_token(TokenSpec::user("t1", "alice"));
        config.faults.latency = SignedDuration::from_millis(150);
        let start = Timestamp::from_second(1_800_000_000).expect("valid");
        let clock = TokioClock::anchored_at(start);
        let sim = Simulator::new(config, clock).expect("simulator");
        let request = Request::get("/api/v4/user")
            .header("private-token", "t1")
            .body(Bytes::new())
            .expect("request");
        let response = sim.handle(request, IpAddr::from([127, 0, 0, 1])).await;
        assert_eq!(response.status(), StatusCode::OK);
        let took = clock.now().duration_since(start);
        assert_eq!(took, SignedDuration::from_millis(150));
        let log = sim.request_log();
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].time, ts_millis(start + took));
    }
}
