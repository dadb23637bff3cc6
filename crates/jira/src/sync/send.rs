//! The requests the stages send through the exit door, and the small things every stage
//! shares: JSON cursors, where a row was read, and the site's facts stage 1 learned.

use bytes::Bytes;
use headroom_core::RequestKind;
use headroom_core::route::RouteFamily;
use headroom_http::ApiRequest;
use headroom_sync::{StageCtx, StageError};
use http::Method;
use http::header::{CONTENT_TYPE, HeaderValue};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::names;
use crate::rows::{CustomFields, Origin};

/// A GET of `path` in `route`, spending the burst bucket of `endpoint` (`GET /rest/…`, the
/// path's template).
pub(super) fn get(path: &str, route: RouteFamily, endpoint: &str) -> ApiRequest {
    ApiRequest::get(path).route(route).endpoint(endpoint)
}

/// A read sent as a POST with a JSON body (`search/jql`, `changelog/bulkfetch`): a read,
/// retryable as any read, never a mutation.
pub(super) fn post_read(
    path: &str,
    body: &Value,
    route: RouteFamily,
    endpoint: &str,
) -> ApiRequest {
    let mut request = ApiRequest {
        method: Method::POST,
        body: Some(Bytes::from(body.to_string())),
        kind: RequestKind::REST_READ,
        ..ApiRequest::get(path)
    };
    request
        .headers
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    request.route(route).endpoint(endpoint)
}

/// A cursor as stored.
pub(super) fn to_text<T: Serialize>(cursor: &T) -> Result<String, StageError> {
    serde_json::to_string(cursor).map_err(|e| StageError::Permanent(e.to_string()))
}

/// A stored cursor, or `None` when there is none.
pub(super) fn from_text<T: DeserializeOwned>(text: Option<&str>) -> Result<Option<T>, StageError> {
    text.map(|t| {
        serde_json::from_str(t)
            .map_err(|e| StageError::Permanent(format!("unreadable cursor {t:?}: {e}")))
    })
    .transpose()
}

/// Where rows are read now: the site's host and the run's clock.
pub(super) fn origin<'a>(ctx: &'a StageCtx<'_>) -> Origin<'a> {
    Origin {
        site: ctx.api_host(),
        now: ctx.now(),
    }
}

/// A page of an offset list: its values under `field`, and the `startAt` of the next page
/// read back from what was served (Jira may serve fewer than asked), `None` once it is the
/// last: `isLast` where the page has it, else `total`; an empty page is always the last.
pub(super) fn offset_page(body: &Value, field: &str, start: u64) -> (Vec<Value>, Option<u64>) {
    let values = body
        .get(field)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let next = start + values.len() as u64;
    let last = values.is_empty()
        || match body.get("isLast").and_then(Value::as_bool) {
            Some(last) => last,
            None => body
                .get("total")
                .and_then(Value::as_u64)
                .is_none_or(|total| next >= total),
        };
    (values, (!last).then_some(next))
}

/// What stage 1 learned of the site, which later stages read from its checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct SiteFacts {
    /// The caller's time zone (`/myself` → `timeZone`), in which Jira reads JQL dates.
    pub(super) time_zone: Option<String>,
    /// The sprint field's id.
    pub(super) sprint_field: Option<String>,
    /// The story-point estimate's field id.
    pub(super) story_points_field: Option<String>,
}

impl SiteFacts {
    pub(super) fn custom_fields(&self) -> CustomFields {
        CustomFields {
            sprint: self.sprint_field.clone(),
            story_points: self.story_points_field.clone(),
        }
    }
}

/// The scope of stage 1's checkpoint whose detail holds the [`SiteFacts`]: a once-per-run
/// stage's own cursor is cleared when it is done, a finished scope's detail is kept.
pub(super) const FACTS_SCOPE: &str = "facts";

/// The facts stage 1 recorded in this run.
pub(super) async fn site_facts(ctx: &StageCtx<'_>) -> Result<SiteFacts, StageError> {
    let detail = ctx
        .checkpoint_of(names::SITE, FACTS_SCOPE)
        .await?
        .and_then(|c| c.detail);
    let Some(text) = detail else {
        return Err(StageError::Permanent(
            "the site's time zone and fields are not known: stage `site` has not run".into(),
        ));
    };
    serde_json::from_str(&text)
        .map_err(|e| StageError::Permanent(format!("unreadable site facts {text:?}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_post_read_stays_a_retryable_read_on_core_and_its_endpoints_burst_bucket() {
        let r = post_read(
            "/rest/api/3/search/jql",
            &json!({"jql": "project = PA"}),
            headroom_core::route::JIRA_JQL,
            "POST /rest/api/3/search/jql",
        );
        assert_eq!(r.method, Method::POST);
        assert_eq!(r.kind, RequestKind::REST_READ);
        assert_eq!(r.bucket.as_str(), "core");
        assert_eq!(r.route_family, headroom_core::route::JIRA_JQL);
        assert_eq!(
            r.headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()),
            Some("application/json")
        );
        let spends: Vec<&str> = r.also_spends.iter().map(|(b, _)| b.as_str()).collect();
        assert_eq!(spends, ["endpoint:POST /rest/api/3/search/jql"]);
        let g = get(
            "/rest/api/3/myself",
            headroom_core::route::JIRA_METADATA,
            "GET /rest/api/3/myself",
        );
        assert_eq!(g.bucket.as_str(), "core");
        assert_eq!(g.also_spends.len(), 1);
    }

    #[test]
    fn an_offset_page_follows_what_was_served_not_what_was_asked() {
        // Asked for 100, served 50 (the agile API's cap): the next page starts at 50.
        let body = json!({"startAt": 0, "maxResults": 50, "isLast": false,
                          "values": vec![json!({}); 50]});
        assert_eq!(offset_page(&body, "values", 0).1, Some(50));
        let last = json!({"isLast": true, "values": [{}]});
        assert_eq!(offset_page(&last, "values", 50).1, None);
        // Comments carry `total` and no `isLast`.
        let comments = json!({"total": 3, "comments": [{}, {}]});
        assert_eq!(offset_page(&comments, "comments", 0).1, Some(2));
        assert_eq!(offset_page(&comments, "comments", 1).1, None);
        // An empty page ends the list whatever it claims.
        let empty = json!({"isLast": false, "values": []});
        assert_eq!(offset_page(&empty, "values", 0).1, None);
    }
}
