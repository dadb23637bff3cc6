//! What one request costs the governor on each state backend, in one run so the figures
//! compare by ratio: acquire a permit, feed back a reading, drop the permit (its lease deleted
//! before the next request), on the in-memory state, on an SQLite file shared with other
//! processes, and on PostgreSQL when `HEADROOM_TEST_DATABASE_URL` names an admin URL (a
//! database of its own is created and dropped). The points limiters are on, as in production;
//! the clock advances 100 ms a request so they never fill.

#![allow(clippy::expect_used)]

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_core::governor::{Acquire, GovernorConfig, MemoryQuotaState, QuotaState};
use headroom_core::signal::RateLimitSignal;
use headroom_core::{Bucket, QuotaKey, RequestKind};
use headroom_store::{SharedGovernorOptions, SharedQuotaState, SqliteStore};

fn reading(now: Timestamp) -> RateLimitSignal {
    RateLimitSignal {
        resource: Some(Bucket::core()),
        limit: Some(5000),
        remaining: Some(4000),
        used: Some(1000),
        reset_at: Some(now + SignedDuration::from_secs(3600)),
        ..RateLimitSignal::default()
    }
}

/// One request's governor work; `settled` waits for the lease deletion a dropped permit
/// started (nothing for the in-memory state).
async fn one_request(state: &dyn QuotaState, shared: Option<&SharedQuotaState>, now: Timestamp) {
    let key = QuotaKey::user("api.github.com", "alice");
    let Acquire::Grant(permit) = state
        .acquire(&key, &Bucket::core(), 1, RequestKind::REST_READ, now)
        .await
        .expect("backend")
    else {
        panic!("the bench never fills a limit");
    };
    state
        .observe(&permit, &reading(now), now)
        .await
        .expect("backend");
    drop(permit);
    if let Some(shared) = shared {
        shared.settled().await;
    }
}

fn bench(
    c: &mut Criterion,
    runtime: &tokio::runtime::Runtime,
    name: &str,
    state: Arc<dyn QuotaState>,
    shared: Option<Arc<SharedQuotaState>>,
) {
    let mut now = Timestamp::from_second(1_800_000_000).expect("valid");
    c.bench_function(&format!("governor_state/{name}"), |b| {
        b.iter(|| {
            now += SignedDuration::from_millis(100);
            runtime.block_on(one_request(state.as_ref(), shared.as_deref(), now));
        })
    });
}

fn governor_state(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let config = GovernorConfig::default();

    let memory: Arc<dyn QuotaState> =
        Arc::new(MemoryQuotaState::new(config.clone()).expect("valid"));
    bench(c, &runtime, "memory", memory, None);

    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("bench.db");
    let store = runtime
        .block_on(SqliteStore::open(path.to_str().expect("UTF-8 path")))
        .expect("open");
    let sqlite = Arc::new(
        SharedQuotaState::sqlite(
            store.pool().clone(),
            config.clone(),
            SharedGovernorOptions::default(),
        )
        .expect("valid"),
    );
    bench(c, &runtime, "sqlite_file", sqlite.clone(), Some(sqlite));

    match std::env::var("HEADROOM_TEST_DATABASE_URL") {
        Ok(admin) => {
            let db = runtime.block_on(headroom_testkit::PgDatabase::create(&admin));
            let store = runtime
                .block_on(headroom_store::PgStore::connect_with_pool_size(
                    &db.url(),
                    4,
                ))
                .expect("connect");
            let pg = Arc::new(
                SharedQuotaState::postgres(
                    store.pool().clone(),
                    config,
                    SharedGovernorOptions::default(),
                )
                .expect("valid"),
            );
            bench(c, &runtime, "postgres", pg.clone(), Some(pg));
            drop(store);
            drop(db);
        }
        Err(_) => eprintln!(
            "governor_state/postgres skipped: set HEADROOM_TEST_DATABASE_URL to an admin URL"
        ),
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = governor_state
}
criterion_main!(benches);
