//! The window's entities: the two connections that write actors and repositories at a
//! window's commit (and, on the first, its quarantined envelopes), the commit that orders
//! them before the lanes' events ([`commit_apart`]), and the batch whose entities the window
//! folds in while the next batch's COPYs run ([`Unabsorbed`]).

use std::collections::BTreeMap;

use sqlx::PgConnection;

use super::deferral;
use super::lane::{Lane, writer_session};
use crate::QuarantinedEvent;
use crate::bulk::{BulkItem, BulkPush};
use crate::db::Conn;
use crate::error::{Result, StoreError};
use crate::model::PushEventWrite;
use crate::push::fold::{ActorIdentity, EntityFold, Pending, RepositoryIdentity};
use crate::push::group::{
    ACTOR_COLUMNS, ACTOR_UPDATE, REPOSITORY_COLUMNS, REPOSITORY_UPDATE, insert_events,
    write_entities,
};
use crate::push::quarantine_on;

/// The connections writing the window's actors and repositories at its commit; the first
/// also writes the window's quarantined envelopes, in a transaction committed with its
/// actors, while the lanes write the batch's events.
pub(super) struct EntityWriters {
    actors: PgConnection,
    repositories: PgConnection,
    /// Whether a transaction holding quarantined envelopes is open on `actors`.
    quarantine_open: bool,
}

impl EntityWriters {
    pub(super) async fn open(pool: &sqlx::PgPool) -> Result<Self> {
        let (actors, repositories) = tokio::try_join!(writer_session(pool), writer_session(pool))?;
        Ok(Self {
            actors,
            repositories,
            quarantine_open: false,
        })
    }

    /// Quarantines `envelopes` in the window's transaction, one at a time (a fingerprint
    /// may come twice). Returns each one's occurrence count.
    pub(super) async fn quarantine(&mut self, envelopes: &[&QuarantinedEvent]) -> Result<Vec<u64>> {
        let mut counts = Vec::with_capacity(envelopes.len());
        for e in envelopes {
            if !self.quarantine_open {
                sqlx::query("BEGIN").execute(&mut self.actors).await?;
                self.quarantine_open = true;
            }
            let row = quarantine_on(&mut Conn::Pg(&mut self.actors), e).await?;
            counts.push(row.occurrence_count);
        }
        Ok(counts)
    }

    /// Commits the quarantined envelopes' transaction, if one is open.
    pub(super) async fn commit_quarantine(&mut self) -> Result<()> {
        if self.quarantine_open {
            sqlx::query("COMMIT").execute(&mut self.actors).await?;
            self.quarantine_open = false;
        }
        Ok(())
    }

    /// After an error: the quarantined envelopes' transaction rolled back.
    pub(super) async fn abandon(&mut self) -> Option<StoreError> {
        if !std::mem::take(&mut self.quarantine_open) {
            return None;
        }
        sqlx::query("ROLLBACK")
            .execute(&mut self.actors)
            .await
            .err()
            .map(StoreError::from)
    }
}

/// A batch's items, kept for the window to absorb later, with whether each push was new.
pub(super) struct Unabsorbed {
    items: Vec<BulkItem>,
    new: Vec<bool>,
    /// The fold's batch number it had.
    batch: u64,
}

impl Unabsorbed {
    pub(super) fn new(items: Vec<BulkItem>, new: Vec<bool>, batch: u64) -> Self {
        Self { items, new, batch }
    }

    pub(super) fn pushes(&self) -> impl Iterator<Item = (&BulkPush, bool)> {
        self.items
            .iter()
            .filter_map(|item| match item {
                BulkItem::Push(push) => Some(&**push),
                BulkItem::Quarantine(_) => None,
            })
            .zip(self.new.iter().copied())
    }

    pub(super) fn absorb_into(self, window: &mut EntityFold) {
        let current = std::mem::replace(&mut window.batch, self.batch);
        for (push, new) in self.pushes() {
            window.absorb(&push.event, new);
        }
        window.batch = current;
    }
}

/// Absorbs `previous` into `window` a few hundred events at a time, yielding between them so
/// the COPYs it runs beside keep sending.
pub(super) async fn absorb_interleaved(window: &mut EntityFold, previous: Option<Unabsorbed>) {
    const STRIDE: usize = 256;
    let Some(previous) = previous else {
        return;
    };
    let current = std::mem::replace(&mut window.batch, previous.batch);
    for (k, (push, new)) in previous.pushes().enumerate() {
        if k % STRIDE == 0 {
            tokio::task::yield_now().await;
        }
        window.absorb(&push.event, new);
    }
    window.batch = current;
    // The batch's items are freed here too, beside the COPYs.
    drop(previous);
}

/// A window's commit when its entities are written on connections of their own: actors and
/// repositories at once, each one statement committed as it ends, then, once both are, the
/// lanes' events. Returns the events the lanes added.
///
/// Two writers splitting each entity table cost more in all, their inserts meeting on the
/// same index pages, and finished no sooner. Neither entity writer waits on the other
/// holding locks, so no third writer can deadlock with them. Every branch runs to its end
/// even when another fails, so no connection is left mid-statement.
///
/// With `build` (the last commit of an import that deferred indexes), each connection goes
/// on to build what its rows need as soon as they are committed: an entity table's indexes
/// on the connection that wrote it, push_events' on the lanes, all at once rather than one
/// table after another (after 200,000 envelopes the finish took 2.4 s built in turn).
/// Those builds are best effort; [`super::deferral::IndexDeferral::finish`] builds and reports what is left.
pub(super) async fn commit_apart(
    entities: &mut EntityWriters,
    lanes: &mut [Lane; 2],
    window: &EntityFold,
    build: bool,
) -> Result<u64> {
    let EntityWriters {
        actors: actors_conn,
        repositories: repositories_conn,
        quarantine_open,
    } = entities;
    let [main, second] = lanes;
    let (actors_done, actors_stored) = tokio::sync::oneshot::channel::<bool>();
    let (repositories_done, repositories_stored) = tokio::sync::oneshot::channel::<bool>();
    let (actors, repositories, events) = tokio::join!(
        async {
            // In the transaction holding the window's quarantined envelopes, if one is open.
            let mut written = write_actors(&mut Conn::Pg(&mut *actors_conn), &window.actors).await;
            if written.is_ok() && *quarantine_open {
                written = sqlx::query("COMMIT")
                    .execute(&mut *actors_conn)
                    .await
                    .map(|_| ())
                    .map_err(StoreError::from);
                *quarantine_open = false;
            }
            let _ = actors_done.send(written.is_ok());
            if build && written.is_ok() {
                deferral::build_entity_indexes(actors_conn, "actors").await;
            }
            written
        },
        async {
            let written =
                write_repositories(&mut Conn::Pg(&mut *repositories_conn), &window.repositories)
                    .await;
            let _ = repositories_done.send(written.is_ok());
            if build && written.is_ok() {
                deferral::build_entity_indexes(repositories_conn, "repositories").await;
            }
            written
        },
        async {
            // The events commit only after both tables' rows have.
            let (a, r) = (actors_stored.await, repositories_stored.await);
            if a != Ok(true) || r != Ok(true) {
                return Ok(0);
            }
            let (a, b) = tokio::join!(main.insert_staged(), second.insert_staged());
            let inserted = a? + b?;
            if build {
                deferral::build_push_event_indexes(&mut main.conn, &mut second.conn).await;
            }
            Ok::<_, StoreError>(inserted)
        },
    );
    actors?;
    repositories?;
    events
}

pub(super) async fn write_actors(conn: &mut Conn<'_>, rows: &Rows<ActorIdentity>) -> Result<()> {
    write_entities(conn, "actors", ACTOR_COLUMNS, ACTOR_UPDATE, rows).await
}

pub(super) async fn write_repositories(
    conn: &mut Conn<'_>,
    rows: &Rows<RepositoryIdentity>,
) -> Result<()> {
    write_entities(
        conn,
        "repositories",
        REPOSITORY_COLUMNS,
        REPOSITORY_UPDATE,
        rows,
    )
    .await
}

/// A window's entity rows of one table, by GitHub id.
pub(super) type Rows<I> = BTreeMap<i64, Pending<I>>;

/// One event into push_events, after rows for its actor and repository.
pub(super) async fn insert_at_once(
    conn: &mut PgConnection,
    event: &PushEventWrite,
    raw: &str,
) -> Result<()> {
    let fold = EntityFold::of_group(&[event], &[false]);
    let mut conn = Conn::Pg(conn);
    let nothing = "ON CONFLICT (github_id) DO NOTHING";
    write_entities(&mut conn, "actors", ACTOR_COLUMNS, nothing, &fold.actors).await?;
    write_entities(
        &mut conn,
        "repositories",
        REPOSITORY_COLUMNS,
        nothing,
        &fold.repositories,
    )
    .await?;
    match insert_events(&mut conn, &[event], &[raw]).await? {
        1 => Ok(()),
        _ => Err(StoreError::Conflict(
            "push event stored by another writer during the batch".into(),
        )),
    }
}
