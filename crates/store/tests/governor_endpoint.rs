//! Jira's per-endpoint burst buckets on the shared state backend, on both databases: an
//! endpoint's pace is one for every process on the database, a burst limit one process met
//! closes that endpoint for all of them and nothing else, and a quota limit holds every
//! bucket of the identity. Every test runs on both (`NAME::sqlite`, `NAME::postgres`).

#![allow(clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::PgDatabase;
use common::governor::{grant, t, wait};
use headroom_core::clock::{ManualClock, SignedDuration, Timestamp};
use headroom_core::governor::{Acquire, GovernorConfig, PointsLimit, WaitReason};
use headroom_core::signal::{LimitReason, Provider, RateLimitSignal};
use headroom_core::{Bucket, Governor, QuotaKey, RequestKind, Subject};
use headroom_store::{SharedGovernorOptions, SharedQuotaState, SqliteStore};

#[derive(Debug, Clone, Copy)]
enum Backend {
    Sqlite,
    Postgres,
}

/// The shared database of a test, removed when dropped.
enum SharedDb {
    Sqlite(headroom_testkit::TempSqlite),
    Postgres(Box<PgDatabase>),
}

impl SharedDb {
    /// A fresh database, or `None` where PostgreSQL is not configured (outside CI).
    async fn create(backend: Backend, test: &str) -> Option<Self> {
        Some(match backend {
            Backend::Sqlite => SharedDb::Sqlite(headroom_testkit::TempSqlite::new()),
            Backend::Postgres => SharedDb::Postgres(Box::new(
                PgDatabase::create(&common::admin_url(test)?).await,
            )),
        })
    }

    /// One more "process" on it, deciding by `clock`.
    async fn process(&self, name: &str, clock: &Arc<ManualClock>) -> Governor {
        let config = GovernorConfig {
            endpoint_rate: PointsLimit::paced_per_second(10),
            ..GovernorConfig::for_provider(Provider::Jira)
        };
        let options = SharedGovernorOptions {
            holder: name.to_owned(),
            ..SharedGovernorOptions::default()
        };
        let state = match self {
            SharedDb::Sqlite(file) => {
                let store = SqliteStore::open(&file.path()).await.expect("open SQLite");
                SharedQuotaState::sqlite(store.pool().clone(), config, options)
            }
            SharedDb::Postgres(db) => {
                let store = common::pg_store(db, 3).await;
                SharedQuotaState::postgres(store.pool().clone(), config, options)
            }
        }
        .expect("valid configuration");
        Governor::new(Arc::new(state), clock.clone())
    }
}

/// Each test, once per backend: `NAME::sqlite` and `NAME::postgres`.
macro_rules! on_both {
    ($test:ident) => {
        mod $test {
            #[tokio::test]
            async fn sqlite() {
                super::$test(super::Backend::Sqlite).await;
            }
            #[tokio::test]
            async fn postgres() {
                super::$test(super::Backend::Postgres).await;
            }
        }
    };
}

fn site() -> QuotaKey {
    QuotaKey::new(
        Provider::Jira,
        "acme.atlassian.net",
        Subject::User("557058:abc".into()),
    )
}

fn comments() -> Bucket {
    Bucket::new("endpoint:GET /rest/api/3/issue/{key}/comment")
}

fn changelog() -> Bucket {
    Bucket::new("endpoint:GET /rest/api/3/issue/{key}/changelog")
}

async fn send(g: &Governor, endpoint: &Bucket) -> Acquire {
    let asks = [(Bucket::core(), 1), (endpoint.clone(), 1)];
    g.acquire_all(&site(), &asks, RequestKind::REST_READ)
        .await
        .expect("backend")
}

fn jira_429(reason: LimitReason, retry: i64, reset: Option<Timestamp>) -> RateLimitSignal {
    RateLimitSignal {
        provider: Some(Provider::Jira),
        reason: Some(reason),
        retry_after: Some(SignedDuration::from_secs(retry)),
        reset_at: reset,
        ..RateLimitSignal::default()
    }
}

async fn an_endpoints_pace_and_its_burst_block_hold_every_process(backend: Backend) {
    let test = "an_endpoints_pace_and_its_burst_block_hold_every_process";
    let Some(db) = SharedDb::create(backend, test).await else {
        return;
    };
    let clock = Arc::new(ManualClock::new(t(0)));
    let (a, b) = (db.process("a", &clock).await, db.process("b", &clock).await);
    grant(send(&a, &comments()).await).release().await;
    clock.advance(SignedDuration::from_millis(30));
    let w = wait(send(&b, &comments()).await);
    assert!(matches!(w.reason, WaitReason::LocalPoints { .. }), "{w}");
    assert_eq!(w.until, t(0) + SignedDuration::from_millis(100));
    grant(send(&b, &changelog()).await).release().await;
    clock.set(w.until);
    let permit = grant(send(&b, &comments()).await);

    // A burst 429 process B met closes that endpoint for A too, and nothing else.
    b.observe(&permit, &jira_429(LimitReason::Secondary, 2, None))
        .await
        .expect("backend");
    permit.release().await;
    let blocked_at = clock_now(&clock);
    // Past every pace, so that only the block can hold a request back.
    clock.advance(SignedDuration::from_millis(200));
    let w = wait(send(&a, &comments()).await);
    assert!(
        matches!(&w.reason, WaitReason::SecondaryBlock { bucket, .. } if *bucket == comments()),
        "{w}"
    );
    assert_eq!(w.until, blocked_at + SignedDuration::from_secs(2));
    grant(send(&a, &changelog()).await).release().await;
    let core = a
        .acquire(&site(), &Bucket::core(), 1, RequestKind::REST_READ)
        .await
        .expect("backend");
    grant(core).release().await;

    // A quota 429 holds every bucket, in every process, until the reset.
    clock.advance(SignedDuration::from_secs(3));
    let reset = clock_now(&clock) + SignedDuration::from_secs(600);
    let permit = grant(send(&a, &changelog()).await);
    a.observe(&permit, &jira_429(LimitReason::Primary, 5, Some(reset)))
        .await
        .expect("backend");
    permit.release().await;
    for endpoint in [comments(), changelog()] {
        assert_eq!(wait(send(&b, &endpoint).await).until, reset);
    }
    clock.set(reset);
    grant(send(&b, &comments()).await).release().await;
}
on_both!(an_endpoints_pace_and_its_burst_block_hold_every_process);

fn clock_now(clock: &ManualClock) -> Timestamp {
    headroom_core::clock::Clock::now(clock)
}
