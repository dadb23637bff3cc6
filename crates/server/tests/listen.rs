//! The server's limits over real sockets on loopback: a client that never finishes its
//! headers is cut off after the header timeout (a slowloris holds nothing), an idle
//! kept-alive connection likewise, a connection beyond the cap gets a JSON 503 while the ones
//! within it are served and `/health/live` still answers, event streams past their own cap get
//! a JSON 503, a client that never reads its response is cut off once the write stalls, a long
//! response (as an event stream is) is not cut by the header timeout, and hyper's own
//! refusals carry JSON.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::convert::Infallible;
use std::time::Duration;

use axum::Router;
use axum::response::sse::{Event, Sse};
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

/// A body far larger than the socket buffers of both ends: writing it stalls on a client
/// that does not read.
async fn big() -> Vec<u8> {
    vec![b'x'; 64 << 20]
}

/// An event stream that sends one event, then nothing.
async fn events() -> Sse<impl futures_util::Stream<Item = Result<Event, Infallible>>> {
    let first = futures_util::stream::iter([Ok(Event::default().data("hello"))]);
    Sse::new(futures_util::StreamExt::chain(
        first,
        futures_util::stream::pending(),
    ))
}

async fn start(max_connections: usize) -> std::net::SocketAddr {
    start_with(ServeLimits {
        header_timeout: HEADER_TIMEOUT,
        max_connections,
        ..ServeLimits::default()
    })
    .await
}

async fn start_with(limits: ServeLimits) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let router = Router::new()
        .route("/", get(|| async { "ok" }))
        .route("/health/live", get(|| async { "live" }))
        .route("/slow", get(slow))
        .route("/big", get(big))
        .route("/events", get(events))
        .route("/hold", get(std::future::pending::<&'static str>));
    tokio::spawn(serve_router(
        listener,
        router,
        limits,
        std::future::pending(),
    ));
    addr
}

/// A raw answer's status, lower-cased head and JSON body (`Null` if the body is not JSON).
fn parse(raw: &str) -> (u16, String, serde_json::Value) {
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((raw, ""));
    let status = head
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_default();
    let json = serde_json::from_str(body).unwrap_or(serde_json::Value::Null);
    (status, head.to_ascii_lowercase(), json)
}

/// Sends `request` on a new connection and reads until the end of the answer's head.
async fn head_of(addr: std::net::SocketAddr, request: &str) -> (TcpStream, String) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("request");
    let mut out = Vec::new();
    let mut byte = [0u8; 1];
    while !out.ends_with(b"\r\n\r\n") {
        let read = tokio::time::timeout(BOUND, stream.read(&mut byte))
            .await
            .expect("the head came within the bound");
        match read {
            Ok(1) => out.push(byte[0]),
            _ => break,
        }
    }
    (stream, String::from_utf8_lossy(&out).into_owned())
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

/// Asks `path` until the answer ends with `want`; fails past five seconds.
async fn eventually(addr: std::net::SocketAddr, path: &str, want: &str, why: &str) {
    let started = SystemClock.now();
    loop {
        if request(addr, path).await.ends_with(want) {
            return;
        }
        assert!(
            SystemClock.now().duration_since(started) < SignedDuration::from_secs(5),
            "{why}"
        );
        TokioClock::system()
            .sleep(SignedDuration::from_millis(50))
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_get_a_json_503_not_a_reset() {
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
    // Both are being served (their handlers wait); a third is refused in JSON, and told
    // when to come back.
    TokioClock::system()
        .sleep(SignedDuration::from_millis(100))
        .await;
    let refused = request(addr, "/").await;
    let (status, head, json) = parse(&refused);
    assert_eq!(status, 503, "{refused}");
    assert!(head.contains("\r\nretry-after: 1\r\n"), "{refused}");
    assert_eq!(json["error"]["code"], "too_many_connections", "{refused}");
    // Once one is let go, a new connection is served again.
    drop(held.pop());
    eventually(addr, "/", "ok", "a freed slot was never reused").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_streams_past_their_cap_get_503_and_health_live_still_answers() {
    let addr = start_with(ServeLimits {
        header_timeout: Duration::from_secs(5),
        max_connections: 6,
        max_event_streams: 3,
        ..ServeLimits::default()
    })
    .await;
    let stream_request = "GET /events HTTP/1.1\r\nHost: t\r\n\r\n";
    let mut streams = Vec::new();
    for _ in 0..3 {
        let (stream, head) = head_of(addr, stream_request).await;
        assert!(
            head.starts_with("HTTP/1.1 200") && head.contains("text/event-stream"),
            "{head}"
        );
        streams.push(stream);
    }
    // A fourth stream is refused with a JSON 503 while a connection is still free.
    let refused = request(addr, "/events").await;
    let (status, head, json) = parse(&refused);
    assert_eq!(status, 503, "{refused}");
    assert!(head.contains("\r\nretry-after: 5\r\n"), "{refused}");
    assert_eq!(json["error"]["code"], "too_many_event_streams", "{refused}");
    // The connections the streams leave serve everything else.
    assert!(request(addr, "/").await.ends_with("ok"));
    // With every connection held (three streams, three requests in progress), the process
    // still says it is alive, and refuses the rest in JSON.
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        stream
            .write_all(b"GET /hold HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .expect("request");
        held.push(stream);
    }
    TokioClock::system()
        .sleep(SignedDuration::from_millis(100))
        .await;
    let live = request(addr, "/health/live").await;
    let (status, _, json) = parse(&live);
    assert_eq!(status, 200, "{live}");
    assert_eq!(json, serde_json::json!({"status": "ok"}), "{live}");
    let (status, _, json) = parse(&request(addr, "/").await);
    assert_eq!(
        (status, &json["error"]["code"]),
        (503, &"too_many_connections".into())
    );
    // A stream whose client leaves gives its slot back.
    drop(held);
    drop(streams.pop());
    let started = SystemClock.now();
    loop {
        let (_stream, head) = head_of(addr, stream_request).await;
        if head.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(
            SystemClock.now().duration_since(started) < SignedDuration::from_secs(5),
            "a stream's slot was never given back: {head}"
        );
        TokioClock::system()
            .sleep(SignedDuration::from_millis(50))
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_its_response_is_cut_off_and_frees_its_connection() {
    let addr = start_with(ServeLimits {
        header_timeout: HEADER_TIMEOUT,
        max_connections: 1,
        write_stall_timeout: Duration::from_millis(300),
        ..ServeLimits::default()
    })
    .await;
    let mut reader_of_nothing = TcpStream::connect(addr).await.expect("connect");
    reader_of_nothing
        .write_all(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .expect("request");
    // The only connection is taken by a response nobody reads; once its write has stalled
    // past the timeout, the connection is closed and the next client is served.
    eventually(
        addr,
        "/",
        "ok",
        "the stalled response held the only connection for ever",
    )
    .await;
    drop(reader_of_nothing);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hypers_own_refusals_are_json() {
    let addr = start(16).await;
    let long_uri = format!(
        "GET /?q={} HTTP/1.1\r\nHost: t\r\n\r\n",
        "a".repeat(70 * 1024)
    );
    let many_headers = format!(
        "GET / HTTP/1.1\r\nHost: t\r\n{}\r\n",
        (0..120)
            .map(|i| format!("X-H{i}: v\r\n"))
            .collect::<String>()
    );
    for (request, want, code) in [
        (long_uri, 414, "uri_too_long"),
        (many_headers, 431, "headers_too_large"),
        (
            "this is not http\r\n\r\n".to_owned(),
            400,
            "malformed_request",
        ),
    ] {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        stream.write_all(request.as_bytes()).await.expect("request");
        let answer = until_closed(&mut stream).await;
        let (status, head, json) = parse(&answer);
        assert_eq!(status, want, "{answer}");
        assert!(head.contains("content-type: application/json"), "{answer}");
        assert_eq!(json["error"]["code"], code, "{answer}");
        assert!(json["error"]["message"].is_string(), "{answer}");
    }
    // On a kept-alive connection too: the first request is answered as usual, the malformed
    // one after it in JSON.
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\nnonsense\r\n\r\n")
        .await
        .expect("requests");
    let answers = until_closed(&mut stream).await;
    let second = answers.find("HTTP/1.1 400").expect("a second answer");
    assert!(answers.starts_with("HTTP/1.1 200") && answers[..second].ends_with("ok"));
    let (_, _, json) = parse(&answers[second..]);
    assert_eq!(json["error"]["code"], "malformed_request", "{answers}");
}
