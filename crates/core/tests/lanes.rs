//! Property tests of the enrichment scheduler's pure choices: weighted batch rotation and the
//! refresh composition rule.

use headroom_core::lanes::{
    BatchRotation, CoreLaneConfig, DetailUsage, EntityClass, refresh_slots,
};
use proptest::prelude::*;

#[test]
fn equal_weights_alternate_and_an_empty_lane_yields() {
    let mut r = BatchRotation::new(1, 1);
    let picks: Vec<_> = (0..6).map(|_| r.pick(true, true)).collect();
    assert_eq!(
        picks,
        [EntityClass::Actor, EntityClass::Repository]
            .repeat(3)
            .into_iter()
            .map(Some)
            .collect::<Vec<_>>()
    );
    // Repositories have nothing: actors take every slot rather than waste one.
    assert_eq!(r.pick(true, false), Some(EntityClass::Actor));
    assert_eq!(r.pick(true, false), Some(EntityClass::Actor));
    assert_eq!(r.pick(false, false), None);
    // …and the yielding lane is not owed a burst afterwards: alternation resumes.
    assert_eq!(r.pick(true, true), Some(EntityClass::Actor));
    assert_eq!(r.pick(true, true), Some(EntityClass::Repository));
}

#[test]
fn three_to_one_interleaves() {
    let mut r = BatchRotation::new(3, 1);
    let picks: Vec<_> = (0..8).filter_map(|_| r.pick(true, true)).collect();
    let actors = picks.iter().filter(|c| **c == EntityClass::Actor).count();
    assert_eq!(actors, 6);
    // Never more than three actor batches in a row while repositories wait.
    assert!(
        picks
            .windows(4)
            .all(|w| w.contains(&EntityClass::Repository))
    );
}

#[test]
fn composition_rule_examples() {
    // Own backlog fills the batch: no refresh.
    assert_eq!(refresh_slots(10, 10, false), 0);
    // Own backlog exhausted after 3, other class idle: 7 refresh slots.
    assert_eq!(refresh_slots(10, 3, false), 7);
    // Other class still has backlog: no refresh, even in spare slots.
    assert_eq!(refresh_slots(10, 3, true), 0);
    // Refresh-only batch only when neither class has backlog.
    assert_eq!(refresh_slots(10, 0, false), 10);
    assert_eq!(refresh_slots(10, 0, true), 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// While both lanes stay ready, every prefix of the picks keeps each lane within one
    /// batch of its weighted share.
    #[test]
    fn both_ready_shares_follow_the_weights(aw in 1u32..20, rw in 1u32..20, n in 1usize..400) {
        let mut r = BatchRotation::new(aw, rw);
        let total = i64::from(aw + rw);
        let mut actors = 0i64;
        for i in 1..=n {
            if r.pick(true, true) == Some(EntityClass::Actor) {
                actors += 1;
            }
            let i = i64::try_from(i).unwrap_or(i64::MAX);
            let ideal = i * i64::from(aw);
            prop_assert!((actors * total - ideal).abs() <= total,
                "after {} picks: {} actor batches, weights {}/{}", i, actors, aw, rw);
        }
    }

    /// Whatever is ready and whatever the weights: a pick is made exactly when some lane is
    /// ready, and only a ready lane is picked.
    #[test]
    fn picks_only_ready_lanes(aw in 0u32..5, rw in 0u32..5,
        readiness in proptest::collection::vec((any::<bool>(), any::<bool>()), 1..200)) {
        let mut r = BatchRotation::new(aw, rw);
        for (a, b) in readiness {
            match r.pick(a, b) {
                None => prop_assert!(!a && !b),
                Some(EntityClass::Actor) => prop_assert!(a),
                Some(EntityClass::Repository) => prop_assert!(b),
            }
        }
    }

    /// A zero-weight lane never takes a slot from a ready lane with weight.
    #[test]
    fn zero_weight_lane_only_fills_idle_slots(w in 1u32..10, n in 1usize..100, actor_zero in any::<bool>()) {
        let mut r = if actor_zero { BatchRotation::new(0, w) } else { BatchRotation::new(w, 0) };
        for _ in 0..n {
            let pick = r.pick(true, true);
            let expected = if actor_zero { EntityClass::Repository } else { EntityClass::Actor };
            prop_assert_eq!(pick, Some(expected));
        }
    }

    /// The composition rule: refresh never takes a slot while the other class has backlog,
    /// never exceeds the batch's spare slots, and fills them all when it may.
    #[test]
    fn refresh_never_displaces_backlog(size in 1u32..=10, claimed in 0u32..=10, other in any::<bool>()) {
        let claimed = claimed.min(size);
        let slots = refresh_slots(size, claimed, other);
        prop_assert!(claimed + slots <= size);
        if other || claimed == size {
            prop_assert_eq!(slots, 0);
        } else {
            prop_assert_eq!(slots, size - claimed);
        }
    }

    /// Detail shares: the lane total is never exceeded; a class inside its guarantee is always
    /// admitted while the lane has room; beyond it, only when the other class is idle.
    #[test]
    fn detail_shares_guarantee_then_borrow(allowance in 0u64..60, share in 0.0f64..=1.0,
        actor in 0u64..60, repository in 0u64..60, other_busy in any::<bool>(), actor_class in any::<bool>()) {
        let lanes = CoreLaneConfig { detail_allowance: allowance, actor_share: share, limit: 200, ..CoreLaneConfig::default() }
            .resolve().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let used = DetailUsage { actor, repository };
        let class = if actor_class { EntityClass::Actor } else { EntityClass::Repository };
        let admitted = lanes.detail_admits(class, used, other_busy);
        let (own, guarantee) = if actor_class { (actor, lanes.actor_guarantee) } else { (repository, lanes.repository_guarantee) };
        let room = actor + repository < lanes.detail_allowance;
        if !room {
            prop_assert!(!admitted);
        } else if own < guarantee {
            prop_assert!(admitted);
        } else {
            prop_assert_eq!(admitted, !other_busy);
        }
    }
}
