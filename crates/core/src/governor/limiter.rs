//! Local points-per-period limiters for the limits GitHub enforces but never reports.
//!
//! GitHub's secondary limits (REST and GraphQL points per minute, content creation per
//! minute and per hour) send no headers, so counting locally is the one place where counting
//! is right. A sliding window of fixed slots keeps this O(1) per request; a slot's points are
//! kept until its end plus the period, so the count errs on the strict side.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

use crate::clock::{SignedDuration, Timestamp};

/// A limit of `points` per `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointsLimit {
    /// Points allowed within any window of `period`.
    pub points: u32,
    /// The window's length.
    pub period: SignedDuration,
}

impl PointsLimit {
    /// `points` per minute.
    pub const fn per_minute(points: u32) -> Self {
        Self {
            points,
            period: SignedDuration::from_secs(60),
        }
    }
    /// `points` per hour.
    pub const fn per_hour(points: u32) -> Self {
        Self {
            points,
            period: SignedDuration::from_secs(3600),
        }
    }
}

/// A period as a person reads it: whole seconds as `60s`, an endpoint's pace as `100ms`.
pub(crate) struct Period(pub(crate) SignedDuration);

impl std::fmt::Display for Period {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.subsec_nanos() == 0 {
            write!(f, "{}s", self.0.as_secs())
        } else {
            write!(f, "{}ms", self.0.as_millis())
        }
    }
}

/// Slots per period: 1 s slots for a minute, 1 min slots for an hour.
const SLOTS_PER_PERIOD: i64 = 60;

/// A sliding-window points counter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointsWindow {
    limit: PointsLimit,
    slot_ms: i64,
    /// (slot start in epoch ms, points), oldest first.
    slots: VecDeque<(i64, u32)>,
    total: u64,
}

impl PointsWindow {
    /// An empty window for `limit`.
    pub fn new(limit: PointsLimit) -> Self {
        let period_ms = i64::try_from(limit.period.as_millis())
            .unwrap_or(i64::MAX)
            .max(1);
        Self {
            limit,
            slot_ms: (period_ms / SLOTS_PER_PERIOD).max(1),
            slots: VecDeque::new(),
            total: 0,
        }
    }

    /// The limit this window enforces.
    pub fn limit(&self) -> PointsLimit {
        self.limit
    }

    fn period_ms(&self) -> i64 {
        i64::try_from(self.limit.period.as_millis()).unwrap_or(i64::MAX)
    }

    /// When a slot's points stop counting.
    fn expiry_of(&self, slot_start: i64) -> i64 {
        slot_start
            .saturating_add(self.slot_ms)
            .saturating_add(self.period_ms())
    }

    fn evict(&mut self, now_ms: i64) {
        while let Some(&(start, points)) = self.slots.front() {
            if self.expiry_of(start) <= now_ms {
                self.slots.pop_front();
                self.total -= u64::from(points);
            } else {
                break;
            }
        }
    }

    /// Points counted in the window at `now`.
    pub fn used(&mut self, now: Timestamp) -> u64 {
        self.evict(now.as_millisecond());
        self.total
    }

    /// `None` if `points` fit now; otherwise the earliest instant they will fit.
    pub fn check(&mut self, points: u32, now: Timestamp) -> Option<Timestamp> {
        let now_ms = now.as_millisecond();
        self.evict(now_ms);
        let limit = u64::from(self.limit.points);
        let needed = u64::from(points);
        if self.total + needed <= limit {
            return None;
        }
        if needed > limit {
            // Can never fit: say so by pointing at the end of a full, empty window.
            return Timestamp::from_millisecond(now_ms.saturating_add(self.period_ms())).ok();
        }
        let mut remaining_total = self.total;
        for &(start, slot_points) in &self.slots {
            remaining_total -= u64::from(slot_points);
            if remaining_total + needed <= limit {
                return Timestamp::from_millisecond(self.expiry_of(start)).ok();
            }
        }
        Timestamp::from_millisecond(now_ms.saturating_add(self.period_ms())).ok()
    }

    /// Counts `points` at `now`.
    pub fn record(&mut self, points: u32, now: Timestamp) {
        let now_ms = now.as_millisecond();
        self.evict(now_ms);
        let slot_start = now_ms - now_ms.rem_euclid(self.slot_ms);
        match self.slots.back_mut() {
            Some((start, p)) if *start >= slot_start => *p = p.saturating_add(points),
            _ => self.slots.push_back((slot_start, points)),
        }
        self.total += u64::from(points);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_millisecond(1_700_000_000_000 + ms).expect("valid")
    }

    #[test]
    fn admits_up_to_the_limit_then_names_when_points_free_up() {
        let mut w = PointsWindow::new(PointsLimit::per_minute(10));
        for i in 0..10 {
            assert_eq!(w.check(1, at(i * 100)), None);
            w.record(1, at(i * 100));
        }
        let until = w.check(1, at(1_000)).expect("full");
        // The oldest slot (started at 0 ms) stops counting after its second plus a minute.
        assert_eq!(until, at(61_000));
        assert_eq!(w.check(1, until), None);
    }

    #[test]
    fn a_request_larger_than_the_limit_never_fits_now() {
        let mut w = PointsWindow::new(PointsLimit::per_minute(4));
        assert!(w.check(5, at(0)).is_some());
    }

    #[test]
    fn never_counts_more_than_the_limit_in_any_minute() {
        let mut w = PointsWindow::new(PointsLimit::per_minute(900));
        let mut admitted: Vec<i64> = Vec::new();
        let mut t = 0;
        while t < 300_000 {
            let cost = if t % 7 == 0 { 5 } else { 1 };
            if w.check(cost, at(t)).is_none() {
                w.record(cost, at(t));
                for _ in 0..cost {
                    admitted.push(t);
                }
            }
            t += 13;
        }
        for (i, &start) in admitted.iter().enumerate() {
            let in_window = admitted[i..]
                .iter()
                .take_while(|&&x| x < start + 60_000)
                .count();
            assert!(
                in_window <= 900,
                "{in_window} points within a minute from {start}"
            );
        }
        assert!(
            admitted.len() > 900 * 4,
            "the limiter should not starve: {}",
            admitted.len()
        );
    }
}
