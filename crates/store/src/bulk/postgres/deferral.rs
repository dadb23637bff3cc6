//! push_events' random-key indexes during a PostgreSQL import ([`DEFERRABLE_INDEXES`], the
//! same two the SQLite writer defers): dropped once the import has added as many rows as the
//! table held when it started, and built once at [`super::PgBulk`]'s finish — one sort of the
//! keys instead of every new row's key landing on a random page. The import holds a
//! session-level advisory lock ([`IMPORT_LOCK`]) while they may be missing because of it; the
//! server releases it when the session ends, killed or not, and [`build_missing`] (run by
//! [`crate::PgStore`]'s open) builds indexes left missing only when it can take that lock, so
//! never under a running import.

use sqlx::PgConnection;

use crate::error::{Result, StoreError};
use crate::sqlite::DEFERRABLE_INDEXES;

/// The advisory lock key of a PostgreSQL import that may drop indexes ("headroom" in ASCII).
/// Advisory locks are per database, so imports into different databases do not contend.
pub(crate) const IMPORT_LOCK: i64 = 0x6865_6164_726f_6f6d;

/// push_events' index names.
const INDEXES_SQL: &str = "SELECT indexname::TEXT FROM pg_indexes \
    WHERE schemaname = current_schema() AND tablename = 'push_events'";

/// Whether any of [`DEFERRABLE_INDEXES`] is missing.
async fn any_missing(conn: &mut PgConnection) -> Result<bool> {
    let present: Vec<String> = sqlx::query_scalar(INDEXES_SQL)
        .fetch_all(&mut *conn)
        .await?;
    Ok(!crate::sqlite::missing_deferrable(&present).is_empty())
}

async fn try_lock(conn: &mut PgConnection) -> Result<bool> {
    Ok(sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
        .bind(IMPORT_LOCK)
        .fetch_one(&mut *conn)
        .await?)
}

async fn unlock(conn: &mut PgConnection) -> Result<()> {
    sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(IMPORT_LOCK)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

async fn build(conn: &mut PgConnection) -> Result<()> {
    for (_, ddl) in DEFERRABLE_INDEXES {
        sqlx::query(ddl).execute(&mut *conn).await?;
    }
    Ok(())
}

/// Builds whichever deferrable indexes an import killed before its end left missing, unless
/// an import is running (it builds them when it ends). Best effort, as on SQLite: they speed
/// reads up and constrain nothing, so a failure leaves them to the next open or import.
pub(crate) async fn build_missing(pool: &sqlx::PgPool) {
    let Ok(mut conn) = pool.acquire().await else {
        return;
    };
    if !matches!(any_missing(&mut conn).await, Ok(true)) {
        return;
    }
    if !matches!(try_lock(&mut conn).await, Ok(true)) {
        return;
    }
    let _ = build(&mut conn).await;
    let _ = unlock(&mut conn).await;
}

/// Whether the writer drops the indexes and builds them at its finish (the SQLite writer's
/// `IndexDeferral` explains the rule).
#[derive(Debug)]
pub(super) struct IndexDeferral {
    /// push_events' largest id when the writer opened.
    existing: u64,
    /// Rows this writer has created.
    created: u64,
    /// Whether the indexes are missing (dropped by this writer, or found missing): a build
    /// is owed.
    dropped: bool,
    /// Whether this writer's session holds [`IMPORT_LOCK`]; only then does it drop them.
    locked: bool,
}

impl IndexDeferral {
    pub(super) async fn open(conn: &mut PgConnection) -> Result<Self> {
        if !try_lock(conn).await? {
            return Ok(Self {
                existing: u64::MAX,
                created: 0,
                dropped: false,
                locked: false,
            });
        }
        let existing: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) FROM push_events")
            .fetch_one(&mut *conn)
            .await?;
        Ok(Self {
            existing: u64::try_from(existing).unwrap_or(0),
            created: 0,
            // Left missing by an import killed midway (and not rebuilt by an open since).
            dropped: any_missing(conn).await?,
            locked: true,
        })
    }

    /// Counts rows this writer created.
    pub(super) fn created(&mut self, rows: u64) {
        self.created += rows;
    }

    /// Drops the indexes once this import has earned it: outside the window's transaction,
    /// each drop a transaction of its own, so push_events is locked exclusively only for an
    /// instant rather than for a whole window.
    pub(super) async fn drop_when_due(&mut self, conn: &mut PgConnection) -> Result<()> {
        if self.dropped || !self.locked || self.created < self.existing {
            return Ok(());
        }
        for (name, _) in DEFERRABLE_INDEXES {
            sqlx::query(sqlx::AssertSqlSafe(format!("DROP INDEX IF EXISTS {name}")))
                .execute(&mut *conn)
                .await?;
        }
        self.dropped = true;
        Ok(())
    }

    /// Builds the indexes if owed (the rows are committed: a failure leaves them to the next
    /// open), then gives the lock up: nothing is missing because of this writer any more.
    pub(super) async fn finish(&mut self, conn: &mut PgConnection) -> Result<()> {
        if self.dropped {
            build(conn).await.map_err(|e| {
                StoreError::Database(format!(
                    "building push_events' indexes after the import (the events are stored; \
                     opening the store again builds them): {e}"
                ))
            })?;
            self.dropped = false;
        }
        if self.locked {
            unlock(conn).await?;
            self.locked = false;
        }
        Ok(())
    }
}
