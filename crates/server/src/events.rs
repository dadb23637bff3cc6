//! `GET /api/push_events` and `GET /api/push_events/{github_event_id}`.
//!
//! The list is newest first and pages by keyset on (occurred_at, github_event_id) behind an
//! opaque cursor, never by offset: the poller writes while clients page, and an offset would
//! repeat or skip rows. `limit` is 1–100 (default 25); anything outside is a 400, never a
//! silent clamp. Unknown or repeated parameters are a 400 naming them. Rows nest their actor
//! and repository with their enrichment status; the raw payload is served only by the
//! single-event endpoint. The surrogate key appears in no response, cursor included.

use crate::refusal::ApiPath;
use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use headroom_core::clock::Timestamp;
use headroom_store::feed_report::{EntitySummary, PushEventFilter, PushEventKey, PushEventRow};
use headroom_store::feed_state::{EnrichmentStage, EnrichmentStatus};
use serde::Serialize;

use crate::{ApiError, AppState};

/// Rows per page when `limit` is absent.
pub const DEFAULT_LIMIT: u32 = 25;
/// The largest `limit` accepted.
pub const MAX_LIMIT: u32 = 100;

const PARAMETERS: [&str; 4] = ["limit", "cursor", "actor_id", "repository_id"];

/// The parsed query of the list endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    /// Rows wanted.
    pub limit: u32,
    /// Where the previous page stopped.
    pub cursor: Option<PushEventKey>,
    /// Filters.
    pub filter: PushEventFilter,
}

fn bad(code: &'static str, parameter: &str, message: String) -> ApiError {
    ApiError::BadRequest {
        code,
        parameter: parameter.to_owned(),
        message,
    }
}

fn github_id(name: &str, raw: &str) -> Result<i64, ApiError> {
    raw.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| {
        bad(
            "invalid_parameter",
            name,
            format!("{name} must be a positive GitHub id (got `{raw}`)"),
        )
    })
}

/// Parses the list query; every refusal names its parameter.
pub fn parse_query(raw: Option<&str>) -> Result<ListQuery, ApiError> {
    let mut query = ListQuery {
        limit: DEFAULT_LIMIT,
        cursor: None,
        filter: PushEventFilter::default(),
    };
    let mut seen: Vec<String> = Vec::new();
    let mut cursor: Option<(PushEventFilter, PushEventKey)> = None;
    for (name, value) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        if !PARAMETERS.contains(&name.as_ref()) {
            return Err(bad(
                "unknown_parameter",
                &name,
                format!(
                    "unknown parameter `{name}`; accepted: {}",
                    PARAMETERS.join(", ")
                ),
            ));
        }
        if seen.iter().any(|s| *s == name) {
            return Err(bad(
                "repeated_parameter",
                &name,
                format!("`{name}` given more than once"),
            ));
        }
        seen.push(name.to_string());
        match name.as_ref() {
            "limit" => {
                query.limit = value
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=MAX_LIMIT).contains(n))
                    .ok_or_else(|| {
                        bad(
                            "invalid_parameter",
                            "limit",
                            format!(
                                "limit must be a whole number from 1 to {MAX_LIMIT} (got `{value}`)"
                            ),
                        )
                    })?;
            }
            "cursor" => {
                cursor = Some(decode_cursor(&value).ok_or_else(|| {
                    bad(
                        "invalid_cursor",
                        "cursor",
                        "cursor is not one this server issued; follow pagination.next_cursor"
                            .into(),
                    )
                })?);
            }
            "actor_id" => query.filter.actor_id = Some(github_id("actor_id", &value)?),
            _ => query.filter.repository_id = Some(github_id("repository_id", &value)?),
        }
    }
    // A cursor is a position in one filtered list: another filter's position would skip or
    // repeat rows without saying so.
    if let Some((filter, key)) = cursor {
        if filter != query.filter {
            return Err(bad(
                "invalid_cursor",
                "cursor",
                format!(
                    "cursor was issued for {}, not {}; follow pagination.next_cursor with the \
                     filters it came with",
                    filter_words(&filter),
                    filter_words(&query.filter)
                ),
            ));
        }
        query.cursor = Some(key);
    }
    Ok(query)
}

fn filter_words(filter: &PushEventFilter) -> String {
    match (filter.actor_id, filter.repository_id) {
        (None, None) => "the unfiltered list".to_owned(),
        (Some(a), None) => format!("actor_id={a}"),
        (None, Some(r)) => format!("repository_id={r}"),
        (Some(a), Some(r)) => format!("actor_id={a} and repository_id={r}"),
    }
}

/// The opaque cursor of a keyset position in the list `filter` selects.
pub fn encode_cursor(filter: &PushEventFilter, key: &PushEventKey) -> String {
    let id = |v: Option<i64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
    URL_SAFE_NO_PAD.encode(format!(
        "v2:{}:{}:{}:{}",
        id(filter.actor_id),
        id(filter.repository_id),
        key.occurred_at_ms,
        key.github_event_id
    ))
}

/// The filter and keyset position of a cursor, if it is one this server issued.
pub fn decode_cursor(cursor: &str) -> Option<(PushEventFilter, PushEventKey)> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let mut parts = text.strip_prefix("v2:")?.splitn(4, ':');
    let id = |part: &str| match part {
        "-" => Some(None),
        n => n.parse::<i64>().ok().filter(|n| *n > 0).map(Some),
    };
    let actor_id = id(parts.next()?)?;
    let repository_id = id(parts.next()?)?;
    let occurred_at_ms = parts.next()?.parse::<i64>().ok()?;
    let github_event_id = parts.next()?;
    (!github_event_id.is_empty()).then(|| {
        (
            PushEventFilter {
                actor_id,
                repository_id,
            },
            PushEventKey {
                occurred_at_ms,
                github_event_id: github_event_id.to_owned(),
            },
        )
    })
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ActorView<'a> {
    github_id: i64,
    login: &'a str,
    enrichment_status: EnrichmentStatus,
    enrichment_stage: EnrichmentStage,
    #[schema(value_type = Option<String>, format = DateTime)]
    fetched_at: Option<Timestamp>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RepositoryView<'a> {
    github_id: i64,
    full_name: &'a str,
    enrichment_status: EnrichmentStatus,
    enrichment_stage: EnrichmentStage,
    #[schema(value_type = Option<String>, format = DateTime)]
    fetched_at: Option<Timestamp>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EventView<'a> {
    github_event_id: &'a str,
    github_push_id: Option<i64>,
    #[serde(rename = "ref")]
    git_ref: &'a str,
    head_sha: &'a str,
    before_sha: Option<&'a str>,
    commit_count: Option<i64>,
    distinct_commit_count: Option<i64>,
    #[schema(value_type = String, format = DateTime)]
    occurred_at: Timestamp,
    #[schema(value_type = String, format = DateTime)]
    created_at: Timestamp,
    source: &'a str,
    actor: ActorView<'a>,
    repository: RepositoryView<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_payload: Option<&'a serde_json::Value>,
}

fn actor(e: &EntitySummary) -> ActorView<'_> {
    ActorView {
        github_id: e.github_id,
        login: &e.name,
        enrichment_status: e.enrichment_status,
        enrichment_stage: e.enrichment_stage,
        fetched_at: e.fetched_at,
    }
}

fn repository(e: &EntitySummary) -> RepositoryView<'_> {
    RepositoryView {
        github_id: e.github_id,
        full_name: &e.name,
        enrichment_status: e.enrichment_status,
        enrichment_stage: e.enrichment_stage,
        fetched_at: e.fetched_at,
    }
}

fn view<'a>(row: &'a PushEventRow, raw: Option<&'a serde_json::Value>) -> EventView<'a> {
    EventView {
        github_event_id: &row.github_event_id,
        github_push_id: row.github_push_id,
        git_ref: &row.git_ref,
        head_sha: &row.head_sha,
        before_sha: row.before_sha.as_deref(),
        commit_count: row.commit_count,
        distinct_commit_count: row.distinct_commit_count,
        occurred_at: row.occurred_at,
        created_at: row.created_at,
        source: &row.source,
        actor: actor(&row.actor),
        repository: repository(&row.repository),
        raw_payload: raw,
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Pagination {
    limit: u32,
    returned: usize,
    has_more: bool,
    next_cursor: Option<String>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Page<'a> {
    data: Vec<EventView<'a>>,
    pagination: Pagination,
}

fn next_link(query: &ListQuery, cursor: &str) -> String {
    let mut url = form_urlencoded::Serializer::new(String::new());
    url.append_pair("limit", &query.limit.to_string());
    if let Some(id) = query.filter.actor_id {
        url.append_pair("actor_id", &id.to_string());
    }
    if let Some(id) = query.filter.repository_id {
        url.append_pair("repository_id", &id.to_string());
    }
    url.append_pair("cursor", cursor);
    format!("</api/push_events?{}>; rel=\"next\"", url.finish())
}

/// `GET /api/push_events`.
#[utoipa::path(
    get,
    path = "/api/push_events",
    operation_id = "list_push_events",
    tag = "feed",
    params(
        ("limit" = Option<u32>, Query, description = "Rows per page, 1 to 100"),
        ("cursor" = Option<String>, Query, description = "Where the previous page stopped (`pagination.next_cursor`)"),
        ("actor_id" = Option<i64>, Query, description = "Only this actor's events (a GitHub id)"),
        ("repository_id" = Option<i64>, Query, description = "Only this repository's events (a GitHub id)"),
    ),
    responses(
        (status = 200, description = "Push events, newest first; a `Link: rel=\"next\"` header when more exist", body = Page),
        (status = 400, description = "A parameter was refused (unknown, repeated or malformed)", body = crate::ErrorBody),
        (status = 503, description = "The database did not answer", body = crate::ErrorBody),
    )
)]
pub async fn list(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let query = parse_query(raw.as_deref())?;
    // One row more than asked says whether another page exists without a COUNT.
    let mut rows = state
        .report
        .push_events_page(query.filter, query.cursor.as_ref(), query.limit + 1)
        .await?;
    let has_more = rows.len() > query.limit as usize;
    rows.truncate(query.limit as usize);
    let next_cursor = has_more
        .then(|| rows.last().map(|r| encode_cursor(&query.filter, &r.key())))
        .flatten();
    let page = Page {
        data: rows.iter().map(|r| view(r, None)).collect(),
        pagination: Pagination {
            limit: query.limit,
            returned: rows.len(),
            has_more,
            next_cursor: next_cursor.clone(),
        },
    };
    let mut response = Json(page).into_response();
    if let Some(cursor) = next_cursor
        && let Ok(value) = HeaderValue::from_str(&next_link(&query, &cursor))
    {
        response.headers_mut().insert(header::LINK, value);
    }
    Ok(response)
}

/// One event's document.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EventDetail<'a> {
    data: EventView<'a>,
}

#[utoipa::path(
    get,
    path = "/api/push_events/{github_event_id}",
    operation_id = "push_event",
    tag = "feed",
    params(("github_event_id" = String, Path, description = "GitHub's event id")),
    responses(
        (status = 200, description = "One push event with its raw payload", body = EventDetail),
        (status = 400, description = "The id in the path does not decode (invalid percent-encoding or UTF-8)", body = crate::ErrorBody),
        (status = 404, description = "No such event", body = crate::ErrorBody),
        (status = 503, description = "The database did not answer", body = crate::ErrorBody),
    )
)]
/// `GET /api/push_events/{github_event_id}`.
pub async fn show(
    State(state): State<AppState>,
    ApiPath(github_event_id): ApiPath<String>,
) -> Result<Response, ApiError> {
    match state.report.push_event_detail(&github_event_id).await? {
        Some((row, raw)) => Ok(Json(EventDetail {
            data: view(&row, Some(&raw)),
        })
        .into_response()),
        None => Err(ApiError::NotFound(format!(
            "no push event with GitHub event id `{github_event_id}`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip() {
        let key = PushEventKey {
            occurred_at_ms: 1_800_000_000_123,
            github_event_id: "58000000008".into(),
        };
        let filter = PushEventFilter {
            actor_id: Some(7),
            repository_id: None,
        };
        assert_eq!(
            decode_cursor(&encode_cursor(&filter, &key)),
            Some((filter, key))
        );
        assert_eq!(decode_cursor("not a cursor"), None);
        assert_eq!(decode_cursor(&URL_SAFE_NO_PAD.encode("v2:-:-:x:1")), None);
        assert_eq!(decode_cursor(&URL_SAFE_NO_PAD.encode("v2:0:-:1:1")), None);
        // The unbound cursors of earlier versions are not this server's.
        assert_eq!(decode_cursor(&URL_SAFE_NO_PAD.encode("v1:1:1")), None);
    }

    proptest::proptest! {
        #[test]
        fn any_position_survives_its_cursor(
            ms in proptest::num::i64::ANY,
            id in ".{1,40}",
            actor in proptest::option::of(1i64..i64::MAX),
            repository in proptest::option::of(1i64..i64::MAX),
        ) {
            let key = PushEventKey { occurred_at_ms: ms, github_event_id: id };
            let filter = PushEventFilter { actor_id: actor, repository_id: repository };
            let cursor = encode_cursor(&filter, &key);
            // URL-safe without escaping, so it travels in a query string and a Link header.
            proptest::prop_assert!(cursor.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
            proptest::prop_assert_eq!(decode_cursor(&cursor), Some((filter, key)));
        }

        #[test]
        fn a_limit_is_accepted_exactly_in_range(n in 0u64..1000) {
            let parsed = parse_query(Some(&format!("limit={n}")));
            proptest::prop_assert_eq!(parsed.is_ok(), (1..=100).contains(&n));
        }
    }

    #[test]
    fn a_cursor_is_bound_to_the_filter_it_was_issued_for() {
        let key = PushEventKey {
            occurred_at_ms: 1_800_000_000_123,
            github_event_id: "58000000008".into(),
        };
        let of_actor = PushEventFilter {
            actor_id: Some(7),
            repository_id: None,
        };
        let cursor = encode_cursor(&of_actor, &key);
        let same = parse_query(Some(&format!("cursor={cursor}&actor_id=7"))).expect("same");
        assert_eq!(same.cursor, Some(key.clone()));
        // The filter may come before or after the cursor; another filter is refused.
        assert!(parse_query(Some(&format!("actor_id=7&cursor={cursor}"))).is_ok());
        for other in [
            "",
            "&actor_id=8",
            "&repository_id=7",
            "&actor_id=7&repository_id=1",
        ] {
            let refused = parse_query(Some(&format!("cursor={cursor}{other}"))).expect_err(other);
            let text = format!("{refused:?}");
            assert!(
                text.contains("invalid_cursor") && text.contains("actor_id=7"),
                "{text}"
            );
        }
    }

    #[test]
    fn the_query_is_strict() {
        assert_eq!(parse_query(None).map(|q| q.limit).ok(), Some(25));
        assert_eq!(
            parse_query(Some("limit=100")).map(|q| q.limit).ok(),
            Some(100)
        );
        for bad in ["limit=0", "limit=101", "limit=500", "limit=x", "limit=-1"] {
            assert!(
                matches!(parse_query(Some(bad)), Err(ApiError::BadRequest { ref parameter, .. }) if parameter == "limit"),
                "{bad}"
            );
        }
        assert!(matches!(
            parse_query(Some("page=2")),
            Err(ApiError::BadRequest { code: "unknown_parameter", ref parameter, .. }) if parameter == "page"
        ));
        assert!(matches!(
            parse_query(Some("limit=2&limit=3")),
            Err(ApiError::BadRequest {
                code: "repeated_parameter",
                ..
            })
        ));
        let q = parse_query(Some("actor_id=7&repository_id=9")).ok();
        assert_eq!(
            q.map(|q| q.filter),
            Some(PushEventFilter {
                actor_id: Some(7),
                repository_id: Some(9)
            })
        );
    }
}
