//! Budget lanes for the feed service: how one hourly core quota is split between polling,
//! the detail-fallback lane and a reserve, and how the detail lane is shared by actors and
//! repositories; plus the per-minute search lane.
//!
//! Polling has priority: a deeper poll clamps the detail lane rather than over-committing the
//! limit, and a configuration whose polling alone (plus the reserve) cannot fit is refused.
//!
//! Also the enrichment scheduler's two pure choices: which class's Search batch goes next
//! ([`BatchRotation`], weighted, an empty lane yielding its slot), and how many of a batch's
//! slots may go to TTL refreshes ([`refresh_slots`], the composition rule: backlog first).

use serde::{Deserialize, Serialize};

use crate::clock::SignedDuration;

/// The inputs of the core allowance formula.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CoreLaneConfig {
    /// The hourly core limit (60 unauthenticated, 5,000 with a token).
    pub limit: u64,
    /// Seconds between polls of one source.
    pub poll_interval_secs: u64,
    /// Link-followed pages one poll may fetch.
    pub max_pages_per_poll: u64,
    /// Live sources sharing the quota.
    pub sources: u64,
    /// Requests per hour never spent.
    pub reserve: u64,
    /// The configured detail-fallback allowance per hour (clamped if polling needs more).
    pub detail_allowance: u64,
    /// The actors' share of the detail lane, in [0, 1].
    pub actor_share: f64,
}

impl Default for CoreLaneConfig {
    fn default() -> Self {
        Self {
            limit: 60,
            poll_interval_secs: 300,
            max_pages_per_poll: 1,
            sources: 1,
            reserve: 8,
            detail_allowance: 40,
            actor_share: 0.5,
        }
    }
}

/// The hourly split of the core quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoreLanes {
    /// The hourly limit.
    pub limit: u64,
    /// Poll requests per hour: ceil(3600 / interval) × pages × sources.
    pub poll_allowance: u64,
    /// Detail fallbacks per hour, after clamping.
    pub detail_allowance: u64,
    /// Whether the detail lane was clamped below its configured size.
    pub detail_clamped: bool,
    /// Requests per hour never spent.
    pub reserve: u64,
    /// floor(detail × actor share).
    pub actor_guarantee: u64,
    /// The rest of the detail lane.
    pub repository_guarantee: u64,
    /// What no lane claims.
    pub unspent: u64,
}

/// Why a lane configuration is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LaneError {
    /// Polling and the reserve alone exceed the limit.
    #[error(
        "infeasible polling: {poll_allowance} poll requests/hour (ceil(3600 / {poll_interval_secs}s) x {pages} pages x {sources} sources) plus a reserve of {reserve} exceed the limit of {limit}; poll less often, fetch fewer pages or lower the reserve"
    )]
    InfeasiblePolling {
        /// The computed poll allowance.
        poll_allowance: u64,
        /// POLL_INTERVAL_SECONDS.
        poll_interval_secs: u64,
        /// MAX_PAGES_PER_POLL.
        pages: u64,
        /// Sources.
        sources: u64,
        /// The reserve.
        reserve: u64,
        /// The limit.
        limit: u64,
    },
    /// A setting is out of range; the message names it.
    #[error("budget setting `{setting}` is invalid: {problem}")]
    Invalid {
        /// The setting.
        setting: &'static str,
        /// What is wrong.
        problem: &'static str,
    },
}

impl CoreLaneConfig {
    /// Applies the formula.
    pub fn resolve(&self) -> Result<CoreLanes, LaneError> {
        let invalid = |setting, problem| Err(LaneError::Invalid { setting, problem });
        if self.poll_interval_secs == 0 {
            return invalid("poll_interval_secs", "must be at least 1 second");
        }
        if self.max_pages_per_poll == 0 {
            return invalid("max_pages_per_poll", "must be at least 1");
        }
        if self.sources == 0 {
            return invalid("sources", "must be at least 1");
        }
        if !(0.0..=1.0).contains(&self.actor_share) {
            return invalid("actor_share", "must be between 0 and 1");
        }
        let polls_per_hour = 3600u64.div_ceil(self.poll_interval_secs);
        let poll_allowance = polls_per_hour
            .saturating_mul(self.max_pages_per_poll)
            .saturating_mul(self.sources);
        let committed = poll_allowance.saturating_add(self.reserve);
        if committed > self.limit {
            return Err(LaneError::InfeasiblePolling {
                poll_allowance,
                poll_interval_secs: self.poll_interval_secs,
                pages: self.max_pages_per_poll,
                sources: self.sources,
                reserve: self.reserve,
                limit: self.limit,
            });
        }
        let room = self.limit - committed;
        let detail_allowance = self.detail_allowance.min(room);
        // The product is at most detail_allowance, so the cast back cannot overflow.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let actor_guarantee = ((detail_allowance as f64) * self.actor_share).floor() as u64;
        let actor_guarantee = actor_guarantee.min(detail_allowance);
        Ok(CoreLanes {
            limit: self.limit,
            poll_allowance,
            detail_allowance,
            detail_clamped: detail_allowance < self.detail_allowance,
            reserve: self.reserve,
            actor_guarantee,
            repository_guarantee: detail_allowance - actor_guarantee,
            unspent: room - detail_allowance,
        })
    }
}

/// The two classes of entity the detail lane serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntityClass {
    /// Users.
    Actor,
    /// Repositories.
    Repository,
}

/// Detail-lane usage in the current window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DetailUsage {
    /// Actor detail requests spent.
    pub actor: u64,
    /// Repository detail requests spent.
    pub repository: u64,
}

impl CoreLanes {
    /// Whether `class` may spend one more detail request. A class spends its guarantee first;
    /// beyond it, it may borrow the other class's unspent capacity only when the other class
    /// has nothing claimable. The lane as a whole is never exceeded.
    pub fn detail_admits(
        &self,
        class: EntityClass,
        used: DetailUsage,
        other_has_claimable: bool,
    ) -> bool {
        if used.actor + used.repository >= self.detail_allowance {
            return false;
        }
        let (own_used, own_guarantee) = match class {
            EntityClass::Actor => (used.actor, self.actor_guarantee),
            EntityClass::Repository => (used.repository, self.repository_guarantee),
        };
        own_used < own_guarantee || !other_has_claimable
    }
}

/// The per-minute search lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchLane {
    /// Requests per minute the provider allows (10 unauthenticated, 30 with a token).
    pub ceiling: u64,
    /// Requests per minute never spent.
    pub reserve: u64,
    /// Minimum spacing between search requests (zero disables pacing).
    pub pacing: SignedDuration,
}

impl Default for SearchLane {
    fn default() -> Self {
        Self {
            ceiling: 10,
            reserve: 2,
            pacing: SignedDuration::from_secs(6),
        }
    }
}

impl SearchLane {
    /// Requests per minute that may be spent.
    pub fn spendable(&self) -> u64 {
        self.ceiling.saturating_sub(self.reserve)
    }
}

/// Weighted rotation between the actor and repository Search-batch lanes (smooth weighted
/// round robin). Over any run where both lanes stay ready, each lane's count stays within one
/// batch of its weighted share; with 1/1 the lanes strictly alternate. A lane with nothing
/// claimable yields its slot instead of wasting it. A weight of 0 makes a lane run only when
/// the other has nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchRotation {
    /// ACTOR_ENRICHMENT_WEIGHT.
    pub actor_weight: u32,
    /// REPOSITORY_ENRICHMENT_WEIGHT.
    pub repository_weight: u32,
    // Running credits: each pick adds every ready lane's weight and charges the winner the
    // sum, so credits stay bounded and the picks interleave instead of bursting.
    actor_credit: i64,
    repository_credit: i64,
}

impl Default for BatchRotation {
    fn default() -> Self {
        Self::new(1, 1)
    }
}

impl BatchRotation {
    /// A rotation with these weights and no history.
    pub fn new(actor_weight: u32, repository_weight: u32) -> Self {
        Self {
            actor_weight,
            repository_weight,
            actor_credit: 0,
            repository_credit: 0,
        }
    }

    /// The lane that gets the next batch slot, among those ready; `None` when neither is.
    pub fn pick(&mut self, actor_ready: bool, repository_ready: bool) -> Option<EntityClass> {
        let (aw, rw) = match (actor_ready, repository_ready) {
            (false, false) => return None,
            // An empty lane yields: the other takes the slot and no credit moves, so the
            // yielding lane is not owed a burst later.
            (true, false) => return Some(EntityClass::Actor),
            (false, true) => return Some(EntityClass::Repository),
            (true, true) => (
                i64::from(self.actor_weight),
                i64::from(self.repository_weight),
            ),
        };
        if aw + rw == 0 {
            // Both weights zero: plain alternation.
            return Some(if self.actor_credit <= self.repository_credit {
                self.actor_credit += 1;
                EntityClass::Actor
            } else {
                self.repository_credit += 1;
                EntityClass::Repository
            });
        }
        self.actor_credit += aw;
        self.repository_credit += rw;
        // Ties go to actors: deterministic, and with 1/1 it yields actor, repository, ...
        let winner = if (self.actor_credit >= self.repository_credit && aw > 0) || rw == 0 {
            self.actor_credit -= aw + rw;
            EntityClass::Actor
        } else {
            self.repository_credit -= aw + rw;
            EntityClass::Repository
        };
        Some(winner)
    }
}

/// The composition rule: how many of a Search batch's `batch_size` slots may carry TTL-stale
/// refresh candidates, once `backlog_claimed` of the class's own never-enriched backlog rows
/// have been taken. Backlog always fills first; refreshes top up spare slots only when the
/// class's own backlog is exhausted (fewer claimed than the batch holds) and the other class
/// has no backlog claimable; a refresh-only batch therefore runs only when neither class has
/// backlog. Refresh can never take a slot pending work could have used.
pub fn refresh_slots(batch_size: u32, backlog_claimed: u32, other_has_backlog: bool) -> u32 {
    if other_has_backlog || backlog_claimed >= batch_size {
        0
    } else {
        batch_size - backlog_claimed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference's core budget table: limit 60, reserve 8, detail 40, cadence 300 s, one
    /// source; only the page depth varies.
    /// (poll allowance, detail allowance, clamped) for a feasible row.
    type Row = Option<(u64, u64, bool)>;

    #[test]
    fn the_core_budget_table() {
        let table: [(u64, Row); 5] = [
            (1, Some((12, 40, false))),
            (2, Some((24, 28, true))),
            (3, Some((36, 16, true))),
            (4, Some((48, 4, true))),
            (5, None),
        ];
        for (pages, expected) in table {
            let config = CoreLaneConfig {
                max_pages_per_poll: pages,
                ..CoreLaneConfig::default()
            };
            match (config.resolve(), expected) {
                (Ok(lanes), Some((poll, detail, clamped))) => {
                    assert_eq!(lanes.poll_allowance, poll, "pages {pages}");
                    assert_eq!(lanes.detail_allowance, detail, "pages {pages}");
                    assert_eq!(lanes.detail_clamped, clamped, "pages {pages}");
                    assert_eq!(lanes.reserve, 8);
                    assert_eq!(lanes.unspent, 0, "pages {pages}");
                    assert_eq!(lanes.actor_guarantee + lanes.repository_guarantee, detail);
                }
                (Err(LaneError::InfeasiblePolling { poll_allowance, .. }), None) => {
                    assert_eq!(poll_allowance, 60);
                    let message = config
                        .resolve()
                        .err()
                        .map(|e| e.to_string())
                        .unwrap_or_default();
                    assert!(message.contains("infeasible polling"), "{message}");
                }
                (got, want) => panic!("pages {pages}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn defaults_split_twenty_twenty() {
        let lanes = CoreLaneConfig::default().resolve().expect("feasible");
        assert_eq!(
            (lanes.actor_guarantee, lanes.repository_guarantee),
            (20, 20)
        );
    }

    #[test]
    fn the_remainder_goes_to_repositories() {
        let lanes = CoreLaneConfig {
            detail_allowance: 5,
            actor_share: 0.5,
            ..CoreLaneConfig::default()
        }
        .resolve()
        .expect("feasible");
        assert_eq!(
            (
                lanes.actor_guarantee,
                lanes.repository_guarantee,
                lanes.unspent
            ),
            (2, 3, 35)
        );
        for (share, actors) in [(0.0, 0), (1.0, 5), (0.33, 1)] {
            let lanes = CoreLaneConfig {
                detail_allowance: 5,
                actor_share: share,
                ..CoreLaneConfig::default()
            }
            .resolve()
            .expect("feasible");
            assert_eq!(lanes.actor_guarantee, actors);
            assert_eq!(lanes.repository_guarantee, 5 - actors);
        }
    }

    #[test]
    fn authenticated_limits_use_the_same_formula() {
        let lanes = CoreLaneConfig {
            limit: 5000,
            poll_interval_secs: 60,
            max_pages_per_poll: 3,
            ..CoreLaneConfig::default()
        }
        .resolve()
        .expect("feasible");
        assert_eq!(lanes.poll_allowance, 180);
        assert_eq!(lanes.detail_allowance, 40);
        assert_eq!(lanes.unspent, 5000 - 180 - 8 - 40);
        // ceil, not floor: a 7-minute cadence is 9 polls an hour.
        let lanes = CoreLaneConfig {
            poll_interval_secs: 420,
            ..CoreLaneConfig::default()
        }
        .resolve()
        .expect("feasible");
        assert_eq!(lanes.poll_allowance, 9);
    }

    #[test]
    fn invalid_settings_are_named() {
        let cases = [
            (
                CoreLaneConfig {
                    poll_interval_secs: 0,
                    ..Default::default()
                },
                "poll_interval_secs",
            ),
            (
                CoreLaneConfig {
                    max_pages_per_poll: 0,
                    ..Default::default()
                },
                "max_pages_per_poll",
            ),
            (
                CoreLaneConfig {
                    sources: 0,
                    ..Default::default()
                },
                "sources",
            ),
            (
                CoreLaneConfig {
                    actor_share: 1.5,
                    ..Default::default()
                },
                "actor_share",
            ),
            (
                CoreLaneConfig {
                    actor_share: f64::NAN,
                    ..Default::default()
                },
                "actor_share",
            ),
        ];
        for (config, setting) in cases {
            let message = config
                .resolve()
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(message.contains(setting), "{message}");
        }
    }

    #[test]
    fn guarantees_first_then_borrowing_only_from_an_idle_class() {
        let lanes = CoreLaneConfig::default().resolve().expect("feasible");
        let used = DetailUsage {
            actor: 20,
            repository: 3,
        };
        // Actors spent their guarantee: no borrowing while repositories have work…
        assert!(!lanes.detail_admits(EntityClass::Actor, used, true));
        // …but borrowing when repositories have nothing claimable.
        assert!(lanes.detail_admits(EntityClass::Actor, used, false));
        assert!(lanes.detail_admits(EntityClass::Repository, used, true));
        // The lane as a whole is never exceeded.
        let full = DetailUsage {
            actor: 35,
            repository: 5,
        };
        assert!(!lanes.detail_admits(EntityClass::Repository, full, false));
        assert!(!lanes.detail_admits(EntityClass::Actor, full, false));
    }

    #[test]
    fn search_lane_defaults() {
        let lane = SearchLane::default();
        assert_eq!(lane.spendable(), 8);
        assert_eq!(lane.pacing, SignedDuration::from_secs(6));
    }
}
