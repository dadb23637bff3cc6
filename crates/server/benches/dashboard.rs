//! What the dashboard's reads cost at the scale the dashboard issue sets: an SQLite store of
//! 1,000,000 push events, 1,000 sync runs with their checkpoints, and a week of quota history
//! (readings of three buckets and rate-limit observations). Every endpoint is called through
//! the dashboard router itself — parsing, queries, JSON or HTML — as `headroom serve`
//! answers it, so the figure is what a client waits for minus the socket.
//!
//! `cargo bench -p headroom-server --bench dashboard` (the store is built first, a few
//! minutes); `HEADROOM_BENCH_EVENTS=100000` builds a smaller one for a quick look, and
//! `HEADROOM_BENCH_DB=FILE` keeps the store in FILE (built when missing, reused when there).
//! Target: every read under 50 ms. `/status` and the page serve a status document at most five
//! seconds old (the server's cache); `status_build` is what building one costs, paid once per
//! five seconds in the background.

#![allow(clippy::expect_used)]

#[path = "../../store/tests/common/push.rs"]
mod push;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use criterion::{Criterion, criterion_group, criterion_main};
use headroom_core::QuotaKey;
use headroom_core::clock::{Clock as _, ManualClock, SignedDuration, SystemClock, Timestamp};
use headroom_github::feed::enrich::EnrichSettings;
use headroom_github::feed::poll::PollSettings;
use headroom_server::{
    AppState, DashboardSettings, DashboardState, Reporting, SchedulerSettings, StatusSettings,
};
use headroom_store::{
    CheckpointStatus, CheckpointUpdate, CredentialSeen, EventOrigin, NewSyncRun, PushEventWrite,
    SqliteStore, Store, StoreRead as _, SubjectKind, SyncRunStatus,
    quota_history::QuotaHistory as _,
};
use http_body_util::BodyExt as _;
use tower::ServiceExt as _;

const ACTORS: u64 = 20_000;
const REPOSITORIES: u64 = 5_000;
const RUNS: i64 = 1_000;
const HOST: &str = "api.github.com";
const WEEK: i64 = 7 * 24 * 3600;
/// Seconds between two readings of each bucket: a busy week.
const READING_EVERY: [(&str, i64); 3] = [("core", 5), ("graphql", 10), ("search", 60)];
const STAGES: [&str; 4] = ["org", "repositories", "issue_comments", "pull_requests"];

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

/// The bench's "now": the end of the week of history.
fn now() -> Timestamp {
    t(WEEK)
}

fn events() -> u64 {
    std::env::var("HEADROOM_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

#[allow(clippy::cast_possible_wrap)]
fn event(n: u64, total: u64) -> PushEventWrite {
    // Spread over the week: occurred_at ties exercise the keyset's tie-break.
    let at = (n as i64) * WEEK / (total as i64);
    push::push_event(
        50_000_000_000 + n,
        (n % ACTORS) as i64 + 1,
        (n % REPOSITORIES) as i64 + 1,
        t(at),
        t(at + 5),
        EventOrigin::Feed,
    )
}

async fn seed_events(store: &SqliteStore) {
    let total = events();
    let mut n = 0;
    while n < total {
        let end = (n + 2_000).min(total);
        let chunk: Vec<PushEventWrite> = (n..end).map(|i| event(i, total)).collect();
        let mut tx = store.begin().await.expect("begin");
        tx.write_push_events(&chunk).await.expect("write");
        tx.commit().await.expect("commit");
        n = end;
    }
}

/// A week of readings, written in one transaction straight into the tables the recorder
/// writes (the recorder's own per-reading transactions would take most of the set-up).
async fn seed_history(path: &str) {
    use sqlx::Connection as _;
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{path}"))
        .await
        .expect("connect");
    let mut tx = conn.begin().await.expect("begin");
    for (bucket, every) in READING_EVERY {
        let mut at = 0;
        while at <= WEEK {
            let remaining = 5_000 - (at % 3600) * 5_000 / 3600;
            let reason = (remaining == 0).then_some("exhausted");
            sqlx::query(
                "INSERT INTO quota_readings (provider, host, subject, bucket, rate_limit, \
                 remaining, used, reset_at_ms, in_flight, waiting, blocked_until_ms, \
                 last_reason, process_id, observed_at_ms) VALUES ('github', $1, 'user:alice', \
                 $2, 5000, $3, $4, $5, 3, 0, NULL, $6, 'worker-1', $7)",
            )
            .bind(HOST)
            .bind(bucket)
            .bind(remaining)
            .bind(5_000 - remaining)
            .bind((t(at - at % 3600 + 3600)).as_millisecond())
            .bind(reason)
            .bind(t(at).as_millisecond())
            .execute(&mut *tx)
            .await
            .expect("reading");
            at += every;
        }
    }
    sqlx::query(
        "INSERT INTO quota_latest (host, subject, bucket, process_id, reading_id, observed_at_ms) \
         SELECT host, subject, bucket, process_id, MAX(id), MAX(observed_at_ms) FROM quota_readings \
         GROUP BY host, subject, bucket, process_id",
    )
    .execute(&mut *tx)
    .await
    .expect("latest");
    sqlx::query(
        "INSERT INTO quota_minutes (host, subject, bucket, minute_ms, remaining_min, \
         remaining_max, limit_max, readings, waits) SELECT host, subject, bucket, \
         observed_at_ms - observed_at_ms % 60000, MIN(remaining), MAX(remaining), \
         MAX(rate_limit), COUNT(*), SUM(CASE WHEN last_reason IS NULL THEN 0 ELSE 1 END) \
         FROM quota_readings GROUP BY host, subject, bucket, observed_at_ms - observed_at_ms % 60000",
    )
    .execute(&mut *tx)
    .await
    .expect("minutes");
    // One wait every ten minutes, a secondary 403 every six hours.
    let mut at = 0;
    while at <= WEEK {
        let (kind, reason) = if at % (6 * 3600) == 0 {
            ("refused", "secondary")
        } else {
            ("deferred", "primary")
        };
        sqlx::query(
            "INSERT INTO rate_limit_observations (provider, host, subject, bucket, dimension, \
             reason, retry_after_secs, observed_at_ms, event_kind) VALUES ('github', $1, \
             'user:alice', 'core', 'rest_core', $2, 60, $3, $4)",
        )
        .bind(HOST)
        .bind(reason)
        .bind(t(at).as_millisecond())
        .bind(kind)
        .execute(&mut *tx)
        .await
        .expect("observation");
        at += 600;
    }
    tx.commit().await.expect("commit");
    conn.close().await.expect("close");
}

async fn seed_runs(store: &SqliteStore) -> i64 {
    for fingerprint in ["0123abcd", "4567ef01"] {
        store
            .upsert_credential(&CredentialSeen {
                host: HOST.into(),
                fingerprint: fingerprint.into(),
                subject_kind: SubjectKind::User,
                owner_login: "alice".into(),
                seen_at: t(0),
            })
            .await
            .expect("credential");
    }
    let mut last = 0;
    for n in 0..RUNS {
        let created = t(n * WEEK / RUNS);
        let mut run = store
            .create_sync_run(&NewSyncRun {
                credential: None,
                kind: "org".into(),
                target: format!("org-{n}"),
                key: QuotaKey::user(HOST, "alice"),
                requested_stages: None,
                created_at: created,
            })
            .await
            .expect("run");
        run.status = if n + 3 >= RUNS {
            SyncRunStatus::Hibernating
        } else {
            SyncRunStatus::Done
        };
        run.not_before = Some(now() + SignedDuration::from_secs(900));
        store.save_sync_run(&run).await.expect("save");
        for stage in STAGES {
            for scope in 0..3 {
                store
                    .set_checkpoint(&CheckpointUpdate {
                        sync_run_id: run.id,
                        stage: stage.into(),
                        scope: format!("org-{n}/repo-{scope}"),
                        status: CheckpointStatus::Done,
                        page_cursor: None,
                        pages_added: 4,
                        rows_added: 400,
                        detail: None,
                        at: created,
                    })
                    .await
                    .expect("checkpoint");
            }
        }
        last = run.id;
    }
    last
}

fn dashboard(store: &SqliteStore) -> DashboardState {
    let clock = Arc::new(ManualClock::new(now()));
    let server = Arc::new(store.clone());
    let settings = StatusSettings {
        host: HOST.into(),
        subject: Some("ip:outbound".into()),
        scheduler: SchedulerSettings::of(
            &PollSettings::default(),
            &EnrichSettings::default(),
            None,
            Reporting::default(),
        )
        .expect("defaults"),
    };
    DashboardState {
        app: AppState {
            report: server.clone(),
            feed: server.clone(),
            clock: clock.clone(),
            settings: Arc::new(settings),
            status: Default::default(),
        },
        store: server.clone(),
        history: server,
        clock,
        // Long enough that the seeded writer counts as live at the bench's "now".
        settings: DashboardSettings {
            live_window: SignedDuration::from_secs(60),
            ..DashboardSettings::default()
        },
        pacer: headroom_core::clock::TokioClock::system(),
        snapshots: Default::default(),
    }
}

async fn call(app: &axum::Router, uri: &str) -> usize {
    let response = app
        .clone()
        .oneshot(Request::get(uri).body(Body::empty()).expect("request"))
        .await
        .expect("infallible");
    assert_eq!(response.status(), StatusCode::OK, "{uri}");
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    body.len()
}

fn dashboard_reads(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let kept = std::env::var("HEADROOM_BENCH_DB").ok();
    let path = kept.clone().unwrap_or_else(|| {
        let path = dir.path().join("bench.db");
        path.to_str().expect("utf-8").to_owned()
    });
    let reuse = kept.is_some() && std::path::Path::new(&path).exists();
    let store = runtime.block_on(SqliteStore::open(&path)).expect("open");
    let started = SystemClock.now();
    let last_run = runtime.block_on(async {
        if reuse {
            let newest = store.sync_runs_page(None, 1).await.expect("runs");
            return newest.first().map_or(1, |r| r.id);
        }
        seed_events(&store).await;
        seed_history(&path).await;
        seed_runs(&store).await
    });
    eprintln!(
        "seeded {} events, {RUNS} runs and a week of history in {:#}",
        events(),
        SystemClock.now().duration_since(started)
    );
    let app = headroom_server::dashboard_router(dashboard(&store));
    let uris = [
        ("quota", "/api/quota".to_owned()),
        (
            "history_1h",
            format!(
                "/api/quota/{HOST}/user%3Aalice/history?bucket=core&since={}",
                now() - SignedDuration::from_secs(3600)
            ),
        ),
        (
            "history_24h",
            format!(
                "/api/quota/{HOST}/user%3Aalice/history?bucket=core&since={}",
                now() - SignedDuration::from_secs(24 * 3600)
            ),
        ),
        (
            "history_week",
            format!(
                "/api/quota/{HOST}/user%3Aalice/history?bucket=core&since={}",
                t(0)
            ),
        ),
        ("sync_runs", "/api/sync/runs".to_owned()),
        ("sync_run", format!("/api/sync/runs/{last_run}")),
        ("metrics", "/metrics".to_owned()),
        ("status", "/status".to_owned()),
        ("push_events", "/api/push_events".to_owned()),
        ("page", "/".to_owned()),
    ];
    let mut group = c.benchmark_group("dashboard_sqlite");
    group.sample_size(10);
    for (name, uri) in &uris {
        let bytes = runtime.block_on(call(&app, uri));
        eprintln!("{name}: {bytes} bytes");
        group.bench_function(*name, |b| b.iter(|| runtime.block_on(call(&app, uri))));
    }
    // What the cache spares each read: building the status document itself.
    let state = dashboard(&store);
    group.bench_function("status_build", |b| {
        b.iter(|| {
            runtime
                .block_on(headroom_server::status::build(
                    state.app.report.as_ref(),
                    state.app.feed.as_ref(),
                    &state.app.settings,
                    now(),
                ))
                .expect("status")
        });
    });
    group.finish();
    runtime.block_on(store.close());
}

criterion_group!(benches, dashboard_reads);
criterion_main!(benches);
