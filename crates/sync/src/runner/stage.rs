//! The stage contract: the [`Stage`] trait, how a stage stops ([`StageError`]), and the
//! [`StageCtx`] it works in (sending through the exit door with the run's credential, within
//! the operators' caps per window, tallying what was spent, and committing pages with their
//! cursors).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use headroom_core::QuotaKey;
use headroom_core::budget::{self, SyncCaps, Window};
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::WaitReason;
use headroom_core::signal::date_skew;
use headroom_http::{ApiError, ApiRequest, ApiResponse, Client, Credential, RateLimitReason};
use headroom_store::{
    Checkpoint, CheckpointStatus, CheckpointUpdate, Record, Store, StoreError, SyncRun, Watermark,
};

use super::slots::{SlotPool, in_scope, park, release_parked, turn, unpark};
use super::tally::{answered, tally_response};
use super::{ProgressEvent, ProgressSink, lock};
use crate::calibration;
use crate::graph::StageDecl;
use crate::summary::{RefusedField, RunSummary};

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
    /// The provider refused the run's credential (401: an OAuth token expired, a token
    /// revoked). Nothing about the stage is wrong: it is put aside, the run hibernates saying
    /// so, and a resume with a new token of the same owner goes on where it stopped.
    #[error("{0}")]
    CredentialRefused(String),
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
            // The governor's state lives in the database: when it cannot be reached (a restart,
            // a dropped connection), nothing was sent and nothing about the stage is wrong.
            // The run stops where it is, as on any store failure, and a resume continues it.
            ApiError::Governor(e) => StageError::Store(StoreError::Database(e.to_string())),
            e @ ApiError::Forbidden { status: 401, .. } => {
                StageError::CredentialRefused(e.to_string())
            }
            other if other.is_transient() => StageError::Transient(other.to_string()),
            other => StageError::Permanent(other.to_string()),
        }
    }
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
    pub(super) run: &'a SyncRun,
    pub(super) store: &'a dyn Store,
    pub(super) client: &'a Client,
    pub(super) credential: Option<&'a Credential>,
    pub(super) clock: &'a TokioClock,
    pub(super) decl: &'a StageDecl,
    pub(super) repository_source: Option<&'static str>,
    pub(super) summary: &'a Mutex<RunSummary>,
    pub(super) progress: &'a dyn ProgressSink,
    pub(super) repositories: Mutex<Option<Vec<RepoScope>>>,
    pub(super) holder: &'a str,
    pub(super) claim: SignedDuration,
    /// The run's quota identity.
    pub(super) key: &'a QuotaKey,
    /// Operators' caps per window.
    pub(super) caps: &'a SyncCaps,
    /// Requests sent per family in its window (see `DriveCommon::family_windows`).
    pub(super) family_windows: &'a Mutex<HashMap<String, (Timestamp, u64)>>,
    /// The run's in-flight slots (see `DriveCommon::slots`).
    pub(super) slots: &'a Arc<SlotPool>,
    /// Told when this stage, the repository source, completes its listing.
    pub(super) listed: &'a tokio::sync::Notify,
    /// Pacing waits up to this long are taken where the request is (`RunnerConfig`).
    pub(super) inline_wait: SignedDuration,
    /// Repositories a per-repository stage works on at once.
    pub(super) scope_concurrency: usize,
    /// Another stage waits for this one to be done: its requests go first for a slot.
    pub(super) awaited: bool,
}

impl fmt::Debug for StageCtx<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StageCtx")
            .field("run", &self.run.id)
            .field("stage", &self.decl.name)
            .finish_non_exhaustive()
    }
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

    /// The API host the run collects from, as its quota key names it (`gitlab.com`, a
    /// self-managed host): a provider whose ids are unique only per instance keys rows by it.
    pub fn api_host(&self) -> &str {
        self.client.policy().host()
    }

    /// Now, by the run's clock.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The clock.
    pub fn clock(&self) -> &TokioClock {
        self.clock
    }

    /// Sends through the exit door with the run's credential, holding one of the run's
    /// in-flight slots, and counts what came back. A short wait that is only pacing (the
    /// identity's in-flight ceiling, held by other processes too; the tail of a
    /// points-per-minute limiter) is taken here, so concurrent repositories queue rather than
    /// stop their stage; any other wait is returned.
    pub async fn send(&self, request: ApiRequest) -> Result<ApiResponse, ApiError> {
        loop {
            let result = {
                let slot = match unpark() {
                    Some(parked) => Some(parked),
                    None => Some(
                        self.slots
                            .acquire(self.decl.bucket, turn(self.awaited))
                            .await,
                    ),
                };
                let result = self.send_once(request.clone()).await;
                // Within a scope the slot stays taken until the answer is stored; outside
                // one it goes back now.
                park(slot);
                result
            };
            match &result {
                Err(ApiError::RateLimited { until, reason, .. })
                    if reason.wait_reason().is_some_and(|w| {
                        matches!(
                            w,
                            WaitReason::InFlightCeiling { .. }
                                | WaitReason::LocalPoints { .. }
                                | WaitReason::WindowStart { .. }
                        )
                    }) && until.duration_since(self.now()) <= self.inline_wait =>
                {
                    let until = *until;
                    // Nothing was answered: no slot is held through the wait.
                    release_parked();
                    lock(self.summary).paced_ms +=
                        i64::try_from(until.duration_since(self.now()).as_millis().max(0))
                            .unwrap_or(0);
                    self.clock.sleep_until(until).await;
                }
                _ => return result,
            }
        }
    }

    /// Runs `work` for each of `repositories`, up to the run's in-flight ceiling of them at
    /// once, each from its own checkpoint (see [`StageCtx::for_each_concurrently`]).
    pub async fn for_each_repository<'s, F, Fut>(
        &'s self,
        repositories: Vec<RepoScope>,
        work: F,
    ) -> Result<(), StageError>
    where
        F: Fn(RepoScope) -> Fut,
        Fut: Future<Output = Result<(), StageError>> + 's,
    {
        self.for_each_chain(repositories, work).await
    }

    /// Runs `work` for each of `scopes`, each a chain of pages of its own (a project's flags,
    /// an environment's segments), up to the run's in-flight ceiling of them at once, each
    /// from its own checkpoint. Each is a scope of work, as a repository is: its next page is
    /// asked for once its last one is stored.
    pub async fn for_each_chain<'s, T, F, Fut>(
        &'s self,
        scopes: Vec<T>,
        work: F,
    ) -> Result<(), StageError>
    where
        F: Fn(T) -> Fut,
        Fut: Future<Output = Result<(), StageError>> + 's,
    {
        self.for_each_concurrently(scopes, self.scope_concurrency, |scope| {
            in_scope(work(scope))
        })
        .await
    }

    /// Runs `work` for each of `items` side by side, up to half the run's slots at once: the
    /// requests of one repository that follow no cursor (a commit's files, a run's jobs),
    /// each of which stores its own answer. Each item is a scope of work of its own: its slot
    /// is held from its request until its answer is stored, as a repository's is.
    pub async fn for_each_request<'s, T, F, Fut>(
        &'s self,
        items: Vec<T>,
        work: F,
    ) -> Result<(), StageError>
    where
        F: Fn(T) -> Fut,
        Fut: Future<Output = Result<(), StageError>> + 's,
    {
        // The enclosing scope's answers are stored by now; its slot must not be held while
        // its items wait for theirs.
        release_parked();
        // Half the slots per repository: the slots are taken in order of asking, and a
        // stage's independent requests queued ten deep per repository would stand ahead of
        // the other stages' cursor chains, whose pages must follow one another (measured
        // with org_makespan's latency case: 45.9 s at ten, 42.7–45.5 s at four or five).
        let at_once = self.scope_concurrency.div_ceil(2);
        self.for_each_concurrently(items, at_once, |item| in_scope(work(item)))
            .await
    }

    /// Runs `work` for each of `items`, up to the run's in-flight ceiling of them at once.
    /// After an item stops on an error no other is started; those already started go on
    /// until they finish or meet an error of their own (a quota wait meets them all at their
    /// next request). Returns the first error, a store failure before any other.
    async fn for_each_concurrently<'s, T, F, Fut>(
        &'s self,
        items: Vec<T>,
        at_once: usize,
        work: F,
    ) -> Result<(), StageError>
    where
        F: Fn(T) -> Fut,
        Fut: Future<Output = Result<(), StageError>> + 's,
    {
        let mut waiting = items.into_iter();
        let mut started = FuturesUnordered::new();
        let mut failure: Option<StageError> = None;
        loop {
            while failure.is_none() && started.len() < at_once.max(1) {
                let Some(item) = waiting.next() else { break };
                started.push(work(item));
            }
            match started.next().await {
                None => break,
                Some(Ok(())) => {}
                Some(Err(e)) => {
                    let store = matches!(e, StageError::Store(_));
                    if failure.is_none()
                        || (store && !matches!(failure, Some(StageError::Store(_))))
                    {
                        failure = Some(e);
                    }
                }
            }
        }
        failure.map_or(Ok(()), Err)
    }

    /// One attempt at the exit door, within the operators' caps.
    async fn send_once(&self, request: ApiRequest) -> Result<ApiResponse, ApiError> {
        let bucket = request.bucket.as_str().to_owned();
        let estimated = u64::from(request.estimated_cost);
        let (family, dimension) = (request.route_family, request.dimension);
        let window = match self.within_caps(&request).await {
            Ok(window) => window,
            Err(capped) => {
                let mut s = lock(self.summary);
                s.buckets.entry(bucket).or_default().waits += 1;
                return Err(capped);
            }
        };
        let request = request.credential(self.credential).sync_run(self.run.id);
        let result = self.client.send(request).await;
        if result.is_ok() {
            self.count_family(family.name, window);
        }
        let received_at = self.now();
        let mut s = lock(self.summary);
        match &result {
            Ok(response) => {
                if let Some(skew) = date_skew(&response.headers, received_at) {
                    let ms = i64::try_from(skew.as_millis()).unwrap_or(i64::MAX);
                    s.clock_skew.get_or_insert_default().observe(ms);
                }
                let bucket = response
                    .signal
                    .resource
                    .as_ref()
                    .map_or(bucket, |b| b.as_str().to_owned());
                // GitHub does not charge an authorized 304 (an unauthenticated one it does).
                let free = response.not_modified() && self.credential.is_some();
                let points = tally_response(
                    &mut s,
                    &bucket,
                    &response.signal,
                    if free { 0 } else { estimated },
                    response.attempts,
                    free,
                );
                let requests = u64::from(response.attempts.max(1));
                let stage = s.stages.entry(self.decl.name.to_owned()).or_default();
                stage.requests += requests;
                let actuals = s.actuals.entry(self.decl.name.to_owned()).or_default();
                calibration::tally(actuals, family.name, dimension, requests, points);
            }
            Err(e) if answered(e) > 0 => {
                // The origin answered with a refusal (a 403, a 404, a kanban board's 400):
                // the request was sent and spent, so the run's tally says so, as the
                // provider's own count would.
                if matches!(e, ApiError::Forbidden { status: 403, .. }) {
                    s.responses_403 += 1;
                }
                let requests = answered(e);
                s.buckets.entry(bucket).or_default().requests += requests;
                let stage = s.stages.entry(self.decl.name.to_owned()).or_default();
                stage.requests += requests;
                let actuals = s.actuals.entry(self.decl.name.to_owned()).or_default();
                calibration::tally(actuals, family.name, dimension, requests, requests);
            }
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

    /// `Err` — nothing to send — while an operator's cap holds the request back (see
    /// `headroom_core::budget`), else the reset of the window the request counts in. Without
    /// caps, or without a reading of the bucket (the governor failing included), nothing is
    /// held back.
    async fn within_caps(&self, request: &ApiRequest) -> Result<Option<Timestamp>, ApiError> {
        if self.caps.is_empty() {
            return Ok(None);
        }
        let Ok(snapshot) = self.client.governor().snapshot(self.key).await else {
            return Ok(None);
        };
        let window = snapshot
            .buckets
            .iter()
            .find(|b| b.state.bucket == request.bucket)
            .and_then(|b| {
                Some(Window {
                    limit: b.state.limit?,
                    remaining: b.state.remaining?,
                    reset_at: b.state.reset_at?,
                })
            });
        let family = request.route_family.name;
        let sent = match (lock(self.family_windows).get(family), window) {
            (Some((reset, n)), Some(w)) if *reset == w.reset_at => *n,
            _ => 0,
        };
        match budget::check(
            self.caps,
            request.bucket.as_str(),
            family,
            u64::from(request.estimated_cost),
            window,
            sent,
            self.clock.now(),
        ) {
            None => Ok(window.map(|w| w.reset_at)),
            Some((until, reason)) => Err(ApiError::RateLimited {
                until,
                bucket: request.bucket.clone(),
                dimension: request.dimension,
                request_id: None,
                reason: RateLimitReason::Cap(reason),
            }),
        }
    }

    /// Counts one request of `family` in the window that resets at `window`.
    fn count_family(&self, family: &str, window: Option<Timestamp>) {
        let Some(reset) = window else {
            return;
        };
        if !self.caps.families.contains_key(family) {
            return;
        }
        let mut windows = lock(self.family_windows);
        let entry = windows.entry(family.to_owned()).or_insert((reset, 0));
        if entry.0 != reset {
            *entry = (reset, 0);
        }
        entry.1 += 1;
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

    /// The checkpoint of one scope of another stage of this run, which this one depends on:
    /// what a first stage learned (a site's time zone, a workspace's id) read from its cursor.
    pub async fn checkpoint_of(
        &self,
        stage: &str,
        scope: &str,
    ) -> Result<Option<Checkpoint>, StoreError> {
        self.store.checkpoint(self.run.id, stage, scope).await
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
        let watermark = watermark.filter(|_| finished);
        self.commit_rows(records, watermark, Some(&update)).await?;
        release_parked();
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

    /// Commits rows shared with other stages outside any checkpoint (the organization, which
    /// both stage `org` and the repository listing store).
    pub async fn write_shared_rows(&self, records: &[Record]) -> Result<(), StoreError> {
        self.commit_rows(records, None, None).await
    }

    /// Upserts `records`, sets the watermark and the checkpoint, in one transaction. Two
    /// stages may insert the same new row at once; on PostgreSQL the later insert can then
    /// break a unique index other than the one its upsert names (an organization's id beside
    /// its login). Once the first has committed the same transaction finds the row and
    /// updates it, so a conflict is tried once more; a second one is a real conflict.
    async fn commit_rows(
        &self,
        records: &[Record],
        watermark: Option<(i64, Watermark, Timestamp)>,
        checkpoint: Option<&CheckpointUpdate>,
    ) -> Result<(), StoreError> {
        let mut retried = false;
        loop {
            let attempt = async {
                let mut tx = self.store.begin().await?;
                tx.upsert_all(records).await?;
                if let Some((repo, mark, at)) = watermark {
                    tx.set_watermark(repo, mark, at).await?;
                }
                if let Some(update) = checkpoint {
                    tx.set_checkpoint(update).await?;
                }
                tx.commit().await
            };
            match attempt.await {
                Err(StoreError::Conflict(_)) if !retried => retried = true,
                result => return result,
            }
        }
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
        let listing_complete = next_cursor == crate::graph::LISTED_CURSOR;
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
        tx.upsert_all(records).await?;
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
        release_parked();
        if listing_complete {
            self.listed.notify_one();
        }
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
            .await?;
        release_parked();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_core::governor::GovernorError;

    #[test]
    fn a_governor_database_failure_stops_the_run_instead_of_failing_the_stage() {
        let e = StageError::from(ApiError::Governor(GovernorError::Backend(
            "connection reset".to_owned(),
        )));
        assert!(matches!(e, StageError::Store(_)), "{e:?}");
        let e = StageError::from(ApiError::Decode("not JSON".to_owned()));
        assert!(matches!(e, StageError::Permanent(_)), "{e:?}");
    }
}
