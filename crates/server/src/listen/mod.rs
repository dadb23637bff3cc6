//! Serving a router on a TCP listener within limits, so that no kind of client can lock the
//! others out:
//!
//! - a client has [`ServeLimits::header_timeout`] to send a request's headers — the first
//!   request's and each next one's on a kept-alive connection, so an idle connection is closed
//!   too (a slowloris holds nothing);
//! - no more than [`ServeLimits::max_connections`] are served at once; one beyond that is
//!   answered by the listener itself ([`overflow`]): `/health/live` still answers 200, anything
//!   else a JSON 503 with `Retry-After`, never a reset — up to [`OVERFLOW_ANSWERS`] such answers
//!   at once, past which a connection is closed unanswered (the last resort against a flood);
//! - event streams (`text/event-stream` responses, which never end on their own) hold at most
//!   [`ServeLimits::max_event_streams`] connections, well below the connection cap; one more
//!   is a JSON 503 ([`streams`]);
//! - a response the client does not read is cut once writing it has made no progress for
//!   [`ServeLimits::write_stall_timeout`] ([`guard`]): a response in progress is never cut
//!   for being long, only for being stuck;
//! - hyper's own refusals of a request it cannot parse (400, 431, 414) carry the JSON body of
//!   every other refusal ([`guard`] rewrites them on their way out).
//!
//! HTTP/1.1 only, through hyper's connection builder (axum's own `serve` has no such limits).
//! Stopping: when `shutdown` completes, no connection is accepted any more and the function
//! returns once the open ones have finished — the caller bounds that wait.

mod guard;
mod overflow;
mod streams;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use headroom_core::clock::{SignedDuration, TokioClock};
use headroom_core::telemetry;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::sync::Semaphore;

/// Connections past [`ServeLimits::max_connections`] answered at once by the listener (each
/// for a few seconds at most); beyond these a connection is closed unanswered.
pub const OVERFLOW_ANSWERS: usize = 64;

/// The server's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeLimits {
    /// How long a client may take to send a request's headers (and how long a kept-alive
    /// connection may sit idle before its next request).
    pub header_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
    /// Event streams open at once; keep it well below `max_connections`, so that streams
    /// left open never take every connection.
    pub max_event_streams: usize,
    /// How long writing a response may make no progress (a client that does not read) before
    /// the connection is closed.
    pub write_stall_timeout: Duration,
}

impl Default for ServeLimits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            max_connections: 512,
            max_event_streams: 256,
            write_stall_timeout: Duration::from_secs(30),
        }
    }
}

fn signed(d: Duration) -> SignedDuration {
    SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX)
}

/// Serves `router` on `listener` within `limits` until `shutdown` completes.
pub async fn serve_router(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let clock = TokioClock::system();
    let graceful = GracefulShutdown::new();
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let overflow = Arc::new(Semaphore::new(OVERFLOW_ANSWERS));
    let router = streams::capped(router, limits.max_event_streams);
    let stall = signed(limits.write_stall_timeout);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors, a reset before accept: wait a moment, go on.
                    tracing::warn!(event = telemetry::SERVER_ACCEPT_FAILED, error = %e);
                    clock.sleep(SignedDuration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            tracing::warn!(
                event = telemetry::SERVER_CONNECTION_REFUSED,
                limit = limits.max_connections
            );
            // Answered rather than reset, while the answers themselves are few.
            if let Ok(slot) = overflow.clone().try_acquire_owned() {
                let wait = signed(limits.header_timeout);
                tokio::spawn(async move {
                    overflow::answer(stream, clock, wait, limits.max_connections).await;
                    drop(slot);
                });
            }
            continue;
        };
        let service = TowerToHyperService::new(router.clone());
        let io = TokioIo::new(guard::Guarded::new(stream, clock, stall));
        let connection = graceful.watch(builder.serve_connection(io, service));
        tokio::spawn(async move {
            // A client that goes away or times out ends its connection; nothing to report.
            let _ = connection.await;
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
