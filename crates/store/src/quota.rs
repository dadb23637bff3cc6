//! The governor's state on PostgreSQL: several processes on several machines share one
//! identity's quota.
//!
//! Each identity is one row of `governor_identities` holding the serialized
//! [`IdentityState`]. Every decision loads that row under `SELECT … FOR UPDATE`, applies the
//! same pure functions as the in-memory backend ([`rule::evaluate`], [`rule::commit_grant`],
//! [`rule::apply_reading`]) and writes it back in the same transaction, so two processes
//! decide one after the other, never on the same stale reading.
//!
//! In-flight slots are leases (`governor_leases`) that expire after
//! [`PgGovernorOptions::lease_ttl`]. Before every decision the in-flight counts are recomputed
//! from the unexpired leases, so a process killed with permits outstanding frees its capacity
//! when its leases expire. Dropping a [`Permit`] deletes its lease on a spawned task (the
//! release hook is synchronous); [`PgQuotaState::settled`] waits for those deletions.
//!
//! Waiters ([`WaitTicket`]) are counted in-process only: waiting is a local affair and a
//! ticket's release cannot do I/O.
//!
//! Instants come from each caller's clock. Processes on several machines should keep their
//! clocks in sync (NTP): a lease is judged expired by whoever reads it, so a clock running a
//! lease TTL ahead would free slots early.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_core::governor::rule::{self, Decision, IdentityState};
use headroom_core::governor::{
    Acquire, BoxFuture, ConfigError, GovernorConfig, GovernorError, Headroom, IdentitySnapshot,
    Permit, QuotaState, SlotRelease, Wait, WaitTicket,
};
use headroom_core::quota::{Bucket, QuotaKey, RequestKind};
use headroom_core::redact::redact;
use headroom_core::signal::RateLimitSignal;
use sqlx::Row as _;
use sqlx::postgres::{PgConnection, PgPool};
use sqlx::types::Json;

use crate::model::{SubjectKind, ms};

/// Settings of the PostgreSQL governor backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgGovernorOptions {
    /// How long an in-flight slot outlives a process that never released it. Longer than any
    /// request may take (connect + read timeouts), short enough that a crash frees capacity
    /// soon.
    pub lease_ttl: SignedDuration,
    /// Names this process in `governor_leases.holder`, for people reading the table.
    pub holder: String,
}

impl Default for PgGovernorOptions {
    fn default() -> Self {
        Self {
            lease_ttl: SignedDuration::from_secs(120),
            holder: "headroom".to_owned(),
        }
    }
}

/// Counts lease deletions still running, so callers (tests, shutdown) can wait for them.
#[derive(Debug, Default)]
struct ReleaseTracker {
    pending: AtomicUsize,
    idle: tokio::sync::Notify,
}

struct PendingRelease(Arc<ReleaseTracker>);

impl PendingRelease {
    fn start(tracker: &Arc<ReleaseTracker>) -> Self {
        tracker.pending.fetch_add(1, Ordering::SeqCst);
        Self(Arc::clone(tracker))
    }
}

impl Drop for PendingRelease {
    fn drop(&mut self) {
        if self.0.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Frees one permit's lease.
struct LeaseRelease {
    pool: PgPool,
    lease_id: i64,
    runtime: tokio::runtime::Handle,
    tracker: Arc<ReleaseTracker>,
}

impl SlotRelease for LeaseRelease {
    fn release_in_flight(&self, _key: &QuotaKey, _bucket: &Bucket, _slot: usize) {
        let pool = self.pool.clone();
        let lease_id = self.lease_id;
        let pending = PendingRelease::start(&self.tracker);
        // If the runtime is gone or the delete fails, the lease still expires by itself.
        self.runtime.spawn(async move {
            let _ = sqlx::query("DELETE FROM governor_leases WHERE id = $1")
                .bind(lease_id)
                .execute(&pool)
                .await;
            drop(pending);
        });
    }

    fn release_waiting(&self, _key: &QuotaKey, _bucket: &Bucket, _slot: usize) {}
}

type WaitingMap = HashMap<(QuotaKey, Bucket), u32>;

/// Counts in-process waiters.
struct WaitRelease {
    waiting: Arc<Mutex<WaitingMap>>,
}

impl SlotRelease for WaitRelease {
    fn release_in_flight(&self, _key: &QuotaKey, _bucket: &Bucket, _slot: usize) {}

    fn release_waiting(&self, key: &QuotaKey, bucket: &Bucket, _slot: usize) {
        let mut map = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        let entry = (key.clone(), bucket.clone());
        if let Some(n) = map.get_mut(&entry) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.remove(&entry);
            }
        }
    }
}

/// Governor state in PostgreSQL, shared by every process that uses the same database.
pub struct PgQuotaState {
    pool: PgPool,
    config: GovernorConfig,
    options: PgGovernorOptions,
    waiting: Arc<Mutex<WaitingMap>>,
    releases: Arc<ReleaseTracker>,
}

impl fmt::Debug for PgQuotaState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgQuotaState")
            .field("config", &self.config)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

fn backend_error(error: impl fmt::Display) -> GovernorError {
    GovernorError::Backend(redact(&error.to_string()))
}

/// The identity's primary key.
struct IdentityKey {
    host: String,
    kind: &'static str,
    id: String,
}

impl IdentityKey {
    fn of(key: &QuotaKey) -> Self {
        let (kind, id) = SubjectKind::of(&key.subject);
        Self {
            host: key.host.to_string(),
            kind: kind.as_str(),
            id,
        }
    }
}

impl PgQuotaState {
    /// A backend over `pool`, whose database has the headroom schema (open it with
    /// [`crate::PgStore::connect`] first, which applies the migrations).
    pub fn new(
        pool: PgPool,
        config: GovernorConfig,
        options: PgGovernorOptions,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        if !options.lease_ttl.is_positive() {
            return Err(ConfigError::Invalid {
                setting: "lease_ttl",
                problem: "must be positive".to_owned(),
            });
        }
        Ok(Self {
            pool,
            config,
            options,
            waiting: Arc::new(Mutex::new(HashMap::new())),
            releases: Arc::new(ReleaseTracker::default()),
        })
    }

    /// The options in force.
    pub fn options(&self) -> &PgGovernorOptions {
        &self.options
    }

    /// Waits until every lease release started so far has reached the database.
    pub async fn settled(&self) {
        loop {
            let idle = self.releases.idle.notified();
            if self.releases.pending.load(Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }

    /// Loads the identity's state under a row lock, creating the row when first seen.
    async fn lock_identity(
        &self,
        conn: &mut PgConnection,
        key: &QuotaKey,
        id: &IdentityKey,
        now: Timestamp,
    ) -> Result<IdentityState, GovernorError> {
        const SELECT: &str = "SELECT state FROM governor_identities \
             WHERE host = $1 AND subject_kind = $2 AND subject_id = $3 FOR UPDATE";
        for _ in 0..2 {
            let row = sqlx::query(SELECT)
                .bind(&id.host)
                .bind(id.kind)
                .bind(&id.id)
                .fetch_optional(&mut *conn)
                .await
                .map_err(backend_error)?;
            if let Some(row) = row {
                let Json(state) = row
                    .try_get::<Json<IdentityState>, _>("state")
                    .map_err(backend_error)?;
                return Ok(state);
            }
            let fresh = IdentityState::new(&self.config);
            sqlx::query(
                "INSERT INTO governor_identities \
                 (host, subject_kind, subject_id, quota_key, state, updated_at_ms) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
            )
            .bind(&id.host)
            .bind(id.kind)
            .bind(&id.id)
            .bind(Json(key))
            .bind(Json(&fresh))
            .bind(ms(now))
            .execute(&mut *conn)
            .await
            .map_err(backend_error)?;
        }
        Err(GovernorError::Backend(
            "the identity row vanished while being created".to_owned(),
        ))
    }

    /// Loads the identity's state without a lock (for headroom and snapshots).
    async fn read_identity(
        &self,
        conn: &mut PgConnection,
        id: &IdentityKey,
    ) -> Result<IdentityState, GovernorError> {
        let row = sqlx::query(
            "SELECT state FROM governor_identities \
             WHERE host = $1 AND subject_kind = $2 AND subject_id = $3",
        )
        .bind(&id.host)
        .bind(id.kind)
        .bind(&id.id)
        .fetch_optional(&mut *conn)
        .await
        .map_err(backend_error)?;
        match row {
            Some(row) => Ok(row
                .try_get::<Json<IdentityState>, _>("state")
                .map_err(backend_error)?
                .0),
            None => Ok(IdentityState::new(&self.config)),
        }
    }

    /// Replaces the cached in-flight counts with the unexpired leases.
    async fn count_leases(
        &self,
        conn: &mut PgConnection,
        id: &IdentityKey,
        state: &mut IdentityState,
        now: Timestamp,
    ) -> Result<(), GovernorError> {
        let rows = sqlx::query(
            "SELECT bucket, COUNT(*) AS n FROM governor_leases \
             WHERE host = $1 AND subject_kind = $2 AND subject_id = $3 AND expires_at_ms > $4 \
             GROUP BY bucket",
        )
        .bind(&id.host)
        .bind(id.kind)
        .bind(&id.id)
        .bind(ms(now))
        .fetch_all(&mut *conn)
        .await
        .map_err(backend_error)?;
        for bucket in &mut state.buckets {
            bucket.in_flight = 0;
        }
        let mut total: u32 = 0;
        for row in rows {
            let name: String = row.try_get("bucket").map_err(backend_error)?;
            let n: i64 = row.try_get("n").map_err(backend_error)?;
            let n = u32::try_from(n).unwrap_or(u32::MAX);
            let i = state.find_or_insert(&Bucket::new(&name));
            state.buckets[i].in_flight = n;
            total = total.saturating_add(n);
        }
        state.in_flight = total;
        Ok(())
    }

    async fn save(
        &self,
        conn: &mut PgConnection,
        id: &IdentityKey,
        state: &IdentityState,
        now: Timestamp,
    ) -> Result<(), GovernorError> {
        sqlx::query(
            "UPDATE governor_identities SET state = $4, updated_at_ms = $5 \
             WHERE host = $1 AND subject_kind = $2 AND subject_id = $3",
        )
        .bind(&id.host)
        .bind(id.kind)
        .bind(&id.id)
        .bind(Json(state))
        .bind(ms(now))
        .execute(&mut *conn)
        .await
        .map_err(backend_error)?;
        Ok(())
    }

    async fn acquire_inner(
        &self,
        key: &QuotaKey,
        bucket: &Bucket,
        estimated_cost: u32,
        kind: RequestKind,
        now: Timestamp,
    ) -> Result<Acquire, GovernorError> {
        let id = IdentityKey::of(key);
        let mut tx = self.pool.begin().await.map_err(backend_error)?;
        let mut state = self.lock_identity(&mut tx, key, &id, now).await?;
        sqlx::query(
            "DELETE FROM governor_leases \
             WHERE host = $1 AND subject_kind = $2 AND subject_id = $3 AND expires_at_ms <= $4",
        )
        .bind(&id.host)
        .bind(id.kind)
        .bind(&id.id)
        .bind(ms(now))
        .execute(&mut *tx)
        .await
        .map_err(backend_error)?;
        self.count_leases(&mut tx, &id, &mut state, now).await?;
        let slot = state.find_or_insert(bucket);
        let decision = rule::evaluate(
            &self.config,
            &mut state,
            Some(slot),
            bucket,
            estimated_cost,
            kind,
            now,
        );
        let outcome = match decision {
            Decision::Grant { cost } => {
                rule::commit_grant(&self.config, &mut state, slot, kind, now);
                let expires = now
                    .checked_add(self.options.lease_ttl)
                    .unwrap_or(Timestamp::MAX);
                let row = sqlx::query(
                    "INSERT INTO governor_leases \
                     (host, subject_kind, subject_id, bucket, holder, granted_at_ms, expires_at_ms) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
                )
                .bind(&id.host)
                .bind(id.kind)
                .bind(&id.id)
                .bind(bucket.as_str())
                .bind(&self.options.holder)
                .bind(ms(now))
                .bind(ms(expires))
                .fetch_one(&mut *tx)
                .await
                .map_err(backend_error)?;
                let lease_id: i64 = row.try_get("id").map_err(backend_error)?;
                Ok((cost, slot, lease_id))
            }
            Decision::Wait { until, reason } => Err(Wait { until, reason }),
        };
        self.save(&mut tx, &id, &state, now).await?;
        tx.commit().await.map_err(backend_error)?;
        Ok(match outcome {
            Ok((cost, slot, lease_id)) => {
                let release = LeaseRelease {
                    pool: self.pool.clone(),
                    lease_id,
                    runtime: tokio::runtime::Handle::current(),
                    tracker: Arc::clone(&self.releases),
                };
                Acquire::Grant(Permit::new(
                    key.clone(),
                    bucket.clone(),
                    kind,
                    cost,
                    now,
                    slot,
                    Arc::new(release),
                ))
            }
            Err(wait) => Acquire::Wait(wait),
        })
    }

    async fn observe_inner(
        &self,
        permit: &Permit,
        signal: &RateLimitSignal,
        now: Timestamp,
    ) -> Result<(), GovernorError> {
        let id = IdentityKey::of(permit.key());
        let mut tx = self.pool.begin().await.map_err(backend_error)?;
        let mut state = self.lock_identity(&mut tx, permit.key(), &id, now).await?;
        let target = match &signal.resource {
            Some(resource) => resource,
            None => permit.bucket(),
        };
        let slot = state.find_or_insert(target);
        rule::apply_reading(&self.config, &mut state.buckets[slot], signal, now);
        self.save(&mut tx, &id, &state, now).await?;
        tx.commit().await.map_err(backend_error)?;
        Ok(())
    }

    /// The state as a reader sees it: stored state, live leases, local waiters.
    async fn current(
        &self,
        key: &QuotaKey,
        now: Timestamp,
    ) -> Result<IdentityState, GovernorError> {
        let id = IdentityKey::of(key);
        let mut conn = self.pool.acquire().await.map_err(backend_error)?;
        let mut state = self.read_identity(&mut conn, &id).await?;
        self.count_leases(&mut conn, &id, &mut state, now).await?;
        let waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        for ((k, bucket), n) in waiting.iter() {
            if k == key {
                let i = state.find_or_insert(bucket);
                state.buckets[i].waiting = *n;
            }
        }
        Ok(state)
    }

    async fn headroom_inner(
        &self,
        key: &QuotaKey,
        bucket: &Bucket,
        estimated_cost: u32,
        kind: RequestKind,
        now: Timestamp,
    ) -> Result<Headroom, GovernorError> {
        let mut state = self.current(key, now).await?;
        let slot = state.find(bucket);
        Ok(
            match rule::evaluate(
                &self.config,
                &mut state,
                slot,
                bucket,
                estimated_cost,
                kind,
                now,
            ) {
                Decision::Grant { .. } => Headroom::Open,
                Decision::Wait { until, reason } => Headroom::Closed(Wait { until, reason }),
            },
        )
    }

    async fn snapshot_inner(
        &self,
        key: &QuotaKey,
        now: Timestamp,
    ) -> Result<IdentitySnapshot, GovernorError> {
        let mut state = self.current(key, now).await?;
        Ok(rule::snapshot(&self.config, key, &mut state, now))
    }

    async fn identities_inner(&self) -> Result<Vec<QuotaKey>, GovernorError> {
        let rows = sqlx::query("SELECT quota_key FROM governor_identities")
            .fetch_all(&self.pool)
            .await
            .map_err(backend_error)?;
        let mut keys = rows
            .iter()
            .map(|row| {
                row.try_get::<Json<QuotaKey>, _>("quota_key")
                    .map(|j| j.0)
                    .map_err(backend_error)
            })
            .collect::<Result<Vec<_>, _>>()?;
        keys.sort();
        Ok(keys)
    }
}

impl QuotaState for PgQuotaState {
    fn config(&self) -> &GovernorConfig {
        &self.config
    }

    fn acquire<'a>(
        &'a self,
        key: &'a QuotaKey,
        bucket: &'a Bucket,
        estimated_cost: u32,
        kind: RequestKind,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<Acquire, GovernorError>> {
        Box::pin(self.acquire_inner(key, bucket, estimated_cost, kind, now))
    }

    fn observe<'a>(
        &'a self,
        permit: &'a Permit,
        signal: &'a RateLimitSignal,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<(), GovernorError>> {
        Box::pin(self.observe_inner(permit, signal, now))
    }

    fn headroom<'a>(
        &'a self,
        key: &'a QuotaKey,
        bucket: &'a Bucket,
        estimated_cost: u32,
        kind: RequestKind,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<Headroom, GovernorError>> {
        Box::pin(self.headroom_inner(key, bucket, estimated_cost, kind, now))
    }

    fn snapshot<'a>(
        &'a self,
        key: &'a QuotaKey,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<IdentitySnapshot, GovernorError>> {
        Box::pin(self.snapshot_inner(key, now))
    }

    fn identities(&self) -> BoxFuture<'_, Result<Vec<QuotaKey>, GovernorError>> {
        Box::pin(self.identities_inner())
    }

    fn wait_ticket(&self, key: &QuotaKey, bucket: &Bucket) -> WaitTicket {
        {
            let mut map = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            *map.entry((key.clone(), bucket.clone())).or_insert(0) += 1;
        }
        let release = WaitRelease {
            waiting: Arc::clone(&self.waiting),
        };
        WaitTicket::new(key.clone(), bucket.clone(), 0, Arc::new(release))
    }
}
