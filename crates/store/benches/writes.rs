//! Write throughput on SQLite: pages of 100 PushEvents (one by one, each in its own
//! savepoint; and batched, a few multi-row statements per page), and pages of 100 issues with
//! their checkpoint, one transaction per page. `cargo bench -p
//! headroom-store` prints the time per page and events (rows) per second.

#![allow(clippy::expect_used)]

#[path = "../tests/common/push.rs"]
mod push;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use headroom_core::clock::Timestamp;
use headroom_store::records::{Issue, Repository};
use headroom_store::{
    CheckpointStatus, CheckpointUpdate, EventOrigin, NewSyncRun, PushEventWrite, Record,
};
use serde_json::json;

const PAGE: u64 = 100;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

#[allow(clippy::cast_possible_wrap)]
fn event(n: u64) -> PushEventWrite {
    push::push_event(
        50_000_000_000 + n,
        (n % 89) as i64 + 1,
        (n % 92) as i64 + 1,
        t(n as i64),
        t(n as i64 + 5),
        EventOrigin::Gharchive,
    )
}

fn writes(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("bench.db");
    let store = runtime
        .block_on(headroom_store::open(path.to_str().expect("UTF-8 path")))
        .expect("open");

    let mut group = c.benchmark_group("sqlite");
    group.throughput(Throughput::Elements(PAGE));
    let mut next = 0u64;
    group.bench_function("push_event_page_of_100", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let mut tx = store.begin().await.expect("begin");
                for _ in 0..PAGE {
                    tx.write_push_event(&event(next)).await.expect("write");
                    next += 1;
                }
                tx.commit().await.expect("commit");
            })
        })
    });

    group.bench_function("push_event_page_of_100_batched", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let page: Vec<PushEventWrite> = (next..next + PAGE).map(event).collect();
                next += PAGE;
                let mut tx = store.begin().await.expect("begin");
                tx.write_push_events(&page).await.expect("write");
                tx.commit().await.expect("commit");
            })
        })
    });

    let run = runtime
        .block_on(store.create_sync_run(&NewSyncRun {
            credential: None,
            kind: "org".into(),
            target: "acme".into(),
            key: headroom_core::QuotaKey::user("api.github.com", "alice"),
            requested_stages: None,
            created_at: t(0),
        }))
        .expect("run");
    runtime
        .block_on(store.write_page(
            &[Record::Repository(Repository {
                github_id: 1,
                node_id: None,
                full_name: "org1/repo1".into(),
                name: None,
                owner_login: None,
                owner_github_id: None,
                organization_id: None,
                description: None,
                visibility: None,
                fork: None,
                archived: None,
                default_branch: None,
                github_created_at: None,
                github_updated_at: None,
                pushed_at: None,
                raw: json!({}),
                collected_at: t(0),
            })],
            &checkpoint(run.id, None),
        ))
        .expect("repository");
    let mut number = 0i64;
    group.bench_function("issue_page_of_100_with_cursor", |b| {
        b.iter(|| {
            let page: Vec<Record> = (0..PAGE)
                .map(|_| {
                    number += 1;
                    Record::Issue(Issue {
                        repository_github_id: 1,
                        node_id: format!("I_{number}"),
                        github_id: Some(number),
                        number,
                        title: format!("Issue {number}"),
                        state: "OPEN".into(),
                        author_login: Some("alice".into()),
                        comments_count: Some(2),
                        github_created_at: Some(t(number)),
                        github_updated_at: Some(t(number)),
                        closed_at: None,
                        raw: json!({"number": number, "body": "x".repeat(200)}),
                        collected_at: t(number),
                    })
                })
                .collect();
            runtime
                .block_on(store.write_page(&page, &checkpoint(run.id, Some(number))))
                .expect("page");
        })
    });
    group.finish();
    runtime.block_on(store.close());
}

fn checkpoint(run: i64, cursor: Option<i64>) -> CheckpointUpdate {
    CheckpointUpdate {
        sync_run_id: run,
        stage: "issues".into(),
        scope: "org1/repo1".into(),
        status: CheckpointStatus::Running,
        page_cursor: cursor.map(|c| c.to_string()),
        pages_added: 1,
        rows_added: PAGE,
        detail: None,
        at: t(0),
    }
}

criterion_group!(benches, writes);
criterion_main!(benches);
