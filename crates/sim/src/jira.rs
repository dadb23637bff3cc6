//! The simulated Jira Cloud site: platform REST v3 under `/rest/api/3` and Jira Software's
//! agile REST under `/rest/agile/1.0`, beside GitHub and GitLab on the same port. This
//! module owns the Jira request pipeline: identity (`Basic base64(email:token)` for API
//! tokens, `Bearer` for OAuth apps), the limits (burst buckets for every request, the app's
//! hourly points for OAuth), the common headers and the request log entry. The submodules
//! own the seeded data (`model`, seeded by `seed` from a [`JiraSiteSpec`]), the JQL, the
//! rendering and the endpoints.
//!
//! Tokens map to users through the simulator's one token table: a token owned by login `L`
//! authenticates as `L@example.com`.

// A route's error is the response itself, built at most once per request.
#![allow(clippy::result_large_err)]

use std::net::IpAddr;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use headroom_core::clock::{Clock, Timestamp};
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use serde_json::{Map, Value, json};
use sha2::Digest;

use crate::config::{SimConfig, TokenOwner};
use crate::sim::{
    LogEntry, PendingLog, Reply, Simulator, http_date, lock, token_fingerprint, ts_millis,
};
use crate::world::World;

mod agile;
mod jql;
pub(crate) mod limits;
pub(crate) mod model;
mod render;
mod routes;
mod seed;
mod spec;
mod touch;

pub use spec::{JiraLimits, JiraSiteSpec};
pub use touch::JiraSiteCounts;

pub(crate) use model::JiraState;

/// Where the platform REST API lives.
pub const PLATFORM_PREFIX: &str = "/rest/api/3";
/// Where Jira Software's agile REST API lives.
pub const AGILE_PREFIX: &str = "/rest/agile/1.0";

/// Atlassian's API gateway: `/ex/jira/{cloudId}` before a site's path, as scoped tokens and
/// OAuth apps call it.
pub const GATEWAY_PREFIX: &str = "/ex/jira/";
/// Where an OAuth app learns the `cloudId` of the sites its token reaches.
pub const ACCESSIBLE_RESOURCES: &str = "/oauth/token/accessible-resources";

/// Whether a request path belongs to the Jira APIs (the site's or the gateway's).
pub(crate) fn is_jira_path(path: &str) -> bool {
    let on_site = |path: &str| {
        [PLATFORM_PREFIX, AGILE_PREFIX]
            .iter()
            .any(|p| path == *p || path.strip_prefix(p).is_some_and(|r| r.starts_with('/')))
    };
    on_site(path) || path.starts_with(GATEWAY_PREFIX) || path == ACCESSIBLE_RESOURCES
}

/// The site's `cloudId`: a UUID derived from its name.
pub(crate) fn cloud_id(site: &str) -> String {
    let d = sha2::Sha256::digest(site.as_bytes());
    let hex: String = d.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// A request path as the site sees it: the gateway's prefix removed when its `cloudId` is
/// the site's; `None` for another cloud.
fn site_path(path: &str, site: &model::Site) -> Option<String> {
    let Some(rest) = path.strip_prefix(GATEWAY_PREFIX) else {
        return Some(path.to_owned());
    };
    let (cloud, tail) = rest.split_once('/').unwrap_or((rest, ""));
    (cloud == cloud_id(&site.spec.name)).then(|| format!("/{tail}"))
}

/// `GET /oauth/token/accessible-resources`: the one site, for a bearer token.
fn accessible_resources(base: &str, site: &model::Site) -> Reply {
    let name = &site.spec.name;
    Reply::json(
        StatusCode::OK,
        &json!([{
            "id": cloud_id(name),
            "url": base,
            "name": name,
            "scopes": ["read:jira-work", "read:jira-user"],
            "avatarUrl": format!("{base}/secure/site-avatar.png"),
        }]),
    )
}

/// The site's state at the simulator's start: seeded when the configuration asks for one.
pub(crate) fn state(config: &SimConfig, world: &World, now: Timestamp) -> JiraState {
    JiraState {
        site: config
            .jira_site
            .as_ref()
            .map(|spec| seed::seed(spec, config, world, now)),
        buckets: Default::default(),
    }
}

/// `{"errorMessages": [message], "errors": {}}`, Jira's ErrorCollection.
pub(crate) fn errors(status: StatusCode, message: &str) -> Reply {
    Reply::json(status, &json!({"errorMessages": [message], "errors": {}}))
}

/// What the simulator answers a request without a valid credential.
const UNAUTHENTICATED: &str = "Client must be authenticated to access this resource.";

/// A Jira request as the routes see it.
#[derive(Debug)]
pub(crate) struct JCtx {
    pub(crate) method: Method,
    query: Vec<(String, String)>,
    /// A POST's JSON object.
    body: Map<String, Value>,
    /// The site's web root (`http://127.0.0.1:PORT`), for `self` links.
    pub(crate) base: String,
    /// The caller, an index into the site's users.
    pub(crate) user: usize,
    pub(crate) now: Timestamp,
}

impl JCtx {
    /// A parameter: the body's (numbers written out), else the query's last.
    pub(crate) fn param(&self, name: &str) -> Option<String> {
        match self.body.get(name) {
            Some(Value::String(s)) => return Some(s.clone()),
            Some(Value::Null) | None => {}
            Some(other) => return Some(other.to_string()),
        }
        self.query
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }

    /// A list parameter: the body's array (or string), else every query occurrence.
    pub(crate) fn list_param(&self, name: &str) -> Vec<String> {
        match self.body.get(name) {
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect(),
            Some(Value::String(s)) => vec![s.clone()],
            _ => self
                .query
                .iter()
                .filter(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .collect(),
        }
    }
}

/// A request's credential.
enum Credential {
    /// An API token with the e-mail it was sent with.
    Basic { email: String, token: String },
    /// An OAuth access token.
    Bearer(String),
}

impl Credential {
    fn token(&self) -> &str {
        match self {
            Credential::Basic { token, .. } | Credential::Bearer(token) => token,
        }
    }
}

fn credential_of(headers: &HeaderMap) -> Option<Credential> {
    let auth = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, rest) = auth.trim().split_once(' ')?;
    if scheme.eq_ignore_ascii_case("bearer") {
        return Some(Credential::Bearer(rest.trim().to_owned()));
    }
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = String::from_utf8(STANDARD.decode(rest.trim()).ok()?).ok()?;
    let (email, token) = decoded.split_once(':')?;
    Some(Credential::Basic {
        email: email.to_owned(),
        token: token.to_owned(),
    })
}

/// What the log needs of a request.
struct Seen {
    method: Method,
    path_and_query: String,
    fingerprint: Option<String>,
    identity: String,
    /// When the request arrived, before the simulated latency.
    arrived: Timestamp,
    request_id: String,
    now: Timestamp,
    bucket: Option<String>,
    cost: u64,
    remaining: Option<u64>,
}

impl Simulator {
    /// The login a credential authenticates, if the token is known and (for an API token)
    /// sent with its owner's e-mail.
    fn jira_login(&self, cred: &Credential) -> Option<String> {
        let TokenOwner::User(login) = self.token_owner(cred.token())? else {
            return None;
        };
        match cred {
            Credential::Basic { email, .. }
                if !email.eq_ignore_ascii_case(&format!("{login}@example.com")) =>
            {
                None
            }
            _ => Some(login),
        }
    }

    /// Answers one Jira request.
    pub(crate) async fn handle_jira(&self, req: Request<Bytes>, peer: IpAddr) -> Response<Bytes> {
        let inner = &self.inner;
        let arrived = inner.clock.now();
        inner.clock.sleep(inner.config.faults.latency).await;
        let now = inner.clock.now();
        let (parts, body) = req.into_parts();
        let base = self.request_base(&parts.uri, &parts.headers);
        let path = parts.uri.path().to_owned();
        let cred = credential_of(&parts.headers);
        let mut seen = Seen {
            arrived,
            method: parts.method.clone(),
            path_and_query: parts
                .uri
                .path_and_query()
                .map_or_else(|| path.clone(), |p| p.as_str().to_owned()),
            fingerprint: cred.as_ref().map(|c| token_fingerprint(c.token())),
            identity: peer.to_string(),
            request_id: self.next_request_id(),
            now,
            bucket: None,
            cost: 0,
            remaining: None,
        };
        let login = cred.as_ref().and_then(|c| self.jira_login(c));
        let mut state = lock(&inner.jira);
        let state = &mut *state;
        let Some(site) = state.site.as_ref() else {
            let reply = errors(StatusCode::NOT_FOUND, "No Jira site is simulated here.");
            return self.finish_jira(reply, &seen);
        };
        let Some(user) = login.as_deref().and_then(|l| site.user_by_login(l)) else {
            let reply = errors(StatusCode::UNAUTHORIZED, UNAUTHENTICATED);
            return self.finish_jira(reply, &seen);
        };
        seen.identity = site.users[user].login.clone();
        let oauth = matches!(cred, Some(Credential::Bearer(_)));
        if path == ACCESSIBLE_RESOURCES {
            let reply = if oauth {
                accessible_resources(&base, site)
            } else {
                errors(StatusCode::UNAUTHORIZED, UNAUTHENTICATED)
            };
            return self.finish_jira(reply, &seen);
        }
        let Some(path) = site_path(&path, site) else {
            let reply = errors(StatusCode::NOT_FOUND, "No site with this cloudId.");
            return self.finish_jira(reply, &seen);
        };
        let limits = site.spec.limits;
        let endpoint = limits::endpoint_of(&path);
        seen.bucket = Some(format!("jira-burst {} {endpoint}", parts.method));
        if let Some(refusal) = state
            .buckets
            .burst(&limits, parts.method.as_str(), &endpoint, now)
        {
            return self.finish_jira(refusal, &seen);
        }
        seen.cost = 1;
        if oauth {
            seen.bucket = Some(limits::APP_POLICY.to_owned());
            seen.cost = 0;
            if let Some(refusal) = state.buckets.app_check(&limits, now) {
                seen.remaining = Some(0);
                return self.finish_jira(refusal, &seen);
            }
        }
        let ctx = JCtx {
            method: parts.method.clone(),
            query: crate::sim::parse_query(parts.uri.query()),
            body: match serde_json::from_slice::<Value>(&body) {
                Ok(Value::Object(m)) => m,
                _ => Map::new(),
            },
            base,
            user,
            now,
        };
        let (reply, objects) = route(&ctx, site, &path);
        let reply = if oauth {
            let (reply, spent) = state.buckets.app_charge(&limits, now, 1 + objects, reply);
            seen.cost = spent;
            seen.remaining = Some(state.buckets.app_remaining(&limits));
            reply
        } else {
            reply
        };
        self.finish_jira(reply, &seen)
    }

    /// Adds Jira's common headers, logs the request and builds the response.
    fn finish_jira(&self, reply: Reply, seen: &Seen) -> Response<Bytes> {
        let mut reply = reply;
        let h = &mut reply.headers;
        if let Ok(v) = HeaderValue::from_str(&seen.request_id) {
            h.insert(HeaderName::from_static("x-arequestid"), v);
        }
        if let Ok(v) = HeaderValue::from_str(&http_date(seen.now)) {
            h.insert(http::header::DATE, v);
        }
        h.insert(
            http::header::SERVER,
            HeaderValue::from_static("AtlassianEdge"),
        );
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
            bucket: seen.bucket.clone(),
            cost: seen.cost,
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

/// Dispatches by API: the reply and the core objects (issues, projects) it returned.
fn route(ctx: &JCtx, site: &model::Site, path: &str) -> (Reply, u64) {
    let segments = crate::sim::path_segments(path);
    let seg: Vec<&str> = segments.iter().map(String::as_str).collect();
    match seg.as_slice() {
        ["rest", "api", "3", rest @ ..] => routes::route(ctx, site, rest),
        ["rest", "agile", "1.0", rest @ ..] => (agile::route(ctx, site, rest), 0),
        _ => (routes::not_found(), 0),
    }
}
