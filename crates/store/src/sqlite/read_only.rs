//! Reading an SQLite file without writing to it: the first look at a file before the store
//! opens it for writing ([`refuse_foreign_untouched`]), and the store of a command that only
//! reads ([`SqliteStore::open_read_only`]).
//!
//! A read-only connection (`mode=ro`) still creates the `-shm` and `-wal` files of a WAL
//! database when they are missing, where it can: they are how readers and writers of the file
//! agree on what is committed, and a writer starting meanwhile uses them. Where it cannot (a
//! read-only directory or medium) and no write-ahead log is left beside the file, nobody can
//! be writing it either, so the file is read as it is (`immutable`: no lock, no `-shm`).

use std::path::Path;

use sqlx::Connection as _;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqlitePool, SqlitePoolOptions};

use super::{BUSY_TIMEOUT, SqliteStore, TABLES_AND_OURS_SQL, foreign, target_options};
use crate::error::{Result, StoreError};

/// SQLite's primary result code for a file that is not a database (`SQLITE_NOTADB`).
const SQLITE_NOTADB: i32 = 26;

/// `path` opened to read it as it is on disk: no lock, no `-shm` or `-wal` file created, no
/// byte of it changed (what is only in a write-ahead log beside it is not seen).
fn untouched(path: &Path) -> SqliteConnectOptions {
    SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .immutable(true)
        .foreign_keys(false)
}

fn not_a_database(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|e| e.code())
        .and_then(|code| code.parse::<i32>().ok())
        .is_some_and(|code| code & 0xff == SQLITE_NOTADB)
}

/// Refuses another application's file (see [`foreign`]) or a file that is not a database,
/// reading it [`untouched`], before the store creates anything beside it or changes it: a
/// refusal leaves it byte for byte as it was, with nothing new beside it. A file that does not
/// exist yet or is empty is the store's to create; any other failure of this first look is
/// left to the open that follows (which looks again under its lock).
pub(super) async fn refuse_foreign_untouched(target: &str, path: &Path) -> Result<()> {
    if std::fs::metadata(path).map_or(true, |m| m.len() == 0) {
        return Ok(());
    }
    let mut conn = match SqliteConnection::connect_with(&untouched(path)).await {
        Ok(conn) => conn,
        Err(e) if not_a_database(&e) => return Err(StoreError::open(target, e)),
        Err(_) => return Ok(()),
    };
    let counts = sqlx::query_as(TABLES_AND_OURS_SQL)
        .fetch_one(&mut conn)
        .await;
    let _ = conn.close().await;
    match counts {
        Ok(counts) => foreign(target, counts),
        Err(e) if not_a_database(&e) => Err(StoreError::open(target, e)),
        Err(_) => Ok(()),
    }
}

impl SqliteStore {
    /// Opens the existing database at `target` for a command that only reads: never created,
    /// migrated, repaired or locked, and readable in a read-only directory (see the module
    /// comment). Refused when it does not exist, holds no headroom schema, or a schema older
    /// than this binary's (a command that writes upgrades it). Every write through it fails.
    pub async fn open_read_only(target: &str) -> Result<Self> {
        let (options, in_memory) = target_options(target)?;
        if in_memory {
            return Err(StoreError::open(
                target,
                "an in-memory database holds nothing to read",
            ));
        }
        let path = options.get_filename().to_owned();
        if !path.is_file() {
            return Err(StoreError::open(target, "no such database file"));
        }
        // Held until the schema is checked: a process creating or migrating the file
        // meanwhile is waited for rather than its half-made schema refused.
        let _settled = OpenersGone::wait(&path).await;
        refuse_foreign_untouched(target, &path).await?;
        let options = options
            .read_only(true)
            .create_if_missing(false)
            .busy_timeout(BUSY_TIMEOUT);
        let pool = match connect(options.clone()).await {
            Ok(pool) => pool,
            // No `-shm` could be made beside it, and no write-ahead log is there to read.
            Err(_) if wal_is_empty(&path) => connect(options.immutable(true))
                .await
                .map_err(|e| StoreError::open(target, e))?,
            Err(e) => return Err(StoreError::open(target, e)),
        };
        let versions = sqlx::query_scalar::<_, i64>(
            "SELECT version FROM _sqlx_migrations WHERE success ORDER BY version",
        )
        .fetch_all(&pool)
        .await;
        let Ok(versions) = versions else {
            pool.close().await;
            return Err(StoreError::open(target, "it holds no headroom schema"));
        };
        let expected = sqlx::migrate!("./migrations/sqlite");
        if let Err(e) = crate::read_only::require_current(target, &expected, &versions) {
            pool.close().await;
            return Err(e);
        }
        Ok(Self {
            pool,
            identity: super::file_identity(&path).ok(),
            file: Some(path),
        })
    }
}

/// A shared `flock` on the `-open-lock` file beside the database, if there is one: taken once
/// no process holds it to create or migrate the file ([`super::OpenLock`]), and keeping them
/// out until dropped. The file is opened read-only and never created.
struct OpenersGone {
    _file: std::fs::File,
}

impl OpenersGone {
    async fn wait(database: &Path) -> Option<Self> {
        let file = std::fs::File::open(super::lock_path(database, "-open-lock")).ok()?;
        // A blocking wait on its own thread: an opener holds it for one migration pass.
        tokio::task::spawn_blocking(move || file.lock_shared().map(|()| Self { _file: file }))
            .await
            .ok()?
            .ok()
    }
}

/// A pool over `options`, with one query through it: SQLite opens the file's `-shm` at the
/// first read, not at the connection.
async fn connect(options: SqliteConnectOptions) -> std::result::Result<SqlitePool, sqlx::Error> {
    let pool = SqlitePoolOptions::new()
        .max_connections(4)
        .acquire_timeout(BUSY_TIMEOUT)
        .connect_with(options)
        .await?;
    if let Err(e) = sqlx::query("SELECT COUNT(*) FROM sqlite_master")
        .execute(&pool)
        .await
    {
        pool.close().await;
        return Err(e);
    }
    Ok(pool)
}

/// Whether no write-ahead log with anything in it lies beside `path`.
fn wal_is_empty(path: &Path) -> bool {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(wal).map_or(true, |m| m.len() == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StoreRead as _;

    /// A read-only command cannot upgrade a schema, and this binary's queries may need what a
    /// missing migration adds: such a database is refused, saying what to run, and left as it
    /// was (not migrated, as opening it for writing would).
    #[tokio::test]
    async fn a_read_only_open_refuses_a_schema_it_would_have_to_upgrade() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("old.db");
        let target = path.to_str().unwrap_or_default();
        let store = SqliteStore::open(target)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        sqlx::query("DELETE FROM _sqlx_migrations WHERE version = (SELECT MAX(version) FROM _sqlx_migrations)")
            .execute(store.pool())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        store.close().await;
        let refused = SqliteStore::open_read_only(target).await;
        let message = refused.map(|_| ()).err().map(|e| e.to_string());
        assert!(
            message
                .as_deref()
                .is_some_and(|m| m.contains("older than this headroom")),
            "{message:?}"
        );
        // An empty file holds no schema at all, and stays empty.
        let empty = dir.path().join("empty.db");
        std::fs::write(&empty, "").unwrap_or_else(|e| panic!("{e}"));
        let refused = SqliteStore::open_read_only(empty.to_str().unwrap_or_default()).await;
        let message = refused.map(|_| ()).err().map(|e| e.to_string());
        assert!(
            message
                .as_deref()
                .is_some_and(|m| m.contains("no headroom schema")),
            "{message:?}"
        );
        assert_eq!(std::fs::metadata(&empty).map(|m| m.len()).ok(), Some(0));
        // A current one opens, and reads.
        let current = dir.path().join("current.db");
        let target = current.to_str().unwrap_or_default();
        SqliteStore::open(target)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .close()
            .await;
        let store = SqliteStore::open_read_only(target)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(store.count_rows("push_events").await.ok(), Some(0));
        let write = sqlx::query("DELETE FROM push_events")
            .execute(store.pool())
            .await;
        assert!(write.is_err(), "a write through it fails");
        store.close().await;
    }
}
