//! push_events' random-key indexes during a PostgreSQL import ([`DEFERRABLE_INDEXES`], the
//! same two the SQLite writer defers) and its foreign keys to actors and repositories
//! ([`DEFERRABLE_FOREIGN_KEYS`]): dropped once the import has added as many rows as the table
//! held when it started, and built once at [`super::PgBulk`]'s finish — one sort of the keys
//! instead of every new row's key landing on a random page, and one join validating every
//! reference instead of a locked lookup per row (measured on 174,000 events: the insert took
//! 5.3 s with the row-by-row checks and 2.2 s without; validating them all at the end 0.4 s).
//! The writer stores each event's actor and repository in the same window, before the event
//! (as the SQLite writer, which checks no foreign key at all, does), and no path deletes an
//! entity: the checks the drop skips are ones the writer makes true. A foreign key comes back
//! `NOT VALID` first (enforced for every new row from then on) and is then validated, which
//! lets other sessions write meanwhile. The import holds a
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

/// push_events' foreign keys the import defers: name, column, referenced table.
pub(crate) const DEFERRABLE_FOREIGN_KEYS: [(&str, &str, &str); 2] = [
    (
        "push_events_github_actor_id_fkey",
        "github_actor_id",
        "actors",
    ),
    (
        "push_events_github_repository_id_fkey",
        "github_repository_id",
        "repositories",
    ),
];

/// push_events' validated foreign keys, by name.
const VALID_FOREIGN_KEYS_SQL: &str = "SELECT conname::TEXT FROM pg_constraint \
    WHERE conrelid = 'push_events'::regclass AND contype = 'f' AND convalidated";

/// push_events' foreign keys, validated or not, by name.
const FOREIGN_KEYS_SQL: &str = "SELECT conname::TEXT FROM pg_constraint \
    WHERE conrelid = 'push_events'::regclass AND contype = 'f'";

/// Whether any of [`DEFERRABLE_INDEXES`] is missing, or any of [`DEFERRABLE_FOREIGN_KEYS`]
/// missing or not validated.
async fn any_missing(conn: &mut PgConnection) -> Result<bool> {
    let present: Vec<String> = sqlx::query_scalar(INDEXES_SQL)
        .fetch_all(&mut *conn)
        .await?;
    if !crate::sqlite::missing_deferrable(&present).is_empty() {
        return Ok(true);
    }
    let valid: Vec<String> = sqlx::query_scalar(VALID_FOREIGN_KEYS_SQL)
        .fetch_all(&mut *conn)
        .await?;
    Ok(DEFERRABLE_FOREIGN_KEYS
        .iter()
        .any(|(name, _, _)| !valid.iter().any(|v| v == name)))
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

/// Builds the missing indexes, then brings the foreign keys back and validates them.
async fn build(conn: &mut PgConnection) -> Result<()> {
    for (_, ddl) in DEFERRABLE_INDEXES {
        sqlx::query(ddl).execute(&mut *conn).await?;
    }
    let present: Vec<String> = sqlx::query_scalar(FOREIGN_KEYS_SQL)
        .fetch_all(&mut *conn)
        .await?;
    for (name, column, table) in DEFERRABLE_FOREIGN_KEYS {
        if !present.iter().any(|p| p == name) {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "ALTER TABLE push_events ADD CONSTRAINT {name} FOREIGN KEY ({column}) \
                 REFERENCES {table} (github_id) NOT VALID"
            )))
            .execute(&mut *conn)
            .await?;
        }
    }
    let valid: Vec<String> = sqlx::query_scalar(VALID_FOREIGN_KEYS_SQL)
        .fetch_all(&mut *conn)
        .await?;
    for (name, _, _) in DEFERRABLE_FOREIGN_KEYS {
        if !valid.iter().any(|v| v == name) {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "ALTER TABLE push_events VALIDATE CONSTRAINT {name}"
            )))
            .execute(&mut *conn)
            .await?;
        }
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
        for (name, _, _) in DEFERRABLE_FOREIGN_KEYS {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "ALTER TABLE push_events DROP CONSTRAINT IF EXISTS {name}"
            )))
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
                    "building push_events' indexes and foreign keys after the import (the \
                     events are stored; opening the store again builds them): {e}"
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
