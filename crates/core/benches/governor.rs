//! Governor throughput: uncontended acquire + observe (+ the permit's drop) pairs on one
//! core, against the in-memory state. `cargo bench -p headroom-core` prints the time per pair
//! and the pairs per second.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_core::governor::{Acquire, GovernorConfig, MemoryQuotaState};
use headroom_core::signal::RateLimitSignal;
use headroom_core::{Bucket, QuotaKey, RequestKind};

fn acquire_observe(c: &mut Criterion) {
    // Points limiters off: a real minute of 900 points would turn the benchmark into a
    // benchmark of waits. They are measured separately below.
    let config = GovernorConfig {
        rest_points: None,
        graphql_points: None,
        ..GovernorConfig::default()
    };
    let state = MemoryQuotaState::new(config).expect("valid config");
    let key = QuotaKey::user("api.github.com", "alice");
    let core = Bucket::core();
    let now = Timestamp::from_second(1_800_000_000).expect("valid");
    let reset = now + SignedDuration::from_secs(3600);
    let mut used = 0u64;

    let mut group = c.benchmark_group("governor");
    group.throughput(Throughput::Elements(1));
    group.bench_function("acquire_observe_pair", |b| {
        b.iter(|| {
            used = (used + 1) % 4000;
            let signal = RateLimitSignal {
                resource: Some(core.clone()),
                limit: Some(5000),
                remaining: Some(5000 - used),
                used: Some(used),
                reset_at: Some(reset),
                ..RateLimitSignal::default()
            };
            match state.acquire_now(&key, &core, 1, RequestKind::REST_READ, now) {
                Acquire::Grant(permit) => {
                    state.observe_now(&permit, black_box(&signal), now);
                    drop(permit);
                }
                Acquire::Wait(w) => panic!("unexpected wait: {w}"),
            }
        });
    });

    let limited = MemoryQuotaState::new(GovernorConfig::default()).expect("valid config");
    let mut tick = 0i64;
    group.bench_function("acquire_release_with_points_limiter", |b| {
        b.iter(|| {
            // Spread requests at 10/s so the 900-point minute never fills.
            tick += 100;
            let at = now + SignedDuration::from_millis(tick);
            match limited.acquire_now(&key, &core, 1, RequestKind::REST_READ, at) {
                Acquire::Grant(permit) => drop(black_box(permit)),
                Acquire::Wait(w) => panic!("unexpected wait: {w}"),
            }
        });
    });
    group.finish();
}

criterion_group!(benches, acquire_observe);
criterion_main!(benches);
