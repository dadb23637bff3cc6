//! The SQLite backend: the embedded default. One file, WAL, a busy timeout, foreign keys on;
//! write transactions start with `BEGIN IMMEDIATE` so two writers queue on the busy timeout
//! instead of failing on a lock upgrade.

use std::str::FromStr;
use std::time::Duration;

use crate::error::{Result, StoreError};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

mod read_only;

/// How long a writer waits for another writer before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The page size of a database this store creates, in bytes.
pub const PAGE_SIZE: u32 = 16_384;

/// push_events' secondary indexes keyed by actor and by repository, as the migrations create
/// them (`IF NOT EXISTS` added): the ones a bulk load may drop and build once at its end (see
/// [`crate::bulk`]). Their keys arrive in no order, so each row's insert lands on a page of its
/// own; the table's other indexes take keys that grow with time (arrival, event instant, push
/// id) and cost little row by row. Neither is a constraint: the dedup key,
/// `github_event_id`'s unique index, always stays. An import killed before it rebuilt them
/// leaves them missing; the next [`SqliteStore::open`] outside an import, or the next import,
/// builds them, so a later migration touching one of these should say `DROP INDEX IF EXISTS`.
pub(crate) const DEFERRABLE_INDEXES: [(&str, &str); 2] = [
    (
        "push_events_by_actor",
        "CREATE INDEX IF NOT EXISTS push_events_by_actor \
         ON push_events (github_actor_id, occurred_at_ms, id)",
    ),
    (
        "push_events_by_repository",
        "CREATE INDEX IF NOT EXISTS push_events_by_repository \
         ON push_events (github_repository_id, occurred_at_ms, id)",
    ),
];

/// The lock an import holds from its start until its end (one import writes a file at a
/// time: a second waits for it, [`ImportLock::acquire`]), and so for as long as it may leave
/// [`DEFERRABLE_INDEXES`] dropped: an advisory lock (`flock`) on a file beside the database
/// (`…-import-lock`, holding its holder's pid and host), released by the kernel when its
/// holder exits, killed or not. Opening the store builds missing indexes only
/// when it can take this lock, so it never builds them under a running import (which would
/// make both wait for each other's transactions); the import builds them at its end. Never
/// the database file itself: closing any descriptor of that file drops SQLite's own POSIX
/// locks on it.
#[derive(Debug)]
pub(crate) struct ImportLock {
    file: std::fs::File,
}

impl ImportLock {
    /// The lock, or `None` when another process (or writer) holds it or the file beside the
    /// database cannot be created (a read-only directory: nothing is deferred then).
    pub(crate) fn try_acquire(database: &std::path::Path) -> Option<Self> {
        let file = lock_file(database, "-import-lock")?;
        file.try_lock().ok()?;
        Some(Self::held(file))
    }

    /// Waits for the lock: an import's turn (see [`crate::bulk::import_turn_label`]). Before
    /// waiting, tells `on_wait` who holds it, as its holder wrote into the file; once held,
    /// writes this process there for the next one. Blocking: call it on a blocking thread.
    /// `None` when the file beside the database cannot be created or locked (a read-only
    /// directory: the import then fails at its first write anyway).
    pub(crate) fn acquire(
        database: &std::path::Path,
        on_wait: Option<crate::bulk::WaitNotice>,
    ) -> Option<Self> {
        use std::io::Read as _;
        let mut file = lock_file(database, "-import-lock")?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                if let Some(notice) = on_wait {
                    let mut holder = String::new();
                    let _ = file.read_to_string(&mut holder);
                    let holder = holder.trim();
                    notice(if holder.is_empty() {
                        "another process holds the database's import lock"
                    } else {
                        holder
                    });
                }
                file.lock().ok()?;
            }
            Err(std::fs::TryLockError::Error(_)) => return None,
        }
        Some(Self::held(file))
    }

    /// The lock, once `file` is locked: writes who holds it (best effort, it only informs a
    /// waiter).
    fn held(file: std::fs::File) -> Self {
        use std::os::unix::fs::FileExt as _;
        let label = crate::bulk::import_turn_label();
        if file.set_len(0).is_ok() {
            let _ = file.write_all_at(label.as_bytes(), 0);
        }
        Self { file }
    }
}

impl Drop for ImportLock {
    /// Clears the holder's name while the lock is still held (closing the file releases it).
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
    }
}

/// The file beside `database` whose `flock` a lock of this module takes, created if missing.
/// One per database file however it is reached: through a symlink or another relative path,
/// the same file names the same lock. `None` when it cannot be created (a read-only
/// directory).
fn lock_file(database: &std::path::Path, suffix: &str) -> Option<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(lock_path(database, suffix))
        .ok()
}

/// The path of [`lock_file`].
fn lock_path(database: &std::path::Path, suffix: &str) -> std::path::PathBuf {
    let database = std::fs::canonicalize(database).unwrap_or_else(|_| database.to_owned());
    let mut path = database.as_os_str().to_owned();
    path.push(suffix);
    path.into()
}

/// Held while a process opens the database and applies its migrations: SQLite has no
/// migration lock, and two processes creating one file at once otherwise both apply the
/// same migration and one fails. A second opener waits for the first (`flock`, released
/// when the file closes, a killed process included). A file beside the database, as
/// [`ImportLock`], never the database itself.
struct OpenLock {
    _file: std::fs::File,
}

impl OpenLock {
    /// Waits for the lock of `database`; `None` when the file beside it cannot be created
    /// (a read-only directory: the opener goes on unlocked, as before).
    async fn acquire(database: &std::path::Path) -> Option<Self> {
        let file = lock_file(database, "-open-lock")?;
        // A blocking wait on its own thread: the other opener holds it for one migration
        // pass at most.
        tokio::task::spawn_blocking(move || file.lock().map(|()| Self { _file: file }))
            .await
            .ok()?
            .ok()
    }
}

/// The names of push_events' indexes, for [`missing_deferrable`].
pub(crate) const PUSH_EVENT_INDEXES_SQL: &str =
    "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'push_events'";

/// Which of [`DEFERRABLE_INDEXES`] are missing, by name.
pub(crate) fn missing_deferrable(present: &[String]) -> Vec<&'static str> {
    DEFERRABLE_INDEXES
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| !present.iter().any(|p| p == name))
        .collect()
}

/// Builds whichever of [`DEFERRABLE_INDEXES`] an import killed before its end left missing,
/// in one transaction, unless an import is running (it builds them when it ends). Best
/// effort: they speed reads up and constrain nothing, so a failure here (a full disk) leaves
/// them to the next open or import rather than refusing to open the store.
async fn restore_deferred_indexes(pool: &SqlitePool, file: Option<&std::path::Path>) {
    let Ok(present) = sqlx::query_scalar::<_, String>(PUSH_EVENT_INDEXES_SQL)
        .fetch_all(pool)
        .await
    else {
        return;
    };
    if missing_deferrable(&present).is_empty() {
        return;
    }
    let Some(_lock) = file.and_then(ImportLock::try_acquire) else {
        return;
    };
    let Ok(mut tx) = pool.begin_with("BEGIN IMMEDIATE").await else {
        return;
    };
    for (_, ddl) in DEFERRABLE_INDEXES {
        // A failed statement drops `tx`, which rolls it back.
        if sqlx::query(ddl).execute(&mut *tx).await.is_err() {
            return;
        }
    }
    let _ = tx.commit().await;
}

/// Tables, and headroom's migration records among them (0 or 1).
const TABLES_AND_OURS_SQL: &str = "SELECT COUNT(*), COUNT(CASE WHEN name = '_sqlx_migrations' THEN 1 END) \
     FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'";

/// The refusal of a database another application made: tables, but none of headroom's
/// migration records. Adding thirty tables to someone else's file silently is worse than
/// stopping; an empty file is taken.
fn foreign(target: &str, (tables, ours): (i64, i64)) -> Result<()> {
    if tables > 0 && ours == 0 {
        return Err(StoreError::open(
            target,
            format!(
                "it holds {} of another application and no headroom schema; \
                 headroom uses a database of its own (an empty or new file)",
                headroom_core::words::counted(tables.unsigned_abs(), "table", "tables")
            ),
        ));
    }
    Ok(())
}

/// [`foreign`], asked again under the open lock (a file filled since the first look).
async fn refuse_foreign(pool: &SqlitePool, target: &str) -> Result<()> {
    foreign(
        target,
        sqlx::query_as(TABLES_AND_OURS_SQL).fetch_one(pool).await?,
    )
}

/// The file an SQLite target names (`PATH`, `sqlite:PATH`, `sqlite://PATH?…`); `None` for an
/// in-memory database or a PostgreSQL URL.
pub fn database_file(target: &str) -> Option<std::path::PathBuf> {
    if target.starts_with("postgres://") || target.starts_with("postgresql://") {
        return None;
    }
    if matches!(target, ":memory:" | "sqlite::memory:" | "sqlite://:memory:") {
        return None;
    }
    let path = match target.strip_prefix("sqlite:") {
        Some(rest) => rest
            .trim_start_matches("//")
            .split('?')
            .next()
            .unwrap_or_default(),
        None => target,
    };
    (!path.is_empty()).then(|| std::path::PathBuf::from(path))
}

/// The connection options a target names (`PATH`, `sqlite:PATH`, `sqlite://PATH?…`,
/// `sqlite::memory:`), and whether it is in memory.
fn target_options(target: &str) -> Result<(SqliteConnectOptions, bool)> {
    let in_memory = matches!(target, ":memory:" | "sqlite::memory:" | "sqlite://:memory:");
    let options = if in_memory {
        SqliteConnectOptions::from_str("sqlite::memory:")
            .map_err(|e| StoreError::open(target, e))?
    } else if let Some(rest) = target.strip_prefix("sqlite:") {
        // sqlx's own URL form: `sqlite://PATH`, `sqlite:PATH`, with `?…` parameters.
        let path = rest.trim_start_matches("//");
        if path.is_empty() || path.starts_with('?') {
            return Err(StoreError::open(target, "no path given"));
        }
        SqliteConnectOptions::from_str(target).map_err(|e| StoreError::open(target, e))?
    } else if target.is_empty() {
        return Err(StoreError::open(target, "no path given"));
    } else {
        SqliteConnectOptions::new().filename(target)
    };
    Ok((options, in_memory))
}

/// A store on an SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    /// The database file; `None` in memory (the bulk writer opens its own connection to it).
    file: Option<std::path::PathBuf>,
    /// The opened file's device and inode, to tell whether the path still names it.
    identity: Option<(u64, u64)>,
}

/// The device and inode of the file at `path` (following links), if it exists.
fn file_identity(path: &std::path::Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(path)?;
    Ok((meta.dev(), meta.ino()))
}

impl SqliteStore {
    /// Opens (creating if missing) the database at `target` — a path, `sqlite://PATH`,
    /// `sqlite:PATH`, or `sqlite::memory:` — and applies the migrations.
    pub async fn open(target: &str) -> Result<Self> {
        let (options, in_memory) = target_options(target)?;
        let file = (!in_memory).then(|| options.get_filename().to_owned());
        if let Some(path) = &file {
            // Before anything is created beside it or changed in it (the WAL switch below
            // rewrites its header): a refusal leaves another application's file as it was.
            read_only::refuse_foreign_untouched(target, path).await?;
        }
        let _opening = match &file {
            Some(path) => OpenLock::acquire(path).await,
            None => None,
        };
        let options = options
            .create_if_missing(true)
            // A new file only (SQLite fixes the page size when it creates the database).
            // 16 KiB rather than 4: push_events rows are about 0.9 KiB with their raw JSON,
            // and its indexes and the entity tables are a level shallower; the GH Archive
            // import ran about 20 % faster (README, import figures).
            .page_size(PAGE_SIZE)
            .journal_mode(if in_memory {
                SqliteJournalMode::Memory
            } else {
                SqliteJournalMode::Wal
            })
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(BUSY_TIMEOUT)
            .foreign_keys(true)
            // The default 2 MiB page cache makes every insert into a large table's indexes
            // read pages back from the OS: give each connection 64 MiB.
            .pragma("cache_size", "-65536")
            .pragma("temp_store", "memory");
        let pool = SqlitePoolOptions::new()
            // An in-memory database lives in one connection.
            .max_connections(if in_memory { 1 } else { 4 })
            .acquire_timeout(BUSY_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(|e| StoreError::open(target, e))?;
        refuse_foreign(&pool, target).await?;
        // Under the open lock, so no other process is migrating this file meanwhile.
        sqlx::migrate!("./migrations/sqlite").run(&pool).await?;
        restore_deferred_indexes(&pool, file.as_deref()).await;
        // From now on the file exists: a connection the pool opens later must not create an
        // empty one in its place if it is deleted (it would answer "no such table" while the
        // connections still open read the deleted file).
        let later = (*pool.connect_options()).clone().create_if_missing(false);
        pool.set_connect_options(later);
        let identity = file.as_deref().and_then(|f| file_identity(f).ok());
        Ok(Self {
            pool,
            file,
            identity,
        })
    }

    /// Fails when the database file was deleted, or replaced by another file, since this
    /// store opened it: its open connections still read the old file, which nothing else
    /// sees any more. `Ok` in memory.
    pub fn check_file(&self) -> Result<()> {
        let (Some(path), Some(opened)) = (&self.file, self.identity) else {
            return Ok(());
        };
        let target = path.to_string_lossy();
        match file_identity(path) {
            Ok(now) if now == opened => Ok(()),
            Ok(_) => Err(StoreError::open(
                &target,
                "the file was replaced by another since this process opened it; \
                 restart the process to open the file now there",
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(StoreError::open(
                &target,
                "the file was deleted since this process opened it (its open connections \
                 still read the deleted file); restore it and restart the process",
            )),
            Err(e) => Err(StoreError::open(&target, e)),
        }
    }

    /// The connection pool, for queries this crate does not offer yet.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// The database file, unless the database is in memory.
    pub fn file(&self) -> Option<&std::path::Path> {
        self.file.as_deref()
    }
}

#[async_trait::async_trait]
impl crate::backend::Engine for SqliteStore {
    const BACKEND: crate::model::Backend = crate::model::Backend::Sqlite;
    const TABLES_SQL: &'static str = "SELECT name FROM sqlite_master WHERE type = 'table' \
        AND name NOT LIKE 'sqlite_%' AND name <> '_sqlx_migrations' ORDER BY name";

    /// On a database file, every process that opens it shares governor state through it
    /// ([`crate::SharedQuotaState`]); an in-memory database is provably one process's alone,
    /// and keeps the in-memory state.
    fn quota_state(
        &self,
        config: headroom_core::governor::GovernorConfig,
        options: crate::SharedGovernorOptions,
    ) -> std::result::Result<
        std::sync::Arc<dyn headroom_core::governor::QuotaState>,
        headroom_core::governor::ConfigError,
    > {
        if self.file.is_none() {
            return Ok(std::sync::Arc::new(
                headroom_core::governor::MemoryQuotaState::new(config)?,
            ));
        }
        Ok(std::sync::Arc::new(crate::SharedQuotaState::sqlite(
            self.pool().clone(),
            config,
            options,
        )?))
    }

    async fn bulk(
        &self,
        options: crate::bulk::BulkOptions,
    ) -> Result<Box<dyn crate::bulk::BulkWriter + '_>> {
        self.open_bulk(options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StoreRead as _;

    async fn index_sql(store: &SqliteStore, name: &str) -> Option<String> {
        sqlx::query_scalar("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?1")
            .bind(name)
            .fetch_optional(store.pool())
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The list is what the migrations create, so the writer builds the same indexes it
    /// dropped: a migration changing one of them must change the list too.
    #[tokio::test]
    async fn the_deferrable_indexes_are_the_migrations_own() {
        let store = SqliteStore::open(":memory:")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        for (name, ddl) in DEFERRABLE_INDEXES {
            let created = index_sql(&store, name).await;
            let normalize = |sql: &str| sql.split_whitespace().collect::<Vec<_>>().join(" ");
            assert_eq!(
                created.as_deref().map(normalize),
                Some(normalize(&ddl.replace("IF NOT EXISTS ", ""))),
                "{name}"
            );
        }
        store.close().await;
    }

    /// A file deleted under an open store: the connections the pool opens afterwards fail
    /// instead of creating an empty database in its place, and the store says what happened.
    #[tokio::test]
    async fn a_deleted_database_file_is_not_recreated_empty() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("h.db");
        let store = SqliteStore::open(path.to_str().unwrap_or_default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(store.check_file().is_ok());
        std::fs::remove_file(&path).unwrap_or_else(|e| panic!("{e}"));
        // Every connection the pool may hold, at once: at least one is opened now.
        let mut held = Vec::new();
        for _ in 0..4 {
            if let Ok(conn) = store.pool().acquire().await {
                held.push(conn);
            }
        }
        assert!(
            held.len() < 4,
            "a connection was opened on the deleted path"
        );
        assert!(!path.exists(), "an empty database was created in its place");
        let said = store.check_file().map_err(|e| e.to_string());
        assert!(
            said.as_ref().is_err_and(|e| e.contains("deleted")),
            "{said:?}"
        );
        drop(held);
        store.close().await;
    }

    /// An import killed between dropping the indexes and building them leaves them missing;
    /// the next open builds them.
    #[tokio::test]
    async fn opening_builds_the_indexes_an_interrupted_import_dropped() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("h.db");
        let target = path.to_str().unwrap_or_default();
        let store = SqliteStore::open(target)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        for name in ["push_events_by_actor", "push_events_by_repository"] {
            sqlx::query(sqlx::AssertSqlSafe(format!("DROP INDEX {name}")))
                .execute(store.pool())
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!(index_sql(&store, "push_events_by_actor").await, None);
        store.close().await;
        let store = SqliteStore::open(target)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        for (name, _) in DEFERRABLE_INDEXES {
            assert!(index_sql(&store, name).await.is_some(), "{name}");
        }
        store.close().await;
    }
}
