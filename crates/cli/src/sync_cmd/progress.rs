//! How a run's progress is shown: JSON lines on stdout (`--json`), bars on a terminal, or
//! nothing (text piped: the outcome says it all).

use std::io::Write;
use std::sync::Mutex;

use headroom_core::clock::{Clock, SignedDuration, SystemClock, Timestamp};
use headroom_sync::{ProgressEvent, ProgressSink, StageGraph};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

/// Plain JSON lines on stdout (when not on a terminal).
pub(super) struct JsonProgress;

impl ProgressSink for JsonProgress {
    fn event(&self, event: &ProgressEvent) {
        if let Ok(mut value) = serde_json::to_value(event) {
            if let Some(obj) = value.as_object_mut()
                && let Some(Value::String(kind)) = obj.get("event").cloned()
            {
                obj.insert("event".into(), Value::String(format!("sync.{kind}")));
            }
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{value}");
            let _ = out.flush();
        }
    }
}

/// No progress: text on a pipe prints only the run's hibernations and its summary.
pub(super) struct QuietProgress;

impl ProgressSink for QuietProgress {
    fn event(&self, _: &ProgressEvent) {}
}

/// Progress bars on a terminal: a line with the time elapsed and the stages running, one bar
/// per stage (its repositories as the bar, the page in the message), and a line below them
/// saying why the run waits. Stages run side by side, so none is "stage 5 of 8"; a bar's total
/// never shrinks and its position never moves back, though repositories finish out of order.
pub(super) struct TerminalProgress {
    graph: StageGraph,
    multi: MultiProgress,
    bars: Vec<(String, ProgressBar)>,
    pace: ProgressBar,
    why: ProgressBar,
    settled: Mutex<Vec<String>>,
    running: Mutex<Vec<String>>,
    clock: SystemClock,
    started: Timestamp,
    /// Units the run's estimate expects in all (`--estimate`), and pages seen so far: each
    /// page is one request or one GraphQL point, the estimate's units.
    estimated: Option<u64>,
    pages: std::sync::atomic::AtomicU64,
}

/// Where a bar showing `shown` (position, length) goes when repository `index` (1-based) of
/// `total` reports a page: never backwards, never to a smaller total.
fn advanced(shown: (u64, u64), index: u64, total: u64) -> (u64, u64) {
    let position = shown.0.max(index.saturating_sub(1));
    (position, shown.1.max(total).max(position))
}

/// "45 s", "3 min 20 s", "1 h 5 min".
fn elapsed_words(d: SignedDuration) -> String {
    let s = d.as_secs().max(0);
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, s) => format!("{s} s"),
        (0, m, s) => format!("{m} min {s} s"),
        (h, m, _) => format!("{h} h {m} min"),
    }
}

/// The end, in words, from the estimate's units and the pages seen in `elapsed` (this
/// process's own pace, hibernations included): "no estimate — run with --estimate" without
/// one, and the core of [`headroom_core::eta`] with one.
fn end_words(estimated: Option<u64>, pages: u64, elapsed: SignedDuration) -> String {
    use headroom_core::eta::{Eta, EtaFacts, Units, eta};
    let units = |n| Units {
        rest: n,
        graphql: 0,
    };
    let facts = EtaFacts {
        finished: false,
        estimated: estimated.map(units),
        spent: units(pages),
        working: elapsed,
        rest_quota: None,
        graphql_quota: None,
    };
    match eta(&facts) {
        Eta::NoEstimate => "no estimate — run with --estimate".to_owned(),
        Eta::Remaining {
            within: Some(within),
            ..
        } => format!("about {} left", elapsed_words(within)),
        Eta::Remaining { .. } | Eta::Finished => "estimating the end".to_owned(),
    }
}

/// A bucket's name for people.
fn surface(bucket: &str) -> &str {
    match bucket {
        "core" => "REST",
        "graphql" => "GraphQL",
        other => other,
    }
}

impl TerminalProgress {
    pub(super) fn new(graph: StageGraph, estimated: Option<u64>) -> Self {
        Self::drawn_to(graph, ProgressDrawTarget::stderr(), estimated)
    }

    fn drawn_to(graph: StageGraph, target: ProgressDrawTarget, estimated: Option<u64>) -> Self {
        let multi = MultiProgress::with_draw_target(target);
        let style = ProgressStyle::with_template("{prefix:<32} [{bar:24}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        let line = || {
            ProgressBar::new(0).with_style(
                ProgressStyle::with_template("{msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            )
        };
        let pace = multi.add(line());
        let bars = graph
            .stages()
            .iter()
            .map(|decl| {
                let bar = multi.add(ProgressBar::new(1).with_style(style.clone()));
                bar.set_prefix(decl.title.to_string());
                bar.set_message("pending");
                (decl.name.to_owned(), bar)
            })
            .collect();
        let why = multi.add(line());
        let clock = SystemClock;
        // A log line (a warning) is printed above the bars, never through them.
        crate::logging::lines_above(Some(multi.clone()));
        Self {
            graph,
            multi,
            bars,
            pace,
            why,
            settled: Mutex::new(Vec::new()),
            running: Mutex::new(Vec::new()),
            started: clock.now(),
            clock,
            estimated,
            pages: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The top line: "elapsed 3 min 20 s · pull_requests, workflow_runs running".
    fn show_pace(&self, stage: &str, running: bool) {
        let names = match self.running.lock() {
            Ok(mut r) => {
                r.retain(|s| s != stage);
                if running {
                    r.push(stage.to_owned());
                }
                r.join(", ")
            }
            Err(_) => String::new(),
        };
        let spent = self.clock.now().duration_since(self.started);
        let elapsed = elapsed_words(spent);
        let end = end_words(
            self.estimated,
            self.pages.load(std::sync::atomic::Ordering::Relaxed),
            spent,
        );
        self.pace.set_message(if names.is_empty() {
            format!("elapsed {elapsed} · {end}")
        } else {
            format!("elapsed {elapsed} · {names} running · {end}")
        });
    }

    fn bar(&self, stage: &str) -> Option<&ProgressBar> {
        self.bars.iter().find(|(n, _)| n == stage).map(|(_, b)| b)
    }

    /// "running GraphQL stages meanwhile", when stages on other buckets are still to do.
    fn meanwhile(&self, closed: &str) -> String {
        let settled = self.settled.lock().map(|s| s.clone()).unwrap_or_default();
        let mut others: Vec<&str> = Vec::new();
        for decl in self.graph.stages() {
            if decl.bucket != closed
                && !settled.iter().any(|s| s == decl.name)
                && !others.contains(&surface(decl.bucket))
            {
                others.push(surface(decl.bucket));
            }
        }
        if others.is_empty() {
            "nothing else to run".to_owned()
        } else {
            format!("running {} stages meanwhile", others.join(" and "))
        }
    }

    fn settle(&self, stage: &str) {
        if let Ok(mut s) = self.settled.lock() {
            s.push(stage.to_owned());
        }
    }
}

impl Drop for TerminalProgress {
    fn drop(&mut self) {
        crate::logging::lines_above(None);
    }
}

impl ProgressSink for TerminalProgress {
    fn event(&self, event: &ProgressEvent) {
        let hm = |t: &Timestamp| t.strftime("%H:%M:%S UTC").to_string();
        match event {
            ProgressEvent::StageStarted { stage, .. } => {
                self.show_pace(stage, true);
                if let Some(bar) = self.bar(stage) {
                    bar.set_message("running");
                }
            }
            ProgressEvent::Page {
                stage,
                scope_index,
                scope_total,
                page,
                ..
            } => {
                self.pages
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                self.show_pace(stage, true);
                if let Some(bar) = self.bar(stage) {
                    if let (Some(i), Some(n)) = (scope_index, scope_total) {
                        let (position, length) = advanced(
                            (bar.position(), bar.length().unwrap_or(0)),
                            *i as u64,
                            *n as u64,
                        );
                        bar.set_length(length);
                        bar.set_position(position);
                    }
                    bar.set_message(format!("page {page}"));
                }
            }
            ProgressEvent::StageDone { stage, .. } => {
                self.settle(stage);
                self.show_pace(stage, false);
                if let Some(bar) = self.bar(stage) {
                    bar.set_position(bar.length().unwrap_or(1));
                    bar.finish_with_message("done");
                }
            }
            ProgressEvent::StageDeferred {
                stage,
                bucket,
                until,
                reason,
                ..
            } => {
                if let Some(bar) = self.bar(stage) {
                    bar.set_message(format!("waiting until {}", hm(until)));
                }
                let line = match bucket.as_deref() {
                    Some(b) => format!(
                        "{} exhausted — reopens {}; {}",
                        surface(b),
                        hm(until),
                        self.meanwhile(b)
                    ),
                    None => format!("{stage}: {reason} — again at {}", hm(until)),
                };
                self.why.set_message(line);
            }
            ProgressEvent::StageFailed { stage, reason, .. } => {
                self.settle(stage);
                self.show_pace(stage, false);
                if let Some(bar) = self.bar(stage) {
                    bar.abandon_with_message(format!("failed: {reason}"));
                }
            }
            ProgressEvent::StageBlocked { stage, by, .. } => {
                self.settle(stage);
                self.show_pace(stage, false);
                if let Some(bar) = self.bar(stage) {
                    bar.abandon_with_message(format!("blocked by {by}"));
                }
            }
            ProgressEvent::Pacing { until, buckets, .. } => {
                let names: Vec<&str> = buckets.iter().map(|b| surface(b)).collect();
                self.why.set_message(format!(
                    "pacing {} (points per minute) — continuing at {}",
                    names.join(", "),
                    hm(until)
                ));
            }
            ProgressEvent::Hibernating { until, buckets, .. } => {
                let names: Vec<&str> = buckets.iter().map(|b| surface(b)).collect();
                let line = format!(
                    "nothing can run: {} closed — hibernating until {}",
                    if names.is_empty() {
                        "deferred stages".to_owned()
                    } else {
                        names.join(", ")
                    },
                    hm(until)
                );
                // Kept above the bars: the history of the run's waits.
                let _ = self.multi.println(&line);
                self.why.set_message(line);
            }
            ProgressEvent::Finished { status, .. } => {
                self.show_pace("", false);
                self.pace.finish();
                self.why.finish_with_message(format!("run {status}"));
                crate::logging::lines_above(None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_github::org;

    fn page(stage: &str, index: usize, total: usize) -> ProgressEvent {
        ProgressEvent::Page {
            run_id: 1,
            stage: stage.into(),
            scope: format!("acme/r{index}#{index}"),
            scope_index: Some(index),
            scope_total: Some(total),
            page: 1,
            rows: 3,
        }
    }

    fn terminal() -> TerminalProgress {
        let graph = StageGraph::new(org::declarations(), Some(org::REPOSITORY_SOURCE))
            .expect("a valid graph");
        TerminalProgress::drawn_to(graph, ProgressDrawTarget::hidden(), None)
    }

    #[test]
    fn a_bar_never_moves_backwards() {
        let t = terminal();
        let bar = t.bar(org::names::WORKFLOW_RUNS).expect("a bar").clone();
        let mut shown = Vec::new();
        // Repositories finish out of order, several side by side.
        for i in [24, 3, 31, 12, 30, 40] {
            t.event(&page(org::names::WORKFLOW_RUNS, i, 40));
            shown.push(bar.position());
        }
        assert!(shown.windows(2).all(|w| w[0] <= w[1]), "{shown:?}");
        assert_eq!(shown.last(), Some(&39));
    }

    #[test]
    fn a_bar_total_never_shrinks() {
        let t = terminal();
        let bar = t.bar(org::names::PULL_REQUESTS).expect("a bar").clone();
        t.event(&page(org::names::PULL_REQUESTS, 24, 40));
        t.event(&page(org::names::PULL_REQUESTS, 25, 31));
        assert_eq!((bar.position(), bar.length()), (24, Some(40)));
        assert_eq!(advanced((5, 10), 2, 3), (5, 10));
        assert_eq!(advanced((5, 10), 12, 3), (11, 11));
    }

    #[test]
    fn the_terminal_names_every_stage_running_and_the_time_elapsed() {
        let t = terminal();
        for stage in [org::names::PULL_REQUESTS, org::names::WORKFLOW_RUNS] {
            t.event(&ProgressEvent::StageStarted {
                run_id: 1,
                stage: stage.into(),
                title: stage.into(),
                position: 5,
                of: 8,
            });
        }
        t.event(&ProgressEvent::StageDone {
            run_id: 1,
            stage: org::names::PULL_REQUESTS.into(),
        });
        let line = t.pace.message();
        assert!(
            line.starts_with("elapsed ")
                && line.ends_with(" · workflow_runs running · no estimate — run with --estimate"),
            "{line}"
        );
        assert!(t.bars.iter().all(|(_, b)| !b.prefix().contains(" of ")));
    }

    /// Defect: the terminal gave no idea of the end. With the run's estimate it says how long
    /// is left at the pace so far; without one, that there is none and how to get one.
    #[test]
    fn the_terminal_tells_the_end_from_the_estimate_or_how_to_get_one() {
        let secs = SignedDuration::from_secs;
        assert_eq!(
            end_words(None, 10, secs(60)),
            "no estimate — run with --estimate"
        );
        // 100 of 400 units in 2 minutes: 6 minutes more at that pace.
        assert_eq!(end_words(Some(400), 100, secs(120)), "about 6 min 0 s left");
        assert_eq!(end_words(Some(400), 0, secs(5)), "estimating the end");
        assert_eq!(end_words(Some(400), 500, secs(60)), "about 0 s left");
    }
}
