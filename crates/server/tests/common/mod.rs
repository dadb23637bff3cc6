//! Fixtures for the server's tests: a fresh SQLite file or PostgreSQL database per test, a
//! seeded feed, and a one-shot request helper.
//!
//! PostgreSQL comes from `HEADROOM_TEST_DATABASE_URL` (an admin URL); without it the
//! PostgreSQL tests say they were skipped — except under `CI`, where they fail.

#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use headroom_core::Subject;
use headroom_core::clock::{ManualClock, SignedDuration, Timestamp};
use headroom_github::feed::enrich::EnrichSettings;
use headroom_github::feed::poll::{FEED_PATH, PollSettings, SOURCE_TYPE};
use headroom_server::{AppState, Reporting, SchedulerSettings, StatusSettings};
use headroom_store::feed_report::FeedReport;
use headroom_store::feed_state::{
    BatchEnvelope, BatchStatus, CoreLedger, Enriched, EntityKind, FeedState, Lane, RequestKind,
    WindowStatus,
};
use headroom_store::{EventOrigin, PgStore, PushEventWrite, SqliteStore, Store};
use http_body_util::BodyExt as _;
use serde_json::Value;
use sqlx::postgres::PgPoolOptions;
use tower::ServiceExt as _;

pub mod document;
#[path = "../../../store/tests/common/push.rs"]
mod push;
#[allow(unused_imports)] // each test binary uses its own part of it
pub use headroom_testkit::{PgDatabase, URL_VAR, admin_url};
pub const HOST: &str = "api.github.com";

/// The instant the seeded feed starts.
pub fn base() -> Timestamp {
    Timestamp::from_second(1_800_000_000).expect("valid")
}

pub fn at(secs: i64) -> Timestamp {
    base() + SignedDuration::from_secs(secs)
}

pub fn subject() -> String {
    headroom_store::subject_label(&Subject::Ip("outbound".into()))
}

/// One database: a writer (to seed) and what the server reads through.
pub struct Db {
    /// Seeds rows.
    pub writer: Arc<dyn Store>,
    /// The writer's feed state.
    pub writer_feed: Arc<dyn FeedState>,
    /// The server's report queries.
    pub report: Arc<dyn FeedReport>,
    /// The server's feed state.
    pub feed: Arc<dyn FeedState>,
    /// Closes the server's pool.
    pub server_store: Arc<dyn Store>,
    /// Where the database is.
    pub target: String,
    /// Set: every PostgreSQL session the server's pool hands out is read-only.
    pub read_only: Option<Arc<AtomicBool>>,
    _guard: Guard,
}

enum Guard {
    Sqlite(headroom_testkit::TempSqlite),
    Postgres(Box<PgDatabase>),
}

/// The pools close with the runtime; the guard then removes the database.
impl headroom_testkit::Finish for Db {
    async fn finish(self) {}
}

pub async fn sqlite() -> Db {
    let dir = headroom_testkit::TempSqlite::new();
    let target = dir.path();
    let writer = Arc::new(SqliteStore::open(&target).await.expect("open"));
    // A second pool on the same file, as a server process would have.
    let server = Arc::new(SqliteStore::open(&target).await.expect("open"));
    Db {
        writer: writer.clone(),
        writer_feed: writer,
        report: server.clone(),
        feed: server.clone(),
        server_store: server,
        target,
        read_only: None,
        _guard: Guard::Sqlite(dir),
    }
}

/// A PostgreSQL database whose server-side pool turns every session read-only once the
/// schema is in place: from then on any INSERT, UPDATE or DELETE a handler issues fails.
pub async fn postgres(test: &str) -> Option<Db> {
    let admin = admin_url(test)?;
    let db = PgDatabase::create(&admin).await;
    let writer = Arc::new(PgStore::connect(&db.url()).await.expect("connect"));
    let armed = Arc::new(AtomicBool::new(false));
    let flag = armed.clone();
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .before_acquire(move |conn, _meta| {
            let flag = flag.clone();
            Box::pin(async move {
                let setting = if flag.load(Ordering::SeqCst) {
                    "on"
                } else {
                    "off"
                };
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "SET default_transaction_read_only = {setting}"
                )))
                .execute(&mut *conn)
                .await?;
                Ok(true)
            })
        })
        .connect_with(db.options.clone())
        .await
        .expect("connect the server pool");
    // Migrations (a no-op here, the writer applied them) run before the switch is thrown.
    let server = Arc::new(PgStore::from_pool(pool).await.expect("schema"));
    armed.store(true, Ordering::SeqCst);
    let target = db.url();
    Some(Db {
        writer: writer.clone(),
        writer_feed: writer,
        report: server.clone(),
        feed: server.clone(),
        server_store: server,
        target,
        read_only: Some(armed),
        _guard: Guard::Postgres(Box::new(db)),
    })
}

pub fn settings() -> StatusSettings {
    StatusSettings {
        host: HOST.into(),
        subject: Some(subject()),
        scheduler: SchedulerSettings::of(
            &PollSettings::default(),
            &EnrichSettings::default(),
            None,
            Reporting::default(),
        )
        .expect("the defaults are feasible"),
    }
}

pub fn app(db: &Db, now: Timestamp) -> axum::Router {
    headroom_server::router(AppState {
        report: db.report.clone(),
        feed: db.feed.clone(),
        clock: Arc::new(ManualClock::new(now)),
        settings: Arc::new(settings()),
        status: Default::default(),
    })
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub text: String,
    pub json: Value,
}

/// `GET uri`; a JSON answer is checked against the OpenAPI document.
pub async fn get(app: &axum::Router, uri: &str) -> Reply {
    let reply = request(app, axum::http::Method::GET, uri).await;
    let is_json = reply
        .headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        document::conforms(uri, reply.status.as_u16(), &reply.json);
    }
    reply
}

/// `method uri` with an empty body, answered as it came (no document check: the document
/// describes GET operations only).
pub async fn request(app: &axum::Router, method: axum::http::Method, uri: &str) -> Reply {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .body(Body::empty())
        .expect("request");
    let response = app.clone().oneshot(request).await.expect("infallible");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let text = String::from_utf8(bytes.to_vec()).expect("utf-8");
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    Reply {
        status,
        headers,
        text,
        json,
    }
}

/// A push event with a numeric id (see `push::push_event`).
pub fn event(id: &str, actor: i64, repo: i64, occurred: i64, received: i64) -> PushEventWrite {
    push::push_event(
        id.parse().expect("a numeric event id"),
        actor,
        repo,
        at(occurred),
        at(received),
        EventOrigin::Feed,
    )
}

pub async fn write_events(db: &Db, events: &[PushEventWrite]) {
    let mut tx = db.writer.begin().await.expect("begin");
    for e in events {
        assert!(tx.write_push_event(e).await.expect("write"), "new event");
    }
    tx.commit().await.expect("commit");
}

/// The seeded feed: three events over two actors and two repositories; actor 101 enriched,
/// repository 201 terminal; one search batch; an active core ledger; a polled source.
pub async fn seed(db: &Db) {
    write_events(
        db,
        &[
            event("1001", 101, 201, -300, 0),
            event("1002", 102, 201, -200, 1),
            event("1003", 101, 202, -100, 2),
        ],
    )
    .await;
    let feed = &db.writer_feed;
    let source = feed
        .ensure_event_source(SOURCE_TYPE, FEED_PATH, at(0))
        .await
        .expect("source");
    let mut polled = source.clone();
    polled.cadence_due_at = Some(at(300));
    polled.poll_floor_until = Some(at(60));
    polled.next_poll_at = Some(at(300));
    polled.last_polled_at = Some(at(0));
    feed.save_event_source(&polled, at(0)).await.expect("save");

    let mut ledger = CoreLedger::new(HOST, &subject());
    ledger.window_status = WindowStatus::Active;
    ledger.limit = Some(60);
    ledger.remaining = Some(55);
    ledger.reserve = 8;
    ledger.poll_used = 1;
    ledger.poll_allowance = 12;
    ledger.enrichment_used = 3;
    ledger.enrichment_allowance = 40;
    ledger.actor_share_used = 2;
    ledger.repository_share_used = 1;
    ledger.window_started_at = Some(at(0));
    ledger.reset_at = Some(at(3600));
    feed.save_core_ledger(&ledger, at(0)).await.expect("ledger");

    // Actor 101 (the oldest) reaches the contract through a search batch.
    let lease = at(600);
    let claimed = feed
        .claim(EntityKind::Actor, Lane::Batch, 1, at(10), "t1", lease)
        .await
        .expect("claim");
    assert_eq!(claimed.first().map(|c| c.github_id), Some(101));
    let item = Enriched {
        name: "user101".into(),
        account_type: Some("User".into()),
        owner_login: None,
        owner_github_id: None,
        fork: None,
        archived: None,
        default_branch: None,
        github_created_at: None,
        raw: serde_json::json!({"id": 101, "login": "user101", "type": "User"}),
    };
    assert!(
        feed.apply(EntityKind::Actor, 101, "t1", &item, at(11))
            .await
            .expect("apply")
    );
    feed.record_batch(&BatchEnvelope {
        correlation_id: "corr-1",
        request_kind: RequestKind::Search,
        kind: EntityKind::Actor,
        status: BatchStatus::Succeeded,
        requested: 2,
        returned: Some(1),
        valid: Some(1),
        incomplete_results: Some(false),
        http_status: Some(200),
        error: None,
        started_at: at(10),
        finished_at: at(11),
    })
    .await
    .expect("batch");

    // Repository 201 falls back to detail and meets a 404.
    let claimed = feed
        .claim(EntityKind::Repository, Lane::Batch, 1, at(12), "t2", lease)
        .await
        .expect("claim");
    assert_eq!(claimed.first().map(|c| c.github_id), Some(201));
    assert!(
        feed.admit_detail(
            EntityKind::Repository,
            201,
            "t2",
            "missing_search_result",
            at(13)
        )
        .await
        .expect("admit")
    );
    let claimed = feed
        .claim(EntityKind::Repository, Lane::Detail, 1, at(14), "t3", lease)
        .await
        .expect("claim");
    assert_eq!(claimed.first().map(|c| c.github_id), Some(201));
    assert!(
        feed.mark_terminal(EntityKind::Repository, 201, "t3", "entity_gone_404", at(15))
            .await
            .expect("terminal")
    );
}
