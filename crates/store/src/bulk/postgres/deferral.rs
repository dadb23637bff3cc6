//! What a PostgreSQL import defers while it writes, dropped once the import has added as many
//! rows as push_events held when it started and built once at [`super::PgBulk`]'s finish:
//! - push_events' random-key indexes ([`DEFERRABLE_INDEXES`], the two the SQLite writer
//!   defers) and its three other secondary indexes ([`PUSH_EVENT_INDEXES`]): one sort of
//!   the keys instead of every new row's key landing on a page, and two writers inserting
//!   side by side no longer meeting on the right-hand pages of the same indexes;
//! - the secondary indexes of actors and repositories ([`ENTITY_INDEXES`]): three quarters
//!   of an entity row's insert (69,600 repositories: 0.83 s with them, 0.23 s without);
//! - push_events' foreign keys to actors and repositories ([`DEFERRABLE_FOREIGN_KEYS`]):
//!   one join validating every reference at the end instead of a locked lookup per row (on
//!   174,000 events the insert took 5.3 s with the row-by-row checks and 2.2 s without;
//!   validating them all afterwards 0.3 s). The writer stores each event's actor and
//!   repository in the same window, before the event (as the SQLite writer, which checks no
//!   foreign key at all, does), and no path deletes an entity: the checks the drop skips are
//!   ones the writer makes true. A key comes back `NOT VALID` first (enforced for every new
//!   row from then on) and is then validated, which lets other sessions write meanwhile.
//!
//! Until the build, reads that would use those indexes (the API's pages and filters, the
//! enrichment's claims) scan their tables. The import holds a session-level advisory lock
//! ([`IMPORT_LOCK`]) while they may be missing because of it; the server releases it when the
//! session ends, killed or not, and [`build_missing`] (run by [`crate::PgStore`]'s open)
//! builds what is left missing only when it can take that lock, so never under a running
//! import.

use sqlx::PgConnection;

use crate::error::{Result, StoreError};
use crate::sqlite::DEFERRABLE_INDEXES;

/// The advisory lock key of a PostgreSQL import that may drop indexes ("headroom" in ASCII).
/// Advisory locks are per database, so imports into different databases do not contend.
pub(crate) const IMPORT_LOCK: i64 = 0x6865_6164_726f_6f6d;

/// The index names of push_events, actors and repositories.
const INDEXES_SQL: &str = "SELECT indexname::TEXT FROM pg_indexes \
    WHERE schemaname = current_schema() \
    AND tablename IN ('push_events', 'actors', 'repositories')";

/// push_events' three other secondary indexes, deferred on PostgreSQL only (as the migrations
/// create them), each with its statement.
pub(crate) const PUSH_EVENT_INDEXES: [(&str, &str); 3] = [
    (
        "push_events_keyset",
        "CREATE INDEX IF NOT EXISTS push_events_keyset ON push_events (occurred_at_ms, id)",
    ),
    (
        "push_events_by_push_id",
        "CREATE INDEX IF NOT EXISTS push_events_by_push_id ON push_events (github_push_id)",
    ),
    (
        "push_events_created",
        "CREATE INDEX IF NOT EXISTS push_events_created ON push_events (created_at_ms)",
    ),
];

/// The secondary indexes of actors and repositories the import defers (as the migrations
/// create them), each with its statement. Not the unique ones (they decide conflicts), nor
/// the refresh pools' (partial over complete rows: an imported row, always pending, has no
/// entry in them).
pub(crate) const ENTITY_INDEXES: [(&str, &str); 9] = [
    (
        "actors_stage_fifo",
        "CREATE INDEX IF NOT EXISTS actors_stage_fifo \
         ON actors (enrichment_stage, created_at_ms, id)",
    ),
    (
        "actors_candidates",
        "CREATE INDEX IF NOT EXISTS actors_candidates \
         ON actors (enrichment_status, created_at_ms, id)",
    ),
    (
        "actors_lease",
        "CREATE INDEX IF NOT EXISTS actors_lease ON actors (lease_expires_at_ms)",
    ),
    (
        "actors_login",
        "CREATE INDEX IF NOT EXISTS actors_login ON actors (login)",
    ),
    (
        "repositories_stage_fifo",
        "CREATE INDEX IF NOT EXISTS repositories_stage_fifo \
         ON repositories (enrichment_stage, created_at_ms, id)",
    ),
    (
        "repositories_candidates",
        "CREATE INDEX IF NOT EXISTS repositories_candidates \
         ON repositories (enrichment_status, created_at_ms, id)",
    ),
    (
        "repositories_lease",
        "CREATE INDEX IF NOT EXISTS repositories_lease ON repositories (lease_expires_at_ms)",
    ),
    (
        "repositories_full_name",
        "CREATE INDEX IF NOT EXISTS repositories_full_name ON repositories (full_name)",
    ),
    (
        "repositories_by_organization",
        "CREATE INDEX IF NOT EXISTS repositories_by_organization \
         ON repositories (organization_id)",
    ),
];

/// Every index the import defers, with its statement.
fn deferred_indexes() -> impl Iterator<Item = &'static (&'static str, &'static str)> {
    DEFERRABLE_INDEXES
        .iter()
        .chain(PUSH_EVENT_INDEXES.iter())
        .chain(ENTITY_INDEXES.iter())
}

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

/// Whether any deferred index is missing, or any of [`DEFERRABLE_FOREIGN_KEYS`] missing or
/// not validated.
async fn any_missing(conn: &mut PgConnection) -> Result<bool> {
    let present: Vec<String> = sqlx::query_scalar(INDEXES_SQL)
        .fetch_all(&mut *conn)
        .await?;
    if deferred_indexes().any(|(name, _)| !present.iter().any(|p| p == name)) {
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
    build_indexes(conn, deferred_indexes()).await?;
    build_foreign_keys(conn).await
}

/// As [`build`], on two connections at once: push_events' random-key indexes and its
/// foreign keys on `main`, its other indexes and the entity tables' on `second`. After an
/// import's last commit, usually all built already (see [`build_entity_indexes`] and
/// [`build_push_event_indexes`]).
async fn build_on_two(main: &mut PgConnection, second: &mut PgConnection) -> Result<()> {
    let (keys, rest) = tokio::join!(
        build_keyed(main),
        build_indexes(
            second,
            PUSH_EVENT_INDEXES.iter().chain(ENTITY_INDEXES.iter())
        ),
    );
    keys?;
    rest
}

/// push_events' random-key indexes, then its foreign keys.
async fn build_keyed(conn: &mut PgConnection) -> Result<()> {
    build_indexes(conn, DEFERRABLE_INDEXES.iter()).await?;
    build_foreign_keys(conn).await
}

/// Builds push_events' deferred indexes and foreign keys on two connections at once (after
/// 200,000 envelopes about 0.55 and 0.4 s), once the import's last events are committed.
/// Best effort: what fails here is built again, and then reported, at the finish.
pub(super) async fn build_push_event_indexes(main: &mut PgConnection, second: &mut PgConnection) {
    let _ = tokio::join!(
        build_keyed(main),
        build_indexes(second, PUSH_EVENT_INDEXES.iter())
    );
}

/// Builds the deferred indexes of `table` (`actors` or `repositories`) on `conn`, once the
/// import's last rows of that table are committed. Best effort, as
/// [`build_push_event_indexes`].
pub(super) async fn build_entity_indexes(conn: &mut PgConnection, table: &str) {
    let prefix = format!("{table}_");
    let own = ENTITY_INDEXES
        .iter()
        .filter(|(name, _)| name.starts_with(&prefix));
    let _ = build_indexes(conn, own).await;
}

async fn build_indexes(
    conn: &mut PgConnection,
    indexes: impl Iterator<Item = &'static (&'static str, &'static str)>,
) -> Result<()> {
    for (_, ddl) in indexes {
        sqlx::query(*ddl).execute(&mut *conn).await?;
    }
    Ok(())
}

/// Adds the missing foreign keys (`NOT VALID`: enforced for new rows at once) and validates
/// every one not validated yet.
async fn build_foreign_keys(conn: &mut PgConnection) -> Result<()> {
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
    /// Whether this writer dropped [`DEFERRABLE_FOREIGN_KEYS`] itself and holds the lock:
    /// no key to the entities is checked on push_events, not even a `NOT VALID` one (which
    /// checks every new row).
    foreign_keys_absent: bool,
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
                foreign_keys_absent: false,
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
            foreign_keys_absent: false,
            locked: true,
        })
    }

    /// Whether push_events checks no foreign key to actors or repositories until the finish,
    /// so that events may be written before their entities are committed.
    pub(super) fn foreign_keys_absent(&self) -> bool {
        self.foreign_keys_absent
    }

    /// Whether indexes or foreign keys are missing and the finish builds them.
    pub(super) fn owes_build(&self) -> bool {
        self.dropped
    }

    /// Counts rows this writer created.
    pub(super) fn created(&mut self, rows: u64) {
        self.created += rows;
    }

    /// Drops the indexes once this import has earned it: outside the window's transaction,
    /// each drop a transaction of its own, so push_events is locked exclusively only for an
    /// instant rather than for a whole window.
    pub(super) async fn drop_when_due(&mut self, conn: &mut PgConnection) -> Result<()> {
        if self.foreign_keys_absent || !self.locked || self.created < self.existing {
            return Ok(());
        }
        for (name, _) in deferred_indexes() {
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
        self.foreign_keys_absent = true;
        Ok(())
    }

    /// Builds the indexes if owed (the rows are committed: a failure leaves them to the next
    /// open), then gives the lock up: nothing is missing because of this writer any more.
    pub(super) async fn finish(
        &mut self,
        conn: &mut PgConnection,
        second: &mut PgConnection,
    ) -> Result<()> {
        if self.dropped {
            build_on_two(conn, second).await.map_err(|e| {
                StoreError::Database(format!(
                    "building push_events' indexes and foreign keys after the import (the \
                     events are stored; opening the store again builds them): {e}"
                ))
            })?;
            self.dropped = false;
            self.foreign_keys_absent = false;
        }
        if self.locked {
            unlock(conn).await?;
            self.locked = false;
        }
        Ok(())
    }
}
