//! The entity window of the SQLite bulk writer: each actor and repository named since the
//! last commit, folded from its events, and the flush that writes each once, in id order,
//! touching rows whose identity is unchanged.

use super::*;

/// An entity's identity columns as the events name them, and the statements that write its
/// row (parameters below, at [`ACTOR_TOUCH`]).
pub(super) trait Identity: Sized {
    /// What an event carries about the entity.
    type Source;
    const TOUCH: &'static str;
    const UPDATE: &'static str;
    const INSERT: &'static str;
    /// Whether a row with GitHub id ?1 exists.
    const EXISTS: &'static str;
    fn of(source: &Self::Source) -> Self;
    /// As writing `source`'s event after the earlier ones would: a name replaces the old
    /// one, a URL the event lacks keeps the one before.
    fn refresh(&mut self, source: &Self::Source);
    /// Parameters ?2–?5.
    fn columns(&self) -> [Option<&str>; 4];
}

/// Replaces `old` with `new` unless they are equal (no allocation in the usual case).
pub(super) fn assign<T: PartialEq + Clone>(old: &mut T, new: &T) {
    if old != new {
        old.clone_from(new);
    }
}

/// An actor's identity as the events name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ActorIdentity {
    login: String,
    display_login: Option<String>,
    url: Option<String>,
    avatar_url: Option<String>,
}

impl Identity for ActorIdentity {
    type Source = ActorRef;
    const TOUCH: &'static str = ACTOR_TOUCH;
    const UPDATE: &'static str = ACTOR_UPDATE;
    const INSERT: &'static str = ACTOR_INSERT;
    const EXISTS: &'static str = "SELECT EXISTS (SELECT 1 FROM actors WHERE github_id = ?1)";

    fn of(actor: &ActorRef) -> Self {
        Self {
            login: actor.login.clone(),
            display_login: actor.display_login.clone(),
            url: actor.url.clone(),
            avatar_url: actor.avatar_url.clone(),
        }
    }

    fn refresh(&mut self, actor: &ActorRef) {
        assign(&mut self.login, &actor.login);
        assign(&mut self.display_login, &actor.display_login);
        if actor.url.is_some() {
            assign(&mut self.url, &actor.url);
        }
        if actor.avatar_url.is_some() {
            assign(&mut self.avatar_url, &actor.avatar_url);
        }
    }

    fn columns(&self) -> [Option<&str>; 4] {
        [
            Some(&self.login),
            self.display_login.as_deref(),
            self.url.as_deref(),
            self.avatar_url.as_deref(),
        ]
    }
}

/// A repository's identity as the events name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RepositoryIdentity {
    full_name: String,
    url: Option<String>,
}

impl Identity for RepositoryIdentity {
    type Source = RepositoryRef;
    const TOUCH: &'static str = REPOSITORY_TOUCH;
    const UPDATE: &'static str = REPOSITORY_UPDATE;
    const INSERT: &'static str = REPOSITORY_INSERT;
    const EXISTS: &'static str = "SELECT EXISTS (SELECT 1 FROM repositories WHERE github_id = ?1)";

    fn of(repository: &RepositoryRef) -> Self {
        Self {
            full_name: repository.full_name.clone(),
            url: repository.url.clone(),
        }
    }

    fn refresh(&mut self, repository: &RepositoryRef) {
        assign(&mut self.full_name, &repository.full_name);
        if repository.url.is_some() {
            assign(&mut self.url, &repository.url);
        }
    }

    fn columns(&self) -> [Option<&str>; 4] {
        let (owner, name) = match self.full_name.split_once('/') {
            Some((owner, name)) => (Some(owner), Some(name)),
            None => (None, None),
        };
        [Some(&self.full_name), name, owner, self.url.as_deref()]
    }
}

/// What the window writes for one entity: the same row as writing each of its events in
/// turn would leave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pending<I> {
    identity: I,
    /// The creation instants of a new row: when the last event naming it in the first batch
    /// that did arrived (what writing that batch on its own would have stored).
    first_received: i64,
    /// That batch.
    first_batch: u64,
    /// When the last one did (`updated_at_ms`).
    last_received: i64,
    /// Over its new events only.
    activity: Option<Activity>,
}

impl<I> Pending<I> {
    fn new(identity: I, received: i64, batch: u64) -> Self {
        Self {
            identity,
            first_received: received,
            first_batch: batch,
            last_received: received,
            activity: None,
        }
    }

    fn saw(&mut self, received: i64, occurred: i64, is_new: bool, batch: u64) {
        if self.first_batch == batch {
            self.first_received = received;
        }
        self.last_received = received;
        if is_new {
            self.activity = Some(match self.activity {
                None => (received, received, occurred),
                Some((first, last, latest)) => (
                    first.min(received),
                    last.max(received),
                    latest.max(occurred),
                ),
            });
        }
    }
}

/// The entity rows the open transaction owes, one per actor and repository named since the
/// last commit. Pure: [`EntityWindow::absorb`] folds events in, [`EntityWindow::flush`] writes.
#[derive(Debug, Default)]
pub(super) struct EntityWindow {
    // Ordered maps: the flush writes in id order without a sorted copy of the window.
    actors: BTreeMap<i64, Pending<ActorIdentity>>,
    repositories: BTreeMap<i64, Pending<RepositoryIdentity>>,
    /// The batch being absorbed (counted from the writer's start).
    pub(super) batch: u64,
    /// Whether most actors, and most repositories, of the last window were new rows: then
    /// the next window tries each row's insert first (see [`flush_into`]). `None` before the
    /// writer's first window, which asks the table instead.
    actors_mostly_new: Option<bool>,
    repositories_mostly_new: Option<bool>,
}

impl EntityWindow {
    /// Entities held.
    pub(super) fn len(&self) -> usize {
        self.actors.len() + self.repositories.len()
    }

    /// Folds in one stored event (`is_new`: it was not a duplicate), as writing the events
    /// one by one would.
    pub(super) fn absorb(&mut self, event: &PushEventWrite, is_new: bool) {
        let (received, occurred) = (ms(event.received_at), ms(event.occurred_at));
        let at = (received, occurred, is_new, self.batch);
        absorb_into(&mut self.actors, event.actor.github_id, &event.actor, at);
        absorb_into(
            &mut self.repositories,
            event.repository.github_id,
            &event.repository,
            at,
        );
    }

    /// Writes every entity row, in id order (index locality), and empties the window.
    pub(super) fn flush(&mut self, conn: &Connection) -> Result<()> {
        self.actors_mostly_new = Some(flush_into(conn, &mut self.actors, self.actors_mostly_new)?);
        self.repositories_mostly_new = Some(flush_into(
            conn,
            &mut self.repositories,
            self.repositories_mostly_new,
        )?);
        Ok(())
    }
}

/// (received, occurred, new, batch) of one event.
pub(super) type Sighting = (i64, i64, bool, u64);

pub(super) fn absorb_into<I: Identity>(
    map: &mut BTreeMap<i64, Pending<I>>,
    id: i64,
    source: &I::Source,
    (received, occurred, is_new, batch): Sighting,
) {
    map.entry(id)
        .and_modify(|p| p.identity.refresh(source))
        .or_insert_with(|| Pending::new(I::of(source), received, batch))
        .saw(received, occurred, is_new, batch);
}

/// Rows [`mostly_missing`] looks up.
pub(super) const PROBE_SAMPLE: usize = 32;

/// Whether most of `map`'s rows are absent from the table, judged from up to
/// [`PROBE_SAMPLE`] of them spread over the window: a writer's first window has no previous
/// one to go by, and an import of one GH Archive hour is often a single window.
pub(super) fn mostly_missing<I: Identity>(
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
pub(super) fn flush_into<I: Identity>(
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
