//! The runner: the planner's decision applied with the store, the governor and the clock.
//!
//! This module owns a run's lifecycle (claim, drive, release) and the runner's settings and
//! outcomes. Which credential may resume a run is decided in `binding`. The stage contract
//! and its context are in `stage`, the pass-by-pass loop in
//! `drive`, waiting (pacing, hibernation, deferral budgets, claims) in `deferral`, stage and
//! run status in `status`, progress events in `progress`.

mod binding;
mod deferral;
mod drive;
mod progress;
mod slots;
mod stage;
mod status;
mod tally;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use headroom_core::QuotaKey;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::deferral::DeferralBudget;
use headroom_core::telemetry;
use headroom_http::{ApiError, Client, Credential};
use headroom_store::{
    BindingChange, Checkpoint, CheckpointStatus, CheckpointUpdate, CredentialUsed, Store,
    StoreError, SyncRun, SyncRunStatus,
};
use serde::Serialize;

pub use self::binding::CredentialRefusal;
pub use self::progress::{NoProgress, ProgressEvent, ProgressSink};
pub use self::stage::{RepoScope, Stage, StageCtx, StageError};
pub use self::status::state_of;
use self::status::{BLOCKED_BY, FAILED};
use crate::calibration::CalibrationRow;
use crate::graph::StageGraph;
use crate::plan::StageState;
use crate::summary::RunSummary;

/// Settings of a runner.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// Deferral budgets (10 deferrals, 2 h from the first, 600 s chunks, 0–5 s jitter).
    pub deferral: DeferralBudget,
    /// Pacing waits up to this long are taken in-process (the in-flight ceiling, the tail of
    /// a points-per-minute limiter); longer ones hibernate the run. A wait for a primary
    /// window to reset (a bucket exhausted) always hibernates, however short.
    pub inline_wait: SignedDuration,
    /// How long a stage that met a transient failure is put aside.
    pub transient_retry: SignedDuration,
    /// How long a stage whose credential was refused (401) is put aside before the same
    /// credential is tried again (a new token is meant to come with a resume).
    pub credential_retry: SignedDuration,
    /// This worker's name for claims.
    pub holder: String,
    /// How long a claim lasts before another worker may take the run over.
    pub claim: SignedDuration,
    /// Seed for the deferral jitter.
    pub jitter_seed: u64,
    /// Whether a run bound to another credential of the same owner goes on with this
    /// runner's credential (`--rebind-credential`; the rebind is recorded in the run).
    pub rebind_credential: bool,
    /// Operators' caps on what sync may spend of a quota window (`headroom.toml`'s
    /// `[sync_caps]`); none by default.
    pub caps: headroom_core::budget::SyncCaps,
    /// Requests a run keeps in flight at most, across its concurrent stages and
    /// repositories: the identity's in-flight ceiling (`--in-flight-ceiling`, 10). The
    /// governor holds the identity to it across processes; this keeps one run's own
    /// requests queued in order rather than each polling the governor.
    pub in_flight: u32,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        Self {
            deferral: DeferralBudget::default(),
            inline_wait: SignedDuration::from_secs(5),
            transient_retry: SignedDuration::from_secs(120),
            credential_retry: SignedDuration::from_secs(900),
            holder: "headroom".to_owned(),
            claim: SignedDuration::from_secs(600),
            jitter_seed: 1,
            rebind_credential: false,
            caps: headroom_core::budget::SyncCaps::default(),
            in_flight: headroom_core::governor::GovernorConfig::default().ceiling,
        }
    }
}
/// Why a run could not be driven.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The identity could not be established or the governor failed.
    #[error(transparent)]
    Api(#[from] ApiError),
    /// No such run.
    #[error("no sync run {0}")]
    NoRun(i64),
    /// Another worker holds the run.
    #[error("sync run {0} is held by another worker")]
    Claimed(i64),
    /// The runner's credential may not resume the run.
    #[error(transparent)]
    Credential(#[from] CredentialRefusal),
    /// The run's credential binding changed under this runner's claim.
    #[error("sync run {0}: its credential binding changed while this worker held it")]
    BindingChanged(i64),
    /// The run asks for stages this graph does not have.
    #[error(transparent)]
    Graph(#[from] crate::graph::GraphError),
}

/// How a call to [`Runner::run`] ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RunOutcome {
    /// Every stage done.
    Done {
        /// The summary.
        summary: Box<RunSummary>,
    },
    /// Persisted until `until`; a worker (or `--wait`) resumes it then.
    Hibernating {
        /// When to wake.
        until: Timestamp,
        /// Why, in words.
        reason: String,
    },
    /// Failed: a stage failed (its dependents are blocked) or a deferral budget ran out.
    Failed {
        /// Why.
        reason: String,
        /// The summary.
        summary: Box<RunSummary>,
    },
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Logs `sync.budget_underestimated` for each underestimated row of a stage (or of the run).
/// A run started without an estimate (`sync org` without `--estimate`) has nothing to be
/// under: every row would read "estimated 0", so nothing is logged (issue 36, item 10).
fn log_underestimates(run_id: i64, stage: Option<&str>, rows: &[CalibrationRow], estimated: bool) {
    if !estimated {
        return;
    }
    for r in rows.iter().filter(|r| r.underestimated) {
        let reason = if r.unbudgeted_actual {
            "unbudgeted_actual"
        } else {
            "underestimated"
        };
        tracing::warn!(
            event = telemetry::SYNC_BUDGET_UNDERESTIMATED,
            run_id,
            stage = stage.unwrap_or(""),
            route_family = %r.family,
            dimension = r.dimension.as_str(),
            estimated_units = r.estimated_units,
            actual_requests = r.actual_requests,
            reason,
            "A sync spent more requests on a route family than estimated."
        );
    }
}

/// Drives sync runs of one stage graph.
pub struct Runner {
    graph: StageGraph,
    stages: HashMap<&'static str, Arc<dyn Stage>>,
    store: Arc<dyn Store>,
    client: Client,
    credential: Option<Credential>,
    clock: TokioClock,
    config: RunnerConfig,
    progress: Arc<dyn ProgressSink>,
}

impl fmt::Debug for Runner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runner")
            .field("stages", &self.graph.stages().len())
            .finish_non_exhaustive()
    }
}

impl Runner {
    /// A runner over `stages` (their declarations must form a valid graph).
    pub fn new(
        stages: Vec<Arc<dyn Stage>>,
        repository_source: Option<&'static str>,
        store: Arc<dyn Store>,
        client: Client,
        credential: Option<Credential>,
        clock: TokioClock,
        config: RunnerConfig,
    ) -> Result<Self, crate::graph::GraphError> {
        let graph = StageGraph::new(
            stages.iter().map(|s| s.decl().clone()).collect(),
            repository_source,
        )?;
        let stages = stages.into_iter().map(|s| (s.decl().name, s)).collect();
        Ok(Self {
            graph,
            stages,
            store,
            client,
            credential,
            clock,
            config,
            progress: Arc::new(NoProgress),
        })
    }

    /// Lets this runner go on with runs bound to another credential of its credential's
    /// owner, recording each rebind (`--rebind-credential`).
    pub fn rebinding_credential(mut self) -> Self {
        self.config.rebind_credential = true;
        self
    }

    /// Sends progress events to `sink`.
    pub fn with_progress(mut self, sink: Arc<dyn ProgressSink>) -> Self {
        self.progress = sink;
        self
    }

    /// The settings it runs with.
    pub fn config(&self) -> &RunnerConfig {
        &self.config
    }

    /// The graph.
    pub fn graph(&self) -> &StageGraph {
        &self.graph
    }

    /// The quota identity the runner's credential spends.
    pub async fn identity(&self) -> Result<QuotaKey, ApiError> {
        self.client.identity(self.credential.as_ref()).await
    }

    /// The stages a run covers: the requested ones and their dependencies, or all.
    pub fn selection(&self, run: &SyncRun) -> Result<Vec<&'static str>, SyncError> {
        Ok(match &run.requested_stages {
            Some(r) if !r.is_empty() => self.graph.closure_of(r)?,
            _ => self.graph.stages().iter().map(|s| s.name).collect(),
        })
    }

    /// Where each selected stage stands, from the run's stage-level checkpoints.
    pub fn stage_states(
        &self,
        selection: &[&'static str],
        checkpoints: &[Checkpoint],
    ) -> HashMap<String, StageState> {
        selection
            .iter()
            .map(|name| {
                let cp = checkpoints
                    .iter()
                    .find(|c| c.stage == *name && c.scope.is_empty());
                ((*name).to_owned(), state_of(cp))
            })
            .collect()
    }

    async fn set_stage(
        &self,
        run_id: i64,
        stage: &str,
        status: CheckpointStatus,
        detail: Option<String>,
    ) -> Result<(), StoreError> {
        // Keep the cursor: a once-per-run stage pages on this very checkpoint.
        let cursor = self
            .store
            .checkpoint(run_id, stage, "")
            .await?
            .and_then(|c| c.page_cursor);
        self.store
            .set_checkpoint(&CheckpointUpdate {
                sync_run_id: run_id,
                stage: stage.to_owned(),
                scope: String::new(),
                status,
                page_cursor: if status == CheckpointStatus::Done {
                    None
                } else {
                    cursor
                },
                pages_added: 0,
                rows_added: 0,
                detail,
                at: self.clock.now(),
            })
            .await
    }

    /// Drives run `run_id` until it finishes, fails or hibernates. Safe to call on a run that
    /// stopped anywhere (a crash included): done stages are skipped, a running stage
    /// continues from its checkpoints.
    pub async fn run(&self, run_id: i64) -> Result<RunOutcome, SyncError> {
        let outcome = self.run_to_rest(run_id).await;
        // Whatever the outcome, the run goes quiet here: its last readings are handed over.
        self.client.flush_readings().await;
        outcome
    }

    async fn run_to_rest(&self, run_id: i64) -> Result<RunOutcome, SyncError> {
        let mut run = self
            .store
            .sync_run(run_id)
            .await?
            .ok_or(SyncError::NoRun(run_id))?;
        let mut summary = RunSummary::from_stored(run.summary.as_ref());
        match run.status {
            SyncRunStatus::Done => {
                return Ok(RunOutcome::Done {
                    summary: Box::new(summary),
                });
            }
            SyncRunStatus::Failed => {
                return Ok(RunOutcome::Failed {
                    reason: run.failure_reason.clone().unwrap_or_default(),
                    summary: Box::new(summary),
                });
            }
            _ => {}
        }
        let now = self.clock.now();
        if !self
            .store
            .claim_sync_run(run_id, &self.config.holder, now, now + self.config.claim)
            .await?
        {
            return Err(SyncError::Claimed(run_id));
        }
        let result = match self.bind(&run).await {
            Ok(rebound) => {
                if rebound {
                    // A new token of the owner: a wait the old one was refused into is over
                    // (a quota wait is not: the owner's quota is the same, and the
                    // governor holds it).
                    summary.wake_target = None;
                }
                self.drive(&mut run, &mut summary).await
            }
            Err(e) => Err(e),
        };
        // Give the claim back whatever happened; a crash lets it lapse instead.
        let released = self
            .store
            .release_sync_run(run_id, &self.config.holder)
            .await;
        let outcome = result?;
        released?;
        Ok(outcome)
    }

    /// Holds run `run` to its credential binding (under this runner's claim): the same
    /// credential goes on, an unbound run adopts it, another one of the same owner goes on
    /// only as a recorded rebind, any other is refused. Returns whether it rebound.
    async fn bind(&self, run: &SyncRun) -> Result<bool, SyncError> {
        let key = self.identity().await?;
        let fingerprint = self.credential.as_ref().map(|c| c.fingerprint().to_owned());
        let change = match binding::decide(
            run,
            &key,
            fingerprint.as_deref(),
            self.config.rebind_credential,
        )? {
            binding::Binding::Keep => return Ok(false),
            binding::Binding::Adopt => BindingChange::Adopt(CredentialUsed {
                fingerprint: fingerprint.clone(),
                owner: headroom_store::subject_label(&key.subject),
            }),
            binding::Binding::Rebind { from } => BindingChange::Rebind {
                from,
                to: fingerprint.clone(),
                at: self.clock.now(),
            },
        };
        if !self.store.bind_sync_run_credential(run.id, &change).await? {
            return Err(SyncError::BindingChanged(run.id));
        }
        match &change {
            BindingChange::Adopt(_) => tracing::info!(
                event = telemetry::SYNC_RUN_CREDENTIAL_ADOPTED,
                run_id = run.id,
                fingerprint = fingerprint.as_deref(),
                owner = %key.subject,
            ),
            BindingChange::Rebind { from, .. } => tracing::warn!(
                event = telemetry::SYNC_RUN_CREDENTIAL_REBOUND,
                run_id = run.id,
                from = from.as_deref(),
                to = fingerprint.as_deref(),
                owner = %key.subject,
            ),
        }
        Ok(matches!(change, BindingChange::Rebind { .. }))
    }
}
