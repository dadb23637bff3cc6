//! Actual-vs-estimated calibration, as a pure join: what a stage (or a run) was estimated to
//! spend per route family, beside what it was seen to spend, one row per (family, dimension)
//! with actual traffic.
//!
//! Raw numbers only: an estimate is never converted, blended or tuned from the actuals. A
//! request count is only compared to an estimate whose dimension counts requests (`rest_core`,
//! `search`) or to no estimate at all (unbudgeted traffic); for the other dimensions the row
//! says why it cannot be assessed. A family estimated but not seen gives no row (no invented
//! over-estimate).

use std::collections::BTreeMap;

use headroom_core::Dimension;
use serde::{Deserialize, Serialize};

/// What one stage was seen to spend on one (family, dimension).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FamilyActual {
    /// The route family's name.
    pub family: String,
    /// The dimension its requests spent.
    pub dimension: Dimension,
    /// Requests answered (physical attempts).
    pub requests: u64,
    /// Units spent: GraphQL points as reported, 1 per REST request, 0 for a free 304.
    pub points: u64,
}

/// What one stage was estimated to spend on one (family, dimension), before dispatch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FamilyEstimate {
    /// The route family's name.
    pub family: String,
    /// The dimension it was estimated in.
    pub dimension: Dimension,
    /// Estimated units, in the dimension's own unit (requests for `rest_core` and `search`,
    /// points for `graphql_cost`).
    pub units: u64,
}

/// One (family, dimension) of a stage or a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationRow {
    /// The route family's name.
    pub family: String,
    /// The dimension.
    pub dimension: Dimension,
    /// Estimated units (0 when there was no estimate).
    pub estimated_units: u64,
    /// Requests seen.
    pub actual_requests: u64,
    /// Points (units) seen.
    pub actual_points: u64,
    /// `actual_requests / estimated_units`, when that comparison means something.
    pub ratio: Option<f64>,
    /// More requests than estimated (only when assessable), or traffic with no estimate.
    pub underestimated: bool,
    /// Whether a request count can be held against this estimate.
    pub underestimation_assessable: bool,
    /// Why not, when it cannot.
    pub underestimation_assessable_reason: Option<String>,
    /// Traffic on a family with no estimate at all.
    pub unbudgeted_actual: bool,
    /// The stage (or run) had not finished: the actual may still grow, so a ratio ≤ 1 is not
    /// an over-estimate (an underestimate already seen stays one).
    pub incomplete: bool,
}

/// Whether a request count is comparable with an estimate in this dimension, and if not why.
pub fn assessable(dimension: Dimension) -> Result<(), &'static str> {
    match dimension {
        Dimension::RestCore | Dimension::Search => Ok(()),
        Dimension::GraphqlCost => Err("estimated in query points, not requests"),
        Dimension::ContentsBlob => Err("estimated as a content expansion, not requests"),
        Dimension::SecondaryAbuseRisk => Err("estimated as a risk reservation, not requests"),
    }
}

/// The rows of one stage (or of a run, given its stages' estimates and actuals summed by
/// [`sum`]), sorted by family then dimension.
pub fn rows(
    estimates: &[FamilyEstimate],
    actuals: &[FamilyActual],
    incomplete: bool,
) -> Vec<CalibrationRow> {
    let estimated = sum_estimates(estimates);
    let mut out: Vec<CalibrationRow> = sum(actuals)
        .into_iter()
        .map(|a| {
            let estimate = estimated
                .get(&(a.family.clone(), a.dimension.as_str()))
                .copied();
            row(a, estimate, incomplete)
        })
        .collect();
    out.sort_by(|x, y| {
        (x.family.as_str(), x.dimension.as_str()).cmp(&(y.family.as_str(), y.dimension.as_str()))
    });
    out
}

fn row(a: FamilyActual, estimate: Option<u64>, incomplete: bool) -> CalibrationRow {
    let unbudgeted = estimate.is_none() && a.requests > 0;
    let estimated_units = estimate.unwrap_or(0);
    // No estimate is a zero baseline: never a unit-conversion problem.
    let check = if estimate.is_none() {
        Ok(())
    } else {
        assessable(a.dimension)
    };
    let assessable = check.is_ok();
    let ratio =
        (assessable && estimated_units > 0).then(|| a.requests as f64 / estimated_units as f64);
    CalibrationRow {
        underestimated: assessable && a.requests > estimated_units,
        underestimation_assessable: assessable,
        underestimation_assessable_reason: check.err().map(str::to_owned),
        unbudgeted_actual: unbudgeted,
        estimated_units,
        actual_requests: a.requests,
        actual_points: a.points,
        ratio,
        incomplete,
        family: a.family,
        dimension: a.dimension,
    }
}

/// Actuals summed per (family, dimension), in that order.
pub fn sum(actuals: &[FamilyActual]) -> Vec<FamilyActual> {
    let mut by: BTreeMap<(String, &'static str), FamilyActual> = BTreeMap::new();
    for a in actuals {
        let e = by
            .entry((a.family.clone(), a.dimension.as_str()))
            .or_insert_with(|| FamilyActual {
                requests: 0,
                points: 0,
                ..a.clone()
            });
        e.requests += a.requests;
        e.points += a.points;
    }
    by.into_values().collect()
}

fn sum_estimates(estimates: &[FamilyEstimate]) -> BTreeMap<(String, &'static str), u64> {
    let mut by = BTreeMap::new();
    for e in estimates {
        *by.entry((e.family.clone(), e.dimension.as_str()))
            .or_insert(0) += e.units;
    }
    by
}

/// Adds one answered request to a stage's actuals.
pub fn tally(
    actuals: &mut Vec<FamilyActual>,
    family: &str,
    dimension: Dimension,
    requests: u64,
    points: u64,
) {
    match actuals
        .iter_mut()
        .find(|a| a.family == family && a.dimension == dimension)
    {
        Some(a) => {
            a.requests += requests;
            a.points += points;
        }
        None => actuals.push(FamilyActual {
            family: family.to_owned(),
            dimension,
            requests,
            points,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn est(family: &str, dimension: Dimension, units: u64) -> FamilyEstimate {
        FamilyEstimate {
            family: family.into(),
            dimension,
            units,
        }
    }

    fn act(family: &str, dimension: Dimension, requests: u64, points: u64) -> FamilyActual {
        FamilyActual {
            family: family.into(),
            dimension,
            requests,
            points,
        }
    }

    #[test]
    fn the_four_kinds_of_row() {
        let estimates = [
            est("check_runs", Dimension::RestCore, 2),
            est("issues", Dimension::GraphqlCost, 3),
            est("workflow_runs", Dimension::RestCore, 10),
            est("branches", Dimension::GraphqlCost, 4),
        ];
        let actuals = [
            act("check_runs", Dimension::RestCore, 5, 5),
            act("issues", Dimension::GraphqlCost, 9, 12),
            act("workflow_runs", Dimension::RestCore, 4, 4),
            act("commits", Dimension::GraphqlCost, 2, 2),
        ];
        let rows = rows(&estimates, &actuals, false);
        // branches: estimated, not seen: no row.
        let names: Vec<&str> = rows.iter().map(|r| r.family.as_str()).collect();
        assert_eq!(names, ["check_runs", "commits", "issues", "workflow_runs"]);
        let under = &rows[0];
        assert!(under.underestimated && under.underestimation_assessable);
        assert_eq!(under.ratio, Some(2.5));
        let unbudgeted = &rows[1];
        assert!(unbudgeted.unbudgeted_actual && unbudgeted.underestimated);
        assert_eq!((unbudgeted.estimated_units, unbudgeted.ratio), (0, None));
        let points = &rows[2];
        assert!(!points.underestimation_assessable && !points.underestimated);
        assert_eq!(points.ratio, None);
        assert!(
            points
                .underestimation_assessable_reason
                .as_deref()
                .is_some_and(|r| r.contains("points"))
        );
        assert_eq!((points.actual_requests, points.actual_points), (9, 12));
        let over = &rows[3];
        assert!(!over.underestimated && over.underestimation_assessable);
        assert_eq!(over.ratio, Some(0.4));
    }

    fn dimension() -> impl Strategy<Value = Dimension> {
        prop_oneof![
            Just(Dimension::RestCore),
            Just(Dimension::GraphqlCost),
            Just(Dimension::Search),
            Just(Dimension::ContentsBlob),
            Just(Dimension::SecondaryAbuseRisk),
        ]
    }

    fn family() -> impl Strategy<Value = String> {
        prop_oneof![Just("a"), Just("b"), Just("c")].prop_map(str::to_owned)
    }

    proptest! {
        #[test]
        fn rows_are_a_read_only_join_of_raw_numbers(
            estimates in prop::collection::vec((family(), dimension(), 0u64..50), 0..6),
            actuals in prop::collection::vec((family(), dimension(), 0u64..50, 0u64..80), 0..8),
            incomplete in any::<bool>(),
        ) {
            let estimates: Vec<FamilyEstimate> =
                estimates.into_iter().map(|(f, d, u)| est(&f, d, u)).collect();
            let actuals: Vec<FamilyActual> =
                actuals.into_iter().map(|(f, d, r, p)| act(&f, d, r, p)).collect();
            let before = estimates.clone();
            let rows = rows(&estimates, &actuals, incomplete);
            prop_assert_eq!(&estimates, &before);
            // One row per (family, dimension) seen, its actuals the sum of what was seen.
            prop_assert_eq!(rows.len(), sum(&actuals).len());
            for r in &rows {
                let seen: u64 = actuals.iter()
                    .filter(|a| a.family == r.family && a.dimension == r.dimension)
                    .map(|a| a.requests).sum();
                prop_assert_eq!(r.actual_requests, seen);
                let est: Option<u64> = estimates.iter()
                    .filter(|e| e.family == r.family && e.dimension == r.dimension)
                    .map(|e| e.units).reduce(|x, y| x + y);
                prop_assert_eq!(r.estimated_units, est.unwrap_or(0));
                prop_assert_eq!(r.unbudgeted_actual, est.is_none() && seen > 0);
                prop_assert_eq!(r.incomplete, incomplete);
                // Never a verdict without a comparable unit; never a ratio without one either.
                if !r.underestimation_assessable {
                    prop_assert!(!r.underestimated && r.ratio.is_none());
                    prop_assert!(r.underestimation_assessable_reason.is_some());
                } else {
                    prop_assert_eq!(r.underestimated, seen > r.estimated_units);
                }
                if let Some(ratio) = r.ratio {
                    prop_assert!((ratio * r.estimated_units as f64 - seen as f64).abs() < 1e-6);
                }
            }
        }
    }
}
