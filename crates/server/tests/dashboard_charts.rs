//! Issue 36, item 7, on both backends: the charts tell a provider's refusal (403/429) from
//! headroom's own waits (local deferrals, concurrency waits, hibernations) and name each in a
//! legend with its count; they carry a time axis and a value axis; and what the page and the
//! history endpoint send is downsampled to what a chart draws, so a day of per-second readings
//! and thousands of events keep the page small.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use axum::http::StatusCode;
use common::{PgDatabase, admin_url, get, settings};
use headroom_core::clock::{ManualClock, SignedDuration, Timestamp};
use headroom_core::{Dimension, LimitReason, Provider, QuotaKey};
use headroom_server::{AppState, DashboardSettings, DashboardState};
use headroom_store::quota_history::{QuotaStores, open_quota_history};
use headroom_store::{ObservationKind, PgStore, QuotaReading, RateLimitObservation, SqliteStore};
use sqlx::Connection as _;

const HOST: &str = "api.github.com";
/// The columns a chart draws: no history slot more than one per column.
const DRAWN_COLUMNS: usize = 300;
/// What the page may weigh with a day of per-second readings and thousands of events.
const PAGE_BOUND: usize = 60_000;
/// What the heavy bucket's part of it (its three charts) may weigh.
const BUCKET_BOUND: usize = 30_000;

fn now() -> Timestamp {
    // 2027-01-15T08:00:00Z.
    Timestamp::from_second(1_800_000_000).expect("valid")
}

fn ago(secs: i64) -> Timestamp {
    now() - SignedDuration::from_secs(secs)
}

/// A database seeded through its writer, and the dashboard over the server's own pool.
struct Fixture {
    writer: QuotaStores,
    app: axum::Router,
    target: String,
    _sqlite: Option<headroom_testkit::TempSqlite>,
    _postgres: Option<PgDatabase>,
}

fn app<S>(server: Arc<S>) -> axum::Router
where
    S: headroom_store::Store
        + headroom_store::feed_report::FeedReport
        + headroom_store::feed_state::FeedState
        + headroom_store::QuotaHistory
        + 'static,
{
    let clock = Arc::new(ManualClock::new(now()));
    headroom_server::dashboard_router(DashboardState {
        app: AppState {
            report: server.clone(),
            feed: server.clone(),
            clock: clock.clone(),
            settings: Arc::new(settings()),
            status: Default::default(),
        },
        store: server.clone(),
        history: server,
        clock,
        settings: DashboardSettings::default(),
        pacer: headroom_core::clock::TokioClock::system(),
        snapshots: Default::default(),
    })
}

async fn sqlite() -> Fixture {
    let dir = headroom_testkit::TempSqlite::new();
    let target = dir.path();
    let writer = open_quota_history(&target).await.expect("open");
    let server = Arc::new(SqliteStore::open(&target).await.expect("open"));
    Fixture {
        writer,
        app: app(server),
        target,
        _sqlite: Some(dir),
        _postgres: None,
    }
}

async fn postgres(test: &str) -> Option<Fixture> {
    let admin = admin_url(test)?;
    let db = PgDatabase::create(&admin).await;
    let target = db.url();
    let writer = open_quota_history(&target).await.expect("open");
    let server = Arc::new(PgStore::connect(&target).await.expect("connect"));
    Some(Fixture {
        writer,
        app: app(server),
        target,
        _sqlite: None,
        _postgres: Some(db),
    })
}

/// Runs each check on SQLite and on PostgreSQL.
macro_rules! on_both_backends {
    ($($check:ident),* $(,)?) => {
        $(
            mod $check {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    let fixture = super::sqlite().await;
                    super::$check(&fixture).await;
                    fixture.writer.store.close().await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    let Some(fixture) =
                        super::postgres(concat!(stringify!($check), "::postgres")).await
                    else {
                        return;
                    };
                    super::$check(&fixture).await;
                    fixture.writer.store.close().await;
                }
            }
        )*
    };
}

fn reading(remaining: u64, at: Timestamp) -> QuotaReading {
    QuotaReading {
        provider: "github".into(),
        host: HOST.into(),
        subject: "user:alice".into(),
        bucket: "core".into(),
        limit: Some(5000),
        remaining: Some(remaining),
        used: Some(5000 - remaining),
        reset_at: Some(now() + SignedDuration::from_secs(720)),
        in_flight: 1,
        waiting: 0,
        blocked_until: None,
        last_reason: None,
        process_id: "worker-1".into(),
        observed_at: at,
    }
}

/// An event as the registry and the sync runner record them: a governor's deferral of an
/// exhausted bucket carries the primary reason, though nothing was sent.
fn event(kind: ObservationKind, wait_reason: Option<&str>, at: Timestamp) -> RateLimitObservation {
    let (bucket, reason) = match (kind, wait_reason) {
        (ObservationKind::Hibernated, _) => (Some("core".into()), None),
        (_, Some("exhausted")) => (Some("core".into()), Some(LimitReason::Primary)),
        (ObservationKind::Refused, _) => (Some("core".into()), Some(LimitReason::Secondary)),
        _ => (Some("core".into()), None),
    };
    RateLimitObservation {
        provider: Provider::GitHub,
        key: QuotaKey::user(HOST, "alice"),
        credential_fingerprint: None,
        sync_run_id: None,
        bucket,
        route_family: Some("org_members".into()),
        route_family_attribution: None,
        dimension: Some(Dimension::RestCore),
        reason,
        retry_after: None,
        reset_at: Some(now() + SignedDuration::from_secs(720)),
        limit: Some(5000),
        remaining: Some(10),
        used: Some(4990),
        request_id: None,
        observed_at: at,
        event_kind: Some(kind),
        wait_reason: wait_reason.map(str::to_owned),
    }
}

/// A few readings of core over the last hour, then `n` events of each kind given, spread over
/// the last 50 minutes.
async fn seed_events(f: &Fixture, kinds: &[(ObservationKind, Option<&str>, i64)]) {
    for (remaining, secs) in [(400, 3000), (120, 1800), (10, 60)] {
        f.writer
            .recorder
            .record_quota_reading(&reading(remaining, ago(secs)))
            .await
            .expect("reading");
    }
    for (kind, wait_reason, n) in kinds {
        for k in 0..*n {
            let at = ago(60 + k * 2940 / n);
            f.writer
                .store
                .record_rate_limit_observation(&event(*kind, *wait_reason, at))
                .await
                .expect("observation");
        }
    }
}

/// The core bucket's part of the page: from its `data-bucket` to the next bucket's, or to the
/// end of its identity's panel when it is the last bucket.
fn core_part(page: &str) -> &str {
    let start = page
        .find("data-bucket=\"api.github.com|user:alice|core\"")
        .expect("the core bucket is on the page");
    let rest = &page[start..];
    let end = [rest[1..].find("data-bucket="), rest.find("</article>")]
        .into_iter()
        .flatten()
        .map(|e| e + 1)
        .min()
        .unwrap_or(rest.len());
    &rest[..end]
}

/// 674 local deferrals, 642 concurrency waits and 19 hibernations, and the provider refused
/// nothing: no chart draws a refusal, and each legend says 0 refusals and names the waits.
async fn local_waits_are_never_drawn_as_provider_refusals(f: &Fixture) {
    seed_events(
        f,
        &[
            (ObservationKind::Deferred, Some("exhausted"), 674),
            (ObservationKind::Deferred, Some("in_flight_ceiling"), 642),
            (ObservationKind::Hibernated, None, 19),
        ],
    )
    .await;
    let page = get(&f.app, "/").await;
    assert_eq!(page.status, StatusCode::OK);
    let core = core_part(&page.text);
    assert_eq!(core.matches("<svg class=\"chart\"").count(), 3, "{core}");
    assert_eq!(
        core.matches("class=\"limit-hit\"").count(),
        0,
        "a local wait is drawn as the provider's refusal: {core}"
    );
    for legend in [
        "refusal\">0 provider refusals (403/429)</span>",
        "deferral\">674 local deferrals</span>",
        "concurrency\">642 concurrency waits</span>",
        "hibernation\">19 hibernations</span>",
    ] {
        assert_eq!(
            core.matches(legend).count(),
            3,
            "each chart's legend says {legend}: {core}"
        );
    }
    for class in [
        "own-wait deferral",
        "own-wait concurrency",
        "own-wait hibernation",
    ] {
        assert_eq!(
            core.matches(&format!("<path class=\"{class}\"")).count(),
            3,
            "each chart marks its {class}s: {core}"
        );
    }
    let history = get(
        &f.app,
        "/api/quota/api.github.com/user%3Aalice/history?bucket=core",
    )
    .await;
    assert_eq!(history.status, StatusCode::OK, "{}", history.text);
    assert_eq!(
        history.json["totals"]["provider_refusals"], 0,
        "{}",
        history.text
    );
    assert_eq!(history.json["totals"]["local_deferrals"], 674);
    assert_eq!(history.json["totals"]["concurrency_waits"], 642);
    assert_eq!(history.json["totals"]["hibernations"], 19);

    // A refusal the provider sent is drawn as one, in every window it falls in.
    f.writer
        .store
        .record_rate_limit_observation(&event(ObservationKind::Refused, None, ago(30)))
        .await
        .expect("observation");
    let page = get(&f.app, "/").await;
    let core = core_part(&page.text);
    assert_eq!(core.matches("class=\"limit-hit\"").count(), 3, "{core}");
    assert_eq!(
        core.matches("refusal\">1 provider refusal (403/429)</span>")
            .count(),
        3,
        "{core}"
    );
}

/// Every chart carries a time axis (instants the script shows in local time), a value axis
/// (the limit, half of it and 0), a legend, and a summary a screen reader can say.
async fn a_chart_has_time_and_value_axes_and_a_legend(f: &Fixture) {
    seed_events(f, &[(ObservationKind::Deferred, Some("exhausted"), 3)]).await;
    let page = get(&f.app, "/").await;
    assert_eq!(page.status, StatusCode::OK);
    let core = core_part(&page.text);
    let charts: Vec<&str> = core
        .split("<figure")
        .skip(1)
        .map(|c| c.split("</figure>").next().expect("a figure"))
        .collect();
    assert_eq!(charts.len(), 3, "{core}");
    for (chart, tick) in charts.iter().zip([
        // The last hour's quarters, 6 h's even hours, 24 h's quarter days (UTC).
        "datetime=\"2027-01-15T07:15:00Z\"",
        "datetime=\"2027-01-15T04:00:00Z\"",
        "datetime=\"2027-01-14T12:00:00Z\"",
    ]) {
        assert!(chart.contains(tick), "a time axis with {tick}: {chart}");
        assert!(
            chart.matches("<text class=\"clock tick\"").count() >= 3,
            "several time ticks: {chart}"
        );
        for value in [">5,000</text>", ">2,500</text>", ">0</text>"] {
            assert!(chart.contains(value), "a value axis with {value}: {chart}");
        }
        assert!(chart.contains("class=\"legend\""), "a legend: {chart}");
        assert!(
            chart.contains("3 local deferrals"),
            "the legend counts: {chart}"
        );
        assert!(
            chart.contains("aria-label=\"REST remaining, ")
                && chart.contains(
                    "now 10 of 5,000; 0 provider refusals (403/429), 3 local deferrals, \
                     0 concurrency waits, 0 hibernations\""
                ),
            "a summary for a screen reader: {chart}"
        );
    }
}

/// Runs one statement of the bulk seed on either backend.
async fn execute(target: &str, sql: &str, now_ms: i64) {
    if target.starts_with("postgres") {
        let mut conn = sqlx::PgConnection::connect(target).await.expect("connect");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(now_ms)
            .execute(&mut conn)
            .await
            .expect("seed");
        conn.close().await.expect("close");
    } else {
        let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{target}"))
            .await
            .expect("connect");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(now_ms)
            .execute(&mut conn)
            .await
            .expect("seed");
        conn.close().await.expect("close");
    }
}

/// A day of core readings, one a second (spent through each hour, a wait in its first
/// minute), with their per-minute summaries, and 3,000 events: half local deferrals, nearly
/// half concurrency waits, 30 hibernations and 30 refusals. Written straight into the tables
/// the recorder writes (86,400 transactions would be most of the test); the newest reading
/// through the recorder.
async fn seed_a_heavy_day(f: &Fixture) {
    let now_ms = now().as_millisecond();
    execute(
        &f.target,
        "WITH RECURSIVE s(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM s WHERE k < 86399) \
         INSERT INTO quota_readings (provider, host, subject, bucket, rate_limit, remaining, \
         used, reset_at_ms, in_flight, waiting, blocked_until_ms, last_reason, process_id, \
         observed_at_ms) SELECT 'github', 'api.github.com', 'user:alice', 'core', 5000, \
         (k % 3600) * 5000 / 3600, 5000 - (k % 3600) * 5000 / 3600, \
         CAST($1 AS BIGINT) - k * 1000 + 3600000, 1, 0, NULL, \
         CASE WHEN k % 3600 < 60 THEN 'REST exhausted' ELSE NULL END, 'worker-1', \
         CAST($1 AS BIGINT) - k * 1000 FROM s",
        now_ms,
    )
    .await;
    execute(
        &f.target,
        "INSERT INTO quota_minutes (host, subject, bucket, minute_ms, remaining_min, \
         remaining_max, limit_max, readings, waits) SELECT host, subject, bucket, \
         observed_at_ms - observed_at_ms % 60000, MIN(remaining), MAX(remaining), \
         MAX(rate_limit), COUNT(*), SUM(CASE WHEN last_reason IS NULL THEN 0 ELSE 1 END) \
         FROM quota_readings WHERE observed_at_ms < CAST($1 AS BIGINT) \
         GROUP BY host, subject, bucket, observed_at_ms - observed_at_ms % 60000",
        now_ms,
    )
    .await;
    execute(
        &f.target,
        "WITH RECURSIVE s(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM s WHERE k < 2999) \
         INSERT INTO rate_limit_observations (provider, host, subject, bucket, dimension, \
         reason, retry_after_secs, observed_at_ms, event_kind, wait_reason) \
         SELECT 'github', 'api.github.com', 'user:alice', 'core', 'rest_core', \
         CASE WHEN k % 100 < 50 THEN 'primary' WHEN k % 100 = 99 THEN 'secondary' ELSE NULL END, \
         60, CAST($1 AS BIGINT) - k * 28800, \
         CASE WHEN k % 100 = 98 THEN 'hibernated' WHEN k % 100 = 99 THEN 'refused' \
         ELSE 'deferred' END, \
         CASE WHEN k % 100 < 50 THEN 'exhausted' WHEN k % 100 < 98 THEN 'in_flight_ceiling' \
         ELSE NULL END FROM s",
        now_ms,
    )
    .await;
    f.writer
        .recorder
        .record_quota_reading(&reading(4212, now()))
        .await
        .expect("reading");
}

/// With a day of per-second readings and 3,000 events the page stays under its bound (it
/// was over 200 KB when every event was an element and every slot a coordinate).
async fn the_page_stays_small_with_a_day_of_readings_and_thousands_of_events(f: &Fixture) {
    seed_a_heavy_day(f).await;
    let page = get(&f.app, "/").await;
    assert_eq!(page.status, StatusCode::OK);
    let core = core_part(&page.text);
    assert_eq!(core.matches("<svg class=\"chart\"").count(), 3);
    println!(
        "the page: {} bytes, of which the core bucket {} bytes",
        page.text.len(),
        core.len()
    );
    assert!(
        page.text.len() < PAGE_BOUND,
        "the page weighs {} bytes (bound {PAGE_BOUND})",
        page.text.len()
    );
    assert!(
        core.len() < BUCKET_BOUND,
        "the core bucket's charts weigh {} bytes (bound {BUCKET_BOUND})",
        core.len()
    );
    // The legends still count every event the charts aggregate.
    assert!(core.contains("30 provider refusals (403/429)"), "{core}");
    assert!(core.contains("1,500 local deferrals"), "{core}");
}

/// The history endpoint sends at most one slot per drawn column for any range, and its marks
/// are counts per slot, not one row per event.
async fn the_history_endpoint_sends_at_most_one_point_per_drawn_column(f: &Fixture) {
    seed_a_heavy_day(f).await;
    for secs in [600, 3599, 3600, 6 * 3600, 6 * 3600 + 59, 86_399, 86_400] {
        let since = ago(secs).as_millisecond();
        let reply = get(
            &f.app,
            &format!("/api/quota/api.github.com/user%3Aalice/history?bucket=core&since={since}"),
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
        let points = reply.json["points"].as_array().expect("points").len();
        assert!(
            points <= DRAWN_COLUMNS,
            "{points} points over {secs} s, more than the chart's {DRAWN_COLUMNS} columns"
        );
        assert!(points >= DRAWN_COLUMNS / 3, "{points} points over {secs} s");
        let marks = reply.json["marks"].as_array().expect("marks").len();
        assert!(
            (1..=DRAWN_COLUMNS).contains(&marks),
            "{marks} mark slots over {secs} s"
        );
    }
}

on_both_backends!(
    local_waits_are_never_drawn_as_provider_refusals,
    a_chart_has_time_and_value_axes_and_a_legend,
    the_page_stays_small_with_a_day_of_readings_and_thousands_of_events,
    the_history_endpoint_sends_at_most_one_point_per_drawn_column,
);
