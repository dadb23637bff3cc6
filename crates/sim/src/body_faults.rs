//! Faults in the middle of an answer, below HTTP's status line: a body cut off halfway with
//! the connection closed (what a reset or a proxy dying mid-response looks like to a client),
//! and a body that stalls halfway before the rest arrives. The handler draws them for answers
//! it served (the request was counted, as on GitHub) and marks the response; the HTTP server
//! sends the body accordingly. In-process callers get the whole body: these faults exist only
//! on the wire.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use headroom_core::clock::{SignedDuration, TokioClock};
use hyper::body::{Body, Frame, SizeHint};

/// What happens to a served answer's body on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFault {
    /// Half the body (the headers promising all of it), then the connection closes.
    Cut,
    /// Half the body, a stall of this long, then the rest.
    Stall(SignedDuration),
}

impl BodyFault {
    /// The fault's name in the simulator's request log.
    pub fn name(self) -> &'static str {
        match self {
            BodyFault::Cut => "cut",
            BodyFault::Stall(_) => "stall",
        }
    }
}

type Sleep = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The simulator's response body: whole, or sent as a [`BodyFault`] says.
pub struct SimBody {
    /// Chunks still to send, in order.
    chunks: Vec<Bytes>,
    /// Whole length, announced up front so a cut body is visibly short.
    len: u64,
    /// Before the second chunk: wait (stall) or fail (cut).
    gap: Gap,
}

impl std::fmt::Debug for SimBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let gap = match self.gap {
            Gap::None => "none",
            Gap::Stall(_) => "stall",
            Gap::Cut(_) => "cut",
        };
        f.debug_struct("SimBody")
            .field("len", &self.len)
            .field("chunks_left", &self.chunks.len())
            .field("gap", &gap)
            .finish()
    }
}

enum Gap {
    None,
    Stall(Sleep),
    Cut(Sleep),
}

impl SimBody {
    pub fn new(body: Bytes, fault: Option<BodyFault>, clock: TokioClock) -> SimBody {
        let len = body.len() as u64;
        let Some(fault) = fault.filter(|_| body.len() >= 2) else {
            return SimBody {
                chunks: vec![body],
                len,
                gap: Gap::None,
            };
        };
        let half = body.len() / 2;
        let (first, rest) = (body.slice(..half), body.slice(half..));
        let gap = match fault {
            // A short pause first, so the head and the first half are flushed to the client
            // before the connection closes (hyper writes what it holds while a body waits).
            BodyFault::Cut => Gap::Cut(Box::pin(async move {
                clock.sleep(SignedDuration::from_millis(10)).await;
            })),
            BodyFault::Stall(d) => Gap::Stall(Box::pin(async move { clock.sleep(d).await })),
        };
        SimBody {
            // Popped from the end.
            chunks: vec![rest, first],
            len,
            gap,
        }
    }
}

impl Body for SimBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = self.get_mut();
        let first_sent = this.chunks.len() < 2;
        if first_sent {
            match &mut this.gap {
                Gap::None => {}
                Gap::Stall(sleep) => {
                    if sleep.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    this.gap = Gap::None;
                }
                Gap::Cut(pause) => {
                    if pause.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    this.chunks.clear();
                    this.gap = Gap::None;
                    return Poll::Ready(Some(Err(std::io::Error::new(
                        std::io::ErrorKind::ConnectionAborted,
                        "the simulator cut this answer off (injected fault)",
                    ))));
                }
            }
        }
        Poll::Ready(this.chunks.pop().map(|c| Ok(Frame::data(c))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_core::clock::Clock;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn a_whole_body_arrives_whole() {
        let body = SimBody::new(Bytes::from_static(b"hello"), None, TokioClock::system());
        let got = body.collect().await.expect("whole").to_bytes();
        assert_eq!(got, Bytes::from_static(b"hello"));
    }

    #[tokio::test]
    async fn a_cut_body_sends_half_then_fails() {
        let mut body = SimBody::new(
            Bytes::from_static(b"0123456789"),
            Some(BodyFault::Cut),
            TokioClock::system(),
        );
        assert_eq!(body.size_hint().exact(), Some(10));
        let first = body.frame().await.expect("a frame").expect("data");
        assert_eq!(first.into_data().ok(), Some(Bytes::from_static(b"01234")));
        assert!(body.frame().await.expect("a frame").is_err());
        assert!(body.frame().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_body_arrives_whole_after_the_stall() {
        let clock = TokioClock::system();
        let started = clock.now();
        let body = SimBody::new(
            Bytes::from_static(b"0123456789"),
            Some(BodyFault::Stall(SignedDuration::from_secs(3))),
            clock,
        );
        let got = body.collect().await.expect("whole").to_bytes();
        assert_eq!(got, Bytes::from_static(b"0123456789"));
        assert!(clock.now().duration_since(started) >= SignedDuration::from_secs(3));
    }
}
