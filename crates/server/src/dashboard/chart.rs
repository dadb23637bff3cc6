//! A bucket's remaining over a window as an inline SVG, rendered on the server from the
//! downsampled history (at most one slot per column of the plot): a band from each slot's
//! lowest to highest remaining, a line through the lowest, the limit dashed; a value axis
//! (the limit, half of it, 0) and a time axis (clock times the page's script shows in the
//! reader's zone); and marks, one path per kind with one stroke per slot, never one element
//! per event. A refusal the provider sent (403/429) is a red bar across the plot; headroom's
//! own waits — local deferrals, concurrency waits, hibernations — are ticks in a strip under
//! it, one row each. A legend beside the chart names each kind with its count, so that
//! "0 provider refusals" is said where the governor did all the waiting.
//! Pure: the same history gives the same SVG.

use std::fmt::Write as _;

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_store::quota_history::HistoryPoint;
use headroom_store::quota_history::marks::{MarkCounts, MarkSlot};

use super::render::escape;
use super::words;

/// The drawing's size in SVG units.
pub const WIDTH: f64 = 372.0;
/// The drawing's size in SVG units.
pub const HEIGHT: f64 = 100.0;
/// The plot's width in SVG units: its columns, and the most slots a history is cut into.
pub const PLOT_WIDTH: u32 = 300;
/// Left of the plot: the value axis's labels.
const PLOT_X: f64 = 44.0;
const PLOT_TOP: f64 = 6.0;
const PLOT_HEIGHT: f64 = 60.0;
/// The strip of headroom's own waits under the plot: one row per kind.
const STRIP_TOP: f64 = 69.0;
const STRIP_ROW: f64 = 5.0;
const STRIP_TICK: f64 = 4.0;
/// The time axis's labels' baseline.
const TIME_LABELS_Y: f64 = 95.0;
/// Steps a time axis ticks at: the first that puts at most [`MAX_TICKS`] in the window.
const TICK_STEPS: [i64; 11] = [
    60, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400,
];
const MAX_TICKS: i64 = 4;

/// What one chart draws.
#[derive(Debug, Clone, Copy)]
pub struct ChartInput<'a> {
    /// The slots with readings, oldest first.
    pub points: &'a [HistoryPoint],
    /// The slots with rate-limit events, oldest first.
    pub marks: &'a [MarkSlot],
    /// The marks added up (the legend's and the summary's counts).
    pub totals: &'a MarkCounts,
    /// The slots' length.
    pub step: SignedDuration,
    /// The window's start.
    pub since: Timestamp,
    /// The window's end.
    pub until: Timestamp,
    /// What the chart is of, for the reader ("REST remaining, last hour").
    pub title: &'a str,
}

/// A number with one decimal at most, "12" rather than "12.0": the SVG is most of the page.
fn num(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map_or(s.clone(), str::to_owned)
}

fn x_of(t: Timestamp, since: Timestamp, until: Timestamp) -> f64 {
    let span = until.duration_since(since).as_secs_f64().max(1.0);
    let at = t.duration_since(since).as_secs_f64().clamp(0.0, span);
    PLOT_X + at / span * f64::from(PLOT_WIDTH)
}

fn y_of(value: u64, top: u64) -> f64 {
    let top = top.max(1) as f64;
    PLOT_TOP + PLOT_HEIGHT - (value as f64 / top).min(1.0) * PLOT_HEIGHT
}

/// "674 local deferrals", "1 provider refusal".
fn counted(n: u64, one: &str, many: &str) -> String {
    format!(
        "{} {}",
        words::thousands(n),
        if n == 1 { one } else { many }
    )
}

/// Each kind with its count, in the legend's order: (CSS class, words).
fn kinds(totals: &MarkCounts) -> Vec<(&'static str, String)> {
    let mut out = vec![
        (
            "refusal",
            counted(
                totals.provider_refusals,
                "provider refusal (403/429)",
                "provider refusals (403/429)",
            ),
        ),
        (
            "deferral",
            counted(totals.local_deferrals, "local deferral", "local deferrals"),
        ),
        (
            "concurrency",
            counted(
                totals.concurrency_waits,
                "concurrency wait",
                "concurrency waits",
            ),
        ),
        (
            "hibernation",
            counted(totals.hibernations, "hibernation", "hibernations"),
        ),
    ];
    if totals.unrecorded > 0 {
        out.push((
            "unrecorded",
            counted(
                totals.unrecorded,
                "event of an unrecorded kind",
                "events of an unrecorded kind",
            ),
        ));
    }
    out
}

/// The chart's legend, as HTML to place beside it: every kind with its count, "0 provider
/// refusals (403/429)" included.
pub fn legend(totals: &MarkCounts) -> String {
    let keys: Vec<String> = kinds(totals)
        .into_iter()
        .map(|(class, words)| format!("<span class=\"key {class}\">{words}</span>"))
        .collect();
    format!("<p class=\"legend\">{}</p>", keys.join(" · "))
}

/// What a screen reader says of the chart: the remaining's lowest and latest, and the counts.
fn summary(input: &ChartInput<'_>, top: u64) -> String {
    let counts: Vec<String> = kinds(input.totals).into_iter().map(|(_, w)| w).collect();
    let lowest = input.points.iter().filter_map(|p| p.remaining_min).min();
    let latest = input.points.iter().rev().find_map(|p| p.remaining_min);
    let remaining = match (lowest, latest) {
        (Some(low), Some(last)) => format!(
            "lowest {}, now {} of {}",
            words::thousands(low),
            words::thousands(last),
            words::thousands(top)
        ),
        _ => "no readings".to_owned(),
    };
    format!("{}: {remaining}; {}", input.title, counts.join(", "))
}

/// The instants the time axis ticks at: multiples of a round step in `(since, until]`.
fn ticks(since: Timestamp, until: Timestamp) -> Vec<Timestamp> {
    let span = until.duration_since(since).as_secs().max(1);
    let step = TICK_STEPS
        .into_iter()
        .find(|step| span / step <= MAX_TICKS)
        .unwrap_or((span + MAX_TICKS - 1) / MAX_TICKS);
    let first = since.as_second().div_euclid(step) * step + step;
    (0..=MAX_TICKS)
        .filter_map(|k| Timestamp::from_second(first + k * step).ok())
        .filter(|t| *t <= until)
        .collect()
}

/// The frame, the value axis (the top, half of it, 0) and the time axis.
fn axes(out: &mut String, since: Timestamp, until: Timestamp, top: u64) {
    let right = PLOT_X + f64::from(PLOT_WIDTH);
    let _ = write!(
        out,
        "<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{PLOT_WIDTH}\" height=\"{}\"/>",
        num(PLOT_X),
        num(PLOT_TOP),
        num(PLOT_HEIGHT)
    );
    for value in [top, top / 2, 0] {
        let y = y_of(value, top);
        if value == top / 2 {
            let _ = write!(
                out,
                "<path class=\"grid\" d=\"M{} {}H{}\"/>",
                num(PLOT_X),
                num(y),
                num(right)
            );
        }
        let _ = write!(
            out,
            "<text class=\"value\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            num(PLOT_X - 4.0),
            num(y + 3.0),
            words::thousands(value)
        );
    }
    let strip_bottom = STRIP_TOP + 3.0 * STRIP_ROW;
    let _ = write!(
        out,
        "<text class=\"value\" x=\"{}\" y=\"{}\" text-anchor=\"end\">waits</text>",
        num(PLOT_X - 4.0),
        num(strip_bottom - 2.0)
    );
    for t in ticks(since, until) {
        let x = x_of(t, since, until);
        // A label too near the value axis would run into it.
        if x < PLOT_X + 20.0 {
            continue;
        }
        let _ = write!(
            out,
            "<path class=\"grid\" d=\"M{x} {}V{}\"/>\
             <text class=\"clock tick\" x=\"{x}\" y=\"{}\" text-anchor=\"middle\" \
             datetime=\"{t}\">{}</text>",
            num(PLOT_TOP),
            num(strip_bottom),
            num(TIME_LABELS_Y),
            words::clock_time(t),
            x = num(x),
        );
    }
}

/// A coordinate in tenths of a unit, said as briefly as SVG reads it: "12", "1.2", ".4",
/// "-.4".
fn tenths(v: i64) -> String {
    let sign = if v < 0 { "-" } else { "" };
    let (whole, tenth) = (v.abs() / 10, v.abs() % 10);
    match (whole, tenth) {
        (w, 0) => format!("{sign}{w}"),
        (0, t) => format!("{sign}.{t}"),
        (w, t) => format!("{sign}{w}.{t}"),
    }
}

fn to_tenths(v: f64) -> i64 {
    (v * 10.0).round() as i64
}

/// A path through `points` in relative steps (`M` then `l dx dy`), each rounded from its
/// absolute position so no error adds up: a third shorter than absolute pairs.
fn relative_path(points: impl IntoIterator<Item = (f64, f64)>) -> String {
    let mut d = String::new();
    let mut last: Option<(i64, i64)> = None;
    for (x, y) in points {
        let (x, y) = (to_tenths(x), to_tenths(y));
        match last {
            None => {
                let _ = write!(d, "M{} {}", tenths(x), tenths(y));
            }
            Some((lx, ly)) => {
                let dy = tenths(y - ly);
                let gap = if dy.starts_with('-') { "" } else { " " };
                let _ = write!(d, "l{}{gap}{dy}", tenths(x - lx));
            }
        }
        last = Some((x, y));
    }
    d
}

/// The band, the line through the lowest and the limit; "no readings" without a slot.
fn series(out: &mut String, points: &[HistoryPoint], since: Timestamp, until: Timestamp, top: u64) {
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
            num(PLOT_X + f64::from(PLOT_WIDTH) / 2.0),
            num(PLOT_TOP + PLOT_HEIGHT / 2.0)
        );
        return;
    }
    if let Some(limit) = points.iter().filter_map(|p| p.limit).max() {
        let _ = write!(
            out,
            "<path class=\"limit\" d=\"M{} {y}H{}\"/>",
            num(PLOT_X),
            num(PLOT_X + f64::from(PLOT_WIDTH)),
            y = num(y_of(limit, top))
        );
    }
    let highs = drawn.iter().map(|(x, _, high)| (*x, y_of(*high, top)));
    let lows = drawn.iter().rev().map(|(x, low, _)| (*x, y_of(*low, top)));
    let _ = write!(
        out,
        "<path class=\"band\" d=\"{}z\"/>",
        relative_path(highs.chain(lows))
    );
    let line = relative_path(drawn.iter().map(|(x, low, _)| (*x, y_of(*low, top))));
    let _ = write!(out, "<path class=\"remaining\" d=\"{line}\"/>");
    if let [(x, low, _)] = drawn.as_slice() {
        // One slot draws no line: a dot says where it is.
        let _ = write!(
            out,
            "<circle class=\"reading\" cx=\"{}\" cy=\"{}\" r=\"2\"/>",
            num(*x),
            num(y_of(*low, top))
        );
    }
}

/// The columns `[x0, x1]` of the slots with events of one kind, neighbours less than two
/// columns apart joined: a mark per pixel column, however many events fell in it.
fn runs(starts: impl IntoIterator<Item = f64>, width: f64) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for x0 in starts {
        let x1 = x0 + width.max(1.0);
        match out.last_mut() {
            Some((_, end)) if x0 - *end < 2.0 => *end = end.max(x1),
            _ => out.push((x0, x1)),
        }
    }
    out
}

/// One path per kind, a stroke per run of slots with events of that kind: refusals across the
/// plot, headroom's own waits in their rows of the strip.
fn marks(out: &mut String, input: &ChartInput<'_>) {
    type Count = fn(&MarkCounts) -> u64;
    let rows: [(&str, Count, f64, f64); 4] = [
        ("limit-hit", |c| c.provider_refusals, PLOT_TOP, PLOT_HEIGHT),
        (
            "own-wait deferral",
            |c| c.local_deferrals,
            STRIP_TOP,
            STRIP_TICK,
        ),
        (
            "own-wait concurrency",
            |c| c.concurrency_waits,
            STRIP_TOP + STRIP_ROW,
            STRIP_TICK,
        ),
        (
            "own-wait hibernation",
            |c| c.hibernations,
            STRIP_TOP + 2.0 * STRIP_ROW,
            STRIP_TICK,
        ),
    ];
    let (since, until) = (input.since, input.until);
    let span = until.duration_since(since).as_secs_f64().max(1.0);
    let width = input.step.as_secs_f64() / span * f64::from(PLOT_WIDTH);
    for (class, count, top, height) in rows {
        let starts = input
            .marks
            .iter()
            .filter(|m| count(&m.counts) > 0 && m.at <= until)
            .map(|m| x_of(m.at, since, until));
        let mut d = String::new();
        for (x0, x1) in runs(starts, width) {
            // A horizontal stroke as thick as the row: one segment however wide the run.
            let x1 = x1.min(PLOT_X + f64::from(PLOT_WIDTH));
            let _ = write!(d, "M{} {}H{}", num(x0), num(top + height / 2.0), num(x1));
        }
        if !d.is_empty() {
            let _ = write!(
                out,
                "<path class=\"{class}\" stroke-width=\"{}\" d=\"{d}\"/>",
                num(height)
            );
        }
    }
}

/// The chart, as an `<svg>` element (its legend is [`legend`]).
pub fn svg(input: ChartInput<'_>) -> String {
    let top = input
        .points
        .iter()
        .filter_map(|p| p.limit.or(p.remaining_max))
        .max()
        .unwrap_or(1);
    let summary = escape(&summary(&input, top));
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"chart\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         role=\"img\" aria-label=\"{summary}\" xmlns=\"http://www.w3.org/2000/svg\"><title>{summary}</title>"
    );
    axes(&mut out, input.since, input.until, top);
    series(&mut out, input.points, input.since, input.until, top);
    marks(&mut out, &input);
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).expect("valid")
    }

    fn point(at: i64, low: u64, high: u64) -> HistoryPoint {
        HistoryPoint {
            at: t(at),
            remaining_min: Some(low),
            remaining_max: Some(high),
            limit: Some(100),
            readings: 1,
            waits: 0,
        }
    }

    fn chart(points: &[HistoryPoint], marks: &[MarkSlot], totals: &MarkCounts) -> String {
        svg(ChartInput {
            points,
            marks,
            totals,
            step: SignedDuration::from_secs(13),
            since: t(0),
            until: t(3600),
            title: "REST remaining, last hour",
        })
    }

    #[test]
    fn remaining_is_drawn_against_the_limit_over_the_window() {
        let points = [point(0, 100, 100), point(1800, 50, 60), point(3600, 0, 0)];
        let svg = chart(&points, &[], &MarkCounts::default());
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.ends_with("</svg>"));
        assert!(
            svg.contains("<path class=\"remaining\" d=\"M44 6l150 30l150 30\"/>"),
            "{svg}"
        );
        assert!(
            svg.contains("<path class=\"band\" d=\"M44 6l150 24l150 36l0 0l-150-30l-150-30z\"/>"),
            "{svg}"
        );
        assert!(svg.contains("<title>REST remaining, last hour: lowest 0, now 0 of 100;"));
        for label in [">100</text>", ">50</text>", ">0</text>"] {
            assert!(svg.contains(label), "{label}: {svg}");
        }
        // 2027-01-15T08:00:00Z → ticks every 15 min: 08:15, 08:30, 08:45, 09:00.
        assert_eq!(
            svg.matches("<text class=\"clock tick\"").count(),
            4,
            "{svg}"
        );
        assert!(svg.contains("datetime=\"2027-01-15T08:15:00Z\">08:15 UTC</text>"));
    }

    #[test]
    fn refusals_and_own_waits_are_one_path_each_with_a_stroke_per_slot() {
        let mut waits = MarkCounts {
            local_deferrals: 40,
            concurrency_waits: 3,
            ..MarkCounts::default()
        };
        let refused = MarkCounts {
            provider_refusals: 2,
            ..MarkCounts::default()
        };
        let marks = [
            MarkSlot {
                at: t(900),
                counts: waits,
            },
            MarkSlot {
                at: t(1800),
                counts: refused,
            },
        ];
        waits.add(&refused);
        let svg = chart(&[point(0, 100, 100)], &marks, &waits);
        assert_eq!(svg.matches("<path class=\"limit-hit\"").count(), 1, "{svg}");
        assert!(
            svg.contains("<path class=\"limit-hit\" stroke-width=\"60\" d=\"M194 36H195.1\"/>"),
            "{svg}"
        );
        assert!(svg.contains(
            "<path class=\"own-wait deferral\" stroke-width=\"4\" d=\"M119 71H120.1\"/>"
        ));
        assert!(svg.contains(
            "<path class=\"own-wait concurrency\" stroke-width=\"4\" d=\"M119 76H120.1\"/>"
        ));
        assert!(!svg.contains("own-wait hibernation"));
        let legend = legend(&waits);
        assert_eq!(
            legend,
            "<p class=\"legend\"><span class=\"key refusal\">2 provider refusals (403/429)</span> · \
             <span class=\"key deferral\">40 local deferrals</span> · \
             <span class=\"key concurrency\">3 concurrency waits</span> · \
             <span class=\"key hibernation\">0 hibernations</span></p>"
        );
    }

    #[test]
    fn marks_a_column_or_less_apart_are_one_stroke() {
        assert_eq!(
            runs([10.0, 11.0, 12.5, 20.0], 1.0),
            vec![(10.0, 13.5), (20.0, 21.0)]
        );
        assert_eq!(
            relative_path([(1.0, 2.0), (2.25, 1.5), (3.0, 1.5)]),
            "M1 2l1.3-.5l.7 0"
        );
    }

    #[test]
    fn an_empty_history_says_so() {
        let svg = chart(&[], &[], &MarkCounts::default());
        assert!(svg.contains("no readings"));
        assert!(!svg.contains("polyline"));
    }

    #[test]
    fn a_day_ticks_every_six_hours_and_six_hours_every_two() {
        let day = ticks(t(0), t(86_400));
        assert_eq!(day.len(), 4);
        assert_eq!(day[1].duration_since(day[0]).as_secs(), 21_600);
        let six = ticks(t(0), t(21_600));
        assert_eq!(six.len(), 3);
        assert_eq!(six[1].duration_since(six[0]).as_secs(), 7200);
    }
}
