//! `/metrics` tells the truth to a machine (issue 36, item 12), on both backends: the
//! rate-limit counter does not go down when retention prunes old rows; every sync-run status
//! is a series, at 0 when no run has it; series are labelled with the identity (host and
//! subject), never a credential's fingerprint, even for readings taken before the owner was
//! known; each bucket publishes what was used; and a real scrape passes Prometheus's own
//! `promtool check metrics` (skipped without promtool, a failure under `CI`).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::sync::Arc;

use axum::http::StatusCode;
use common::{PgDatabase, admin_url, get, settings};
use headroom_core::clock::{ManualClock, SignedDuration, Timestamp};
use headroom_core::{Dimension, LimitReason, Provider, QuotaKey};
use headroom_server::{AppState, DashboardSettings, DashboardState};
use headroom_store::StoreRead as _;
use headroom_store::quota_history::{QuotaStores, open_quota_history};
use headroom_store::{
    CredentialSeen, NewSyncRun, ObservationKind, PgStore, QuotaReading, RateLimitObservation,
    SqliteStore, SubjectKind, SyncRunStatus, UsageRecord,
};

const HOST: &str = "api.github.com";
/// A credential's fingerprint (16 hex digits, as `headroom_http::credential::fingerprint`).
const FINGERPRINT: &str = "628b0f3a9c1d2e47";

fn now() -> Timestamp {
    Timestamp::from_second(1_800_000_000).expect("valid")
}

fn ago(secs: i64) -> Timestamp {
    now() - SignedDuration::from_secs(secs)
}

/// The dashboard's routes over the server's own pool.
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

fn alice() -> QuotaKey {
    QuotaKey::user(HOST, "alice")
}

/// The key a credential's first request (`GET /user`) is made under, before its owner is known.
fn provisional() -> QuotaKey {
    QuotaKey::user(HOST, &format!("credential:{FINGERPRINT}"))
}

fn observation(key: QuotaKey, kind: ObservationKind, at: Timestamp) -> RateLimitObservation {
    RateLimitObservation {
        provider: Provider::GitHub,
        key,
        credential_fingerprint: Some(FINGERPRINT.into()),
        sync_run_id: None,
        bucket: Some("core".into()),
        route_family: Some("org_members".into()),
        route_family_attribution: None,
        dimension: Some(Dimension::RestCore),
        reason: (kind == ObservationKind::Refused).then_some(LimitReason::Primary),
        retry_after: None,
        reset_at: Some(now() + SignedDuration::from_secs(600)),
        limit: Some(5000),
        remaining: Some(0),
        used: Some(5000),
        event_kind: Some(kind),
        wait_reason: (kind == ObservationKind::Deferred).then(|| "exhausted".to_owned()),
        request_id: None,
        observed_at: at,
    }
}

fn reading(subject: &str, remaining: u64, used: Option<u64>, at: Timestamp) -> QuotaReading {
    QuotaReading {
        provider: "github".into(),
        host: HOST.into(),
        subject: subject.into(),
        bucket: "core".into(),
        limit: Some(5000),
        remaining: Some(remaining),
        used,
        reset_at: Some(now() + SignedDuration::from_secs(600)),
        in_flight: 1,
        waiting: 0,
        blocked_until: None,
        last_reason: None,
        process_id: "p".into(),
        observed_at: at,
    }
}

/// Alice's credential, readings (one taken under the provisional key before her login was
/// known), three deferrals and a refusal (two of them old), some requests, and one sync run
/// of each status but `failed`.
async fn seed(writer: &QuotaStores) {
    writer
        .store
        .upsert_credential(&CredentialSeen {
            host: HOST.into(),
            fingerprint: FINGERPRINT.into(),
            subject_kind: SubjectKind::User,
            owner_login: "alice".into(),
            seen_at: ago(100),
        })
        .await
        .expect("credential");
    let provisional_label = headroom_store::subject_label(&provisional().subject);
    for r in [
        reading(&provisional_label, 4999, Some(1), ago(60)),
        reading("user:alice", 4200, Some(790), ago(5)),
    ] {
        writer
            .recorder
            .record_quota_reading(&r)
            .await
            .expect("reading");
    }
    for (key, kind, at) in [
        (alice(), ObservationKind::Deferred, ago(7200)),
        (provisional(), ObservationKind::Deferred, ago(7100)),
        (alice(), ObservationKind::Deferred, ago(30)),
        (alice(), ObservationKind::Refused, ago(20)),
    ] {
        writer
            .store
            .record_rate_limit_observation(&observation(key, kind, at))
            .await
            .expect("observation");
    }
    writer
        .store
        .record_usage(&UsageRecord {
            key: alice(),
            route_family: "org_members".into(),
            dimension: Dimension::RestCore,
            requests: 3,
            units: 3,
            at: ago(30),
            window: SignedDuration::from_secs(3600),
        })
        .await
        .expect("usage");
    let statuses = [
        SyncRunStatus::Pending,
        SyncRunStatus::Running,
        SyncRunStatus::Hibernating,
        SyncRunStatus::Done,
    ];
    for (n, status) in statuses.into_iter().enumerate() {
        let mut run = writer
            .store
            .create_sync_run(&NewSyncRun {
                credential: None,
                kind: "org".into(),
                target: format!("org{n}"),
                key: alice(),
                requested_stages: None,
                created_at: ago(600),
            })
            .await
            .expect("run");
        run.status = status;
        writer.store.save_sync_run(&run).await.expect("save");
    }
}

async fn scrape(app: &axum::Router) -> String {
    let reply = get(app, "/metrics").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    reply.text
}

/// The value of the one sample whose line starts with `series` (name and labels).
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.parse().expect("a number"))
}

/// Every label value of every sample.
fn label_values(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((_, rest)) = line.split_once('{') else {
            continue;
        };
        let Some((labels, _)) = rest.rsplit_once('}') else {
            continue;
        };
        for pair in labels.split("\",") {
            if let Some((_, v)) = pair.split_once("=\"") {
                out.push(v.trim_end_matches('"').to_owned());
            }
        }
    }
    out
}

const ALICE_DEFERRED: &str = "headroom_rate_limit_events_total{host=\"api.github.com\",subject=\"user:alice\",kind=\"deferred\",reason=\"\",wait_reason=\"exhausted\"}";

/// Retention deletes old observations; the counter of rate-limit events keeps counting them.
async fn the_rate_limit_events_counter_does_not_go_down_when_old_rows_are_pruned(
    writer: &QuotaStores,
    app: &axum::Router,
) {
    let before = scrape(app).await;
    // Alice's two deferrals and the one made under her credential before her login was known.
    assert_eq!(value(&before, ALICE_DEFERRED), Some(3.0), "{before}");
    let pruned = writer
        .store
        .prune_rate_limit_observations(ago(3600))
        .await
        .expect("prune");
    assert_eq!(pruned, 2, "the two old rows are deleted");
    let after = scrape(app).await;
    assert_eq!(value(&after, ALICE_DEFERRED), Some(3.0), "{after}");
    // Pruning again (nothing left to prune) and a new event: the count goes on from there.
    writer
        .store
        .prune_rate_limit_observations(ago(3600))
        .await
        .expect("prune");
    writer
        .store
        .record_rate_limit_observation(&observation(alice(), ObservationKind::Deferred, ago(1)))
        .await
        .expect("observation");
    let later = scrape(app).await;
    assert_eq!(value(&later, ALICE_DEFERRED), Some(4.0), "{later}");
    assert!(
        after.contains("# TYPE headroom_rate_limit_events_total counter"),
        "{after}"
    );
}

/// `failed` has no run, and still reads 0: a series that vanishes is not a zero.
async fn every_sync_run_status_is_a_series_at_zero_when_no_run_has_it(
    _: &QuotaStores,
    app: &axum::Router,
) {
    let text = scrape(app).await;
    for (status, n) in [
        ("pending", 1.0),
        ("running", 1.0),
        ("hibernating", 1.0),
        ("done", 1.0),
        ("failed", 0.0),
    ] {
        let series = format!("headroom_sync_runs{{status=\"{status}\"}}");
        assert_eq!(value(&text, &series), Some(n), "{series} in:\n{text}");
    }
}

/// Rate-limit events, requests and buckets carry host and subject; no label value is a
/// fingerprint, not even for what was recorded under the credential before its owner was known.
async fn series_carry_the_identity_and_never_a_fingerprint(_: &QuotaStores, app: &axum::Router) {
    let text = scrape(app).await;
    for series in [
        ALICE_DEFERRED,
        "headroom_rate_limit_events_total{host=\"api.github.com\",subject=\"user:alice\",kind=\"refused\",reason=\"primary\",wait_reason=\"\"}",
        "headroom_requests_total{host=\"api.github.com\",subject=\"user:alice\",route_family=\"org_members\",dimension=\"rest_core\"}",
        "headroom_quota_remaining{host=\"api.github.com\",subject=\"user:alice\",bucket=\"core\"}",
    ] {
        assert!(value(&text, series).is_some(), "{series} in:\n{text}");
    }
    let values = label_values(&text);
    assert!(values.iter().any(|v| v == "user:alice"), "{values:?}");
    let hex = |v: &str| v.len() >= 8 && v.chars().all(|c| c.is_ascii_hexdigit());
    for v in &values {
        assert!(
            !v.contains(FINGERPRINT) && !v.contains("credential") && !hex(v),
            "a fingerprint-shaped label value {v:?} in:\n{text}"
        );
    }
}

/// Each bucket says what was used (the provider's own count), beside remaining and limit.
async fn each_bucket_publishes_what_was_used(_: &QuotaStores, app: &axum::Router) {
    let text = scrape(app).await;
    let series =
        "headroom_quota_used{host=\"api.github.com\",subject=\"user:alice\",bucket=\"core\"}";
    assert_eq!(value(&text, series), Some(790.0), "{text}");
    assert!(text.contains("# TYPE headroom_quota_used gauge"), "{text}");
}

/// Prometheus's own linter reads a real scrape and finds nothing to say.
async fn a_real_scrape_passes_promtool_check_metrics(_: &QuotaStores, app: &axum::Router) {
    const TEST: &str = "a_real_scrape_passes_promtool_check_metrics";
    let promtool = std::env::var_os("HEADROOM_PROMTOOL").unwrap_or_else(|| "promtool".into());
    let text = scrape(app).await;
    let child = Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            headroom_testkit::skip(
                TEST,
                "promtool not found (Debian's `prometheus` package; scripts/test installs it under CI)",
            );
            return;
        }
        Err(e) => panic!("cannot run promtool: {e}"),
    };
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write the scrape");
    let out = child.wait_with_output().expect("promtool ran");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool check metrics ({}): {said}\non:\n{text}",
        out.status
    );
}

/// Each check on a fresh seeded database of each backend, named for the defect it catches.
macro_rules! on_both_backends {
    ($($check:ident),* $(,)?) => {
        $(
            mod $check {
                use super::*;

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    let dir = headroom_testkit::TempSqlite::new();
                    let target = dir.path();
                    let writer = open_quota_history(&target).await.expect("open");
                    seed(&writer).await;
                    let server = Arc::new(SqliteStore::open(&target).await.expect("open"));
                    super::$check(&writer, &app(server)).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    let Some(admin) = admin_url(concat!(stringify!($check), "::postgres")) else {
                        return;
                    };
                    let db = PgDatabase::create(&admin).await;
                    let writer = open_quota_history(&db.url()).await.expect("open");
                    seed(&writer).await;
                    let server = Arc::new(PgStore::connect(&db.url()).await.expect("connect"));
                    super::$check(&writer, &app(server.clone())).await;
                    server.close().await;
                    writer.store.close().await;
                }
            }
        )*
    };
}

on_both_backends!(
    the_rate_limit_events_counter_does_not_go_down_when_old_rows_are_pruned,
    every_sync_run_status_is_a_series_at_zero_when_no_run_has_it,
    series_carry_the_identity_and_never_a_fingerprint,
    each_bucket_publishes_what_was_used,
    a_real_scrape_passes_promtool_check_metrics,
);
