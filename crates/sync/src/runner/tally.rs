//! What one answer adds to a run's summary: the requests and points per bucket, the answer's
//! other buckets' points under their own names, and the errors the origin answered itself.

use headroom_core::signal::RateLimitSignal;
use headroom_http::ApiError;

use crate::summary::RunSummary;

/// Requests the origin answered with an error it sent itself (a refusal, a missing object, a
/// bad request, a server error after its retries); 0 for a failure nothing answered (a
/// timeout, a refused connection) and for waits decided before sending.
pub(super) fn answered(e: &ApiError) -> u64 {
    match e {
        ApiError::Forbidden { .. } | ApiError::Gone { .. } | ApiError::Status { .. } => 1,
        ApiError::Server { attempts, .. } => u64::from((*attempts).max(1)),
        _ => 0,
    }
}

pub(super) fn tally_response(
    s: &mut RunSummary,
    bucket: &str,
    signal: &RateLimitSignal,
    estimated: u64,
    attempts: u32,
    free: bool,
) -> u64 {
    // The request's other buckets (Linear's complexity) report their own reading and cost:
    // those points are theirs, and this bucket counts the request.
    let others: Vec<&RateLimitSignal> = signal
        .others
        .iter()
        .filter(|o| o.resource.is_some())
        .collect();
    let others_cost = others.iter().any(|o| o.cost.is_some());
    let b = s.buckets.entry(bucket.to_owned()).or_default();
    b.requests += u64::from(attempts.max(1));
    let points = if free {
        0
    } else if others_cost {
        1
    } else {
        signal
            .cost
            .unwrap_or(if bucket == "graphql" { estimated } else { 1 })
    };
    b.points += points;
    if let Some(r) = signal.remaining {
        b.min_remaining = Some(b.min_remaining.map_or(r, |m| m.min(r)));
    }
    let mut other_points = 0;
    for o in others {
        let Some(name) = o.resource.as_ref() else {
            continue;
        };
        // The request is counted once, under its own bucket.
        let b = s.buckets.entry(name.as_str().to_owned()).or_default();
        let cost = if free { 0 } else { o.cost.unwrap_or(0) };
        b.points += cost;
        other_points += cost;
        if let Some(r) = o.remaining {
            b.min_remaining = Some(b.min_remaining.map_or(r, |m| m.min(r)));
        }
    }
    // What calibration compares with the estimate: the points the document cost.
    if others_cost { other_points } else { points }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_points_a_response_reports_for_another_bucket_are_tallied_under_that_bucket() {
        // Linear: the request spends `requests`; `X-Complexity` is the `complexity` bucket's.
        let complexity = RateLimitSignal {
            resource: Some(headroom_core::Bucket::new("complexity")),
            remaining: Some(1_500),
            cost: Some(480),
            ..RateLimitSignal::default()
        };
        let signal = RateLimitSignal {
            remaining: Some(2_400),
            cost: Some(480),
            others: vec![complexity],
            ..RateLimitSignal::default()
        };
        let mut s = RunSummary::default();
        let points = tally_response(&mut s, "requests", &signal, 1, 1, false);
        assert_eq!(points, 480, "calibration compares the document's points");
        let (requests, complexity) = (&s.buckets["requests"], &s.buckets["complexity"]);
        assert_eq!((requests.requests, requests.points), (1, 1));
        assert_eq!(requests.min_remaining, Some(2_400));
        assert_eq!((complexity.requests, complexity.points), (0, 480));
        assert_eq!(s.requests(), 1, "one request, counted once");
        assert_eq!(complexity.min_remaining, Some(1_500));
        // One bucket (GitHub's GraphQL) keeps its points where they were.
        let graphql = RateLimitSignal {
            cost: Some(7),
            ..RateLimitSignal::default()
        };
        assert_eq!(tally_response(&mut s, "graphql", &graphql, 3, 1, false), 7);
        assert_eq!(s.buckets["graphql"].points, 7);
    }
}
