//! The `batches` block: batch quality (fill ratio) per request kind and entity kind over
//! the metrics window.

use headroom_core::clock::Timestamp;
use headroom_store::Result;
use headroom_store::feed_report::{BatchGroup, FeedReport};
use headroom_store::feed_state::{EntityKind, RequestKind};
use serde::Serialize;

use super::{Reporting, ratio, secs};

/// One request-kind × entity-kind group.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BatchGroupBlock {
    /// The counts.
    #[serde(flatten)]
    pub counts: BatchGroup,
    /// returned_items / requested_items; null when nothing was requested.
    pub fill_ratio: Option<f64>,
}

/// Batch quality over the metrics window.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BatchesBlock {
    /// The window's length.
    pub window_seconds: u64,
    /// Its start (on `started_at`).
    #[schema(value_type = String, format = DateTime)]
    pub window_start: Timestamp,
    /// Its end.
    #[schema(value_type = String, format = DateTime)]
    pub window_end: Timestamp,
    /// Search batches for actors.
    pub search_actors: BatchGroupBlock,
    /// Search batches for repositories.
    pub search_repositories: BatchGroupBlock,
    /// Detail fallbacks for actors.
    pub detail_actors: BatchGroupBlock,
    /// Detail fallbacks for repositories.
    pub detail_repositories: BatchGroupBlock,
}

/// Batch quality over the metrics window, per request kind and entity kind.
pub(super) async fn batches(
    report: &dyn FeedReport,
    reporting: Reporting,
    now: Timestamp,
) -> Result<BatchesBlock> {
    let metrics_start = now - secs(reporting.metrics_window_seconds);
    let groups = report.batch_groups(metrics_start, now).await?;
    let group = |request: RequestKind, entity: EntityKind| {
        let counts = groups
            .iter()
            .find(|(r, e, _)| *r == request && *e == entity)
            .map(|(_, _, g)| g.clone())
            .unwrap_or_default();
        BatchGroupBlock {
            fill_ratio: ratio(counts.returned_items, counts.requested_items),
            counts,
        }
    };
    Ok(BatchesBlock {
        window_seconds: reporting.metrics_window_seconds,
        window_start: metrics_start,
        window_end: now,
        search_actors: group(RequestKind::Search, EntityKind::Actor),
        search_repositories: group(RequestKind::Search, EntityKind::Repository),
        detail_actors: group(RequestKind::Detail, EntityKind::Actor),
        detail_repositories: group(RequestKind::Detail, EntityKind::Repository),
    })
}
