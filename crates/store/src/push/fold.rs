//! The push-event fold: from a sequence of stored events (each new or a duplicate), the one
//! row per actor and repository that writing those events one at a time would leave — the
//! identity as the last event naming it gives it (a URL an event lacks keeps the one before),
//! and activity (first seen, last seen, latest event) moved by new events only. Every writer
//! of push events (the page path on either backend, the PostgreSQL bulk writer, the SQLite
//! bulk writer's window) folds through this one type and only differs in the statements it
//! sends. Pure.

use std::collections::BTreeMap;

use crate::model::{ActorRef, PushEventWrite, RepositoryRef, ms};

/// (first seen, last seen, latest event) over an entity's new events, epoch milliseconds.
pub(crate) type Activity = (i64, i64, i64);

/// The three activity columns, NULL when no new event named the entity (which leaves the
/// stored activity alone).
pub(crate) fn split(activity: Option<Activity>) -> (Option<i64>, Option<i64>, Option<i64>) {
    match activity {
        Some((first, last, latest)) => (Some(first), Some(last), Some(latest)),
        None => (None, None, None),
    }
}

/// An entity's identity columns as the events name it.
pub(crate) trait Identity: Sized {
    /// What an event carries about the entity.
    type Source;
    /// The identity one event gives.
    fn of(source: &Self::Source) -> Self;
    /// As writing `source`'s event after the earlier ones would: a name replaces the old
    /// one, a URL the event lacks keeps the one before.
    fn refresh(&mut self, source: &Self::Source);
    /// The four identity columns: actor (login, display login, URL, avatar URL); repository
    /// (full name, name, owner, URL).
    fn columns(&self) -> [Option<&str>; 4];
}

/// Replaces `old` with `new` unless they are equal (no allocation in the usual case).
fn assign<T: PartialEq + Clone>(old: &mut T, new: &T) {
    if old != new {
        old.clone_from(new);
    }
}

/// An actor's identity as the events name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ActorIdentity {
    login: String,
    display_login: Option<String>,
    url: Option<String>,
    avatar_url: Option<String>,
}

impl Identity for ActorIdentity {
    type Source = ActorRef;

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
pub(crate) struct RepositoryIdentity {
    full_name: String,
    url: Option<String>,
}

impl Identity for RepositoryIdentity {
    type Source = RepositoryRef;

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

/// What is written for one entity: the same row as writing each of its events in turn would
/// leave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pending<I> {
    /// The identity columns.
    pub(crate) identity: I,
    /// The creation instants of a new row: when the last event naming it in the first batch
    /// that did arrived (what writing that batch on its own would have stored).
    pub(crate) first_received: i64,
    /// That batch.
    first_batch: u64,
    /// When the last one did (`updated_at_ms`).
    pub(crate) last_received: i64,
    /// Over its new events only.
    pub(crate) activity: Option<Activity>,
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

/// The entity rows owed for the events folded in so far, in id order (writers write in id
/// order for index locality, without a sorted copy).
#[derive(Debug, Default)]
pub(crate) struct EntityFold {
    /// One per actor named.
    pub(crate) actors: BTreeMap<i64, Pending<ActorIdentity>>,
    /// One per repository named.
    pub(crate) repositories: BTreeMap<i64, Pending<RepositoryIdentity>>,
    /// The batch being absorbed: a writer that keeps one fold across several batches (the
    /// SQLite bulk writer's window) counts them, so creation instants are the first batch's.
    pub(crate) batch: u64,
}

impl EntityFold {
    /// The fold of one group of events: `new[i]` says whether `events[i]` was stored anew.
    pub(crate) fn of_group(events: &[&PushEventWrite], new: &[bool]) -> Self {
        let mut fold = Self::default();
        for (event, &is_new) in events.iter().zip(new) {
            fold.absorb(event, is_new);
        }
        fold
    }

    /// Entities held.
    pub(crate) fn len(&self) -> usize {
        self.actors.len() + self.repositories.len()
    }

    /// Folds in one stored event (`is_new`: it was not a duplicate), as writing the events
    /// one by one would.
    pub(crate) fn absorb(&mut self, event: &PushEventWrite, is_new: bool) {
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
}

/// (received, occurred, new, batch) of one event.
type Sighting = (i64, i64, bool, u64);

fn absorb_into<I: Identity>(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EventOrigin;
    use headroom_core::clock::Timestamp;
    use proptest::prelude::*;

    fn event(spec: &(i64, i64, i64, i64, u8, bool, bool)) -> PushEventWrite {
        let &(actor, repo, received, occurred, tag, has_url, _) = spec;
        let at =
            |s: i64| Timestamp::from_second(1_800_000_000 + s).unwrap_or(Timestamp::UNIX_EPOCH);
        let url = has_url.then(|| format!("https://api.github.com/x/{tag}"));
        PushEventWrite {
            github_event_id: format!("{actor}-{repo}-{tag}"),
            github_push_id: None,
            actor: ActorRef {
                github_id: actor,
                login: format!("login{tag}"),
                display_login: None,
                url: url.clone(),
                avatar_url: None,
            },
            repository: RepositoryRef {
                github_id: repo,
                full_name: format!("o/r{tag}"),
                url,
            },
            git_ref: "refs/heads/main".into(),
            head_sha: String::new(),
            before_sha: None,
            commit_count: None,
            distinct_commit_count: None,
            occurred_at: at(occurred),
            received_at: at(received),
            ingestion_run_id: None,
            origin: EventOrigin::Gharchive,
            raw: serde_json::Value::Null,
        }
    }

    /// A stored entity row as the one-by-one writes move it.
    #[derive(Debug, Default, Clone, PartialEq)]
    struct Row {
        name: String,
        url: Option<String>,
        created: i64,
        updated: i64,
        activity: Option<Activity>,
    }

    /// Writes one event's entity the way the single-event statements do.
    fn write_one(
        rows: &mut BTreeMap<i64, Row>,
        id: i64,
        name: &str,
        url: &Option<String>,
        e: &PushEventWrite,
        new: bool,
    ) {
        let (seen, occurred) = (ms(e.received_at), ms(e.occurred_at));
        let row = rows.entry(id).or_insert_with(|| Row {
            created: seen,
            ..Row::default()
        });
        row.name = name.to_owned();
        if url.is_some() {
            row.url.clone_from(url);
        }
        row.updated = seen;
        if new {
            row.activity = Some(row.activity.map_or((seen, seen, occurred), |(f, l, x)| {
                (f.min(seen), l.max(seen), x.max(occurred))
            }));
        }
    }

    proptest! {
        /// Folding a group equals writing its events one at a time: identity from the last
        /// event naming an entity (a missing URL keeps the earlier one), activity over the
        /// new events only. (Creation instants are the group's last sighting, as writing the
        /// group as one page stores them, so they are compared against that.)
        #[test]
        fn the_fold_is_the_one_by_one_writes(
            specs in proptest::collection::vec(
                (0i64..4, 0i64..4, 0i64..50, 0i64..50, any::<u8>(), any::<bool>(), any::<bool>()),
                1..40,
            )
        ) {
            let events: Vec<PushEventWrite> = specs.iter().map(event).collect();
            let refs: Vec<&PushEventWrite> = events.iter().collect();
            let new: Vec<bool> = specs.iter().map(|s| s.6).collect();
            let fold = EntityFold::of_group(&refs, &new);
            let (mut actors, mut repositories) = (BTreeMap::new(), BTreeMap::new());
            let mut last_seen: BTreeMap<(bool, i64), i64> = BTreeMap::new();
            for (e, &is_new) in events.iter().zip(&new) {
                write_one(&mut actors, e.actor.github_id, &e.actor.login, &e.actor.url, e, is_new);
                write_one(&mut repositories, e.repository.github_id, &e.repository.full_name, &e.repository.url, e, is_new);
                last_seen.insert((true, e.actor.github_id), ms(e.received_at));
                last_seen.insert((false, e.repository.github_id), ms(e.received_at));
            }
            prop_assert_eq!(fold.actors.len(), actors.len());
            prop_assert_eq!(fold.repositories.len(), repositories.len());
            for (id, row) in &actors {
                let got = &fold.actors[id];
                let [login, _, url, _] = got.identity.columns();
                prop_assert_eq!(login, Some(row.name.as_str()));
                prop_assert_eq!(url, row.url.as_deref());
                prop_assert_eq!(got.last_received, row.updated);
                prop_assert_eq!(got.first_received, last_seen[&(true, *id)]);
                prop_assert_eq!(got.activity, row.activity);
            }
            for (id, row) in &repositories {
                let got = &fold.repositories[id];
                let [full_name, _, _, url] = got.identity.columns();
                prop_assert_eq!(full_name, Some(row.name.as_str()));
                prop_assert_eq!(url, row.url.as_deref());
                prop_assert_eq!(got.activity, row.activity);
            }
        }
    }
}
