//! The entity window of the SQLite bulk writer: each actor and repository named since the
//! last commit, folded from its events by the shared [`EntityFold`], and the flush that
//! writes each once, in id order, touching rows whose identity is unchanged.

use super::*;
use crate::push::fold::{ActorIdentity, EntityFold, Identity, Pending, RepositoryIdentity, split};

/// The statements that write an entity's row (parameters below, at [`ACTOR_TOUCH`]).
pub(super) trait Statements: Identity {
    const TOUCH: &'static str;
    const UPDATE: &'static str;
    const INSERT: &'static str;
    /// Whether a row with GitHub id ?1 exists.
    const EXISTS: &'static str;
}

impl Statements for ActorIdentity {
    const TOUCH: &'static str = ACTOR_TOUCH;
    const UPDATE: &'static str = ACTOR_UPDATE;
    const INSERT: &'static str = ACTOR_INSERT;
    const EXISTS: &'static str = "SELECT EXISTS (SELECT 1 FROM actors WHERE github_id = ?1)";
}

impl Statements for RepositoryIdentity {
    const TOUCH: &'static str = REPOSITORY_TOUCH;
    const UPDATE: &'static str = REPOSITORY_UPDATE;
    const INSERT: &'static str = REPOSITORY_INSERT;
    const EXISTS: &'static str = "SELECT EXISTS (SELECT 1 FROM repositories WHERE github_id = ?1)";
}

/// The entity rows the open transaction owes, one per actor and repository named since the
/// last commit: [`EntityWindow::absorb`] folds events in, [`EntityWindow::flush`] writes.
#[derive(Debug, Default)]
pub(super) struct EntityWindow {
    /// The fold since the last commit; its batch counts from the writer's start.
    pub(super) fold: EntityFold,
    /// Whether most actors, and most repositories, of the last window were new rows: then
    /// the next window tries each row's insert first (see [`flush_into`]). `None` before the
    /// writer's first window, which asks the table instead.
    actors_mostly_new: Option<bool>,
    repositories_mostly_new: Option<bool>,
}

impl EntityWindow {
    /// Entities held.
    pub(super) fn len(&self) -> usize {
        self.fold.len()
    }

    /// Folds in one stored event (`is_new`: it was not a duplicate), as writing the events
    /// one by one would.
    pub(super) fn absorb(&mut self, event: &PushEventWrite, is_new: bool) {
        self.fold.absorb(event, is_new);
    }

    /// Writes every entity row, in id order (index locality), and empties the window.
    pub(super) fn flush(&mut self, conn: &Connection) -> Result<()> {
        self.actors_mostly_new = Some(flush_into(
            conn,
            &mut self.fold.actors,
            self.actors_mostly_new,
        )?);
        self.repositories_mostly_new = Some(flush_into(
            conn,
            &mut self.fold.repositories,
            self.repositories_mostly_new,
        )?);
        Ok(())
    }
}

/// Rows [`mostly_missing`] looks up.
pub(super) const PROBE_SAMPLE: usize = 32;

/// Whether most of `map`'s rows are absent from the table, judged from up to
/// [`PROBE_SAMPLE`] of them spread over the window: a writer's first window has no previous
/// one to go by, and an import of one GH Archive hour is often a single window.
pub(super) fn mostly_missing<I: Statements>(
    conn: &Connection,
    map: &BTreeMap<i64, Pending<I>>,
) -> Result<bool> {
    let step = map.len().div_ceil(PROBE_SAMPLE).max(1);
    let mut exists = conn.prepare_cached(I::EXISTS)?;
    let (mut sampled, mut missing) = (0usize, 0usize);
    for id in map.keys().step_by(step) {
        sampled += 1;
        if !exists.query_row([id], |row| row.get::<_, bool>(0))? {
            missing += 1;
        }
    }
    Ok(missing * 2 > sampled)
}

/// Touches the row, else updates it, else inserts it; or, when most rows are expected to be
/// new (most of the last window's were, or, in the first window, most of a sample are
/// missing), tries the insert first, which spares a new row the two statements that would
/// miss. Either order leaves the same row. Returns whether most rows were new this time.
pub(super) fn flush_into<I: Statements>(
    conn: &Connection,
    map: &mut BTreeMap<i64, Pending<I>>,
    last_mostly_new: Option<bool>,
) -> Result<bool> {
    let insert_first = match last_mostly_new {
        Some(known) => known,
        None => mostly_missing(conn, map)?,
    };
    let mut touch = conn.prepare_cached(I::TOUCH)?;
    let mut update = conn.prepare_cached(I::UPDATE)?;
    let mut insert = conn.prepare_cached(I::INSERT)?;
    let total = map.len();
    let mut created = 0usize;
    for (id, p) in std::mem::take(map) {
        let (first, last, latest) = split(p.activity);
        let [c2, c3, c4, c5] = p.identity.columns();
        let values = params![
            id,
            c2,
            c3,
            c4,
            c5,
            p.last_received,
            first,
            last,
            latest,
            p.first_received,
        ];
        let new = if insert_first && insert.execute(values)? == 1 {
            true
        } else if touch.execute(&values[..9])? == 1 || update.execute(&values[..9])? == 1 {
            false
        } else if insert.execute(values)? == 1 {
            true
        } else {
            // Unreachable while this transaction holds the write lock.
            return Err(StoreError::Database(format!(
                "entity {id} was neither updated nor inserted"
            )));
        };
        created += usize::from(new);
    }
    Ok(created * 2 > total)
}

// The entity statements' parameters: ?1 the GitHub id, ?2–?5 the identity (actor: login,
// display login, URL, avatar URL; repository: full name, name, owner, URL), ?6 the last
// arrival (`updated_at_ms`), ?7–?9 the activity (first seen, last seen, latest event; NULL
// when no new event named it, which leaves activity alone), and for an insert ?10, the first
// arrival (the creation instants of a new row).

/// `SET` assignments moving activity forward (?7–?9), for every entity statement.
macro_rules! activity {
    () => {
        "first_seen_at_ms = COALESCE(first_seen_at_ms, ?7), \
         last_seen_at_ms = CASE WHEN ?8 IS NOT NULL \
             AND (last_seen_at_ms IS NULL OR last_seen_at_ms < ?8) THEN ?8 ELSE last_seen_at_ms END, \
         latest_event_at_ms = CASE WHEN ?9 IS NOT NULL \
             AND (latest_event_at_ms IS NULL OR latest_event_at_ms < ?9) THEN ?9 ELSE latest_event_at_ms END"
    };
}

/// Tried first: the row when its identity is unchanged (the usual case), writing only the
/// update instant and activity. An UPDATE that assigns an indexed column rewrites that index
/// entry even when the value is the same, so leaving `login` out of the common case saves a
/// delete and an insert in `actors_login` per entity.
pub(super) const ACTOR_TOUCH: &str = concat!(
    "UPDATE actors SET updated_at_ms = ?6, ",
    activity!(),
    " WHERE github_id = ?1 AND login = ?2 AND display_login IS ?3 \
     AND detail_url IS COALESCE(?4, detail_url) AND avatar_url IS COALESCE(?5, avatar_url)"
);

/// Then the whole row, when it exists. (A plain UPDATE, not an upsert: the upsert evaluates
/// the table's `CHECK (… IN (…))` constraints for its insert half on every call, building
/// two ephemeral tables each time.)
pub(super) const ACTOR_UPDATE: &str = concat!(
    "UPDATE actors SET login = ?2, display_login = ?3, \
     detail_url = COALESCE(?4, detail_url), avatar_url = COALESCE(?5, avatar_url), \
     updated_at_ms = ?6, ",
    activity!(),
    " WHERE github_id = ?1"
);

/// A new row: after the update missed (the transaction holds the write lock, so nobody
/// inserted it meanwhile), or first, when most rows of the last window were new; the
/// `DO NOTHING` then says the row exists.
pub(super) const ACTOR_INSERT: &str = "INSERT INTO actors (github_id, login, display_login, detail_url, \
    avatar_url, event_native_at_ms, batch_pending_at_ms, created_at_ms, updated_at_ms, \
    first_seen_at_ms, last_seen_at_ms, latest_event_at_ms) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?10, ?10, ?10, ?6, ?7, ?8, ?9) \
    ON CONFLICT (github_id) DO NOTHING";

/// [`ACTOR_TOUCH`] for repositories (`full_name` is indexed).
pub(super) const REPOSITORY_TOUCH: &str = concat!(
    "UPDATE repositories SET updated_at_ms = ?6, ",
    activity!(),
    " WHERE github_id = ?1 AND full_name = ?2 AND name IS ?3 AND owner_login IS ?4 \
     AND detail_url IS COALESCE(?5, detail_url)"
);

/// [`ACTOR_UPDATE`] for repositories.
pub(super) const REPOSITORY_UPDATE: &str = concat!(
    "UPDATE repositories SET full_name = ?2, name = ?3, \
     owner_login = ?4, detail_url = COALESCE(?5, detail_url), updated_at_ms = ?6, ",
    activity!(),
    " WHERE github_id = ?1"
);

/// [`ACTOR_INSERT`] for repositories.
pub(super) const REPOSITORY_INSERT: &str = "INSERT INTO repositories (github_id, full_name, name, \
    owner_login, detail_url, event_native_at_ms, batch_pending_at_ms, created_at_ms, \
    updated_at_ms, first_seen_at_ms, last_seen_at_ms, latest_event_at_ms) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?10, ?10, ?10, ?6, ?7, ?8, ?9) \
    ON CONFLICT (github_id) DO NOTHING";
