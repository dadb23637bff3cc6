//! One request over several buckets on the shared state backend, on both databases: granted by
//! every bucket or by none, one lease per bucket and the identity's in-flight counted once,
//! one permit freeing them all — for every process on the database. Every test runs on both
//! (`NAME::sqlite`, `NAME::postgres`).

#![allow(clippy::expect_used)]

mod common;

use common::PgDatabase;
use common::governor::{grant, reading, t, wait};
use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_core::governor::multi::Ask;
use headroom_core::governor::{
    Acquire, GovernorConfig, GovernorError, MemoryQuotaState, Permit, PointsLimit, QuotaState,
    WaitReason,
};
use headroom_core::signal::RateLimitSignal;
use headroom_core::{Bucket, QuotaKey, RequestKind};
use headroom_store::{SharedGovernorOptions, SharedQuotaState, SqliteStore};

fn alice() -> QuotaKey {
    QuotaKey::user("api.linear.app", "alice")
}

fn requests() -> Bucket {
    Bucket::new("requests")
}

fn complexity() -> Bucket {
    // A second bucket with a window and a reserve (Linear's `complexity` keeps none: core's
    // governor_complexity.rs).
    Bucket::new("points")
}

fn both(cost: u32) -> Vec<Ask> {
    vec![(requests(), 1), (complexity(), cost)]
}

const KIND: RequestKind = RequestKind::GRAPHQL_QUERY;

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

    /// One more "process" on it: a pool of its own and a state over it.
    async fn process(
        &self,
        config: GovernorConfig,
        options: SharedGovernorOptions,
    ) -> SharedQuotaState {
        match self {
            SharedDb::Sqlite(file) => {
                let store = SqliteStore::open(&file.path()).await.expect("open SQLite");
                SharedQuotaState::sqlite(store.pool().clone(), config, options)
            }
            SharedDb::Postgres(db) => {
                let store = common::pg_store(db, 3).await;
                SharedQuotaState::postgres(store.pool().clone(), config, options)
            }
        }
        .expect("valid configuration")
    }

    /// Two processes on a fresh database.
    async fn two(
        backend: Backend,
        test: &str,
        config: GovernorConfig,
    ) -> Option<(Self, SharedQuotaState, SharedQuotaState)> {
        Self::two_with(backend, test, config, SharedGovernorOptions::default()).await
    }

    /// Two processes with `options` on a fresh database.
    async fn two_with(
        backend: Backend,
        test: &str,
        config: GovernorConfig,
        options: SharedGovernorOptions,
    ) -> Option<(Self, SharedQuotaState, SharedQuotaState)> {
        let db = Self::create(backend, test).await?;
        let holder = |name: &str| SharedGovernorOptions {
            holder: name.to_owned(),
            ..options.clone()
        };
        let a = db.process(config.clone(), holder("process-a")).await;
        let b = db.process(config, holder("process-b")).await;
        Some((db, a, b))
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

async fn acquire_all(s: &SharedQuotaState, asks: &[Ask], now: Timestamp) -> Acquire {
    s.acquire_all(&alice(), asks, KIND, now)
        .await
        .expect("backend")
}

/// (identity, requests, complexity) in flight as `s` reads them.
async fn in_flight(s: &SharedQuotaState, now: Timestamp) -> (u32, u32, u32) {
    let snapshot = s.snapshot(&alice(), now).await.expect("backend");
    let of = |bucket: Bucket| {
        snapshot
            .buckets
            .iter()
            .find(|b| b.state.bucket == bucket)
            .map_or(0, |b| b.state.in_flight)
    };
    (snapshot.in_flight, of(requests()), of(complexity()))
}

/// Teaches the shared state a bucket's reading through a permit over that bucket alone.
async fn teach(s: &SharedQuotaState, signal: &RateLimitSignal, now: Timestamp) {
    let bucket = signal.resource.clone().expect("named");
    let p = grant(
        s.acquire(&alice(), &bucket, 1, KIND, now)
            .await
            .expect("backend"),
    );
    s.observe(&p, signal, now).await.expect("backend");
    p.release().await;
}

async fn a_request_over_two_buckets_is_granted_by_both_or_by_neither(backend: Backend) {
    let test = "a_request_over_two_buckets_is_granted_by_both_or_by_neither";
    let Some((_db, a, b)) = SharedDb::two(backend, test, GovernorConfig::default()).await else {
        return;
    };
    // Complexity nearly spent: 100 left, a cost of 10 needs 10 × (0 + 1 + 10) = 110.
    teach(&a, &reading("points", 100, 2900, t(3600)), t(0)).await;
    teach(&a, &reading("requests", 1400, 100, t(3600)), t(0)).await;
    let before = b.snapshot(&alice(), t(1)).await.expect("backend");
    let w = wait(acquire_all(&b, &both(10), t(1)).await);
    assert!(
        matches!(&w.reason, WaitReason::Exhausted { bucket, needed: 110, .. } if *bucket == complexity()),
        "{w}"
    );
    assert_eq!(w.until, t(3660));
    assert_eq!(
        a.snapshot(&alice(), t(1)).await.expect("backend"),
        before,
        "the refusal took no lease, not even in the bucket that had room"
    );
    let p = grant(acquire_all(&b, &both(9), t(1)).await);
    assert_eq!(
        (p.bucket(), p.also()),
        (&requests(), &[(complexity(), 9)][..])
    );
    assert_eq!(
        in_flight(&a, t(1)).await,
        (1, 1, 1),
        "one request, two leases"
    );
    // The other process decides on it too: 100 < 9 × (1 + 1 + 10) = 108.
    let w = wait(acquire_all(&a, &both(9), t(1)).await);
    assert_eq!(w.reason.bucket(), Some(&complexity()), "{w}");
}

async fn one_permit_releases_every_bucket_it_holds(backend: Backend) {
    let test = "one_permit_releases_every_bucket_it_holds";
    let Some((_db, a, b)) = SharedDb::two(backend, test, GovernorConfig::default()).await else {
        return;
    };
    let dropped = grant(acquire_all(&a, &both(1), t(0)).await);
    let released = grant(acquire_all(&a, &both(1), t(0)).await);
    let single = grant(
        a.acquire(&alice(), &requests(), 1, KIND, t(0))
            .await
            .expect("backend"),
    );
    assert_eq!(in_flight(&b, t(0)).await, (3, 3, 2));
    drop(dropped);
    a.settled().await;
    assert_eq!(in_flight(&b, t(0)).await, (2, 2, 1));
    released.release().await;
    assert_eq!(in_flight(&b, t(0)).await, (1, 1, 0));
    single.release().await;
    assert_eq!(in_flight(&b, t(0)).await, (0, 0, 0));
    // The other process's next decision counts them all as finished (PostgreSQL: its cache).
    let c = grant(acquire_all(&b, &both(1), t(1)).await);
    assert_eq!(in_flight(&a, t(1)).await, (1, 1, 1));
    c.release().await;
}

async fn a_request_over_several_buckets_counts_once_against_the_ceiling(backend: Backend) {
    let config = GovernorConfig {
        ceiling: 2,
        ..GovernorConfig::default()
    };
    let test = "a_request_over_several_buckets_counts_once_against_the_ceiling";
    let Some((_db, a, b)) = SharedDb::two(backend, test, config).await else {
        return;
    };
    let three = vec![
        (requests(), 1),
        (complexity(), 1),
        (Bucket::new("route"), 1),
    ];
    let _first = grant(acquire_all(&a, &three, t(0)).await);
    let _second = grant(acquire_all(&b, &three, t(0)).await);
    let w = wait(acquire_all(&a, &three, t(0)).await);
    assert!(
        matches!(
            w.reason,
            WaitReason::InFlightCeiling {
                in_flight: 2,
                ceiling: 2
            }
        ),
        "{w}"
    );
    assert_eq!(in_flight(&b, t(0)).await, (2, 2, 2));
}

async fn every_lease_of_a_request_never_released_expires(backend: Backend) {
    let config = GovernorConfig {
        ceiling: 1,
        ..GovernorConfig::default()
    };
    let test = "every_lease_of_a_request_never_released_expires";
    let Some((_db, a, b)) = SharedDb::two(backend, test, config).await else {
        return;
    };
    // Process A "dies" holding its permit: the release never runs.
    std::mem::forget(grant(acquire_all(&a, &both(1), t(0)).await));
    assert_eq!(in_flight(&b, t(119)).await, (1, 1, 1));
    assert_eq!(in_flight(&b, t(120)).await, (0, 0, 0));
    let p = grant(acquire_all(&b, &both(1), t(120)).await);
    p.release().await;
    assert_eq!(in_flight(&a, t(121)).await, (0, 0, 0));
}

async fn a_request_naming_no_bucket_is_refused_as_a_mistake(backend: Backend) {
    let test = "a_request_naming_no_bucket_is_refused_as_a_mistake";
    let Some((_db, a, _b)) = SharedDb::two(backend, test, GovernorConfig::default()).await else {
        return;
    };
    let outcome = a.acquire_all(&alice(), &[], KIND, t(0)).await;
    assert!(
        matches!(outcome, Err(GovernorError::NoBucket)),
        "{outcome:?}"
    );
}

/// A small deterministic generator, so a failing sequence can be replayed by its seed.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Random interleavings of requests over one to three buckets, readings, releases and time,
/// applied to the in-memory backend and to two processes on the database: every decision and
/// every snapshot must be the same, because both apply the same rule.
async fn decisions_over_several_buckets_match_the_in_memory_backend(backend: Backend) {
    let config = GovernorConfig {
        ceiling: 4,
        graphql_points: Some(PointsLimit::per_minute(40)),
        ..GovernorConfig::default()
    };
    const BUCKETS: [&str; 3] = ["requests", "complexity", "route"];
    for seed in [0x9e37_79b9_7f4a_7c15_u64, 42] {
        let test = "decisions_over_several_buckets_match_the_in_memory_backend";
        let options = SharedGovernorOptions {
            // Longer than any sequence: leases must not expire under the memory backend.
            lease_ttl: SignedDuration::from_hours(24 * 365),
            ..SharedGovernorOptions::default()
        };
        let Some((_db, a, b)) = SharedDb::two_with(backend, test, config.clone(), options).await
        else {
            return;
        };
        let processes = [a, b];
        let memory = MemoryQuotaState::new(config.clone()).expect("valid");
        let mut rng = XorShift(seed);
        let mut now = t(0);
        let mut held: Vec<(Permit, Permit)> = Vec::new();
        let (mut grants, mut waits) = (0, 0);
        for step in 0..120 {
            let context = format!("seed {seed:#x}, step {step}");
            match rng.below(10) {
                0..=3 => {
                    let asks: Vec<Ask> = (0..1 + rng.below(3))
                        .map(|_| {
                            let bucket = Bucket::new(BUCKETS[rng.below(3) as usize]);
                            (bucket, 1 + rng.below(6) as u32)
                        })
                        .collect();
                    let m = memory
                        .acquire_all_now(&alice(), &asks, KIND, now)
                        .expect("asks");
                    let process = &processes[rng.below(2) as usize];
                    match (m, acquire_all(process, &asks, now).await) {
                        (Acquire::Grant(m), Acquire::Grant(p)) => {
                            assert_eq!((m.cost(), m.also()), (p.cost(), p.also()), "{context}");
                            held.push((m, p));
                            grants += 1;
                        }
                        (Acquire::Wait(m), Acquire::Wait(p)) => {
                            assert_eq!(m, p, "{context}");
                            waits += 1;
                        }
                        (m, p) => panic!("{context}: memory {m:?}, database {p:?}"),
                    }
                }
                4..=6 if !held.is_empty() => {
                    let (m, p) = &held[rng.below(held.len() as u64) as usize];
                    let bucket = BUCKETS[rng.below(3) as usize];
                    let signal = reading(
                        bucket,
                        rng.below(200),
                        rng.below(5000),
                        t(rng.below(7200) as i64),
                    );
                    memory.observe_now(m, &signal, now);
                    let process = &processes[rng.below(2) as usize];
                    process.observe(p, &signal, now).await.expect("backend");
                }
                7..=8 if !held.is_empty() => {
                    let i = rng.below(held.len() as u64) as usize;
                    drop(held.swap_remove(i));
                    for process in &processes {
                        process.settled().await;
                    }
                }
                _ => now += SignedDuration::from_millis(rng.below(300_000) as i64),
            }
            let m = memory.snapshot_now(&alice(), now);
            let p = processes[step % 2]
                .snapshot(&alice(), now)
                .await
                .expect("backend");
            assert_eq!(m, p, "{context}");
            assert_eq!(p.in_flight as usize, held.len(), "{context}");
        }
        assert!(
            grants > 10 && waits > 5,
            "seed {seed:#x}: {grants} grants, {waits} waits"
        );
        drop(held);
        for process in &processes {
            process.settled().await;
        }
        let snapshot = processes[0].snapshot(&alice(), now).await.expect("backend");
        assert_eq!(snapshot.in_flight, 0);
        assert!(snapshot.buckets.iter().all(|b| b.state.in_flight == 0));
    }
}

/// LaunchDarkly's buckets carry no limit header: what the governor learns of them (the limit,
/// others' spend) is part of the stored state, so two processes on the database decide as one
/// process in memory does, and a learned limit survives the trip through the database.
async fn learned_limits_match_the_in_memory_backend(backend: Backend) {
    use headroom_core::signal::{LD_GLOBAL, Provider};
    let config = GovernorConfig {
        ceiling: 4,
        ..GovernorConfig::for_provider(Provider::LaunchDarkly)
    };
    let test = "learned_limits_match_the_in_memory_backend";
    let options = SharedGovernorOptions {
        lease_ttl: SignedDuration::from_hours(24),
        ..SharedGovernorOptions::default()
    };
    let Some((_db, a, b)) = SharedDb::two_with(backend, test, config.clone(), options).await else {
        return;
    };
    let processes = [a, b];
    let memory = MemoryQuotaState::new(config).expect("valid");
    let (global, route) = (
        Bucket::new(LD_GLOBAL),
        Bucket::new("route:GET /api/v2/members"),
    );
    let asks: Vec<Ask> = vec![(global.clone(), 1), (route.clone(), 1)];
    let (mut grants, mut waits) = (0, 0);
    // Four windows of 10 seconds; the account allows 100 a window, the route 6.
    for window in 0..4_i64 {
        let reset = t(10 * (window + 1));
        let mut left = (100_u64, 6_u64);
        for step in 0..8_i64 {
            let now = t(10 * window) + SignedDuration::from_millis(100 * (step + 1));
            let context = format!("window {window}, step {step}");
            let m = memory
                .acquire_all_now(&alice(), &asks, KIND, now)
                .expect("asks");
            let process = &processes[(step % 2) as usize];
            match (m, acquire_all(process, &asks, now).await) {
                (Acquire::Grant(m), Acquire::Grant(p)) => {
                    left = (left.0 - 1, left.1 - 1);
                    for (bucket, remaining) in [(&global, left.0), (&route, left.1)] {
                        let signal = RateLimitSignal {
                            resource: Some(bucket.clone()),
                            remaining: Some(remaining),
                            reset_at: Some(reset),
                            ..RateLimitSignal::default()
                        };
                        memory.observe_now(&m, &signal, now);
                        process.observe(&p, &signal, now).await.expect("backend");
                    }
                    drop(m);
                    p.release().await;
                    grants += 1;
                }
                (Acquire::Wait(m), Acquire::Wait(p)) => {
                    assert_eq!(m, p, "{context}");
                    waits += 1;
                }
                (m, p) => panic!("{context}: memory {m:?}, database {p:?}"),
            }
            let m = memory.snapshot_now(&alice(), now);
            let p = processes[(step as usize + 1) % 2]
                .snapshot(&alice(), now)
                .await
                .expect("backend");
            assert_eq!(m, p, "{context}");
        }
    }
    assert!(grants > 4 && waits > 4, "{grants} grants, {waits} waits");
    let snapshot = processes[0]
        .snapshot(&alice(), t(40))
        .await
        .expect("backend");
    let learned = |bucket: &Bucket| {
        snapshot
            .buckets
            .iter()
            .find(|b| b.state.bucket == *bucket)
            .map(|b| b.state.learned.limit)
    };
    assert_eq!(learned(&route), Some(6), "{snapshot:?}");
    assert_eq!(learned(&global), Some(100), "{snapshot:?}");
}

on_both!(a_request_over_two_buckets_is_granted_by_both_or_by_neither);
on_both!(one_permit_releases_every_bucket_it_holds);
on_both!(a_request_over_several_buckets_counts_once_against_the_ceiling);
on_both!(every_lease_of_a_request_never_released_expires);
on_both!(a_request_naming_no_bucket_is_refused_as_a_mistake);
on_both!(decisions_over_several_buckets_match_the_in_memory_backend);
on_both!(learned_limits_match_the_in_memory_backend);
