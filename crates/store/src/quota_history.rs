//! What the quota dashboard reads and what every quota-spending process records: the
//! governor's readings per identity and bucket (`quota_readings`), keyset pages of sync runs,
//! one identity's rate-limit observations, and what headroom spent per window and sender
//! (`spend_records`, in `quota_history/spend`).
//!
//! Two traits, like the feed's: [`QuotaHistory`] is the read half (plain `SELECT`s only, so a
//! read endpoint built on it cannot write), [`QuotaRecorder`] the writer half (append a
//! reading, prune past the retention instant). Both backends implement them with the same
//! SQL, each query written once over [`crate::db::Pools`] in `quota_history/readings` and
//! `quota_history/runs`. [`open_quota_history`] opens a store with both halves over one pool.

pub mod marks;
pub(crate) mod provisional;
mod readings;
mod runs;
pub mod spend;

use std::sync::Arc;

use async_trait::async_trait;
use headroom_core::clock::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use crate::db::OnPool;
use crate::error::Result;
use crate::model::{StoredObservation, SyncRun};
use crate::{PgStore, SqliteStore, Store};

/// One process's reading of one identity's bucket, as its governor holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct QuotaReading {
    /// The provider's stored name (`github`).
    pub provider: String,
    /// The API host of the identity.
    pub host: String,
    /// The identity's subject label (a login, `installation:ID`, `ip:ADDR`).
    pub subject: String,
    /// The bucket as the provider names it (`core`, `graphql`, `search` …).
    pub bucket: String,
    /// The window's limit, once the provider stated it.
    pub limit: Option<u64>,
    /// What is left in the window.
    pub remaining: Option<u64>,
    /// What the window has used.
    pub used: Option<u64>,
    /// When the window resets.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub reset_at: Option<Timestamp>,
    /// Requests this process has in flight on the bucket.
    pub in_flight: u64,
    /// Callers of this process waiting on the bucket.
    pub waiting: u64,
    /// Nothing is sent on the bucket before then.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub blocked_until: Option<Timestamp>,
    /// Why the bucket waits, as the governor words it (none when it does not).
    pub last_reason: Option<String>,
    /// The process that saw it (its holder name).
    pub process_id: String,
    /// When it was seen.
    #[schema(value_type = String, format = DateTime)]
    pub observed_at: Timestamp,
}

/// A stored reading.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StoredQuotaReading {
    /// Surrogate key (the order readings were appended in).
    pub id: i64,
    /// What was read.
    #[serde(flatten)]
    pub reading: QuotaReading,
}

/// Where one identity's bucket stands now: its newest reading, with in flight and waiting
/// summed over the processes whose own newest reading is recent enough to count as live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BucketNow {
    /// The newest reading of the bucket, whichever process wrote it.
    pub latest: StoredQuotaReading,
    /// In flight over the live processes.
    pub in_flight: u64,
    /// Waiting over the live processes.
    pub waiting: u64,
    /// Processes that reported on the bucket since the staleness bound.
    pub live_processes: u64,
}

/// One slot of a bucket's downsampled history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HistoryPoint {
    /// The slot's start.
    #[schema(value_type = String, format = DateTime)]
    pub at: Timestamp,
    /// The lowest remaining read in the slot.
    pub remaining_min: Option<u64>,
    /// The highest remaining read in the slot.
    pub remaining_max: Option<u64>,
    /// The largest limit read in the slot.
    pub limit: Option<u64>,
    /// Readings that fell in the slot.
    pub readings: u64,
    /// Readings in the slot that carried a wait reason.
    pub waits: u64,
}

/// A cheap mark of what changed: the newest reading, observation and sync-run update. Two
/// equal marks mean the dashboard's snapshot has nothing new.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityMark {
    /// The newest `quota_readings.id`.
    pub quota_reading: Option<i64>,
    /// The newest `rate_limit_observations.id`.
    pub observation: Option<i64>,
    /// The latest `sync_runs.updated_at_ms`.
    pub sync_run_updated: Option<Timestamp>,
    /// The latest `sync_checkpoints.updated_at_ms`.
    pub checkpoint_updated: Option<Timestamp>,
}

/// One identity and bucket, the key of a history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketKey<'a> {
    /// The API host.
    pub host: &'a str,
    /// The subject label.
    pub subject: &'a str,
    /// The bucket.
    pub bucket: &'a str,
}

/// The dashboard's reads. Nothing here writes, takes a lease or opens a write transaction.
#[async_trait]
pub trait QuotaHistory: Send + Sync + std::fmt::Debug {
    /// Every identity's buckets as they stand, by host, subject and bucket; processes whose
    /// newest reading of a bucket is older than `live_since` count for neither in flight nor
    /// waiting.
    async fn latest_quota_readings(&self, live_since: Timestamp) -> Result<Vec<BucketNow>>;

    /// One bucket's readings since `since`, downsampled into slots of `step` from `since`
    /// (only slots with readings appear), oldest first.
    async fn quota_history(
        &self,
        key: BucketKey<'_>,
        since: Timestamp,
        step: SignedDuration,
    ) -> Result<Vec<HistoryPoint>>;

    /// Sync runs newest first (by id), those before `before_id` when given, at most `limit`.
    async fn sync_runs_page(&self, before_id: Option<i64>, limit: u32) -> Result<Vec<SyncRun>>;

    /// One identity's rate-limit observations since `since`, newest first, at most `limit`.
    async fn observations_of(
        &self,
        host: &str,
        subject: &str,
        since: Timestamp,
        limit: u32,
    ) -> Result<Vec<StoredObservation>>;

    /// What changed last (see [`ActivityMark`]).
    async fn activity_mark(&self) -> Result<ActivityMark>;

    /// One bucket's rate-limit observations in `[since, until]` counted per slot of `step`
    /// (cut as [`QuotaHistory::quota_history`] cuts them) and by who decided the wait (see
    /// [`marks`]); only slots with events, oldest first.
    async fn observation_marks(
        &self,
        key: BucketKey<'_>,
        since: Timestamp,
        until: Timestamp,
        step: SignedDuration,
    ) -> Result<Vec<marks::MarkSlot>>;

    /// What headroom spent per identity, bucket, window and sender, for the windows whose
    /// reset is in `[since, until)` (see [`spend`]).
    async fn spend_totals(
        &self,
        since: Timestamp,
        until: Timestamp,
    ) -> Result<Vec<spend::SpendTotal>>;

    /// Each identity's and bucket's first window with counted spend the store keeps.
    async fn spend_starts(&self) -> Result<Vec<spend::SpendStart>>;
}

/// The writer half: what every quota-spending process does with its readings.
#[async_trait]
pub trait QuotaRecorder: Send + Sync + std::fmt::Debug {
    /// Appends one reading; returns its id.
    async fn record_quota_reading(&self, reading: &QuotaReading) -> Result<i64>;

    /// Deletes the readings observed before `before` (the retention instant); returns how
    /// many.
    async fn prune_quota_readings(&self, before: Timestamp) -> Result<u64>;

    /// Adds one round trip's spend to its window's row (see [`spend`]).
    async fn record_spend(&self, record: &spend::SpendRecord) -> Result<()>;

    /// Deletes the spend rows last written before `before`; returns how many.
    async fn prune_spend(&self, before: Timestamp) -> Result<u64>;
}

/// A store with both halves of the quota history over one pool.
#[derive(Debug, Clone)]
pub struct QuotaStores {
    /// The store itself.
    pub store: Arc<dyn Store>,
    /// The reads.
    pub history: Arc<dyn QuotaHistory>,
    /// The writes.
    pub recorder: Arc<dyn QuotaRecorder>,
}

/// Opens the store named by `target` (as [`crate::open`] does) with its quota history.
pub async fn open_quota_history(target: &str) -> Result<QuotaStores> {
    open_quota_history_with(target, false).await
}

/// [`open_quota_history`] for a process that answers requests (`headroom serve`, the server
/// of `headroom run`): on PostgreSQL its pool waits only
/// [`crate::postgres::SERVE_ACQUIRE_TIMEOUT`] for a connection
/// ([`PgStore::connect_to_serve`]), so a request says the database is unreachable promptly.
pub async fn open_quota_history_to_serve(target: &str) -> Result<QuotaStores> {
    open_quota_history_with(target, true).await
}

async fn open_quota_history_with(target: &str, to_serve: bool) -> Result<QuotaStores> {
    if target.starts_with("postgres://") || target.starts_with("postgresql://") {
        let store = Arc::new(if to_serve {
            PgStore::connect_to_serve(target).await?
        } else {
            PgStore::connect(target).await?
        });
        Ok(QuotaStores {
            store: store.clone(),
            history: store.clone(),
            recorder: store,
        })
    } else {
        let store = Arc::new(SqliteStore::open(target).await?);
        Ok(QuotaStores {
            store: store.clone(),
            history: store.clone(),
            recorder: store,
        })
    }
}

// Both backends answer through this one implementation; each method is an ordinary function
// over the store's pool.
#[async_trait]
impl<S> QuotaHistory for S
where
    S: OnPool + Send + Sync + std::fmt::Debug,
{
    async fn latest_quota_readings(&self, live_since: Timestamp) -> Result<Vec<BucketNow>> {
        readings::latest(self.pools(), live_since).await
    }

    async fn quota_history(
        &self,
        key: BucketKey<'_>,
        since: Timestamp,
        step: SignedDuration,
    ) -> Result<Vec<HistoryPoint>> {
        readings::history(self.pools(), key, since, step).await
    }

    async fn sync_runs_page(&self, before_id: Option<i64>, limit: u32) -> Result<Vec<SyncRun>> {
        runs::sync_runs_page(self.pools(), before_id, limit).await
    }

    async fn observations_of(
        &self,
        host: &str,
        subject: &str,
        since: Timestamp,
        limit: u32,
    ) -> Result<Vec<StoredObservation>> {
        runs::observations_of(self.pools(), host, subject, since, limit).await
    }

    async fn activity_mark(&self) -> Result<ActivityMark> {
        runs::activity_mark(self.pools()).await
    }

    async fn observation_marks(
        &self,
        key: BucketKey<'_>,
        since: Timestamp,
        until: Timestamp,
        step: SignedDuration,
    ) -> Result<Vec<marks::MarkSlot>> {
        marks::marks(self.pools(), key, since, until, step).await
    }

    async fn spend_totals(
        &self,
        since: Timestamp,
        until: Timestamp,
    ) -> Result<Vec<spend::SpendTotal>> {
        spend::totals(self.pools(), since, until).await
    }

    async fn spend_starts(&self) -> Result<Vec<spend::SpendStart>> {
        spend::starts(self.pools()).await
    }
}

#[async_trait]
impl<S> QuotaRecorder for S
where
    S: OnPool + Send + Sync + std::fmt::Debug,
{
    async fn record_quota_reading(&self, reading: &QuotaReading) -> Result<i64> {
        readings::record(self.pools(), reading).await
    }

    async fn prune_quota_readings(&self, before: Timestamp) -> Result<u64> {
        readings::prune(self.pools(), before).await
    }

    async fn record_spend(&self, record: &spend::SpendRecord) -> Result<()> {
        spend::record(self.pools(), record).await
    }

    async fn prune_spend(&self, before: Timestamp) -> Result<u64> {
        spend::prune(self.pools(), before).await
    }
}
