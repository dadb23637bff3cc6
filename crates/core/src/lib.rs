//! headroom-core: the pure domain of headroom.
//!
//! Owns the clock abstraction, quota keys and buckets, the quota governor and its grant rule,
//! normalized rate-limit signals and the header parsers of every provider, GitHub's 403/429
//! triage, cooldown gating (`cooldown`), sync's caps per quota window (`budget`), the retry policy, the Git provider contract (`provider`), deferral planning, the
//! feed service's budget lanes, redaction and the catalog of log events (`telemetry`).
//!
//! It must not do I/O, spawn tasks or depend on an async runtime (the optional `tokio` feature
//! only adds an async clock). Nothing here reads the system time except [`clock::SystemClock`].

pub mod budget;
pub mod clock;
pub mod cooldown;

pub use clock::{Clock, ManualClock, SharedClock, SignedDuration, SystemClock, Timestamp};
pub mod governor;
pub mod quota;
pub mod signal;
pub mod triage;

pub use governor::{Acquire, Governor, GovernorConfig, Headroom, Permit, Wait, WaitReason};
pub use quota::{AppLimit, Bucket, QuotaKey, RequestKind, Subject, Surface};
pub use signal::{Dimension, LimitReason, Provider, RateLimitSignal};
pub mod deferral;
pub mod eta;
pub mod lanes;
pub mod provider;
pub mod redact;
pub mod retry;
pub mod route;
pub mod telemetry;
pub mod words;

pub use redact::redact;
pub use route::RouteFamily;
