//! A bucket's rate-limit observations counted per history slot and by who decided the wait:
//! the provider's refusals (a 403 or 429 it sent) apart from headroom's own waits (the
//! governor's deferrals, its in-flight ceiling, a sync run's hibernation). The dashboard draws
//! these counts as marks, one per slot and kind, never one per event: a day of thousands of
//! deferrals is a few hundred numbers. Slots are cut as the readings' history cuts them, so a
//! mark and a point of the same slot share their instant.

use headroom_core::clock::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use crate::db::{Pools, ReadRow, on_each_pool};
use crate::error::{Result, StoreError};
use crate::model::{from_ms, ms};

use super::BucketKey;

/// Rate-limit events counted by who decided the wait.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MarkCounts {
    /// The provider refused a request with a rate limit (it answered 403 or 429).
    pub provider_refusals: u64,
    /// The governor deferred work before sending it (an exhausted bucket or its reserve, a
    /// secondary block it remembers, pacing): nothing was refused.
    pub local_deferrals: u64,
    /// The governor held work back at its in-flight ceiling.
    pub concurrency_waits: u64,
    /// A sync run went to sleep until its quota reopens.
    pub hibernations: u64,
    /// Events stored before their kind was recorded.
    pub unrecorded: u64,
}

impl MarkCounts {
    /// Counts one stored `(event_kind, wait_reason)` pair `n` times.
    pub fn add_kind(&mut self, event_kind: Option<&str>, wait_reason: Option<&str>, n: u64) {
        let count = match (event_kind, wait_reason) {
            (Some("refused"), _) => &mut self.provider_refusals,
            (Some("hibernated"), _) => &mut self.hibernations,
            (Some(_), Some("in_flight_ceiling")) => &mut self.concurrency_waits,
            (Some(_), _) => &mut self.local_deferrals,
            (None, _) => &mut self.unrecorded,
        };
        *count += n;
    }

    /// Adds another slot's counts.
    pub fn add(&mut self, other: &MarkCounts) {
        self.provider_refusals += other.provider_refusals;
        self.local_deferrals += other.local_deferrals;
        self.concurrency_waits += other.concurrency_waits;
        self.hibernations += other.hibernations;
        self.unrecorded += other.unrecorded;
    }

    /// headroom's own waits: deferrals, concurrency waits and hibernations.
    pub fn own_waits(&self) -> u64 {
        self.local_deferrals + self.concurrency_waits + self.hibernations
    }
}

/// One slot's events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MarkSlot {
    /// The slot's start (the instant of the history point of the same slot).
    #[schema(value_type = String, format = DateTime)]
    pub at: Timestamp,
    /// What happened in it.
    #[serde(flatten)]
    pub counts: MarkCounts,
}

const MARKS_SQL: &str = "SELECT (observed_at_ms - $4) / $5 AS slot, event_kind, wait_reason, \
    COUNT(*) AS n FROM rate_limit_observations \
    WHERE host = $1 AND subject = $2 AND (bucket = $3 OR bucket IS NULL) \
    AND observed_at_ms >= $6 AND observed_at_ms <= $7 \
    GROUP BY slot, event_kind, wait_reason ORDER BY slot";

/// The events of one bucket of an identity (and those that name no bucket) in
/// `[since, until]`, counted per slot of `step`; only slots with events, oldest first.
pub(super) async fn marks(
    pools: Pools<'_>,
    key: BucketKey<'_>,
    since: Timestamp,
    until: Timestamp,
    step: SignedDuration,
) -> Result<Vec<MarkSlot>> {
    let step_ms = i64::try_from(step.as_millis()).unwrap_or(i64::MAX);
    if step_ms <= 0 {
        return Err(StoreError::Invalid {
            field: "step",
            problem: format!("a history slot must last at least a millisecond (got {step})"),
        });
    }
    let start = super::readings::slot_origin(ms(since), step_ms);
    let rows = on_each_pool!(pools, |pool| {
        let rows = sqlx::query(MARKS_SQL)
            .bind(key.host)
            .bind(key.subject)
            .bind(key.bucket)
            .bind(start)
            .bind(step_ms)
            .bind(ms(since))
            .bind(ms(until))
            .fetch_all(pool)
            .await?;
        rows.iter()
            .map(|row| {
                Ok((
                    row.int("slot")?,
                    row.opt_text("event_kind")?,
                    row.opt_text("wait_reason")?,
                    row.count("n")?,
                ))
            })
            .collect::<Result<Vec<_>>>()?
    });
    let mut out: Vec<(i64, MarkCounts)> = Vec::new();
    for (slot, kind, wait_reason, n) in rows {
        if out.last().is_none_or(|(last, _)| *last != slot) {
            out.push((slot, MarkCounts::default()));
        }
        if let Some((_, counts)) = out.last_mut() {
            counts.add_kind(kind.as_deref(), wait_reason.as_deref(), n);
        }
    }
    out.into_iter()
        .map(|(slot, counts)| {
            Ok(MarkSlot {
                at: from_ms("slot", start.saturating_add(slot.saturating_mul(step_ms)))?,
                counts,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::MarkCounts;

    #[test]
    fn only_a_refusal_the_provider_sent_counts_as_one() {
        let mut c = MarkCounts::default();
        c.add_kind(Some("deferred"), Some("exhausted"), 674);
        c.add_kind(Some("deferred"), Some("in_flight_ceiling"), 642);
        c.add_kind(Some("hibernated"), None, 19);
        c.add_kind(Some("deferred"), Some("secondary_block"), 1);
        assert_eq!(c.provider_refusals, 0);
        assert_eq!(
            (c.local_deferrals, c.concurrency_waits, c.hibernations),
            (675, 642, 19)
        );
        c.add_kind(Some("refused"), None, 2);
        c.add_kind(None, None, 3);
        assert_eq!(
            (c.provider_refusals, c.unrecorded, c.own_waits()),
            (2, 3, 1336)
        );
    }
}
