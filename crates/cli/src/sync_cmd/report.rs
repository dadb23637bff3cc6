//! What `sync org` and `sync worker` print about a run on stdout: by default a short text for
//! a person — a line when the run hibernates or another process drives it, and a summary
//! table when it ends — and with `--json` one JSON object per line for machines (the same
//! events, the last line the run's outcome with its whole summary).

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_core::telemetry;
use headroom_sync::RunSummary;
use serde_json::json;

/// How a command prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    /// Text for a person.
    Text,
    /// One JSON object per line.
    Json,
}

impl Format {
    pub(super) fn from_flag(json: bool) -> Self {
        if json { Format::Json } else { Format::Text }
    }
}

/// A time of day with how far off it is: "20:25:38 UTC (in 1m58s)".
pub(super) fn when(at: Timestamp, now: Timestamp) -> String {
    let left = at.duration_since(now);
    let shown = at.strftime("%H:%M:%S UTC");
    if left <= SignedDuration::ZERO {
        format!("{shown} (now)")
    } else {
        format!("{shown} (in {})", span(left.as_millis() as i64))
    }
}

/// A duration in milliseconds for a person: "350ms", "42s", "3m05s", "2h04m".
pub(super) fn span(ms: i64) -> String {
    let ms = ms.max(0);
    let secs = ms / 1000;
    if secs == 0 {
        format!("{ms}ms")
    } else if secs < 60 {
        format!("{secs}s")
    } else if secs < 3600 {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else {
        format!("{}h{:02}m", secs / 3600, (secs % 3600) / 60)
    }
}

/// "1 hibernation", "2 hibernations".
fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The run's end: done or failed, with its summary.
pub(super) fn outcome(
    format: Format,
    id: i64,
    status: &str,
    reason: Option<&str>,
    summary: &RunSummary,
) {
    match format {
        Format::Json => outln!(
            "{}",
            json!({
                "event": telemetry::SYNC_RUN_COMPLETED,
                "run_id": id,
                "status": status,
                "reason": reason,
                "until": null,
                "summary": summary,
            })
        ),
        Format::Text => {
            for line in outcome_lines(id, status, reason, summary) {
                outln!("{line}");
            }
        }
    }
}

/// The text of a run's end: a headline, then per stage, per route family and per bucket.
pub(super) fn outcome_lines(
    id: i64,
    status: &str,
    reason: Option<&str>,
    summary: &RunSummary,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut head = format!(
        "sync run {id} {status} · {} elapsed",
        span(summary.wall_time_ms)
    );
    if summary.hibernations > 0 {
        head.push_str(&format!(
            " ({} of it hibernating over {})",
            span(summary.hibernating_ms),
            count(u64::from(summary.hibernations), "wait", "waits")
        ));
    }
    out.push(head);
    if let Some(reason) = reason.filter(|r| !r.is_empty()) {
        out.push(format!("  why: {reason}"));
    }
    if !summary.stages.is_empty() {
        out.push(format!(
            "  {:<34} {:<9} {:>9} {:>7} {:>9}",
            "stage", "status", "requests", "pages", "rows"
        ));
        let kind = super::kind::declaring(summary.stages.keys().map(String::as_str));
        for decl in kind.declarations() {
            if let Some(t) = summary.stages.get(decl.name) {
                out.push(format!(
                    "  {:<34} {:<9} {:>9} {:>7} {:>9}",
                    decl.title, t.status, t.requests, t.pages, t.rows
                ));
            }
        }
    }
    let mut families: std::collections::BTreeMap<&str, (u64, u64)> = Default::default();
    for a in summary.actuals.values().flatten() {
        let f = families.entry(a.family.as_str()).or_default();
        f.0 += a.requests;
        f.1 += a.points;
    }
    if !families.is_empty() {
        out.push(format!(
            "  {:<34} {:>9} {:>9}",
            "route family", "requests", "points"
        ));
        for (family, (requests, points)) in families {
            out.push(format!("  {family:<34} {requests:>9} {points:>9}"));
        }
    }
    if !summary.buckets.is_empty() {
        // A LaunchDarkly route's bucket is named by its template, longer than most names. A
        // request is counted under its first bucket only; a route's row shows what it left.
        let width = summary
            .buckets
            .keys()
            .map(String::len)
            .max()
            .unwrap_or(0)
            .max(34);
        out.push(format!(
            "  {:<width$} {:>9} {:>9} {:>11} {:>6}",
            "bucket", "requests", "points", "lowest left", "waits"
        ));
        for (bucket, b) in &summary.buckets {
            out.push(format!(
                "  {bucket:<width$} {:>9} {:>9} {:>11} {:>6}",
                b.requests,
                b.points,
                b.min_remaining.map_or("-".to_owned(), |m| m.to_string()),
                b.waits
            ));
        }
    }
    out
}

/// The run hibernates until `until`: held by this process (which wakes it itself), or left
/// for a worker. `target`: the run's kind and target, for the resume command (`None` from a
/// worker).
pub(super) fn hibernating(
    format: Format,
    id: i64,
    target: Option<(super::SyncKind, &str)>,
    until: Timestamp,
    reason: &str,
    held: bool,
    now: Timestamp,
) {
    let resume = match target {
        // A worker holds another provider's runs only with a credential of that provider.
        Some((kind @ super::SyncKind::Gitlab, name)) => format!(
            "headroom run or headroom sync worker with GITLAB_TOKEN set (or: headroom sync \
             {} {name} --resume {id})",
            kind.as_str()
        ),
        Some((
            kind
            @ (super::SyncKind::Jira | super::SyncKind::Linear | super::SyncKind::LaunchDarkly),
            _,
        )) => format!(
            "headroom run or headroom sync worker with {} (or: headroom sync {} --resume {id})",
            match kind {
                super::SyncKind::Jira => "[jira] site and JIRA_API_TOKEN configured",
                super::SyncKind::LaunchDarkly => "LD_ACCESS_TOKEN set",
                _ => "LINEAR_API_KEY set",
            },
            match kind {
                super::SyncKind::Jira => "jira --site URL",
                super::SyncKind::LaunchDarkly => "launchdarkly",
                _ => "linear",
            }
        ),
        Some((_, name)) => format!(
            "headroom run or headroom sync worker (or: headroom sync org {name} --resume {id})"
        ),
        None => "headroom run or headroom sync worker".to_owned(),
    };
    match format {
        Format::Json => outln!(
            "{}",
            json!({
                "event": telemetry::SYNC_RUN_HIBERNATING,
                "run_id": id,
                "until": until.to_string(),
                "reason": reason,
                "held": held,
                "resume": resume,
            })
        ),
        Format::Text => {
            outln!("sync run {id} hibernating until {}", when(until, now));
            if !reason.is_empty() {
                outln!("  why: {reason}");
            }
            if held {
                outln!("  this process wakes it then");
            } else {
                outln!("  it goes on with {resume}");
            }
        }
    }
}

/// Another process drives run `id`.
pub(super) fn taken_over(
    format: Format,
    id: i64,
    kind: super::SyncKind,
    name: &str,
    claimed_by: Option<&str>,
    following: bool,
) {
    let follow = format!(
        "headroom sync status {id} (or wait for it: {} --resume {id} --wait)",
        kind.invocation(name)
    );
    match format {
        Format::Json => outln!(
            "{}",
            json!({
                "event": "sync.taken_over",
                "run_id": id,
                "claimed_by": claimed_by,
                "following": following,
                "follow": follow,
            })
        ),
        Format::Text => {
            outln!(
                "sync run {id} is driven by another process ({})",
                claimed_by.unwrap_or("another worker")
            );
            if following {
                outln!("  following it to its end");
            } else {
                outln!("  follow it with {follow}");
            }
        }
    }
}

/// Nothing can start yet: the credential's owner, whose run it is, is learned with a request
/// (`GET /user`) the spent quota holds back until `until`; this process waits for it
/// (`--wait`, or a wait within `--hold-secs`). A longer wait creates the run hibernating
/// instead ([`hibernating`]).
pub(super) fn start_waits(format: Format, name: &str, until: Timestamp, now: Timestamp) {
    match format {
        Format::Json => outln!(
            "{}",
            json!({
                "event": "sync.start_deferred",
                "organization": name,
                "until": until.to_string(),
                "waiting": true,
                "reason": "the quota is spent; the token's owner, whose run it is, is learned \
                           with GET /user once it reopens",
            })
        ),
        Format::Text => outln!(
            "sync of org {name} waits: the quota is spent until {}; the run belongs to the \
             token's owner, learned with GET /user once it reopens",
            when(until, now)
        ),
    }
}

/// A worker skips run `id`, due but bound to a credential it may not take: why, and the
/// command that resumes it.
pub(super) fn skipped(format: Format, id: i64, why: &str, command: &str) {
    match format {
        Format::Json => outln!(
            "{}",
            json!({
                "event": telemetry::SYNC_RUN_SKIPPED,
                "run_id": id,
                "why": why,
                "command": command,
            })
        ),
        Format::Text => {
            outln!("sync run {id} skipped: this worker cannot resume it: {why}");
            outln!("  resume it with {command}");
        }
    }
}

/// `--estimate` was asked for, but the plan probe cannot be sent while the quota is spent:
/// run `id` goes on without an estimate.
pub(super) fn no_estimate(format: Format, id: i64) {
    let why = "the plan probe (--estimate) cannot be sent while the quota is spent: the run \
               goes on without an estimate (every row unbudgeted)";
    match format {
        Format::Json => outln!(
            "{}",
            json!({ "event": "sync.estimate_skipped", "run_id": id, "reason": why })
        ),
        Format::Text => outln!("  no estimate: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_sync::summary::{BucketTally, StageStatus, StageTally};

    #[test]
    fn durations_read_as_a_person_would_say_them() {
        assert_eq!(span(350), "350ms");
        assert_eq!(span(42_000), "42s");
        assert_eq!(span(185_000), "3m05s");
        assert_eq!(span(7_440_000), "2h04m");
        assert_eq!(span(-5), "0ms");
    }

    #[test]
    fn the_summary_is_a_short_table_not_a_json_line() {
        let mut s = RunSummary {
            wall_time_ms: 125_000,
            hibernating_ms: 90_000,
            hibernations: 1,
            ..RunSummary::default()
        };
        s.stages.insert(
            "org".into(),
            StageTally {
                status: StageStatus::Done,
                requests: 2,
                pages: 1,
                rows: 1,
                detail: None,
            },
        );
        s.buckets.insert(
            "core".into(),
            BucketTally {
                requests: 40,
                points: 40,
                min_remaining: Some(3),
                waits: 1,
            },
        );
        let lines = outcome_lines(7, "done", None, &s);
        assert_eq!(
            lines[0],
            "sync run 7 done · 2m05s elapsed (1m30s of it hibernating over 1 wait)"
        );
        assert!(lines.iter().all(|l| !l.starts_with('{')), "{lines:#?}");
        assert!(
            lines
                .iter()
                .any(|l| l.contains("stage") && l.contains("rows"))
        );
        assert!(
            lines
                .iter()
                .any(|l| l.trim_start().starts_with("core") && l.contains("40")),
            "{lines:#?}"
        );
        assert!(lines.len() < 30, "{lines:#?}");
    }
}
