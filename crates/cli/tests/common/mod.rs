//! What the binary's black-box tests share: the binary's path, a `headroom sim` process
//! on loopback that is stopped when dropped, and throwaway PostgreSQL databases.

#![allow(dead_code, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_headroom");

/// A `headroom sim` process on 127.0.0.1, stopped when dropped.
pub struct Sim {
    pub child: Child,
    /// `http://127.0.0.1:PORT`, from the first line the simulator prints.
    pub url: String,
}

impl Sim {
    /// Starts `headroom sim --addr 127.0.0.1:0 ARGS…` and waits for its first line.
    pub fn start(args: &[&str]) -> Sim {
        let mut child = Command::new(BIN)
            .arg("sim")
            .args(["--addr", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the binary starts");
        let stdout = child.stdout.take().expect("stdout piped");
        let mut first = String::new();
        BufReader::new(stdout)
            .read_line(&mut first)
            .expect("first line");
        let url = first
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .to_owned();
        Sim { child, url }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The admin URL of the test PostgreSQL server (`HEADROOM_TEST_DATABASE_URL`, which
/// `scripts/test` sets), or `None` after saying `test` was skipped; under `CI` a missing URL
/// fails the test instead.
pub fn postgres_admin(test: &str) -> Option<sqlx::postgres::PgConnectOptions> {
    const URL_VAR: &str = "HEADROOM_TEST_DATABASE_URL";
    match std::env::var(URL_VAR) {
        Ok(url) if !url.trim().is_empty() => Some(url.parse().expect("a valid admin URL")),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "{URL_VAR} is not set but CI is: the PostgreSQL tests must run in CI"
            );
            println!(
                "skipped: {URL_VAR} not set ({test} needs PostgreSQL; scripts/test starts one)"
            );
            None
        }
    }
}

/// Creates the empty database `name` (dropping any left by an earlier run) and returns its URL.
pub async fn create_database(admin: &sqlx::postgres::PgConnectOptions, name: &str) -> String {
    admin_statements(
        admin,
        &[
            format!("DROP DATABASE IF EXISTS {name}"),
            format!("CREATE DATABASE {name}"),
        ],
    )
    .await;
    format!(
        "postgres://{}@{}:{}/{name}",
        admin.get_username(),
        admin.get_host(),
        admin.get_port()
    )
}

/// Drops the database `name`, closing whatever connections a killed process left.
pub async fn drop_database(admin: &sqlx::postgres::PgConnectOptions, name: &str) {
    admin_statements(
        admin,
        &[format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")],
    )
    .await;
}

async fn admin_statements(admin: &sqlx::postgres::PgConnectOptions, statements: &[String]) {
    use sqlx::{ConnectOptions, Connection};
    let mut conn = admin.connect().await.expect("connect as admin");
    for sql in statements {
        sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
            .execute(&mut conn)
            .await
            .expect("admin statement");
    }
    conn.close().await.expect("close");
}
