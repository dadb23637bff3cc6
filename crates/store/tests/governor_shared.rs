//! The governor's shared state backend on both databases: several `SharedQuotaState`s on
//! several pools of one SQLite file, or of one PostgreSQL database, stand for several
//! processes sharing one identity. The same behaviour as the in-memory backend where it
//! applies, plus leases that expire. Every test runs on both (`NAME::sqlite`, `NAME::postgres`).

#![allow(clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::PgDatabase;
use common::governor::{grant, reading, t, wait};
use headroom_core::clock::{ManualClock, SignedDuration, Timestamp};
use headroom_core::governor::{
    Acquire, GovernorConfig, Headroom, Permit, PointsLimit, QuotaState, Wait, WaitReason,
};
use headroom_core::signal::{LimitReason, RateLimitSignal};
use headroom_core::{Bucket, Governor, QuotaKey, RequestKind};
use headroom_store::{ProcessMark, SharedGovernorOptions, SharedQuotaState, SqliteStore};

fn alice() -> QuotaKey {
    QuotaKey::user("api.github.com", "alice")
}

/// Which database the processes share.
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
        pool_size: u32,
        config: GovernorConfig,
        options: SharedGovernorOptions,
    ) -> SharedQuotaState {
        self.try_process(pool_size, config, options)
            .await
            .expect("valid configuration")
    }

    async fn try_process(
        &self,
        pool_size: u32,
        config: GovernorConfig,
        options: SharedGovernorOptions,
    ) -> Result<SharedQuotaState, headroom_core::governor::ConfigError> {
        match self {
            SharedDb::Sqlite(file) => {
                let store = SqliteStore::open(&file.path()).await.expect("open SQLite");
                SharedQuotaState::sqlite(store.pool().clone(), config, options)
            }
            SharedDb::Postgres(db) => {
                let store = common::pg_store(db, pool_size).await;
                SharedQuotaState::postgres(store.pool().clone(), config, options)
            }
        }
    }
}

/// Each test, once per backend: `NAME::sqlite` and `NAME::postgres`.
macro_rules! on_both {
    ($test:ident, $($flavor:tt)*) => {
        mod $test {
            #[tokio::test($($flavor)*)]
            async fn sqlite() {
                super::$test(super::Backend::Sqlite).await;
            }
            #[tokio::test($($flavor)*)]
            async fn postgres() {
                super::$test(super::Backend::Postgres).await;
            }
        }
    };
}

/// A fresh database and `n` processes on it.
struct Cluster {
    processes: Vec<Arc<SharedQuotaState>>,
    _db: SharedDb,
}

async fn cluster(
    backend: Backend,
    test: &str,
    n: usize,
    config: GovernorConfig,
) -> Option<Cluster> {
    let db = SharedDb::create(backend, test).await?;
    let mut processes = Vec::new();
    for i in 0..n {
        let options = SharedGovernorOptions {
            holder: format!("process-{i}"),
            ..SharedGovernorOptions::default()
        };
        processes.push(Arc::new(db.process(6, config.clone(), options).await));
    }
    Some(Cluster { processes, _db: db })
}

async fn acquire(s: &SharedQuotaState, bucket: &Bucket, now: Timestamp) -> Acquire {
    s.acquire(&alice(), bucket, 1, RequestKind::REST_READ, now)
        .await
        .expect("backend")
}

async fn in_flight(s: &SharedQuotaState, now: Timestamp) -> u32 {
    s.snapshot(&alice(), now).await.expect("backend").in_flight
}

/// 25 concurrent acquires, alternating between the processes; the permits are kept.
async fn storm(c: &Cluster, now: Timestamp) -> (Vec<Permit>, Vec<Wait>) {
    let mut tasks = Vec::new();
    for i in 0..25 {
        let s = Arc::clone(&c.processes[i % c.processes.len()]);
        tasks.push(tokio::spawn(async move {
            s.acquire(&alice(), &Bucket::core(), 1, RequestKind::REST_READ, now)
                .await
                .expect("backend")
        }));
    }
    let mut permits = Vec::new();
    let mut waits = Vec::new();
    for task in tasks {
        match task.await.expect("task") {
            Acquire::Grant(p) => permits.push(p),
            Acquire::Wait(w) => waits.push(w),
        }
    }
    (permits, waits)
}

async fn two_processes_never_exceed_the_ceiling_together(backend: Backend) {
    let Some(c) = cluster(
        backend,
        "two_processes_never_exceed_the_ceiling_together",
        2,
        GovernorConfig::default(),
    )
    .await
    else {
        return;
    };
    let (permits, waits) = storm(&c, t(0)).await;
    assert_eq!(permits.len(), 10, "the ceiling, across both processes");
    assert_eq!(waits.len(), 15);
    assert!(
        waits
            .iter()
            .all(|w| matches!(w.reason, WaitReason::InFlightCeiling { ceiling: 10, .. }))
    );
    for p in &c.processes {
        assert_eq!(in_flight(p, t(0)).await, 10);
    }
    drop(permits);
    for p in &c.processes {
        p.settled().await;
    }
    assert_eq!(in_flight(&c.processes[1], t(0)).await, 0);
}

async fn grants_stop_exactly_at_the_margin_across_processes(backend: Backend) {
    let Some(c) = cluster(
        backend,
        "grants_stop_exactly_at_the_margin_across_processes",
        2,
        GovernorConfig::default(),
    )
    .await
    else {
        return;
    };
    let first = grant(acquire(&c.processes[0], &Bucket::core(), t(0)).await);
    c.processes[0]
        .observe(&first, &reading("core", 15, 4985, t(1800)), t(0))
        .await
        .expect("observe");
    drop(first);
    c.processes[0].settled().await;
    // 15 remaining: a grant needs 1 × (in flight + 1 + 10), so exactly 5 go out.
    let (permits, waits) = storm(&c, t(1)).await;
    assert_eq!(permits.len(), 5);
    assert!(
        waits
            .iter()
            .all(|w| matches!(w.reason, WaitReason::Exhausted { .. }) && w.until == t(1860)),
        "{waits:?}"
    );
}

async fn a_lease_that_is_never_released_expires(backend: Backend) {
    let config = GovernorConfig {
        ceiling: 1,
        ..GovernorConfig::default()
    };
    let Some(c) = cluster(backend, "a_lease_that_is_never_released_expires", 2, config).await
    else {
        return;
    };
    let (a, b) = (&c.processes[0], &c.processes[1]);
    let ttl = a.options().lease_ttl;
    assert_eq!(ttl, SignedDuration::from_secs(120));
    // Process A "dies" holding its permit: the release never runs.
    std::mem::forget(grant(acquire(a, &Bucket::core(), t(0)).await));
    assert!(matches!(
        wait(acquire(b, &Bucket::core(), t(60)).await).reason,
        WaitReason::InFlightCeiling { in_flight: 1, .. }
    ));
    assert_eq!(in_flight(b, t(119)).await, 1);
    // Once the lease expires, the slot is free again.
    assert_eq!(in_flight(b, t(120)).await, 0);
    let p = grant(acquire(b, &Bucket::core(), t(120)).await);
    drop(p);
    b.settled().await;
    assert_eq!(in_flight(a, t(121)).await, 0);
}

/// A process killed holding a permit leaves a lease that would block its restart for the
/// lease's TTL. A process that provably no longer runs (same boot and pid namespace, no such
/// pid with that start time) has its leases freed by the next state before its first decision;
/// a process still alive keeps its own, and other processes' cached states see the freed slot.
#[cfg(target_os = "linux")]
async fn the_leases_of_a_process_that_is_gone_are_freed_by_the_next_one(backend: Backend) {
    let config = GovernorConfig {
        ceiling: 1,
        ..GovernorConfig::default()
    };
    let test = "the_leases_of_a_process_that_is_gone_are_freed_by_the_next_one";
    let Some(db) = SharedDb::create(backend, test).await else {
        return;
    };
    let me = ProcessMark::current().expect("Linux has /proc");
    let mut child = std::process::Command::new("true").spawn().expect("spawn");
    let dead_pid = child.id();
    child.wait().expect("wait");
    let holder = |mark: &ProcessMark| SharedGovernorOptions {
        holder: mark.to_string(),
        ..SharedGovernorOptions::default()
    };
    let dead = ProcessMark {
        pid: dead_pid,
        ..me.clone()
    };
    let watcher = db.process(2, config.clone(), holder(&me)).await;
    drop(grant(acquire(&watcher, &Bucket::core(), t(0)).await));
    watcher.settled().await;

    // The killed process: its permit is never released.
    let killed = db.process(2, config.clone(), holder(&dead)).await;
    std::mem::forget(grant(acquire(&killed, &Bucket::core(), t(1)).await));
    assert!(matches!(
        wait(acquire(&watcher, &Bucket::core(), t(2)).await).reason,
        WaitReason::InFlightCeiling { in_flight: 1, .. }
    ));
    // Its restart, long before the lease's TTL: the ghost's slot is free.
    let restarted = db.process(2, config.clone(), holder(&me)).await;
    let p = grant(acquire(&restarted, &Bucket::core(), t(3)).await);
    // A live holder's lease is not freed by a newcomer.
    let newcomer = db.process(2, config.clone(), holder(&me)).await;
    assert!(matches!(
        wait(acquire(&newcomer, &Bucket::core(), t(4)).await).reason,
        WaitReason::InFlightCeiling { in_flight: 1, .. }
    ));
    drop(p);
    restarted.settled().await;
    // The process that had decided before the ghost was freed sees the slot too.
    grant(acquire(&watcher, &Bucket::core(), t(5)).await);
}

async fn a_dropped_permit_frees_its_slot_for_the_other_process(backend: Backend) {
    let config = GovernorConfig {
        ceiling: 1,
        ..GovernorConfig::default()
    };
    let Some(c) = cluster(
        backend,
        "a_dropped_permit_frees_its_slot_for_the_other_process",
        2,
        config,
    )
    .await
    else {
        return;
    };
    let (a, b) = (&c.processes[0], &c.processes[1]);
    let p = grant(acquire(a, &Bucket::core(), t(0)).await);
    wait(acquire(b, &Bucket::graphql(), t(0)).await);
    drop(p);
    a.settled().await;
    grant(acquire(b, &Bucket::graphql(), t(0)).await);
}

/// A permit released (rather than dropped) is free in the shared state when `release`
/// returns: the other process's next decision counts it as finished, with nothing to wait
/// for. A release cut short still lands.
async fn a_released_permit_is_free_for_every_process_when_release_returns(backend: Backend) {
    let config = GovernorConfig {
        ceiling: 1,
        ..GovernorConfig::default()
    };
    let Some(c) = cluster(
        backend,
        "a_released_permit_is_free_for_every_process_when_release_returns",
        2,
        config,
    )
    .await
    else {
        return;
    };
    let (a, b) = (&c.processes[0], &c.processes[1]);
    for _ in 0..5 {
        let p = grant(acquire(a, &Bucket::core(), t(0)).await);
        wait(acquire(b, &Bucket::core(), t(0)).await);
        p.release().await;
        assert_eq!(in_flight(b, t(0)).await, 0);
        grant(acquire(b, &Bucket::core(), t(0)).await)
            .release()
            .await;
    }
    // The caller stops waiting after the first poll: the delete goes on by itself.
    let p = grant(acquire(a, &Bucket::core(), t(0)).await);
    let mut release = Box::pin(p.release());
    std::future::poll_fn(|cx| {
        let _ = release.as_mut().poll(cx);
        std::task::Poll::Ready(())
    })
    .await;
    drop(release);
    a.settled().await;
    assert_eq!(in_flight(b, t(0)).await, 0);
}

async fn readings_never_move_state_backwards_whoever_observes(backend: Backend) {
    let Some(c) = cluster(
        backend,
        "readings_never_move_state_backwards_whoever_observes",
        2,
        GovernorConfig::default(),
    )
    .await
    else {
        return;
    };
    let (a, b) = (&c.processes[0], &c.processes[1]);
    let pa = grant(acquire(a, &Bucket::core(), t(0)).await);
    let pb = grant(acquire(b, &Bucket::core(), t(0)).await);
    a.observe(&pa, &reading("core", 4980, 20, t(3600)), t(1))
        .await
        .expect("observe");
    // B's response was older (same window, less used) and arrives later: ignored.
    b.observe(&pb, &reading("core", 4990, 10, t(3600)), t(2))
        .await
        .expect("observe");
    // A reading from the previous window: ignored.
    b.observe(&pb, &reading("core", 1, 4999, t(0)), t(3))
        .await
        .expect("observe");
    let snap = b.snapshot(&alice(), t(4)).await.expect("snapshot");
    let core = &snap.buckets[0].state;
    assert_eq!(
        (core.remaining, core.used, core.reset_at),
        (Some(4980), Some(20), Some(t(3600)))
    );
    // A newer window replaces it.
    b.observe(&pb, &reading("core", 4999, 1, t(7200)), t(3700))
        .await
        .expect("observe");
    let core = a
        .snapshot(&alice(), t(3700))
        .await
        .expect("snapshot")
        .buckets[0]
        .state
        .clone();
    assert_eq!((core.remaining, core.reset_at), (Some(4999), Some(t(7200))));
}

async fn the_response_names_the_bucket_and_one_bucket_never_closes_another(backend: Backend) {
    let Some(c) = cluster(
        backend,
        "the_response_names_the_bucket",
        1,
        GovernorConfig::default(),
    )
    .await
    else {
        return;
    };
    let s = &c.processes[0];
    let p = grant(acquire(s, &Bucket::core(), t(0)).await);
    s.observe(&p, &reading("search", 0, 30, t(60)), t(1))
        .await
        .expect("observe");
    drop(p);
    s.settled().await;
    assert!(matches!(
        wait(acquire(s, &Bucket::search(), t(2)).await).reason,
        WaitReason::Exhausted { .. }
    ));
    grant(acquire(s, &Bucket::core(), t(2)).await);
    grant(
        s.acquire(
            &alice(),
            &Bucket::graphql(),
            1,
            RequestKind::GRAPHQL_QUERY,
            t(2),
        )
        .await
        .expect("backend"),
    );
}

async fn a_secondary_limit_blocks_every_process_then_escalates(backend: Backend) {
    let Some(c) = cluster(
        backend,
        "a_secondary_limit_blocks_every_process",
        2,
        GovernorConfig::default(),
    )
    .await
    else {
        return;
    };
    let (a, b) = (&c.processes[0], &c.processes[1]);
    let secondary = |retry_after: Option<i64>| RateLimitSignal {
        reason: Some(LimitReason::Secondary),
        retry_after: retry_after.map(SignedDuration::from_secs),
        ..RateLimitSignal::default()
    };
    let p = grant(acquire(a, &Bucket::core(), t(0)).await);
    a.observe(&p, &secondary(Some(30)), t(0))
        .await
        .expect("observe");
    let w = wait(acquire(b, &Bucket::core(), t(10)).await);
    assert_eq!(w.until, t(30));
    assert!(matches!(
        w.reason,
        WaitReason::SecondaryBlock { strikes: 1, .. }
    ));
    // Without retry-after: the second strike waits 120 s.
    let p = grant(acquire(b, &Bucket::core(), t(30)).await);
    b.observe(&p, &secondary(None), t(30))
        .await
        .expect("observe");
    assert_eq!(wait(acquire(a, &Bucket::core(), t(31)).await).until, t(150));
    // A success resets the escalation.
    let p = grant(acquire(a, &Bucket::core(), t(150)).await);
    a.observe(&p, &reading("core", 4000, 1000, t(900)), t(150))
        .await
        .expect("observe");
    a.observe(&p, &secondary(None), t(150))
        .await
        .expect("observe");
    assert_eq!(
        wait(acquire(b, &Bucket::core(), t(151)).await).until,
        t(210)
    );
}

async fn headroom_applies_the_rule_without_reserving(backend: Backend) {
    let Some(c) = cluster(
        backend,
        "headroom_applies_the_rule_without_reserving",
        1,
        GovernorConfig::default(),
    )
    .await
    else {
        return;
    };
    let s = &c.processes[0];
    for _ in 0..20 {
        assert_eq!(
            s.headroom(&alice(), &Bucket::core(), 1, RequestKind::REST_READ, t(0))
                .await
                .expect("backend"),
            Headroom::Open
        );
    }
    assert_eq!(in_flight(s, t(0)).await, 0);
    let p = grant(acquire(s, &Bucket::core(), t(0)).await);
    s.observe(&p, &reading("core", 5, 4995, t(100)), t(0))
        .await
        .expect("observe");
    let verdict = s
        .headroom(&alice(), &Bucket::core(), 1, RequestKind::REST_READ, t(1))
        .await
        .expect("backend");
    assert!(!verdict.is_open());
    assert_eq!(in_flight(s, t(1)).await, 1);
}

async fn snapshots_count_in_flight_and_waiting_and_identities_are_listed(backend: Backend) {
    let Some(c) = cluster(
        backend,
        "snapshots_count_in_flight_and_waiting",
        1,
        GovernorConfig::default(),
    )
    .await
    else {
        return;
    };
    let s = &c.processes[0];
    let a = grant(acquire(s, &Bucket::core(), t(0)).await);
    let b = grant(acquire(s, &Bucket::core(), t(0)).await);
    let ticket = s.wait_ticket(&alice(), &Bucket::core());
    let ticket2 = s.wait_ticket(&alice(), &Bucket::search());
    let snap = s.snapshot(&alice(), t(0)).await.expect("snapshot");
    let by_name = |name: &str| {
        snap.buckets
            .iter()
            .find(|b| b.state.bucket.as_str() == name)
            .map(|b| (b.state.in_flight, b.state.waiting))
    };
    assert_eq!(by_name("core"), Some((2, 1)));
    assert_eq!(by_name("search"), Some((0, 1)));
    assert_eq!(snap.rest_points_used, 2);
    drop((a, b, ticket, ticket2));
    s.settled().await;
    let snap = s.snapshot(&alice(), t(0)).await.expect("snapshot");
    assert!(
        snap.buckets
            .iter()
            .all(|b| b.state.in_flight == 0 && b.state.waiting == 0)
    );
    let bob = QuotaKey::user("api.github.com", "bob");
    drop(grant(
        s.acquire(&bob, &Bucket::core(), 1, RequestKind::REST_READ, t(0))
            .await
            .expect("backend"),
    ));
    assert_eq!(
        s.identities().await.expect("identities"),
        vec![alice(), bob]
    );
}

async fn the_points_limiter_is_shared_between_processes(backend: Backend) {
    let config = GovernorConfig {
        rest_points: Some(PointsLimit::per_minute(20)),
        ..GovernorConfig::default()
    };
    let Some(c) = cluster(
        backend,
        "the_points_limiter_is_shared_between_processes",
        2,
        config,
    )
    .await
    else {
        return;
    };
    for i in 0..20 {
        let s = &c.processes[i % 2];
        drop(grant(acquire(s, &Bucket::core(), t(0)).await));
    }
    assert!(matches!(
        wait(acquire(&c.processes[0], &Bucket::core(), t(1)).await).reason,
        WaitReason::LocalPoints { .. }
    ));
    assert!(matches!(
        wait(acquire(&c.processes[1], &Bucket::core(), t(1)).await).reason,
        WaitReason::LocalPoints { .. }
    ));
    for p in &c.processes {
        p.settled().await;
    }
}

async fn the_async_governor_runs_on_the_shared_backend(backend: Backend) {
    let Some(c) = cluster(
        backend,
        "the_async_governor_runs_on_the_shared_backend",
        1,
        GovernorConfig::default(),
    )
    .await
    else {
        return;
    };
    let clock = ManualClock::new(t(0));
    let state: Arc<dyn QuotaState> = c.processes[0].clone();
    let governor = Governor::new(state, Arc::new(clock.clone()));
    let key = alice();
    let core = Bucket::core();
    let Acquire::Grant(p) = governor
        .acquire(&key, &core, 1, RequestKind::REST_READ)
        .await
        .expect("backend")
    else {
        panic!("expected a grant");
    };
    governor
        .observe(&p, &reading("core", 3, 4997, t(600)))
        .await
        .expect("backend");
    drop(p);
    c.processes[0].settled().await;
    let Headroom::Closed(w) = governor
        .headroom(&key, &core, 1, RequestKind::REST_READ)
        .await
        .expect("backend")
    else {
        panic!("expected closed");
    };
    assert_eq!(w.until, t(660));
    clock.advance(SignedDuration::from_secs(600));
    assert!(
        governor
            .headroom(&key, &core, 1, RequestKind::REST_READ)
            .await
            .expect("backend")
            .is_open()
    );
}

async fn invalid_settings_are_refused_by_name(backend: Backend) {
    let Some(db) = SharedDb::create(backend, "invalid_settings_are_refused_by_name").await else {
        return;
    };
    let bad_ttl = db
        .try_process(
            1,
            GovernorConfig::default(),
            SharedGovernorOptions {
                lease_ttl: SignedDuration::ZERO,
                ..SharedGovernorOptions::default()
            },
        )
        .await;
    let message = bad_ttl.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("lease_ttl"), "{message}");
    let bad_config = db
        .try_process(
            1,
            GovernorConfig {
                ceiling: 0,
                ..GovernorConfig::default()
            },
            SharedGovernorOptions::default(),
        )
        .await;
    let message = bad_config.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("ceiling"), "{message}");
}

/// A small deterministic generator, so a failing sequence can be replayed by its seed.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The same random interleavings of acquire, observe, drop and time passing, applied to the
/// in-memory backend and to two PostgreSQL "processes": every decision and every snapshot must
/// be the same, because both apply the same rule.
async fn decisions_match_the_in_memory_backend_under_random_interleavings(backend: Backend) {
    use headroom_core::governor::MemoryQuotaState;

    let config = GovernorConfig {
        ceiling: 4,
        rest_points: Some(PointsLimit::per_minute(40)),
        ..GovernorConfig::default()
    };
    const BUCKETS: [&str; 3] = ["core", "graphql", "search"];
    for seed in [0x9e37_79b9_7f4a_7c15_u64, 42, 7_777_777] {
        let Some(db) = SharedDb::create(backend, "decisions_match_the_in_memory_backend").await
        else {
            return;
        };
        let mut processes = Vec::new();
        for _ in 0..2 {
            let options = SharedGovernorOptions {
                // Longer than any sequence: leases must not expire under the memory backend.
                lease_ttl: SignedDuration::from_hours(24 * 365),
                ..SharedGovernorOptions::default()
            };
            processes.push(db.process(3, config.clone(), options).await);
        }
        let memory = MemoryQuotaState::new(config.clone()).expect("valid");
        let mut rng = XorShift(seed);
        let mut now = t(0);
        let mut held: Vec<(Permit, Permit)> = Vec::new();
        let (mut grants, mut waits) = (0, 0);
        for step in 0..150 {
            let context = format!("seed {seed:#x}, step {step}");
            match rng.below(10) {
                0..=3 => {
                    let bucket = Bucket::new(BUCKETS[rng.below(3) as usize]);
                    let estimate = 1 + rng.below(6) as u32;
                    let kind = if rng.below(2) == 0 {
                        RequestKind::REST_READ
                    } else {
                        RequestKind::GRAPHQL_QUERY
                    };
                    let process = &processes[rng.below(2) as usize];
                    let m = memory.acquire_now(&alice(), &bucket, estimate, kind, now);
                    let p = process
                        .acquire(&alice(), &bucket, estimate, kind, now)
                        .await
                        .expect("backend");
                    match (m, p) {
                        (Acquire::Grant(m), Acquire::Grant(p)) => {
                            assert_eq!(m.cost(), p.cost(), "{context}");
                            held.push((m, p));
                            grants += 1;
                        }
                        (Acquire::Wait(m), Acquire::Wait(p)) => {
                            assert_eq!(m, p, "{context}");
                            waits += 1;
                        }
                        (m, p) => panic!("{context}: memory {m:?}, postgres {p:?}"),
                    }
                }
                4..=6 => {
                    if !held.is_empty() {
                        let i = rng.below(held.len() as u64) as usize;
                        let (m, p) = &held[i];
                        let remaining = rng.below(300);
                        let mut signal = reading(
                            m.bucket().as_str(),
                            remaining,
                            rng.below(5000),
                            t(rng.below(7200) as i64),
                        );
                        if rng.below(3) == 0 {
                            signal.cost = Some(1 + rng.below(20));
                        }
                        if rng.below(12) == 0 {
                            signal.reason = Some(LimitReason::Secondary);
                        }
                        memory.observe_now(m, &signal, now);
                        processes[rng.below(2) as usize]
                            .observe(p, &signal, now)
                            .await
                            .expect("backend");
                    }
                }
                7..=8 => {
                    if !held.is_empty() {
                        let i = rng.below(held.len() as u64) as usize;
                        drop(held.swap_remove(i));
                        for process in &processes {
                            process.settled().await;
                        }
                    }
                }
                _ => now += SignedDuration::from_millis(rng.below(400_000) as i64),
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
            grants > 10 && waits > 10,
            "seed {seed:#x}: {grants} grants, {waits} waits"
        );
        drop(held);
        for process in &processes {
            process.settled().await;
        }
        assert_eq!(
            processes[0]
                .snapshot(&alice(), now)
                .await
                .expect("backend")
                .in_flight,
            0
        );
    }
}

on_both!(
    two_processes_never_exceed_the_ceiling_together,
    flavor = "multi_thread",
    worker_threads = 2
);
on_both!(
    grants_stop_exactly_at_the_margin_across_processes,
    flavor = "multi_thread",
    worker_threads = 2
);
on_both!(a_lease_that_is_never_released_expires,);
#[cfg(target_os = "linux")]
on_both!(the_leases_of_a_process_that_is_gone_are_freed_by_the_next_one,);
on_both!(a_dropped_permit_frees_its_slot_for_the_other_process,);
on_both!(a_released_permit_is_free_for_every_process_when_release_returns,);
on_both!(readings_never_move_state_backwards_whoever_observes,);
on_both!(the_response_names_the_bucket_and_one_bucket_never_closes_another,);
on_both!(a_secondary_limit_blocks_every_process_then_escalates,);
on_both!(headroom_applies_the_rule_without_reserving,);
on_both!(snapshots_count_in_flight_and_waiting_and_identities_are_listed,);
on_both!(the_points_limiter_is_shared_between_processes,);
on_both!(the_async_governor_runs_on_the_shared_backend,);
on_both!(invalid_settings_are_refused_by_name,);
on_both!(decisions_match_the_in_memory_backend_under_random_interleavings,);
