//! The page's HTML, rendered on the server from [`PageData`]: every number is in the markup,
//! so it reads without JavaScript; the embedded script only refreshes it. Pure functions of
//! their input, each one panel: an identity's quota, a sync-runs table, the feed's figures.

use std::fmt::Write as _;

use headroom_core::clock::Timestamp;

use super::phrase::{Phrase, When};
pub use super::runs::{progress_words, runs_table, spent_words};
use super::words;
use crate::api::quota::{BucketView, IdentityQuota, QuotaSnapshot};
use crate::api::sync::RunsPage;

/// One chart of one bucket over one window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chart {
    /// "last hour", "6 h", "24 h".
    pub window: &'static str,
    /// The rendered SVG.
    pub svg: String,
    /// Its legend (HTML): each kind of mark with its count.
    pub legend: String,
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
    /// Who spends each identity's quota (its section).
    pub spend: super::spend::SpendSnapshot,
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
    out.push_str(&super::spend::section(&data.spend));
    out.push_str(&runs_table(&data.runs, now));
    out.push_str(&feed_panel(&data.feed, &data.quota));
    out
}

/// One identity: its buckets as bars, waits in words, credentials and the warning.
pub fn identity_panel(identity: &IdentityQuota, charts: &[BucketCharts], now: Timestamp) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<article class=\"identity\" data-identity=\"{}|{}\"><h3>{}</h3>\
         <p class=\"runs-waiting\">{} waiting</p>",
        escape(&identity.host),
        escape(&identity.subject),
        escape(&identity.name),
        headroom_core::words::counted(identity.runs_waiting, "sync run", "sync runs")
    );
    if let Some(warning) = &identity.shared_quota_warning {
        let _ = write!(
            out,
            "<p class=\"warning shared-quota\" role=\"alert\">{}</p>",
            escape(warning)
        );
    }
    out.push_str("<div class=\"buckets\">");
    let waits = words::bucket_waits(&identity.buckets, now);
    for (bucket, wait) in identity.buckets.iter().zip(&waits) {
        let of_bucket = charts.iter().find(|c| {
            c.host == identity.host
                && c.subject == identity.subject
                && c.bucket == bucket.now.latest.reading.bucket
        });
        out.push_str(&bucket_row(identity, bucket, wait.as_ref(), of_bucket, now));
    }
    out.push_str("</div>");
    out.push_str(&credentials_list(identity));
    out.push_str("</article>");
    out
}

fn bucket_row(
    identity: &IdentityQuota,
    bucket: &BucketView,
    wait: Option<&Phrase>,
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
        let mut p = Phrase::text(" · ");
        p.when(When::resets(reset));
        out.push_str(&p.html(now));
    }
    out.push_str("</p>");
    // The words the JSON says, for the script to tell when they changed (then it fetches the
    // page's rendering again: its times are live elements, not text).
    let _ = write!(
        out,
        "<p class=\"wait\" data-words=\"{}\">{}</p>",
        escape(bucket.wait.as_deref().unwrap_or("")),
        wait.map(|w| w.html(now)).unwrap_or_default()
    );
    if let Some(charts) = charts {
        out.push_str("<div class=\"charts\">");
        for chart in &charts.charts {
            let _ = write!(
                out,
                "<figure><figcaption>{}</figcaption>{}{}</figure>",
                chart.window, chart.svg, chart.legend
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

/// The feed's status document: a few sentences, then every scalar by its path, one table per
/// block.
pub fn feed_panel(feed: &Result<serde_json::Value, String>, quota: &QuotaSnapshot) -> String {
    let now = quota.captured_at;
    let mut out = String::from("<section class=\"feed\"><h2>Feed</h2>");
    // Numbers a quota panel shows are said once, there.
    let mut shown_above: &[&str] = &[];
    if let Ok(document @ serde_json::Value::Object(_)) = feed {
        out.push_str("<ul class=\"feed-words\">");
        for sentence in super::feed_words::summary(document, quota) {
            let _ = write!(out, "<li>{}</li>", sentence.html(now));
        }
        out.push_str("</ul>");
        if super::feed_words::core_panel(document, quota).is_some() {
            shown_above = &["ledger.remaining", "ledger.limit", "ledger.reset_at"];
        }
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
                    let value = if shown_above.contains(&path.as_str()) {
                        "in the REST panel above".to_owned()
                    } else {
                        value
                    };
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
            waiting: 1,
            blocked_until: None,
            last_reason: Some("GraphQL <stages> running".into()),
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
                    waiting: 1,
                    live_processes: 1,
                },
                wait: Some("GraphQL <stages> running".into()),
                held_back: None,
                reset_passed: false,
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
                pace: crate::api::sync::RunPace {
                    stages_running: vec!["pull_requests".into()],
                    repositories_total: Some(125),
                    repositories_done: vec![crate::api::sync::StageRepositories {
                        stage: "pull_requests".into(),
                        done: 36,
                    }],
                    eta: "no_estimate".into(),
                    ..Default::default()
                },
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
                holds: Vec::new(),
                why: Some("REST exhausted".into()),
                unresumed: None,
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
            spend: Default::default(),
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
            "1 sync run waiting",
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
        assert!(html.contains(
            "pull_requests running · 4 of 8 stages done · pull_requests 36 of 125 repositories · \
             page 12"
        ));
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
