//! Releasing what a permit or a wait ticket holds: a permit's lease freed on a spawned task
//! (the release hook is synchronous) — a delete on SQLite, an optimistic write on PostgreSQL
//! that also lowers the cached in-flight counts — with the deletions still running counted so
//! callers can wait for them; waiters counted in-process.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use headroom_core::clock::Timestamp;
use headroom_core::governor::multi;
use headroom_core::governor::rule::IdentityState;
use headroom_core::governor::{BoxFuture, GovernorConfig, SlotRelease};
use headroom_core::quota::{Bucket, QuotaKey};

use super::GovernorPool;
use super::optimistic::{LeaseChange, Optimistic};
use crate::db::on_each_pool;

/// Counts lease deletions still running, so callers (tests, shutdown) can wait for them.
#[derive(Debug, Default)]
pub(super) struct ReleaseTracker {
    pub(super) pending: AtomicUsize,
    pub(super) idle: tokio::sync::Notify,
}

struct PendingRelease(Arc<ReleaseTracker>);

impl PendingRelease {
    fn start(tracker: &Arc<ReleaseTracker>) -> Self {
        tracker.pending.fetch_add(1, Ordering::SeqCst);
        Self(Arc::clone(tracker))
    }
}

impl Drop for PendingRelease {
    fn drop(&mut self) {
        if self.0.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Where a lease is freed: on SQLite a plain delete (the next decision recounts the leases);
/// on PostgreSQL an optimistic write that also lowers the cached in-flight counts.
#[derive(Clone)]
pub(super) enum ReleaseTarget {
    Delete(GovernorPool),
    Pg {
        optimistic: Arc<Optimistic>,
        config: Arc<GovernorConfig>,
        /// The latest instant a caller gave: a release has no clock of its own.
        latest: Arc<AtomicI64>,
    },
}

/// Frees one permit's lease, and the leases of the other buckets of a request over several
/// (which name it in `request_lease`).
pub(super) struct LeaseRelease {
    pub(super) target: ReleaseTarget,
    pub(super) lease_id: i64,
    /// The permit's buckets besides its first.
    pub(super) also: Vec<Bucket>,
    pub(super) runtime: tokio::runtime::Handle,
    pub(super) tracker: Arc<ReleaseTracker>,
}

impl LeaseRelease {
    /// The release itself, counted as pending from now until it has reached the database.
    fn release(
        &self,
        key: &QuotaKey,
        bucket: &Bucket,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let target = self.target.clone();
        let lease_id = self.lease_id;
        let (key, bucket) = (key.clone(), bucket.clone());
        let also = self.also.clone();
        let pending = PendingRelease::start(&self.tracker);
        async move {
            match target {
                ReleaseTarget::Delete(pool) => {
                    let _ = on_each_pool!(pool.pools(), |p| sqlx::query(
                        "DELETE FROM governor_leases WHERE id = $1 OR request_lease = $1"
                    )
                    .bind(lease_id)
                    .execute(p)
                    .await
                    .map(|_| ()));
                }
                ReleaseTarget::Pg {
                    optimistic,
                    config,
                    latest,
                } => {
                    let now = Timestamp::from_millisecond(latest.load(Ordering::SeqCst))
                        .unwrap_or(Timestamp::MIN);
                    let fresh = || IdentityState::new(&config);
                    let _ = optimistic
                        .write(&key, fresh, now, |state, present| {
                            // A lease already cleared as expired was uncounted then.
                            if present && let Some(i) = state.find(&bucket) {
                                let others = also.iter().filter_map(|b| state.find(b));
                                let slots: Vec<usize> = std::iter::once(i).chain(others).collect();
                                multi::release_all(state, &slots);
                            }
                            ((), LeaseChange::Free { lease_id })
                        })
                        .await;
                }
            }
            drop(pending);
        }
    }
}

impl SlotRelease for LeaseRelease {
    fn release_in_flight(&self, key: &QuotaKey, bucket: &Bucket, _slot: usize) {
        // If the runtime is gone or the delete fails, the lease still expires by itself.
        self.runtime.spawn(self.release(key, bucket));
    }

    fn release_in_flight_settled(
        &self,
        key: &QuotaKey,
        bucket: &Bucket,
        _slot: usize,
    ) -> BoxFuture<'static, ()> {
        // On a task of its own all the same: a caller that stops waiting (its request
        // cancelled) does not cut the delete short.
        let task = self.runtime.spawn(self.release(key, bucket));
        Box::pin(async move {
            let _ = task.await;
        })
    }

    fn release_waiting(&self, _key: &QuotaKey, _bucket: &Bucket, _slot: usize) {}
}

pub(super) type WaitingMap = HashMap<(QuotaKey, Bucket), u32>;

/// Counts in-process waiters.
pub(super) struct WaitRelease {
    pub(super) waiting: Arc<Mutex<WaitingMap>>,
}

impl SlotRelease for WaitRelease {
    fn release_in_flight(&self, _key: &QuotaKey, _bucket: &Bucket, _slot: usize) {}

    fn release_waiting(&self, key: &QuotaKey, bucket: &Bucket, _slot: usize) {
        let mut map = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        let entry = (key.clone(), bucket.clone());
        if let Some(n) = map.get_mut(&entry) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.remove(&entry);
            }
        }
    }
}
