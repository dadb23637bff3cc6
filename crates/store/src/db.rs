//! The connection abstraction the store's queries are written over once: [`Pools`], the
//! pool of either backend, and [`Conn`], one connection or open transaction of either, with
//! [`on_each_pool!`] and [`on_each_conn!`] expanding one query expression for each; [`DbTx`],
//! a transaction of either backend; and [`ReadRow`], column readers shared by an SQLite and a
//! PostgreSQL row so a row mapper is one function.

use headroom_core::clock::Timestamp;
use sqlx::postgres::{PgConnection, PgPool, Postgres};
use sqlx::sqlite::{Sqlite, SqliteConnection, SqlitePool};
use sqlx::types::Json;
use sqlx::{ColumnIndex, Decode, Row, Type};

use crate::error::{Result, StoreError};
use crate::model::{from_ms, from_opt_ms, to_u64};

/// The pool of one backend.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Pools<'a> {
    /// An SQLite file.
    Sqlite(&'a SqlitePool),
    /// A PostgreSQL database.
    Pg(&'a PgPool),
}

/// A store that runs its queries over one of the two pools.
pub(crate) trait OnPool {
    /// This store's pool.
    fn pools(&self) -> Pools<'_>;

    /// Fails when the database the pool opened is no longer the one its target names (an
    /// SQLite file deleted or replaced since).
    fn check_opened(&self) -> crate::Result<()> {
        Ok(())
    }
}

impl OnPool for crate::SqliteStore {
    fn pools(&self) -> Pools<'_> {
        Pools::Sqlite(self.pool())
    }

    fn check_opened(&self) -> crate::Result<()> {
        self.check_file()
    }
}

impl OnPool for crate::PgStore {
    fn pools(&self) -> Pools<'_> {
        Pools::Pg(self.pool())
    }
}

/// Runs `$body` with `$pool` bound to the concrete pool: the one expression is compiled once
/// per backend, so the SQL and the row mapping stay single.
macro_rules! on_each_pool {
    ($pools:expr, |$pool:ident| $body:expr) => {
        match $pools {
            $crate::db::Pools::Sqlite($pool) => $body,
            $crate::db::Pools::Pg($pool) => $body,
        }
    };
}
pub(crate) use on_each_pool;

/// One connection of either backend: a pooled one or the inside of a transaction.
#[derive(Debug)]
pub(crate) enum Conn<'a> {
    /// An SQLite connection.
    Sqlite(&'a mut SqliteConnection),
    /// A PostgreSQL connection.
    Pg(&'a mut PgConnection),
}

/// Runs `$body` with `$conn` (a `&mut Conn`) bound to the concrete `&mut` connection, once
/// per backend, as [`on_each_pool!`] does for pools.
macro_rules! on_each_conn {
    ($conn:expr, |$c:ident| $body:expr) => {
        match $conn {
            $crate::db::Conn::Sqlite($c) => {
                let $c: &mut sqlx::SqliteConnection = &mut **$c;
                $body
            }
            $crate::db::Conn::Pg($c) => {
                let $c: &mut sqlx::PgConnection = &mut **$c;
                $body
            }
        }
    };
}
pub(crate) use on_each_conn;

/// An open transaction of either backend. Dropping it without a commit rolls it back.
pub(crate) enum DbTx {
    /// On SQLite (begun `IMMEDIATE`: it takes the write lock at once).
    Sqlite(sqlx::Transaction<'static, Sqlite>),
    /// On PostgreSQL.
    Pg(sqlx::Transaction<'static, Postgres>),
}

impl DbTx {
    /// Begins a write transaction on `pools`.
    pub(crate) async fn begin(pools: Pools<'_>) -> Result<Self> {
        Ok(match pools {
            Pools::Sqlite(pool) => DbTx::Sqlite(pool.begin_with("BEGIN IMMEDIATE").await?),
            Pools::Pg(pool) => DbTx::Pg(pool.begin().await?),
        })
    }

    /// The transaction's connection.
    pub(crate) fn conn(&mut self) -> Conn<'_> {
        match self {
            DbTx::Sqlite(tx) => Conn::Sqlite(tx),
            DbTx::Pg(tx) => Conn::Pg(tx),
        }
    }

    /// Commits.
    pub(crate) async fn commit(self) -> Result<()> {
        match self {
            DbTx::Sqlite(tx) => tx.commit().await?,
            DbTx::Pg(tx) => tx.commit().await?,
        }
        Ok(())
    }

    /// Rolls back.
    pub(crate) async fn rollback(self) -> Result<()> {
        match self {
            DbTx::Sqlite(tx) => tx.rollback().await?,
            DbTx::Pg(tx) => tx.rollback().await?,
        }
        Ok(())
    }
}

/// Typed column reads of a result row; errors name the column.
pub(crate) trait ReadRow {
    /// A `TEXT` column.
    fn text(&self, column: &'static str) -> Result<String>;
    /// A nullable `TEXT` column.
    fn opt_text(&self, column: &'static str) -> Result<Option<String>>;
    /// A `BIGINT` column.
    fn int(&self, column: &'static str) -> Result<i64>;
    /// A nullable `BIGINT` column.
    fn opt_int(&self, column: &'static str) -> Result<Option<i64>>;
    /// A boolean column.
    fn boolean(&self, column: &'static str) -> Result<bool>;
    /// A JSON column (TEXT in SQLite, JSONB or JSON in PostgreSQL).
    fn json(&self, column: &'static str) -> Result<serde_json::Value>;
    /// A nullable JSON column.
    fn opt_json(&self, column: &'static str) -> Result<Option<serde_json::Value>>;

    /// A non-negative integer column.
    fn uint(&self, column: &'static str) -> Result<u64> {
        to_u64(column, self.int(column)?)
    }

    /// A nullable non-negative integer column.
    fn opt_uint(&self, column: &'static str) -> Result<Option<u64>> {
        self.opt_int(column)?.map(|v| to_u64(column, v)).transpose()
    }

    /// A count or other non-negative integer; NULL (an empty `SUM`) reads as zero.
    fn count(&self, column: &'static str) -> Result<u64> {
        to_u64(column, self.opt_int(column)?.unwrap_or(0))
    }

    /// An instant stored as epoch milliseconds.
    fn ts(&self, column: &'static str) -> Result<Timestamp> {
        from_ms(column, self.int(column)?)
    }

    /// A nullable instant stored as epoch milliseconds.
    fn opt_ts(&self, column: &'static str) -> Result<Option<Timestamp>> {
        from_opt_ms(column, self.opt_int(column)?)
    }
}

impl<R> ReadRow for R
where
    R: Row,
    for<'c> &'c str: ColumnIndex<R>,
    String: for<'r> Decode<'r, R::Database> + Type<R::Database>,
    i64: for<'r> Decode<'r, R::Database> + Type<R::Database>,
    bool: for<'r> Decode<'r, R::Database> + Type<R::Database>,
    Json<serde_json::Value>: for<'r> Decode<'r, R::Database> + Type<R::Database>,
{
    fn text(&self, column: &'static str) -> Result<String> {
        self.try_get::<String, _>(column)
            .map_err(|e| StoreError::corrupt(column, e))
    }

    fn opt_text(&self, column: &'static str) -> Result<Option<String>> {
        self.try_get::<Option<String>, _>(column)
            .map_err(|e| StoreError::corrupt(column, e))
    }

    fn int(&self, column: &'static str) -> Result<i64> {
        self.try_get::<i64, _>(column)
            .map_err(|e| StoreError::corrupt(column, e))
    }

    fn opt_int(&self, column: &'static str) -> Result<Option<i64>> {
        self.try_get::<Option<i64>, _>(column)
            .map_err(|e| StoreError::corrupt(column, e))
    }

    fn boolean(&self, column: &'static str) -> Result<bool> {
        self.try_get::<bool, _>(column)
            .map_err(|e| StoreError::corrupt(column, e))
    }

    fn json(&self, column: &'static str) -> Result<serde_json::Value> {
        self.try_get::<Json<serde_json::Value>, _>(column)
            .map(|j| j.0)
            .map_err(|e| StoreError::corrupt(column, e))
    }

    fn opt_json(&self, column: &'static str) -> Result<Option<serde_json::Value>> {
        self.try_get::<Option<Json<serde_json::Value>>, _>(column)
            .map(|j| j.map(|j| j.0))
            .map_err(|e| StoreError::corrupt(column, e))
    }
}

/// A value one column decodes to, read through [`ReadRow`].
pub(crate) trait FromColumn: Sized {
    /// Reads `column` of `row`.
    fn read(row: &impl ReadRow, column: &'static str) -> Result<Self>;
}

impl FromColumn for String {
    fn read(row: &impl ReadRow, column: &'static str) -> Result<Self> {
        row.text(column)
    }
}

impl FromColumn for Option<String> {
    fn read(row: &impl ReadRow, column: &'static str) -> Result<Self> {
        row.opt_text(column)
    }
}

impl FromColumn for i64 {
    fn read(row: &impl ReadRow, column: &'static str) -> Result<Self> {
        row.int(column)
    }
}

impl FromColumn for Option<i64> {
    fn read(row: &impl ReadRow, column: &'static str) -> Result<Self> {
        row.opt_int(column)
    }
}

impl FromColumn for Option<u64> {
    fn read(row: &impl ReadRow, column: &'static str) -> Result<Self> {
        row.opt_uint(column)
    }
}

impl FromColumn for u64 {
    fn read(row: &impl ReadRow, column: &'static str) -> Result<Self> {
        row.uint(column)
    }
}

impl FromColumn for Option<Timestamp> {
    fn read(row: &impl ReadRow, column: &'static str) -> Result<Self> {
        row.opt_ts(column)
    }
}

impl FromColumn for Timestamp {
    fn read(row: &impl ReadRow, column: &'static str) -> Result<Self> {
        row.ts(column)
    }
}

impl FromColumn for bool {
    fn read(row: &impl ReadRow, column: &'static str) -> Result<Self> {
        row.boolean(column)
    }
}

/// `column` of `row` as whatever type the caller expects.
pub(crate) fn get<T: FromColumn>(row: &impl ReadRow, column: &'static str) -> Result<T> {
    T::read(row, column)
}
