//! Requests that spend several buckets at once — Linear's requests and complexity,
//! LaunchDarkly's global and route windows, Jira's endpoint burst and app points: the grant
//! rule of [`rule::evaluate`] applied to every bucket together, all or none, and one
//! [`Permit`] holding every bucket it was granted against.
//!
//! Like [`rule`], the functions here are pure: every state backend calls them on one
//! identity's state under its lock and stores the result.

use super::rule::{self, Decision, IdentityState};
use super::{Acquire, Governor, GovernorConfig, GovernorError, Permit, WaitReason};
use crate::clock::Timestamp;
use crate::quota::{Bucket, QuotaKey, RequestKind};

/// One bucket a request spends, and its estimated cost there.
pub type Ask = (Bucket, u32);

/// One bucket a grant reserved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Granted {
    /// The bucket.
    pub bucket: Bucket,
    /// Its index in [`IdentityState::buckets`].
    pub slot: usize,
    /// What the grant reserved against it: max(estimate, last observed cost).
    pub cost: u32,
}

/// The verdict of [`grant_all`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllDecision {
    /// Every bucket granted, in the order of [`merge_asks`]; each took an in-flight slot.
    Grant(Vec<Granted>),
    /// Nothing changed; do not send before `until`.
    Wait {
        /// The latest of the refusing buckets' waits: the first instant all could grant, as
        /// far as is known.
        until: Timestamp,
        /// The reason of the bucket that waits longest (the first named, on a tie).
        reason: WaitReason,
    },
}

/// `asks` in the order first named, a bucket named twice spent once at the sum of its costs:
/// one request takes one in-flight slot of a bucket, however it names it.
pub fn merge_asks(asks: &[Ask]) -> Vec<Ask> {
    let mut merged: Vec<Ask> = Vec::with_capacity(asks.len());
    for (bucket, cost) in asks {
        match merged.iter_mut().find(|(b, _)| b == bucket) {
            Some((_, total)) => *total = total.saturating_add(*cost),
            None => merged.push((bucket.clone(), *cost)),
        }
    }
    merged
}

/// Decides one request over every bucket of `asks` together. Either every bucket grants — each
/// takes an in-flight slot, the identity takes one for the request (not one per bucket) and
/// the local points windows count the request once — or `identity` is left exactly as it was.
///
/// Each bucket is judged by [`rule::evaluate`], so a single ask decides exactly as the
/// single-bucket rule does. An empty `asks` grants nothing and changes nothing (a backend
/// refuses it before asking).
pub fn grant_all(
    config: &GovernorConfig,
    identity: &mut IdentityState,
    asks: &[Ask],
    kind: RequestKind,
    now: Timestamp,
) -> AllDecision {
    let asks = merge_asks(asks);
    if asks.is_empty() {
        return AllDecision::Grant(Vec::new());
    }
    // Judged on a copy: evaluation evicts old points and creates unseen buckets, and a refusal
    // must leave nothing behind.
    let mut trial = identity.clone();
    let mut granted = Vec::with_capacity(asks.len());
    let mut refusal: Option<(Timestamp, WaitReason)> = None;
    for (bucket, estimate) in &asks {
        let slot = trial.find_or_insert(bucket);
        match rule::evaluate(config, &mut trial, Some(slot), bucket, *estimate, kind, now) {
            Decision::Grant { cost } => granted.push(Granted {
                bucket: bucket.clone(),
                slot,
                cost,
            }),
            Decision::Wait { until, reason } => {
                if refusal.as_ref().is_none_or(|(latest, _)| until > *latest) {
                    refusal = Some((until, reason));
                }
            }
        }
    }
    if let Some((until, reason)) = refusal {
        return AllDecision::Wait { until, reason };
    }
    let slots: Vec<usize> = granted.iter().map(|g| g.slot).collect();
    commit_all(config, &mut trial, &slots, kind, now);
    *identity = trial;
    AllDecision::Grant(granted)
}

/// Records a grant over `slots`: one more in flight for each bucket, one for the identity,
/// the request's points counted once, each endpoint bucket's pacing counting it.
pub fn commit_all(
    config: &GovernorConfig,
    identity: &mut IdentityState,
    slots: &[usize],
    kind: RequestKind,
    now: Timestamp,
) {
    identity.in_flight += 1;
    for &slot in slots {
        if let Some(b) = identity.buckets.get_mut(slot) {
            b.in_flight += 1;
        }
        rule::record_pace(config, identity, slot, now);
    }
    rule::charge(config, identity, kind, now);
}

/// Releases one request's slots: one of each bucket in `slots`, one of the identity.
/// Saturating, like [`rule::release`], which it equals for a single slot.
pub fn release_all(identity: &mut IdentityState, slots: &[usize]) {
    identity.in_flight = identity.in_flight.saturating_sub(1);
    for &slot in slots {
        if let Some(b) = identity.buckets.get_mut(slot) {
            b.in_flight = b.in_flight.saturating_sub(1);
        }
    }
}

impl Permit {
    /// The permit of a grant over several buckets: `self` names the first, `also` the others
    /// with what was reserved against each. Its release frees them all.
    pub fn with_also(mut self, also: Vec<Ask>) -> Self {
        self.also = also;
        self
    }

    /// The buckets besides [`Permit::bucket`] this permit holds, with their reserved costs.
    pub fn also(&self) -> &[Ask] {
        &self.also
    }
}

impl Governor {
    /// Asks to send one request that spends every bucket of `asks` (bucket, estimated cost):
    /// granted by all of them, each taking an in-flight slot and the identity one, or by none,
    /// with the wait of the bucket that waits longest. The permit holds every bucket and frees
    /// them all on release or drop; [`Governor::observe`] applies a response to the bucket it
    /// reports, as for any permit. A bucket named twice is spent once at the sum of its costs.
    /// A single ask decides as [`Governor::acquire`] does; none is
    /// [`GovernorError::NoBucket`].
    pub async fn acquire_all(
        &self,
        key: &QuotaKey,
        asks: &[Ask],
        kind: RequestKind,
    ) -> Result<Acquire, GovernorError> {
        self.state
            .acquire_all(key, asks, kind, self.clock.now())
            .await
    }
}
