//! Wires [`Store`] and [`StoreTx`] to the aggregate modules: one implementation for both
//! backends, each method a call of an ordinary function over the store's pools or the
//! transaction's connection. SQLite and PostgreSQL accept the same `$N` placeholders,
//! `INSERT … ON CONFLICT … DO UPDATE`, `RETURNING` and `excluded.`, and sqlx encodes JSON as
//! TEXT or JSONB by backend, so the SQL is written once in those modules. What differs by
//! backend ([`Engine`]: the catalog query, the bulk writer, the governor state; opening and
//! migrations) lives in `sqlite.rs` and `postgres.rs`.

use std::sync::Arc;

use async_trait::async_trait;
use headroom_core::QuotaKey;
use headroom_core::clock::Timestamp;
use headroom_core::governor::{ConfigError, GovernorConfig, QuotaState};
use headroom_core::redact::redact;

use crate::bulk::{BulkOptions, BulkWriter};
use crate::db::{DbTx, OnPool, ReadRow, on_each_pool};
use crate::error::{Result, StoreError};
use crate::model::{
    Backend, Checkpoint, CheckpointUpdate, Credential, CredentialSeen, FeedEntity, NewSyncRun,
    PushEventWrite, QuarantineRow, QuarantinedEvent, RateLimitObservation, StoredEtag,
    StoredObservation, StoredPushEvent, SubjectKind, SyncRun, UsageRecord, UsageTotal, Watermark,
};
use crate::push::Entity;
use crate::records::{GitlabFamily, Record, TABLES, queries};
use crate::{SharedGovernorOptions, Store, StoreRead, StoreTx, credentials, push, sync, usage};

/// What one backend does its own way.
#[async_trait]
pub(crate) trait Engine: OnPool + Send + Sync + std::fmt::Debug {
    /// Which backend.
    const BACKEND: Backend;
    /// The schema's tables, as rows with one `name` column, sorted.
    const TABLES_SQL: &'static str;

    /// The governor state that fits this backend.
    fn quota_state(
        &self,
        config: GovernorConfig,
        options: SharedGovernorOptions,
    ) -> std::result::Result<Arc<dyn QuotaState>, ConfigError>;

    /// This backend's bulk writer.
    async fn bulk(&self, options: BulkOptions) -> Result<Box<dyn BulkWriter + '_>>;
}

#[async_trait]
impl<S: Engine> StoreRead for S {
    fn backend(&self) -> Backend {
        S::BACKEND
    }

    async fn close(&self) {
        on_each_pool!(self.pools(), |pool| pool.close().await)
    }

    async fn table_names(&self) -> Result<Vec<String>> {
        on_each_pool!(self.pools(), |pool| {
            let rows = sqlx::query(S::TABLES_SQL).fetch_all(pool).await?;
            rows.iter().map(|r| r.text("name")).collect()
        })
    }

    async fn count_rows(&self, table: &str) -> Result<u64> {
        let Some(table) = TABLES.iter().find(|t| **t == table) else {
            return Err(StoreError::Invalid {
                field: "table",
                problem: format!("{:?} is not a table of the schema", redact(table)),
            });
        };
        let sql = format!("SELECT COUNT(*) AS n FROM {table}");
        on_each_pool!(self.pools(), |pool| {
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .fetch_one(pool)
                .await?;
            row.uint("n")
        })
    }

    async fn credential(&self, host: &str, fingerprint: &str) -> Result<Option<Credential>> {
        credentials::credential(self.pools(), host, fingerprint).await
    }

    async fn credentials_of(
        &self,
        host: &str,
        kind: SubjectKind,
        owner: &str,
    ) -> Result<Vec<Credential>> {
        credentials::credentials_of(self.pools(), host, kind, owner).await
    }

    async fn count_credentials_sharing(
        &self,
        host: &str,
        kind: SubjectKind,
        owner: &str,
    ) -> Result<u64> {
        credentials::count_credentials_sharing(self.pools(), host, kind, owner).await
    }

    async fn etag(&self, credential_fingerprint: &str, url: &str) -> Result<Option<StoredEtag>> {
        credentials::etag(self.pools(), credential_fingerprint, url).await
    }

    async fn usage_totals(
        &self,
        key: &QuotaKey,
        since: Timestamp,
        until: Timestamp,
    ) -> Result<Vec<UsageTotal>> {
        usage::usage_totals(self.pools(), key, since, until).await
    }

    async fn recent_refusals(
        &self,
        key: &headroom_core::QuotaKey,
        since: Timestamp,
    ) -> Result<(Vec<headroom_core::cooldown::Refusal>, usize)> {
        usage::recent_refusals(self.pools(), key, since).await
    }

    async fn recent_rate_limit_observations(
        &self,
        host: &str,
        since: Timestamp,
        limit: u32,
    ) -> Result<Vec<StoredObservation>> {
        usage::recent_rate_limit_observations(self.pools(), host, since, limit).await
    }

    async fn sync_run(&self, id: i64) -> Result<Option<SyncRun>> {
        sync::sync_run(self.pools(), id).await
    }

    async fn due_sync_runs(&self, now: Timestamp, limit: u32) -> Result<Vec<SyncRun>> {
        sync::due_sync_runs(self.pools(), now, limit).await
    }

    async fn unfinished_sync_run(
        &self,
        kind: &str,
        target: &str,
        key: &headroom_core::QuotaKey,
    ) -> Result<Option<SyncRun>> {
        sync::unfinished_sync_run(self.pools(), kind, target, key).await
    }

    async fn checkpoints(&self, sync_run_id: i64) -> Result<Vec<Checkpoint>> {
        sync::checkpoints(self.pools(), sync_run_id).await
    }

    async fn checkpoint(
        &self,
        sync_run_id: i64,
        stage: &str,
        scope: &str,
    ) -> Result<Option<Checkpoint>> {
        sync::checkpoint(self.pools(), sync_run_id, stage, scope).await
    }

    async fn organization_id(&self, login: &str) -> Result<Option<i64>> {
        queries::organization_id(self.pools(), login).await
    }

    async fn watermark(
        &self,
        repository_github_id: i64,
        watermark: Watermark,
    ) -> Result<Option<Timestamp>> {
        queries::watermark(self.pools(), repository_github_id, watermark).await
    }

    async fn gitlab_watermark(
        &self,
        instance: &str,
        project_id: i64,
        family: GitlabFamily,
    ) -> Result<Option<Timestamp>> {
        queries::gitlab_watermark(self.pools(), instance, project_id, family).await
    }

    async fn jira_watermark(&self, site: &str, scope: &str) -> Result<Option<Timestamp>> {
        queries::keyed_watermark(self.pools(), queries::JIRA_MARKS, site, scope).await
    }

    async fn linear_watermark(&self, workspace: &str, family: &str) -> Result<Option<Timestamp>> {
        queries::keyed_watermark(self.pools(), queries::LINEAR_MARKS, workspace, family).await
    }

    async fn ld_audit_watermark(&self, account: &str) -> Result<Option<i64>> {
        queries::ld_audit_watermark(self.pools(), account).await
    }

    async fn commit_shas_without_files(&self, repository_github_id: i64) -> Result<Vec<String>> {
        queries::commit_shas_without_files(self.pools(), repository_github_id).await
    }

    async fn push_event(&self, github_event_id: &str) -> Result<Option<StoredPushEvent>> {
        push::push_event(self.pools(), github_event_id).await
    }

    async fn actor(&self, github_id: i64) -> Result<Option<FeedEntity>> {
        push::entity(self.pools(), Entity::Actor, github_id).await
    }

    async fn repository(&self, github_id: i64) -> Result<Option<FeedEntity>> {
        push::entity(self.pools(), Entity::Repository, github_id).await
    }

    async fn store_totals(&self) -> Result<crate::metrics::StoreTotals> {
        crate::metrics::store_totals(self.pools()).await
    }
}

#[async_trait]
impl<S: Engine> Store for S {
    fn quota_state(
        &self,
        config: GovernorConfig,
        options: SharedGovernorOptions,
    ) -> std::result::Result<Arc<dyn QuotaState>, ConfigError> {
        Engine::quota_state(self, config, options)
    }

    async fn upsert_credential(&self, seen: &CredentialSeen) -> Result<Credential> {
        credentials::upsert_credential(self.pools(), seen).await
    }

    async fn put_etag(&self, etag: &StoredEtag) -> Result<()> {
        credentials::put_etag(self.pools(), etag).await
    }

    async fn record_usage(&self, record: &UsageRecord) -> Result<()> {
        usage::record_usage(self.pools(), record).await
    }

    async fn record_rate_limit_observation(
        &self,
        observation: &RateLimitObservation,
    ) -> Result<i64> {
        usage::record_rate_limit_observation(self.pools(), observation).await
    }

    async fn prune_rate_limit_observations(&self, before: Timestamp) -> Result<u64> {
        usage::prune_rate_limit_observations(self.pools(), before).await
    }

    async fn create_sync_run(&self, run: &NewSyncRun) -> Result<SyncRun> {
        sync::create_sync_run(self.pools(), run).await
    }

    async fn save_sync_run(&self, run: &SyncRun) -> Result<()> {
        sync::save_sync_run(self.pools(), run).await
    }

    async fn claim_sync_run(
        &self,
        id: i64,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<bool> {
        sync::claim_sync_run(self.pools(), id, holder, now, until).await
    }

    async fn release_sync_run(&self, id: i64, holder: &str) -> Result<()> {
        sync::release_sync_run(self.pools(), id, holder).await
    }

    async fn bind_sync_run_credential(
        &self,
        id: i64,
        change: &crate::BindingChange,
    ) -> Result<bool> {
        sync::binding::bind_sync_run_credential(self.pools(), id, change).await
    }

    async fn set_checkpoint(&self, update: &CheckpointUpdate) -> Result<()> {
        sync::set_checkpoint_alone(self.pools(), update).await
    }

    async fn quarantine_event(&self, event: &QuarantinedEvent) -> Result<QuarantineRow> {
        push::quarantine_event(self.pools(), event).await
    }

    async fn bulk_writer(&self, options: BulkOptions) -> Result<Box<dyn BulkWriter + '_>> {
        self.bulk(options).await
    }

    async fn begin(&self) -> Result<Box<dyn StoreTx>> {
        Ok(Box::new(DbTx::begin(self.pools()).await?))
    }

    async fn scrub_diagnostics(&self, apply: bool) -> Result<crate::scrub::ScrubReport> {
        crate::scrub::scrub(self.pools(), apply).await
    }
}

#[async_trait]
impl StoreTx for DbTx {
    async fn upsert(&mut self, record: &Record) -> Result<Option<i64>> {
        queries::upsert(&mut self.conn(), record).await
    }

    async fn upsert_all(&mut self, records: &[Record]) -> Result<()> {
        queries::upsert_all(&mut self.conn(), records).await
    }

    async fn set_checkpoint(&mut self, update: &CheckpointUpdate) -> Result<()> {
        sync::set_checkpoint(&mut self.conn(), update).await
    }

    async fn set_watermark(
        &mut self,
        repository_github_id: i64,
        watermark: Watermark,
        at: Timestamp,
    ) -> Result<()> {
        queries::set_watermark(&mut self.conn(), repository_github_id, watermark, at).await
    }

    async fn write_push_event(&mut self, event: &PushEventWrite) -> Result<bool> {
        push::write_push_event(&mut self.conn(), event).await
    }

    async fn write_push_events(&mut self, events: &[PushEventWrite]) -> Result<Vec<Result<bool>>> {
        push::write_push_events(&mut self.conn(), events).await
    }

    async fn commit(self: Box<Self>) -> Result<()> {
        (*self).commit().await
    }

    async fn rollback(self: Box<Self>) -> Result<()> {
        (*self).rollback().await
    }
}
