//! The quota dashboard's JSON API: `GET /api/quota`, `GET /api/quota/spend`,
//! `GET /api/quota/{host}/{subject}/history`,
//! `GET /api/sync/runs`, `GET /api/sync/runs/{id}` and the server-sent events of
//! `GET /api/events`, over [`DashboardState`].
//!
//! Like the feed's endpoints it only reads: the state holds the store (read methods only),
//! the quota history's read half and a clock. Parameters are strict — an unknown, repeated or
//! malformed one is a 400 naming it, never ignored or clamped — as `/api/push_events` is.

pub mod events;
pub mod params;
pub mod quota;
pub mod spend;
pub mod sync;

use std::sync::Arc;
use std::time::Duration;

use headroom_core::clock::{SharedClock, SignedDuration, TokioClock};
use headroom_store::StoreRead;
use headroom_store::quota_history::QuotaHistory;

use crate::AppState;

/// How the dashboard reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DashboardSettings {
    /// A process whose newest reading of a bucket is older than this no longer counts as
    /// live: its in flight and waiting are left out of the sums.
    pub live_window: SignedDuration,
    /// How often the event stream asks the store whether anything changed.
    pub poll_interval: Duration,
}

impl Default for DashboardSettings {
    fn default() -> Self {
        Self {
            live_window: SignedDuration::from_secs(30),
            poll_interval: Duration::from_secs(1),
        }
    }
}

/// What the dashboard's handlers read from.
#[derive(Debug, Clone)]
pub struct DashboardState {
    /// The feed's surface (for the page's feed figures and the routes it shares).
    pub app: AppState,
    /// Credentials, sync runs and checkpoints: the store's read half only.
    pub store: Arc<dyn StoreRead>,
    /// The quota readings, sync-run pages and observations.
    pub history: Arc<dyn QuotaHistory>,
    /// Time, for countdowns, windows and `captured_at`.
    pub clock: SharedClock,
    /// What the event streams pause on between two looks at the store (tokio time, so a
    /// paused test clock pauses them too).
    pub pacer: TokioClock,
    /// How it reads.
    pub settings: DashboardSettings,
    /// The event streams' shared snapshot (start with `Default::default()`).
    pub snapshots: events::SnapshotCache,
}
