//! An import's turn on a PostgreSQL database: one import writes it at a time. Two writers of
//! overlapping files each wait on the other's uncommitted rows on one connection while that
//! other waits on theirs on another, which PostgreSQL cannot see as a deadlock: three imports
//! of one file stalled until the sessions' idle-in-transaction timeout, and of two, one always
//! failed. So the writer first takes a session-level advisory lock ([`IMPORT_TURN_LOCK`]) on a
//! connection of its own, before its writing connections open, and holds it to its end; a
//! second import waits for it and then finds the first one's events as duplicates. The server
//! releases the lock when the session ends, the holder killed or not.

use sqlx::PgConnection;

use crate::bulk::{WaitNotice, import_turn_label};
use crate::error::Result;

/// The advisory lock key of an import's turn ("hr-turns" in ASCII); not
/// [`super::deferral::IMPORT_LOCK`], which the import takes on another session while its
/// indexes may be missing. Advisory locks are per database: imports into different databases
/// do not wait for each other.
pub(crate) const IMPORT_TURN_LOCK: i64 = i64::from_be_bytes(*b"hr-turns");

/// How the holder's session names itself in `pg_stat_activity.application_name`, followed by
/// [`import_turn_label`], so that a waiter can say whom it waits for.
const NAME_PREFIX: &str = "headroom import, ";

/// The session holding [`IMPORT_TURN_LOCK`] in this database: its name and backend pid.
const HOLDER_SQL: &str = "SELECT a.application_name::TEXT, l.pid FROM pg_locks l \
    JOIN pg_stat_activity a ON a.pid = l.pid \
    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 \
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
    AND l.classid::BIGINT = ($1::BIGINT >> 32) AND l.objid::BIGINT = ($1::BIGINT & 4294967295) \
    LIMIT 1";

/// The turn, held for as long as this value (its session) lives.
pub(super) struct ImportTurn {
    conn: PgConnection,
}

impl ImportTurn {
    /// Waits for the turn on a connection taken out of the pool (it never goes back with the
    /// lock), telling `on_wait` first who holds it if it must wait.
    pub(super) async fn take(pool: &sqlx::PgPool, on_wait: Option<WaitNotice>) -> Result<Self> {
        let mut conn = pool.acquire().await?.detach();
        // The session idles for the whole import: no server timeout may end it (and so
        // release the lock under a running import), nor stop the wait for it. Each setting
        // alone, best effort: idle_session_timeout is PostgreSQL 14's.
        for (setting, value) in [
            ("statement_timeout", "0"),
            ("lock_timeout", "0"),
            ("idle_session_timeout", "0"),
        ] {
            let _ = sqlx::query("SELECT set_config($1, $2, false)")
                .bind(setting)
                .bind(value)
                .execute(&mut conn)
                .await;
        }
        // What the server keeps as written (it turns other characters into `?`), within
        // its 63 bytes.
        let name: String = format!("{NAME_PREFIX}{}", import_turn_label())
            .chars()
            .filter(|c| c.is_ascii_graphic() || *c == ' ')
            .take(63)
            .collect();
        sqlx::query("SELECT set_config('application_name', $1, false)")
            .bind(name)
            .execute(&mut conn)
            .await?;
        let free: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(IMPORT_TURN_LOCK)
            .fetch_one(&mut conn)
            .await?;
        if !free {
            if let Some(notice) = on_wait {
                notice(&holder(&mut conn).await);
            }
            sqlx::query("SELECT pg_advisory_lock($1)")
                .bind(IMPORT_TURN_LOCK)
                .execute(&mut conn)
                .await?;
        }
        Ok(Self { conn })
    }

    /// Gives the turn up now, then closes its session (dropping it only closes the session,
    /// which releases the lock a moment later).
    pub(super) async fn end(mut self) -> Result<()> {
        sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(IMPORT_TURN_LOCK)
            .execute(&mut self.conn)
            .await?;
        sqlx::Connection::close(self.conn).await?;
        Ok(())
    }
}

/// Who holds the turn, as far as the server says (another role's session may hide its name).
async fn holder(conn: &mut PgConnection) -> String {
    let found: Option<(Option<String>, i32)> = sqlx::query_as(HOLDER_SQL)
        .bind(IMPORT_TURN_LOCK)
        .fetch_optional(&mut *conn)
        .await
        .ok()
        .flatten();
    match found {
        Some((name, pid)) => name
            .as_deref()
            .and_then(|name| name.strip_prefix(NAME_PREFIX))
            .map_or_else(|| format!("PostgreSQL backend pid {pid}"), str::to_owned),
        None => "another session".to_owned(),
    }
}
