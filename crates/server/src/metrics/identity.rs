//! Whose a series is: the identity labels `/metrics` writes (`host`, `subject`). An identity
//! keyed by its credential before its owner was known (`user:credential:<fingerprint>`, the
//! provisional key of `GET /user`) is published under its owner, or not at all until the
//! owner is known: no label ever carries a fingerprint. Counters stay monotonic under this —
//! a provisional series only ever adds to its owner's.

use std::collections::{BTreeMap, HashMap};

use headroom_store::metrics::{CredentialOwner, RateLimitEventCount, RequestCount};
use headroom_store::quota_history::BucketNow;

/// What marks a provisional subject's id: `credential:<fingerprint>`.
const PROVISIONAL: &str = "credential:";

/// The credentials' owners, by (host, fingerprint).
pub(super) struct Owners(HashMap<(String, String), String>);

impl Owners {
    pub(super) fn new(owners: &[CredentialOwner]) -> Self {
        Owners(
            owners
                .iter()
                .map(|o| ((o.host.clone(), o.fingerprint.clone()), o.subject.clone()))
                .collect(),
        )
    }

    /// The subject to publish for `subject` on `host`: itself, or for a provisional one its
    /// owner's; `None` while that owner is unknown.
    pub(super) fn subject(&self, host: &str, subject: &str) -> Option<String> {
        let Some(at) = subject.find(PROVISIONAL) else {
            return Some(subject.to_owned());
        };
        let fingerprint = &subject[at + PROVISIONAL.len()..];
        self.0
            .get(&(host.to_owned(), fingerprint.to_owned()))
            .cloned()
    }
}

/// The buckets under their published identity. A provisional identity's bucket joins its
/// owner's (it is the same quota): the newest reading wins, in flight and waiting add up.
pub(super) fn buckets(buckets: &[BucketNow], owners: &Owners) -> Vec<BucketNow> {
    let mut out: BTreeMap<(String, String, String), BucketNow> = BTreeMap::new();
    for b in buckets {
        let r = &b.latest.reading;
        let Some(subject) = owners.subject(&r.host, &r.subject) else {
            continue;
        };
        let mut b = b.clone();
        b.latest.reading.subject = subject.clone();
        let key = (r.host.clone(), subject, r.bucket.clone());
        match out.remove(&key) {
            None => {
                out.insert(key, b);
            }
            Some(seen) => {
                let (mut newer, older) =
                    if seen.latest.reading.observed_at > b.latest.reading.observed_at {
                        (seen, b)
                    } else {
                        (b, seen)
                    };
                newer.in_flight += older.in_flight;
                newer.waiting += older.waiting;
                newer.live_processes += older.live_processes;
                out.insert(key, newer);
            }
        }
    }
    out.into_values().collect()
}

/// The rate-limit event counts under their published identity, one per label set.
pub(super) fn events(events: &[RateLimitEventCount], owners: &Owners) -> Vec<RateLimitEventCount> {
    let mut out: BTreeMap<[String; 5], u64> = BTreeMap::new();
    for e in events {
        let Some(subject) = owners.subject(&e.host, &e.subject) else {
            continue;
        };
        let key = [
            e.host.clone(),
            subject,
            e.kind.clone(),
            e.reason.clone(),
            e.wait_reason.clone(),
        ];
        *out.entry(key).or_default() += e.count;
    }
    out.into_iter()
        .map(
            |([host, subject, kind, reason, wait_reason], count)| RateLimitEventCount {
                host,
                subject,
                kind,
                reason,
                wait_reason,
                count,
            },
        )
        .collect()
}

/// The request counts under their published identity, one per label set.
pub(super) fn requests(requests: &[RequestCount], owners: &Owners) -> Vec<RequestCount> {
    let mut out: BTreeMap<[String; 4], (u64, u64)> = BTreeMap::new();
    for r in requests {
        let Some(subject) = owners.subject(&r.host, &r.subject) else {
            continue;
        };
        let key = [
            r.host.clone(),
            subject,
            r.route_family.clone(),
            r.dimension.clone(),
        ];
        let sum = out.entry(key).or_default();
        sum.0 += r.requests;
        sum.1 += r.units;
    }
    out.into_iter()
        .map(
            |([host, subject, route_family, dimension], (requests, units))| RequestCount {
                host,
                subject,
                route_family,
                dimension,
                requests,
                units,
            },
        )
        .collect()
}
