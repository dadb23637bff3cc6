//! The incremental rule's memory: what the last completed run of the account saw of its
//! audit log ([`HighWater`]), found among the stored runs, and the decision the audit stage
//! records for the list stages ([`Decision`]), which they read before sending anything.

use headroom_store::{Store, SyncRunStatus};
use headroom_sync::{StageCtx, StageError};
use serde::{Deserialize, Serialize};

use super::identity::LEARNED_SCOPE;
use super::{Selection, names, send};

/// Runs looked at, newest first, when the last completed run is searched for: past them the
/// run counts as a first one (the lists are re-read whole: the safe side). The search ends at
/// the first match, most often a few runs back; it is made once per run (its result is kept
/// in the audit stage's cursor).
const RUNS_LOOKED_AT: usize = 1_000;

/// The newest instant of the audit log a run saw: its millisecond and the ids of the entries
/// at it (another entry may still arrive in that very millisecond).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HighWater {
    /// Epoch milliseconds.
    pub(crate) ms: i64,
    /// The ids of the entries at `ms`.
    pub(crate) ids: Vec<String>,
}

impl HighWater {
    /// Takes in an entry.
    pub(crate) fn saw(&mut self, ms: i64, id: &str) {
        if ms > self.ms {
            self.ms = ms;
            self.ids = vec![id.to_owned()];
        } else if ms == self.ms && !self.ids.iter().any(|i| i == id) {
            self.ids.push(id.to_owned());
        }
    }

    /// Whether the entry was already seen by the run this marks (older, or one of its ids at
    /// its millisecond).
    pub(crate) fn covers(&self, ms: i64, id: &str) -> bool {
        ms < self.ms || (ms == self.ms && self.ids.iter().any(|i| i == id))
    }
}

/// What the audit stage decided for the list stages, kept as the detail of its finished
/// [`LEARNED_SCOPE`]: read by this run's list stages and, once the run is done, by the next
/// run of the account as its starting point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Decision {
    /// The account.
    pub(crate) account: String,
    /// The newest audit entries seen by this run or, when it saw none, by the run before.
    pub(crate) high: Option<HighWater>,
    /// Re-list projects, flags, segments, members and code references.
    pub(crate) refresh: bool,
    /// Why, in words (shown as the skipped stages' detail).
    pub(crate) reason: String,
}

/// The last completed run of the same account whose audit stage recorded a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Previous {
    /// Its id.
    pub(crate) run: i64,
    /// What it saw of the audit log.
    pub(crate) high: Option<HighWater>,
}

/// The last run before this one that completed, of the same kind and API host, with every
/// stage, over a selection covering this one's, whose audit stage read `account`.
pub(crate) async fn last_completed(
    ctx: &StageCtx<'_>,
    account: &str,
    selection: &Selection,
) -> Result<Option<Previous>, StageError> {
    let store = ctx.store();
    let Some(me) = store.sync_run(ctx.run_id()).await? else {
        return Ok(None);
    };
    // The store reads runs one id at a time: newest first, the first match ends the search.
    for id in (1..me.id).rev().take(RUNS_LOOKED_AT) {
        let Some(run) = store.sync_run(id).await? else {
            continue;
        };
        let eligible = run.kind == me.kind
            && run.host == me.host
            && run.status == SyncRunStatus::Done
            && run.requested_stages.as_ref().is_none_or(Vec::is_empty)
            && Selection::parse(&run.target).is_ok_and(|s| selection.covered_by(&s));
        if !eligible {
            continue;
        }
        if let Some(decision) = decision_of(store, run.id).await?
            && decision.account == account
        {
            return Ok(Some(Previous {
                run: run.id,
                high: decision.high,
            }));
        }
    }
    Ok(None)
}

/// The decision run `run_id`'s audit stage recorded, if it recorded one.
async fn decision_of(store: &dyn Store, run_id: i64) -> Result<Option<Decision>, StageError> {
    let cp = store
        .checkpoint(run_id, names::AUDIT_LOG, LEARNED_SCOPE)
        .await?;
    Ok(cp
        .and_then(|c| c.detail)
        .and_then(|d| send::from_text::<Decision>(&d).ok()))
}

/// The decision this run's audit stage recorded.
pub(crate) async fn decided(ctx: &StageCtx<'_>) -> Result<Decision, StageError> {
    let detail = ctx
        .checkpoint_of(names::AUDIT_LOG, LEARNED_SCOPE)
        .await?
        .and_then(|c| c.detail);
    match detail {
        Some(text) => send::from_text(&text),
        None => Err(StageError::Permanent(format!(
            "stage {:?} has not decided whether the lists are re-read",
            names::AUDIT_LOG
        ))),
    }
}

/// The scope a list stage finishes, with the reason as its detail, when the audit log shows
/// nothing to re-read.
pub(crate) const SKIPPED_SCOPE: &str = "skipped";

/// Whether a list stage re-reads its list in this run. When it does not, its
/// [`SKIPPED_SCOPE`] is finished with the reason and nothing is sent.
pub(crate) async fn wanted(ctx: &StageCtx<'_>) -> Result<bool, StageError> {
    let decision = decided(ctx).await?;
    if !decision.refresh {
        ctx.finish_scope(SKIPPED_SCOPE, Some(decision.reason))
            .await?;
    }
    Ok(decision.refresh)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_high_water_covers_what_it_saw_and_nothing_after() {
        let mut h = HighWater::default();
        h.saw(10, "a");
        h.saw(12, "b");
        h.saw(12, "c");
        h.saw(11, "d");
        h.saw(12, "b");
        assert_eq!(h.ms, 12);
        assert_eq!(h.ids, ["b", "c"]);
        assert!(h.covers(11, "zzz"));
        assert!(h.covers(12, "c"));
        // Another entry in the same millisecond, written after the run read it.
        assert!(!h.covers(12, "e"));
        assert!(!h.covers(13, "b"));
    }

    proptest! {
        /// Whatever order entries come in, the high-water is the newest millisecond with
        /// exactly the ids at it, and it covers every entry it saw.
        #[test]
        fn a_high_water_is_the_newest_millisecond_and_its_ids(
            entries in proptest::collection::vec((0i64..20, "[a-e]"), 1..30),
        ) {
            let mut h = HighWater::default();
            for (ms, id) in &entries {
                h.saw(*ms, id);
            }
            let newest = entries.iter().map(|(ms, _)| *ms).max().unwrap_or_default();
            prop_assert_eq!(h.ms, newest);
            let mut want: Vec<&str> = entries.iter().filter(|(ms, _)| *ms == newest).map(|(_, id)| id.as_str()).collect();
            want.sort_unstable();
            want.dedup();
            let mut got: Vec<&str> = h.ids.iter().map(String::as_str).collect();
            got.sort_unstable();
            prop_assert_eq!(got, want);
            for (ms, id) in &entries {
                prop_assert!(h.covers(*ms, id));
            }
        }
    }
}
