//! The socket as hyper sees it, with two changes on the way out:
//!
//! - **A stalled write ends the connection.** A write that cannot go on (the client's
//!   receive window is full: it does not read) starts a timer; any progress stops it; once it
//!   runs out, the write fails with `TimedOut` and hyper closes the connection, freeing its
//!   permit. Without it a client that never reads holds its connection for ever.
//! - **hyper's own refusals carry JSON.** A request hyper cannot parse never reaches the
//!   router: hyper answers it itself — 400, 431 (head too large), 414 (URI past 64 KiB) — with
//!   an empty body, and closes the connection. It writes such an answer only at a response
//!   boundary, as the connection's last bytes, and its head has no `content-type`, which no
//!   response of the router lacks (they are all JSON, HTML or text). A write that begins with
//!   such a head is replaced by the same status with the JSON refusal body
//!   ([`crate::refusal::protocol_refusal`]); the test `hypers_own_refusals_are_json` pins the
//!   shape hyper writes, so an upgrade that changes it fails there.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use headroom_core::clock::{SignedDuration, TokioClock};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

type Timer = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A socket whose stalled writes time out and whose protocol refusals are rewritten.
pub(super) struct Guarded<T> {
    inner: T,
    clock: TokioClock,
    stall_limit: SignedDuration,
    /// Running while a write is pending without progress.
    stall: Option<Timer>,
    /// A rewritten refusal still to be written, and how much of it is.
    replacement: Option<(Vec<u8>, usize)>,
}

impl<T> Guarded<T> {
    pub(super) fn new(inner: T, clock: TokioClock, stall_limit: SignedDuration) -> Self {
        Self {
            inner,
            clock,
            stall_limit,
            stall: None,
            replacement: None,
        }
    }

    /// Passes a write's outcome on, timing how long it has been pending.
    fn track<R>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        if poll.is_ready() {
            self.stall = None;
            return poll;
        }
        let (clock, limit) = (self.clock, self.stall_limit);
        let timer = self
            .stall
            .get_or_insert_with(|| Box::pin(async move { clock.sleep(limit).await }));
        if timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the client read nothing for {limit:#}"),
            )));
        }
        Poll::Pending
    }
}

impl<T: AsyncWrite + Unpin> Guarded<T> {
    /// Writes what is left of a rewritten refusal; ready once it is all written.
    fn poll_replacement(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((bytes, written)) = self.replacement.as_mut() {
            if *written >= bytes.len() {
                self.replacement = None;
                break;
            }
            let poll = Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]);
            match self.track(cx, poll) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    if let Some((_, written)) = self.replacement.as_mut() {
                        *written += n;
                    }
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Takes over `buf` if it begins with one of hyper's own refusals: how many of its bytes
    /// the rewrite consumed.
    fn rewrite(&mut self, buf: &[u8]) -> Option<usize> {
        if self.replacement.is_some() {
            return None;
        }
        let (consumed, replacement) = rewrite_refusal(buf)?;
        self.replacement = Some((replacement, 0));
        Some(consumed)
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Guarded<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Guarded<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        std::task::ready!(this.poll_replacement(cx))?;
        if let Some(consumed) = this.rewrite(buf) {
            return Poll::Ready(Ok(consumed));
        }
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.track(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        std::task::ready!(this.poll_replacement(cx))?;
        // hyper puts a response's head in a buffer of its own, so a refusal is the first.
        if let Some(first) = bufs.iter().find(|b| !b.is_empty())
            && let Some(consumed) = this.rewrite(first)
        {
            return Poll::Ready(Ok(consumed));
        }
        let poll = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.track(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        std::task::ready!(this.poll_replacement(cx))?;
        let poll = Pin::new(&mut this.inner).poll_flush(cx);
        this.track(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        std::task::ready!(this.poll_replacement(cx))?;
        let poll = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.track(cx, poll)
    }
}

/// If `buf` begins with a response head of hyper's own refusals (400, 414, 431 with no
/// `content-type` and no body), the bytes it spans and the same answer with a JSON body.
fn rewrite_refusal(buf: &[u8]) -> Option<(usize, Vec<u8>)> {
    let status = buf.strip_prefix(b"HTTP/1.1 ")?.get(..3)?;
    let status = std::str::from_utf8(status).ok()?.parse::<u16>().ok()?;
    let body = crate::refusal::protocol_refusal(status)?;
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&buf[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let mut kept = Vec::new();
    for line in lines {
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        match name.to_ascii_lowercase().as_str() {
            // A head with a type is the router's: never rewritten.
            "content-type" => return None,
            "content-length" if value.trim() != "0" => return None,
            "content-length" | "connection" => {}
            _ => kept.push(line),
        }
    }
    let mut out = format!("{status_line}\r\n");
    for line in kept {
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str(&format!(
        "content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    ));
    let mut out = out.into_bytes();
    out.extend_from_slice(&body);
    Some((end + 4, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bodiless_untyped_protocol_refusal_is_rewritten() {
        let hyper =
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let (consumed, out) = rewrite_refusal(hyper).expect("rewritten");
        assert_eq!(consumed, hyper.len());
        let out = String::from_utf8(out).expect("text");
        assert!(out.starts_with("HTTP/1.1 431 "), "{out}");
        assert!(out.contains("\r\ndate: x\r\n"), "{out}");
        assert!(out.contains("content-type: application/json"), "{out}");
        let body = out.split("\r\n\r\n").nth(1).expect("a body");
        let json: serde_json::Value = serde_json::from_str(body).expect("json");
        assert_eq!(json["error"]["code"], "headers_too_large");
        for untouched in [
            &b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 12\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
            b"{\"error\": 1}",
        ] {
            assert!(rewrite_refusal(untouched).is_none(), "{untouched:?}");
        }
    }
}
