//! Jira's app points as its structured quota headers state them [jr-rl]: the policy
//! (`Beta-RateLimit-Policy: "global-app-quota";q=65000;w=3600`) on every response of an OAuth
//! app, and the reading (`Beta-RateLimit: "global-app-quota";r=1200;t=840`) only near the
//! limit. Atlassian drops the `Beta-` prefix once a policy is enforced, so both spellings are
//! read. Burst policies are not points and are left to the endpoint buckets.

use http::HeaderMap;
use sfv::{BareItem, List, ListEntry, Parser};

use super::{Provider, RateLimitSignal, from_epoch_seconds};
use crate::clock::Timestamp;
use crate::quota::Bucket;

/// The bucket of an OAuth app's hourly points, beside Jira's endpoint buckets.
pub const JIRA_APP_POINTS: &str = "app_points";

/// The policies that are an app's points: the global pool, and the per-site pool Atlassian
/// grants after review.
const APP_POLICIES: [&str; 2] = ["global-app-quota", "tenant-app-quota"];

/// One member of a structured quota header: its policy name and integer parameters.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Member {
    name: String,
    /// The quota (`q`), the window in seconds (`w`), the remaining (`r`) and the seconds
    /// to the reset (`t`).
    q: Option<u64>,
    w: Option<u64>,
    r: Option<u64>,
    t: Option<u64>,
}

/// The members of a structured list header under either spelling; nothing when it is absent
/// or malformed (a header Jira garbles is no reading, never an error).
fn members(headers: &HeaderMap, names: [&str; 2]) -> Vec<Member> {
    let mut out = Vec::new();
    for name in names {
        for value in headers.get_all(name) {
            let Ok(list) = Parser::new(value.as_bytes()).parse::<List>() else {
                continue;
            };
            out.extend(list.iter().filter_map(|entry| match entry {
                ListEntry::Item(item) => {
                    let name = match &item.bare_item {
                        BareItem::String(s) => s.as_str().to_owned(),
                        BareItem::Token(t) => t.as_str().to_owned(),
                        _ => return None,
                    };
                    let int = |key: &str| {
                        item.params
                            .get(key)
                            .and_then(BareItem::as_integer)
                            .and_then(|i| u64::try_from(i64::from(i)).ok())
                    };
                    Some(Member {
                        name,
                        q: int("q"),
                        w: int("w"),
                        r: int("r"),
                        t: int("t"),
                    })
                }
                ListEntry::InnerList(_) => None,
            }));
        }
    }
    out
}

/// The top of the next UTC hour after `now`: when Jira's app points reset [jr-rl].
fn next_hour(now: Timestamp) -> Option<Timestamp> {
    let s = now.as_second();
    from_epoch_seconds(s - s.rem_euclid(3_600) + 3_600)
}

/// `now + t` on the window's grid: the quota resets at the top of each UTC hour [jr-rl], and
/// `t` is whole seconds counted by the provider a moment before `now`. Read raw, each reading
/// named a reset a fraction of a second apart, and a reading whose fraction fell earlier was
/// taken for an older window and ignored, so the bucket kept its first reading of the hour.
fn aligned(now: Timestamp, t: u64, window: u64) -> Option<Timestamp> {
    let at = now.as_second().checked_add(i64::try_from(t).ok()?)?;
    let w = i64::try_from(window).ok().filter(|w| *w > 0)?;
    let nearest = (at + w / 2).div_euclid(w) * w;
    from_epoch_seconds(nearest)
}

/// The app's points as a response states them: the limit from the policy, the remaining where
/// Jira sends it (under a fifth of the quota left) and else a fifth of the quota, the reset
/// from `t` or else the next UTC hour. `None` when the response names no app policy (API-token traffic).
pub(super) fn app_points(headers: &HeaderMap, now: Timestamp) -> Option<RateLimitSignal> {
    let is_app = |m: &Member| APP_POLICIES.contains(&m.name.as_str());
    let policies: Vec<Member> = members(headers, ["beta-ratelimit-policy", "ratelimit-policy"])
        .into_iter()
        .filter(is_app)
        .collect();
    let readings: Vec<Member> = members(headers, ["beta-ratelimit", "ratelimit"])
        .into_iter()
        .filter(is_app)
        .collect();
    // Two pools at once (global and per site): the one with the least left decides.
    let reading = readings
        .iter()
        .filter(|m| m.r.is_some())
        .min_by_key(|m| m.r);
    let policy = reading
        .and_then(|r| policies.iter().find(|p| p.name == r.name))
        .or_else(|| policies.first());
    if policy.is_none() && reading.is_none() {
        return None;
    }
    let window = policy.and_then(|p| p.w).unwrap_or(3_600);
    let reset_at = reading
        .and_then(|r| r.t)
        .and_then(|t| aligned(now, t, window))
        .or_else(|| next_hour(now));
    Some(RateLimitSignal {
        provider: Some(Provider::Jira),
        resource: Some(Bucket::new(JIRA_APP_POINTS)),
        reset_at,
        limit: policy.and_then(|p| p.q),
        // Without `r`, at least a fifth of the quota is left (Jira states it below that): the
        // lower bound lets the grant rule hold what is in flight to it in the dark, so a run
        // never crosses the fifth and the quota's end between two readings.
        remaining: reading
            .and_then(|r| r.r)
            .or_else(|| policy.and_then(|p| p.q).map(|q| q / 5)),
        ..RateLimitSignal::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use proptest::prelude::*;

    fn at(text: &str) -> Timestamp {
        text.parse().expect("an instant")
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(*name, HeaderValue::from_str(value).expect("a header value"));
        }
        h
    }

    #[test]
    fn the_policy_alone_gives_the_limit_the_hour_and_a_fifth_as_the_least_remaining() {
        let h = headers(&[(
            "beta-ratelimit-policy",
            "\"global-app-quota\";q=65000;w=3600, \"jira-burst-based\";q=100;w=1",
        )]);
        let s = app_points(&h, at("2026-03-26T15:20:00Z")).expect("an app policy");
        assert_eq!(
            s.resource.as_ref().map(Bucket::as_str),
            Some(JIRA_APP_POINTS)
        );
        assert_eq!(s.limit, Some(65_000));
        assert_eq!(
            s.remaining,
            Some(13_000),
            "without r, at least a fifth of the quota is left"
        );
        assert_eq!(s.reset_at, Some(at("2026-03-26T16:00:00Z")));
    }

    #[test]
    fn near_the_limit_the_reading_gives_remaining_and_reset() {
        let h = headers(&[
            ("ratelimit-policy", "\"global-app-quota\";q=65000;w=3600"),
            ("ratelimit", "\"global-app-quota\";r=1200;t=840"),
        ]);
        let s = app_points(&h, at("2026-03-26T15:46:00Z")).expect("a reading");
        assert_eq!(s.remaining, Some(1_200));
        assert_eq!(s.limit, Some(65_000));
        assert_eq!(s.reset_at, Some(at("2026-03-26T16:00:00Z")));
    }

    #[test]
    fn readings_of_one_hour_name_one_reset_whatever_the_fraction_of_a_second() {
        let h = |t: u64| {
            headers(&[
                ("beta-ratelimit-policy", "\"global-app-quota\";q=400;w=3600"),
                ("beta-ratelimit", &format!("\"global-app-quota\";r=5;t={t}")),
            ])
        };
        let early = app_points(&h(40), at("2026-03-26T15:59:20.982Z")).expect("a reading");
        let late = app_points(&h(39), at("2026-03-26T15:59:21.010Z")).expect("a reading");
        let crossed = app_points(&h(40), at("2026-03-26T15:59:21.001Z")).expect("a reading");
        let hour = Some(at("2026-03-26T16:00:00Z"));
        assert_eq!(
            (early.reset_at, late.reset_at, crossed.reset_at),
            (hour, hour, hour)
        );
    }

    #[test]
    fn of_two_pools_the_one_with_less_left_decides() {
        let h = headers(&[
            (
                "beta-ratelimit-policy",
                "\"global-app-quota\";q=65000;w=3600, \"tenant-app-quota\";q=100100;w=3600",
            ),
            (
                "beta-ratelimit",
                "\"global-app-quota\";r=9000;t=60, \"tenant-app-quota\";r=300;t=60",
            ),
        ]);
        let s = app_points(&h, at("2026-03-26T15:59:00Z")).expect("a reading");
        assert_eq!((s.limit, s.remaining), (Some(100_100), Some(300)));
    }

    #[test]
    fn api_token_traffic_and_burst_policies_are_no_app_points() {
        let now = at("2026-03-26T15:00:00Z");
        assert_eq!(app_points(&HeaderMap::new(), now), None);
        let burst = headers(&[("beta-ratelimit-policy", "\"jira-burst-based\";q=100;w=1")]);
        assert_eq!(app_points(&burst, now), None);
    }

    proptest! {
        /// Whatever Jira sends in these headers, reading them never panics, and a reading
        /// names the app's bucket.
        #[test]
        fn any_header_text_reads_without_panic(policy in "\\PC{0,80}", reading in "\\PC{0,80}") {
            let mut h = HeaderMap::new();
            if let Ok(v) = HeaderValue::from_str(&policy) { h.insert("beta-ratelimit-policy", v); }
            if let Ok(v) = HeaderValue::from_str(&reading) { h.insert("beta-ratelimit", v); }
            if let Some(s) = app_points(&h, at("2026-03-26T15:00:00Z")) {
                prop_assert_eq!(s.resource.as_ref().map(Bucket::as_str), Some(JIRA_APP_POINTS));
            }
        }
    }
}
