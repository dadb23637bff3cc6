//! headroom-server: the feed's HTTP surface — `/health/live`, `/health/ready`, `/status`,
//! `/api/push_events` and `/api/push_events/{github_event_id}` — as one axum [`Router`].
//!
//! It owns the JSON shapes of those endpoints and the status document ([`status`]), which
//! `headroom status --json` prints too, so the two can never drift apart.
//!
//! What it must not do: call a provider, spend budget or write. That is structural — the
//! router's state ([`AppState`]) holds only read halves: the store's report queries, the
//! feed state's read trait ([`FeedStateRead`], ledger rows) and a clock; no client,
//! transport or writing trait, so a handler that wrote would not compile — and tested:
//! `tests/read_only.rs` fails on any write a request makes, on both backends.

use std::future::Future;
use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use headroom_core::clock::SharedClock;
use headroom_core::telemetry;
use headroom_store::StoreError;
use headroom_store::feed_report::FeedReport;
use headroom_store::feed_state::FeedStateRead;
use serde_json::json;

pub mod api;
pub mod dashboard;
pub mod events;
pub mod listen;
pub mod metrics;
pub mod openapi;
pub mod refusal;
pub mod status;

pub use crate::api::{DashboardSettings, DashboardState};
pub use crate::status::{Reporting, SchedulerSettings, StatusDocument, StatusSettings};

/// What every handler reads from.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The report queries (all plain reads).
    pub report: Arc<dyn FeedReport>,
    /// The feed state's read half (ledger rows); the writing half is not reachable from here.
    pub feed: Arc<dyn FeedStateRead>,
    /// Time, for `captured_at`, ages and windows.
    pub clock: SharedClock,
    /// What `/status` publishes and which ledger rows it reads.
    pub settings: Arc<StatusSettings>,
    /// The last status document built, reused a few seconds (start with `Default::default()`).
    pub status: status::StatusCache,
}

/// The feed's HTTP surface.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/health/live", get(live))
        .route("/health/ready", get(ready))
        .route("/status", get(status_handler))
        .route("/api/push_events", get(events::list))
        .route("/api/push_events/{github_event_id}", get(events::show))
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(not_found)
        .with_state(state)
        .layer(axum::middleware::from_fn(refusal::refuse_long_uris))
}

/// The feed's surface with the quota dashboard: `/`, `/api/quota`, `/api/quota/spend`,
/// `/api/quota/{host}/{subject}/history`, `/api/sync/runs`, `/api/sync/runs/{id}` and
/// `/api/events` beside every route of [`router`].
pub fn dashboard_router(dashboard: DashboardState) -> Router {
    let feed = router(dashboard.app.clone());
    Router::new()
        .route("/", get(dashboard::page))
        .route("/api/quota", get(api::quota::show))
        .route("/api/quota/spend", get(api::spend::show))
        .route(
            "/api/quota/{host}/{subject}/history",
            get(api::quota::history),
        )
        .route("/api/sync/runs", get(api::sync::list))
        .route("/api/sync/runs/{id}", get(api::sync::show))
        .route("/api/events", get(api::events::events))
        .route("/metrics", get(metrics::metrics))
        .route("/openapi.json", get(openapi::document))
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(dashboard)
        .merge(feed)
        .layer(axum::middleware::from_fn(refusal::refuse_long_uris))
}

/// Serves [`dashboard_router`] on `listener` within the default [`listen::ServeLimits`] until
/// `shutdown` completes.
pub async fn serve_dashboard(
    listener: tokio::net::TcpListener,
    dashboard: DashboardState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    listen::serve_router(
        listener,
        dashboard_router(dashboard),
        listen::ServeLimits::default(),
        shutdown,
    )
    .await
}

/// Serves `router(state)` on `listener` within the default [`listen::ServeLimits`] until
/// `shutdown` completes; requests in flight are allowed to finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    listen::serve_router(
        listener,
        router(state),
        listen::ServeLimits::default(),
        shutdown,
    )
    .await
}

/// The body of every refusal: `{"error": {...}}`.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// One refusal.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct ErrorDetail {
    /// Machine-readable reason (`unknown_parameter`, `not_found`, `database_unavailable` …).
    pub code: String,
    /// What was wrong, for a person.
    pub message: String,
    /// The parameter at fault, when one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameter: Option<String>,
}

/// An error answered as JSON: `{"error": {"code", "message", "parameter"?}}`.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A query parameter was refused.
    #[error("{message}")]
    BadRequest {
        /// Machine-readable reason.
        code: &'static str,
        /// The parameter at fault.
        parameter: String,
        /// What was wrong, for a person.
        message: String,
    },
    /// Nothing at that path or id.
    #[error("{0}")]
    NotFound(String),
    /// The path exists but not for this method: every endpoint here only reads.
    #[error("{0} is not served here: every endpoint answers GET (and HEAD) only")]
    MethodNotAllowed(String),
    /// The URI is longer than any request this API answers.
    #[error("the URI is {0} bytes long; at most {max} are answered", max = refusal::MAX_URI_BYTES)]
    UriTooLong(usize),
    /// The database did not answer (the message is already redacted by the store).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A limit of the server is reached (event streams, connections): try again later.
    #[error("{message}")]
    Overloaded {
        /// Machine-readable reason.
        code: &'static str,
        /// What was full, for a person.
        message: String,
        /// Seconds after which trying again may succeed (the `Retry-After` header).
        retry_after: u32,
    },
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code, parameter) = match &self {
            ApiError::BadRequest {
                code, parameter, ..
            } => (StatusCode::BAD_REQUEST, *code, Some(parameter.clone())),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found", None),
            ApiError::MethodNotAllowed(_) => {
                (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", None)
            }
            ApiError::UriTooLong(_) => (StatusCode::URI_TOO_LONG, "uri_too_long", None),
            ApiError::Overloaded { code, .. } => (StatusCode::SERVICE_UNAVAILABLE, *code, None),
            ApiError::Store(e) => {
                tracing::warn!(event = telemetry::SERVER_STORE_UNAVAILABLE, error = %e);
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "database_unavailable",
                    None,
                )
            }
        };
        let body = ErrorBody {
            error: ErrorDetail {
                code: code.to_owned(),
                message: self.to_string(),
                parameter,
            },
        };
        let mut response = (status, Json(body)).into_response();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            response.headers_mut().insert(
                axum::http::header::ALLOW,
                axum::http::HeaderValue::from_static("GET, HEAD"),
            );
        }
        if let ApiError::Overloaded { retry_after, .. } = &self {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(*retry_after),
            );
        }
        response
    }
}

#[utoipa::path(
    get,
    path = "/health/live",
    tag = "health",
    responses(
        (status = 200, description = "The process answers (touches nothing else)", body = Object, example = json!({"status": "ok"})),
        (status = 400, description = "A query parameter was given (none is accepted), named in the error", body = ErrorBody),
    )
)]
/// `GET /health/live`: answers while the process runs. Past the connection cap it is still
/// answered, by the listener itself ([`listen`]).
async fn live(RawQuery(raw): RawQuery) -> Result<Json<serde_json::Value>, ApiError> {
    // Strict like every other endpoint: a parameter would be silently ignored otherwise.
    api::params::pairs(raw.as_deref(), &[])?;
    // Deliberately touches nothing: a database outage must not make the process look dead.
    Ok(Json(json!({"status": "ok"})))
}

#[utoipa::path(
    get,
    path = "/health/ready",
    tag = "health",
    responses(
        (status = 200, description = "The database answers, its schema is current and no feed source's latest attempt had its credential rejected", body = Object, example = json!({"status": "ok"})),
        (status = 400, description = "A query parameter was given (none is accepted), named in the error", body = ErrorBody),
        (status = 503, description = "The database does not answer, migrations are missing (`reason`, `missing_migrations`), or the provider rejected the feed's credential at its latest attempt (`reason`: `credential_rejected`, `message`: the source's redacted error)", body = Object),
    )
)]
/// `GET /health/ready`: ok once the database answers with the current schema, and while the
/// provider has not rejected the feed's credential (a 401 at a source's latest attempt; the
/// next request that succeeds makes it ready again).
async fn ready(State(state): State<AppState>, RawQuery(raw): RawQuery) -> Response {
    if let Err(refused) = api::params::pairs(raw.as_deref(), &[]) {
        return refused.into_response();
    }
    match state.report.schema_state().await {
        Ok(schema) if schema.is_current() => match state.report.event_sources().await {
            Ok(sources) => match sources
                .iter()
                .find(|s| headroom_github::feed::poll::credential_rejected(s))
            {
                Some(source) => (
                    StatusCode::SERVICE_UNAVAILABLE,
                    Json(json!({
                        "status": "unavailable",
                        "reason": "credential_rejected",
                        "message": source.last_error,
                    })),
                )
                    .into_response(),
                None => Json(json!({"status": "ok"})).into_response(),
            },
            Err(e) => unreachable_database(&e),
        },
        Ok(schema) => {
            let missing: Vec<i64> = schema
                .expected
                .iter()
                .copied()
                .filter(|v| !schema.applied.contains(v))
                .collect();
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({
                    "status": "unavailable",
                    "reason": "schema_not_current",
                    "missing_migrations": missing,
                })),
            )
                .into_response()
        }
        Err(e) => unreachable_database(&e),
    }
}

fn unreachable_database(e: &headroom_store::StoreError) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(json!({
            "status": "unavailable",
            "reason": "database_unreachable",
            "message": e.to_string(),
        })),
    )
        .into_response()
}

#[utoipa::path(
    get,
    path = "/status",
    tag = "feed",
    responses(
        (status = 200, description = "The feed's status document (the same as `headroom status --json`)", body = StatusDocument),
        (status = 400, description = "A query parameter was given (`/status` takes none), named in the error", body = ErrorBody),
        (status = 503, description = "The database did not answer", body = ErrorBody),
    )
)]
/// `GET /status`: the feed's ledgers, backlog, throughput and catch-up verdict. It takes no
/// parameter, and says so rather than ignore one (as the list endpoints do).
async fn status_handler(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    api::params::pairs(raw.as_deref(), &[])?;
    let document = state.status.get(&state).await?;
    Ok(Json(&*document).into_response())
}

/// A known path asked with a method it does not serve: JSON like every other refusal.
async fn method_not_allowed(method: axum::http::Method) -> ApiError {
    ApiError::MethodNotAllowed(method.to_string())
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such endpoint".into())
}
