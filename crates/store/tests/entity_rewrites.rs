//! On PostgreSQL an entity seen again is rewritten in place: its new version stays on its
//! page as a heap-only tuple (HOT), adding nothing to the table's indexes (migration 0014
//! leaves half of each page free; the columns every sighting changes are in no index). An
//! import rewrites every entity of each window again, and with full pages those rewrites were
//! most of a 1,000,000-envelope import's entity work (docs/PERFORMANCE.md).

#![allow(clippy::expect_used)]

mod common;

use headroom_core::clock::{SignedDuration, Timestamp, TokioClock};
use headroom_store::StoreRead as _;
use headroom_store::bulk::{BulkItem, BulkOptions, BulkPush};
use headroom_store::{ActorRef, EventOrigin, PushEventWrite, RepositoryRef, Store};

/// Enough entities to fill many pages: with full pages, their rewrites would have to move.
const ENTITIES: u64 = 3_000;

fn event(id: u64, entity: u64, at: i64) -> BulkItem {
    let instant = Timestamp::from_second(1_800_000_000 + at).expect("valid");
    let login = format!("user-{entity}");
    let name = format!("org-{entity}/repo-{entity}");
    let write = PushEventWrite {
        github_event_id: id.to_string(),
        github_push_id: Some(i64::try_from(id).expect("small")),
        actor: ActorRef {
            github_id: i64::try_from(entity).expect("small"),
            display_login: Some(login.clone()),
            url: Some(format!("https://api.github.com/users/{login}")),
            avatar_url: Some(format!("https://avatars.githubusercontent.com/u/{entity}")),
            login,
        },
        repository: RepositoryRef {
            github_id: i64::try_from(entity).expect("small"),
            url: Some(format!("https://api.github.com/repos/{name}")),
            full_name: name,
        },
        git_ref: "refs/heads/main".into(),
        head_sha: "a".repeat(40),
        before_sha: Some("b".repeat(40)),
        commit_count: Some(1),
        distinct_commit_count: Some(1),
        occurred_at: instant,
        received_at: instant,
        ingestion_run_id: None,
        origin: EventOrigin::Gharchive,
        raw: serde_json::json!({"id": id.to_string(), "type": "PushEvent"}),
    };
    BulkItem::Push(Box::new(BulkPush::new(write).expect("serializable")))
}

/// Updates of `table` and how many of them were heap-only, as the server's statistics count
/// them once the sessions that made them have reported (at their end at the latest).
async fn updates(pool: &sqlx::PgPool, table: &str, expected: i64) -> (i64, i64) {
    let mut seen = (0, 0);
    for _ in 0..100 {
        seen = sqlx::query_as(
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = $1",
        )
        .bind(table)
        .fetch_one(pool)
        .await
        .expect("statistics");
        if seen.0 >= expected {
            break;
        }
        TokioClock::system()
            .sleep(SignedDuration::from_millis(100))
            .await;
    }
    seen
}

/// Two windows naming the same 3,000 actors and repositories: the second window rewrites each
/// once (later activity), and every one of those rewrites is heap-only.
#[tokio::test]
async fn an_import_rewrites_the_entities_it_sees_again_in_place_postgres() {
    let Some(admin) =
        common::admin_url("an_import_rewrites_the_entities_it_sees_again_in_place_postgres")
    else {
        return;
    };
    let db = common::PgDatabase::create(&admin).await;
    let store = common::pg_store(&db, 2).await;
    let mut writer = store
        .bulk_writer(BulkOptions {
            commit_every: usize::try_from(ENTITIES).expect("small"),
            ..BulkOptions::default()
        })
        .await
        .expect("writer");
    for window in 0..2_u64 {
        let batch = (0..ENTITIES)
            .map(|entity| {
                let at = i64::try_from(window * 3_600 + entity).expect("small");
                event(window * ENTITIES + entity, entity, at)
            })
            .collect();
        writer.write(batch).await.expect("a window");
    }
    writer.finish().await.expect("finish");
    // Its sessions end here, reporting their statistics.
    drop(writer);
    let expected = i64::try_from(ENTITIES).expect("small");
    for table in ["actors", "repositories"] {
        let (updated, heap_only) = updates(store.pool(), table, expected).await;
        assert_eq!(updated, expected, "{table}: each entity rewritten once");
        assert_eq!(
            heap_only, updated,
            "{table}: every rewrite stays on its page, out of the indexes"
        );
    }
    store.close().await;
}
