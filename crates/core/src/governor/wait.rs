//! Why the governor holds a request back: [`WaitReason`], a kind a machine reads
//! ([`WaitReason::as_str`]) and words a person reads (its `Display`).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::limiter::{self, PointsLimit};
use crate::clock::Timestamp;
use crate::quota::{AppLimit, Bucket, Surface};

/// Why a request must wait, in terms a person can read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WaitReason {
    /// The bucket's remaining quota is below what the grant rule keeps in reserve.
    Exhausted {
        /// The bucket.
        bucket: Bucket,
        /// What the last reading said remains.
        remaining: u64,
        /// What the rule needs: cost × (in flight + 1 + ceiling).
        needed: u64,
        /// When the window resets.
        reset_at: Timestamp,
    },
    /// A secondary limit blocks the bucket.
    SecondaryBlock {
        /// The bucket.
        bucket: Bucket,
        /// Consecutive secondary limits so far.
        strikes: u32,
    },
    /// The identity already has its ceiling of requests in flight.
    InFlightCeiling {
        /// Requests in flight.
        in_flight: u32,
        /// The ceiling.
        ceiling: u32,
    },
    /// The local points-per-period limiter is full.
    LocalPoints {
        /// REST or GraphQL.
        surface: Surface,
        /// The limit.
        limit: PointsLimit,
    },
    /// The content-creation limiter is full.
    ContentCreation {
        /// The limit.
        limit: PointsLimit,
    },
    /// A provider application limit's local count is full.
    ApplicationLimit {
        /// Which.
        name: AppLimit,
        /// Its rate.
        limit: PointsLimit,
    },
    /// A bucket not read in its current window (LaunchDarkly's learned windows): its first
    /// request waits for the next window's start, where every other process still keeps its
    /// reserve. This process's own pacing, not the provider's quota.
    WindowStart {
        /// The bucket.
        bucket: Bucket,
    },
}

impl WaitReason {
    /// The stable snake_case name of the kind of wait.
    pub fn as_str(&self) -> &'static str {
        match self {
            WaitReason::Exhausted { .. } => "exhausted",
            WaitReason::SecondaryBlock { .. } => "secondary_block",
            WaitReason::InFlightCeiling { .. } => "in_flight_ceiling",
            WaitReason::LocalPoints { .. } => "local_points",
            WaitReason::ContentCreation { .. } => "content_creation",
            WaitReason::ApplicationLimit { .. } => "application_limit",
            WaitReason::WindowStart { .. } => "window_start",
        }
    }

    /// The bucket this reason concerns, if it concerns one.
    pub fn bucket(&self) -> Option<&Bucket> {
        match self {
            WaitReason::Exhausted { bucket, .. }
            | WaitReason::SecondaryBlock { bucket, .. }
            | WaitReason::WindowStart { bucket } => Some(bucket),
            _ => None,
        }
    }
}

impl fmt::Display for WaitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitReason::Exhausted {
                bucket,
                remaining,
                needed,
                reset_at,
            } => write!(
                f,
                "{bucket} quota exhausted: {remaining} left, {needed} needed to send safely; resets at {reset_at}"
            ),
            WaitReason::SecondaryBlock { bucket, strikes } => write!(
                f,
                "{bucket} blocked by a secondary rate limit ({strikes} in a row)"
            ),
            WaitReason::InFlightCeiling { in_flight, ceiling } => write!(
                f,
                "{in_flight} requests in flight, the identity's ceiling is {ceiling}"
            ),
            WaitReason::LocalPoints { surface, limit } => write!(
                f,
                "{} points limit reached ({} per {})",
                match surface {
                    Surface::Rest => "REST",
                    Surface::GraphQl => "GraphQL",
                },
                limit.points,
                limiter::Period(limit.period)
            ),
            WaitReason::ContentCreation { limit } => write!(
                f,
                "content-creation limit reached ({} per {}s)",
                limit.points,
                limit.period.as_secs()
            ),
            WaitReason::ApplicationLimit { name, limit } => write!(
                f,
                "application limit {} reached ({} per {}s)",
                name.as_str(),
                limit.points,
                limit.period.as_secs()
            ),
            WaitReason::WindowStart { bucket } => write!(
                f,
                "{bucket} not read in this window: its first request waits for the next window's start"
            ),
        }
    }
}
