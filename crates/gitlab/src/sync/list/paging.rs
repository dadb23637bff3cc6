//! How a project's list and its children are paged. Offset pages (`page`/`per_page`) follow
//! `x-next-page`. A family that names a keyset order asks `pagination=keyset` instead and
//! follows GitLab's `Link: rel="next"` (kept in the cursor, checked to stay on the list's own
//! URL and, when sent, on the API host by the client's URL policy): offset paging stops at
//! GitLab's maximum offset (50,000 by default) on lists that offer keyset. A GitLab that
//! refuses keyset (400, or 405 "not available", before 18.3 on issues) or ignores it (an
//! answer with offset headers) is paged by offset from page 1, and the cursor remembers it.

use headroom_core::RouteFamily;
use headroom_http::paginate::gitlab::{next_keyset_url, next_offset_page};
use headroom_http::{ApiError, ApiRequest, ApiResponse};
use serde_json::Value;

use super::{Family, ListCursor, PER_PAGE};

/// The request for the list page `cursor` names (page `page`): GitLab's keyset link, the
/// first keyset page, or an offset page.
pub(super) fn list_target(family: &Family, project: i64, cursor: &ListCursor, page: u32) -> String {
    let path = format!("/projects/{project}/{}", family.path);
    let since = cursor.since.as_deref();
    match (cursor.keyset, family.keyset, &cursor.link) {
        (true, _, Some(link)) => link.clone(),
        (true, Some(order), None) => keyset_path(&path, family.query, order, since),
        _ => page_path(&path, family.query, since, page),
    }
}

/// `path?k=v&…&per_page=100&page=N`.
pub(super) fn page_path(
    path: &str,
    query: &[(&str, &str)],
    since: Option<&str>,
    page: u32,
) -> String {
    let mut url = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in query {
        url.append_pair(k, v);
    }
    if let Some(since) = since {
        url.append_pair("updated_after", since);
    }
    url.append_pair("per_page", &PER_PAGE.to_string());
    url.append_pair("page", &page.to_string());
    format!("{path}?{}", url.finish())
}

/// The first keyset page: the family's fixed parameters but its offset order, then
/// `pagination=keyset` with the keyset `order` (`order_by`, `sort`), the filter and the page
/// size. Later pages are GitLab's own links.
fn keyset_path(
    path: &str,
    query: &[(&str, &str)],
    (order_by, sort): (&str, &str),
    since: Option<&str>,
) -> String {
    let mut url = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in query
        .iter()
        .filter(|(k, _)| !matches!(*k, "order_by" | "sort"))
    {
        url.append_pair(k, v);
    }
    url.append_pair("pagination", "keyset");
    url.append_pair("order_by", order_by);
    url.append_pair("sort", sort);
    if let Some(since) = since {
        url.append_pair("updated_after", since);
    }
    url.append_pair("per_page", &PER_PAGE.to_string());
    format!("{path}?{}", url.finish())
}

/// Whether `error`, the answer to a list's first keyset request, says this GitLab does not
/// page the list by keyset (400; 405 "not yet available"): the list is then paged by offset.
pub(super) fn keyset_refused(cursor: &ListCursor, error: &ApiError) -> bool {
    cursor.keyset
        && cursor.link.is_none()
        && matches!(
            error,
            ApiError::Status {
                status: 400 | 405,
                ..
            }
        )
}

/// The cursor paged by offset from page 1: what a GitLab without keyset on the list needs.
pub(super) fn to_offset(cursor: &mut ListCursor) {
    cursor.keyset = false;
    cursor.link = None;
    cursor.page = Some(1);
}

/// What a list page's answer says comes next.
pub(super) enum Advance {
    /// The page is stored and `cursor` points past it.
    Next,
    /// A keyset request answered with offset headers (a GitLab that ignores
    /// `pagination=keyset`, whose page is in another order): the answer is dropped and the
    /// list paged by offset from page 1.
    Ignored,
}

/// Moves `cursor` past the page `response` answered for page `page`.
pub(super) fn advance(
    cursor: &mut ListCursor,
    page: u32,
    response: &ApiResponse,
) -> Result<Advance, ApiError> {
    if !cursor.keyset {
        cursor.page = next_page(response)?;
        return Ok(Advance::Next);
    }
    if response.headers.contains_key("x-next-page") {
        to_offset(cursor);
        return Ok(Advance::Ignored);
    }
    let next =
        next_keyset_url(&response.headers, &response.url).map_err(|stop| ApiError::Status {
            status: response.status.as_u16(),
            message: format!("unreadable keyset link ({stop:?})"),
        })?;
    cursor.page = next.as_ref().map(|_| page.saturating_add(1));
    cursor.link = next.map(String::from);
    Ok(Advance::Next)
}

/// One page's objects and the response, for its headers.
pub(super) async fn fetch_list(
    ctx: &headroom_sync::StageCtx<'_>,
    route: RouteFamily,
    target: &str,
) -> Result<(Vec<Value>, ApiResponse), ApiError> {
    let response = ctx.send(ApiRequest::get(target).route(route)).await?;
    let items = match response.json::<Value>()? {
        Value::Array(items) => items,
        other => {
            return Err(ApiError::Status {
                status: response.status.as_u16(),
                message: format!("expected a list, got {}", kind_of(&other)),
            });
        }
    };
    Ok((items, response))
}

/// One offset page: its objects and the page after it.
pub(super) async fn fetch_page(
    ctx: &headroom_sync::StageCtx<'_>,
    route: RouteFamily,
    path: String,
) -> Result<(Vec<Value>, Option<u32>), ApiError> {
    let (items, response) = fetch_list(ctx, route, &path).await?;
    let next = next_page(&response)?;
    Ok((items, next))
}

/// A single object (a merge request's approvals), as a one-item page with no next.
pub(super) async fn fetch_object(
    ctx: &headroom_sync::StageCtx<'_>,
    route: RouteFamily,
    path: &str,
) -> Result<(Vec<Value>, Option<u32>), ApiError> {
    let response = ctx.send(ApiRequest::get(path).route(route)).await?;
    Ok((vec![response.json::<Value>()?], None))
}

fn next_page(response: &ApiResponse) -> Result<Option<u32>, ApiError> {
    next_offset_page(&response.headers, &response.url).map_err(|stop| ApiError::Status {
        status: response.status.as_u16(),
        message: format!("unreadable paging headers ({stop:?})"),
    })
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "an object",
        Value::Array(_) => "a list",
        Value::String(_) => "a string",
        _ => "a scalar",
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ISSUES, MERGE_REQUESTS};
    use super::*;
    use bytes::Bytes;
    use headroom_core::signal::RateLimitSignal;
    use http::{HeaderMap, HeaderValue, StatusCode};

    const API: &str = "https://gitlab.example.com/api/v4";

    fn response(target: &str, headers: &[(&'static str, &str)]) -> ApiResponse {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            map.insert(*k, HeaderValue::from_str(v).expect("header"));
        }
        ApiResponse {
            status: StatusCode::OK,
            headers: map,
            body: Bytes::from_static(b"[]"),
            url: url::Url::parse(&format!("{API}{target}")).expect("url"),
            signal: RateLimitSignal::default(),
            attempts: 1,
            hops: 0,
        }
    }

    fn fresh_keyset() -> ListCursor {
        ListCursor {
            page: Some(1),
            started_ms: Some(1),
            since: Some("2026-01-02T03:04:05Z".to_owned()),
            keyset: true,
            ..ListCursor::default()
        }
    }

    #[test]
    fn a_cursor_stored_before_keyset_paging_resumes_by_offset_at_its_page() {
        let old =
            r#"{"page":3,"owed":[{"parent":5,"child":0,"page":2}],"started_ms":1,"since":null}"#;
        let cursor: ListCursor = serde_json::from_str(old).expect("an old cursor still reads");
        assert!(!cursor.keyset);
        assert_eq!(cursor.link, None);
        assert_eq!(
            list_target(&ISSUES, 7, &cursor, 3),
            "/projects/7/issues?scope=all&order_by=updated_at&sort=desc&per_page=100&page=3"
        );
    }

    #[test]
    fn the_issues_list_asks_keyset_first_then_follows_gitlabs_link() {
        let mut cursor = fresh_keyset();
        let first = list_target(&ISSUES, 7, &cursor, 1);
        assert_eq!(
            first,
            "/projects/7/issues?scope=all&pagination=keyset&order_by=updated_at&sort=asc\
             &updated_after=2026-01-02T03%3A04%3A05Z&per_page=100"
        );
        let next = format!("{API}/projects/7/issues?pagination=keyset&cursor=opaque");
        let link = format!("<{next}>; rel=\"next\"");
        let r = response(&first, &[("link", &link)]);
        assert!(matches!(advance(&mut cursor, 1, &r), Ok(Advance::Next)));
        assert_eq!(
            (cursor.page, cursor.link.as_deref()),
            (Some(2), Some(&*next))
        );
        assert_eq!(list_target(&ISSUES, 7, &cursor, 2), next);
        // The page without a link is the last.
        let r = response("/projects/7/issues?pagination=keyset&cursor=opaque", &[]);
        assert!(matches!(advance(&mut cursor, 2, &r), Ok(Advance::Next)));
        assert_eq!((cursor.page, cursor.link), (None, None));
        // A family without a keyset order stays offset even in a keyset cursor.
        let offset = list_target(&MERGE_REQUESTS, 7, &fresh_keyset(), 1);
        assert!(
            offset.ends_with("&page=1") && !offset.contains("keyset"),
            "{offset}"
        );
    }

    #[test]
    fn a_keyset_link_to_another_host_or_list_is_refused() {
        for elsewhere in [
            "https://evil.example.com/api/v4/projects/7/issues?cursor=x",
            "https://gitlab.example.com/api/v4/projects/8/issues?cursor=x",
        ] {
            let mut cursor = fresh_keyset();
            let link = format!("<{elsewhere}>; rel=\"next\"");
            let r = response("/projects/7/issues?pagination=keyset", &[("link", &link)]);
            assert!(advance(&mut cursor, 1, &r).is_err(), "{elsewhere}");
        }
    }

    #[test]
    fn a_gitlab_without_keyset_on_issues_is_paged_by_offset_from_page_one() {
        let refused = ApiError::Status {
            status: 400,
            message: "400 Bad request".into(),
        };
        let mut cursor = fresh_keyset();
        assert!(keyset_refused(&cursor, &refused));
        to_offset(&mut cursor);
        assert!(
            !keyset_refused(&cursor, &refused),
            "offset pages are not retried"
        );
        assert!(list_target(&ISSUES, 7, &cursor, 1).ends_with("&page=1"));
        // A later keyset page's 400 is an error, not a reason to start over.
        let mut later = fresh_keyset();
        later.link = Some(format!("{API}/projects/7/issues?cursor=x"));
        assert!(!keyset_refused(&later, &refused));
        // A GitLab that ignores `pagination=keyset` answers an offset page: start over by
        // offset, in the offset pages' own order.
        let mut ignored = fresh_keyset();
        let r = response(
            "/projects/7/issues?pagination=keyset",
            &[("x-next-page", "2"), ("x-page", "1")],
        );
        assert!(matches!(advance(&mut ignored, 1, &r), Ok(Advance::Ignored)));
        assert_eq!((ignored.keyset, ignored.page), (false, Some(1)));
    }
}
