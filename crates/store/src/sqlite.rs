//! The SQLite backend: the embedded default. One file, WAL, a busy timeout, foreign keys on;
//! write transactions start with `BEGIN IMMEDIATE` so two writers queue on the busy timeout
//! instead of failing on a lock upgrade.

use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};

/// How long a writer waits for another writer before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The page size of a database this store creates, in bytes.
pub const PAGE_SIZE: u32 = 16_384;

/// A store on an SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    /// The database file; `None` in memory (the bulk writer opens its own connection to it).
    file: Option<std::path::PathBuf>,
}

impl SqliteStore {
    /// Opens (creating if missing) the database at `target` — a path, `sqlite://PATH`,
    /// `sqlite:PATH`, or `sqlite::memory:` — and applies the migrations.
    pub async fn open(target: &str) -> Result<Self> {
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
        let file = (!in_memory).then(|| options.get_filename().to_owned());
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
        // SQLite has no migration lock: two processes opening a fresh file at once can both
        // try to apply a migration, and the loser fails on `_sqlx_migrations`' key. Its
        // transaction rolled back, so one more pass finds the winner's rows and applies only
        // what is still missing.
        let migrator = sqlx::migrate!("./migrations/sqlite");
        if migrator.run(&pool).await.is_err() {
            migrator.run(&pool).await?;
        }
        Ok(Self { pool, file })
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

crate::backend::store_impl!(
    SqliteStore,
    SqliteTx,
    sqlx::Sqlite,
    SqliteConnection,
    Backend::Sqlite,
    "SELECT name FROM sqlite_master WHERE type = 'table' \
     AND name NOT LIKE 'sqlite_%' AND name <> '_sqlx_migrations' ORDER BY name",
    "BEGIN IMMEDIATE",
    memory_quota_state,
    true
);

/// SQLite deployments run in one process: the governor keeps its state in memory.
fn memory_quota_state(
    _store: &SqliteStore,
    config: headroom_core::governor::GovernorConfig,
    _options: crate::PgGovernorOptions,
) -> std::result::Result<
    std::sync::Arc<dyn headroom_core::governor::QuotaState>,
    headroom_core::governor::ConfigError,
> {
    Ok(std::sync::Arc::new(
        headroom_core::governor::MemoryQuotaState::new(config)?,
    ))
}
