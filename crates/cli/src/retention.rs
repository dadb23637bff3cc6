//! Retention of rate-limit history: every long-running process that writes it (`run`,
//! `sync worker`) prunes what is older than the retention setting, at start and then hourly,
//! so the history stays bounded whichever of them is running (`serve` only reads).

use std::sync::Arc;

use headroom_core::clock::{Clock, SignedDuration, TokioClock};
use headroom_core::telemetry;
use headroom_store::{QuotaRecorder, Store};

/// How often a long-running process prunes.
const EVERY: SignedDuration = SignedDuration::from_hours(1);

/// Prunes once: the observations, quota readings and spend records older than `retention` at the clock's
/// now. A failure is logged; history is housekeeping and never stops the process.
pub async fn prune_once(
    store: &dyn Store,
    recorder: &dyn QuotaRecorder,
    clock: &TokioClock,
    retention: SignedDuration,
) {
    let before = clock.now() - retention;
    if let Err(e) = store.prune_rate_limit_observations(before).await {
        tracing::warn!(
            event = telemetry::STORE_WRITE_FAILED,
            error = %e,
            "Could not prune old rate-limit observations."
        );
    }
    if let Err(e) = recorder.prune_quota_readings(before).await {
        tracing::warn!(
            event = telemetry::STORE_WRITE_FAILED,
            error = %e,
            "Could not prune old quota readings."
        );
    }
    if let Err(e) = recorder.prune_spend(before).await {
        tracing::warn!(
            event = telemetry::STORE_WRITE_FAILED,
            error = %e,
            "Could not prune old spend records."
        );
    }
}

/// Prunes now and every hour until the returned task is aborted (or the process ends).
pub fn spawn_pruner(
    store: Arc<dyn Store>,
    recorder: Arc<dyn QuotaRecorder>,
    clock: TokioClock,
    retention: SignedDuration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            prune_once(store.as_ref(), recorder.as_ref(), &clock, retention).await;
            clock.sleep(EVERY).await;
        }
    })
}
