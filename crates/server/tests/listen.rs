//! The server's limits over real sockets on loopback: a client that never finishes its
//! headers is cut off after the header timeout (a slowloris holds nothing), an idle
//! kept-alive connection likewise, a connection beyond the cap is closed at once while the
//! ones within it are served, and a long response (as an event stream is) is not cut by the
//! header timeout.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::Duration;

use axum::Router;
use axum::routing::get;
use headroom_core::clock::{Clock as _, SignedDuration, SystemClock, TokioClock};
use headroom_server::listen::{ServeLimits, serve_router};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

const HEADER_TIMEOUT: Duration = Duration::from_millis(300);
/// Longer than anything the test waits for, so a hang fails instead of blocking.
const BOUND: Duration = Duration::from_secs(10);

async fn slow() -> &'static str {
    // Longer than the header timeout: a response in progress is not cut.
    TokioClock::system()
        .sleep(SignedDuration::from_millis(900))
        .await;
    "slow"
}

async fn start(max_connections: usize) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let router = Router::new()
        .route("/", get(|| async { "ok" }))
        .route("/slow", get(slow))
        .route("/hold", get(std::future::pending::<&'static str>));
    tokio::spawn(serve_router(
        listener,
        router,
        ServeLimits {
            header_timeout: HEADER_TIMEOUT,
            max_connections,
        },
        std::future::pending(),
    ));
    addr
}

/// Reads until the server closes the connection; what it sent. Fails past [`BOUND`].
async fn until_closed(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let read = tokio::time::timeout(BOUND, stream.read(&mut buffer))
            .await
            .expect("the server closed the connection within the bound");
        match read {
            Ok(0) | Err(_) => return String::from_utf8_lossy(&out).into_owned(),
            Ok(n) => out.extend_from_slice(&buffer[..n]),
        }
    }
}

async fn request(addr: std::net::SocketAddr, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .expect("request");
    until_closed(&mut stream).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_finishes_its_headers_is_cut_off() {
    let addr = start(16).await;
    let mut slowloris = TcpStream::connect(addr).await.expect("connect");
    slowloris
        .write_all(b"GET / HTTP/1.1\r\nHost: t\r\nX-Slow: 1\r\n")
        .await
        .expect("partial headers");
    let started = SystemClock.now();
    until_closed(&mut slowloris).await;
    let held = SystemClock.now().duration_since(started);
    assert!(
        held >= SignedDuration::try_from(HEADER_TIMEOUT).expect("fits")
            - SignedDuration::from_millis(50),
        "closed before the timeout: {held}"
    );
    // The server itself is fine.
    assert!(request(addr, "/").await.ends_with("ok"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_kept_alive_connection_is_closed_and_a_long_response_is_not_cut() {
    let addr = start(16).await;
    let mut idle = TcpStream::connect(addr).await.expect("connect");
    idle.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .expect("request");
    // The answer, then nothing: the connection is closed once the next request's headers
    // have not come within the timeout.
    let answered = until_closed(&mut idle).await;
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
    let slow = request(addr, "/slow").await;
    assert!(
        slow.starts_with("HTTP/1.1 200") && slow.ends_with("slow"),
        "{slow}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_are_closed_at_once() {
    let addr = start(2).await;
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        stream
            .write_all(b"GET /hold HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .expect("request");
        held.push(stream);
    }
    // Both are being served (their handlers wait); a third is closed without an answer.
    TokioClock::system()
        .sleep(SignedDuration::from_millis(100))
        .await;
    let mut third = TcpStream::connect(addr).await.expect("connect");
    let _ = third.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").await;
    assert_eq!(
        until_closed(&mut third).await,
        "",
        "beyond the cap, no answer"
    );
    // Once one is let go, a new connection is served again.
    drop(held.pop());
    let started = SystemClock.now();
    loop {
        if request(addr, "/").await.ends_with("ok") {
            break;
        }
        assert!(
            SystemClock.now().duration_since(started) < SignedDuration::from_secs(5),
            "a freed slot was never reused"
        );
        TokioClock::system()
            .sleep(SignedDuration::from_millis(50))
            .await;
    }
}
