//! What the read endpoints cost on an SQLite store of 100,000 push events over 20,000 actors
//! and 5,000 repositories (a quarter of them enriched): building the status document, the
//! first page of the event list, a page deep behind a cursor, a filtered page, and one event
//! with its payload. `cargo bench -p headroom-server` prints the time per call.

#![allow(clippy::expect_used)]

#[path = "../../store/tests/common/push.rs"]
mod push;

use headroom_store::StoreRead as _;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use headroom_core::clock::Timestamp;
use headroom_github::feed::enrich::EnrichSettings;
use headroom_github::feed::poll::PollSettings;
use headroom_server::{Reporting, SchedulerSettings, StatusSettings};
use headroom_store::feed_report::{FeedReport, PushEventFilter};
use headroom_store::feed_state::{Enriched, EntityKind, FeedState, Lane};
use headroom_store::{EventOrigin, PushEventWrite, SqliteStore, Store};
use serde_json::json;

const EVENTS: u64 = 100_000;
const ACTORS: u64 = 20_000;
const REPOSITORIES: u64 = 5_000;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

#[allow(clippy::cast_possible_wrap)]
fn event(n: u64) -> PushEventWrite {
    // Two events per second: ties on occurred_at exercise the keyset's tie-break.
    push::push_event(
        50_000_000_000 + n,
        (n % ACTORS) as i64 + 1,
        (n % REPOSITORIES) as i64 + 1,
        t((n / 2) as i64),
        t((n / 2) as i64 + 5),
        EventOrigin::Feed,
    )
}

fn reads(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("bench.db");
    let store = runtime
        .block_on(SqliteStore::open(path.to_str().expect("utf-8")))
        .expect("open");
    runtime.block_on(async {
        let events: Vec<PushEventWrite> = (0..EVENTS).map(event).collect();
        for chunk in events.chunks(1_000) {
            let mut tx = store.begin().await.expect("begin");
            tx.write_push_events(chunk).await.expect("write");
            tx.commit().await.expect("commit");
        }
        // A quarter of each class reaches the contract.
        for (kind, total) in [
            (EntityKind::Actor, ACTORS),
            (EntityKind::Repository, REPOSITORIES),
        ] {
            let claimed = store
                .claim(
                    kind,
                    Lane::Batch,
                    u32::try_from(total / 4).expect("fits"),
                    t(60_000),
                    "bench",
                    t(70_000),
                )
                .await
                .expect("claim");
            for c in claimed {
                let item = Enriched {
                    name: c.name.clone(),
                    account_type: Some("User".into()),
                    owner_login: None,
                    owner_github_id: None,
                    fork: None,
                    archived: None,
                    default_branch: None,
                    github_created_at: None,
                    raw: json!({"id": c.github_id}),
                };
                store
                    .apply(kind, c.github_id, "bench", &item, t(60_001))
                    .await
                    .expect("apply");
            }
        }
    });
    let settings = StatusSettings {
        host: "api.github.com".into(),
        subject: Some("ip:outbound".into()),
        scheduler: SchedulerSettings::of(
            &PollSettings::default(),
            &EnrichSettings::default(),
            None,
            Reporting::default(),
        )
        .expect("defaults"),
    };
    let report: Arc<dyn FeedReport> = Arc::new(store.clone());
    let feed: Arc<dyn FeedState> = Arc::new(store.clone());
    let now = t(60_100);

    let mut group = c.benchmark_group("reads_sqlite_100k_events");
    group.sample_size(20);
    group.bench_function("status_document", |b| {
        b.iter(|| {
            runtime
                .block_on(headroom_server::status::build(
                    report.as_ref(),
                    feed.as_ref(),
                    &settings,
                    now,
                ))
                .expect("status")
        });
    });
    group.bench_function("first_page_25", |b| {
        b.iter(|| {
            runtime
                .block_on(report.push_events_page(PushEventFilter::default(), None, 26))
                .expect("page")
        });
    });
    let deep = runtime
        .block_on(report.push_events_page(PushEventFilter::default(), None, 50_000))
        .expect("page")
        .last()
        .expect("rows")
        .key();
    group.bench_function("page_50k_deep_25", |b| {
        b.iter(|| {
            runtime
                .block_on(report.push_events_page(PushEventFilter::default(), Some(&deep), 26))
                .expect("page")
        });
    });
    let by_actor = PushEventFilter {
        actor_id: Some(7),
        repository_id: None,
    };
    group.bench_function("actor_page_25", |b| {
        b.iter(|| {
            runtime
                .block_on(report.push_events_page(by_actor, None, 26))
                .expect("page")
        });
    });
    group.bench_function("one_event_with_payload", |b| {
        b.iter(|| {
            runtime
                .block_on(report.push_event_detail("50000050000"))
                .expect("event")
                .expect("present")
        });
    });
    group.finish();
    runtime.block_on(store.close());
}

criterion_group!(benches, reads);
criterion_main!(benches);
