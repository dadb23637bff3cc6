//! The store of a command that only reads (`status`, `sync status`, `serve`): the read halves
//! of every aggregate over one pool that cannot write — an SQLite file opened read-only
//! ([`SqliteStore::open_read_only`], readable in a read-only directory), a PostgreSQL session
//! in read-only transactions ([`PgStore::connect_read_only`]). Nothing is created, migrated or
//! repaired: a database this binary's migrations have not all reached is refused.

use std::sync::Arc;

use crate::error::{Result, StoreError};
use crate::feed_report::FeedReport;
use crate::feed_state::FeedStateRead;
use crate::quota_history::QuotaHistory;
use crate::{PgStore, SqliteStore, StoreRead};

/// The read halves, over one pool.
#[derive(Debug, Clone)]
pub struct ReadStores {
    /// Credentials, sync runs, checkpoints, usage; [`StoreRead::close`] closes the pool.
    pub store: Arc<dyn StoreRead>,
    /// The feed's state.
    pub feed: Arc<dyn FeedStateRead>,
    /// The feed's report queries.
    pub report: Arc<dyn FeedReport>,
    /// Quota readings, sync-run pages, observations.
    pub history: Arc<dyn QuotaHistory>,
}

/// Opens the existing store named by `target` (as [`crate::open`] names it) read-only.
pub async fn open_read_only(target: &str) -> Result<ReadStores> {
    if target.starts_with("postgres://") || target.starts_with("postgresql://") {
        let store = Arc::new(PgStore::connect_read_only(target).await?);
        Ok(ReadStores {
            store: store.clone(),
            feed: store.clone(),
            report: store.clone(),
            history: store,
        })
    } else {
        let store = Arc::new(SqliteStore::open_read_only(target).await?);
        Ok(ReadStores {
            store: store.clone(),
            feed: store.clone(),
            report: store.clone(),
            history: store,
        })
    }
}

/// Refuses a database that lacks one of `migrator`'s migrations (`applied`: the versions it
/// records as applied): a read-only command cannot upgrade it, and this binary's queries may
/// need what the missing one adds.
pub(crate) fn require_current(
    target: &str,
    migrator: &sqlx::migrate::Migrator,
    applied: &[i64],
) -> Result<()> {
    let missing: Vec<i64> = migrator
        .iter()
        .filter(|m| !m.migration_type.is_down_migration())
        .map(|m| m.version)
        .filter(|v| !applied.contains(v))
        .collect();
    match missing.first() {
        None => Ok(()),
        Some(first) => Err(StoreError::open(
            target,
            format!(
                "its schema is older than this headroom's ({} missing, from {first}); \
                 a read-only command never upgrades it: run a command that writes (ingest, \
                 import, run, sync org) first",
                headroom_core::words::counted(missing.len() as u64, "migration", "migrations")
            ),
        )),
    }
}
