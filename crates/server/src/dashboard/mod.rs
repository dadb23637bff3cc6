//! The quota dashboard, `GET /`: one server-rendered page — a panel per quota identity
//! (bars, resets, in flight, waits in words, credentials, the shared-quota warning), charts of
//! each bucket's remaining over the last hour, 6 h and 24 h, the sync runs, and the feed's
//! `/status` figures — with a small embedded script (`dashboard.js`, no CDN, nothing fetched
//! from the internet) that applies the server-sent events of `/api/events`.
//!
//! `data` reads what the page shows; `render`, `chart`, `words`, `phrase`, `held` and `spend`
//! (who spends each identity's quota) are pure.

pub mod chart;
pub mod feed_words;
pub mod held;
pub mod phrase;
pub mod render;
pub mod runs;
pub mod spend;
pub mod words;

use axum::extract::{RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_store::quota_history::BucketKey;

use crate::ApiError;
use crate::api::quota::{self, QuotaSnapshot};
use crate::api::sync::{self, RunsQuery};
use crate::api::{DashboardState, params};
use crate::dashboard::chart::ChartInput;
use crate::dashboard::render::{BucketCharts, Chart, PageData};

/// The page's script.
pub const SCRIPT: &str = include_str!("dashboard.js");
/// The page's style.
pub const STYLE: &str = include_str!("dashboard.css");

/// The charts' windows.
pub const WINDOWS: [(&str, SignedDuration); 3] = [
    ("last hour", SignedDuration::from_secs(3600)),
    ("6 h", SignedDuration::from_secs(6 * 3600)),
    ("24 h", SignedDuration::from_secs(24 * 3600)),
];

async fn charts_of(
    state: &DashboardState,
    snapshot: &QuotaSnapshot,
    now: Timestamp,
) -> Result<Vec<BucketCharts>, ApiError> {
    let mut out = Vec::new();
    for identity in &snapshot.identities {
        for bucket in &identity.buckets {
            let name = &bucket.now.latest.reading.bucket;
            let key = BucketKey {
                host: &identity.host,
                subject: &identity.subject,
                bucket: name,
            };
            let mut charts = Vec::new();
            for (window, span) in WINDOWS {
                let since = now - span;
                let history = quota::history_of(state, key, since, now).await?;
                let title = format!("{} remaining, {window}", words::bucket_label(name));
                let svg = chart::svg(ChartInput {
                    points: &history.points,
                    marks: &history.marks,
                    totals: &history.totals,
                    step: quota::history_step(since, now),
                    since,
                    until: now,
                    title: &title,
                });
                let legend = chart::legend(&history.totals);
                charts.push(Chart {
                    window,
                    svg,
                    legend,
                });
            }
            out.push(BucketCharts {
                host: identity.host.clone(),
                subject: identity.subject.clone(),
                bucket: name.clone(),
                charts,
            });
        }
    }
    Ok(out)
}

/// Reads everything the page shows.
pub async fn data(state: &DashboardState) -> Result<PageData, ApiError> {
    let now = state.clock.now();
    let quota = quota::snapshot(state, now).await?;
    let runs = sync::page(
        state,
        RunsQuery {
            limit: sync::DEFAULT_LIMIT,
            before: None,
        },
    )
    .await?;
    let charts = charts_of(state, &quota, now).await?;
    let spend = crate::api::spend::snapshot(state, now).await?;
    let app = &state.app;
    let feed = app
        .status
        .get(app)
        .await
        .map_err(|e| e.to_string())
        .and_then(|document| serde_json::to_value(&*document).map_err(|e| e.to_string()));
    Ok(PageData {
        quota,
        runs,
        charts,
        feed,
        spend,
    })
}

/// `GET /`: the page; `GET /?part=main` only its `<main>` content (what the script swaps in
/// when the page's shape changed).
#[utoipa::path(
    get,
    path = "/",
    tag = "dashboard",
    params(("part" = Option<String>, Query, description = "`main`: only the page's `<main>` content")),
    responses(
        (status = 200, description = "The dashboard page (server-rendered HTML)", content_type = "text/html", body = String),
        (status = 400, description = "A parameter was refused (unknown, repeated or malformed)", body = crate::ErrorBody),
        (status = 503, description = "The database did not answer", body = crate::ErrorBody),
    )
)]
pub async fn page(
    State(state): State<DashboardState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let mut only_main = false;
    for (_, value) in params::pairs(raw.as_deref(), &["part"])? {
        if value != "main" {
            return Err(params::bad(
                "invalid_parameter",
                "part",
                format!("part must be `main` (got `{value}`)"),
            ));
        }
        only_main = true;
    }
    let data = data(&state).await?;
    let html = if only_main {
        render::main(&data)
    } else {
        render::page(&data, SCRIPT, STYLE)
    };
    Ok((
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        html,
    )
        .into_response())
}
