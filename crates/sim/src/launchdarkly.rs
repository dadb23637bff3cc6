//! The simulated LaunchDarkly account: REST API v2 under `/api/v2`, beside GitHub, GitLab,
//! Jira and Linear on the same port. This module owns the LaunchDarkly request pipeline:
//! identity (`Authorization: <token>`, the raw token without a scheme word, from the
//! simulator's one token table: every token belongs to the one account, a user's token is a
//! personal token of the member `LOGIN@example.com`, an installation's a service token), the
//! account-global and per-route windows ([`limits`]), the `LD-API-Version` pin, the common
//! headers and the request log entry (its `bucket` is the route template, e.g.
//! `GET /api/v2/flags/{projectKey}`; [`route_of`] and [`route_family`] classify a logged path).
//! The submodules own the seeded data (`model`, seeded by `seed` from an [`LdAccountSpec`]),
//! the rendering and the endpoints ([`routes`]).
//!
//! Order of checks: the credential (401, spends nothing), the route (an unknown path answers
//! 404 and spends nothing), the windows (429), the API version (400), then the endpoint (404
//! for an unknown project or environment, which spends its route's window like any answer).

// A refusal is the response itself, built at most once per request.
#![allow(clippy::result_large_err)]

pub(crate) mod limits;
mod model;
mod render;
pub mod routes;
mod seed;
mod spec;
mod touch;

pub use routes::{ROUTES, route_family, route_of};
pub use spec::{LdAccountSpec, LdLimits};
pub use touch::LdAccountCounts;

use std::net::IpAddr;

use bytes::Bytes;
use headroom_core::clock::{Clock, Timestamp};
use http::header::HeaderValue;
use http::{HeaderMap, Request, Response, StatusCode};

use crate::config::{SimConfig, TokenOwner};
use crate::sim::{
    LogEntry, PendingLog, Reply, Simulator, http_date, lock, token_fingerprint, ts_millis,
};
use model::{Account, object_id};
use routes::{Caller, LdCtx, error};

/// Where LaunchDarkly's REST API lives.
pub const PREFIX: &str = "/api/v2";

/// Whether a request path belongs to the simulated LaunchDarkly.
pub(crate) fn is_launchdarkly_path(path: &str) -> bool {
    path == PREFIX || path.starts_with("/api/v2/")
}

/// The simulated LaunchDarkly's state: the account and its windows.
#[derive(Debug, Default)]
pub struct LdState {
    pub(crate) account: Option<Account>,
    pub(crate) windows: limits::Windows,
}

/// The state a simulator starts with: the configured account, seeded, and empty windows.
pub(crate) fn state(config: &SimConfig, now: Timestamp) -> LdState {
    LdState {
        account: config
            .launchdarkly_account
            .as_ref()
            .map(|spec| seed::seed(spec, config, now)),
        windows: limits::Windows::default(),
    }
}

/// The token of a request: the whole `Authorization` value, as LaunchDarkly takes it.
fn token_of(headers: &HeaderMap) -> Option<String> {
    let v = headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .trim();
    (!v.is_empty()).then(|| v.to_owned())
}

/// How the API version header pages the flag list: `Ok(true)` when paged (20240415 or later,
/// or `beta`), `Ok(false)` when absent or older; `Err` when it is not a version.
fn paged_flags(headers: &HeaderMap) -> Result<bool, ()> {
    let Some(v) = headers.get("ld-api-version") else {
        return Ok(false);
    };
    let v = v.to_str().map_err(|_| ())?.trim();
    if v == "beta" {
        return Ok(true);
    }
    match v.parse::<u32>() {
        Ok(n) if v.len() == 8 => Ok(n >= 20240415),
        _ => Err(()),
    }
}

/// What the log needs of a request.
struct Seen {
    method: String,
    path_and_query: String,
    fingerprint: Option<String>,
    identity: String,
    /// When the request arrived, before the simulated latency.
    arrived: Timestamp,
    request_id: String,
    now: Timestamp,
    route: Option<&'static str>,
    admitted: bool,
    remaining: Option<u64>,
}

impl Simulator {
    /// Answers one LaunchDarkly request.
    pub(crate) async fn handle_launchdarkly(
        &self,
        req: Request<Bytes>,
        peer: IpAddr,
    ) -> Response<Bytes> {
        let inner = &self.inner;
        let arrived = inner.clock.now();
        inner.clock.sleep(inner.config.faults.latency).await;
        let now = inner.clock.now();
        let (parts, _body) = req.into_parts();
        let path = parts.uri.path().to_owned();
        let token = token_of(&parts.headers);
        let request_id = self.next_request_id();
        let mut seen = Seen {
            arrived,
            method: parts.method.as_str().to_owned(),
            path_and_query: parts
                .uri
                .path_and_query()
                .map_or_else(|| path.clone(), |p| p.as_str().to_owned()),
            fingerprint: token.as_deref().map(token_fingerprint),
            identity: peer.to_string(),
            request_id: request_id.clone(),
            now,
            route: None,
            admitted: false,
            remaining: None,
        };
        let owner = token.as_deref().and_then(|t| self.token_owner(t));
        let mut state = lock(&inner.launchdarkly);
        let state = &mut *state;
        let Some(account) = state.account.as_ref() else {
            let reply = error(
                StatusCode::NOT_FOUND,
                "not_found",
                "No LaunchDarkly account is simulated here.",
                &request_id,
            );
            return self.finish_launchdarkly(reply, &seen);
        };
        let (Some(token), Some(owner)) = (token, owner) else {
            let reply = error(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "Invalid access token",
                &request_id,
            );
            return self.finish_launchdarkly(reply, &seen);
        };
        let token_id = object_id(&format!("ld-token:{token}"));
        let member = match &owner {
            TokenOwner::User(login) => account.member_by_email(&format!("{login}@example.com")),
            TokenOwner::Installation(_) => None,
        };
        seen.identity = match member.and_then(|m| account.members.get(m)) {
            Some(m) => m.email.clone(),
            None => format!("service:{token_id}"),
        };
        let Some(route) = route_of(parts.method.as_str(), &path) else {
            let reply = error(
                StatusCode::NOT_FOUND,
                "not_found",
                "Unknown route",
                &request_id,
            );
            return self.finish_launchdarkly(reply, &seen);
        };
        seen.route = Some(route);
        let limits = &account.spec.limits;
        let verdict = state.windows.admit(limits, route, now.as_millisecond());
        seen.remaining = Some(verdict.route_remaining.min(verdict.global_remaining));
        if !verdict.admitted {
            return self.finish_launchdarkly(verdict.refusal(limits), &seen);
        }
        seen.admitted = true;
        let reply = match paged_flags(&parts.headers) {
            Err(()) => error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "Invalid API version",
                &request_id,
            ),
            Ok(paged) => {
                let ctx = LdCtx {
                    segments: crate::sim::path_segments(&path),
                    query: crate::sim::parse_query(parts.uri.query()),
                    paged_flags: paged,
                    caller: Caller { token_id, member },
                    request_id: request_id.clone(),
                };
                routes::answer(account, &ctx, route)
            }
        };
        self.finish_launchdarkly(verdict.headers(reply), &seen)
    }

    /// Adds LaunchDarkly's common headers, logs the request and builds the response.
    fn finish_launchdarkly(&self, reply: Reply, seen: &Seen) -> Response<Bytes> {
        let mut reply = reply;
        let h = &mut reply.headers;
        if let Ok(v) = HeaderValue::from_str(&http_date(seen.now)) {
            h.insert(http::header::DATE, v);
        }
        if let Ok(v) = HeaderValue::from_str(&reply.body.len().to_string()) {
            h.insert(http::header::CONTENT_LENGTH, v);
        }
        let entry = LogEntry {
            time: ts_millis(seen.now),
            arrived: ts_millis(seen.arrived),
            identity: seen.identity.clone(),
            token_fingerprint: seen.fingerprint.clone(),
            method: seen.method.clone(),
            path: seen.path_and_query.clone(),
            status: reply.status.as_u16(),
            bucket: seen.route.map(str::to_owned),
            cost: u64::from(seen.admitted),
            remaining: seen.remaining,
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
