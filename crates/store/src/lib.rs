//! headroom-store: where every fact headroom collects is kept.
//!
//! Owns the schema (one logical schema, migrations for SQLite and PostgreSQL under
//! `migrations/`), the queries behind the [`Store`] trait — implemented by [`SqliteStore`] and
//! [`PgStore`], two sibling modules with the same behaviour — and the governor's PostgreSQL
//! state backend ([`SharedQuotaState`]), which lets several processes share one identity's quota.
//!
//! Rules it keeps:
//! - Tokens are never stored: a credential is (host, fingerprint, owner).
//! - Every write that matters is idempotent (`INSERT … ON CONFLICT`).
//! - A page of rows and the checkpoint cursor after it commit in one transaction
//!   ([`Store::write_page`], or [`Store::begin`] and a [`StoreTx`]).
//! - Instants are stored as epoch milliseconds in `…_at_ms` columns, raw provider JSON beside
//!   the typed columns (TEXT in SQLite; JSONB in PostgreSQL, JSON for push events).
//!
//! It must not read the clock (instants come in as arguments), talk to a provider, or depend
//! on any headroom crate but headroom-core. Every error it returns is redacted.

mod backend;
pub mod bulk;
mod credentials;
mod db;
mod error;
pub mod feed_report;
pub mod feed_state;
pub mod metrics;
mod model;
pub mod postgres;
mod push;
pub mod quota;
pub mod quota_history;
pub mod read_only;
pub mod records;
pub mod scrub;
pub mod sqlite;
mod sync;
mod usage;

use std::sync::Arc;

use async_trait::async_trait;
use headroom_core::clock::Timestamp;
use headroom_core::governor::{ConfigError, GovernorConfig, QuotaState};

pub use crate::error::{Result, StoreError};
pub use crate::model::{
    ANONYMOUS_FINGERPRINT, ActorRef, Backend, Checkpoint, CheckpointStatus, CheckpointUpdate,
    Credential, CredentialSeen, EventOrigin, FeedEntity, NewSyncRun, ObservationKind, PageWritten,
    PushEventWrite, QuarantineRow, QuarantinedEvent, RateLimitObservation, RepositoryRef,
    StoredEtag, StoredObservation, StoredPushEvent, SubjectKind, SyncRun, SyncRunStatus,
    UsageRecord, UsageTotal, Watermark, provider_name, subject_label,
};
pub use crate::postgres::{IDLE_IN_TRANSACTION_TIMEOUT, PgStore};
pub use crate::quota::{ProcessMark, SharedGovernorOptions, SharedQuotaState};
pub use crate::quota_history::{QuotaHistory, QuotaReading, QuotaRecorder, open_quota_history};
pub use crate::records::{
    GitlabDeployment, GitlabFamily, GitlabFeatureFlag, GitlabGroup, GitlabIssue, GitlabJob,
    GitlabMergeRequest, GitlabMergeRequestApproval, GitlabMergeRequestCommit, GitlabMilestone,
    GitlabNote, GitlabPipeline, GitlabProject, GitlabRelease, GitlabWatermark, Record, TABLES,
};
pub use crate::sqlite::SqliteStore;

/// The rows of the Jira sync's tables (`jira_*`), each a [`Record`] through `From`.
pub mod jira {
    pub use crate::records::jira::*;
}

/// The rows of the Linear sync's tables (`linear_*`), each a [`Record`] through `From`.
pub mod linear {
    pub use crate::records::linear::*;
}

/// The rows of the LaunchDarkly sync's tables (`ld_*`), each a [`Record`] through `From`.
pub mod launchdarkly {
    pub use crate::records::launchdarkly::*;
}
pub use crate::sync::binding::{BindingChange, CredentialBinding, CredentialUsed};

/// Opens the store named by `target` and brings its schema up to date.
///
/// `postgres://…` or `postgresql://…` connects to PostgreSQL; `sqlite://PATH`, `sqlite:PATH`
/// or a plain path opens an SQLite file, creating it if missing (WAL, a busy timeout, foreign
/// keys on).
pub async fn open(target: &str) -> Result<Arc<dyn Store>> {
    if target.starts_with("postgres://") || target.starts_with("postgresql://") {
        Ok(Arc::new(PgStore::connect(target).await?))
    } else {
        Ok(Arc::new(SqliteStore::open(target).await?))
    }
}

/// What headroom reads, on either backend: every query that leaves the database as it was.
/// A reader that must never write (the HTTP server, `headroom serve`) holds only this half.
#[async_trait]
pub trait StoreRead: Send + Sync + std::fmt::Debug {
    /// Which database this is.
    fn backend(&self) -> Backend;

    /// Closes the connections.
    async fn close(&self);

    /// The tables of the schema, sorted.
    async fn table_names(&self) -> Result<Vec<String>>;

    /// Rows in one table of [`TABLES`].
    async fn count_rows(&self, table: &str) -> Result<u64>;

    /// One credential by host and fingerprint.
    async fn credential(&self, host: &str, fingerprint: &str) -> Result<Option<Credential>>;

    /// The credentials of one owner on one host, oldest first.
    async fn credentials_of(
        &self,
        host: &str,
        kind: SubjectKind,
        owner: &str,
    ) -> Result<Vec<Credential>>;

    /// How many stored credentials share that owner's quota on that host.
    async fn count_credentials_sharing(
        &self,
        host: &str,
        kind: SubjectKind,
        owner: &str,
    ) -> Result<u64>;

    /// The stored validator for a URL, per credential.
    async fn etag(&self, credential_fingerprint: &str, url: &str) -> Result<Option<StoredEtag>>;

    /// Usage of one identity over windows starting in `[since, until)`, per route family and
    /// dimension.
    async fn usage_totals(
        &self,
        key: &headroom_core::QuotaKey,
        since: Timestamp,
        until: Timestamp,
    ) -> Result<Vec<UsageTotal>>;

    /// The origin's refusals of `key` since `since`, any process's, oldest first, for
    /// cooldown gating; with how many stored rows were skipped because they no longer parse.
    async fn recent_refusals(
        &self,
        key: &headroom_core::QuotaKey,
        since: Timestamp,
    ) -> Result<(Vec<headroom_core::cooldown::Refusal>, usize)>;

    /// Observations on `host` since `since`, newest first, at most `limit`.
    async fn recent_rate_limit_observations(
        &self,
        host: &str,
        since: Timestamp,
        limit: u32,
    ) -> Result<Vec<StoredObservation>>;

    /// One run.
    async fn sync_run(&self, id: i64) -> Result<Option<SyncRun>>;

    /// Runs a worker should pick up at `now`: pending ones, hibernating ones whose
    /// `not_before` has come, and running ones whose claim lapsed or whose holder provably
    /// no longer runs ([`ProcessMark`]); earliest first.
    async fn due_sync_runs(&self, now: Timestamp, limit: u32) -> Result<Vec<SyncRun>>;

    /// The oldest unfinished run (pending, running or hibernating) of `kind` and `target`
    /// for `key`, if any.
    async fn unfinished_sync_run(
        &self,
        kind: &str,
        target: &str,
        key: &headroom_core::QuotaKey,
    ) -> Result<Option<SyncRun>>;

    /// Every checkpoint of a run, by stage then scope.
    async fn checkpoints(&self, sync_run_id: i64) -> Result<Vec<Checkpoint>>;

    /// One checkpoint.
    async fn checkpoint(
        &self,
        sync_run_id: i64,
        stage: &str,
        scope: &str,
    ) -> Result<Option<Checkpoint>>;

    /// The surrogate id of an organization by login.
    async fn organization_id(&self, login: &str) -> Result<Option<i64>>;

    /// A repository's watermark.
    async fn watermark(
        &self,
        repository_github_id: i64,
        watermark: Watermark,
    ) -> Result<Option<Timestamp>>;

    /// When a GitLab project's `family` was last collected from (the instant its finished
    /// collection started), or `None` when it never was.
    async fn gitlab_watermark(
        &self,
        instance: &str,
        project_id: i64,
        family: GitlabFamily,
    ) -> Result<Option<Timestamp>>;

    /// When a Jira site's `scope` (a project key, or a run's JQL) was last collected from, or
    /// `None` when it never was.
    async fn jira_watermark(&self, site: &str, scope: &str) -> Result<Option<Timestamp>>;

    /// When a Linear workspace's `family` (`issues`, `issues:TEAM_ID`, …) was last collected
    /// from, or `None` when it never was.
    async fn linear_watermark(&self, workspace: &str, family: &str) -> Result<Option<Timestamp>>;

    /// The newest stored audit-log entry's `date` (epoch milliseconds) of a LaunchDarkly
    /// `account`, or `None` when none is stored: where the next run's `after` starts.
    async fn ld_audit_watermark(&self, account: &str) -> Result<Option<i64>>;

    /// The commits of a repository's pull requests (as organization sync stored them) that
    /// have no `commit_files` rows yet, sorted: the work left for the commit-files stage.
    async fn commit_shas_without_files(&self, repository_github_id: i64) -> Result<Vec<String>>;

    /// One stored push event by GitHub's event id.
    async fn push_event(&self, github_event_id: &str) -> Result<Option<StoredPushEvent>>;

    /// An actor by GitHub id.
    async fn actor(&self, github_id: i64) -> Result<Option<FeedEntity>>;

    /// A repository by GitHub id.
    async fn repository(&self, github_id: i64) -> Result<Option<FeedEntity>>;

    /// The counters `/metrics` publishes (see [`metrics::StoreTotals`]).
    async fn store_totals(&self) -> Result<metrics::StoreTotals>;
}

/// Everything headroom writes, on either backend (and, through [`StoreRead`], reads).
#[async_trait]
pub trait Store: StoreRead {
    /// The governor state that fits this store: in memory for SQLite (one process), shared
    /// through the database for PostgreSQL (several processes). Call it once per process and
    /// share the result: two in-memory states do not see each other.
    fn quota_state(
        &self,
        config: GovernorConfig,
        options: SharedGovernorOptions,
    ) -> std::result::Result<Arc<dyn QuotaState>, ConfigError>;

    /// Records that a credential was seen, with its owner; returns the stored row.
    async fn upsert_credential(&self, seen: &CredentialSeen) -> Result<Credential>;

    /// Stores (or replaces) a validator.
    async fn put_etag(&self, etag: &StoredEtag) -> Result<()>;

    /// Adds round trips to the window they fall in.
    async fn record_usage(&self, record: &UsageRecord) -> Result<()>;

    /// Stores a normalized rate-limit observation; returns its id.
    async fn record_rate_limit_observation(
        &self,
        observation: &RateLimitObservation,
    ) -> Result<i64>;

    /// Deletes the rate-limit observations made before `before` (the retention setting);
    /// returns how many.
    async fn prune_rate_limit_observations(&self, before: Timestamp) -> Result<u64>;

    /// Creates a pending run.
    async fn create_sync_run(&self, run: &NewSyncRun) -> Result<SyncRun>;

    /// Writes a run's mutable fields (status, not_before, deferral counters, failure reason,
    /// summary, started/finished, updated). Fails with [`StoreError::NotFound`] for an
    /// unknown id.
    async fn save_sync_run(&self, run: &SyncRun) -> Result<()>;

    /// Claims a run for a worker until `until`: succeeds when the run is unfinished and
    /// unclaimed, already held by `holder` (a renewal), its claim lapsed (its worker died), or
    /// its holder is a [`ProcessMark`] of a process of this machine that no longer runs.
    async fn claim_sync_run(
        &self,
        id: i64,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<bool>;

    /// Gives a claim back (only the holder's).
    async fn release_sync_run(&self, id: i64, holder: &str) -> Result<()>;

    /// Changes which credential run `id` is bound to, if the run still stands where `change`
    /// expects (unbound for an adoption, bound to its `from` for a rebind). Returns whether
    /// it changed.
    async fn bind_sync_run_credential(&self, id: i64, change: &BindingChange) -> Result<bool>;

    /// Writes a checkpoint on its own (status changes that carry no rows).
    async fn set_checkpoint(&self, update: &CheckpointUpdate) -> Result<()>;

    /// Quarantines a malformed envelope: one row per distinct payload; a repeat increments
    /// its occurrence count and keeps the first classification. Returns the row.
    async fn quarantine_event(&self, event: &QuarantinedEvent) -> Result<QuarantineRow>;

    /// A writer for archive imports: commits per batch or per window of batches (see
    /// [`bulk::BulkOptions`]), the same results as
    /// [`Store::quarantine_event`] and [`StoreTx::write_push_events`] (see [`bulk`]).
    async fn bulk_writer(
        &self,
        options: bulk::BulkOptions,
    ) -> Result<Box<dyn bulk::BulkWriter + '_>>;

    /// Opens a transaction: upserts and the checkpoint commit together or not at all.
    async fn begin(&self) -> Result<Box<dyn StoreTx>>;

    /// Reads every stored diagnostic ([`scrub::DIAGNOSTIC_COLUMNS`]) and, with `apply`, masks
    /// the credentials that rows written before a redaction pattern existed still hold.
    async fn scrub_diagnostics(&self, apply: bool) -> Result<scrub::ScrubReport>;

    /// Upserts a page of rows and writes the checkpoint that follows it, in one transaction.
    async fn write_page(
        &self,
        records: &[Record],
        checkpoint: &CheckpointUpdate,
    ) -> Result<PageWritten> {
        let mut tx = self.begin().await?;
        tx.upsert_all(records).await?;
        tx.set_checkpoint(checkpoint).await?;
        tx.commit().await?;
        Ok(PageWritten {
            rows: records.len() as u64,
        })
    }
}

/// An open transaction. Dropping it without [`StoreTx::commit`] rolls it back.
#[async_trait]
pub trait StoreTx: Send {
    /// Inserts or updates one row by its identity; returns the row's surrogate id where the
    /// table has one.
    async fn upsert(&mut self, record: &Record) -> Result<Option<i64>>;

    /// Inserts or updates `records` by their identities, with the result of
    /// [`StoreTx::upsert`] on each in order, in as few statements as their shapes allow.
    async fn upsert_all(&mut self, records: &[Record]) -> Result<()>;

    /// Writes a checkpoint inside this transaction.
    async fn set_checkpoint(&mut self, update: &CheckpointUpdate) -> Result<()>;

    /// Moves a repository's watermark (never backwards).
    async fn set_watermark(
        &mut self,
        repository_github_id: i64,
        watermark: Watermark,
        at: Timestamp,
    ) -> Result<()>;

    /// Stores one validated PushEvent inside its own savepoint: refreshes the actor's and
    /// repository's identity (creating them as enrichment backlog when new), inserts the
    /// event unless its GitHub id is already stored, and registers entity activity only when
    /// the insert returned a row. Returns whether the event was new. On an error the
    /// savepoint is rolled back and the transaction stays usable for the next event.
    async fn write_push_event(&mut self, event: &PushEventWrite) -> Result<bool>;

    /// [`StoreTx::write_push_event`] for a whole page at once: a few multi-row statements
    /// under one savepoint (the fast path, for imports and full feed pages). If any of it
    /// fails, the page's savepoint is rolled back and the events are written one by one, so
    /// the result — one entry per event, in order: new, duplicate, or that event's error — is
    /// the same as writing them singly. The outer error is for failures of the transaction
    /// itself.
    async fn write_push_events(&mut self, events: &[PushEventWrite]) -> Result<Vec<Result<bool>>>;

    /// Commits.
    async fn commit(self: Box<Self>) -> Result<()>;

    /// Rolls back.
    async fn rollback(self: Box<Self>) -> Result<()>;
}
