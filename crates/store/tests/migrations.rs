//! A database created by an earlier version of headroom is brought up to date on open, its
//! rows kept: schema version 1 with data, then the current migrations.

#![allow(clippy::expect_used)]

mod common;

use headroom_store::StoreRead as _;
use std::borrow::Cow;

use headroom_store::{PgStore, SqliteStore};
use sqlx::migrate::Migrator;

/// The first `n` migrations of a folder.
fn first(migrator: Migrator, n: usize) -> Migrator {
    let migrations = migrator.migrations[..n].to_vec();
    Migrator {
        migrations: Cow::Owned(migrations),
        ..migrator
    }
}

const SEED_V1: &[&str] = &[
    "INSERT INTO organizations (login, collected_at_ms) VALUES ('acme', 0)",
    "INSERT INTO projects (organization_id, node_id, number, title, collected_at_ms) \
     SELECT id, 'PVT_1', 1, 'Roadmap', 0 FROM organizations",
    "INSERT INTO actors (github_id, login, created_at_ms, updated_at_ms) VALUES (7, 'octo', 0, 0)",
    "INSERT INTO repositories (github_id, full_name, created_at_ms, updated_at_ms) \
     VALUES (9, 'octo/hello', 0, 0)",
    "INSERT INTO push_events (github_event_id, github_actor_id, github_repository_id, \
     actor_login, repository_name, ref, head_sha, before_sha, occurred_at_ms, created_at_ms, \
     raw_json) VALUES ('e1', 7, 9, 'octo', 'octo/hello', 'refs/heads/main', 'h', 'b', 1, 2, '{}')",
];

/// Rows kept by every migration since version 1, the push event included (SQLite rebuilds
/// push_events to make `before_sha` optional).
async fn assert_kept(store: &dyn headroom_store::Store) {
    assert_eq!(store.count_rows("projects").await.expect("count"), 1);
    let event = store.push_event("e1").await.expect("read").expect("kept");
    assert_eq!(event.before_sha.as_deref(), Some("b"));
    assert_eq!(event.head_sha, "h");
}

#[tokio::test]
async fn sqlite_version_1_is_upgraded_with_its_rows() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("v1.db");
    let url = format!("sqlite://{}?mode=rwc", path.display());
    {
        let pool = sqlx::SqlitePool::connect(&url).await.expect("connect");
        first(sqlx::migrate!("./migrations/sqlite"), 1)
            .run(&pool)
            .await
            .expect("version 1");
        for sql in SEED_V1 {
            sqlx::query(*sql).execute(&pool).await.expect("seed");
        }
        pool.close().await;
    }
    let store = SqliteStore::open(&url).await.expect("upgrade");
    assert_kept(&store).await;
    let title: String = sqlx::query_scalar("SELECT title FROM projects WHERE node_id = 'PVT_1'")
        .fetch_one(store.pool())
        .await
        .expect("kept");
    assert_eq!(title, "Roadmap");
    store.close().await;
}

#[tokio::test]
async fn postgres_version_1_is_upgraded_with_its_rows() {
    let Some(admin) = common::admin_url("postgres_version_1_is_upgraded_with_its_rows") else {
        return;
    };
    let db = common::PgDatabase::create(&admin).await;
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect_with(db.options.clone())
        .await
        .expect("connect");
    first(sqlx::migrate!("./migrations/postgres"), 1)
        .run(&pool)
        .await
        .expect("version 1");
    for sql in SEED_V1 {
        sqlx::query(*sql).execute(&pool).await.expect("seed");
    }
    let store = PgStore::from_pool(pool).await.expect("upgrade");
    assert_kept(&store).await;
    store.close().await;
}

/// The migrations before `version` (its position in the folder).
fn before(migrator: Migrator, version: i64) -> Migrator {
    let n = migrator
        .migrations
        .iter()
        .position(|m| m.version == version)
        .expect("the migration exists");
    first(migrator, n)
}

/// A database made before LaunchDarkly's tables (migration 22) keeps its Jira rows and gains
/// the `ld_*` tables, empty.
async fn assert_launchdarkly_added(store: &dyn headroom_store::Store) {
    assert_eq!(store.count_rows("jira_projects").await.expect("count"), 1);
    let tables = store.table_names().await.expect("tables");
    for table in headroom_store::TABLES
        .iter()
        .filter(|t| t.starts_with("ld_"))
    {
        assert!(tables.iter().any(|t| t == table), "{table} missing");
        assert_eq!(store.count_rows(table).await.expect("count"), 0, "{table}");
    }
    assert_eq!(store.ld_audit_watermark("acct").await.expect("read"), None);
}

const SEED_JIRA: &str = "INSERT INTO jira_projects (site, id, key, collected_at_ms) \
                         VALUES ('acme.atlassian.net', 10000, 'ENG', 0)";

#[tokio::test]
async fn sqlite_before_launchdarkly_is_upgraded_with_its_rows() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("v21.db").display());
    {
        let pool = sqlx::SqlitePool::connect(&url).await.expect("connect");
        before(sqlx::migrate!("./migrations/sqlite"), 22)
            .run(&pool)
            .await
            .expect("up to Linear");
        sqlx::query(SEED_JIRA).execute(&pool).await.expect("seed");
        pool.close().await;
    }
    let store = SqliteStore::open(&url).await.expect("upgrade");
    assert_launchdarkly_added(&store).await;
    store.close().await;
}

#[tokio::test]
async fn postgres_before_launchdarkly_is_upgraded_with_its_rows() {
    let Some(admin) = common::admin_url("postgres_before_launchdarkly_is_upgraded_with_its_rows")
    else {
        return;
    };
    let db = common::PgDatabase::create(&admin).await;
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect_with(db.options.clone())
        .await
        .expect("connect");
    before(sqlx::migrate!("./migrations/postgres"), 22)
        .run(&pool)
        .await
        .expect("up to Linear");
    sqlx::query(SEED_JIRA).execute(&pool).await.expect("seed");
    let store = PgStore::from_pool(pool).await.expect("upgrade");
    assert_launchdarkly_added(&store).await;
    store.close().await;
}
