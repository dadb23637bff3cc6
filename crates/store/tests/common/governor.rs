//! What the governor-state tests share: a fixed instant, and readers of an acquire's outcome
//! and of a bucket's reading.

use headroom_core::Bucket;
use headroom_core::clock::Timestamp;
use headroom_core::governor::{Acquire, Permit, Wait};
use headroom_core::signal::RateLimitSignal;

/// `secs` after a fixed instant.
pub fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

/// The permit of a grant (a wait fails the test).
pub fn grant(outcome: Acquire) -> Permit {
    match outcome {
        Acquire::Grant(p) => p,
        Acquire::Wait(w) => panic!("expected a grant, got a wait: {w}"),
    }
}

/// The wait of a refusal (a grant fails the test).
pub fn wait(outcome: Acquire) -> Wait {
    match outcome {
        Acquire::Wait(w) => w,
        Acquire::Grant(p) => panic!("expected a wait, got {p:?}"),
    }
}

/// A reading of `bucket`: `remaining` left, `used` spent, resetting at `reset`.
pub fn reading(bucket: &str, remaining: u64, used: u64, reset: Timestamp) -> RateLimitSignal {
    RateLimitSignal {
        resource: Some(Bucket::new(bucket)),
        limit: Some(remaining + used),
        remaining: Some(remaining),
        used: Some(used),
        reset_at: Some(reset),
        ..RateLimitSignal::default()
    }
}
