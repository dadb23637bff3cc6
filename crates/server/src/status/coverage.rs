//! The `coverage` block: the share of events in the coverage window whose actor, repository
//! or both are enriched.

use headroom_core::clock::Timestamp;
use headroom_store::Result;
use headroom_store::feed_report::FeedReport;
use serde::Serialize;

use super::{Reporting, percent, secs};

/// One coverage percentage with its numerator.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Coverage {
    /// Events counted.
    pub events: u64,
    /// events / events_in_window × 100, two decimals; null on an empty window.
    pub percent: Option<f64>,
}

/// §11's three coverage percentages.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CoverageBlock {
    /// What the window is measured on: `created_at` (when headroom persisted the event).
    pub basis: &'static str,
    /// The window's length.
    pub window_seconds: u64,
    /// Its start.
    #[schema(value_type = String, format = DateTime)]
    pub window_start: Timestamp,
    /// Its end.
    #[schema(value_type = String, format = DateTime)]
    pub window_end: Timestamp,
    /// The denominator: push events persisted in the window.
    pub events_in_window: u64,
    /// Events whose actor is enriched (`complete`).
    pub actor_enriched: Coverage,
    /// Events whose repository is enriched.
    pub repository_enriched: Coverage,
    /// Events whose actor and repository are both enriched.
    pub fully_enriched: Coverage,
}

/// The three coverage percentages over the coverage window, by event creation time.
pub(super) async fn coverage(
    report: &dyn FeedReport,
    reporting: Reporting,
    now: Timestamp,
) -> Result<CoverageBlock> {
    let coverage_start = now - secs(reporting.coverage_window_seconds);
    let c = report.coverage(coverage_start, now).await?;
    Ok(CoverageBlock {
        basis: "created_at",
        window_seconds: reporting.coverage_window_seconds,
        window_start: coverage_start,
        window_end: now,
        events_in_window: c.events,
        actor_enriched: Coverage {
            events: c.actor_complete,
            percent: percent(c.actor_complete, c.events),
        },
        repository_enriched: Coverage {
            events: c.repository_complete,
            percent: percent(c.repository_complete, c.events),
        },
        fully_enriched: Coverage {
            events: c.both_complete,
            percent: percent(c.both_complete, c.events),
        },
    })
}
