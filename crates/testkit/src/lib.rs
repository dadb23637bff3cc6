//! The test harness every crate's tests share, as a dev-dependency: a throwaway PostgreSQL
//! database per test (from `HEADROOM_TEST_DATABASE_URL`, or an explicit skip that fails under
//! CI), a temporary SQLite file, and [`both_backends!`], which runs one check as a SQLite test
//! and a PostgreSQL test; and [`source`], the workspace's sources read as text for tests that
//! hold the code to a rule; and [`oracles`], the providers' published descriptions kept beside the
//! repository.
//!
//! It knows databases, not headroom: it depends on no headroom crate, so any crate's tests can
//! use it without a dependency cycle. A crate builds its own store over the URL it gets.

#![allow(clippy::expect_used)]

pub mod oracles;
pub mod source;

use std::str::FromStr;

use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection};

/// The variable naming the PostgreSQL server's admin URL (`scripts/test` sets it to a
/// throwaway cluster's).
pub const URL_VAR: &str = "HEADROOM_TEST_DATABASE_URL";

/// The variable naming a file where every skipped test appends one line, `TEST: REASON`
/// (`scripts/test` sets it and ends by counting them, so a skip never reads as a pass).
pub const SKIP_LOG_VAR: &str = "HEADROOM_TEST_SKIP_LOG";

/// Says that `test` is skipped and why: printed, and appended to the skip log when one is
/// named. Under `CI` it panics instead: every test must run there.
pub fn skip(test: &str, reason: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{test} cannot run ({reason}), but CI is set: scripts/test installs what it needs"
    );
    println!("skipped: {test}: {reason}");
    if let Some(path) = std::env::var_os(SKIP_LOG_VAR) {
        record_skip(std::path::Path::new(&path), test, reason);
    }
}

/// Appends `TEST: REASON` (one line) to the skip log at `path`.
pub fn record_skip(path: &std::path::Path, test: &str, reason: &str) {
    use std::io::Write as _;
    let line = format!("{test}: {}\n", reason.replace('\n', " "));
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        panic!(
            "cannot record the skip of {test} in {}: {e}",
            path.display()
        );
    }
}

/// The admin URL, or `None` after saying why `test` is skipped. Under `CI` a missing URL
/// panics instead: the PostgreSQL tests must run there.
pub fn admin_url(test: &str) -> Option<String> {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            skip(
                test,
                &format!(
                    "{URL_VAR} is not set and the test needs PostgreSQL (scripts/test starts \
                     one when /usr/lib/postgresql/*/bin/initdb exists)"
                ),
            );
            None
        }
    }
}

fn admin_options(admin_url: &str) -> PgConnectOptions {
    PgConnectOptions::from_str(admin_url).expect("a valid admin URL")
}

fn url_of(options: &PgConnectOptions, database: &str) -> String {
    format!(
        "postgres://{}@{}:{}/{database}",
        options.get_username(),
        options.get_host(),
        options.get_port()
    )
}

async fn admin_statements(admin_url: &str, statements: &[String]) {
    let mut conn = admin_options(admin_url)
        .connect()
        .await
        .expect("connect as admin");
    for sql in statements {
        sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
            .execute(&mut conn)
            .await
            .expect("admin statement");
    }
    conn.close().await.expect("close the admin connection");
}

/// Creates the empty database `name` (dropping one an earlier run left) and returns its URL.
/// For databases that processes other than the test use; drop it with [`drop_database`].
pub async fn create_database(admin_url: &str, name: &str) -> String {
    admin_statements(
        admin_url,
        &[
            format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            format!("CREATE DATABASE {name}"),
        ],
    )
    .await;
    url_of(&admin_options(admin_url), name)
}

/// Drops the database `name`, closing whatever connections a killed process left.
pub async fn drop_database(admin_url: &str, name: &str) {
    admin_statements(
        admin_url,
        &[format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")],
    )
    .await;
}

/// A database created for one test and dropped when the guard goes.
#[derive(Debug)]
pub struct PgDatabase {
    admin_url: String,
    /// Its name, unique per process and creation.
    pub name: String,
    /// How to connect to it.
    pub options: PgConnectOptions,
}

impl PgDatabase {
    /// Creates a database with a fresh name.
    pub async fn create(admin_url: &str) -> Self {
        // std's RandomState is seeded randomly per instance: enough for a unique name.
        let random = {
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u32(std::process::id());
            h.finish()
        };
        let name = format!("headroom_test_{random:016x}");
        create_database(admin_url, &name).await;
        let options = admin_options(admin_url).database(&name);
        Self {
            admin_url: admin_url.to_owned(),
            name,
            options,
        }
    }

    /// The URL of the test database.
    pub fn url(&self) -> String {
        url_of(&self.options, &self.name)
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let admin_url = self.admin_url.clone();
        let name = self.name.clone();
        // Drop may run inside a runtime that cannot block: use a thread and runtime of its own.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime to drop the test database");
            runtime.block_on(drop_database(&admin_url, &name));
        })
        .join();
        if dropped.is_err() {
            eprintln!("warning: could not drop test database {}", self.name);
        }
    }
}

/// A SQLite file in a temporary directory removed when this goes.
#[derive(Debug)]
pub struct TempSqlite {
    dir: tempfile::TempDir,
}

impl TempSqlite {
    /// A new directory; the file (`headroom.db`) is created by whoever opens it.
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    /// The file's path as text (headroom opens databases by path or URL).
    pub fn path(&self) -> String {
        self.dir
            .path()
            .join("headroom.db")
            .to_str()
            .expect("a UTF-8 temporary path")
            .to_owned()
    }
}

impl Default for TempSqlite {
    fn default() -> Self {
        Self::new()
    }
}

/// What a test crate's fixture does once a check is over (close its pools, say).
pub trait Finish {
    /// Ends the fixture; its guard then drops the database.
    fn finish(self) -> impl std::future::Future<Output = ()>;
}

/// Runs one shared check against SQLite and PostgreSQL, as two tests named `NAME::sqlite` and
/// `NAME::postgres`. The calling crate provides `crate::common::sqlite()` and
/// `crate::common::postgres(test_name) -> Option<_>`, whose fixture implements [`Finish`]; each
/// check is an `async fn NAME(fixture: &Fixture)`. `multi_thread:` before the names runs them on
/// a two-worker runtime.
#[macro_export]
#[allow(clippy::crate_in_macro_def)] // `crate::common` is the calling crate's fixture module, on purpose.
macro_rules! both_backends {
    (multi_thread: $($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    let fixture = crate::common::sqlite().await;
                    super::$name(&fixture).await;
                    $crate::Finish::finish(fixture).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    let Some(fixture) =
                        crate::common::postgres(concat!(stringify!($name), "::postgres")).await
                    else {
                        return;
                    };
                    super::$name(&fixture).await;
                    $crate::Finish::finish(fixture).await;
                }
            }
        )*
    };
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test]
                async fn sqlite() {
                    let fixture = crate::common::sqlite().await;
                    super::$name(&fixture).await;
                    $crate::Finish::finish(fixture).await;
                }

                #[tokio::test]
                async fn postgres() {
                    let Some(fixture) =
                        crate::common::postgres(concat!(stringify!($name), "::postgres")).await
                    else {
                        return;
                    };
                    super::$name(&fixture).await;
                    $crate::Finish::finish(fixture).await;
                }
            }
        )*
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_skip_is_recorded_as_one_line_naming_the_test_and_why() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("skips");
        super::record_skip(&log, "a_test", "no server\nhere");
        super::record_skip(&log, "b_test", "no browser");
        let text = std::fs::read_to_string(&log).expect("the log");
        assert_eq!(text, "a_test: no server here\nb_test: no browser\n");
    }
}
