//! The requests the stages send through the exit door, and what every stage shares: how a
//! list page is read (`items`, `_links.next`), how a scope's pages are followed and committed
//! with their cursor, how a refusal is recorded, and cursors as text.
//!
//! `LD-API-Version` is not set here: the exit door's LaunchDarkly dialect pins it on every
//! request (`headroom_http`'s one constant), so paging never depends on the token's version.

use headroom_core::route::RouteFamily;
use headroom_http::{ApiError, ApiRequest};
use headroom_store::{CheckpointStatus, Record};
use headroom_sync::{StageCtx, StageError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The API's root: every path a stage sends and every `_links.next` it follows is under it.
pub(crate) const API: &str = "/api/v2/";

/// A GET of `path` counted in `family`, spending the account's global window and the window
/// of `route` — the method and the path TEMPLATE (`GET /api/v2/flags/{projectKey}`), never a
/// path with keys in it.
pub(crate) fn get(path: &str, family: RouteFamily, route: &'static str) -> ApiRequest {
    ApiRequest::get(path)
        .route(family)
        .launchdarkly_route(route)
}

/// One endpoint a stage pages: its family, its route template and what its items become.
#[derive(Clone, Copy)]
pub(crate) struct Endpoint {
    /// The family its requests are counted in.
    pub(crate) family: RouteFamily,
    /// Its route template (method and path template).
    pub(crate) route: &'static str,
    /// Items asked a page (stated on every request, a followed link's too); `None` for an
    /// endpoint that does not page.
    pub(crate) limit: Option<u32>,
}

/// A list page: its items and the path of the next page, if any.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Page {
    /// `items`.
    pub(crate) items: Vec<Value>,
    /// `_links.next.href`, when it names a page under the API's root.
    pub(crate) next: Option<String>,
}

/// Reads a list answer: `items`, and the next page from `_links.next.href` (LaunchDarkly
/// leaves the link out on the last page). A link that leaves the API's root is not followed
/// (an absolute URL's origin part is dropped: the exit door holds the host). An empty page
/// ends the list whatever it links to, so a link that never ends cannot loop a stage.
pub(crate) fn page(body: &Value) -> Page {
    let items = body
        .get("items")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let next = body
        .pointer("/_links/next/href")
        .and_then(Value::as_str)
        .and_then(relative)
        .filter(|_| !items.is_empty());
    Page { items, next }
}

/// The path and query of `href` when it lies under the API's root.
fn relative(href: &str) -> Option<String> {
    let path = match href.find("://") {
        Some(at) => {
            let rest = &href[at + 3..];
            &rest[rest.find('/')?..]
        }
        None => href,
    };
    (path.starts_with(API) && !path.contains("..")).then(|| path.to_owned())
}

/// `path` with `limit=N` added when it names none: every page states its size, so a token's
/// or a link's default never decides it.
pub(crate) fn with_limit(path: &str, limit: u32) -> String {
    with_param(path, "limit", &limit.to_string())
}

/// `path` with `name=value` added when it names no `name` (a followed link keeps what the
/// first page asked for).
pub(crate) fn with_param(path: &str, name: &str, value: &str) -> String {
    let query = path.split_once('?').map_or("", |(_, q)| q);
    let named = |p: &str| p.split_once('=').map_or(p, |(n, _)| n) == name;
    if query.split('&').any(named) {
        return path.to_owned();
    }
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{path}{sep}{name}={value}")
}

/// What stopped a scope short of its last page.
pub(crate) enum Refusal {
    /// 403: the token may not read it.
    Forbidden(String),
    /// 404: gone since it was listed.
    Gone,
}

/// Sends one page's request; a 403 or a 404 is the scope's answer, not the stage's failure.
/// A 401 (the token itself refused), a wait and a transient failure are the stage's (the
/// runner's paths: credential, deferral, retry later).
pub(crate) async fn fetch(
    ctx: &StageCtx<'_>,
    request: ApiRequest,
) -> Result<Result<Value, Refusal>, StageError> {
    match ctx.send(request).await {
        Ok(response) => Ok(Ok(response.json::<Value>()?)),
        Err(ApiError::Forbidden {
            status: 403,
            message,
        }) => Ok(Err(Refusal::Forbidden(message))),
        Err(ApiError::Gone { .. }) => Ok(Err(Refusal::Gone)),
        Err(e) => Err(e.into()),
    }
}

/// Records a refused scope (`what` names it: `flags of proj-a`) and finishes it with the
/// reason, never to be asked again in this run; the other scopes go on.
pub(crate) async fn refused(
    ctx: &StageCtx<'_>,
    scope: &str,
    what: &str,
    refusal: Refusal,
) -> Result<(), StageError> {
    let detail = match refusal {
        Refusal::Forbidden(message) => {
            ctx.record_refused(what, "forbidden", &message);
            format!("refused (403): {}", headroom_core::redact(&message))
        }
        Refusal::Gone => {
            ctx.record_refused(what, "not_found", "answered 404 since it was listed");
            "not found (404)".to_owned()
        }
    };
    ctx.finish_scope(scope, Some(detail)).await?;
    Ok(())
}

/// Pages one scope of a stage from its checkpoint (or from `first`) to its last page, each
/// page's rows committed with the path of the next one: a resume asks again at most the page
/// that was in flight. `rows` turns a page's items into records.
pub(crate) async fn follow(
    ctx: &StageCtx<'_>,
    scope: &str,
    what: &str,
    endpoint: Endpoint,
    first: String,
    rows: impl Fn(&[Value]) -> Vec<Record>,
) -> Result<(), StageError> {
    let mut path = match ctx.checkpoint(scope).await? {
        Some(cp) if cp.status == CheckpointStatus::Done => return Ok(()),
        Some(cp) => cp.page_cursor.unwrap_or(first),
        None => first,
    };
    loop {
        let sized = match endpoint.limit {
            Some(limit) => with_limit(&path, limit),
            None => path.clone(),
        };
        let request = get(&sized, endpoint.family, endpoint.route);
        let body = match fetch(ctx, request).await? {
            Ok(body) => body,
            Err(refusal) => return refused(ctx, scope, what, refusal).await,
        };
        let page = page(&body);
        let records = rows(&page.items);
        let finished = page.next.is_none();
        ctx.write_page(scope, &records, page.next.clone(), finished, None)
            .await?;
        match page.next {
            Some(next) => path = next,
            None => return Ok(()),
        }
    }
}

/// Percent-encodes a path segment (keys are checked before, this is the second fence).
pub(crate) fn segment(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A cursor or a detail as stored.
pub(crate) fn to_text<T: Serialize>(value: &T) -> Result<String, StageError> {
    serde_json::to_string(value).map_err(|e| StageError::Permanent(e.to_string()))
}

/// A stored cursor or detail.
pub(crate) fn from_text<T: DeserializeOwned>(text: &str) -> Result<T, StageError> {
    serde_json::from_str(text)
        .map_err(|e| StageError::Permanent(format!("unreadable cursor {text:?}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_read_spends_the_global_window_and_its_routes_template_never_a_key() {
        let r = get(
            "/api/v2/flags/proj-a?limit=100",
            headroom_core::route::LAUNCHDARKLY_FLAGS,
            "GET /api/v2/flags/{projectKey}",
        );
        assert_eq!(r.bucket.as_str(), headroom_core::signal::LD_GLOBAL);
        assert_eq!(r.route_family, headroom_core::route::LAUNCHDARKLY_FLAGS);
        let spends: Vec<&str> = r.also_spends.iter().map(|(b, _)| b.as_str()).collect();
        assert_eq!(spends, ["route:GET /api/v2/flags/{projectKey}"]);
        assert!(spends.iter().all(|s| !s.contains("proj-a")));
    }

    #[test]
    fn a_page_follows_its_next_link_only_under_the_api_and_ends_when_empty() {
        let body = json!({"items": [{}, {}], "_links": {"next": {"href": "/api/v2/members?limit=2&offset=2"}}});
        assert_eq!(
            page(&body).next.as_deref(),
            Some("/api/v2/members?limit=2&offset=2")
        );
        let absolute = json!({"items": [{}], "_links": {"next": {"href": "https://app.launchdarkly.com/api/v2/members?offset=1"}}});
        assert_eq!(
            page(&absolute).next.as_deref(),
            Some("/api/v2/members?offset=1")
        );
        let elsewhere = json!({"items": [{}], "_links": {"next": {"href": "/internal/x"}}});
        assert_eq!(page(&elsewhere).next, None);
        let empty = json!({"items": [], "_links": {"next": {"href": "/api/v2/members?offset=9"}}});
        assert_eq!(page(&empty).next, None);
        let last = json!({"items": [{}], "_links": {"self": {"href": "/api/v2/members"}}});
        assert_eq!(page(&last).next, None);
        assert_eq!(page(&json!({})).items.len(), 0);
    }

    #[test]
    fn every_page_states_its_size() {
        assert_eq!(
            with_limit("/api/v2/members", 50),
            "/api/v2/members?limit=50"
        );
        assert_eq!(
            with_limit("/api/v2/members?offset=50", 50),
            "/api/v2/members?offset=50&limit=50"
        );
        assert_eq!(
            with_limit("/api/v2/members?limit=20&offset=20", 50),
            "/api/v2/members?limit=20&offset=20"
        );
    }

    #[test]
    fn a_segment_cannot_carry_a_path() {
        assert_eq!(segment("proj-a.b_c"), "proj-a.b_c");
        assert_eq!(segment("a/../b"), "a%2F..%2Fb");
        assert_eq!(segment("a?b"), "a%3Fb");
    }
}
