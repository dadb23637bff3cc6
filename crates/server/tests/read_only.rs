//! No read endpoint writes. Every endpoint is exercised against a seeded feed while a
//! detector that fails on any write is armed, on both backends:
//!
//! - SQLite: `PRAGMA data_version` read from a separate observer connection changes whenever
//!   any other connection commits a change to the file, so it is compared before and after.
//! - PostgreSQL: every session the server's pool hands out has
//!   `default_transaction_read_only = on`, so any INSERT, UPDATE or DELETE a handler issued
//!   would fail and turn its response into a 503.
//!
//! Each test also runs a negative control — a deliberate write through the server's own
//! store — and checks that the detector catches it, so a detector that sees nothing cannot
//! pass silently.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use axum::http::StatusCode;
use common::{Db, HOST, app, at, get, seed, subject};
use headroom_store::feed_state::SearchLedger;
use sqlx::Connection as _;

/// Every endpoint and the paths through them: each must answer as expected.
async fn every_read(app: &axum::Router) {
    for (uri, expected) in [
        ("/health/live", StatusCode::OK),
        ("/health/ready", StatusCode::OK),
        ("/status", StatusCode::OK),
        ("/api/push_events", StatusCode::OK),
        ("/api/push_events?limit=1", StatusCode::OK),
        (
            "/api/push_events?actor_id=101&repository_id=201",
            StatusCode::OK,
        ),
        ("/api/push_events/1002", StatusCode::OK),
        ("/api/push_events/999999", StatusCode::NOT_FOUND),
        ("/api/push_events?limit=0", StatusCode::BAD_REQUEST),
        ("/api/push_events?bogus=1", StatusCode::BAD_REQUEST),
    ] {
        let reply = get(app, uri).await;
        assert_eq!(reply.status, expected, "{uri}: {}", reply.text);
    }
    // Follow a cursor too.
    let first = get(app, "/api/push_events?limit=1").await;
    let cursor = first.json["pagination"]["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let second = get(app, &format!("/api/push_events?limit=1&cursor={cursor}")).await;
    assert_eq!(second.status, StatusCode::OK, "{}", second.text);
}

fn a_write() -> SearchLedger {
    SearchLedger {
        host: HOST.into(),
        subject: subject(),
        limit: Some(10),
        remaining: Some(9),
        request_ceiling: 10,
        reserve: 2,
        used: 1,
        actor_used: 1,
        repository_used: 0,
        blocked_until: None,
        last_request_at: Some(at(30)),
        reset_at: Some(at(90)),
    }
}

async fn data_version(observer: &mut sqlx::SqliteConnection) -> i64 {
    sqlx::query_scalar::<_, i64>("PRAGMA data_version")
        .fetch_one(observer)
        .await
        .expect("data_version")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_reads_write_nothing() {
    let db: Db = common::sqlite().await;
    seed(&db).await;
    let mut observer = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.target))
        .await
        .expect("observer");
    let app = app(&db, at(60));
    let before = data_version(&mut observer).await;
    every_read(&app).await;
    // Twice, so a write on a second visit (a lazily created row) would show too.
    every_read(&app).await;
    assert_eq!(
        data_version(&mut observer).await,
        before,
        "a read endpoint changed the database"
    );

    // Negative control: a write through the server's own store is seen.
    db.feed
        .save_search_ledger(&a_write(), at(60))
        .await
        .expect("write");
    assert_ne!(
        data_version(&mut observer).await,
        before,
        "the detector missed a write"
    );
    observer.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_reads_write_nothing() {
    let Some(db) = common::postgres("postgres_reads_write_nothing").await else {
        return;
    };
    seed(&db).await;
    let app = app(&db, at(60));
    every_read(&app).await;
    every_read(&app).await;

    // Negative control: the same server pool refuses a write.
    let refused = db.feed.save_search_ledger(&a_write(), at(60)).await;
    let message = refused
        .expect_err("a write on a read-only session")
        .to_string();
    assert!(message.contains("read-only"), "{message}");
}
