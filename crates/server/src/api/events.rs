//! `GET /api/events`: server-sent events. The stream asks the store every
//! [`super::DashboardSettings::poll_interval`] for its [`ActivityMark`] (the newest reading,
//! observation and sync-run update — a few `MAX`es) and, when it moved, sends one `snapshot`
//! event: the `/api/quota` document and the first page of sync runs, read once per change for
//! all streams ([`SnapshotCache`]). The first event is sent at once, so a page that connects is
//! current whatever it rendered.
//!
//! It reads like every other endpoint: nothing here writes or spends.

use headroom_core::clock::SignedDuration;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{RawQuery, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream::Stream;
use headroom_core::telemetry;
use headroom_store::quota_history::ActivityMark;
use serde::Serialize;
use tokio::sync::Mutex;

use crate::ApiError;
use crate::api::quota::{self, QuotaSnapshot};
use crate::api::sync::{self, RunsPage, RunsQuery};
use crate::api::{DashboardState, params};

/// What one `snapshot` event carries.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Snapshot {
    /// As `GET /api/quota` answers.
    pub quota: QuotaSnapshot,
    /// As `GET /api/sync/runs` answers its first page.
    pub sync: RunsPage,
}

/// Reads the snapshot the stream sends.
pub async fn snapshot(state: &DashboardState) -> Result<Snapshot, ApiError> {
    let now = state.clock.now();
    Ok(Snapshot {
        quota: quota::snapshot(state, now).await?,
        sync: sync::page(
            state,
            RunsQuery {
                limit: sync::DEFAULT_LIMIT,
                before: None,
            },
        )
        .await?,
    })
}

/// The snapshot of the newest activity mark, shared by every event stream of one server: a
/// change is read from the store once however many pages are open.
#[derive(Debug, Clone, Default)]
pub struct SnapshotCache(Arc<Mutex<Option<Cached>>>);

/// A snapshot and the mark it was read at.
type Cached = (ActivityMark, Arc<Snapshot>);

impl SnapshotCache {
    /// The snapshot for `mark`, read now unless another stream already read it. The lock is
    /// held while reading, so streams that see the same change wait for one read.
    async fn get(
        &self,
        state: &DashboardState,
        mark: ActivityMark,
    ) -> Result<Arc<Snapshot>, ApiError> {
        let mut slot = self.0.lock().await;
        if let Some((cached, snapshot)) = slot.as_ref()
            && *cached == mark
        {
            return Ok(snapshot.clone());
        }
        let fresh = Arc::new(snapshot(state).await?);
        *slot = Some((mark, fresh.clone()));
        Ok(fresh)
    }
}

struct Cursor {
    state: DashboardState,
    last: Option<ActivityMark>,
    first: bool,
}

/// The next event: waits a poll interval (not before the first), then sends a snapshot if the
/// mark moved. A store error is sent as an `unavailable` event and the stream goes on.
async fn next_event(mut cursor: Cursor) -> Option<(Result<Event, Infallible>, Cursor)> {
    loop {
        if !cursor.first {
            let pause = SignedDuration::try_from(cursor.state.settings.poll_interval)
                .unwrap_or(SignedDuration::from_secs(1));
            cursor.state.pacer.sleep(pause).await;
        }
        cursor.first = false;
        let mark = match cursor.state.history.activity_mark().await {
            Ok(mark) => mark,
            Err(e) => return Some((Ok(unavailable(&e.to_string())), cursor)),
        };
        if cursor.last == Some(mark) {
            continue;
        }
        let event = match cursor.state.snapshots.get(&cursor.state, mark).await {
            Ok(snapshot) => {
                cursor.last = Some(mark);
                Event::default()
                    .event("snapshot")
                    .json_data(&*snapshot)
                    .unwrap_or_else(|e| unavailable(&e.to_string()))
            }
            Err(e) => unavailable(&e.to_string()),
        };
        return Some((Ok(event), cursor));
    }
}

fn unavailable(message: &str) -> Event {
    tracing::warn!(event = telemetry::SERVER_STORE_UNAVAILABLE, error = %message);
    Event::default().event("unavailable").data(message)
}

/// The stream of events for one client.
pub fn stream(state: DashboardState) -> impl Stream<Item = Result<Event, Infallible>> {
    futures_util::stream::unfold(
        Cursor {
            state,
            last: None,
            first: true,
        },
        next_event,
    )
}

/// `GET /api/events`.
#[utoipa::path(
    get,
    path = "/api/events",
    tag = "dashboard",
    responses(
        (status = 200, description = "Server-sent events: `snapshot` (the quota document, the sync runs and the feed's figures) whenever something changed, `unavailable` while the database does not answer", content_type = "text/event-stream", body = Snapshot),
        (status = 400, description = "A parameter was given (none is accepted)", body = crate::ErrorBody),
        (status = 503, description = "The server holds its limit of open event streams (`too_many_event_streams`, see `listen`); `Retry-After` says when to try again", body = crate::ErrorBody),
    )
)]
pub async fn events(
    State(state): State<DashboardState>,
    RawQuery(raw): RawQuery,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    params::pairs(raw.as_deref(), &[])?;
    Ok(Sse::new(stream(state)).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
