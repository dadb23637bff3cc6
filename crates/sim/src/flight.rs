//! How full a client kept its in-flight slots, read from the request log: each request is in
//! flight from its `arrived` to its `time` (its answer). The makespan benchmarks print these
//! figures; `scripts/in_flight.py` computes the same from a `--log` file.

use headroom_core::clock::Timestamp;

use crate::sim::LogEntry;

/// The figures of one log against a client's in-flight ceiling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Flight {
    /// The most requests in flight at once.
    pub peak: u32,
    /// The time-weighted average of requests in flight, as a share of the ceiling, from the
    /// first arrival until the last `ceiling` requests arrive (after that no client can fill
    /// the slots). `None` when the log has no more requests than the ceiling.
    pub average: Option<f64>,
    /// The share of the time with any request in flight during which at least eight tenths of
    /// the ceiling were. `None` when nothing was ever in flight.
    pub near_full: Option<f64>,
}

/// The figures of a request log against `ceiling`; `None` when no request took any time in
/// flight (no simulated latency: nothing to measure) or an instant does not parse.
pub fn of_log(log: &[LogEntry], ceiling: u32) -> Option<Flight> {
    let spans = spans(log)?;
    let f = flight(&spans, ceiling);
    f.near_full.map(|_| f)
}

impl std::fmt::Display for Flight {
    /// `peak in flight 10, average in flight 94 % of the ceiling, ≥ 80 % of it in flight 85 %
    /// of the busy time`, what the makespan benchmarks print.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "peak in flight {}", self.peak)?;
        if let Some(a) = self.average {
            write!(f, ", average in flight {:.0} % of the ceiling", a * 100.0)?;
        }
        if let Some(n) = self.near_full {
            write!(
                f,
                ", ≥ 80 % of it in flight {:.0} % of the busy time",
                n * 100.0
            )?;
        }
        Ok(())
    }
}

/// Each request's span in flight, in milliseconds, sorted by arrival; `None` when a line's
/// instants do not parse.
pub fn spans(log: &[LogEntry]) -> Option<Vec<(i64, i64)>> {
    let ms = |t: &str| t.parse::<Timestamp>().ok().map(|t| t.as_millisecond());
    let mut spans: Vec<(i64, i64)> = log
        .iter()
        .map(|e| Some((ms(&e.arrived)?, ms(&e.time)?)))
        .collect::<Option<_>>()?;
    spans.sort_unstable();
    Some(spans)
}

/// The figures of `spans` (as [`spans`] returns them) against `ceiling` (at least one).
pub fn flight(spans: &[(i64, i64)], ceiling: u32) -> Flight {
    let ceiling = ceiling.max(1);
    let mut edges: Vec<(i64, i32)> = Vec::with_capacity(spans.len() * 2);
    for (start, end) in spans {
        edges.push((*start, 1));
        edges.push((*end, -1));
    }
    // Ends before starts at one instant: a slot handed on is not two at once.
    edges.sort_unstable();
    let near = f64::from(ceiling) * 0.8;
    let (mut level, mut peak, mut busy, mut full, mut last) = (0i32, 0i32, 0i64, 0i64, None);
    for (t, step) in edges {
        if let Some(prev) = last {
            if level > 0 {
                busy += t - prev;
            }
            if f64::from(level) >= near {
                full += t - prev;
            }
        }
        level += step;
        peak = peak.max(level);
        last = Some(t);
    }
    Flight {
        peak: u32::try_from(peak).unwrap_or(0),
        average: average(spans, ceiling),
        near_full: (busy > 0).then(|| full as f64 / busy as f64),
    }
}

fn average(spans: &[(i64, i64)], ceiling: u32) -> Option<f64> {
    let first = spans.first()?.0;
    let cutoff = spans.get(spans.len().checked_sub(ceiling as usize)?)?.0;
    if cutoff <= first {
        return None;
    }
    let covered: i64 = spans
        .iter()
        .map(|(start, end)| ((*end).min(cutoff) - start).max(0))
        .sum();
    Some(covered as f64 / (cutoff - first) as f64 / f64::from(ceiling))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ten_at_a_time_is_a_full_ceiling() {
        // Three waves of ten 200 ms requests, one after another.
        let spans: Vec<(i64, i64)> = (0..30)
            .map(|i| ((i / 10) * 200, (i / 10) * 200 + 200))
            .collect();
        let f = flight(&spans, 10);
        assert_eq!(f.peak, 10);
        assert_eq!(f.average, Some(1.0));
        assert_eq!(f.near_full, Some(1.0));
        // One at a time: a tenth of the ceiling.
        let serial: Vec<(i64, i64)> = (0..30).map(|i| (i * 100, i * 100 + 100)).collect();
        let f = flight(&serial, 10);
        assert_eq!((f.peak, f.average, f.near_full), (1, Some(0.1), Some(0.0)));
        assert_eq!(flight(&serial[..10], 10).average, None);
    }

    proptest! {
        /// The average never exceeds the peak's share, shares stay within 0..=1 where the
        /// client kept to its ceiling, and the peak is the most spans covering one instant.
        #[test]
        fn the_figures_are_bounded_by_what_was_in_flight(
            raw in proptest::collection::vec((0i64..5_000, 1i64..800), 11..60),
        ) {
            let mut spans: Vec<(i64, i64)> = raw.iter().map(|(s, d)| (*s, s + d)).collect();
            spans.sort_unstable();
            let ceiling = 10;
            let f = flight(&spans, ceiling);
            let most = spans
                .iter()
                .map(|(s, _)| spans.iter().filter(|(a, b)| a <= s && s < b).count())
                .max()
                .unwrap_or(0);
            prop_assert_eq!(f.peak as usize, most);
            if let Some(a) = f.average {
                prop_assert!(a >= 0.0);
                prop_assert!(a <= f64::from(f.peak) / f64::from(ceiling) + 1e-9);
            }
            let near = f.near_full.expect("something was in flight");
            prop_assert!((0.0..=1.0).contains(&near));
        }
    }
}
