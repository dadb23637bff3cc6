//! A throwaway PostgreSQL database per test, from `HEADROOM_TEST_DATABASE_URL`; shared by the
//! store's tests and (by `#[path]`) other crates' tests.

#![allow(dead_code, clippy::expect_used)]

use std::str::FromStr;

use headroom_store::PgStore;
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection};

pub const URL_VAR: &str = "HEADROOM_TEST_DATABASE_URL";

/// The admin URL, or `None` after saying why the test is skipped. Panics under CI.
pub fn admin_url(test: &str) -> Option<String> {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            if std::env::var_os("CI").is_some() {
                panic!(
                    "{URL_VAR} is not set but CI is: the PostgreSQL tests must run in CI \
                     (scripts/test starts a throwaway PostgreSQL when the binaries exist)"
                );
            }
            println!(
                "skipped: {URL_VAR} not set ({test} needs PostgreSQL; scripts/test starts one \
                 when /usr/lib/postgresql/*/bin/initdb exists)"
            );
            None
        }
    }
}

/// A database created for one test and dropped when the guard goes.
pub struct PgDatabase {
    admin: PgConnectOptions,
    pub name: String,
    pub options: PgConnectOptions,
}

impl PgDatabase {
    pub async fn create(admin_url: &str) -> Self {
        let admin = PgConnectOptions::from_str(admin_url).expect("a valid admin URL");
        // std's RandomState is seeded randomly per process: enough for a unique name.
        let random = {
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u32(std::process::id());
            h.finish()
        };
        let name = format!("headroom_test_{random:016x}");
        let mut conn = admin.connect().await.expect("connect as admin");
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut conn)
            .await
            .expect("create the test database");
        conn.close().await.expect("close the admin connection");
        let options = admin.clone().database(&name);
        Self {
            admin,
            name,
            options,
        }
    }

    /// The URL of the test database.
    pub fn url(&self) -> String {
        options_url(&self.options)
    }

    /// A new pool (a new "process") on the test database, with the schema, opened the way
    /// the product opens one (so with its session settings).
    pub async fn store(&self, max_connections: u32) -> PgStore {
        PgStore::connect_with_pool_size(&self.url(), max_connections)
            .await
            .expect("connect to the test database")
    }
}

fn options_url(options: &PgConnectOptions) -> String {
    let user = options.get_username();
    let host = options.get_host();
    let port = options.get_port();
    let db = options.get_database().unwrap_or("postgres");
    format!("postgres://{user}@{host}:{port}/{db}")
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let admin = self.admin.clone();
        let name = self.name.clone();
        // Drop runs outside any async context we can block on: use a thread of its own.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime to drop the test database");
            runtime.block_on(async move {
                let mut conn = admin.connect().await.ok()?;
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                )))
                .execute(&mut conn)
                .await
                .ok()?;
                conn.close().await.ok()
            })
        })
        .join();
        if !matches!(dropped, Ok(Some(()))) {
            eprintln!("warning: could not drop test database {}", self.name);
        }
    }
}
