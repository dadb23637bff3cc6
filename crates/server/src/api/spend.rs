//! `GET /api/quota/spend` — who spends each identity's quota: per bucket, the window of its
//! newest reading, what each headroom activity spent of it and what was spent outside
//! headroom (see [`crate::dashboard::spend`]).

use axum::Json;
use axum::extract::{RawQuery, State};
use headroom_core::clock::Timestamp;

use crate::ApiError;
use crate::api::{DashboardState, params};
use crate::dashboard::spend::{self, SpendSnapshot};

/// Reads the spend of every identity's current windows at `now`.
pub async fn snapshot(state: &DashboardState, now: Timestamp) -> Result<SpendSnapshot, ApiError> {
    let latest = state
        .history
        .latest_quota_readings(now - state.settings.live_window)
        .await?;
    let resets = latest.iter().filter_map(|b| b.latest.reading.reset_at);
    let (Some(first), Some(last)) = (resets.clone().min(), resets.max()) else {
        return Ok(SpendSnapshot {
            captured_at: Some(now),
            identities: Vec::new(),
        });
    };
    // The rows of those windows only: resets within the tolerance of one of them.
    let margin = spend::SAME_WINDOW;
    let totals = state
        .history
        .spend_totals(first - margin, last + margin + margin)
        .await?;
    let starts = state.history.spend_starts().await?;
    Ok(SpendSnapshot {
        captured_at: Some(now),
        identities: spend::spend_of(&latest, &totals, &starts),
    })
}

/// `GET /api/quota/spend`.
#[utoipa::path(
    get,
    path = "/api/quota/spend",
    operation_id = "quota_spend",
    tag = "quota",
    responses(
        (status = 200, description = "Per identity and bucket window: what each headroom activity spent and what was spent outside headroom", body = SpendSnapshot),
        (status = 400, description = "A parameter was refused (unknown, repeated or malformed)", body = crate::ErrorBody),
        (status = 503, description = "The database did not answer", body = crate::ErrorBody),
    )
)]
pub async fn show(
    State(state): State<DashboardState>,
    RawQuery(raw): RawQuery,
) -> Result<Json<SpendSnapshot>, ApiError> {
    params::pairs(raw.as_deref(), &[])?;
    let now = state.clock.now();
    Ok(Json(snapshot(&state, now).await?))
}
