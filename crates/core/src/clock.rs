//! Time. The only module in the workspace that reads the system clock or sleeps.
//!
//! Everything else asks a [`Clock`] for `now()`. Tests use [`ManualClock`] (pure code) or
//! [`TokioClock`] under `#[tokio::test(start_paused = true)]` (async code), so hours of quota
//! windows run in milliseconds and deterministically.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

pub use jiff::{SignedDuration, Timestamp};

/// A source of the current UTC instant.
pub trait Clock: Send + Sync + Debug {
    /// The current instant, UTC.
    fn now(&self) -> Timestamp;
}

/// A shared, dynamically chosen clock.
pub type SharedClock = Arc<dyn Clock>;

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> Timestamp {
        (**self).now()
    }
}

/// The operating system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that only moves when told to. Cheap to clone; clones share one instant.
#[derive(Debug, Clone)]
pub struct ManualClock {
    millis: Arc<AtomicI64>,
}

impl ManualClock {
    /// A clock standing at `start` (truncated to whole milliseconds).
    pub fn new(start: Timestamp) -> Self {
        Self {
            millis: Arc::new(AtomicI64::new(start.as_millisecond())),
        }
    }

    /// A clock standing at the given Unix epoch second.
    pub fn at_epoch_seconds(secs: i64) -> Self {
        Self {
            millis: Arc::new(AtomicI64::new(secs.saturating_mul(1000))),
        }
    }

    /// Moves the clock forward (or backward, for a negative duration).
    pub fn advance(&self, by: SignedDuration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.millis.fetch_add(ms, Ordering::SeqCst);
    }

    /// Moves the clock to `to`.
    pub fn set(&self, to: Timestamp) {
        self.millis.store(to.as_millisecond(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        let ms = self.millis.load(Ordering::SeqCst);
        Timestamp::from_millisecond(ms).unwrap_or(Timestamp::UNIX_EPOCH)
    }
}

#[cfg(feature = "tokio")]
pub use self::tokio_clock::TokioClock;

#[cfg(feature = "tokio")]
mod tokio_clock {
    use super::{Clock, SignedDuration, Timestamp};

    /// Wall time derived from tokio's clock: the epoch instant read once at construction plus
    /// the tokio `Instant` elapsed since. Under a paused tokio runtime it is virtual and
    /// deterministic; `sleep_until` then completes as soon as every task is idle.
    #[derive(Debug, Clone, Copy)]
    pub struct TokioClock {
        origin_wall: Timestamp,
        origin: tokio::time::Instant,
    }

    impl TokioClock {
        /// Anchored at the operating system's current time.
        pub fn system() -> Self {
            Self::anchored_at(Timestamp::now())
        }

        /// Anchored at a chosen instant (tests pick a fixed one for reproducible output).
        pub fn anchored_at(origin_wall: Timestamp) -> Self {
            Self {
                origin_wall,
                origin: tokio::time::Instant::now(),
            }
        }

        /// Waits until the clock reads at least `deadline`.
        pub async fn sleep_until(&self, deadline: Timestamp) {
            let wait = deadline.duration_since(self.now());
            if wait > SignedDuration::ZERO {
                let std_wait = wait.unsigned_abs();
                tokio::time::sleep(std_wait).await;
            }
        }

        /// Waits for `by`.
        pub async fn sleep(&self, by: SignedDuration) {
            if by > SignedDuration::ZERO {
                tokio::time::sleep(by.unsigned_abs()).await;
            }
        }

        /// Runs `work` for at most `limit`; `None` when the limit ran out first.
        pub async fn timeout<F: std::future::Future>(
            &self,
            limit: SignedDuration,
            work: F,
        ) -> Option<F::Output> {
            let limit = if limit.is_negative() {
                std::time::Duration::ZERO
            } else {
                limit.unsigned_abs()
            };
            tokio::time::timeout(limit, work).await.ok()
        }
    }

    impl Clock for TokioClock {
        fn now(&self) -> Timestamp {
            let elapsed = self.origin.elapsed();
            let elapsed = SignedDuration::try_from(elapsed).unwrap_or(SignedDuration::MAX);
            self.origin_wall
                .checked_add(elapsed)
                .unwrap_or(Timestamp::MAX)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::at_epoch_seconds(1_700_000_000);
        let t0 = clock.now();
        assert_eq!(clock.now(), t0);
        clock.advance(SignedDuration::from_secs(3600));
        assert_eq!(
            clock.now().duration_since(t0),
            SignedDuration::from_secs(3600)
        );
        let shared = clock.clone();
        shared.advance(SignedDuration::from_millis(5));
        assert_eq!(
            clock.now().duration_since(t0),
            SignedDuration::from_millis(3_600_005)
        );
    }

    #[cfg(feature = "tokio")]
    #[tokio::test(start_paused = true)]
    async fn tokio_clock_follows_paused_time() {
        let start = Timestamp::from_second(1_700_000_000).expect("valid");
        let clock = TokioClock::anchored_at(start);
        clock.sleep(SignedDuration::from_secs(7200)).await;
        assert_eq!(
            clock.now().duration_since(start),
            SignedDuration::from_secs(7200)
        );
        let later = start + SignedDuration::from_secs(7300);
        clock.sleep_until(later).await;
        assert!(clock.now() >= later);
        let slow = clock.timeout(
            SignedDuration::from_secs(5),
            clock.sleep(SignedDuration::from_secs(60)),
        );
        assert_eq!(slow.await, None);
        let fast = clock.timeout(SignedDuration::from_secs(5), async { 7 });
        assert_eq!(fast.await, Some(7));
    }
}
