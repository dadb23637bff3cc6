//! The in-memory state backend: one mutex per identity, for a single process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use super::multi::{self, AllDecision, Ask};
use super::rule::{self, Decision, IdentityState};
use super::{
    Acquire, BoxFuture, ConfigError, GovernorConfig, GovernorError, Headroom, IdentitySnapshot,
    Permit, QuotaState, SlotRelease, Wait, WaitTicket,
};
use crate::clock::Timestamp;
use crate::quota::{Bucket, QuotaKey, RequestKind};
use crate::signal::RateLimitSignal;

/// One identity's state behind its own lock, so identities never contend with each other.
#[derive(Debug)]
struct IdentityCell {
    state: Mutex<IdentityState>,
}

impl IdentityCell {
    fn lock(&self) -> MutexGuard<'_, IdentityState> {
        // The rule functions leave the state consistent at every step, so a panic elsewhere
        // while the lock was held cannot have left it half-updated.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl SlotRelease for IdentityCell {
    fn release_in_flight(&self, _key: &QuotaKey, _bucket: &Bucket, slot: usize) {
        rule::release(&mut self.lock(), slot);
    }

    fn release_waiting(&self, _key: &QuotaKey, _bucket: &Bucket, slot: usize) {
        if let Some(b) = self.lock().buckets.get_mut(slot) {
            b.waiting = b.waiting.saturating_sub(1);
        }
    }
}

/// What a permit over several buckets holds: their slots, freed together.
struct HeldSlots {
    cell: Arc<IdentityCell>,
    slots: Vec<usize>,
}

impl SlotRelease for HeldSlots {
    fn release_in_flight(&self, _key: &QuotaKey, _bucket: &Bucket, _slot: usize) {
        multi::release_all(&mut self.cell.lock(), &self.slots);
    }

    fn release_waiting(&self, _key: &QuotaKey, _bucket: &Bucket, _slot: usize) {}
}

/// Governor state in memory, for one process (the SQLite deployments).
#[derive(Debug)]
pub struct MemoryQuotaState {
    config: GovernorConfig,
    identities: RwLock<HashMap<QuotaKey, Arc<IdentityCell>>>,
}

impl MemoryQuotaState {
    /// Empty state applying `config`.
    pub fn new(config: GovernorConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            config,
            identities: RwLock::new(HashMap::new()),
        })
    }

    fn cell(&self, key: &QuotaKey) -> Arc<IdentityCell> {
        {
            let map = self.identities.read().unwrap_or_else(|p| p.into_inner());
            if let Some(cell) = map.get(key) {
                return Arc::clone(cell);
            }
        }
        let mut map = self.identities.write().unwrap_or_else(|p| p.into_inner());
        Arc::clone(map.entry(key.clone()).or_insert_with(|| {
            Arc::new(IdentityCell {
                state: Mutex::new(IdentityState::new(&self.config)),
            })
        }))
    }

    /// [`QuotaState::acquire`], synchronously.
    pub fn acquire_now(
        &self,
        key: &QuotaKey,
        bucket: &Bucket,
        estimated_cost: u32,
        kind: RequestKind,
        now: Timestamp,
    ) -> Acquire {
        let cell = self.cell(key);
        let mut state = cell.lock();
        let slot = state.find_or_insert(bucket);
        match rule::evaluate(
            &self.config,
            &mut state,
            Some(slot),
            bucket,
            estimated_cost,
            kind,
            now,
        ) {
            Decision::Grant { cost } => {
                rule::commit_grant(&self.config, &mut state, slot, kind, now);
                drop(state);
                Acquire::Grant(Permit::new(
                    key.clone(),
                    bucket.clone(),
                    kind,
                    cost,
                    now,
                    slot,
                    cell,
                ))
            }
            Decision::Wait { until, reason } => Acquire::Wait(Wait { until, reason }),
        }
    }

    /// [`QuotaState::acquire_all`], synchronously.
    pub fn acquire_all_now(
        &self,
        key: &QuotaKey,
        asks: &[Ask],
        kind: RequestKind,
        now: Timestamp,
    ) -> Result<Acquire, GovernorError> {
        if asks.is_empty() {
            return Err(GovernorError::NoBucket);
        }
        let cell = self.cell(key);
        let decision = multi::grant_all(&self.config, &mut cell.lock(), asks, kind, now);
        let mut granted = match decision {
            AllDecision::Grant(granted) => granted.into_iter(),
            AllDecision::Wait { until, reason } => {
                return Ok(Acquire::Wait(Wait { until, reason }));
            }
        };
        let first = granted.next().ok_or(GovernorError::NoBucket)?;
        let also: Vec<_> = granted.collect();
        let release = HeldSlots {
            cell,
            slots: std::iter::once(first.slot)
                .chain(also.iter().map(|g| g.slot))
                .collect(),
        };
        let permit = Permit::new(
            key.clone(),
            first.bucket,
            kind,
            first.cost,
            now,
            first.slot,
            Arc::new(release),
        );
        Ok(Acquire::Grant(permit.with_also(
            also.into_iter().map(|g| (g.bucket, g.cost)).collect(),
        )))
    }

    /// [`QuotaState::observe`], synchronously.
    pub fn observe_now(&self, permit: &Permit, signal: &RateLimitSignal, now: Timestamp) {
        let cell = self.cell(permit.key());
        let mut state = cell.lock();
        let slot = match &signal.resource {
            Some(resource) if resource != permit.bucket() => state.find_or_insert(resource),
            _ => permit.slot(),
        };
        if let Some(bucket) = state.buckets.get_mut(slot) {
            rule::apply_reading(&self.config, bucket, signal, now);
        }
    }

    /// [`QuotaState::charge`], synchronously.
    pub fn charge_now(&self, key: &QuotaKey, kind: RequestKind, now: Timestamp) {
        rule::charge(&self.config, &mut self.cell(key).lock(), kind, now);
    }

    /// [`QuotaState::headroom`], synchronously.
    pub fn headroom_now(
        &self,
        key: &QuotaKey,
        bucket: &Bucket,
        estimated_cost: u32,
        kind: RequestKind,
        now: Timestamp,
    ) -> Headroom {
        let cell = self.cell(key);
        // Evaluate on a copy: checking the points limiters evicts old slots, which is harmless,
        // but the rule must not reserve anything here.
        let mut state = cell.lock().clone();
        let slot = state.find(bucket);
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
        }
    }

    /// [`QuotaState::snapshot`], synchronously.
    pub fn snapshot_now(&self, key: &QuotaKey, now: Timestamp) -> IdentitySnapshot {
        let cell = self.cell(key);
        let mut state = cell.lock();
        rule::snapshot(&self.config, key, &mut state, now)
    }

    /// Every identity known, sorted.
    pub fn identities_now(&self) -> Vec<QuotaKey> {
        let map = self.identities.read().unwrap_or_else(|p| p.into_inner());
        let mut keys: Vec<QuotaKey> = map.keys().cloned().collect();
        keys.sort();
        keys
    }
}

impl QuotaState for MemoryQuotaState {
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
        let outcome = self.acquire_now(key, bucket, estimated_cost, kind, now);
        Box::pin(std::future::ready(Ok(outcome)))
    }

    fn acquire_all<'a>(
        &'a self,
        key: &'a QuotaKey,
        asks: &'a [Ask],
        kind: RequestKind,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<Acquire, GovernorError>> {
        Box::pin(std::future::ready(
            self.acquire_all_now(key, asks, kind, now),
        ))
    }

    fn observe<'a>(
        &'a self,
        permit: &'a Permit,
        signal: &'a RateLimitSignal,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<(), GovernorError>> {
        self.observe_now(permit, signal, now);
        Box::pin(std::future::ready(Ok(())))
    }

    fn charge<'a>(
        &'a self,
        key: &'a QuotaKey,
        kind: RequestKind,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<(), GovernorError>> {
        self.charge_now(key, kind, now);
        Box::pin(std::future::ready(Ok(())))
    }

    fn charge_observed<'a>(
        &'a self,
        key: &'a QuotaKey,
        kind: RequestKind,
        bucket: &'a Bucket,
        signal: &'a RateLimitSignal,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<(), GovernorError>> {
        let cell = self.cell(key);
        let mut state = cell.lock();
        rule::charge(&self.config, &mut state, kind, now);
        let slot = state.find_or_insert(signal.resource.as_ref().unwrap_or(bucket));
        if let Some(b) = state.buckets.get_mut(slot) {
            rule::apply_reading(&self.config, b, signal, now);
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn headroom<'a>(
        &'a self,
        key: &'a QuotaKey,
        bucket: &'a Bucket,
        estimated_cost: u32,
        kind: RequestKind,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<Headroom, GovernorError>> {
        let verdict = self.headroom_now(key, bucket, estimated_cost, kind, now);
        Box::pin(std::future::ready(Ok(verdict)))
    }

    fn snapshot<'a>(
        &'a self,
        key: &'a QuotaKey,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<IdentitySnapshot, GovernorError>> {
        let snapshot = self.snapshot_now(key, now);
        Box::pin(std::future::ready(Ok(snapshot)))
    }

    fn identities(&self) -> BoxFuture<'_, Result<Vec<QuotaKey>, GovernorError>> {
        let keys = self.identities_now();
        Box::pin(std::future::ready(Ok(keys)))
    }

    fn wait_ticket(&self, key: &QuotaKey, bucket: &Bucket) -> WaitTicket {
        let cell = self.cell(key);
        let slot = {
            let mut state = cell.lock();
            let slot = state.find_or_insert(bucket);
            state.buckets[slot].waiting += 1;
            slot
        };
        WaitTicket::new(key.clone(), bucket.clone(), slot, cell)
    }
}
