//! When a run should end: the arithmetic behind "ends about 15:40 (in 12 min)", pure.
//!
//! From the run's estimate (the plan's units per dimension, stored by `--estimate`) and what
//! it spent so far: the units still to spend (never below 0, never more as the run spends
//! more), at the rate the run has spent while working, plus the quota windows still needed
//! when the rest does not fit in what its buckets have left. Without an estimate there is no
//! end to tell ([`Eta::NoEstimate`]); a finished run has none either.

use crate::clock::SignedDuration;

/// Units of each dimension a sync spends: REST requests and GraphQL points.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Units {
    /// REST (core) requests.
    pub rest: u64,
    /// GraphQL points.
    pub graphql: u64,
}

impl Units {
    /// What is left of `self` once `spent` is spent (0 where the estimate is passed).
    pub fn left_after(self, spent: Units) -> Units {
        Units {
            rest: self.rest.saturating_sub(spent.rest),
            graphql: self.graphql.saturating_sub(spent.graphql),
        }
    }

    /// Both together (a count of work, across dimensions).
    pub fn total(self) -> u64 {
        self.rest.saturating_add(self.graphql)
    }
}

/// One bucket's quota, as last read: what its window still allows and how big windows are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// Left in the current window.
    pub remaining: u64,
    /// A window's limit.
    pub limit: u64,
    /// A window's length.
    pub window: SignedDuration,
}

/// What the end is worked out from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EtaFacts {
    /// The run is done or failed.
    pub finished: bool,
    /// The plan's estimate, when the run was started with one.
    pub estimated: Option<Units>,
    /// Spent so far.
    pub spent: Units,
    /// Time the run has worked (its elapsed time less its hibernations).
    pub working: SignedDuration,
    /// The REST and GraphQL quotas, when known.
    pub rest_quota: Option<Quota>,
    /// See `rest_quota`.
    pub graphql_quota: Option<Quota>,
}

/// The run's estimated end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eta {
    /// Done or failed: nothing to estimate.
    Finished,
    /// Started without `--estimate`: nothing to estimate from.
    NoEstimate,
    /// Still to spend, and how long that should take (`None` until the run has spent
    /// something to take a rate from).
    Remaining {
        /// Units still to spend.
        left: Units,
        /// Quota windows still to wait for.
        windows: u64,
        /// Time to the end.
        within: Option<SignedDuration>,
    },
}

/// Milliseconds to spend `left` at `spent` per `working`; `None` when nothing was spent yet.
fn work_ms(left: u64, spent: u64, working_ms: i64) -> Option<i64> {
    if left == 0 {
        return Some(0);
    }
    if spent == 0 || working_ms <= 0 {
        return None;
    }
    let ms = (left as f64) * (working_ms as f64) / (spent as f64);
    Some(if ms.is_finite() {
        ms.min(i64::MAX as f64 / 2.0) as i64
    } else {
        i64::MAX / 2
    })
}

/// Windows to wait for before `left` units fit, with `quota`.
fn windows_needed(left: u64, quota: Option<Quota>) -> (u64, i64) {
    match quota {
        Some(q) if q.limit > 0 && left > q.remaining => {
            let windows = (left - q.remaining).div_ceil(q.limit);
            let ms = q.window.as_millis().clamp(0, i64::MAX as i128 / 4) as i64;
            (windows, ms.saturating_mul(windows as i64))
        }
        _ => (0, 0),
    }
}

/// The run's estimated end, from `facts`.
pub fn eta(facts: &EtaFacts) -> Eta {
    if facts.finished {
        return Eta::Finished;
    }
    let Some(estimated) = facts.estimated else {
        return Eta::NoEstimate;
    };
    let left = estimated.left_after(facts.spent);
    let working_ms = facts.working.as_millis().clamp(0, i64::MAX as i128) as i64;
    // The dimensions run side by side (their stages on different buckets): the slower one
    // sets the end.
    let mut within: Option<i64> = Some(0);
    let mut windows = 0;
    for (left, spent, quota) in [
        (left.rest, facts.spent.rest, facts.rest_quota),
        (left.graphql, facts.spent.graphql, facts.graphql_quota),
    ] {
        let (w, wait_ms) = windows_needed(left, quota);
        windows = windows.max(w);
        let this = work_ms(left, spent, working_ms).map(|ms| ms.saturating_add(wait_ms));
        within = match (within, this) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
    }
    Eta::Remaining {
        left,
        windows,
        within: within.map(SignedDuration::from_millis),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn facts(estimated: Option<Units>, spent: Units, working_s: i64) -> EtaFacts {
        EtaFacts {
            finished: false,
            estimated,
            spent,
            working: SignedDuration::from_secs(working_s),
            rest_quota: None,
            graphql_quota: None,
        }
    }

    fn units(rest: u64, graphql: u64) -> Units {
        Units { rest, graphql }
    }

    #[test]
    fn a_run_without_an_estimate_has_no_end_to_tell() {
        assert_eq!(eta(&facts(None, units(10, 10), 60)), Eta::NoEstimate);
    }

    #[test]
    fn the_rest_is_spent_at_the_rate_so_far_and_the_slower_dimension_sets_the_end() {
        // 100 of 400 REST in 60 s: 300 more take 180 s; GraphQL 50 of 100: 60 s more.
        let got = eta(&facts(Some(units(400, 100)), units(100, 50), 60));
        assert_eq!(
            got,
            Eta::Remaining {
                left: units(300, 50),
                windows: 0,
                within: Some(SignedDuration::from_secs(180)),
            }
        );
    }

    #[test]
    fn windows_still_needed_are_added_when_the_quota_binds() {
        let mut f = facts(Some(units(400, 0)), units(100, 0), 60);
        // 300 left, 50 in this window, 100 a window: 3 more windows of an hour.
        f.rest_quota = Some(Quota {
            remaining: 50,
            limit: 100,
            window: SignedDuration::from_secs(3_600),
        });
        let Eta::Remaining {
            windows, within, ..
        } = eta(&f)
        else {
            panic!("an end");
        };
        assert_eq!(windows, 3);
        assert_eq!(within, Some(SignedDuration::from_secs(180 + 3 * 3_600)));
    }

    #[test]
    fn nothing_spent_yet_has_no_rate_to_tell_an_end_from() {
        let Eta::Remaining { within, left, .. } = eta(&facts(Some(units(10, 0)), units(0, 0), 5))
        else {
            panic!("an end");
        };
        assert_eq!((within, left), (None, units(10, 0)));
    }

    fn any_facts() -> impl Strategy<Value = EtaFacts> {
        (
            any::<bool>(),
            proptest::option::of((0..1_000_000u64, 0..1_000_000u64)),
            (0..2_000_000u64, 0..2_000_000u64),
            -10..1_000_000i64,
            proptest::option::of((0..10_000u64, 0..10_000u64, 0..100_000i64)),
        )
            .prop_map(|(finished, est, spent, working, quota)| EtaFacts {
                finished,
                estimated: est.map(|(r, g)| units(r, g)),
                spent: units(spent.0, spent.1),
                working: SignedDuration::from_secs(working),
                rest_quota: quota.map(|(remaining, limit, w)| Quota {
                    remaining,
                    limit,
                    window: SignedDuration::from_secs(w),
                }),
                graphql_quota: None,
            })
    }

    proptest! {
        #[test]
        fn the_estimate_is_never_negative(f in any_facts()) {
            if let Eta::Remaining { within: Some(d), .. } = eta(&f) {
                prop_assert!(d >= SignedDuration::ZERO, "{d:?} for {f:?}");
            }
        }

        #[test]
        fn done_runs_have_no_eta(mut f in any_facts()) {
            f.finished = true;
            prop_assert_eq!(eta(&f), Eta::Finished);
        }

        #[test]
        fn more_progress_never_increases_remaining_units(
            f in any_facts(), more_rest in 0..100_000u64, more_graphql in 0..100_000u64,
        ) {
            let mut later = f;
            later.spent = units(f.spent.rest + more_rest, f.spent.graphql + more_graphql);
            if let (Eta::Remaining { left: a, .. }, Eta::Remaining { left: b, .. }) =
                (eta(&f), eta(&later))
            {
                prop_assert!(b.rest <= a.rest && b.graphql <= a.graphql, "{a:?} then {b:?}");
            }
        }
    }
}
