//! Deferral planning: how work that must wait is put aside, and when it gives up.
//!
//! A rate-limited job is not slept on and not failed: it is deferred to an absolute
//! `not_before`. Two budgets bound this so a provider that never recovers still surfaces as a
//! failure — a count of deferrals and a wall-clock total measured from the first deferral.
//! Both bound one *episode* of waiting, not a job's whole life: a wait that follows progress
//! (work stored since the last wake) starts a new episode with both budgets full again, so a
//! long collection that needs fifty quota windows finishes, while one that makes no progress
//! between its waits still runs out.
//! Long waits are cut into chunks (a job queue's countdown should stay short) that carry the
//! same `not_before` and do not count; a little jitter keeps many jobs from waking together.

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::clock::{SignedDuration, Timestamp};

/// The limits on deferring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeferralBudget {
    /// Rate-limit deferrals allowed (chunk continuations do not count).
    pub max_deferrals: u32,
    /// Total waiting allowed, from the first deferral.
    pub max_total_wait: SignedDuration,
    /// The longest single countdown.
    pub max_chunk: SignedDuration,
    /// The largest jitter added to a countdown.
    pub max_jitter: SignedDuration,
}

impl Default for DeferralBudget {
    fn default() -> Self {
        Self {
            max_deferrals: 10,
            max_total_wait: SignedDuration::from_hours(2),
            max_chunk: SignedDuration::from_secs(600),
            max_jitter: SignedDuration::from_secs(5),
        }
    }
}

/// What a deferred piece of work carries between attempts (persist it with the work).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DeferralState {
    /// Rate-limit deferrals so far.
    pub deferrals: u32,
    /// When the first one happened.
    pub first_deferred_at: Option<Timestamp>,
}

impl DeferralState {
    /// The state a new wait starts from: the same episode when nothing was stored since the
    /// last wake, a fresh one (both budgets full) when something was.
    pub fn for_next_wait(self, progressed: bool) -> Self {
        if progressed { Self::default() } else { self }
    }
}

/// Why deferring is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "budget", rename_all = "snake_case")]
pub enum Exhausted {
    /// Too many deferrals.
    #[error("rate-limit deferral budget exhausted: {deferrals} deferrals, at most {max} allowed")]
    Count {
        /// Deferrals made.
        deferrals: u32,
        /// The budget.
        max: u32,
    },
    /// Waited too long in total.
    #[error(
        "rate-limit wait budget exhausted: waiting since {first_deferred_at}, deadline was {deadline}"
    )]
    WallClock {
        /// The first deferral.
        first_deferred_at: Timestamp,
        /// first + max_total_wait.
        deadline: Timestamp,
    },
}

/// The plan for one piece of work that cannot run now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeferralPlan {
    /// Put it aside: wake at `run_at`; do not call the provider before `not_before`.
    Defer {
        /// When to wake (a chunk boundary or `not_before`, plus jitter).
        run_at: Timestamp,
        /// The absolute instant before which the provider must not be called.
        not_before: Timestamp,
        /// The state to persist with the work.
        state: DeferralState,
    },
    /// Give up, with the reason.
    Exhausted(Exhausted),
}

fn plus(t: Timestamp, d: SignedDuration) -> Timestamp {
    t.checked_add(d).unwrap_or(Timestamp::MAX)
}

impl DeferralBudget {
    /// A jitter drawn uniformly from `[0, max_jitter]`.
    pub fn draw_jitter<R: Rng + ?Sized>(&self, rng: &mut R) -> SignedDuration {
        let max = u64::try_from(self.max_jitter.as_millis()).unwrap_or(0);
        if max == 0 {
            return SignedDuration::ZERO;
        }
        SignedDuration::from_millis(i64::try_from(rng.random_range(0..=max)).unwrap_or(0))
    }

    /// The jitter of a wake at which `others_waking` other pieces of work also wake (within
    /// `max_jitter` of it): jitter exists to spread many wakes of one reset, so a wake with
    /// none beside it takes none, and `drawn` (from [`Self::draw_jitter`]) otherwise.
    pub fn wake_jitter(&self, drawn: SignedDuration, others_waking: usize) -> SignedDuration {
        if others_waking == 0 {
            SignedDuration::ZERO
        } else {
            drawn.clamp(
                SignedDuration::ZERO,
                self.max_jitter.max(SignedDuration::ZERO),
            )
        }
    }

    /// A new rate-limit deferral (counts against the budget): the provider said not before
    /// `not_before`.
    pub fn defer(
        &self,
        state: DeferralState,
        now: Timestamp,
        not_before: Timestamp,
        jitter: SignedDuration,
    ) -> DeferralPlan {
        let deferrals = state.deferrals.saturating_add(1);
        if deferrals > self.max_deferrals {
            return DeferralPlan::Exhausted(Exhausted::Count {
                deferrals: state.deferrals,
                max: self.max_deferrals,
            });
        }
        let next = DeferralState {
            deferrals,
            first_deferred_at: Some(state.first_deferred_at.unwrap_or(now)),
        };
        self.schedule(next, now, not_before, jitter)
    }

    /// Continues a chunked wait toward the same `not_before`; does not count.
    pub fn continue_chunk(
        &self,
        state: DeferralState,
        now: Timestamp,
        not_before: Timestamp,
        jitter: SignedDuration,
    ) -> DeferralPlan {
        let next = DeferralState {
            first_deferred_at: Some(state.first_deferred_at.unwrap_or(now)),
            ..state
        };
        self.schedule(next, now, not_before, jitter)
    }

    fn schedule(
        &self,
        state: DeferralState,
        now: Timestamp,
        not_before: Timestamp,
        jitter: SignedDuration,
    ) -> DeferralPlan {
        let first = state.first_deferred_at.unwrap_or(now);
        let deadline = plus(first, self.max_total_wait);
        if now >= deadline {
            return DeferralPlan::Exhausted(Exhausted::WallClock {
                first_deferred_at: first,
                deadline,
            });
        }
        // A wait past the deadline is clamped to it; waking there, the next plan exhausts.
        let target = not_before.min(deadline).max(now);
        let chunk_end = plus(now, self.max_chunk);
        let jitter = jitter.clamp(SignedDuration::ZERO, self.max_jitter);
        let run_at = plus(target.min(chunk_end), jitter).min(deadline).max(now);
        DeferralPlan::Defer {
            run_at,
            not_before: target,
            state,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever came before, a wait after progress has the whole budget: it is the
        /// episode's first deferral, timed from now; without progress the episode goes on.
        #[test]
        fn an_episode_restarts_only_after_progress(
            deferrals in 0u32..20,
            first in proptest::option::of(0i64..100_000),
            now in 100_000i64..200_000,
            wait in 0i64..7_200,
            progressed: bool,
        ) {
            let budget = DeferralBudget::default();
            let state = DeferralState { deferrals, first_deferred_at: first.map(t) };
            let plan = budget.defer(state.for_next_wait(progressed), t(now), t(now + wait), s(0));
            if progressed {
                let (_, _, next) = expect_defer(plan);
                prop_assert_eq!(next.deferrals, 1);
                prop_assert_eq!(next.first_deferred_at, Some(t(now)));
            } else {
                prop_assert_eq!(plan, budget.defer(state, t(now), t(now + wait), s(0)));
            }
        }
    }

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).expect("valid")
    }
    fn s(secs: i64) -> SignedDuration {
        SignedDuration::from_secs(secs)
    }

    fn expect_defer(plan: DeferralPlan) -> (Timestamp, Timestamp, DeferralState) {
        match plan {
            DeferralPlan::Defer {
                run_at,
                not_before,
                state,
            } => (run_at, not_before, state),
            DeferralPlan::Exhausted(e) => panic!("expected a deferral, got {e}"),
        }
    }

    #[test]
    fn a_short_wait_runs_at_not_before_plus_jitter() {
        let budget = DeferralBudget::default();
        let (run_at, not_before, state) =
            expect_defer(budget.defer(DeferralState::default(), t(0), t(90), s(3)));
        assert_eq!(not_before, t(90));
        assert_eq!(run_at, t(93));
        assert_eq!(state.deferrals, 1);
        assert_eq!(state.first_deferred_at, Some(t(0)));
    }

    #[test]
    fn an_hour_long_reset_is_chunked_and_chunks_do_not_count() {
        let budget = DeferralBudget::default();
        let reset = t(3600);
        let (run_at, nb, mut state) =
            expect_defer(budget.defer(DeferralState::default(), t(0), reset, s(0)));
        assert_eq!((run_at, nb), (t(600), reset));
        let mut now = run_at;
        let mut wakes = 1;
        while now < reset {
            let (run_at, nb, next) = expect_defer(budget.continue_chunk(state, now, reset, s(0)));
            assert_eq!(nb, reset);
            assert!(run_at.duration_since(now) <= s(600));
            state = next;
            now = run_at;
            wakes += 1;
        }
        assert_eq!(wakes, 6);
        assert_eq!(state.deferrals, 1, "chunk continuations are free");
    }

    #[test]
    fn the_eleventh_deferral_is_refused() {
        let budget = DeferralBudget::default();
        let mut state = DeferralState::default();
        for i in 0..10 {
            let (_, _, next) = expect_defer(budget.defer(state, t(i * 60), t(i * 60 + 30), s(0)));
            state = next;
        }
        assert_eq!(
            budget.defer(state, t(700), t(760), s(0)),
            DeferralPlan::Exhausted(Exhausted::Count {
                deferrals: 10,
                max: 10
            })
        );
    }

    #[test]
    fn waits_are_clamped_to_the_wall_clock_deadline_then_exhaust() {
        let budget = DeferralBudget::default();
        let state = DeferralState {
            deferrals: 2,
            first_deferred_at: Some(t(0)),
        };
        // 1h50 in, a reset an hour away: wake at the 2h deadline, jitter included, not later.
        let (run_at, nb, _) = expect_defer(budget.defer(state, t(6600), t(10_200), s(5)));
        assert_eq!(nb, t(7200));
        assert_eq!(run_at, t(7200));
        assert_eq!(
            budget.defer(state, t(7200), t(10_200), s(0)),
            DeferralPlan::Exhausted(Exhausted::WallClock {
                first_deferred_at: t(0),
                deadline: t(7200)
            })
        );
    }

    #[test]
    fn jitter_is_bounded_and_seedable() {
        use rand::SeedableRng;
        let budget = DeferralBudget::default();
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for _ in 0..500 {
            let j = budget.draw_jitter(&mut rng);
            assert!(j >= SignedDuration::ZERO && j <= s(5));
        }
        // An out-of-range jitter handed in is clamped.
        let (run_at, _, _) =
            expect_defer(budget.defer(DeferralState::default(), t(0), t(10), s(99)));
        assert_eq!(run_at, t(15));
    }

    #[test]
    fn a_wake_alone_takes_no_jitter_and_a_shared_one_takes_what_was_drawn() {
        use rand::SeedableRng;
        let budget = DeferralBudget::default();
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let mut spread = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let drawn = budget.draw_jitter(&mut rng);
            assert_eq!(budget.wake_jitter(drawn, 0), SignedDuration::ZERO);
            let shared = budget.wake_jitter(drawn, 3);
            assert_eq!(shared, drawn);
            spread.insert(shared.as_millis());
        }
        assert!(
            spread.len() > 100,
            "shared wakes are spread: {}",
            spread.len()
        );
        assert_eq!(
            budget.wake_jitter(s(99), 1),
            s(5),
            "never more than the budget's jitter"
        );
    }

    #[test]
    fn progress_between_waits_starts_a_new_episode() {
        let budget = DeferralBudget::default();
        let mut state = DeferralState::default();
        // Fifty windows of an hour, with a page stored in each: never exhausted.
        for i in 0..50 {
            let now = t(i * 3600);
            state = state.for_next_wait(i > 0);
            let (_, _, next) = expect_defer(budget.defer(state, now, now + s(3000), s(0)));
            assert_eq!(next.deferrals, 1);
            assert_eq!(next.first_deferred_at, Some(now));
            state = next;
        }
        // Without progress the same waits exhaust the budget.
        let mut state = DeferralState::default();
        let mut exhausted = None;
        for i in 0..50 {
            let now = t(i * 600);
            match budget.defer(state.for_next_wait(false), now, now + s(300), s(0)) {
                DeferralPlan::Defer { state: next, .. } => state = next,
                DeferralPlan::Exhausted(why) => {
                    exhausted = Some((i, why));
                    break;
                }
            }
        }
        assert_eq!(
            exhausted,
            Some((
                10,
                Exhausted::Count {
                    deferrals: 10,
                    max: 10
                }
            ))
        );
    }

    #[test]
    fn a_not_before_in_the_past_runs_now() {
        let budget = DeferralBudget::default();
        let (run_at, nb, _) =
            expect_defer(budget.defer(DeferralState::default(), t(100), t(50), s(0)));
        assert_eq!((run_at, nb), (t(100), t(100)));
    }
}
