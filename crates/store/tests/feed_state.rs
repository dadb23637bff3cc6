//! The feed's state queries on both backends: the event source and its lease, ingestion runs,
//! the core ledger row, and the summary figures.

#![allow(clippy::expect_used)]

mod common;

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_store::feed_state::{CoreLedger, FeedState, IngestionRunEnd, open_feed};

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

async fn exercise(state: &dyn FeedState) {
    let source = state
        .ensure_event_source("github_public_events", "/events?per_page=100", t(0))
        .await
        .expect("ensure");
    assert_eq!(source.status, "idle");
    assert!(source.enabled);
    assert_eq!(source.cadence_due_at, None);
    let again = state
        .ensure_event_source("github_public_events", "/other", t(5))
        .await
        .expect("ensure");
    assert_eq!(again.id, source.id);
    assert_eq!(again.url, "/events?per_page=100");

    // The lease: free, held, renewed by its holder, lapsed.
    assert!(
        state
            .try_lock_event_source(source.id, "a", t(0), t(600))
            .await
            .expect("lock")
    );
    assert!(
        !state
            .try_lock_event_source(source.id, "b", t(1), t(601))
            .await
            .expect("lock")
    );
    assert!(
        state
            .try_lock_event_source(source.id, "a", t(2), t(602))
            .await
            .expect("lock")
    );
    assert!(
        state
            .try_lock_event_source(source.id, "b", t(602), t(1200))
            .await
            .expect("lock")
    );
    state
        .unlock_event_source(source.id, "a")
        .await
        .expect("unlock (not the holder: no-op)");
    assert!(
        !state
            .try_lock_event_source(source.id, "c", t(603), t(1200))
            .await
            .expect("lock")
    );
    state
        .unlock_event_source(source.id, "b")
        .await
        .expect("unlock");
    assert!(
        state
            .try_lock_event_source(source.id, "c", t(604), t(1200))
            .await
            .expect("lock")
    );

    let mut saved = source.clone();
    saved.cadence_due_at = Some(t(300));
    saved.poll_floor_until = Some(t(60));
    saved.retry_not_before_at = Some(t(120));
    saved.next_poll_at = Some(t(300));
    saved.consecutive_failures = 2;
    saved.last_error = Some("failed with token ghp_abcdefghijklmnopqrstuvwxyz0123456789".into());
    saved.etag = Some("W/\"x\"".into());
    state.save_event_source(&saved, t(10)).await.expect("save");
    let read = state
        .ensure_event_source("github_public_events", "/events?per_page=100", t(11))
        .await
        .expect("read");
    assert_eq!(read.cadence_due_at, Some(t(300)));
    assert_eq!(read.poll_floor_until, Some(t(60)));
    assert_eq!(read.retry_not_before_at, Some(t(120)));
    assert_eq!(read.consecutive_failures, 2);
    assert!(
        !read.last_error.expect("error").contains("ghp_"),
        "stored redacted"
    );

    let run = state
        .start_ingestion_run("run-1", Some(source.id), "feed", t(20))
        .await
        .expect("start");
    let overview = state.feed_overview().await.expect("overview");
    assert_eq!(overview.latest_completed_run, None);
    state
        .finish_ingestion_run(
            run,
            &IngestionRunEnd {
                status: "completed".into(),
                finished_at: Some(t(21)),
                pages_fetched: 1,
                events_created: 4,
                ..IngestionRunEnd::default()
            },
        )
        .await
        .expect("finish");
    let overview = state.feed_overview().await.expect("overview");
    assert_eq!(overview.latest_completed_run, Some(("run-1".into(), t(21))));
    assert_eq!(overview.push_events, 0);

    assert_eq!(
        state
            .core_ledger("api.github.com", "ip:x")
            .await
            .expect("read"),
        None
    );
    let mut ledger = CoreLedger::new("api.github.com", "ip:x");
    ledger.window_status = "active".into();
    ledger.limit = Some(60);
    ledger.remaining = Some(59);
    ledger.poll_used = 1;
    ledger.poll_allowance = 12;
    ledger.reset_at = Some(t(3600));
    ledger.global_blocked_until = Some(t(60) + SignedDuration::from_secs(1));
    state.save_core_ledger(&ledger, t(22)).await.expect("save");
    ledger.poll_used = 2;
    state
        .save_core_ledger(&ledger, t(23))
        .await
        .expect("save again");
    assert_eq!(
        state
            .core_ledger("api.github.com", "ip:x")
            .await
            .expect("read"),
        Some(ledger)
    );
}

#[tokio::test]
async fn feed_state_sqlite() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_, state) = open_feed(dir.path().join("h.db").to_str().expect("utf-8"))
        .await
        .expect("open");
    exercise(state.as_ref()).await;
}

#[tokio::test]
async fn feed_state_postgres() {
    let Some(admin) = common::admin_url("feed_state_postgres") else {
        return;
    };
    let db = common::PgDatabase::create(&admin).await;
    let url = db.url();
    let (_, state) = open_feed(&url).await.expect("open");
    exercise(state.as_ref()).await;
}
