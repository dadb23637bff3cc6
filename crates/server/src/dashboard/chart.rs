//! A bucket's remaining over a window as an inline SVG, rendered on the server from the
//! downsampled history: a band from each slot's lowest to highest remaining, a line through
//! the lowest, the limit as a dashed line, and marks — orange ticks where readings carried a
//! wait, red bars at rate-limit observations (403/429, secondary limits, hibernations).
//! Pure: the same history gives the same SVG.

use std::fmt::Write as _;

use headroom_core::clock::Timestamp;
use headroom_store::StoredObservation;
use headroom_store::quota_history::HistoryPoint;

use super::words;

/// The drawing's size in SVG units.
pub const WIDTH: f64 = 320.0;
/// The drawing's size in SVG units.
pub const HEIGHT: f64 = 64.0;

/// What one chart draws.
#[derive(Debug, Clone, Copy)]
pub struct ChartInput<'a> {
    /// The slots, oldest first.
    pub points: &'a [HistoryPoint],
    /// The identity's observations in the window.
    pub observations: &'a [StoredObservation],
    /// The window's start.
    pub since: Timestamp,
    /// The window's end.
    pub until: Timestamp,
    /// What the chart is of, for the reader ("REST remaining, last hour").
    pub title: &'a str,
}

fn x_of(t: Timestamp, since: Timestamp, until: Timestamp) -> f64 {
    let span = until.duration_since(since).as_secs_f64().max(1.0);
    let at = t.duration_since(since).as_secs_f64().clamp(0.0, span);
    at / span * WIDTH
}

fn y_of(value: u64, top: u64) -> f64 {
    let top = top.max(1) as f64;
    HEIGHT - (value as f64 / top).min(1.0) * HEIGHT
}

/// The chart, as an `<svg>` element.
pub fn svg(input: ChartInput<'_>) -> String {
    let ChartInput {
        points,
        observations,
        since,
        until,
        title,
    } = input;
    let top = points
        .iter()
        .filter_map(|p| p.limit.or(p.remaining_max))
        .max()
        .unwrap_or(1);
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"chart\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         role=\"img\" aria-label=\"{title}\" xmlns=\"http://www.w3.org/2000/svg\"><title>{title}</title>\
         <rect class=\"frame\" x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{HEIGHT}\"/>"
    );
    let drawn: Vec<(f64, u64, u64)> = points
        .iter()
        .filter_map(|p| {
            let low = p.remaining_min?;
            Some((
                x_of(p.at, since, until),
                low,
                p.remaining_max.unwrap_or(low),
            ))
        })
        .collect();
    if drawn.is_empty() {
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">no readings</text>",
            WIDTH / 2.0,
            HEIGHT / 2.0
        );
    } else {
        let _ = write!(
            out,
            "<line class=\"limit\" x1=\"0\" x2=\"{WIDTH}\" y1=\"0\" y2=\"0\"/>"
        );
        let mut band = String::new();
        for (x, _, high) in &drawn {
            let _ = write!(band, "{x:.1},{:.1} ", y_of(*high, top));
        }
        for (x, low, _) in drawn.iter().rev() {
            let _ = write!(band, "{x:.1},{:.1} ", y_of(*low, top));
        }
        let _ = write!(
            out,
            "<polygon class=\"band\" points=\"{}\"/>",
            band.trim_end()
        );
        let line: Vec<String> = drawn
            .iter()
            .map(|(x, low, _)| format!("{x:.1},{:.1}", y_of(*low, top)))
            .collect();
        let _ = write!(
            out,
            "<polyline class=\"remaining\" points=\"{}\"/>",
            line.join(" ")
        );
        if let [(x, low, _)] = drawn.as_slice() {
            // One slot draws no line: a dot says where it is.
            let _ = write!(
                out,
                "<circle class=\"reading\" cx=\"{x:.1}\" cy=\"{:.1}\" r=\"2\"/>",
                y_of(*low, top)
            );
        }
    }
    for p in points.iter().filter(|p| p.waits > 0) {
        let x = x_of(p.at, since, until);
        let _ = write!(
            out,
            "<line class=\"wait\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{}\" y2=\"{HEIGHT}\"/>",
            HEIGHT - 8.0
        );
    }
    for o in observations {
        if o.observed_at < since || o.observed_at > until {
            continue;
        }
        let x = x_of(o.observed_at, since, until);
        let what = o.reason.as_deref().unwrap_or("rate limit");
        let _ = write!(
            out,
            "<line class=\"limit-hit\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"0\" y2=\"{HEIGHT}\">\
             <title>{what} at {}</title></line>",
            words::clock_time(o.observed_at)
        );
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).expect("valid")
    }

    fn point(at: i64, low: u64, high: u64, waits: u64) -> HistoryPoint {
        HistoryPoint {
            at: t(at),
            remaining_min: Some(low),
            remaining_max: Some(high),
            limit: Some(100),
            readings: 1,
            waits,
        }
    }

    #[test]
    fn remaining_is_drawn_against_the_limit_over_the_window() {
        let points = [
            point(0, 100, 100, 0),
            point(1800, 50, 60, 1),
            point(3600, 0, 0, 0),
        ];
        let svg = svg(ChartInput {
            points: &points,
            observations: &[],
            since: t(0),
            until: t(3600),
            title: "REST remaining, last hour",
        });
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.ends_with("</svg>"));
        assert!(
            svg.contains("points=\"0.0,0.0 160.0,32.0 320.0,64.0\""),
            "{svg}"
        );
        assert!(svg.contains("class=\"wait\" x1=\"160.0\""), "{svg}");
        assert!(svg.contains("<title>REST remaining, last hour</title>"));
    }

    #[test]
    fn an_empty_history_says_so() {
        let svg = svg(ChartInput {
            points: &[],
            observations: &[],
            since: t(0),
            until: t(60),
            title: "x",
        });
        assert!(svg.contains("no readings"));
        assert!(!svg.contains("polyline"));
    }
}
