//! The cap on event streams: a `text/event-stream` response never ends on its own, so each
//! holds a connection for as long as its client stays. Each takes a slot for the life of its
//! body; with none free, the client gets a JSON 503 (`too_many_event_streams`) with
//! `Retry-After` instead, and the connections the cap leaves stay for every other request.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};
use futures_util::StreamExt as _;
use headroom_core::telemetry;
use tokio::sync::Semaphore;

use crate::ApiError;

/// Seconds a refused stream's client is told to wait.
const RETRY_AFTER: u32 = 5;

#[derive(Debug, Clone)]
struct Slots {
    free: Arc<Semaphore>,
    max: usize,
}

/// `router`, holding its event streams to `max` at once.
pub(super) fn capped(router: Router, max: usize) -> Router {
    let slots = Slots {
        free: Arc::new(Semaphore::new(max)),
        max,
    };
    router.layer(axum::middleware::from_fn_with_state(slots, admit))
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// Lets an event stream through while a slot is free, holding the slot until its body is
/// dropped (the client went away or the connection closed).
async fn admit(State(slots): State<Slots>, request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    if !is_event_stream(&response) {
        return response;
    }
    let Ok(slot) = slots.free.clone().try_acquire_owned() else {
        tracing::warn!(
            event = telemetry::SERVER_CONNECTION_REFUSED,
            limit = slots.max
        );
        return ApiError::Overloaded {
            code: "too_many_event_streams",
            message: format!(
                "the server holds its limit of {} event streams; try again later",
                slots.max
            ),
            retry_after: RETRY_AFTER,
        }
        .into_response();
    };
    let (parts, body) = response.into_parts();
    let held = body.into_data_stream().map(move |chunk| {
        // The slot lives as long as the body does.
        let _slot = &slot;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(held))
}
