//! The connection abstraction the store's queries are written over once: [`Pools`], the
//! pool of either backend, with [`on_each_pool!`] expanding one query expression for each,
//! and [`ReadRow`], column readers shared by an SQLite and a PostgreSQL row so a row mapper
//! is one function.

use headroom_core::clock::Timestamp;
use sqlx::postgres::PgPool;
use sqlx::sqlite::SqlitePool;
use sqlx::types::Json;
use sqlx::{ColumnIndex, Decode, Row, Type};

use crate::error::Result;
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
}

impl OnPool for crate::SqliteStore {
    fn pools(&self) -> Pools<'_> {
        Pools::Sqlite(self.pool())
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
    /// A JSON column (TEXT in SQLite, JSONB in PostgreSQL).
    fn json(&self, column: &'static str) -> Result<serde_json::Value>;

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
        Ok(self.try_get::<String, _>(column)?)
    }

    fn opt_text(&self, column: &'static str) -> Result<Option<String>> {
        Ok(self.try_get::<Option<String>, _>(column)?)
    }

    fn int(&self, column: &'static str) -> Result<i64> {
        Ok(self.try_get::<i64, _>(column)?)
    }

    fn opt_int(&self, column: &'static str) -> Result<Option<i64>> {
        Ok(self.try_get::<Option<i64>, _>(column)?)
    }

    fn boolean(&self, column: &'static str) -> Result<bool> {
        Ok(self.try_get::<bool, _>(column)?)
    }

    fn json(&self, column: &'static str) -> Result<serde_json::Value> {
        Ok(self.try_get::<Json<serde_json::Value>, _>(column)?.0)
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

impl FromColumn for bool {
    fn read(row: &impl ReadRow, column: &'static str) -> Result<Self> {
        row.boolean(column)
    }
}

/// `column` of `row` as whatever type the caller expects.
pub(crate) fn get<T: FromColumn>(row: &impl ReadRow, column: &'static str) -> Result<T> {
    T::read(row, column)
}
