//! `GET /metrics`: the Prometheus text exposition of what is left and who spends it — per
//! identity and bucket the newest reading (remaining, used, limit, reset, in flight and waiting
//! over the live processes); per identity the rate-limit events ever recorded (kept plus
//! pruned, so the counter only grows) by kind and reason, and the requests by route family;
//! sync runs by every status (0 for none) with the pages and rows they stored; feed events by
//! every outcome. Labels carry only an identity's own name (its host and subject), never a
//! token or fingerprint ([`identity`]). [`render`] is pure; the handler reads and calls it.

mod identity;

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

/// The identity labels of a series.
fn identity(host: &str, subject: &str) -> String {
    format!("host=\"{}\",subject=\"{}\"", label(host), label(subject))
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

/// What the provider says was used in the window: its own count (GitHub's
/// `x-ratelimit-used`), or limit minus remaining when it sends none.
fn used(b: &BucketNow) -> Option<f64> {
    let r = &b.latest.reading;
    r.used
        .or_else(|| Some(r.limit?.saturating_sub(r.remaining?)))
        .map(|v| v as f64)
}

/// The whole exposition.
pub fn render(buckets: &[BucketNow], totals: &StoreTotals) -> String {
    let owners = identity::Owners::new(&totals.credential_owners);
    let mut out = String::new();
    quota_families(&mut out, &identity::buckets(buckets, &owners));
    event_families(&mut out, totals, &owners);
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
                            "{},bucket=\"{}\"",
                            identity(&r.host, &r.subject),
                            label(&r.bucket)
                        ),
                        v,
                    )
                })
            })
            .collect()
    };
    let quota: [(&str, &str, &BucketValue); 6] = [
        (
            "headroom_quota_remaining",
            "What the identity has left in the bucket's window, as last read.",
            &|b| b.latest.reading.remaining.map(|v| v as f64),
        ),
        (
            "headroom_quota_used",
            "What the identity used of the bucket's window, as the provider last said (limit minus remaining when it does not).",
            &used,
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

/// The per-identity counters: rate-limit events, requests and units.
fn event_families(out: &mut String, totals: &StoreTotals, owners: &identity::Owners) {
    let events: Vec<(String, f64)> = identity::events(&totals.rate_limit_events, owners)
        .iter()
        .map(|e| {
            (
                format!(
                    "{},kind=\"{}\",reason=\"{}\",wait_reason=\"{}\"",
                    identity(&e.host, &e.subject),
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
        "headroom_rate_limit_events_total",
        "counter",
        "Rate-limit events recorded (deferrals, refusals, hibernations), pruned ones included, by identity, kind, provider reason and governor reason.",
        &events,
    );
    let requests = identity::requests(&totals.requests, owners);
    let requests = |units: bool| -> Vec<(String, f64)> {
        requests
            .iter()
            .map(|r| {
                (
                    format!(
                        "{},route_family=\"{}\",dimension=\"{}\"",
                        identity(&r.host, &r.subject),
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
        "Round trips to the provider, by identity, route family and dimension.",
        &requests(false),
    );
    family(
        out,
        "headroom_request_units_total",
        "counter",
        "Quota units spent (requests, or GraphQL points), by identity, route family and dimension.",
        &requests(true),
    );
}

/// The database's totals: sync runs, their pages and rows, feed events.
fn total_families(out: &mut String, totals: &StoreTotals) {
    let runs: Vec<(String, f64)> = totals
        .sync_runs
        .iter()
        .map(|(status, n)| (format!("status=\"{}\"", label(status)), *n as f64))
        .collect();
    family(
        out,
        "headroom_sync_runs",
        "gauge",
        "Sync runs now in each status (hibernating: waiting for a quota window); 0 for a status no run has.",
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
mod tests;
