//! Serving a router on a TCP listener within limits: a client has [`ServeLimits::header_timeout`]
//! to send a request's headers — the first request's and each next one's on a kept-alive
//! connection, so an idle connection is closed too — and no more than
//! [`ServeLimits::max_connections`] are held at once; one beyond that is closed as soon as it
//! is accepted. Without these, one slow client holds a connection for ever and a few thousand
//! exhaust the process's file descriptors. A response in progress (an event stream) is never
//! cut: the timeout covers reading headers, not writing bodies.
//!
//! HTTP/1.1 only, through hyper's connection builder (axum's own `serve` has no such limits).
//! Stopping: when `shutdown` completes, no connection is accepted any more and the function
//! returns once the open ones have finished — the caller bounds that wait.

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

/// The server's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeLimits {
    /// How long a client may take to send a request's headers (and how long a kept-alive
    /// connection may sit idle before its next request).
    pub header_timeout: Duration,
    /// Connections held at once.
    pub max_connections: usize,
}

impl Default for ServeLimits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            max_connections: 512,
        }
    }
}

/// Serves `router` on `listener` within `limits` until `shutdown` completes.
pub async fn serve_router(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let graceful = GracefulShutdown::new();
    let permits = Arc::new(Semaphore::new(limits.max_connections));
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
                    TokioClock::system().sleep(SignedDuration::from_millis(50)).await;
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
            drop(stream);
            continue;
        };
        let service = TowerToHyperService::new(router.clone());
        let connection = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
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
