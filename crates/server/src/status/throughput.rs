//! The `throughput` block: measured arrivals and exits per class and combined, and the
//! catch-up verdict over the sample.

use headroom_core::clock::Timestamp;
use headroom_store::Result;
use headroom_store::feed_report::{EntityFlow, FeedReport};
use headroom_store::feed_state::EntityKind;
use serde::Serialize;

use super::{Reporting, per_hour, secs};

/// Measured flow of one lane (or both).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct FlowBlock {
    /// New entity rows in the sample.
    pub arrivals: u64,
    /// Rows that first reached the contract.
    pub completions: u64,
    /// Rows that went terminal.
    pub terminals: u64,
    /// completions + terminals: rows that left the backlog.
    pub exits: u64,
    /// arrivals per hour over the sample (null without a sample).
    pub arrivals_per_hour: Option<f64>,
    /// completions per hour.
    pub completions_per_hour: Option<f64>,
    /// exits per hour.
    pub exits_per_hour: Option<f64>,
    /// arrivals − exits over the sample.
    pub backlog_delta: i64,
    /// `keeping_up`, `not_keeping_up` or `insufficient_sample`.
    pub catch_up_state: &'static str,
}

/// The catch-up verdict.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CatchUp {
    /// `keeping_up`, `not_keeping_up` or `insufficient_sample`.
    pub state: &'static str,
    /// The rule behind it.
    pub rule: &'static str,
    /// The sample needed before a verdict.
    pub min_sample_seconds: u64,
    /// The sample there is.
    pub sample_seconds: u64,
}

/// Throughput over the metrics window.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ThroughputBlock {
    /// The metrics window's length.
    pub window_seconds: u64,
    /// The sample's start: the window's start, or the first recorded activity if later
    /// (null when nothing was ever recorded).
    #[schema(value_type = Option<String>, format = DateTime)]
    pub sample_start: Option<Timestamp>,
    /// The sample's end (captured_at).
    #[schema(value_type = String, format = DateTime)]
    pub sample_end: Timestamp,
    /// Its length.
    pub sample_seconds: u64,
    /// Actors.
    pub actors: FlowBlock,
    /// Repositories.
    pub repositories: FlowBlock,
    /// Both classes.
    pub combined: FlowBlock,
    /// The verdict on both classes.
    pub catch_up: CatchUp,
}

/// The catch-up verdict: no verdict below the minimum sample; otherwise keeping up while
/// measured arrivals do not exceed measured exits.
pub fn catch_up_state(
    arrivals: u64,
    exits: u64,
    sample_seconds: u64,
    min_sample_seconds: u64,
) -> &'static str {
    if sample_seconds < min_sample_seconds || sample_seconds == 0 {
        "insufficient_sample"
    } else if arrivals <= exits {
        "keeping_up"
    } else {
        "not_keeping_up"
    }
}

fn flow(f: EntityFlow, sample_seconds: u64, min_sample: u64) -> FlowBlock {
    let exits = f.completions + f.terminals;
    FlowBlock {
        arrivals: f.arrivals,
        completions: f.completions,
        terminals: f.terminals,
        exits,
        arrivals_per_hour: per_hour(f.arrivals, sample_seconds),
        completions_per_hour: per_hour(f.completions, sample_seconds),
        exits_per_hour: per_hour(exits, sample_seconds),
        backlog_delta: i64::try_from(f.arrivals).unwrap_or(i64::MAX)
            - i64::try_from(exits).unwrap_or(i64::MAX),
        catch_up_state: catch_up_state(f.arrivals, exits, sample_seconds, min_sample),
    }
}

/// Measured flow per class and combined over the sample (the metrics window, from the first
/// activity if later), with the catch-up verdict.
pub(super) async fn throughput(
    report: &dyn FeedReport,
    reporting: Reporting,
    now: Timestamp,
) -> Result<ThroughputBlock> {
    let metrics_start = now - secs(reporting.metrics_window_seconds);
    let first = report.first_activity_at().await?;
    let sample_start = first.map(|f| f.max(metrics_start));
    let sample_seconds = sample_start.map_or(0, |s| {
        u64::try_from(now.duration_since(s).as_secs()).unwrap_or(0)
    });
    let since = sample_start.unwrap_or(now);
    let min_sample = reporting.catch_up_min_sample_seconds;
    let actor_flow = report.entity_flow(EntityKind::Actor, since, now).await?;
    let repository_flow = report
        .entity_flow(EntityKind::Repository, since, now)
        .await?;
    let combined_flow = EntityFlow {
        arrivals: actor_flow.arrivals + repository_flow.arrivals,
        completions: actor_flow.completions + repository_flow.completions,
        terminals: actor_flow.terminals + repository_flow.terminals,
    };
    let combined = flow(combined_flow, sample_seconds, min_sample);
    Ok(ThroughputBlock {
        window_seconds: reporting.metrics_window_seconds,
        sample_start,
        sample_end: now,
        sample_seconds,
        actors: flow(actor_flow, sample_seconds, min_sample),
        repositories: flow(repository_flow, sample_seconds, min_sample),
        catch_up: CatchUp {
            state: combined.catch_up_state,
            rule: "keeping_up while measured arrivals do not exceed measured exits \
                   (completions + terminals) over the sample",
            min_sample_seconds: min_sample,
            sample_seconds,
        },
        combined,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_needs_the_minimum_sample() {
        assert_eq!(catch_up_state(0, 0, 0, 900), "insufficient_sample");
        assert_eq!(catch_up_state(10, 100, 899, 900), "insufficient_sample");
        assert_eq!(catch_up_state(10, 100, 900, 900), "keeping_up");
        assert_eq!(catch_up_state(10, 10, 3600, 900), "keeping_up");
        assert_eq!(catch_up_state(11, 10, 3600, 900), "not_keeping_up");
    }

    proptest::proptest! {
        #[test]
        fn the_verdict_follows_the_rule(
            arrivals in 0u64..10_000,
            exits in 0u64..10_000,
            sample in 0u64..10_000,
            min in 0u64..10_000,
        ) {
            let state = catch_up_state(arrivals, exits, sample, min);
            if sample < min || sample == 0 {
                proptest::prop_assert_eq!(state, "insufficient_sample");
            } else if arrivals > exits {
                proptest::prop_assert_eq!(state, "not_keeping_up");
            } else {
                proptest::prop_assert_eq!(state, "keeping_up");
            }
        }
    }
}
