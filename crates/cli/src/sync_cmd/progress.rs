//! How a run's progress is shown: JSON lines on stdout, or bars on a terminal.

use std::io::Write;
use std::sync::Mutex;

use headroom_core::clock::Timestamp;
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

/// Progress bars on a terminal: one per stage ("stage 5 of 8 · pull requests", its
/// repositories as the bar, the page in the message) and a line below them saying why the run
/// waits.
pub(super) struct TerminalProgress {
    graph: StageGraph,
    multi: MultiProgress,
    bars: Vec<(String, ProgressBar)>,
    why: ProgressBar,
    settled: Mutex<Vec<String>>,
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
    pub(super) fn new(graph: StageGraph) -> Self {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("{prefix:<48} [{bar:24}] {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        let total = graph.stages().len();
        let bars = graph
            .stages()
            .iter()
            .enumerate()
            .map(|(i, decl)| {
                let bar = multi.add(ProgressBar::new(1).with_style(style.clone()));
                bar.set_prefix(format!("stage {} of {total} · {}", i + 1, decl.title));
                bar.set_message("pending");
                (decl.name.to_owned(), bar)
            })
            .collect();
        let why = multi.add(ProgressBar::new(0).with_style(
            ProgressStyle::with_template("{msg}").unwrap_or_else(|_| ProgressStyle::default_bar()),
        ));
        Self {
            graph,
            multi,
            bars,
            why,
            settled: Mutex::new(Vec::new()),
        }
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

impl ProgressSink for TerminalProgress {
    fn event(&self, event: &ProgressEvent) {
        let hm = |t: &Timestamp| t.strftime("%H:%M:%S UTC").to_string();
        match event {
            ProgressEvent::StageStarted { stage, .. } => {
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
                if let Some(bar) = self.bar(stage) {
                    match (scope_index, scope_total) {
                        (Some(i), Some(n)) => {
                            bar.set_length(*n as u64);
                            bar.set_position(i.saturating_sub(1) as u64);
                            bar.set_message(format!("repo {i}/{n} · page {page}"));
                        }
                        _ => bar.set_message(format!("page {page}")),
                    }
                }
            }
            ProgressEvent::StageDone { stage, .. } => {
                self.settle(stage);
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
                if let Some(bar) = self.bar(stage) {
                    bar.abandon_with_message(format!("failed: {reason}"));
                }
            }
            ProgressEvent::StageBlocked { stage, by, .. } => {
                self.settle(stage);
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
                self.why.finish_with_message(format!("run {status}"));
            }
        }
    }
}
