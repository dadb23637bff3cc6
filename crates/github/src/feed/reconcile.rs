//! The reconciler: a periodic sweep (every 60 s in `headroom run`) that rebuilds pending
//! enrichment work from committed rows, so nothing a crash interrupted waits on a queue that
//! no longer exists. The entity rows are the backlog; the sweep repairs what a dead process
//! can leave behind — entity rows missing for stored events, rows resting in a stage no lane
//! claims from, lapsed leases, lapsed source locks, and ingestion runs left `running` — and
//! reports whether enrichment could proceed now.

use headroom_core::clock::{Clock, SignedDuration};
use headroom_core::telemetry;
use headroom_store::feed_state::{EntityKind, Lane, Reconciled};
use serde::Serialize;
use tracing::Instrument as _;

use super::new_run_id;
use super::poll::{PollError, Poller};

/// What one sweep found, and whether enrichment has claimable work after it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Sweep {
    /// The repairs and the backlog after them.
    pub found: Reconciled,
    /// Whether either class has a batch or detail row claimable now.
    pub claimable_now: bool,
}

/// Runs one sweep. A run still `running` after `abandon_after` (longer than any live poll
/// holds its source lease) belonged to a process that died.
pub async fn reconcile(poller: &Poller, abandon_after: SignedDuration) -> Result<Sweep, PollError> {
    let span = tracing::info_span!("reconciler", run_id = %new_run_id());
    sweep(poller, abandon_after).instrument(span).await
}

async fn sweep(poller: &Poller, abandon_after: SignedDuration) -> Result<Sweep, PollError> {
    let now = poller.clock.now();
    let found = poller.state.reconcile(now, now - abandon_after).await?;
    if found.actors_restored + found.repositories_restored > 0 {
        tracing::warn!(
            event = telemetry::RECONCILER_ENTITIES_RESTORED,
            actors = found.actors_restored,
            repositories = found.repositories_restored
        );
    }
    if found.requeued > 0 {
        tracing::warn!(
            event = telemetry::RECONCILER_REQUEUED,
            count = found.requeued
        );
    }
    if found.leases_reclaimed > 0 {
        tracing::info!(
            event = telemetry::ENRICHMENT_STALE_LEASE_RECLAIMED,
            count = found.leases_reclaimed
        );
    }
    if found.source_locks_released > 0 {
        tracing::info!(
            event = telemetry::RECONCILER_SOURCE_LOCK_RELEASED,
            count = found.source_locks_released
        );
    }
    if found.runs_abandoned > 0 {
        tracing::warn!(
            event = telemetry::RECONCILER_RUN_ABANDONED,
            count = found.runs_abandoned
        );
    }
    let mut claimable_now = false;
    for kind in [EntityKind::Actor, EntityKind::Repository] {
        for lane in [Lane::Batch, Lane::Detail] {
            claimable_now = claimable_now || poller.state.has_claimable(kind, lane, now).await?;
        }
    }
    // A sweep that found nothing to repair stays at debug: an idle service would otherwise
    // log a line a minute.
    if found.repaired() > 0 || claimable_now {
        tracing::info!(
            event = telemetry::RECONCILER_COMPLETED,
            repaired = found.repaired(),
            pending_actors = found.pending_actors,
            pending_repositories = found.pending_repositories,
            claimable_now
        );
    } else {
        tracing::debug!(
            event = telemetry::RECONCILER_COMPLETED,
            repaired = 0u64,
            pending_actors = found.pending_actors,
            pending_repositories = found.pending_repositories,
            claimable_now
        );
    }
    Ok(Sweep {
        found,
        claimable_now,
    })
}
