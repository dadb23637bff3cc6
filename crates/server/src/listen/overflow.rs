//! A connection past the cap, answered by the listener without the router: `GET` (or `HEAD`)
//! `/health/live` answers 200 `{"status": "ok"}` — the process is alive, however busy — and
//! anything else a JSON 503 (`too_many_connections`) with `Retry-After`. Then the connection
//! closes. Every step is bounded in time, so an answer holds its slot a few seconds at most.

use headroom_core::clock::{SignedDuration, TokioClock};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// The most of a request head read: the request line is all that matters.
const HEAD_BYTES: usize = 8 * 1024;
/// The longest a connection is read after its answer, so that closing it does not reset the
/// answer away (a socket closed with unread input sends a reset).
const DRAIN: SignedDuration = SignedDuration::from_secs(1);
/// The most read after the answer.
const DRAIN_BYTES: usize = 64 * 1024;

/// Seconds a client is told to wait before trying again.
const RETRY_AFTER: u32 = 1;

/// Answers one connection past the cap of `limit`; the request head has at most `wait`
/// (capped at two seconds) to arrive.
pub(super) async fn answer(
    mut stream: TcpStream,
    clock: TokioClock,
    wait: SignedDuration,
    limit: usize,
) {
    let wait = wait.min(SignedDuration::from_secs(2));
    let line = clock
        .timeout(wait, read_head(&mut stream))
        .await
        .unwrap_or_default();
    let response = respond(&line, limit);
    let written = clock
        .timeout(wait, async {
            stream.write_all(&response).await?;
            stream.shutdown().await
        })
        .await;
    if matches!(written, Some(Ok(()))) {
        let _ = clock.timeout(DRAIN, drain(&mut stream)).await;
    }
}

/// The request line of the head the client sends (empty if none came).
async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while head.len() < HEAD_BYTES && !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
    let end = head
        .windows(2)
        .position(|w| w == b"\r\n")
        .unwrap_or(head.len());
    String::from_utf8_lossy(&head[..end]).into_owned()
}

async fn drain(stream: &mut TcpStream) {
    let mut chunk = [0u8; 4096];
    let mut read = 0;
    while read < DRAIN_BYTES {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => read += n,
        }
    }
}

/// The whole answer to `request_line`.
fn respond(request_line: &str, limit: usize) -> Vec<u8> {
    let mut words = request_line.split(' ');
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let head_only = method == "HEAD";
    let (status, extra, body) = if matches!(method, "GET" | "HEAD") && target == "/health/live" {
        ("200 OK", String::new(), br#"{"status":"ok"}"#.to_vec())
    } else {
        let body = crate::refusal::json_body(
            "too_many_connections",
            format!(
                "the server is serving its limit of {limit} connections; try again in a moment"
            ),
        );
        (
            "503 Service Unavailable",
            format!("retry-after: {RETRY_AFTER}\r\n"),
            body,
        )
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         {extra}connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head_only {
        out.extend_from_slice(&body);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_cap_only_health_live_is_ok() {
        let live = String::from_utf8(respond("GET /health/live HTTP/1.1", 8)).expect("text");
        assert!(live.starts_with("HTTP/1.1 200 OK\r\n"), "{live}");
        assert!(live.ends_with(r#"{"status":"ok"}"#), "{live}");
        let head = String::from_utf8(respond("HEAD /health/live HTTP/1.1", 8)).expect("text");
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n") && head.ends_with("\r\n\r\n"));
        for other in [
            "GET /status HTTP/1.1",
            "GET /health/live?x=1 HTTP/1.1",
            "POST /health/live HTTP/1.1",
            "",
        ] {
            let refused = String::from_utf8(respond(other, 8)).expect("text");
            assert!(refused.starts_with("HTTP/1.1 503 "), "{other}: {refused}");
            assert!(refused.contains("\r\nretry-after: 1\r\n"), "{refused}");
            assert!(refused.contains("too_many_connections"), "{refused}");
        }
    }
}
