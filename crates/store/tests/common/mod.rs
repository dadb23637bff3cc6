//! Test fixtures: a fresh SQLite file or a fresh PostgreSQL database per test, so tests run
//! in parallel and leave nothing behind.
//!
//! PostgreSQL comes from `HEADROOM_TEST_DATABASE_URL` (an admin URL, e.g.
//! `postgres://postgres@127.0.0.1:5432/postgres`; `scripts/test` starts a throwaway cluster and
//! sets it). Without it, PostgreSQL tests print why they were skipped — except under `CI`,
//! where they fail.

#![allow(dead_code, clippy::expect_used)]

pub mod governor;

use std::sync::Arc;

use headroom_store::{SqliteStore, Store};

use headroom_store::PgStore;
#[allow(unused_imports)] // each test binary uses its own part of it
pub use headroom_testkit::{PgDatabase, URL_VAR, admin_url};

/// A new pool (a new "process") on a test database, with the schema, opened the way the
/// product opens one (so with its session settings).
pub async fn pg_store(db: &PgDatabase, max_connections: u32) -> PgStore {
    PgStore::connect_with_pool_size(&db.url(), max_connections)
        .await
        .expect("connect to the test database")
}

/// A store and the way to open it again.
pub struct Fixture {
    pub store: Arc<dyn Store>,
    /// A path or URL that [`headroom_store::open`] accepts.
    pub target: String,
    _guard: Guard,
}

enum Guard {
    Sqlite(headroom_testkit::TempSqlite),
    Postgres(Box<PgDatabase>),
}

impl headroom_testkit::Finish for Fixture {
    async fn finish(self) {
        self.store.close().await;
    }
}

pub async fn sqlite() -> Fixture {
    let dir = headroom_testkit::TempSqlite::new();
    let target = dir.path();
    let store = SqliteStore::open(&target).await.expect("open SQLite");
    Fixture {
        store: Arc::new(store),
        target,
        _guard: Guard::Sqlite(dir),
    }
}

pub async fn postgres(test: &str) -> Option<Fixture> {
    let admin = admin_url(test)?;
    let db = PgDatabase::create(&admin).await;
    let store = pg_store(&db, 5).await;
    let target = db.url();
    Some(Fixture {
        store: Arc::new(store),
        target,
        _guard: Guard::Postgres(Box::new(db)),
    })
}
