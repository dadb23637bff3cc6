//! The page's HTML, rendered on the server from [`PageData`]: every number is in the markup,
//! so it reads without JavaScript; the embedded script only refreshes it. Pure functions of
//! their input, each one panel: an identity's quota, a sync-runs table, the feed's figures.

use std::fmt::Write as _;

use headroom_core::clock::Timestamp;

use super::words;
use crate::api::quota::{BucketView, IdentityQuota, QuotaSnapshot};
use crate::api::sync::{RunView, RunsPage};

/// One chart of one bucket over one window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chart {
    /// "last hour", "6 h", "24 h".
    pub window: &'static str,
    /// The rendered SVG.
    pub svg: String,
}

/// The charts of one bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketCharts {
    /// The API host.
    pub host: String,
    /// The subject label.
    pub subject: String,
    /// The bucket.
    pub bucket: String,
    /// One per window.
    pub charts: Vec<Chart>,
}

/// Everything the page shows.
#[derive(Debug, Clone)]
pub struct PageData {
    /// The quota panels' data.
    pub quota: QuotaSnapshot,
    /// The sync runs' first page.
    pub runs: RunsPage,
    /// The charts, per bucket.
    pub charts: Vec<BucketCharts>,
    /// The feed's `/status` document as JSON, or why it could not be read.
    pub feed: Result<serde_json::Value, String>,
}

/// Escapes text for HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A `<time>` the script keeps in the reader's time zone (`clock`) or counting down.
fn time(t: Timestamp, now: Timestamp) -> String {
    format!(
        "<time class=\"clock\" datetime=\"{t}\">{}</time> (in <time class=\"countdown\" \
         datetime=\"{t}\">{}</time>)",
        words::clock_time(t),
        words::countdown(now, t)
    )
}

/// The whole page.
pub fn page(data: &PageData, script: &str, style: &str) -> String {
    let now = data.quota.captured_at;
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <link rel=\"icon\" href=\"data:,\"><title>headroom — quota dashboard</title>\
         <style>{style}</style></head><body><header><h1>headroom</h1>\
         <p class=\"captured\">as of <time class=\"clock\" datetime=\"{now}\">{}</time> \
         <span id=\"live\" class=\"live\">static</span></p></header><main>",
        words::clock_time(now)
    );
    out.push_str(&main(data));
    let _ = write!(out, "</main><script>{script}</script></body></html>");
    out
}

/// The page's `<main>` content (the script swaps it whole when the page's shape changes).
pub fn main(data: &PageData) -> String {
    let now = data.quota.captured_at;
    let mut out = String::from("<section class=\"quota\"><h2>Quota</h2>");
    if data.quota.identities.is_empty() {
        out.push_str("<p class=\"empty\">No quota readings yet.</p>");
    }
    for identity in &data.quota.identities {
        out.push_str(&identity_panel(identity, &data.charts, now));
    }
    out.push_str("</section>");
    out.push_str(&runs_table(&data.runs, now));
    out.push_str(&feed_panel(&data.feed, data.quota.captured_at));
    out
}

/// One identity: its buckets as bars, waits in words, credentials and the warning.
pub fn identity_panel(identity: &IdentityQuota, charts: &[BucketCharts], now: Timestamp) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<article class=\"identity\" data-identity=\"{}|{}\"><h3>{}</h3>\
         <p class=\"runs-waiting\">{} sync run(s) waiting</p>",
        escape(&identity.host),
        escape(&identity.subject),
        escape(&identity.name),
        identity.runs_waiting
    );
    if let Some(warning) = &identity.shared_quota_warning {
        let _ = write!(
            out,
            "<p class=\"warning shared-quota\" role=\"alert\">{}</p>",
            escape(warning)
        );
    }
    out.push_str("<div class=\"buckets\">");
    for bucket in &identity.buckets {
        let of_bucket = charts.iter().find(|c| {
            c.host == identity.host
                && c.subject == identity.subject
                && c.bucket == bucket.now.latest.reading.bucket
        });
        out.push_str(&bucket_row(identity, bucket, of_bucket, now));
    }
    out.push_str("</div>");
    out.push_str(&credentials_list(identity));
    out.push_str("</article>");
    out
}

fn bucket_row(
    identity: &IdentityQuota,
    bucket: &BucketView,
    charts: Option<&BucketCharts>,
    now: Timestamp,
) -> String {
    let r = &bucket.now.latest.reading;
    let percent = match (r.remaining, r.limit) {
        (Some(left), Some(limit)) if limit > 0 => (left as f64 / limit as f64 * 100.0).min(100.0),
        _ => 0.0,
    };
    let number = |n: Option<u64>| n.map_or_else(|| "?".to_owned(), words::thousands);
    let mut out = String::new();
    let _ = write!(
        out,
        "<div class=\"bucket\" data-bucket=\"{}|{}|{}\"><h4>{}</h4>\
         <div class=\"bar\" title=\"remaining / limit\"><div class=\"fill\" style=\"width:{percent:.1}%\"></div></div>\
         <p class=\"figures\"><span class=\"remaining\">{}</span> / <span class=\"limit\">{}</span> left · \
         <span class=\"in-flight\">{}</span> in flight · <span class=\"waiting\">{}</span> waiting",
        escape(&identity.host),
        escape(&identity.subject),
        escape(&r.bucket),
        escape(&words::bucket_label(&r.bucket)),
        number(r.remaining),
        number(r.limit),
        bucket.now.in_flight,
        bucket.now.waiting,
    );
    if let Some(reset) = r.reset_at {
        let _ = write!(out, " · resets {}", time(reset, now));
    }
    out.push_str("</p>");
    let _ = write!(
        out,
        "<p class=\"wait\">{}</p>",
        escape(bucket.wait.as_deref().unwrap_or(""))
    );
    if let Some(charts) = charts {
        out.push_str("<div class=\"charts\">");
        for chart in &charts.charts {
            let _ = write!(
                out,
                "<figure><figcaption>{}</figcaption>{}</figure>",
                chart.window, chart.svg
            );
        }
        out.push_str("</div>");
    }
    out.push_str("</div>");
    out
}

fn credentials_list(identity: &IdentityQuota) -> String {
    if identity.credentials.is_empty() {
        return "<p class=\"credentials\">No stored credential spends it.</p>".to_owned();
    }
    let mut out = String::from("<ul class=\"credentials\">");
    for c in &identity.credentials {
        let _ = write!(
            out,
            "<li><code>{}</code> owned by {}</li>",
            escape(&c.fingerprint),
            escape(&c.owner)
        );
    }
    out.push_str("</ul>");
    out
}

/// "stage 5 of 8 · pull_requests · repository 2 of 3 · page 12".
pub fn progress_words(view: &RunView) -> String {
    let p = &view.progress;
    let Some(stage) = &p.current_stage else {
        return format!("{} of {} stages done", p.stages_done, p.stages_total);
    };
    let mut out = format!(
        "stage {} of {} · {}",
        p.stage_number.unwrap_or(0),
        p.stages_total,
        stage
    );
    if p.scopes_total > 0 {
        let _ = write!(
            out,
            " · repository {} of {}",
            (p.scopes_done + 1).min(p.scopes_total),
            p.scopes_total
        );
    }
    if p.page > 0 {
        let _ = write!(out, " · page {}", p.page);
    }
    out
}

/// What a run spent, per bucket, in words: "core 112 requests · graphql 340 points".
pub fn spent_words(view: &RunView) -> String {
    view.progress
        .spent
        .iter()
        .map(|b| {
            if b.bucket == "graphql" {
                format!("{} {} points", b.bucket, words::thousands(b.points))
            } else {
                format!("{} {} requests", b.bucket, words::thousands(b.requests))
            }
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
        let wake = view
            .progress
            .next_wake
            .map_or_else(String::new, |t| time(t, now));
        let why = match (
            &run.failure_reason,
            view.progress.waiting_because.is_empty(),
        ) {
            (Some(reason), _) => reason.clone(),
            (None, false) => view.progress.waiting_because.join("; "),
            (None, true) => String::new(),
        };
        let _ = write!(
            out,
            "<tr data-run=\"{}\"><td>{}</td><td>{} {}</td><td class=\"status\">{}</td>\
             <td class=\"progress\">{}</td><td class=\"rows\">{}</td>\
             <td class=\"spent\">{}</td><td class=\"wake\">{wake}</td>\
             <td class=\"why\">{}</td></tr>",
            run.id,
            run.id,
            escape(&run.kind),
            escape(&run.target),
            run.status.as_str(),
            escape(&progress_words(view)),
            words::thousands(view.progress.rows),
            escape(&spent_words(view)),
            escape(&why),
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

/// The feed's status document: a few sentences, then every scalar by its path, one table per
/// block.
pub fn feed_panel(feed: &Result<serde_json::Value, String>, now: Timestamp) -> String {
    let mut out = String::from("<section class=\"feed\"><h2>Feed</h2>");
    if let Ok(document @ serde_json::Value::Object(_)) = feed {
        out.push_str("<ul class=\"feed-words\">");
        for sentence in super::feed_words::summary(document, now) {
            let _ = write!(out, "<li>{}</li>", escape(&sentence));
        }
        out.push_str("</ul>");
    }
    match feed {
        Err(message) => {
            let _ = write!(
                out,
                "<p class=\"empty\">The feed's status could not be read: {}</p>",
                escape(message)
            );
        }
        Ok(serde_json::Value::Object(blocks)) => {
            for (name, block) in blocks {
                let mut rows = Vec::new();
                leaves(name, block, &mut rows);
                let _ = write!(
                    out,
                    "<details class=\"block\"><summary>{}</summary><table>",
                    escape(name)
                );
                for (path, value) in rows {
                    let _ = write!(
                        out,
                        "<tr><th>{}</th><td>{}</td></tr>",
                        escape(&path),
                        escape(&value)
                    );
                }
                out.push_str("</table></details>");
            }
        }
        Ok(_) => out.push_str("<p class=\"empty\">No feed status.</p>"),
    }
    out.push_str("</section>");
    out
}

fn leaves(path: &str, value: &serde_json::Value, out: &mut Vec<(String, String)>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                leaves(&format!("{path}.{k}"), v, out);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                leaves(&format!("{path}[{i}]"), v, out);
            }
        }
        serde_json::Value::Null => out.push((path.to_owned(), "—".to_owned())),
        serde_json::Value::String(s) => out.push((path.to_owned(), s.clone())),
        other => out.push((path.to_owned(), other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    // The page's render functions on fixed data: numbers in the markup, the warning, waits in
    // words, a hibernating run's reason and wake, escaping.

    use headroom_core::clock::{SignedDuration, Timestamp};
    use headroom_store::quota_history::{BucketNow, StoredQuotaReading};
    use headroom_store::{QuotaReading, SyncRun, SyncRunStatus};

    use super::*;
    use crate::api::quota::{BucketView, CredentialView, IdentityQuota, QuotaSnapshot};
    use crate::api::sync::{RunProgress, RunView, RunsPage};

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).expect("valid")
    }

    fn identity() -> IdentityQuota {
        let reading = QuotaReading {
            provider: "github".into(),
            host: "api.github.com".into(),
            subject: "user:alice".into(),
            bucket: "core".into(),
            limit: Some(5000),
            remaining: Some(4212),
            used: Some(788),
            reset_at: Some(t(720)),
            in_flight: 3,
            waiting: 0,
            blocked_until: None,
            last_reason: None,
            process_id: "p".into(),
            observed_at: t(0),
        };
        IdentityQuota {
            host: "api.github.com".into(),
            subject: "user:alice".into(),
            name: "alice on api.github.com".into(),
            buckets: vec![BucketView {
                now: BucketNow {
                    latest: StoredQuotaReading { id: 1, reading },
                    in_flight: 3,
                    waiting: 0,
                    live_processes: 1,
                },
                wait: Some("GraphQL <stages> running".into()),
            }],
            credentials: vec![CredentialView {
                fingerprint: "0123abcd".into(),
                owner: "alice".into(),
                last_seen_at: t(0),
            }],
            credentials_sharing: 2,
            shared_quota_warning: Some("these 2 credentials share alice's 5,000 requests".into()),
            runs_waiting: 1,
        }
    }

    fn hibernating_run() -> RunView {
        RunView {
            run: SyncRun {
                id: 7,
                kind: "org".into(),
                target: "acme".into(),
                host: "api.github.com".into(),
                subject: "user:alice".into(),
                status: SyncRunStatus::Hibernating,
                requested_stages: None,
                not_before: Some(t(900)),
                deferral_count: 1,
                first_deferred_at: None,
                total_wait: SignedDuration::ZERO,
                failure_reason: None,
                summary: None,
                claimed_by: None,
                claim_expires_at: None,
                created_at: t(0),
                started_at: Some(t(0)),
                finished_at: None,
                updated_at: t(0),
                credential: Default::default(),
            },
            progress: RunProgress {
                stages_total: 8,
                stages_done: 4,
                current_stage: Some("pull_requests".into()),
                stage_number: Some(5),
                scopes_done: 36,
                scopes_total: 125,
                page: 12,
                rows: 12_345,
                next_wake: Some(t(900)),
                waiting_because: vec!["REST exhausted".into()],
                spent: vec![
                    crate::api::sync::BucketSpend {
                        bucket: "core".into(),
                        requests: 1_120,
                        points: 1_120,
                        waits: 1,
                    },
                    crate::api::sync::BucketSpend {
                        bucket: "graphql".into(),
                        requests: 40,
                        points: 340,
                        waits: 0,
                    },
                ],
                refused: vec![crate::api::sync::RefusedField {
                    stage: "org".into(),
                    path: "organization.membersWithRole".into(),
                    kind: "FORBIDDEN".into(),
                }],
                calibration: vec![crate::api::sync::CalibrationRow {
                    family: "workflow_jobs".into(),
                    dimension: "rest_core".into(),
                    estimated_units: 36,
                    actual_requests: 84,
                    actual_points: 84,
                    ratio: Some(84.0 / 36.0),
                    underestimated: true,
                    underestimation_assessable: true,
                    incomplete: true,
                    ..Default::default()
                }],
            },
        }
    }

    fn data() -> PageData {
        PageData {
            quota: QuotaSnapshot {
                captured_at: t(0),
                identities: vec![identity()],
            },
            runs: RunsPage {
                runs: vec![hibernating_run()],
                next: None,
            },
            charts: Vec::new(),
            feed: Ok(serde_json::json!({"ledger": {"remaining": 4212, "reset_at": null}})),
        }
    }

    #[test]
    fn the_page_carries_every_number_without_script() {
        let html = page(&data(), "/* script */", "/* style */");
        assert!(html.starts_with("<!doctype html>"));
        for needle in [
            "<h3>alice on api.github.com</h3>",
            "<span class=\"remaining\">4,212</span> / <span class=\"limit\">5,000</span>",
            "<span class=\"in-flight\">3</span> in flight",
            "datetime=\"2027-01-15T08:12:00Z\">08:12 UTC</time>",
            "(in <time class=\"countdown\" datetime=\"2027-01-15T08:12:00Z\">12 min</time>)",
            "width:84.2%",
            "class=\"warning shared-quota\"",
            "<code>0123abcd</code> owned by alice",
            "1 sync run(s) waiting",
            "<script>/* script */</script>",
            "<th>ledger.remaining</th><td>4212</td>",
            "<th>ledger.reset_at</th><td>—</td>",
        ] {
            assert!(html.contains(needle), "missing {needle}");
        }
        // Text from the database is escaped.
        assert!(html.contains("GraphQL &lt;stages&gt; running"));
    }

    #[test]
    fn a_hibernating_run_shows_its_progress_reason_and_wake() {
        let html = runs_table(&data().runs, t(0));
        assert!(html.contains("stage 5 of 8 · pull_requests · repository 37 of 125 · page 12"));
        assert!(html.contains("<td class=\"status\">hibernating</td>"));
        assert!(html.contains("<td class=\"why\">REST exhausted</td>"));
        assert!(html.contains(
            "(in <time class=\"countdown\" datetime=\"2027-01-15T08:15:00Z\">15 min</time>)"
        ));
        assert!(html.contains("<td class=\"rows\">12,345</td>"));
        assert!(html.contains("<td class=\"spent\">core 1,120 requests · graphql 340 points</td>"));
        assert!(html.contains("GitHub refused: organization.membersWithRole (FORBIDDEN, org)"));
        assert!(html.contains(
            "Calibration (so far): more than estimated on workflow_jobs (84 requests, 36 estimated)"
        ));
    }

    #[test]
    fn empty_panels_say_so() {
        let mut empty = data();
        empty.quota.identities.clear();
        empty.runs.runs.clear();
        empty.feed = Err("no feed".into());
        let html = main(&empty);
        assert!(html.contains("No quota readings yet."));
        assert!(html.contains("No sync runs."));
        assert!(html.contains("could not be read: no feed"));
    }
}
