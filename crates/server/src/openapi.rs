//! `GET /openapi.json`: the OpenAPI 3.1 description of every endpoint, generated at compile
//! time from the handlers' `#[utoipa::path]` attributes and the response types' schemas, so
//! the document and the code cannot disagree. `docs/openapi.json` is its committed snapshot
//! (`tests/openapi.rs` fails when they differ, and when a route of the router is missing
//! from it).

use axum::Json;
use axum::extract::RawQuery;
use utoipa::OpenApi;

use crate::ApiError;

/// The document's root: every path the dashboard router serves.
#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "headroom",
        description = "headroom's read-only HTTP API: the feed's health and status, stored push events, \
                       every quota identity's buckets and history, sync runs, the dashboard's event \
                       stream and Prometheus metrics. No endpoint writes, spends quota or calls a provider. \
                       Every refusal is the same JSON error body, including a URI longer than 8 KiB \
                       (414 `uri_too_long`) and a method other than GET or HEAD (405).",
        license(name = "MIT OR Apache-2.0")
    ),
    paths(
        crate::live,
        crate::ready,
        crate::status_handler,
        crate::events::list,
        crate::events::show,
        crate::dashboard::page,
        crate::api::quota::show,
        crate::api::quota::history,
        crate::api::spend::show,
        crate::api::sync::list,
        crate::api::sync::show,
        crate::api::events::events,
        crate::metrics::metrics,
        document,
    ),
    tags(
        (name = "health", description = "Liveness and readiness"),
        (name = "feed", description = "The public events feed: status and stored push events"),
        (name = "quota", description = "What is left per quota identity and bucket, and its history"),
        (name = "sync", description = "Organization sync runs and where they stand"),
        (name = "dashboard", description = "The page and its live updates"),
        (name = "metrics", description = "Prometheus exposition"),
    )
)]
pub struct ApiDoc;

/// The document as JSON text, pretty-printed (what the endpoint serves and the snapshot holds).
pub fn json() -> String {
    ApiDoc::openapi()
        .to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "health",
    responses(
        (status = 200, description = "This document", body = Object),
        (status = 400, description = "A parameter was given (none is accepted)", body = crate::ErrorBody),
    )
)]
/// `GET /openapi.json`.
pub async fn document(RawQuery(raw): RawQuery) -> Result<Json<utoipa::openapi::OpenApi>, ApiError> {
    crate::api::params::pairs(raw.as_deref(), &[])?;
    Ok(Json(ApiDoc::openapi()))
}
