//! The runner's decision, as a pure function: given where every stage stands and which
//! buckets have headroom, what happens next. No I/O, no clock: `now` is part of the snapshot.

use std::collections::{BTreeSet, HashMap};

use headroom_core::clock::Timestamp;
use serde::Serialize;

use crate::graph::StageGraph;

/// Where one stage stands in this run (all its scopes together).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum StageState {
    /// Not started.
    Pending,
    /// Started; its checkpoints say where to continue.
    Running,
    /// Finished in this run.
    Done,
    /// Failed for a reason waiting cannot fix.
    Failed {
        /// Why.
        reason: String,
    },
    /// A dependency failed: not run in this run, carried to the next.
    Blocked {
        /// The failed stage that blocks it.
        by: String,
    },
    /// Stopped by a wait or a transient failure; not before `until` (if known).
    Deferred {
        /// The earliest instant worth trying again.
        until: Option<Timestamp>,
    },
}

impl StageState {
    /// The state's name, as its serialized `status` tag spells it.
    pub fn name(&self) -> &'static str {
        match self {
            StageState::Pending => "pending",
            StageState::Running => "running",
            StageState::Done => "done",
            StageState::Failed { .. } => "failed",
            StageState::Blocked { .. } => "blocked",
            StageState::Deferred { .. } => "deferred",
        }
    }

    fn is_settled(&self) -> bool {
        matches!(
            self,
            StageState::Done | StageState::Failed { .. } | StageState::Blocked { .. }
        )
    }
}

/// What the governor says about a bucket right now (headroom, not reserving).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "headroom", rename_all = "snake_case")]
pub enum BucketView {
    /// A request of the stage's cost would be granted.
    Open,
    /// Closed until then (the governor's Wait, or a wait a stage met in this pass).
    Closed {
        /// When it reopens.
        until: Timestamp,
    },
}

/// The input of [`plan`].
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The instant of the decision.
    pub now: Option<Timestamp>,
    /// Every stage of this run (the requested ones and their dependencies) and its state.
    pub stages: HashMap<String, StageState>,
    /// Bucket headroom by bucket name; a bucket not listed is open.
    pub buckets: HashMap<String, BucketView>,
    /// The stages running in this drive right now (started, not yet stopped): never started
    /// twice, and while any runs the drive neither hibernates nor finishes.
    pub active: BTreeSet<String>,
    /// Stages whose list of repositories is complete though they are not done (the
    /// repository source working through its repositories): enough for a dependent that
    /// starts [`after_listing`](crate::graph::StageDecl::after_listing).
    pub listed: BTreeSet<String>,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Start (or continue) these stages, alongside those already active: every ready stage
    /// whose bucket has headroom, in priority order (stages already started in an earlier
    /// pass first, then declaration order). Never empty.
    Run {
        /// The stages.
        stages: Vec<String>,
    },
    /// Stages are active and nothing more can start: decide again when one of them stops,
    /// or at `until`, the earliest instant a waiting ready stage could start (if any).
    Await {
        /// When a waiting ready stage could start.
        until: Option<Timestamp>,
    },
    /// Nothing is active and nothing can run: persist the run and wake it at `not_before`,
    /// the earliest instant at which some ready stage can run.
    Hibernate {
        /// When to wake.
        not_before: Timestamp,
        /// The buckets whose reopening is awaited (for the explanation).
        waiting_on: Vec<String>,
        /// The ready stages that wait.
        ready: Vec<String>,
    },
    /// Every stage is done, failed or blocked (and none is active).
    Finish,
}

/// The decision plus the stages to record as blocked before acting on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// What to do.
    pub action: Action,
    /// `(stage, failed stage that blocks it)`, for stages not yet recorded as blocked.
    pub block: Vec<(String, String)>,
}

/// Decides the next step.
///
/// - A stage whose (transitive) dependency failed is blocked, never run.
/// - A stage is ready when it is not settled and every dependency is done — or, for a stage
///   that starts after the listing, has its list of repositories complete.
/// - A ready stage is runnable when it is not active, its bucket is open and its own
///   deferral has passed. Every runnable stage starts: a REST stage and a GraphQL stage run
///   at once when both buckets have headroom (the governor's in-flight ceiling and
///   points-per-minute limiters share the requests out); stages already started in an
///   earlier pass come first (finish what was started), then declaration order.
/// - With nothing runnable but stages active, await one of them (or the earliest instant a
///   waiting ready stage could start).
/// - With nothing runnable or active but something ready, hibernate until the earliest
///   instant that unblocks a ready stage (its bucket's reopening, or its deferral's end,
///   whichever is later) — not simply the bucket that closed last.
/// - With nothing ready or active, finish.
pub fn plan(graph: &StageGraph, snapshot: &Snapshot) -> Plan {
    let mut state: HashMap<&str, StageState> = snapshot
        .stages
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    let mut block = Vec::new();
    // Propagate failures in declaration order (dependencies come first).
    for decl in graph.stages() {
        let Some(current) = state.get(decl.name) else {
            continue;
        };
        if current.is_settled() {
            continue;
        }
        let culprit = decl.depends_on.iter().find_map(|d| match state.get(d) {
            Some(StageState::Failed { .. }) => Some((*d).to_owned()),
            Some(StageState::Blocked { by }) => Some(by.clone()),
            _ => None,
        });
        if let Some(by) = culprit {
            block.push((decl.name.to_owned(), by.clone()));
            state.insert(decl.name, StageState::Blocked { by });
        }
    }
    let now = snapshot.now;
    let mut ready = Vec::new();
    for decl in graph.stages() {
        let Some(s) = state.get(decl.name) else {
            continue;
        };
        if s.is_settled() {
            continue;
        }
        let deps_done = decl.depends_on.iter().all(|d| match state.get(d) {
            Some(StageState::Done) => true,
            Some(StageState::Failed { .. } | StageState::Blocked { .. }) | None => false,
            Some(_) => decl.after_listing && snapshot.listed.contains(*d),
        });
        if deps_done {
            ready.push((decl, s));
        }
    }
    let open_at = |decl: &crate::graph::StageDecl, s: &StageState| -> Option<Timestamp> {
        // None = runnable now; Some(t) = not before t.
        let bucket_until = match snapshot.buckets.get(decl.bucket) {
            Some(BucketView::Closed { until }) => Some(*until),
            _ => None,
        };
        let deferred_until = match s {
            StageState::Deferred { until: Some(t) } if now.is_none_or(|n| *t > n) => Some(*t),
            _ => None,
        };
        match (bucket_until, deferred_until) {
            (None, None) => None,
            (Some(a), None) | (None, Some(a)) => Some(a),
            (Some(a), Some(b)) => Some(a.max(b)),
        }
    };
    let waiting: Vec<_> = ready
        .iter()
        .filter(|(d, _)| !snapshot.active.contains(d.name))
        .collect();
    let mut runnable: Vec<_> = waiting
        .iter()
        .filter(|(d, s)| open_at(d, s).is_none())
        .collect();
    // A stable sort: declaration order among equals.
    runnable.sort_by_key(|(_, s)| !matches!(s, StageState::Running));
    if !runnable.is_empty() {
        return Plan {
            action: Action::Run {
                stages: runnable.iter().map(|(d, _)| d.name.to_owned()).collect(),
            },
            block,
        };
    }
    let earliest = waiting.iter().filter_map(|(d, s)| open_at(d, s)).min();
    if !snapshot.active.is_empty() {
        return Plan {
            action: Action::Await { until: earliest },
            block,
        };
    }
    if ready.is_empty() {
        return Plan {
            action: Action::Finish,
            block,
        };
    }
    let mut waiting_on = Vec::new();
    for (decl, _) in &ready {
        if matches!(
            snapshot.buckets.get(decl.bucket),
            Some(BucketView::Closed { .. })
        ) && !waiting_on.iter().any(|b| b == decl.bucket)
        {
            waiting_on.push(decl.bucket.to_owned());
        }
    }
    Plan {
        action: Action::Hibernate {
            // Every ready stage had an opening instant, or it would have been runnable.
            not_before: earliest.unwrap_or(Timestamp::MAX),
            waiting_on,
            ready: ready.iter().map(|(d, _)| d.name.to_owned()).collect(),
        },
        block,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_name_is_its_serialized_status() {
        for state in [
            StageState::Pending,
            StageState::Running,
            StageState::Done,
            StageState::Failed { reason: "x".into() },
            StageState::Blocked { by: "y".into() },
            StageState::Deferred { until: None },
        ] {
            let json = serde_json::to_value(&state).unwrap_or_default();
            assert_eq!(json["status"], state.name(), "{state:?}");
        }
    }
}
