//! Test fixtures: a fresh SQLite file or a fresh PostgreSQL database per test, so tests run
//! in parallel and leave nothing behind.
//!
//! PostgreSQL comes from `HEADROOM_TEST_DATABASE_URL` (an admin URL, e.g.
//! `postgres://postgres@127.0.0.1:5432/postgres`; `scripts/test` starts a throwaway cluster and
//! sets it). Without it, PostgreSQL tests print why they were skipped — except under `CI`,
//! where they fail.

#![allow(dead_code, clippy::expect_used)]

use std::sync::Arc;

use headroom_store::{SqliteStore, Store};

// The PostgreSQL half lives in its own file so other crates' tests (the server's) can take it
// without this file's `both_backends!`.
mod pg;
#[allow(unused_imports)] // each test binary uses its own part of it
pub use pg::{PgDatabase, URL_VAR, admin_url};

/// A store and the way to open it again.
pub struct Fixture {
    pub store: Arc<dyn Store>,
    /// A path or URL that [`headroom_store::open`] accepts.
    pub target: String,
    _guard: Guard,
}

enum Guard {
    Sqlite(tempfile::TempDir),
    Postgres(Box<PgDatabase>),
}

pub async fn sqlite() -> Fixture {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("headroom.db");
    let target = path.to_str().expect("a UTF-8 temp path").to_owned();
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
    let store = db.store(5).await;
    let target = db.url();
    Some(Fixture {
        store: Arc::new(store),
        target,
        _guard: Guard::Postgres(Box::new(db)),
    })
}

/// Runs one shared check against SQLite and PostgreSQL, as two tests.
#[macro_export]
macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test]
                async fn sqlite() {
                    let fixture = $crate::common::sqlite().await;
                    super::$name(&fixture).await;
                    fixture.store.close().await;
                }

                #[tokio::test]
                async fn postgres() {
                    let Some(fixture) =
                        $crate::common::postgres(concat!(stringify!($name), "::postgres")).await
                    else {
                        return;
                    };
                    super::$name(&fixture).await;
                    fixture.store.close().await;
                }
            }
        )*
    };
}
