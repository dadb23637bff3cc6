//! The governor's PostgreSQL state backend: two `PgQuotaState`s on two pools stand for two
//! processes sharing one identity. The same behaviour as the in-memory backend where it
//! applies, plus leases that expire.

#![allow(clippy::expect_used)]

mod common;

use headroom_store::StoreRead as _;
use std::sync::Arc;

use common::PgDatabase;
use headroom_core::clock::{ManualClock, SignedDuration, Timestamp};
use headroom_core::governor::{
    Acquire, GovernorConfig, Headroom, Permit, PointsLimit, QuotaState, Wait, WaitReason,
};
use headroom_core::signal::{LimitReason, RateLimitSignal};
use headroom_core::{Bucket, Governor, QuotaKey, RequestKind};
use headroom_store::{PgGovernorOptions, PgQuotaState};

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

fn alice() -> QuotaKey {
    QuotaKey::user("api.github.com", "alice")
}

fn grant(outcome: Acquire) -> Permit {
    match outcome {
        Acquire::Grant(p) => p,
        Acquire::Wait(w) => panic!("expected a grant, got a wait: {w}"),
    }
}

fn wait(outcome: Acquire) -> Wait {
    match outcome {
        Acquire::Wait(w) => w,
        Acquire::Grant(p) => panic!("expected a wait, got {p:?}"),
    }
}

fn reading(bucket: &str, remaining: u64, used: u64, reset: Timestamp) -> RateLimitSignal {
    RateLimitSignal {
        resource: Some(Bucket::new(bucket)),
        limit: Some(remaining + used),
        remaining: Some(remaining),
        used: Some(used),
        reset_at: Some(reset),
        ..RateLimitSignal::default()
    }
}

/// A fresh database and `n` processes on it.
struct Cluster {
    processes: Vec<Arc<PgQuotaState>>,
    _db: PgDatabase,
}

async fn cluster(test: &str, n: usize, config: GovernorConfig) -> Option<Cluster> {
    let admin = common::admin_url(test)?;
    let db = PgDatabase::create(&admin).await;
    let mut processes = Vec::new();
    for i in 0..n {
        let store = common::pg_store(&db, 6).await;
        let options = PgGovernorOptions {
            holder: format!("process-{i}"),
            ..PgGovernorOptions::default()
        };
        let state = PgQuotaState::new(store.pool().clone(), config.clone(), options)
            .expect("valid configuration");
        processes.push(Arc::new(state));
    }
    Some(Cluster { processes, _db: db })
}

async fn acquire(s: &PgQuotaState, bucket: &Bucket, now: Timestamp) -> Acquire {
    s.acquire(&alice(), bucket, 1, RequestKind::REST_READ, now)
        .await
        .expect("backend")
}

async fn in_flight(s: &PgQuotaState, now: Timestamp) -> u32 {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_never_exceed_the_ceiling_together() {
    let Some(c) = cluster(
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grants_stop_exactly_at_the_margin_across_processes() {
    let Some(c) = cluster(
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

#[tokio::test]
async fn a_lease_that_is_never_released_expires() {
    let config = GovernorConfig {
        ceiling: 1,
        ..GovernorConfig::default()
    };
    let Some(c) = cluster("a_lease_that_is_never_released_expires", 2, config).await else {
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

#[tokio::test]
async fn a_dropped_permit_frees_its_slot_for_the_other_process() {
    let config = GovernorConfig {
        ceiling: 1,
        ..GovernorConfig::default()
    };
    let Some(c) = cluster(
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

#[tokio::test]
async fn readings_never_move_state_backwards_whoever_observes() {
    let Some(c) = cluster(
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

#[tokio::test]
async fn the_response_names_the_bucket_and_one_bucket_never_closes_another() {
    let Some(c) = cluster(
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

#[tokio::test]
async fn a_secondary_limit_blocks_every_process_then_escalates() {
    let Some(c) = cluster(
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

#[tokio::test]
async fn headroom_applies_the_rule_without_reserving() {
    let Some(c) = cluster(
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

#[tokio::test]
async fn snapshots_count_in_flight_and_waiting_and_identities_are_listed() {
    let Some(c) = cluster(
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

#[tokio::test]
async fn the_points_limiter_is_shared_between_processes() {
    let config = GovernorConfig {
        rest_points: Some(PointsLimit::per_minute(20)),
        ..GovernorConfig::default()
    };
    let Some(c) = cluster("the_points_limiter_is_shared_between_processes", 2, config).await else {
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

#[tokio::test]
async fn the_async_governor_runs_on_the_postgres_backend() {
    let Some(c) = cluster(
        "the_async_governor_runs_on_the_postgres_backend",
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

#[tokio::test]
async fn invalid_settings_are_refused_by_name() {
    let Some(admin) = common::admin_url("invalid_settings_are_refused_by_name") else {
        return;
    };
    let db = PgDatabase::create(&admin).await;
    let store = common::pg_store(&db, 1).await;
    let bad_ttl = PgQuotaState::new(
        store.pool().clone(),
        GovernorConfig::default(),
        PgGovernorOptions {
            lease_ttl: SignedDuration::ZERO,
            ..PgGovernorOptions::default()
        },
    );
    let message = bad_ttl.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("lease_ttl"), "{message}");
    let bad_config = PgQuotaState::new(
        store.pool().clone(),
        GovernorConfig {
            ceiling: 0,
            ..GovernorConfig::default()
        },
        PgGovernorOptions::default(),
    );
    let message = bad_config.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("ceiling"), "{message}");
    store.close().await;
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
#[tokio::test]
async fn decisions_match_the_in_memory_backend_under_random_interleavings() {
    use headroom_core::governor::MemoryQuotaState;

    let config = GovernorConfig {
        ceiling: 4,
        rest_points: Some(PointsLimit::per_minute(40)),
        ..GovernorConfig::default()
    };
    let Some(admin) = common::admin_url("decisions_match_the_in_memory_backend") else {
        return;
    };
    const BUCKETS: [&str; 3] = ["core", "graphql", "search"];
    for seed in [0x9e37_79b9_7f4a_7c15_u64, 42, 7_777_777] {
        let db = PgDatabase::create(&admin).await;
        let mut processes = Vec::new();
        for _ in 0..2 {
            let store = common::pg_store(&db, 3).await;
            let options = PgGovernorOptions {
                // Longer than any sequence: leases must not expire under the memory backend.
                lease_ttl: SignedDuration::from_hours(24 * 365),
                ..PgGovernorOptions::default()
            };
            processes.push(
                PgQuotaState::new(store.pool().clone(), config.clone(), options).expect("valid"),
            );
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
