//! The PostgreSQL backend: for several workers on several machines. The same schema and
//! queries as SQLite; the governor's shared state ([`crate::SharedQuotaState`]) runs over its pool.

use std::str::FromStr;
use std::time::Duration;

use crate::error::{Result, StoreError};
use sqlx::Connection as _;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};

/// How long to wait for a connection from the pool: long enough to ride out a restart of
/// the server (sqlx retries a refused connection until then).
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a store opened to serve reads ([`PgStore::connect_to_serve`]: the HTTP server,
/// `headroom status`) waits for a connection: with the database down, a request answers that
/// it is unreachable within seconds, rather than after [`ACQUIRE_TIMEOUT`].
pub const SERVE_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// The server ends a session of this store that sits inside a transaction doing nothing for
/// this long (`idle_in_transaction_session_timeout`). headroom never holds a transaction across
/// a provider request, so only a leaked one gets there: a task cancelled between `BEGIN` and
/// `COMMIT` can hand its connection back to the pool still in the transaction, and its row
/// locks would then block every later claim of the same sync run or source — forever.
pub const IDLE_IN_TRANSACTION_TIMEOUT: &str = "30s";

/// A store on a PostgreSQL database.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
}

impl PgStore {
    /// Connects to `url` (`postgres://…`) and applies the migrations. Errors never show the
    /// URL's password.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with_pool_size(url, 10).await
    }

    /// [`PgStore::connect`] with a chosen pool size.
    pub async fn connect_with_pool_size(url: &str, max_connections: u32) -> Result<Self> {
        Self::connect_with(url, max_connections, ACQUIRE_TIMEOUT).await
    }

    /// [`PgStore::connect`] for a process that answers requests: its pool waits
    /// [`SERVE_ACQUIRE_TIMEOUT`] for a connection, so an unreachable database is said within
    /// seconds.
    pub async fn connect_to_serve(url: &str) -> Result<Self> {
        Self::connect_with(url, 10, SERVE_ACQUIRE_TIMEOUT).await
    }

    async fn connect_with(url: &str, max_connections: u32, acquire: Duration) -> Result<Self> {
        let options = PgConnectOptions::from_str(url)
            .map_err(|e| StoreError::open(url, e))?
            .options([(
                "idle_in_transaction_session_timeout",
                IDLE_IN_TRANSACTION_TIMEOUT,
            )]);
        // One direct connection first: an unreachable server or a bad password fails now
        // with its own message, rather than after the pool's acquire timeout.
        let probe = PgConnection::connect_with(&options)
            .await
            .map_err(|e| StoreError::open(url, e))?;
        probe.close().await.map_err(|e| StoreError::open(url, e))?;
        let pool = PgPoolOptions::new()
            .max_connections(max_connections.max(1))
            .acquire_timeout(acquire)
            .connect_with(options)
            .await
            .map_err(|e| StoreError::open(url, e))?;
        Self::from_pool(pool).await
    }

    /// Connects to `url` for a command that only reads: every session read-only
    /// (`default_transaction_read_only`), no migration, no rebuild of what a killed import
    /// left missing. Refused when the schema is missing or older than this binary's (a
    /// command that writes upgrades it).
    pub async fn connect_read_only(url: &str) -> Result<Self> {
        let options = PgConnectOptions::from_str(url)
            .map_err(|e| StoreError::open(url, e))?
            .options([
                (
                    "idle_in_transaction_session_timeout",
                    IDLE_IN_TRANSACTION_TIMEOUT,
                ),
                ("default_transaction_read_only", "on"),
            ]);
        // As `connect_with`: an unreachable server or a bad password fails now with its own
        // message.
        let probe = PgConnection::connect_with(&options)
            .await
            .map_err(|e| StoreError::open(url, e))?;
        probe.close().await.map_err(|e| StoreError::open(url, e))?;
        let pool = PgPoolOptions::new()
            .max_connections(4)
            // Its commands serve reads (`serve`, `status`): an unreachable database is said
            // within seconds.
            .acquire_timeout(SERVE_ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(|e| StoreError::open(url, e))?;
        let versions = sqlx::query_scalar::<_, i64>(
            "SELECT version FROM _sqlx_migrations WHERE success ORDER BY version",
        )
        .fetch_all(&pool)
        .await;
        let checked = match versions {
            Ok(versions) => crate::read_only::require_current(
                url,
                &sqlx::migrate!("./migrations/postgres"),
                &versions,
            ),
            Err(_) => Err(StoreError::open(url, "it holds no headroom schema")),
        };
        if let Err(e) = checked {
            pool.close().await;
            return Err(e);
        }
        Ok(Self { pool })
    }

    /// A store over an existing pool; applies the migrations.
    pub async fn from_pool(pool: PgPool) -> Result<Self> {
        sqlx::migrate!("./migrations/postgres").run(&pool).await?;
        // Indexes an import killed midway left missing (see `bulk::postgres`).
        crate::bulk::build_missing_pg(&pool).await;
        Ok(Self { pool })
    }

    /// The connection pool (the governor backend and later queries use it).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

#[async_trait::async_trait]
impl crate::backend::Engine for PgStore {
    const BACKEND: crate::model::Backend = crate::model::Backend::Postgres;
    const TABLES_SQL: &'static str = "SELECT CAST(table_name AS TEXT) AS name \
        FROM information_schema.tables \
        WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' \
        AND table_name <> '_sqlx_migrations' ORDER BY name";

    /// PostgreSQL deployments share governor state through the database.
    fn quota_state(
        &self,
        config: headroom_core::governor::GovernorConfig,
        options: crate::SharedGovernorOptions,
    ) -> std::result::Result<
        std::sync::Arc<dyn headroom_core::governor::QuotaState>,
        headroom_core::governor::ConfigError,
    > {
        Ok(std::sync::Arc::new(crate::SharedQuotaState::postgres(
            self.pool.clone(),
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
