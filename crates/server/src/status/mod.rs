//! The status document: persisted state only, as nine blocks in a fixed order — captured_at,
//! sources, ledger, search_ledger, scheduler, enrichment, batches, throughput, coverage.
//!
//! Built here once and served by `GET /status` (reused a few seconds: [`cache`]) and printed
//! by `headroom status --json`.
//! Conventions: a counted zero is `0`, a number that does not exist is `null` (an empty
//! window's percentages, a ratio with nothing requested, a rate with no sample); every ratio
//! has its denominator beside it; there is no ETA anywhere.

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_store::Result;
use headroom_store::feed_report::FeedReport;
use headroom_store::feed_state::FeedStateRead;
use serde::Serialize;

mod batches;
pub mod cache;
mod coverage;
mod enrichment;
mod ledger;
pub mod resume;
mod settings;
mod sources;
mod throughput;

pub use batches::{BatchGroupBlock, BatchesBlock};
pub use cache::StatusCache;
pub use coverage::{Coverage, CoverageBlock};
pub use enrichment::{ClassBlock, EnrichmentBlock, Gates, LaneClaimable, StageBlock, Stages};
pub use ledger::{Allowance, LedgerBlock, SearchLedgerBlock, Share};
pub use settings::{RefreshSettings, Reporting, SchedulerSettings, StatusSettings};
pub use sources::SourceBlock;
pub use throughput::{CatchUp, FlowBlock, ThroughputBlock, catch_up_state};

/// The whole document, blocks in their fixed order.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct StatusDocument {
    /// When it was read.
    #[schema(value_type = String, format = DateTime)]
    pub captured_at: Timestamp,
    /// The poll schedule per event source.
    pub sources: Vec<SourceBlock>,
    /// The hourly core ledger.
    pub ledger: LedgerBlock,
    /// The per-minute search ledger.
    pub search_ledger: SearchLedgerBlock,
    /// Every tunable.
    pub scheduler: SchedulerSettings,
    /// The backlog per class.
    pub enrichment: EnrichmentBlock,
    /// Batch quality over the metrics window.
    pub batches: BatchesBlock,
    /// Measured rates and the catch-up verdict.
    pub throughput: ThroughputBlock,
    /// The three coverage percentages.
    pub coverage: CoverageBlock,
}

fn secs(n: u64) -> SignedDuration {
    SignedDuration::from_secs(i64::try_from(n).unwrap_or(i64::MAX))
}

fn age(now: Timestamp, then: Option<Timestamp>) -> Option<i64> {
    then.map(|t| now.duration_since(t).as_secs().max(0))
}

#[allow(clippy::cast_precision_loss)]
fn ratio(numerator: u64, denominator: u64) -> Option<f64> {
    (denominator > 0).then(|| numerator as f64 / denominator as f64)
}

#[allow(clippy::cast_precision_loss)]
fn percent(numerator: u64, denominator: u64) -> Option<f64> {
    ratio(numerator, denominator).map(|r| (r * 10_000.0).round() / 100.0)
}

#[allow(clippy::cast_precision_loss)]
fn per_hour(count: u64, sample_seconds: u64) -> Option<f64> {
    (sample_seconds > 0).then(|| (count as f64) * 3600.0 / sample_seconds as f64)
}

/// Reads everything and builds the document at `now`. Plain reads only, block by block in
/// the document's order.
pub async fn build(
    report: &dyn FeedReport,
    feed: &dyn FeedStateRead,
    settings: &StatusSettings,
    now: Timestamp,
) -> Result<StatusDocument> {
    let reporting = settings.reporting();
    let (core, search) = match &settings.subject {
        Some(subject) => (
            feed.core_ledger(&settings.host, subject).await?,
            feed.search_ledger(&settings.host, subject).await?,
        ),
        None => (None, None),
    };
    let (core, search) = (core.as_ref(), search.as_ref());
    Ok(StatusDocument {
        captured_at: now,
        sources: sources::sources(report, core, now).await?,
        ledger: ledger::ledger_block(settings, core, now),
        search_ledger: ledger::search_block(settings, search, now),
        scheduler: settings.scheduler.clone(),
        enrichment: enrichment::enrichment(report, settings, core, search, now).await?,
        batches: batches::batches(report, reporting, now).await?,
        throughput: throughput::throughput(report, reporting, now).await?,
        coverage: coverage::coverage(report, reporting, now).await?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_denominators_are_null_not_zero() {
        assert_eq!(percent(0, 0), None);
        assert_eq!(percent(0, 4), Some(0.0));
        assert_eq!(percent(1, 3), Some(33.33));
        assert_eq!(ratio(0, 0), None);
        assert_eq!(per_hour(5, 0), None);
        assert_eq!(per_hour(5, 1800), Some(10.0));
    }

    proptest::proptest! {
        #[test]
        fn percentages_stay_in_range(den in 0u64..1_000_000, frac in 0.0f64..=1.0) {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
            let num = ((den as f64) * frac).floor() as u64;
            match percent(num, den) {
                None => proptest::prop_assert_eq!(den, 0),
                Some(p) => proptest::prop_assert!((0.0..=100.0).contains(&p)),
            }
        }
    }
}
