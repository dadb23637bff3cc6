//! The dashboard's numbers and states in words: an identity's name, a bucket's wait ("REST
//! held back: 10 left, the next request needs 11 to stay safe — reopens 14:32 UTC (in 12 min);
//! 1 sync run waiting"), the shared-quota warning, clock times,
//! countdowns and thousands separators. Pure functions: the page and the API say the same.

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_store::quota_history::BucketNow;

use super::held;
use super::phrase::{Phrase, When};
use crate::api::quota::{BucketView, HeldBack, IdentityQuota};

/// "alice on api.github.com", "installation 42 on …", "203.0.113.9 (no token) on …".
pub fn identity_name(host: &str, subject: &str) -> String {
    let who = match subject.split_once(':') {
        Some(("user", login)) => login.to_owned(),
        Some(("installation", id)) => format!("installation {id}"),
        Some(("ip", ip)) => format!("{ip} (no token)"),
        _ => subject.to_owned(),
    };
    format!("{who} on {host}")
}

/// The owner part of a subject label.
pub fn owner(subject: &str) -> &str {
    subject.split_once(':').map_or(subject, |(_, owner)| owner)
}

/// How a person names a bucket.
pub fn bucket_label(bucket: &str) -> String {
    match bucket {
        "core" => "REST".to_owned(),
        "graphql" => "GraphQL".to_owned(),
        "search" => "Search".to_owned(),
        "code_search" => "Code search".to_owned(),
        other => other.to_owned(),
    }
}

/// `1234567` as "1,234,567".
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// "14:32 UTC" (the page's script rewrites it in the reader's own time zone).
pub fn clock_time(t: Timestamp) -> String {
    t.strftime("%H:%M UTC").to_string()
}

/// "45 s", "12 min", "2 h 5 min", "3 d 4 h"; "now" for nothing left.
pub fn countdown(from: Timestamp, to: Timestamp) -> String {
    let secs = to.duration_since(from).as_secs();
    if secs <= 0 {
        return "now".to_owned();
    }
    let (d, h, m) = (secs / 86_400, secs % 86_400 / 3600, secs % 3600 / 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{secs} s"),
        (0, 0, m) => format!("{} min", m + i64::from(secs % 60 >= 30)),
        (0, h, 0) => format!("{h} h"),
        (0, h, m) => format!("{h} h {m} min"),
        (d, 0, _) => format!("{d} d"),
        (d, h, _) => format!("{d} d {h} h"),
    }
}

/// Why work on a bucket waits now, in words; none when it does not. `held` is the
/// governor's hold on it that keeps sync runs waiting (its reserve holds work back before the
/// remaining reaches 0); the numbers said are the bucket's reading, one source for each.
pub fn bucket_wait(bucket: &BucketNow, held: Option<&HeldBack>, now: Timestamp) -> Option<Phrase> {
    let r = &bucket.latest.reading;
    let label = bucket_label(&r.bucket);
    let reason = r.last_reason.as_deref().filter(|s| !s.is_empty());
    let exhausted = r.remaining == Some(0);
    let mut p = Phrase::default();
    if let Some(until) = r.blocked_until.filter(|u| *u > now) {
        let secondary = reason.is_some_and(|s| s.contains("secondary"));
        if secondary {
            p.push("secondary limit — ").when(When::retry(until));
        } else if exhausted {
            p.push(format!("{label} exhausted — "))
                .when(When::reopens(until));
        } else {
            match reason {
                Some(reason) => p.push(format!("{reason} — ")),
                None => p.push(format!("{label} blocked — ")),
            };
            p.when(When::reopens(until));
        }
    } else if exhausted && let Some(reset) = r.reset_at {
        p.push(format!("{label} exhausted — "))
            .when(When::reopens(reset));
    } else if let Some(held) = held {
        let reopens = r
            .reset_at
            .filter(|reset| *reset >= held.hold.reopens_at)
            .unwrap_or(held.hold.reopens_at);
        p.append(held::hold_phrase(&held.hold, r.remaining, reopens));
    } else if let Some(reason) = reason.filter(|_| bucket.waiting > 0) {
        p.push(reason);
    } else if bucket.waiting > 0 {
        // Callers of live processes wait with no reason recorded (the in-flight ceiling, the
        // reserve before a reading said why): said, not left at a bare count.
        p.push(format!(
            "{label} holds back {} of live processes",
            match bucket.waiting {
                1 => "1 request".to_owned(),
                n => format!("{} requests", thousands(n)),
            }
        ));
    }
    if let Some(held) = held.filter(|h| h.runs > 0) {
        if !p.is_empty() {
            p.push("; ");
        }
        p.push(held::runs_waiting(held.runs));
    }
    (!p.is_empty()).then_some(p)
}

/// Each bucket's wait in words, with what goes on meanwhile on the identity's other buckets
/// ("REST exhausted — reopens 14:32 (in 12 min); GraphQL requests in flight meanwhile"), so a
/// wait on one bucket does not read as the whole identity standing still.
pub fn bucket_waits(buckets: &[BucketView], now: Timestamp) -> Vec<Option<Phrase>> {
    let mut waits: Vec<Option<Phrase>> = buckets
        .iter()
        .map(|b| bucket_wait(&b.now, b.held_back.as_ref(), now))
        .collect();
    let busy: Vec<String> = buckets
        .iter()
        .zip(&waits)
        .filter(|(b, wait)| wait.is_none() && b.now.in_flight > 0)
        .map(|(b, _)| bucket_label(&b.now.latest.reading.bucket))
        .collect();
    if !busy.is_empty() {
        for wait in waits.iter_mut().flatten() {
            wait.push(format!(
                "; {} requests in flight meanwhile",
                busy.join(" and ")
            ));
        }
    }
    waits
}

/// The warning where several credentials spend one identity's quota.
pub fn shared_quota_warning(identity: &IdentityQuota) -> Option<String> {
    if identity.credentials_sharing < 2 {
        return None;
    }
    let owner = owner(&identity.subject);
    let core = identity
        .buckets
        .iter()
        .find(|b| b.now.latest.reading.bucket == "core")
        .and_then(|b| b.now.latest.reading.limit);
    let what = match core {
        // The headers give the limit, not the window's length (a simulator's or a
        // self-managed server's window need not be GitHub's hour): say only the limit.
        Some(limit) => format!("{owner}'s core quota of {} requests", thousands(limit)),
        None => format!("{owner}'s quota"),
    };
    Some(format!(
        "these {} credentials share {what}: more tokens do not add capacity",
        identity.credentials_sharing
    ))
}

/// A span of time in words, for ages and waits already spent.
pub fn duration(d: SignedDuration) -> String {
    let zero = Timestamp::UNIX_EPOCH;
    countdown(zero, zero + d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_store::QuotaReading;
    use headroom_store::quota_history::StoredQuotaReading;

    fn t(secs: i64) -> Timestamp {
        // 14:20:00 UTC.
        Timestamp::from_second(1_800_000_000 - 1_800_000_000 % 86_400 + 14 * 3600 + 20 * 60 + secs)
            .expect("valid")
    }

    fn bucket(remaining: u64, blocked: Option<i64>, reason: Option<&str>) -> BucketNow {
        BucketNow {
            latest: StoredQuotaReading {
                id: 1,
                reading: QuotaReading {
                    provider: "github".into(),
                    host: "api.github.com".into(),
                    subject: "user:alice".into(),
                    bucket: "core".into(),
                    limit: Some(5000),
                    remaining: Some(remaining),
                    used: Some(5000 - remaining),
                    reset_at: Some(t(12 * 60)),
                    in_flight: 0,
                    waiting: 1,
                    blocked_until: blocked.map(t),
                    last_reason: reason.map(str::to_owned),
                    process_id: "p".into(),
                    observed_at: t(0),
                },
            },
            in_flight: 0,
            waiting: 1,
            live_processes: 1,
        }
    }

    fn wait(b: &BucketNow, held: Option<&HeldBack>, now: Timestamp) -> Option<String> {
        bucket_wait(b, held, now).map(|p| p.plain(now))
    }

    #[test]
    fn waits_read_in_words() {
        assert_eq!(
            wait(&bucket(0, Some(12 * 60), None), None, t(0)).as_deref(),
            Some("REST exhausted — reopens 14:32 UTC (in 12 min)")
        );
        assert_eq!(
            wait(&bucket(0, None, None), None, t(0)).as_deref(),
            Some("REST exhausted — reopens 14:32 UTC (in 12 min)")
        );
        assert_eq!(
            wait(&bucket(40, Some(60), Some("secondary limit")), None, t(0)).as_deref(),
            Some("secondary limit — retry at 14:21 UTC (in 1 min)")
        );
        assert_eq!(
            wait(&bucket(40, None, Some("paced: 900 points/min")), None, t(0)).as_deref(),
            Some("paced: 900 points/min")
        );
        assert_eq!(
            wait(&bucket(40, None, None), None, t(0)).as_deref(),
            Some("REST holds back 1 request of live processes")
        );
        let mut idle = bucket(40, None, None);
        idle.waiting = 0;
        assert_eq!(wait(&idle, None, t(0)), None);
        // A block that has passed is no wait.
        assert_eq!(
            wait(&bucket(40, Some(-5), Some("x")), None, t(0)).as_deref(),
            Some("x")
        );
    }

    #[test]
    fn a_bucket_held_back_on_the_reserve_says_why_before_it_reaches_zero() {
        let held = HeldBack {
            hold: crate::dashboard::held::Hold {
                bucket: "core".into(),
                remaining: 10,
                needed: 11,
                reopens_at: t(12 * 60),
            },
            runs: 1,
        };
        let mut b = bucket(10, None, None);
        b.waiting = 0;
        assert_eq!(
            wait(&b, Some(&held), t(0)).as_deref(),
            Some(
                "REST held back: 10 left, the next request needs 11 to stay safe — reopens \
                 14:32 UTC (in 12 min); 1 sync run waiting"
            )
        );
        // Its reset past with no reading of the new window: said as such, never "(in now)".
        assert_eq!(
            wait(&b, Some(&held), t(13 * 60)).as_deref(),
            Some(
                "REST held back: 10 left, the next request needs 11 to stay safe — reset \
                 14:32 UTC — awaiting the new window's first response; 1 sync run waiting"
            )
        );
        // Exhausted and holding a run: both said.
        assert_eq!(
            wait(&bucket(0, None, None), Some(&held), t(0)).as_deref(),
            Some("REST exhausted — reopens 14:32 UTC (in 12 min); 1 sync run waiting")
        );
    }

    #[test]
    fn a_wait_says_what_the_other_buckets_do_meanwhile() {
        let view = |now: BucketNow| crate::api::quota::BucketView {
            now,
            wait: None,
            held_back: None,
            reset_passed: false,
        };
        let rest = view(bucket(0, None, None));
        let mut graphql = bucket(4000, None, None);
        graphql.latest.reading.bucket = "graphql".into();
        graphql.in_flight = 3;
        graphql.waiting = 0;
        let plain = |waits: Vec<Option<Phrase>>| -> Vec<Option<String>> {
            waits
                .into_iter()
                .map(|w| w.map(|p| p.plain(t(0))))
                .collect()
        };
        assert_eq!(
            plain(bucket_waits(&[rest.clone(), view(graphql)], t(0))),
            vec![
                Some(
                    "REST exhausted — reopens 14:32 UTC (in 12 min); GraphQL requests in flight \
                     meanwhile"
                        .to_owned()
                ),
                None
            ]
        );
        // Nothing in flight elsewhere: the wait is said alone.
        let mut idle = bucket(4000, None, None);
        idle.latest.reading.bucket = "graphql".into();
        idle.waiting = 0;
        assert_eq!(
            plain(bucket_waits(&[rest, view(idle)], t(0)))[0].as_deref(),
            Some("REST exhausted — reopens 14:32 UTC (in 12 min)")
        );
    }

    #[test]
    fn numbers_names_and_countdowns() {
        assert_eq!(thousands(5000), "5,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(12), "12");
        assert_eq!(
            identity_name("api.github.com", "user:alice"),
            "alice on api.github.com"
        );
        assert_eq!(
            identity_name("h", "installation:42"),
            "installation 42 on h"
        );
        assert_eq!(countdown(t(0), t(45)), "45 s");
        assert_eq!(countdown(t(0), t(2 * 3600 + 300)), "2 h 5 min");
        assert_eq!(countdown(t(10), t(0)), "now");
        assert_eq!(
            duration(SignedDuration::from_secs(3 * 86_400 + 4 * 3600)),
            "3 d 4 h"
        );
    }
}
