//! The feed's state queries on both backends: the event source and its lease, ingestion runs,
//! the core ledger row, and the summary figures.

#![allow(clippy::expect_used)]

mod common;

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_store::feed_state::{
    BatchEnvelope, BatchStatus, CoreLedger, FeedState, IngestionRunEnd, IngestionRunStatus,
    RequestKind, SourceStatus, WindowStatus, open_feed,
};

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

async fn exercise(state: &dyn FeedState) {
    assert_eq!(
        state
            .event_source("github_public_events")
            .await
            .expect("read"),
        None
    );
    let source = state
        .ensure_event_source("github_public_events", "/events?per_page=100", t(0))
        .await
        .expect("ensure");
    assert_eq!(source.status, SourceStatus::Idle);
    assert!(source.enabled);
    assert_eq!(source.cadence_due_at, None);
    let again = state
        .ensure_event_source("github_public_events", "/other", t(5))
        .await
        .expect("ensure");
    assert_eq!(again.id, source.id);
    assert_eq!(again.url, "/events?per_page=100");
    assert_eq!(
        state
            .event_source("github_public_events")
            .await
            .expect("read"),
        Some(again.clone())
    );

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
        .start_ingestion_run("run-1", Some(source.id), "feed", None, t(20))
        .await
        .expect("start");
    let overview = state.feed_overview().await.expect("overview");
    assert_eq!(overview.latest_completed_run, None);
    state
        .finish_ingestion_run(
            run,
            &IngestionRunEnd {
                status: IngestionRunStatus::Completed,
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
    ledger.window_status = WindowStatus::Active;
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

async fn enrichment_queries(store: &dyn headroom_store::Store, state: &dyn FeedState) {
    use headroom_store::feed_state::{Enriched, EntityKind, Lane, SearchLedger};
    write_push_events(store, 1..=3).await;
    let a = EntityKind::Actor;
    assert!(
        state
            .has_claimable(a, Lane::Batch, t(10))
            .await
            .expect("claimable")
    );
    assert!(
        !state
            .has_claimable(a, Lane::Detail, t(10))
            .await
            .expect("claimable")
    );
    let claimed = state
        .claim(a, Lane::Batch, 2, t(10), "lease-1", t(610))
        .await
        .expect("claim");
    assert_eq!(
        claimed.iter().map(|c| c.github_id).collect::<Vec<_>>(),
        [1, 2],
        "FIFO"
    );
    // Held rows are not claimable again until the lease lapses.
    let next = state
        .claim(a, Lane::Batch, 5, t(11), "lease-2", t(611))
        .await
        .expect("claim");
    assert_eq!(next.iter().map(|c| c.github_id).collect::<Vec<_>>(), [3]);
    state
        .release(a, "lease-2", Lane::Batch, t(12))
        .await
        .expect("release");
    let item = Enriched {
        name: "user1".into(),
        account_type: Some("User".into()),
        owner_login: None,
        owner_github_id: None,
        fork: None,
        archived: None,
        default_branch: None,
        github_created_at: None,
        raw: serde_json::json!({"id": 1, "login": "user1", "type": "User"}),
    };
    assert!(
        !state
            .apply(a, 1, "wrong-token", &item, t(13))
            .await
            .expect("apply"),
        "guarded"
    );
    assert!(
        state
            .apply(a, 1, "lease-1", &item, t(13))
            .await
            .expect("apply")
    );
    assert!(
        state
            .admit_detail(a, 2, "lease-1", "missing_search_result", t(13))
            .await
            .expect("admit")
    );
    assert!(
        state
            .has_claimable(a, Lane::Detail, t(14))
            .await
            .expect("claimable")
    );
    let detail = state
        .claim(a, Lane::Detail, 1, t(14), "lease-3", t(614))
        .await
        .expect("claim");
    assert_eq!(
        detail[0].detail_url.as_deref(),
        Some("https://api.github.com/users/user2")
    );
    assert!(
        state
            .schedule_retry(a, 2, "lease-3", Lane::Detail, t(100), "500", t(15))
            .await
            .expect("retry")
    );
    assert!(
        !state
            .has_claimable(a, Lane::Detail, t(50))
            .await
            .expect("backoff holds")
    );
    let again = state
        .claim(a, Lane::Detail, 1, t(100), "lease-4", t(700))
        .await
        .expect("claim");
    assert_eq!(again[0].detail_attempts, 1);
    assert!(
        state
            .mark_terminal(a, 2, "lease-4", "entity_gone_404", t(101))
            .await
            .expect("terminal")
    );
    // A lapsed lease is reclaimable by another worker.
    let lapsed = state
        .claim(a, Lane::Batch, 5, t(2000), "lease-5", t(2600))
        .await
        .expect("claim");
    assert_eq!(lapsed.iter().map(|c| c.github_id).collect::<Vec<_>>(), [3]);
    let counts = state.enrichment_counts(a).await.expect("counts");
    assert_eq!(
        (counts.complete, counts.pending, counts.permanent_failure),
        (1, 1, 1)
    );

    let ledger = SearchLedger {
        host: "h".into(),
        subject: "s".into(),
        limit: Some(10),
        remaining: Some(9),
        request_ceiling: 10,
        reserve: 2,
        used: 1,
        actor_used: 1,
        repository_used: 0,
        blocked_until: None,
        last_request_at: Some(t(10)),
        reset_at: Some(t(70)),
    };
    state
        .save_search_ledger(&ledger, t(10))
        .await
        .expect("save");
    assert_eq!(
        state.search_ledger("h", "s").await.expect("read"),
        Some(ledger)
    );
    let batch = state
        .record_batch(&BatchEnvelope {
            correlation_id: "c-1",
            request_kind: RequestKind::Search,
            kind: a,
            status: BatchStatus::Succeeded,
            requested: 3,
            returned: Some(2),
            valid: Some(2),
            incomplete_results: Some(false),
            http_status: Some(200),
            error: None,
            started_at: t(10),
            finished_at: t(11),
        })
        .await
        .expect("batch");
    state
        .record_observation(
            a,
            1,
            "search",
            "valid",
            Some(batch),
            &serde_json::json!({"id": 1}),
            t(11),
        )
        .await
        .expect("observation");
    assert_eq!(
        store.count_rows("enrichment_batches").await.expect("count"),
        1
    );
    assert_eq!(
        store
            .count_rows("enrichment_observations")
            .await
            .expect("count"),
        1
    );
}

#[tokio::test]
async fn enrichment_queries_sqlite() {
    let dir = tempfile::tempdir().expect("tmp");
    let (store, state) = open_feed(dir.path().join("h.db").to_str().expect("utf-8"))
        .await
        .expect("open");
    enrichment_queries(store.as_ref(), state.as_ref()).await;
}

#[tokio::test]
async fn enrichment_queries_postgres() {
    let Some(admin) = common::admin_url("enrichment_queries_postgres") else {
        return;
    };
    let db = common::PgDatabase::create(&admin).await;
    let (store, state) = open_feed(&db.url()).await.expect("open");
    enrichment_queries(store.as_ref(), state.as_ref()).await;
}

/// Push events `ids`, each by actor `id` (login `user{id}`) to repository `100 + id`.
async fn write_push_events(store: &dyn headroom_store::Store, ids: std::ops::RangeInclusive<i64>) {
    use headroom_store::{ActorRef, EventOrigin, PushEventWrite, RepositoryRef};
    let mut tx = store.begin().await.expect("begin");
    for n in ids {
        let write = PushEventWrite {
            github_event_id: format!("{n}"),
            github_push_id: Some(n),
            actor: ActorRef {
                github_id: n,
                login: format!("user{n}"),
                display_login: None,
                url: Some(format!("https://api.github.com/users/user{n}")),
                avatar_url: None,
            },
            repository: RepositoryRef {
                github_id: 100 + n,
                full_name: format!("o/r{n}"),
                url: None,
            },
            git_ref: "refs/heads/main".into(),
            head_sha: "a".repeat(40),
            before_sha: Some("b".repeat(40)),
            commit_count: None,
            distinct_commit_count: None,
            occurred_at: t(n),
            received_at: t(n),
            ingestion_run_id: None,
            origin: EventOrigin::Feed,
            raw: serde_json::json!({"id": n.to_string()}),
        };
        tx.write_push_event(&write).await.expect("write");
    }
    tx.commit().await.expect("commit");
}

/// Six workers on three pools (three processes' worth) claim the same backlog at once: no row
/// is taken twice, and together they take all of it. On PostgreSQL the claim is one statement
/// that skips rows another worker is locking.
async fn concurrent_claims_split_the_backlog(target: &str) {
    use headroom_store::feed_state::{EntityKind, Lane};
    let mut states = Vec::new();
    for _ in 0..3 {
        states.push(open_feed(target).await.expect("open"));
    }
    write_push_events(states[0].0.as_ref(), 1..=60).await;
    let mut tasks = Vec::new();
    for worker in 0..6 {
        let state = std::sync::Arc::clone(&states[worker % 3].1);
        tasks.push(tokio::spawn(async move {
            let token = format!("worker-{worker}");
            let mut mine = Vec::new();
            loop {
                let got = state
                    .claim(EntityKind::Actor, Lane::Batch, 7, t(100), &token, t(700))
                    .await
                    .expect("claim");
                if got.is_empty() {
                    return mine;
                }
                mine.extend(got.into_iter().map(|c| c.github_id));
            }
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("worker"));
    }
    all.sort_unstable();
    assert_eq!(all, (1..=60).collect::<Vec<i64>>(), "each row once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_claims_split_the_backlog_sqlite() {
    let dir = tempfile::tempdir().expect("tmp");
    concurrent_claims_split_the_backlog(dir.path().join("h.db").to_str().expect("utf-8")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_claims_split_the_backlog_postgres() {
    let Some(admin) = common::admin_url("concurrent_claims_split_the_backlog_postgres") else {
        return;
    };
    let db = common::PgDatabase::create(&admin).await;
    concurrent_claims_split_the_backlog(&db.url()).await;
}
