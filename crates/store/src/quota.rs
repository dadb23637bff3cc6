//! The governor's state in the database: every process on one database — an SQLite file or a
//! PostgreSQL database reached from several machines — shares one identity's quota.
//!
//! Each identity is one row of `governor_identities` holding the serialized
//! [`IdentityState`]. Every decision loads that row inside a write transaction (PostgreSQL:
//! `SELECT … FOR UPDATE`; SQLite: `BEGIN IMMEDIATE`, which takes the file's write lock before
//! the read), applies the same pure functions as the in-memory backend ([`rule::evaluate`],
//! [`rule::commit_grant`], [`rule::apply_reading`]) and writes it back in the same
//! transaction, so two processes decide one after the other, never on the same stale reading:
//! the in-flight ceiling, the points-per-minute limiters, secondary blocks and their
//! escalation are one state per identity.
//!
//! In-flight slots are leases (`governor_leases`) that expire after
//! [`SharedGovernorOptions::lease_ttl`]. Before every decision the in-flight counts are
//! recomputed from the unexpired leases, so a process killed with permits outstanding frees its
//! capacity when its leases expire. Dropping a [`Permit`] deletes its lease on a spawned task
//! (the release hook is synchronous); [`SharedQuotaState::settled`] waits for those deletions.
//! A request over several buckets takes a lease in each in the same decision, all or none
//! ([`multi`]); the identity counts it once.
//!
//! On PostgreSQL a decision is one optimistic statement instead of a transaction
//! ([`optimistic`]): the same rule, the same rows, one round trip for a lone process.
//!
//! A process restarted after a kill would otherwise wait out its predecessor's leases: before
//! its first decision a state frees the leases of holders that provably no longer run
//! ([`ProcessMark`], when the holder is one).
//!
//! Waiters ([`WaitTicket`]) are counted in-process only: a ticket's release cannot do I/O.
//!
//! Instants come from each caller's clock. Processes on several machines should keep their
//! clocks in sync (NTP): a lease is judged expired by whoever reads it, so a clock running a
//! lease TTL ahead would free slots early.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_core::governor::rule::{self, Decision, IdentityState};
use headroom_core::governor::{
    Acquire, BoxFuture, ConfigError, GovernorConfig, GovernorError, Headroom, IdentitySnapshot,
    Permit, QuotaState, Wait, WaitTicket,
};
use headroom_core::quota::{Bucket, QuotaKey, RequestKind};
use headroom_core::redact::redact;
use headroom_core::signal::{Provider, RateLimitSignal};
use sqlx::postgres::PgPool;
use sqlx::sqlite::SqlitePool;
use sqlx::types::Json;

use crate::db::{Conn, DbTx, Pools, on_each_conn, on_each_pool};
use crate::model::{SubjectKind, ms};

mod holder;
mod multi;
mod optimistic;
mod release;

pub use holder::ProcessMark;
use optimistic::{LeaseChange, Optimistic};
use release::{LeaseRelease, ReleaseTarget, ReleaseTracker, WaitRelease, WaitingMap};

/// Settings of the shared governor backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedGovernorOptions {
    /// How long an in-flight slot outlives a process that never released it. Longer than any
    /// request may take (connect + read timeouts), short enough that a crash frees capacity
    /// soon.
    pub lease_ttl: SignedDuration,
    /// Names this process in `governor_leases.holder`, for people reading the table.
    pub holder: String,
}

impl Default for SharedGovernorOptions {
    fn default() -> Self {
        Self {
            lease_ttl: SignedDuration::from_secs(120),
            holder: "headroom".to_owned(),
        }
    }
}

/// Either backend's pool, owned: the state outlives the borrow a store hands out.
#[derive(Clone)]
enum GovernorPool {
    Sqlite(SqlitePool),
    Pg(PgPool),
}

impl GovernorPool {
    fn pools(&self) -> Pools<'_> {
        match self {
            GovernorPool::Sqlite(pool) => Pools::Sqlite(pool),
            GovernorPool::Pg(pool) => Pools::Pg(pool),
        }
    }
}

/// Governor state in the database, shared by every process that uses the same database.
pub struct SharedQuotaState {
    pool: GovernorPool,
    /// PostgreSQL's one-statement decisions (`None` on SQLite).
    optimistic: Option<Arc<Optimistic>>,
    /// The latest instant a caller gave, for releases.
    latest: Arc<AtomicI64>,
    config: Arc<GovernorConfig>,
    options: SharedGovernorOptions,
    waiting: Arc<Mutex<WaitingMap>>,
    releases: Arc<ReleaseTracker>,
    /// Set once the leases of holders that are gone were freed (before the first decision).
    swept: Arc<tokio::sync::OnceCell<()>>,
}

impl fmt::Debug for SharedQuotaState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let backend = match self.pool {
            GovernorPool::Sqlite(_) => "sqlite",
            GovernorPool::Pg(_) => "postgres",
        };
        f.debug_struct("SharedQuotaState")
            .field("backend", &backend)
            .field("config", &self.config)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

fn backend_error(error: impl fmt::Display) -> GovernorError {
    GovernorError::Backend(redact(&error.to_string()))
}

/// Replaces the state's in-flight counts with the live leases per bucket and the identity's
/// with the live requests (a request over several buckets holds a lease in each).
fn apply_lease_counts(
    state: &mut IdentityState,
    live: impl IntoIterator<Item = (String, i64)>,
    requests: i64,
) {
    for bucket in &mut state.buckets {
        bucket.in_flight = 0;
    }
    for (name, n) in live {
        let i = state.find_or_insert(&Bucket::new(&name));
        state.buckets[i].in_flight = u32::try_from(n).unwrap_or(u32::MAX);
    }
    state.in_flight = u32::try_from(requests).unwrap_or(u32::MAX);
}

/// Creates the identity's row holding `fresh`, unless another process just did.
async fn insert_identity(
    conn: &mut Conn<'_>,
    key: &QuotaKey,
    id: &IdentityKey,
    fresh: &IdentityState,
    now: Timestamp,
) -> Result<(), GovernorError> {
    on_each_conn!(conn, |c| {
        sqlx::query(
            "INSERT INTO governor_identities \
             (host, subject_kind, subject_id, quota_key, state, updated_at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
        )
        .bind(&id.host)
        .bind(id.kind)
        .bind(&id.id)
        .bind(Json(key))
        .bind(Json(fresh))
        .bind(ms(now))
        .execute(c)
        .await
        .map(|_| ())
    })
    .map_err(backend_error)
}

/// The identity's primary key.
struct IdentityKey {
    /// The host, prefixed with the provider's name unless it is GitHub's (`gitlab:HOST`):
    /// one host may serve two providers, whose quotas are two identities; GitHub's rows,
    /// written before keys had a provider, keep their bare host.
    host: String,
    kind: &'static str,
    id: String,
}

impl IdentityKey {
    fn of(key: &QuotaKey) -> Self {
        let (kind, id) = SubjectKind::of(&key.subject);
        let host = match key.provider {
            Provider::GitHub => key.host.to_string(),
            other => format!("{}:{}", crate::model::provider_name(other), key.host),
        };
        Self {
            host,
            kind: kind.as_str(),
            id,
        }
    }
}

impl SharedQuotaState {
    /// A backend over a PostgreSQL `pool`, whose database has the headroom schema (open it with
    /// [`crate::PgStore::connect`] first, which applies the migrations).
    pub fn postgres(
        pool: PgPool,
        config: GovernorConfig,
        options: SharedGovernorOptions,
    ) -> Result<Self, ConfigError> {
        Self::new(GovernorPool::Pg(pool), config, options)
    }

    /// A backend over an SQLite `pool` of a database file with the headroom schema (open it
    /// with [`crate::SqliteStore::open`] first). Its busy timeout bounds how long a decision
    /// waits for another process's write transaction.
    pub fn sqlite(
        pool: SqlitePool,
        config: GovernorConfig,
        options: SharedGovernorOptions,
    ) -> Result<Self, ConfigError> {
        Self::new(GovernorPool::Sqlite(pool), config, options)
    }

    fn new(
        pool: GovernorPool,
        config: GovernorConfig,
        options: SharedGovernorOptions,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        if !options.lease_ttl.is_positive() {
            return Err(ConfigError::Invalid {
                setting: "lease_ttl",
                problem: "must be positive".to_owned(),
            });
        }
        let optimistic = match &pool {
            GovernorPool::Pg(pg) => Some(Arc::new(Optimistic::new(pg.clone()))),
            GovernorPool::Sqlite(_) => None,
        };
        Ok(Self {
            pool,
            optimistic,
            latest: Arc::new(AtomicI64::new(i64::MIN)),
            config: Arc::new(config),
            options,
            waiting: Arc::new(Mutex::new(HashMap::new())),
            releases: Arc::new(ReleaseTracker::default()),
            swept: Arc::new(tokio::sync::OnceCell::new()),
        })
    }

    /// The options in force.
    pub fn options(&self) -> &SharedGovernorOptions {
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

    /// Loads the identity's state inside the decision's write transaction (on PostgreSQL
    /// under a row lock; SQLite's `BEGIN IMMEDIATE` already holds the file's), creating the
    /// row when first seen.
    async fn lock_identity(
        &self,
        conn: &mut Conn<'_>,
        key: &QuotaKey,
        id: &IdentityKey,
        now: Timestamp,
    ) -> Result<IdentityState, GovernorError> {
        let select = match conn {
            Conn::Pg(_) => {
                "SELECT state FROM governor_identities \
                 WHERE host = $1 AND subject_kind = $2 AND subject_id = $3 FOR UPDATE"
            }
            Conn::Sqlite(_) => {
                "SELECT state FROM governor_identities \
                 WHERE host = $1 AND subject_kind = $2 AND subject_id = $3"
            }
        };
        for _ in 0..2 {
            let state: Option<Json<IdentityState>> = on_each_conn!(conn, |c| {
                sqlx::query_scalar(select)
                    .bind(&id.host)
                    .bind(id.kind)
                    .bind(&id.id)
                    .fetch_optional(c)
                    .await
            })
            .map_err(backend_error)?;
            if let Some(Json(state)) = state {
                return Ok(state);
            }
            let fresh = IdentityState::new(&self.config);
            insert_identity(conn, key, id, &fresh, now).await?;
        }
        Err(GovernorError::Backend(
            "the identity row vanished while being created".to_owned(),
        ))
    }

    /// Loads the identity's state without a lock (for headroom and snapshots).
    async fn read_identity(
        &self,
        conn: &mut Conn<'_>,
        id: &IdentityKey,
    ) -> Result<IdentityState, GovernorError> {
        let state: Option<Json<IdentityState>> = on_each_conn!(conn, |c| {
            sqlx::query_scalar(
                "SELECT state FROM governor_identities \
                 WHERE host = $1 AND subject_kind = $2 AND subject_id = $3",
            )
            .bind(&id.host)
            .bind(id.kind)
            .bind(&id.id)
            .fetch_optional(c)
            .await
        })
        .map_err(backend_error)?;
        Ok(state.map_or_else(|| IdentityState::new(&self.config), |Json(s)| s))
    }

    /// Replaces the cached in-flight counts with the unexpired leases.
    async fn count_leases(
        &self,
        conn: &mut Conn<'_>,
        id: &IdentityKey,
        state: &mut IdentityState,
        now: Timestamp,
    ) -> Result<(), GovernorError> {
        let rows: Vec<(String, i64, i64)> = on_each_conn!(conn, |c| {
            sqlx::query_as(
                "SELECT bucket, COUNT(*) AS n, \
                 COALESCE(SUM(CASE WHEN request_lease IS NULL THEN 1 ELSE 0 END), 0) AS r \
                 FROM governor_leases \
                 WHERE host = $1 AND subject_kind = $2 AND subject_id = $3 \
                 AND expires_at_ms > $4 GROUP BY bucket",
            )
            .bind(&id.host)
            .bind(id.kind)
            .bind(&id.id)
            .bind(ms(now))
            .fetch_all(c)
            .await
        })
        .map_err(backend_error)?;
        let requests = rows.iter().map(|r| r.2).sum();
        apply_lease_counts(state, rows.into_iter().map(|(b, n, _)| (b, n)), requests);
        Ok(())
    }

    async fn save(
        &self,
        conn: &mut Conn<'_>,
        id: &IdentityKey,
        state: &IdentityState,
        now: Timestamp,
    ) -> Result<(), GovernorError> {
        on_each_conn!(conn, |c| {
            sqlx::query(
                "UPDATE governor_identities SET state = $4, version = version + 1, \
                 updated_at_ms = $5 \
                 WHERE host = $1 AND subject_kind = $2 AND subject_id = $3",
            )
            .bind(&id.host)
            .bind(id.kind)
            .bind(&id.id)
            .bind(Json(state))
            .bind(ms(now))
            .execute(c)
            .await
            .map(|_| ())
        })
        .map_err(backend_error)
    }

    /// Notes `now` as the latest instant seen (what a release, which has no clock, writes).
    fn saw(&self, now: Timestamp) {
        self.latest.fetch_max(ms(now), Ordering::SeqCst);
    }

    /// The permit of a grant, whose drop frees lease `lease_id` and those of `also`'s buckets.
    fn permit(
        &self,
        key: &QuotaKey,
        bucket: &Bucket,
        grant: (u32, usize, i64),
        kind: RequestKind,
        now: Timestamp,
    ) -> Permit {
        self.permit_all(key, bucket, grant, Vec::new(), kind, now)
    }

    fn permit_all(
        &self,
        key: &QuotaKey,
        bucket: &Bucket,
        grant: (u32, usize, i64),
        also: Vec<(Bucket, u32)>,
        kind: RequestKind,
        now: Timestamp,
    ) -> Permit {
        let (cost, slot, lease_id) = grant;
        let target = match &self.optimistic {
            Some(optimistic) => ReleaseTarget::Pg {
                optimistic: Arc::clone(optimistic),
                config: Arc::clone(&self.config),
                latest: Arc::clone(&self.latest),
            },
            None => ReleaseTarget::Delete(self.pool.clone()),
        };
        let release = LeaseRelease {
            target,
            lease_id,
            also: also.iter().map(|(b, _)| b.clone()).collect(),
            runtime: tokio::runtime::Handle::current(),
            tracker: Arc::clone(&self.releases),
        };
        Permit::new(
            key.clone(),
            bucket.clone(),
            kind,
            cost,
            now,
            slot,
            Arc::new(release),
        )
        .with_also(also)
    }

    async fn acquire_inner(
        &self,
        key: &QuotaKey,
        bucket: &Bucket,
        estimated_cost: u32,
        kind: RequestKind,
        now: Timestamp,
    ) -> Result<Acquire, GovernorError> {
        self.before_deciding(now).await;
        if let Some(optimistic) = &self.optimistic {
            return self
                .acquire_optimistic(optimistic, key, bucket, estimated_cost, kind, now)
                .await;
        }
        let id = IdentityKey::of(key);
        let mut tx = DbTx::begin(self.pool.pools())
            .await
            .map_err(backend_error)?;
        let mut conn = tx.conn();
        let mut state = self.lock_identity(&mut conn, key, &id, now).await?;
        multi::clear_expired_leases(&mut conn, &id, now).await?;
        self.count_leases(&mut conn, &id, &mut state, now).await?;
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
                let lease_id = self
                    .insert_lease(&mut conn, &id, bucket, None, (now, expires))
                    .await?;
                Ok((cost, slot, lease_id))
            }
            Decision::Wait { until, reason } => Err(Wait { until, reason }),
        };
        self.save(&mut conn, &id, &state, now).await?;
        tx.commit().await.map_err(backend_error)?;
        Ok(match outcome {
            Ok(grant) => Acquire::Grant(self.permit(key, bucket, grant, kind, now)),
            Err(wait) => Acquire::Wait(wait),
        })
    }

    /// [`Self::acquire_inner`] on PostgreSQL: the same rule in one optimistic write.
    async fn acquire_optimistic(
        &self,
        optimistic: &Optimistic,
        key: &QuotaKey,
        bucket: &Bucket,
        estimated_cost: u32,
        kind: RequestKind,
        now: Timestamp,
    ) -> Result<Acquire, GovernorError> {
        let expires = now
            .checked_add(self.options.lease_ttl)
            .unwrap_or(Timestamp::MAX);
        let holder = self.options.holder.as_str();
        let fresh = || IdentityState::new(&self.config);
        let ((decision, slot), lease_id) = optimistic
            .write(key, fresh, now, |state, _| {
                let slot = state.find_or_insert(bucket);
                let decision = rule::evaluate(
                    &self.config,
                    state,
                    Some(slot),
                    bucket,
                    estimated_cost,
                    kind,
                    now,
                );
                let change = match decision {
                    Decision::Grant { .. } => {
                        rule::commit_grant(&self.config, state, slot, kind, now);
                        LeaseChange::Take {
                            bucket,
                            also: &[],
                            holder,
                            expires,
                        }
                    }
                    Decision::Wait { .. } => LeaseChange::None,
                };
                ((decision, slot), change)
            })
            .await?;
        Ok(match decision {
            Decision::Grant { cost } => {
                let lease_id = lease_id.ok_or_else(|| {
                    GovernorError::Backend("a grant was written without its lease".to_owned())
                })?;
                Acquire::Grant(self.permit(key, bucket, (cost, slot, lease_id), kind, now))
            }
            Decision::Wait { until, reason } => Acquire::Wait(Wait { until, reason }),
        })
    }

    /// Applies `change` to the identity's state in one write transaction.
    async fn update(
        &self,
        key: &QuotaKey,
        now: Timestamp,
        change: impl Fn(&mut IdentityState),
    ) -> Result<(), GovernorError> {
        self.saw(now);
        if let Some(optimistic) = &self.optimistic {
            let fresh = || IdentityState::new(&self.config);
            optimistic
                .write(key, fresh, now, |state, _| {
                    change(state);
                    ((), LeaseChange::None)
                })
                .await?;
            return Ok(());
        }
        let id = IdentityKey::of(key);
        let mut tx = DbTx::begin(self.pool.pools())
            .await
            .map_err(backend_error)?;
        let mut conn = tx.conn();
        let mut state = self.lock_identity(&mut conn, key, &id, now).await?;
        change(&mut state);
        self.save(&mut conn, &id, &state, now).await?;
        tx.commit().await.map_err(backend_error)?;
        Ok(())
    }

    async fn observe_inner(
        &self,
        permit: &Permit,
        signal: &RateLimitSignal,
        now: Timestamp,
    ) -> Result<(), GovernorError> {
        let target = signal.resource.as_ref().unwrap_or(permit.bucket());
        self.update(permit.key(), now, |state| {
            let slot = state.find_or_insert(target);
            rule::apply_reading(&self.config, &mut state.buckets[slot], signal, now);
        })
        .await
    }

    async fn charge_inner(
        &self,
        key: &QuotaKey,
        kind: RequestKind,
        reading: Option<(&Bucket, &RateLimitSignal)>,
        now: Timestamp,
    ) -> Result<(), GovernorError> {
        self.update(key, now, |state| {
            rule::charge(&self.config, state, kind, now);
            if let Some((bucket, signal)) = reading {
                let slot = state.find_or_insert(signal.resource.as_ref().unwrap_or(bucket));
                rule::apply_reading(&self.config, &mut state.buckets[slot], signal, now);
            }
        })
        .await
    }

    /// The state as a reader sees it: stored state, live leases, local waiters.
    async fn current(
        &self,
        key: &QuotaKey,
        now: Timestamp,
    ) -> Result<IdentityState, GovernorError> {
        let id = IdentityKey::of(key);
        let mut state = match &self.pool {
            GovernorPool::Sqlite(pool) => {
                let mut c = pool.acquire().await.map_err(backend_error)?;
                self.read_current(&mut Conn::Sqlite(&mut c), &id, now)
                    .await?
            }
            GovernorPool::Pg(pool) => {
                let mut c = pool.acquire().await.map_err(backend_error)?;
                self.read_current(&mut Conn::Pg(&mut c), &id, now).await?
            }
        };
        let waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        for ((k, bucket), n) in waiting.iter() {
            if k == key {
                let i = state.find_or_insert(bucket);
                state.buckets[i].waiting = *n;
            }
        }
        Ok(state)
    }

    /// The stored state with its live leases counted, on one connection.
    async fn read_current(
        &self,
        conn: &mut Conn<'_>,
        id: &IdentityKey,
        now: Timestamp,
    ) -> Result<IdentityState, GovernorError> {
        let mut state = self.read_identity(conn, id).await?;
        self.count_leases(conn, id, &mut state, now).await?;
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
        let keys: Vec<Json<QuotaKey>> = on_each_pool!(self.pool.pools(), |p| {
            sqlx::query_scalar("SELECT quota_key FROM governor_identities")
                .fetch_all(p)
                .await
        })
        .map_err(backend_error)?;
        let mut keys: Vec<QuotaKey> = keys.into_iter().map(|Json(k)| k).collect();
        keys.sort();
        Ok(keys)
    }
}

impl QuotaState for SharedQuotaState {
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

    fn acquire_all<'a>(
        &'a self,
        key: &'a QuotaKey,
        asks: &'a [(Bucket, u32)],
        kind: RequestKind,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<Acquire, GovernorError>> {
        Box::pin(self.acquire_all_inner(key, asks, kind, now))
    }

    fn observe<'a>(
        &'a self,
        permit: &'a Permit,
        signal: &'a RateLimitSignal,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<(), GovernorError>> {
        Box::pin(self.observe_inner(permit, signal, now))
    }

    fn charge<'a>(
        &'a self,
        key: &'a QuotaKey,
        kind: RequestKind,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<(), GovernorError>> {
        Box::pin(self.charge_inner(key, kind, None, now))
    }

    fn charge_observed<'a>(
        &'a self,
        key: &'a QuotaKey,
        kind: RequestKind,
        bucket: &'a Bucket,
        signal: &'a RateLimitSignal,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<(), GovernorError>> {
        Box::pin(self.charge_inner(key, kind, Some((bucket, signal)), now))
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

    fn settled(&self) -> BoxFuture<'_, ()> {
        Box::pin(SharedQuotaState::settled(self))
    }
}
