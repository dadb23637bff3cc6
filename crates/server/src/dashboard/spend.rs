//! Who spends an identity's quota, per bucket and window: what each headroom activity spent
//! (each sync run, the feed, operations, probes, plans) and "outside headroom" — the
//! provider's `used` minus what headroom recorded — in numbers and in one sentence ("sync run
//! #12: 310 requests · the feed: 52 · outside headroom: 120 (the provider counted 495)").
//!
//! Pure: the API (`/api/quota/spend`) and the page say the same. The window is the one of the
//! bucket's newest reading, named by its reset; headroom's rows of that window are the ones
//! whose responses carried the same reset (`headroom_store::quota_history::spend`).

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_core::route;
use headroom_store::quota_history::BucketNow;
use headroom_store::quota_history::spend::{SpendStart, SpendTotal};
use serde::Serialize;

use super::words;

/// How far apart two resets may be and still name one window (GitHub has been seen to move
/// a window's reset by a second).
pub const SAME_WINDOW: SignedDuration = SignedDuration::from_secs(2);

/// What sent the requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Activity {
    /// A sync run (its id beside it).
    SyncRun,
    /// The feed: polling and enrichment.
    Feed,
    /// Provider operations (`headroom op …`).
    Operations,
    /// `headroom quota show` and `quota probe`.
    QuotaProbe,
    /// `headroom sync plan`.
    SyncPlan,
    /// Learning whose a token is (`GET /user`).
    Identity,
    /// Requests no catalogued activity claims.
    Other,
}

impl Activity {
    /// The activity of a route family's requests that no sync run sent.
    pub fn of_family(family: &str) -> Activity {
        let is = |f: route::RouteFamily| f.name == family;
        if is(route::FEED_POLL) || is(route::ENRICH_SEARCH) || is(route::ENRICH_DETAIL) {
            Activity::Feed
        } else if is(route::GITHUB_OPS) || is(route::GITLAB_OPS) {
            Activity::Operations
        } else if is(route::QUOTA_PROBE) {
            Activity::QuotaProbe
        } else if [
            route::SYNC_PLAN_GRAPHQL,
            route::SYNC_PLAN_REST,
            route::GITLAB_SYNC_PLAN,
            route::JIRA_SYNC_PLAN,
            route::LINEAR_SYNC_PLAN,
            route::LAUNCHDARKLY_SYNC_PLAN,
        ]
        .into_iter()
        .any(is)
        {
            Activity::SyncPlan
        } else if is(route::IDENTITY) {
            Activity::Identity
        } else {
            Activity::Other
        }
    }

    fn label(self, run: Option<i64>) -> String {
        match (self, run) {
            (Activity::SyncRun, Some(id)) => format!("sync run #{id}"),
            (Activity::SyncRun, None) => "sync runs".to_owned(),
            (Activity::Feed, _) => "the feed".to_owned(),
            (Activity::Operations, _) => "operations".to_owned(),
            (Activity::QuotaProbe, _) => "quota probe".to_owned(),
            (Activity::SyncPlan, _) => "sync plan".to_owned(),
            (Activity::Identity, _) => "token owner lookups".to_owned(),
            (Activity::Other, _) => "other headroom requests".to_owned(),
        }
    }
}

/// What one activity spent of the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ActivitySpend {
    /// What sent the requests.
    pub activity: Activity,
    /// The sync run, for [`Activity::SyncRun`].
    pub sync_run_id: Option<i64>,
    /// How a person names it ("sync run #12", "the feed").
    pub label: String,
    /// Round trips.
    pub requests: u64,
    /// What the provider counts of them: GraphQL points, 1 per REST request, 0 for an
    /// authorized 304.
    pub units: u64,
}

/// One bucket's window: who spent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct BucketSpend {
    /// The bucket (`core`, `graphql` …).
    pub bucket: String,
    /// The window's reset (the newest reading's).
    #[schema(value_type = String, format = DateTime)]
    pub reset_at: Timestamp,
    /// What the provider said the window used, at its newest reading.
    pub provider_used: Option<u64>,
    /// What headroom recorded of the window, in the provider's units.
    pub recorded: u64,
    /// `provider_used − recorded`, never below 0; none when the provider did not say.
    pub outside: Option<u64>,
    /// Headroom's records may start within the window: what it spent before then counts as
    /// outside, so `outside` is an upper bound.
    pub outside_is_upper_bound: bool,
    /// Per activity: sync runs by id, then the feed, operations, probes, plans, lookups.
    pub activities: Vec<ActivitySpend>,
    /// All of it in one sentence.
    pub words: String,
}

/// One identity's buckets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct IdentitySpend {
    /// The API host.
    pub host: String,
    /// The subject label.
    pub subject: String,
    /// How a person names it ("alice on api.github.com").
    pub name: String,
    /// Its buckets with a reading, by name.
    pub buckets: Vec<BucketSpend>,
}

/// The `/api/quota/spend` document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct SpendSnapshot {
    /// When it was read.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub captured_at: Option<Timestamp>,
    /// Every identity with a reading, by host and subject.
    pub identities: Vec<IdentitySpend>,
}

/// A bucket's window length where the provider documents it: GitHub's hourly buckets and its
/// per-minute search. `None` elsewhere (a simulator may be configured otherwise: a longer
/// assumed window only makes `outside_is_upper_bound` more cautious).
pub fn window_length(provider: &str, bucket: &str) -> Option<SignedDuration> {
    match (provider, bucket) {
        ("github", "search" | "code_search") => Some(SignedDuration::from_mins(1)),
        ("github", _) => Some(SignedDuration::from_hours(1)),
        _ => None,
    }
}

/// Whether two resets name one window.
pub fn same_window(a: Timestamp, b: Timestamp) -> bool {
    a.duration_since(b).abs() <= SAME_WINDOW
}

/// The identities' spend for the windows of their newest readings.
pub fn spend_of(
    latest: &[BucketNow],
    totals: &[SpendTotal],
    starts: &[SpendStart],
) -> Vec<IdentitySpend> {
    let mut out: Vec<IdentitySpend> = Vec::new();
    for now in latest {
        let r = &now.latest.reading;
        let Some(reset_at) = r.reset_at else {
            continue;
        };
        let rows: Vec<&SpendTotal> = totals
            .iter()
            .filter(|t| t.host == r.host && t.subject == r.subject && t.bucket == r.bucket)
            .filter(|t| same_window(t.reset_at, reset_at))
            .collect();
        let start = starts
            .iter()
            .find(|s| s.host == r.host && s.subject == r.subject && s.bucket == r.bucket);
        let covered = start.is_some_and(|s| {
            s.first_reset_at < reset_at - SAME_WINDOW
                || window_length(&r.provider, &r.bucket)
                    .is_some_and(|len| s.first_recorded_at <= reset_at - len)
        });
        let bucket = bucket_spend(&r.bucket, reset_at, r.used, &rows, !covered);
        let position = out
            .iter()
            .position(|i| i.host == r.host && i.subject == r.subject);
        let identity = match position {
            Some(i) => &mut out[i],
            None => {
                out.push(IdentitySpend {
                    host: r.host.clone(),
                    subject: r.subject.clone(),
                    name: words::identity_name(&r.host, &r.subject),
                    buckets: Vec::new(),
                });
                let last = out.len() - 1;
                &mut out[last]
            }
        };
        identity.buckets.push(bucket);
    }
    out
}

/// One bucket's window from its rows (all of one window) and the provider's `used`.
pub fn bucket_spend(
    bucket: &str,
    reset_at: Timestamp,
    provider_used: Option<u64>,
    rows: &[&SpendTotal],
    outside_is_upper_bound: bool,
) -> BucketSpend {
    let mut activities: Vec<ActivitySpend> = Vec::new();
    for row in rows {
        let activity = match row.sync_run_id {
            Some(_) => Activity::SyncRun,
            None => Activity::of_family(&row.route_family),
        };
        let run = row.sync_run_id;
        match activities
            .iter_mut()
            .find(|a| a.activity == activity && a.sync_run_id == run)
        {
            Some(a) => {
                a.requests = a.requests.saturating_add(row.requests);
                a.units = a.units.saturating_add(row.units);
            }
            None => activities.push(ActivitySpend {
                activity,
                sync_run_id: run,
                label: activity.label(run),
                requests: row.requests,
                units: row.units,
            }),
        }
    }
    activities.sort_by_key(|a| (a.activity, a.sync_run_id));
    let recorded = activities
        .iter()
        .fold(0u64, |sum, a| sum.saturating_add(a.units));
    let outside = provider_used.map(|used| used.saturating_sub(recorded));
    let mut spend = BucketSpend {
        bucket: bucket.to_owned(),
        reset_at,
        provider_used,
        recorded,
        outside,
        outside_is_upper_bound,
        activities,
        words: String::new(),
    };
    spend.words = sentence(&spend);
    spend
}

fn count(n: u64, one: &str, many: &str) -> String {
    format!(
        "{} {}",
        words::thousands(n),
        if n == 1 { one } else { many }
    )
}

/// "sync run #12: 310 requests · the feed: 52 requests · outside headroom: 120 (the provider
/// counted 495)"; GraphQL in requests and points.
pub fn sentence(spend: &BucketSpend) -> String {
    let points = spend.bucket == "graphql";
    let mut parts: Vec<String> = spend
        .activities
        .iter()
        .map(|a| {
            let amount = if points {
                format!(
                    "{}, {}",
                    count(a.requests, "request", "requests"),
                    count(a.units, "point", "points")
                )
            } else if a.requests > a.units {
                format!(
                    "{} ({} more not counted: 304)",
                    count(a.units, "request", "requests"),
                    words::thousands(a.requests - a.units)
                )
            } else {
                count(a.units, "request", "requests")
            };
            format!("{}: {amount}", a.label)
        })
        .collect();
    if parts.is_empty() {
        parts.push("headroom: nothing recorded".to_owned());
    }
    let unit = |n: u64| {
        if points {
            count(n, "point", "points")
        } else {
            words::thousands(n)
        }
    };
    parts.push(match (spend.provider_used, spend.outside) {
        (Some(used), Some(outside)) if spend.recorded > used => format!(
            "outside headroom: {} (the provider counted {}, headroom recorded {})",
            unit(outside),
            words::thousands(used),
            words::thousands(spend.recorded)
        ),
        (Some(used), Some(outside)) if spend.outside_is_upper_bound && outside > 0 => format!(
            "outside headroom: up to {} (the provider counted {}; headroom's records start \
             within this window)",
            unit(outside),
            words::thousands(used)
        ),
        (Some(used), Some(outside)) => format!(
            "outside headroom: {} (the provider counted {})",
            unit(outside),
            words::thousands(used)
        ),
        _ => "outside headroom: unknown (the provider did not say what it counted)".to_owned(),
    });
    format!(
        "{} window to {}: {}",
        words::bucket_label(&spend.bucket),
        words::clock_time(spend.reset_at),
        parts.join(" · ")
    )
}

/// The page's "Who spends the quota" section: per identity, one line per bucket window.
pub fn section(snapshot: &SpendSnapshot) -> String {
    use super::render::escape;
    use std::fmt::Write as _;
    let mut out = String::from("<section class=\"spend\"><h2>Who spends the quota</h2>");
    if snapshot.identities.is_empty() {
        out.push_str("<p class=\"empty\">No window with a reading yet.</p>");
    }
    for identity in &snapshot.identities {
        let _ = write!(
            out,
            "<article class=\"identity-spend\" data-identity=\"{}|{}\"><h3>{}</h3><ul>",
            escape(&identity.host),
            escape(&identity.subject),
            escape(&identity.name)
        );
        for bucket in &identity.buckets {
            let _ = write!(
                out,
                "<li class=\"bucket-spend\" data-spend-bucket=\"{}\" data-outside=\"{}\">{}</li>",
                escape(&bucket.bucket),
                bucket.outside.map_or_else(String::new, |n| n.to_string()),
                escape(&bucket.words)
            );
        }
        out.push_str("</ul></article>");
    }
    out.push_str("</section>");
    out
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).expect("valid")
    }

    fn row(family: &str, run: Option<i64>, requests: u64, units: u64) -> SpendTotal {
        SpendTotal {
            host: "api.github.com".into(),
            subject: "user:alice".into(),
            bucket: "core".into(),
            route_family: family.into(),
            sync_run_id: run,
            reset_at: at(7200),
            requests,
            units,
            first_recorded_at: at(3700),
            last_recorded_at: at(7100),
        }
    }

    #[test]
    fn each_activity_is_named_and_the_rest_is_outside_headroom() {
        let rows = [
            row("issues", Some(12), 200, 200),
            row("workflow_runs", Some(12), 110, 110),
            row("feed_poll", None, 40, 40),
            row("enrich_detail", None, 12, 12),
            row("github_ops", None, 3, 3),
            row("quota_probe", None, 10, 10),
        ];
        let refs: Vec<&SpendTotal> = rows.iter().collect();
        let spend = bucket_spend("core", at(7200), Some(495), &refs, false);
        assert_eq!(spend.recorded, 375);
        assert_eq!(spend.outside, Some(120));
        assert!(
            spend.words.ends_with(
                "sync run #12: 310 requests · the feed: 52 requests · operations: 3 requests · \
                 quota probe: 10 requests · outside headroom: 120 (the provider counted 495)"
            ),
            "{}",
            spend.words
        );
    }

    #[test]
    fn records_that_start_within_the_window_make_outside_an_upper_bound() {
        let rows = [row("feed_poll", None, 5, 5)];
        let refs: Vec<&SpendTotal> = rows.iter().collect();
        let spend = bucket_spend("core", at(7200), Some(30), &refs, true);
        assert!(
            spend.words.contains("outside headroom: up to 25"),
            "{}",
            spend.words
        );
    }

    #[test]
    fn graphql_says_points_and_a_304_is_not_counted() {
        let rows = [row("issues", Some(3), 4, 40)];
        let refs: Vec<&SpendTotal> = rows.iter().collect();
        let spend = bucket_spend("graphql", at(7200), Some(40), &refs, false);
        assert!(spend.words.contains("sync run #3: 4 requests, 40 points"));
        assert!(spend.words.contains("outside headroom: 0 points"));
        let rows = [row("feed_poll", None, 10, 7)];
        let refs: Vec<&SpendTotal> = rows.iter().collect();
        let spend = bucket_spend("core", at(7200), Some(7), &refs, false);
        assert!(
            spend
                .words
                .contains("the feed: 7 requests (3 more not counted: 304)"),
            "{}",
            spend.words
        );
    }

    #[test]
    fn a_store_that_recorded_an_earlier_window_covers_this_one() {
        use headroom_store::QuotaReading;
        use headroom_store::quota_history::StoredQuotaReading;
        let reading = |reset: i64| BucketNow {
            latest: StoredQuotaReading {
                id: 1,
                reading: QuotaReading {
                    provider: "simulated".into(),
                    host: "api.github.com".into(),
                    subject: "user:alice".into(),
                    bucket: "core".into(),
                    limit: Some(100),
                    remaining: Some(70),
                    used: Some(30),
                    reset_at: Some(at(reset)),
                    in_flight: 0,
                    waiting: 0,
                    blocked_until: None,
                    last_reason: None,
                    process_id: "p".into(),
                    observed_at: at(reset - 10),
                },
            },
            in_flight: 0,
            waiting: 0,
            live_processes: 0,
        };
        let totals = [row("feed_poll", None, 20, 20)];
        let start = |first_reset: i64| SpendStart {
            host: "api.github.com".into(),
            subject: "user:alice".into(),
            bucket: "core".into(),
            first_reset_at: at(first_reset),
            first_recorded_at: at(first_reset - 30),
        };
        let got = spend_of(&[reading(7200)], &totals, &[start(7200)]);
        assert!(got[0].buckets[0].outside_is_upper_bound);
        assert_eq!(got[0].buckets[0].outside, Some(10));
        let got = spend_of(&[reading(7200)], &totals, &[start(3600)]);
        assert!(!got[0].buckets[0].outside_is_upper_bound);
        assert_eq!(got[0].name, "alice on api.github.com");
        // Another window's rows are not this one's.
        let got = spend_of(&[reading(10_800)], &totals, &[start(3600)]);
        assert_eq!(got[0].buckets[0].recorded, 0);
        assert_eq!(got[0].buckets[0].outside, Some(30));
    }

    proptest! {
        #[test]
        fn outside_is_never_negative_and_the_rows_add_up_to_used(
            rows in proptest::collection::vec(
                (0usize..8, proptest::option::of(1i64..5), 0u64..500, 0u64..500), 0..12),
            used in proptest::option::of(0u64..5_000),
            upper in any::<bool>(),
        ) {
            const FAMILIES: [&str; 8] = [
                "issues", "feed_poll", "enrich_search", "github_ops", "quota_probe",
                "sync_plan", "identity", "rest",
            ];
            let rows: Vec<SpendTotal> = rows
                .into_iter()
                .map(|(f, run, requests, units)| row(FAMILIES[f], run, requests.max(units), units))
                .collect();
            let refs: Vec<&SpendTotal> = rows.iter().collect();
            let spend = bucket_spend("core", at(7200), used, &refs, upper);
            let recorded: u64 = rows.iter().map(|r| r.units).sum();
            prop_assert_eq!(spend.recorded, recorded);
            let by_rows: u64 = spend.activities.iter().map(|a| a.units).sum();
            prop_assert_eq!(by_rows, recorded);
            match used {
                None => prop_assert_eq!(spend.outside, None),
                Some(used) => {
                    let outside = spend.outside.expect("known");
                    prop_assert!(outside <= used);
                    if used >= recorded {
                        prop_assert_eq!(by_rows + outside, used);
                    } else {
                        prop_assert_eq!(outside, 0);
                    }
                }
            }
            prop_assert!(spend.words.contains("outside headroom"));
        }
    }
}
