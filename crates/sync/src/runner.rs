//! The runner: the planner's decision applied with the store, the governor and the clock.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::deferral::{DeferralBudget, DeferralPlan, DeferralState};
use headroom_core::governor::{Headroom, WaitReason};
use headroom_core::{QuotaKey, RateLimitSignal};
use headroom_http::{ApiError, ApiRequest, ApiResponse, Client, Credential, RateLimitReason};
use headroom_store::{
    Checkpoint, CheckpointStatus, CheckpointUpdate, Record, Store, StoreError, SyncRun,
    SyncRunStatus, Watermark,
};
use rand::SeedableRng as _;
use serde::Serialize;

use crate::graph::{StageDecl, StageGraph};
use crate::plan::{Action, BucketView, Snapshot, StageState, plan};
use crate::summary::{RefusedField, RunSummary};

/// Detail prefix of a stage-level checkpoint recorded as failed (the store's checkpoint
/// statuses have no "failed": a failed stage is `blocked` with this detail).
const FAILED: &str = "failed: ";
/// Detail prefix of a stage blocked by a failed dependency.
const BLOCKED_BY: &str = "blocked by ";

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
    /// This worker's name for claims.
    pub holder: String,
    /// How long a claim lasts before another worker may take the run over.
    pub claim: SignedDuration,
    /// Seed for the deferral jitter.
    pub jitter_seed: u64,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        Self {
            deferral: DeferralBudget::default(),
            inline_wait: SignedDuration::from_secs(5),
            transient_retry: SignedDuration::from_secs(120),
            holder: "headroom".to_owned(),
            claim: SignedDuration::from_secs(600),
            jitter_seed: 1,
        }
    }
}

/// Why a stage stopped.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    /// The quota says wait: nothing was sent. Closes the bucket for this pass.
    #[error("{bucket} closed until {until}: {reason}")]
    Wait {
        /// When to try again.
        until: Timestamp,
        /// The closed bucket.
        bucket: String,
        /// Why.
        reason: RateLimitReason,
    },
    /// DNS, timeouts, 5xx after retries: defer the stage, write nothing.
    #[error("transient failure: {0}")]
    Transient(String),
    /// A failure waiting cannot fix: the stage fails and its dependents are blocked.
    #[error("{0}")]
    Permanent(String),
    /// The store failed: the run stops where it is (its checkpoints are intact).
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<ApiError> for StageError {
    fn from(e: ApiError) -> Self {
        match e {
            ApiError::RateLimited {
                until,
                bucket,
                reason,
                ..
            } => StageError::Wait {
                until,
                bucket: bucket.as_str().to_owned(),
                reason,
            },
            other if other.is_transient() => StageError::Transient(other.to_string()),
            other => StageError::Permanent(other.to_string()),
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

/// What a run reports while it works (progress bars, JSON log lines).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ProgressEvent {
    /// A stage starts or resumes.
    StageStarted {
        /// The run.
        run_id: i64,
        /// The stage.
        stage: String,
        /// Its title.
        title: String,
        /// 1-based position.
        position: usize,
        /// Stages in the graph.
        of: usize,
    },
    /// A page was committed.
    Page {
        /// The run.
        run_id: i64,
        /// The stage.
        stage: String,
        /// The scope (`""` or a repository).
        scope: String,
        /// 1-based repository index, for per-repository stages.
        scope_index: Option<usize>,
        /// Repositories in the run.
        scope_total: Option<usize>,
        /// Pages of this scope so far.
        page: u64,
        /// Rows in this page.
        rows: u64,
    },
    /// A stage finished.
    StageDone {
        /// The run.
        run_id: i64,
        /// The stage.
        stage: String,
    },
    /// A stage stopped on a wait or a transient failure; others may run meanwhile.
    StageDeferred {
        /// The run.
        run_id: i64,
        /// The stage.
        stage: String,
        /// The bucket that closed, if it was a quota wait.
        bucket: Option<String>,
        /// Until when.
        until: Timestamp,
        /// Why.
        reason: String,
    },
    /// A stage failed; its dependents are blocked.
    StageFailed {
        /// The run.
        run_id: i64,
        /// The stage.
        stage: String,
        /// Why.
        reason: String,
    },
    /// A stage is blocked by a failed dependency.
    StageBlocked {
        /// The run.
        run_id: i64,
        /// The stage.
        stage: String,
        /// The failed stage.
        by: String,
    },
    /// Nothing can run for a short while: waiting in-process.
    Pacing {
        /// The run.
        run_id: i64,
        /// Until when.
        until: Timestamp,
        /// The buckets awaited.
        buckets: Vec<String>,
    },
    /// Nothing can run: the run is persisted until `until`.
    Hibernating {
        /// The run.
        run_id: i64,
        /// When a worker wakes it.
        until: Timestamp,
        /// The buckets awaited.
        buckets: Vec<String>,
    },
    /// The run ended.
    Finished {
        /// The run.
        run_id: i64,
        /// `done` or `failed`.
        status: String,
    },
}

/// Where progress goes.
pub trait ProgressSink: Send + Sync {
    /// One event.
    fn event(&self, event: &ProgressEvent);
}

/// A sink that drops everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl ProgressSink for NoProgress {
    fn event(&self, _event: &ProgressEvent) {}
}

/// One stage of a graph: its declaration and the work.
#[async_trait]
pub trait Stage: Send + Sync + fmt::Debug {
    /// What it declares.
    fn decl(&self) -> &StageDecl;

    /// Runs the stage, or continues it from its checkpoints. Every page is written with
    /// [`StageCtx::write_page`] (rows and cursor together); returning `Ok` means every scope
    /// is finished.
    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError>;
}

/// A repository a per-repository stage works on (as the repository source recorded it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoScope {
    /// GitHub's repository id.
    pub github_id: i64,
    /// `owner/name`.
    pub full_name: String,
}

impl RepoScope {
    /// The checkpoint scope string: `owner/name#id`.
    pub fn scope(&self) -> String {
        format!("{}#{}", self.full_name, self.github_id)
    }

    /// Parses a scope string written by [`RepoScope::scope`].
    pub fn parse(scope: &str) -> Option<Self> {
        let (name, id) = scope.rsplit_once('#')?;
        Some(Self {
            github_id: id.parse().ok()?,
            full_name: name.to_owned(),
        })
    }

    /// Owner and name.
    pub fn owner_and_name(&self) -> Option<(&str, &str)> {
        self.full_name.split_once('/')
    }
}

/// What a stage may touch while it runs.
pub struct StageCtx<'a> {
    run: &'a SyncRun,
    store: &'a dyn Store,
    client: &'a Client,
    credential: Option<&'a Credential>,
    clock: &'a TokioClock,
    decl: &'a StageDecl,
    repository_source: Option<&'static str>,
    summary: &'a Mutex<RunSummary>,
    progress: &'a dyn ProgressSink,
    repositories: Mutex<Option<Vec<RepoScope>>>,
    holder: &'a str,
    claim: SignedDuration,
}

impl fmt::Debug for StageCtx<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StageCtx")
            .field("run", &self.run.id)
            .field("stage", &self.decl.name)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl StageCtx<'_> {
    /// The run id.
    pub fn run_id(&self) -> i64 {
        self.run.id
    }

    /// What the run collects (an organization's login).
    pub fn target(&self) -> &str {
        &self.run.target
    }

    /// The store.
    pub fn store(&self) -> &dyn Store {
        self.store
    }

    /// The stage being run.
    pub fn decl(&self) -> &StageDecl {
        self.decl
    }

    /// Now, by the run's clock.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The clock.
    pub fn clock(&self) -> &TokioClock {
        self.clock
    }

    /// Sends through the exit door with the run's credential, and counts what came back.
    pub async fn send(&self, request: ApiRequest) -> Result<ApiResponse, ApiError> {
        let bucket = request.bucket.as_str().to_owned();
        let estimated = u64::from(request.estimated_cost);
        let result = self.client.send(request.credential(self.credential)).await;
        let mut s = lock(self.summary);
        match &result {
            Ok(response) => {
                let bucket = response
                    .signal
                    .resource
                    .as_ref()
                    .map_or(bucket, |b| b.as_str().to_owned());
                // GitHub does not charge an authorized 304 (an unauthenticated one it does).
                let free = response.not_modified() && self.credential.is_some();
                tally_response(
                    &mut s,
                    &bucket,
                    &response.signal,
                    if free { 0 } else { estimated },
                    response.attempts,
                    free,
                );
                let stage = s.stages.entry(self.decl.name.to_owned()).or_default();
                stage.requests += u64::from(response.attempts.max(1));
            }
            Err(ApiError::Forbidden { status: 403, .. }) => s.responses_403 += 1,
            Err(ApiError::RateLimited { bucket, reason, .. }) => {
                // A secondary block only follows a 403/429 the origin sent; other waits were
                // decided before sending.
                if reason.is_secondary() {
                    s.responses_403 += 1;
                }
                s.buckets
                    .entry(bucket.as_str().to_owned())
                    .or_default()
                    .waits += 1;
            }
            Err(_) => {}
        }
        result
    }

    /// Records a field GitHub refused in an answer this stage keeps (a partial result), once
    /// per stage, path and kind; the message is redacted. It is persisted with the run's
    /// summary and shown by `sync status`.
    pub fn record_refused(&self, path: &str, kind: &str, message: &str) {
        lock(self.summary).record_refused(RefusedField {
            stage: self.decl.name.to_owned(),
            path: path.to_owned(),
            kind: kind.to_owned(),
            message: headroom_core::redact(message),
        });
    }

    /// Remembers the ETag of a conditional `request`'s response (sent with the run's
    /// credential), once what it carried is stored: see [`Client::remember_etag`].
    pub async fn remember_etag(&self, request: ApiRequest, response: &ApiResponse) {
        self.client
            .remember_etag(&request.credential(self.credential), response)
            .await;
    }

    /// The repositories of this run, as the repository source recorded them (its
    /// per-repository checkpoints), in scope order.
    pub async fn repositories(&self) -> Result<Vec<RepoScope>, StoreError> {
        if let Some(cached) = lock(&self.repositories).clone() {
            return Ok(cached);
        }
        let Some(source) = self.repository_source else {
            return Ok(Vec::new());
        };
        let mut repos: Vec<RepoScope> = self
            .store
            .checkpoints(self.run.id)
            .await?
            .into_iter()
            .filter(|c| c.stage == source && !c.scope.is_empty())
            .filter_map(|c| RepoScope::parse(&c.scope))
            .collect();
        repos.sort_by(|a, b| a.full_name.cmp(&b.full_name));
        // The source itself keeps listing until it is done; only a finished list is cached.
        if self.decl.name != source {
            *lock(&self.repositories) = Some(repos.clone());
        }
        Ok(repos)
    }

    /// The checkpoint of one scope of this stage (`""` for a once-per-run stage).
    pub async fn checkpoint(&self, scope: &str) -> Result<Option<Checkpoint>, StoreError> {
        self.store
            .checkpoint(self.run.id, self.decl.name, scope)
            .await
    }

    /// Commits a page of rows with the cursor after it (and, when `finished`, the scope's
    /// `done` and an optional watermark) in one transaction.
    pub async fn write_page(
        &self,
        scope: &str,
        records: &[Record],
        next_cursor: Option<String>,
        finished: bool,
        watermark: Option<(i64, Watermark)>,
    ) -> Result<u64, StoreError> {
        let now = self.now();
        self.write_page_marked(
            scope,
            records,
            next_cursor,
            finished,
            watermark.map(|(repo, mark)| (repo, mark, now)),
        )
        .await
    }

    /// As [`StageCtx::write_page`], with the watermark's instant given: an incremental stage
    /// marks the moment it *started* the scope, so that what changed while it was collecting
    /// is asked for again next time.
    pub async fn write_page_marked(
        &self,
        scope: &str,
        records: &[Record],
        next_cursor: Option<String>,
        finished: bool,
        watermark: Option<(i64, Watermark, Timestamp)>,
    ) -> Result<u64, StoreError> {
        let now = self.now();
        let update = CheckpointUpdate {
            sync_run_id: self.run.id,
            stage: self.decl.name.to_owned(),
            scope: scope.to_owned(),
            status: if finished {
                CheckpointStatus::Done
            } else {
                CheckpointStatus::Running
            },
            page_cursor: if finished { None } else { next_cursor },
            pages_added: 1,
            rows_added: records.len() as u64,
            detail: None,
            at: now,
        };
        let mut tx = self.store.begin().await?;
        for record in records {
            tx.upsert(record).await?;
        }
        if finished && let Some((repo, mark, at)) = watermark {
            tx.set_watermark(repo, mark, at).await?;
        }
        tx.set_checkpoint(&update).await?;
        tx.commit().await?;
        self.renew_claim().await?;
        let page = {
            let mut s = lock(self.summary);
            let t = s.stages.entry(self.decl.name.to_owned()).or_default();
            t.pages += 1;
            t.rows += records.len() as u64;
            t.pages
        };
        let (scope_index, scope_total) = if scope.is_empty() {
            (None, None)
        } else {
            let repos = lock(&self.repositories).clone().unwrap_or_default();
            let index = repos.iter().position(|r| r.scope() == scope).map(|i| i + 1);
            (index, (!repos.is_empty()).then_some(repos.len()))
        };
        self.progress.event(&ProgressEvent::Page {
            run_id: self.run.id,
            stage: self.decl.name.to_owned(),
            scope: scope.to_owned(),
            scope_index,
            scope_total,
            page,
            rows: records.len() as u64,
        });
        Ok(records.len() as u64)
    }

    /// Extends this worker's claim on the run: a live worker keeps it, a killed one lets it
    /// lapse within one claim period.
    async fn renew_claim(&self) -> Result<(), StoreError> {
        let now = self.now();
        self.store
            .claim_sync_run(self.run.id, self.holder, now, now + self.claim)
            .await
            .map(|_| ())
    }

    /// For the repository source: commits a page of the listing (`scope ""`) with the cursor
    /// after it and a pending checkpoint per repository found, in one transaction — the
    /// repositories of the run are exactly the ones whose rows were stored.
    pub async fn write_listing_page(
        &self,
        records: &[Record],
        next_cursor: String,
        repositories: &[RepoScope],
    ) -> Result<u64, StoreError> {
        let now = self.now();
        let mut fresh = Vec::new();
        for repo in repositories {
            let scope = repo.scope();
            if self
                .store
                .checkpoint(self.run.id, self.decl.name, &scope)
                .await?
                .is_none()
            {
                fresh.push(scope);
            }
        }
        let mut tx = self.store.begin().await?;
        for record in records {
            tx.upsert(record).await?;
        }
        for scope in fresh {
            {
                tx.set_checkpoint(&CheckpointUpdate {
                    sync_run_id: self.run.id,
                    stage: self.decl.name.to_owned(),
                    scope,
                    status: CheckpointStatus::Pending,
                    page_cursor: None,
                    pages_added: 0,
                    rows_added: 0,
                    detail: None,
                    at: now,
                })
                .await?;
            }
        }
        tx.set_checkpoint(&CheckpointUpdate {
            sync_run_id: self.run.id,
            stage: self.decl.name.to_owned(),
            scope: String::new(),
            status: CheckpointStatus::Running,
            page_cursor: Some(next_cursor),
            pages_added: 1,
            rows_added: records.len() as u64,
            detail: None,
            at: now,
        })
        .await?;
        tx.commit().await?;
        let page = {
            let mut s = lock(self.summary);
            let t = s.stages.entry(self.decl.name.to_owned()).or_default();
            t.pages += 1;
            t.rows += records.len() as u64;
            t.pages
        };
        self.progress.event(&ProgressEvent::Page {
            run_id: self.run.id,
            stage: self.decl.name.to_owned(),
            scope: String::new(),
            scope_index: None,
            scope_total: None,
            page,
            rows: records.len() as u64,
        });
        Ok(records.len() as u64)
    }

    /// Marks a scope finished without rows (nothing to collect, or a permanent fact such as
    /// "the repository is gone", kept in `detail`).
    pub async fn finish_scope(
        &self,
        scope: &str,
        detail: Option<String>,
    ) -> Result<(), StoreError> {
        self.store
            .set_checkpoint(&CheckpointUpdate {
                sync_run_id: self.run.id,
                stage: self.decl.name.to_owned(),
                scope: scope.to_owned(),
                status: CheckpointStatus::Done,
                page_cursor: None,
                pages_added: 0,
                rows_added: 0,
                detail,
                at: self.now(),
            })
            .await
    }
}

fn tally_response(
    s: &mut RunSummary,
    bucket: &str,
    signal: &RateLimitSignal,
    estimated: u64,
    attempts: u32,
    free: bool,
) {
    let b = s.buckets.entry(bucket.to_owned()).or_default();
    b.requests += u64::from(attempts.max(1));
    b.points += if free {
        0
    } else {
        signal
            .cost
            .unwrap_or(if bucket == "graphql" { estimated } else { 1 })
    };
    if let Some(r) = signal.remaining {
        b.min_remaining = Some(b.min_remaining.map_or(r, |m| m.min(r)));
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
        let result = self.drive(&mut run, &mut summary).await;
        // Give the claim back whatever happened; a crash lets it lapse instead.
        let released = self
            .store
            .release_sync_run(run_id, &self.config.holder)
            .await;
        let outcome = result?;
        released?;
        Ok(outcome)
    }

    async fn drive(
        &self,
        run: &mut SyncRun,
        summary: &mut RunSummary,
    ) -> Result<RunOutcome, SyncError> {
        let key = self.identity().await?;
        let selection = self.selection(run)?;
        let now = self.clock.now();
        let mut rng = rand::rngs::StdRng::seed_from_u64(
            self.config.jitter_seed
                ^ u64::try_from(run.id).unwrap_or(0)
                ^ u64::from(run.deferral_count),
        );
        if let Some(target) = summary.wake_target
            && now < target
        {
            // Woken at a chunk boundary: schedule the next chunk; this does not count as a
            // deferral and runs nothing.
            let state = DeferralState {
                deferrals: run.deferral_count,
                first_deferred_at: run.first_deferred_at,
            };
            let jitter = self.config.deferral.draw_jitter(&mut rng);
            match self
                .config
                .deferral
                .continue_chunk(state, now, target, jitter)
            {
                DeferralPlan::Defer { run_at, state, .. } => {
                    run.status = SyncRunStatus::Hibernating;
                    run.not_before = Some(run_at);
                    run.first_deferred_at = state.first_deferred_at;
                    run.updated_at = now;
                    self.store.save_sync_run(run).await?;
                    return Ok(RunOutcome::Hibernating {
                        until: run_at,
                        reason: format!("continuing a wait until {target}"),
                    });
                }
                DeferralPlan::Exhausted(why) => {
                    summary.wake_target = None;
                    return self.finish(run, summary, Some(why.to_string())).await;
                }
            }
        }
        summary.wake_target = None;
        // Pages stored before this wake: a wait after more than these starts a new episode.
        let pages_at_wake = summary.pages();
        if let Some(since) = summary.hibernating_since.take() {
            let slept = now.duration_since(since);
            summary.hibernating_ms += i64::try_from(slept.as_millis()).unwrap_or(i64::MAX);
            run.total_wait += slept;
        }
        run.status = SyncRunStatus::Running;
        run.not_before = None;
        run.started_at.get_or_insert(now);
        run.updated_at = now;
        run.summary = Some(serde_json::to_value(&*summary).unwrap_or_default());
        self.store.save_sync_run(run).await?;

        let shared = Mutex::new(summary.clone());
        let mut closed: HashMap<String, Timestamp> = HashMap::new();
        let mut deferred_until: HashMap<String, Timestamp> = HashMap::new();
        loop {
            // Buckets whose primary quota is spent, and when they reopen: a wait for one of
            // these is a quota window, which no process sleeps through.
            let mut exhausted: HashMap<String, Timestamp> = HashMap::new();
            // Buckets held back only by this process's own pacing (points per minute, the
            // in-flight ceiling): such a wait ends within a minute by construction, so it is
            // not a deferral the budget counts.
            let mut pacing: HashMap<String, Timestamp> = HashMap::new();
            let now = self.clock.now();
            // Renew the claim: a long run keeps its worker.
            self.store
                .claim_sync_run(run.id, &self.config.holder, now, now + self.config.claim)
                .await?;
            let checkpoints = self.store.checkpoints(run.id).await?;
            let mut states = self.stage_states(&selection, &checkpoints);
            for (stage, until) in &deferred_until {
                if let Some(s @ StageState::Deferred { .. }) = states.get_mut(stage) {
                    *s = StageState::Deferred {
                        until: Some(*until),
                    };
                }
            }
            let mut buckets = HashMap::new();
            for name in &selection {
                let Some(decl) = self.graph.get(name) else {
                    continue;
                };
                if buckets.contains_key(decl.bucket) {
                    continue;
                }
                let mut view = match self
                    .client
                    .governor()
                    .headroom(
                        &key,
                        &decl.bucket(),
                        decl.estimated_cost,
                        decl.request_kind(),
                    )
                    .await
                    .map_err(ApiError::from)?
                {
                    Headroom::Open => BucketView::Open,
                    Headroom::Closed(wait) => {
                        match wait.reason {
                            WaitReason::Exhausted { .. } => {
                                exhausted.insert(decl.bucket.to_owned(), wait.until);
                            }
                            WaitReason::LocalPoints { .. } | WaitReason::InFlightCeiling { .. } => {
                                pacing.insert(decl.bucket.to_owned(), wait.until);
                            }
                            _ => {}
                        }
                        BucketView::Closed { until: wait.until }
                    }
                };
                if let Some(until) = closed.get(decl.bucket)
                    && *until > now
                {
                    view = BucketView::Closed {
                        until: match view {
                            BucketView::Closed { until: g } => g.max(*until),
                            BucketView::Open => *until,
                        },
                    };
                }
                buckets.insert(decl.bucket.to_owned(), view);
            }
            let snapshot = Snapshot {
                now: Some(now),
                stages: states,
                buckets,
            };
            let decision = plan(&self.graph, &snapshot);
            for (stage, by) in &decision.block {
                self.set_stage(
                    run.id,
                    stage,
                    CheckpointStatus::Blocked,
                    Some(format!("{BLOCKED_BY}{by}")),
                )
                .await?;
                self.progress.event(&ProgressEvent::StageBlocked {
                    run_id: run.id,
                    stage: stage.clone(),
                    by: by.clone(),
                });
            }
            match decision.action {
                Action::Run { stage } => {
                    let Some(worker) = self.stages.get(stage.as_str()).cloned() else {
                        return Err(SyncError::Graph(crate::graph::GraphError::UnknownStage(
                            stage,
                        )));
                    };
                    let decl = worker.decl().clone();
                    deferred_until.remove(&stage);
                    self.set_stage(run.id, &stage, CheckpointStatus::Running, None)
                        .await?;
                    self.progress.event(&ProgressEvent::StageStarted {
                        run_id: run.id,
                        stage: stage.clone(),
                        title: decl.title.to_owned(),
                        position: self.graph.position(&stage).unwrap_or(0),
                        of: self.graph.stages().len(),
                    });
                    let ctx = StageCtx {
                        run,
                        store: self.store.as_ref(),
                        client: &self.client,
                        credential: self.credential.as_ref(),
                        clock: &self.clock,
                        decl: &decl,
                        repository_source: self.graph.repository_source(),
                        summary: &shared,
                        progress: self.progress.as_ref(),
                        repositories: Mutex::new(None),
                        holder: &self.config.holder,
                        claim: self.config.claim,
                    };
                    let result = worker.run(&ctx).await;
                    drop(ctx);
                    match result {
                        Ok(()) => {
                            self.set_stage(run.id, &stage, CheckpointStatus::Done, None)
                                .await?;
                            self.progress.event(&ProgressEvent::StageDone {
                                run_id: run.id,
                                stage,
                            });
                        }
                        Err(StageError::Wait {
                            until,
                            bucket,
                            reason,
                        }) => {
                            closed.insert(bucket.clone(), until);
                            self.set_stage(
                                run.id,
                                &stage,
                                CheckpointStatus::Deferred,
                                Some(reason.to_string()),
                            )
                            .await?;
                            self.progress.event(&ProgressEvent::StageDeferred {
                                run_id: run.id,
                                stage,
                                bucket: Some(bucket),
                                until,
                                reason: reason.to_string(),
                            });
                        }
                        Err(StageError::Transient(reason)) => {
                            let until = self.clock.now() + self.config.transient_retry;
                            deferred_until.insert(stage.clone(), until);
                            self.set_stage(
                                run.id,
                                &stage,
                                CheckpointStatus::Deferred,
                                Some(reason.clone()),
                            )
                            .await?;
                            self.progress.event(&ProgressEvent::StageDeferred {
                                run_id: run.id,
                                stage,
                                bucket: None,
                                until,
                                reason,
                            });
                        }
                        Err(StageError::Permanent(reason)) => {
                            self.set_stage(
                                run.id,
                                &stage,
                                CheckpointStatus::Blocked,
                                Some(format!("{FAILED}{reason}")),
                            )
                            .await?;
                            self.progress.event(&ProgressEvent::StageFailed {
                                run_id: run.id,
                                stage,
                                reason,
                            });
                        }
                        Err(StageError::Store(e)) => {
                            *summary = lock(&shared).clone();
                            return Err(SyncError::Store(e));
                        }
                    }
                    *summary = lock(&shared).clone();
                    run.summary = Some(serde_json::to_value(&*summary).unwrap_or_default());
                    run.updated_at = self.clock.now();
                    self.store.save_sync_run(run).await?;
                }
                Action::Hibernate {
                    not_before,
                    waiting_on,
                    ..
                } => {
                    let now = self.clock.now();
                    let window = wakes_for(&waiting_on, &exhausted, not_before);
                    if !window && not_before.duration_since(now) <= self.config.inline_wait {
                        self.progress.event(&ProgressEvent::Pacing {
                            run_id: run.id,
                            until: not_before,
                            buckets: waiting_on,
                        });
                        self.store
                            .claim_sync_run(
                                run.id,
                                &self.config.holder,
                                now,
                                not_before + self.config.claim,
                            )
                            .await?;
                        self.clock.sleep_until(not_before).await;
                        let waited = self.clock.now().duration_since(now);
                        lock(&shared).paced_ms +=
                            i64::try_from(waited.as_millis()).unwrap_or(i64::MAX);
                        closed.retain(|_, until| *until > self.clock.now());
                        continue;
                    }
                    *summary = lock(&shared).clone();
                    if !window && wakes_for(&waiting_on, &pacing, not_before) {
                        // Our own pacing: hibernate (the run is persisted, the claim
                        // released), but spend no deferral budget on a minute's limiter.
                        summary.wake_target = None;
                        summary.pacing_hibernations += 1;
                        let why = format!("pacing {} (points per minute)", waiting_on.join(", "));
                        return self
                            .hibernate(run, summary, &selection, now, not_before, waiting_on, why)
                            .await;
                    }
                    // Budgets bound one episode of waiting: a wait after a page was stored
                    // since the last wake starts a new one.
                    let progressed = summary.pages() > pages_at_wake;
                    let state = DeferralState {
                        deferrals: run.deferral_count,
                        first_deferred_at: run.first_deferred_at,
                    }
                    .for_next_wait(progressed);
                    let jitter = self.config.deferral.draw_jitter(&mut rng);
                    match self.config.deferral.defer(state, now, not_before, jitter) {
                        DeferralPlan::Exhausted(why) => {
                            let reason = why.to_string();
                            return self.finish(run, summary, Some(reason)).await;
                        }
                        DeferralPlan::Defer {
                            run_at,
                            state,
                            not_before,
                        } => {
                            summary.wake_target = Some(not_before);
                            summary.deferrals += 1;
                            if state.deferrals == 1 {
                                summary.wait_episodes += 1;
                            }
                            run.deferral_count = state.deferrals;
                            run.first_deferred_at = state.first_deferred_at;
                            let why = format!(
                                "waiting for {} to reopen",
                                if waiting_on.is_empty() {
                                    "deferred stages".to_owned()
                                } else {
                                    waiting_on.join(", ")
                                }
                            );
                            return self
                                .hibernate(run, summary, &selection, now, run_at, waiting_on, why)
                                .await;
                        }
                    }
                }
                Action::Finish => {
                    *summary = lock(&shared).clone();
                    return self.finish(run, summary, None).await;
                }
            }
        }
    }

    /// Persists the run as hibernating until `until` (a worker, or the command's hold,
    /// wakes it then).
    #[allow(clippy::too_many_arguments)]
    async fn hibernate(
        &self,
        run: &mut SyncRun,
        summary: &mut RunSummary,
        selection: &[&'static str],
        now: Timestamp,
        until: Timestamp,
        waiting_on: Vec<String>,
        reason: String,
    ) -> Result<RunOutcome, SyncError> {
        run.status = SyncRunStatus::Hibernating;
        run.not_before = Some(until);
        summary.hibernations += 1;
        summary.hibernating_since = Some(now);
        self.fill_status_lists(run.id, selection, summary).await?;
        run.summary = Some(serde_json::to_value(&*summary).unwrap_or_default());
        run.updated_at = now;
        self.store.save_sync_run(run).await?;
        self.progress.event(&ProgressEvent::Hibernating {
            run_id: run.id,
            until,
            buckets: waiting_on.clone(),
        });
        Ok(RunOutcome::Hibernating { until, reason })
    }

    async fn fill_status_lists(
        &self,
        run_id: i64,
        selection: &[&'static str],
        summary: &mut RunSummary,
    ) -> Result<(), StoreError> {
        let checkpoints = self.store.checkpoints(run_id).await?;
        summary.stages_done.clear();
        summary.stages_blocked.clear();
        summary.stages_deferred.clear();
        summary.stages_failed.clear();
        for name in selection {
            let cp = checkpoints
                .iter()
                .find(|c| c.stage == *name && c.scope.is_empty());
            let state = state_of(cp);
            let (status, detail) = match &state {
                StageState::Pending => ("pending", None),
                StageState::Running => ("running", None),
                StageState::Done => {
                    summary.stages_done.push((*name).to_owned());
                    ("done", None)
                }
                StageState::Failed { reason } => {
                    summary.stages_failed.push((*name).to_owned());
                    ("failed", Some(reason.clone()))
                }
                StageState::Blocked { by } => {
                    summary.stages_blocked.push((*name).to_owned());
                    ("blocked", Some(format!("{BLOCKED_BY}{by}")))
                }
                StageState::Deferred { .. } => {
                    summary.stages_deferred.push((*name).to_owned());
                    ("deferred", cp.and_then(|c| c.detail.clone()))
                }
            };
            let t = summary.stages.entry((*name).to_owned()).or_default();
            t.status = status.to_owned();
            t.detail = detail;
        }
        Ok(())
    }

    async fn finish(
        &self,
        run: &mut SyncRun,
        summary: &mut RunSummary,
        exhausted: Option<String>,
    ) -> Result<RunOutcome, SyncError> {
        let now = self.clock.now();
        let selection = self.selection(run)?;
        self.fill_status_lists(run.id, &selection, summary).await?;
        if let Some(started) = run.started_at {
            summary.wall_time_ms =
                i64::try_from(now.duration_since(started).as_millis()).unwrap_or(i64::MAX);
        }
        let reason = exhausted.or_else(|| {
            (!summary.stages_failed.is_empty()).then(|| {
                let failed: Vec<String> = summary
                    .stages_failed
                    .iter()
                    .map(|s| {
                        let why = summary
                            .stages
                            .get(s)
                            .and_then(|t| t.detail.clone())
                            .unwrap_or_default();
                        format!("stage {s} failed: {why}")
                    })
                    .collect();
                let mut r = failed.join("; ");
                if !summary.stages_blocked.is_empty() {
                    r.push_str(&format!(
                        "; blocked (carried to the next run): {}",
                        summary.stages_blocked.join(", ")
                    ));
                }
                r
            })
        });
        run.status = if reason.is_some() {
            SyncRunStatus::Failed
        } else {
            SyncRunStatus::Done
        };
        run.failure_reason = reason.clone();
        run.not_before = None;
        run.finished_at = Some(now);
        run.updated_at = now;
        run.summary = Some(serde_json::to_value(&*summary).unwrap_or_default());
        self.store.save_sync_run(run).await?;
        self.progress.event(&ProgressEvent::Finished {
            run_id: run.id,
            status: run.status.as_str().to_owned(),
        });
        Ok(match reason {
            Some(reason) => RunOutcome::Failed {
                reason,
                summary: Box::new(summary.clone()),
            },
            None => RunOutcome::Done {
                summary: Box::new(summary.clone()),
            },
        })
    }
}

/// Whether waking at `not_before` is for one of `buckets` (a bucket awaited that reopens by
/// then). With the exhausted buckets, this says the wait is for a primary window to reset;
/// pacing that ends sooner does not make it one — some stage can run after it.
fn wakes_for(
    waiting_on: &[String],
    buckets: &HashMap<String, Timestamp>,
    not_before: Timestamp,
) -> bool {
    waiting_on
        .iter()
        .any(|b| buckets.get(b).is_some_and(|reopens| *reopens <= not_before))
}

/// A stage's state from its stage-level checkpoint.
pub fn state_of(cp: Option<&Checkpoint>) -> StageState {
    let Some(cp) = cp else {
        return StageState::Pending;
    };
    match cp.status {
        CheckpointStatus::Pending => StageState::Pending,
        CheckpointStatus::Running => StageState::Running,
        CheckpointStatus::Done => StageState::Done,
        CheckpointStatus::Deferred => StageState::Deferred { until: None },
        CheckpointStatus::Blocked => {
            let detail = cp.detail.clone().unwrap_or_default();
            if let Some(reason) = detail.strip_prefix(FAILED) {
                StageState::Failed {
                    reason: reason.to_owned(),
                }
            } else {
                StageState::Blocked {
                    by: detail
                        .strip_prefix(BLOCKED_BY)
                        .unwrap_or(&detail)
                        .to_owned(),
                }
            }
        }
    }
}
