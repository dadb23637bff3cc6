//! The sync runs table: each run's progress, rows, spend, next wake (a live countdown that
//! turns into "due since" once passed), its why in one sentence and — when no live process
//! resumes it — why and the command that will. Pure.

use std::fmt::Write as _;

use headroom_core::clock::{SignedDuration, Timestamp};

use super::held;
use super::phrase::{Phrase, When};
use super::render::escape;
use super::words;
use crate::api::sync::{NO_ESTIMATE, RunView, RunsPage};

/// "pull_requests, workflow_runs running · 3 of 8 stages done · pull_requests 12 of 40
/// repositories · page 12 · 14 min elapsed (5 min hibernating) · ends about 15:40 UTC (in
/// 12 min)": every stage running, totals that do not move, elapsed, and the end or why
/// there is none.
pub fn progress_words(view: &RunView, now: Timestamp) -> String {
    let p = &view.progress;
    let pace = &p.pace;
    let mut parts: Vec<String> = Vec::new();
    if !pace.stages_running.is_empty() {
        parts.push(format!("{} running", pace.stages_running.join(", ")));
    }
    parts.push(format!(
        "{} of {} stages done",
        p.stages_done, p.stages_total
    ));
    for r in &pace.repositories_done {
        parts.push(match pace.repositories_total {
            Some(total) => format!("{} {} of {total} repositories", r.stage, r.done),
            None => format!("{} {} repositories so far", r.stage, r.done),
        });
    }
    if p.page > 0 && pace.stages_running.len() == 1 {
        parts.push(format!("page {}", p.page));
    }
    let elapsed = words::duration(SignedDuration::from_millis(pace.elapsed_ms));
    let took = if pace.eta == "finished" {
        format!("took {elapsed}")
    } else {
        format!("{elapsed} elapsed")
    };
    parts.push(if pace.hibernating_ms > 0 {
        format!(
            "{took} ({} hibernating)",
            words::duration(SignedDuration::from_millis(pace.hibernating_ms))
        )
    } else {
        took
    });
    match (pace.eta.as_str(), pace.ends_at) {
        ("estimated", Some(at)) => parts.push(format!(
            "ends about {} (in {})",
            words::clock_time(at),
            words::countdown(now, at)
        )),
        ("measuring", _) => parts.push("end estimated once it has spent something".to_owned()),
        ("no_estimate", _) => parts.push(NO_ESTIMATE.to_owned()),
        _ => {}
    }
    parts.join(" · ")
}

/// What a run spent, per bucket, in words: "core 112 requests · graphql 340 points".
pub fn spent_words(view: &RunView) -> String {
    view.progress
        .spent
        .iter()
        .map(|b| {
            let (n, one, many) = if b.bucket == "graphql" {
                (b.points, "point", "points")
            } else {
                (b.requests, "request", "requests")
            };
            let noun = if n == 1 { one } else { many };
            format!("{} {} {noun}", b.bucket, words::thousands(n))
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The sync runs table.
pub fn runs_table(runs: &RunsPage, now: Timestamp) -> String {
    let mut out = String::from("<section class=\"sync\"><h2>Sync runs</h2>");
    if runs.runs.is_empty() {
        out.push_str("<p class=\"empty\">No sync runs.</p></section>");
        return out;
    }
    out.push_str(
        "<table class=\"runs\"><thead><tr><th>run</th><th>target</th><th>status</th>\
         <th>progress</th><th>rows</th><th>spent</th><th>next wake</th><th>why</th></tr></thead><tbody>",
    );
    for view in &runs.runs {
        let run = &view.run;
        let wake = view.progress.next_wake.map_or_else(String::new, |t| {
            let mut p = Phrase::default();
            p.when(When::wake(t));
            p.html(now)
        });
        let why = match &run.failure_reason {
            Some(reason) => escape(reason),
            None => held::run_why(&held::Reasons {
                holds: view.progress.holds.clone(),
                other: view.progress.waiting_because.clone(),
            })
            .html(now),
        };
        let (status, unresumed) = match &view.progress.unresumed {
            Some(u) => (
                format!("{} · nobody resumes it", run.status.as_str()),
                format!(
                    "<p class=\"warning unresumed\" role=\"alert\">{} Run: <code>{}</code></p>",
                    escape(&u.why),
                    escape(&u.command)
                ),
            ),
            None => (run.status.as_str().to_owned(), String::new()),
        };
        let _ = write!(
            out,
            "<tr data-run=\"{}\"><td>{}</td><td>{} {}</td><td class=\"status\">{}</td>\
             <td class=\"progress\">{}</td><td class=\"rows\">{}</td>\
             <td class=\"spent\">{}</td><td class=\"wake\">{wake}</td>\
             <td class=\"why\">{why}{unresumed}</td></tr>",
            run.id,
            run.id,
            escape(&run.kind),
            escape(&run.target),
            status,
            escape(&progress_words(view, now)),
            words::thousands(view.progress.rows),
            escape(&spent_words(view)),
        );
        if !view.progress.refused.is_empty() {
            let refused: Vec<String> = view
                .progress
                .refused
                .iter()
                .map(|f| format!("{} ({}, {})", f.path, f.kind, f.stage))
                .collect();
            let _ = write!(
                out,
                "<tr class=\"refused\" data-run-refused=\"{}\"><td></td>\
                 <td colspan=\"8\">GitHub refused: {}</td></tr>",
                run.id,
                escape(&refused.join("; ")),
            );
        }
        if let Some(words) = calibration_words(&view.progress.calibration) {
            let _ = write!(
                out,
                "<tr class=\"calibration\" data-run-calibration=\"{}\"><td></td>\
                 <td colspan=\"8\">{}</td></tr>",
                run.id,
                escape(&words),
            );
        }
    }
    out.push_str("</tbody></table></section>");
    out
}

/// A run's calibration in a sentence: the route families that spent more requests than
/// estimated (or had no estimate), else how many stayed within theirs. `None` without rows.
fn calibration_words(rows: &[crate::api::sync::CalibrationRow]) -> Option<String> {
    if rows.is_empty() {
        return None;
    }
    let over: Vec<String> = rows
        .iter()
        .filter(|r| r.underestimated)
        .map(|r| {
            if r.unbudgeted_actual {
                format!("{} ({} requests, no estimate)", r.family, r.actual_requests)
            } else {
                format!(
                    "{} ({} requests, {} estimated)",
                    r.family, r.actual_requests, r.estimated_units
                )
            }
        })
        .collect();
    let unassessed = rows
        .iter()
        .filter(|r| !r.underestimation_assessable)
        .count();
    let incomplete = if rows.iter().any(|r| r.incomplete) {
        " (so far)"
    } else {
        ""
    };
    Some(if over.is_empty() {
        format!(
            "Calibration{incomplete}: {} route families within their estimate, {unassessed} not comparable in requests",
            rows.len() - unassessed
        )
    } else {
        format!(
            "Calibration{incomplete}: more than estimated on {}",
            over.join("; ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::sync::tests::{checkpoint, listed_then, run};
    use crate::api::sync::{RunView, progress};
    use headroom_store::{CheckpointStatus, SyncRunStatus};

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).expect("valid")
    }

    fn view(summary: serde_json::Value, checkpoints: &[headroom_store::Checkpoint]) -> RunView {
        let mut run = run(SyncRunStatus::Running);
        run.summary = Some(summary);
        let progress = progress(&run, checkpoints, t(600));
        RunView { run, progress }
    }

    #[test]
    fn the_run_row_names_every_stage_running_with_stable_totals_and_elapsed() {
        let mut checkpoints = listed_then("pull_requests", 2);
        checkpoints.push(checkpoint(
            "workflow_runs",
            "acme/c#3",
            CheckpointStatus::Pending,
            1,
        ));
        let words = progress_words(&view(serde_json::json!({}), &checkpoints), t(600));
        assert!(
            words.starts_with("pull_requests, workflow_runs running · 2 of 8 stages done"),
            "{words}"
        );
        assert!(!words.contains("stage 3 of 8"), "{words}");
        assert!(
            words.contains("pull_requests 1 of 4 repositories"),
            "{words}"
        );
        assert!(
            words.contains("workflow_runs 0 of 4 repositories"),
            "{words}"
        );
        assert!(words.contains("10 min elapsed"), "{words}");
    }

    #[test]
    fn a_run_row_without_an_estimate_says_so_and_with_one_tells_its_end() {
        let checkpoints = listed_then("workflow_runs", 2);
        let without = progress_words(
            &view(
                serde_json::json!({ "buckets": { "core": { "requests": 100 } } }),
                &checkpoints,
            ),
            t(600),
        );
        assert!(without.ends_with(NO_ESTIMATE), "{without}");
        // 100 of 300 requests in 600 s: 1,200 s more.
        let with = progress_words(
            &view(
                serde_json::json!({
                    "buckets": { "core": { "requests": 100 } },
                    "hibernating_ms": 0,
                    "estimates": { "workflow_runs": [
                        { "family": "workflow_jobs", "dimension": "rest_core", "units": 300 } ] },
                }),
                &checkpoints,
            ),
            t(600),
        );
        assert!(with.ends_with("ends about 08:30 UTC (in 20 min)"), "{with}");
    }

    /// Defect: "graphql 1 points". The noun agrees with the count.
    #[test]
    fn what_a_run_spent_reads_one_point_not_one_points() {
        let checkpoints = listed_then("pull_requests", 1);
        let one = view(
            serde_json::json!({ "buckets": {
                "core": { "requests": 1 }, "graphql": { "requests": 1, "points": 1 } } }),
            &checkpoints,
        );
        let words = spent_words(&one);
        assert!(words.contains("core 1 request"), "{words}");
        assert!(words.contains("graphql 1 point"), "{words}");
        assert!(
            !words.contains("1 points") && !words.contains("1 requests"),
            "{words}"
        );
    }
}
