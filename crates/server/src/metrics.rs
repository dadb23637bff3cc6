//! `GET /metrics`: the Prometheus text exposition of what is left and who spends it — per
//! identity and bucket the newest reading (remaining, limit, reset, in flight and waiting over
//! the live processes), rate-limit events kept by kind and reason, requests by route family,
//! sync runs by status with the pages and rows they stored, and feed events by outcome. Labels
//! carry only an identity's own name (its host and subject), never a token or fingerprint.
//! [`render`] is pure; the handler reads and calls it.

use std::fmt::Write as _;

use axum::extract::{RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use headroom_core::clock::Timestamp;
use headroom_store::metrics::StoreTotals;
use headroom_store::quota_history::BucketNow;

use crate::ApiError;
use crate::api::DashboardState;

/// The exposition format's content type.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Serves the exposition (no parameter is accepted).
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "metrics",
    responses(
        (status = 200, description = "Prometheus text exposition (docs/DASHBOARD.md names every family)", content_type = "text/plain", body = String),
        (status = 400, description = "A parameter was refused (unknown, repeated or malformed)", body = crate::ErrorBody),
        (status = 503, description = "The database did not answer", body = crate::ErrorBody),
    )
)]
pub async fn metrics(
    State(state): State<DashboardState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    crate::api::params::pairs(raw.as_deref(), &[])?;
    let now = state.clock.now();
    let buckets = state
        .history
        .latest_quota_readings(now - state.settings.live_window)
        .await?;
    let totals = state.store.store_totals().await?;
    Ok((
        [(header::CONTENT_TYPE, CONTENT_TYPE)],
        render(&buckets, &totals),
    )
        .into_response())
}

/// A label value as the format wants it: backslash, quote and newline escaped.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// One metric family: its help, its type, and its samples (`labels` already rendered).
fn family(out: &mut String, name: &str, kind: &str, help: &str, samples: &[(String, f64)]) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    for (labels, value) in samples {
        if labels.is_empty() {
            let _ = writeln!(out, "{name} {value}");
        } else {
            let _ = writeln!(out, "{name}{{{labels}}} {value}");
        }
    }
}

/// What one per-bucket gauge reads from a bucket.
type BucketValue = dyn Fn(&BucketNow) -> Option<f64>;

fn seconds(t: Timestamp) -> f64 {
    t.as_millisecond() as f64 / 1000.0
}

/// The whole exposition.
pub fn render(buckets: &[BucketNow], totals: &StoreTotals) -> String {
    let mut out = String::new();
    quota_families(&mut out, buckets);
    total_families(&mut out, totals);
    out
}

/// The per-identity, per-bucket gauges.
fn quota_families(out: &mut String, buckets: &[BucketNow]) {
    let per_bucket = |value: &BucketValue| -> Vec<(String, f64)> {
        buckets
            .iter()
            .filter_map(|b| {
                let r = &b.latest.reading;
                value(b).map(|v| {
                    (
                        format!(
                            "host=\"{}\",subject=\"{}\",bucket=\"{}\"",
                            label(&r.host),
                            label(&r.subject),
                            label(&r.bucket)
                        ),
                        v,
                    )
                })
            })
            .collect()
    };
    let quota: [(&str, &str, &BucketValue); 5] = [
        (
            "headroom_quota_remaining",
            "What the identity has left in the bucket's window, as last read.",
            &|b| b.latest.reading.remaining.map(|v| v as f64),
        ),
        (
            "headroom_quota_limit",
            "The bucket's window limit, as last read.",
            &|b| b.latest.reading.limit.map(|v| v as f64),
        ),
        (
            "headroom_quota_reset_timestamp_seconds",
            "When the bucket's window resets (Unix time).",
            &|b| b.latest.reading.reset_at.map(seconds),
        ),
        (
            "headroom_quota_in_flight",
            "Requests in flight on the bucket, over the processes reporting it.",
            &|b| Some(b.in_flight as f64),
        ),
        (
            "headroom_quota_waiting",
            "Callers waiting on the bucket, over the processes reporting it.",
            &|b| Some(b.waiting as f64),
        ),
    ];
    for (name, help, value) in quota {
        family(out, name, "gauge", help, &per_bucket(value));
    }
}

/// The database's totals: rate-limit events, requests, sync runs, feed events.
fn total_families(out: &mut String, totals: &StoreTotals) {
    let events: Vec<(String, f64)> = totals
        .rate_limit_events
        .iter()
        .map(|e| {
            (
                format!(
                    "kind=\"{}\",reason=\"{}\",wait_reason=\"{}\"",
                    label(&e.kind),
                    label(&e.reason),
                    label(&e.wait_reason)
                ),
                e.count as f64,
            )
        })
        .collect();
    family(
        out,
        "headroom_rate_limit_events",
        "gauge",
        "Rate-limit events kept (deferrals, refusals, hibernations), by kind, provider reason and governor reason.",
        &events,
    );
    let requests = |units: bool| -> Vec<(String, f64)> {
        totals
            .requests
            .iter()
            .map(|r| {
                (
                    format!(
                        "route_family=\"{}\",dimension=\"{}\"",
                        label(&r.route_family),
                        label(&r.dimension)
                    ),
                    (if units { r.units } else { r.requests }) as f64,
                )
            })
            .collect()
    };
    family(
        out,
        "headroom_requests_total",
        "counter",
        "Round trips to the provider, by route family and dimension.",
        &requests(false),
    );
    family(
        out,
        "headroom_request_units_total",
        "counter",
        "Quota units spent (requests, or GraphQL points), by route family and dimension.",
        &requests(true),
    );
    let runs: Vec<(String, f64)> = totals
        .sync_runs
        .iter()
        .map(|(status, n)| (format!("status=\"{}\"", label(status)), *n as f64))
        .collect();
    family(
        out,
        "headroom_sync_runs",
        "gauge",
        "Sync runs by status (hibernating: waiting for a quota window).",
        &runs,
    );
    family(
        out,
        "headroom_sync_pages_total",
        "counter",
        "Pages sync runs stored.",
        &[(String::new(), totals.sync_pages as f64)],
    );
    family(
        out,
        "headroom_sync_rows_total",
        "counter",
        "Rows sync runs wrote.",
        &[(String::new(), totals.sync_rows as f64)],
    );
    let feed: Vec<(String, f64)> = totals
        .feed_events
        .iter()
        .map(|(outcome, n)| (format!("outcome=\"{outcome}\""), *n as f64))
        .collect();
    family(
        out,
        "headroom_feed_events_total",
        "counter",
        "Feed events by outcome (created, duplicate, quarantined, ignored).",
        &feed,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_store::QuotaReading;
    use headroom_store::metrics::{RateLimitEventCount, RequestCount};
    use headroom_store::quota_history::StoredQuotaReading;

    fn bucket(subject: &str, bucket: &str, remaining: u64) -> BucketNow {
        let at = Timestamp::from_second(1_800_000_000).unwrap_or(Timestamp::UNIX_EPOCH);
        BucketNow {
            latest: StoredQuotaReading {
                id: 1,
                reading: QuotaReading {
                    provider: "github".into(),
                    host: "api.github.com".into(),
                    subject: subject.into(),
                    bucket: bucket.into(),
                    limit: Some(5000),
                    remaining: Some(remaining),
                    used: Some(5000 - remaining),
                    reset_at: Some(at),
                    in_flight: 1,
                    waiting: 0,
                    blocked_until: None,
                    last_reason: None,
                    process_id: "headroom:1".into(),
                    observed_at: at,
                },
            },
            in_flight: 3,
            waiting: 2,
            live_processes: 2,
        }
    }

    /// Every family has its help and type; samples carry the identity's own name only, with
    /// label values escaped.
    #[test]
    fn the_exposition_names_identities_and_escapes_labels() {
        let totals = StoreTotals {
            rate_limit_events: vec![RateLimitEventCount {
                kind: "deferred".into(),
                reason: String::new(),
                wait_reason: "in_flight_ceiling".into(),
                count: 4,
            }],
            requests: vec![RequestCount {
                route_family: "events".into(),
                dimension: "rest_core".into(),
                requests: 7,
                units: 7,
            }],
            sync_runs: vec![("hibernating".into(), 1)],
            sync_pages: 12,
            sync_rows: 340,
            feed_events: vec![("created", 4), ("quarantined", 3)],
        };
        let text = render(
            &[
                bucket("user:alice", "core", 1234),
                bucket("user:\"q\"", "graphql", 0),
            ],
            &totals,
        );
        for line in [
            "# TYPE headroom_quota_remaining gauge",
            "headroom_quota_remaining{host=\"api.github.com\",subject=\"user:alice\",bucket=\"core\"} 1234",
            "headroom_quota_in_flight{host=\"api.github.com\",subject=\"user:alice\",bucket=\"core\"} 3",
            "headroom_quota_reset_timestamp_seconds{host=\"api.github.com\",subject=\"user:alice\",bucket=\"core\"} 1800000000",
            "subject=\"user:\\\"q\\\"\"",
            "headroom_rate_limit_events{kind=\"deferred\",reason=\"\",wait_reason=\"in_flight_ceiling\"} 4",
            "# TYPE headroom_requests_total counter",
            "headroom_requests_total{route_family=\"events\",dimension=\"rest_core\"} 7",
            "headroom_sync_runs{status=\"hibernating\"} 1",
            "headroom_sync_pages_total 12",
            "headroom_feed_events_total{outcome=\"quarantined\"} 3",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
        for l in text.lines().filter(|l| l.starts_with("# TYPE")) {
            let kind = l.rsplit(' ').next().unwrap_or_default();
            assert!(matches!(kind, "gauge" | "counter"), "{l}");
        }
        assert!(!text.contains("headroom:1"), "no process id in labels");
    }
}
