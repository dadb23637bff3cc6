//! Writing a group of push events on either backend, in a transaction the caller holds:
//! which events are new (not stored, not earlier in the group), each entity once from the
//! [`EntityFold`], then the new events. PostgreSQL binds each step as arrays (`UNNEST`: a
//! handful of round trips whatever the group's size); SQLite as multi-row `VALUES` with
//! anonymous parameters. A group that fails is undone by its savepoint and its events are
//! written one at a time, so only the bad ones fail.

use std::collections::HashSet;

use super::fold::{EntityFold, Identity, Pending, split};
use crate::db::{Conn, on_each_conn};
use crate::error::{Result, StoreError};
use crate::model::{PushEventWrite, ms};

/// The columns an entity row is written with: identity, then `event_native_at_ms`, the
/// three stage-entry/creation/update instants, then activity (first seen, last seen, latest
/// event), which is NULL when no new event named the entity and then leaves activity alone.
pub(crate) const ACTOR_COLUMNS: &str = "github_id, login, display_login, detail_url, avatar_url, \
    event_native_at_ms, batch_pending_at_ms, created_at_ms, updated_at_ms, \
    first_seen_at_ms, last_seen_at_ms, latest_event_at_ms";

pub(crate) const ACTOR_UPDATE: &str = "ON CONFLICT (github_id) DO UPDATE SET login = excluded.login, \
    display_login = excluded.display_login, \
    detail_url = COALESCE(excluded.detail_url, actors.detail_url), \
    avatar_url = COALESCE(excluded.avatar_url, actors.avatar_url), \
    updated_at_ms = excluded.updated_at_ms, \
    first_seen_at_ms = COALESCE(actors.first_seen_at_ms, excluded.first_seen_at_ms), \
    last_seen_at_ms = CASE WHEN excluded.last_seen_at_ms IS NOT NULL \
        AND (actors.last_seen_at_ms IS NULL OR actors.last_seen_at_ms < excluded.last_seen_at_ms) \
        THEN excluded.last_seen_at_ms ELSE actors.last_seen_at_ms END, \
    latest_event_at_ms = CASE WHEN excluded.latest_event_at_ms IS NOT NULL \
        AND (actors.latest_event_at_ms IS NULL OR actors.latest_event_at_ms < excluded.latest_event_at_ms) \
        THEN excluded.latest_event_at_ms ELSE actors.latest_event_at_ms END";

pub(crate) const REPOSITORY_COLUMNS: &str = "github_id, full_name, name, owner_login, detail_url, \
    event_native_at_ms, batch_pending_at_ms, created_at_ms, updated_at_ms, \
    first_seen_at_ms, last_seen_at_ms, latest_event_at_ms";

pub(crate) const REPOSITORY_UPDATE: &str = "ON CONFLICT (github_id) DO UPDATE SET \
    full_name = excluded.full_name, name = excluded.name, owner_login = excluded.owner_login, \
    detail_url = COALESCE(excluded.detail_url, repositories.detail_url), \
    updated_at_ms = excluded.updated_at_ms, \
    first_seen_at_ms = COALESCE(repositories.first_seen_at_ms, excluded.first_seen_at_ms), \
    last_seen_at_ms = CASE WHEN excluded.last_seen_at_ms IS NOT NULL \
        AND (repositories.last_seen_at_ms IS NULL OR repositories.last_seen_at_ms < excluded.last_seen_at_ms) \
        THEN excluded.last_seen_at_ms ELSE repositories.last_seen_at_ms END, \
    latest_event_at_ms = CASE WHEN excluded.latest_event_at_ms IS NOT NULL \
        AND (repositories.latest_event_at_ms IS NULL OR repositories.latest_event_at_ms < excluded.latest_event_at_ms) \
        THEN excluded.latest_event_at_ms ELSE repositories.latest_event_at_ms END";

/// The columns of a push_events row, in the order every writer binds them.
pub(crate) const PUSH_COLUMNS: &str = "github_event_id, github_push_id, github_actor_id, \
    github_repository_id, actor_login, repository_name, ref, head_sha, before_sha, \
    commit_count, distinct_commit_count, occurred_at_ms, ingestion_run_id, source, \
    created_at_ms, raw_json";

/// Rows per multi-row SQLite statement (16 parameters per event keeps far below its limit).
const SQLITE_ROWS: usize = 200;

/// Writes `events` (with `raws[i]` the JSON text of `events[i]`'s envelope) under one
/// savepoint; if any of it fails, the savepoint is rolled back and the events are written
/// one by one, each under its own, so the result — one entry per event: new, duplicate, or
/// that event's error — is the same as writing them singly. The outer error is the
/// transaction's own failure.
pub(crate) async fn write_events(
    conn: &mut Conn<'_>,
    events: &[&PushEventWrite],
    raws: &[&str],
) -> Result<Vec<Result<bool>>> {
    match in_savepoint(conn, events, raws).await? {
        Ok(new) => Ok(new.into_iter().map(Ok).collect()),
        Err(_) => {
            let mut outcome = Vec::with_capacity(events.len());
            for (event, raw) in events.iter().zip(raws) {
                outcome.push(write_event(conn, event, raw).await?);
            }
            Ok(outcome)
        }
    }
}

/// One event under its own savepoint: `Ok(Err(_))` is this event's failure, the
/// transaction still usable. A conflict with a writer that stored the same event meanwhile
/// is taken again once, when the event reads as stored: a duplicate, not a failure.
pub(crate) async fn write_event(
    conn: &mut Conn<'_>,
    event: &PushEventWrite,
    raw: &str,
) -> Result<Result<bool>> {
    let one = std::slice::from_ref(&event);
    let raws = std::slice::from_ref(&raw);
    match in_savepoint(conn, one, raws).await? {
        Err(e) if e.is_conflict() => Ok(in_savepoint(conn, one, raws).await?.map(|new| new[0])),
        written => Ok(written.map(|new| new[0])),
    }
}

/// A group under a savepoint: the outer error is the transaction's own failure, the inner
/// one the group's (its savepoint rolled back, the transaction still usable).
async fn in_savepoint(
    conn: &mut Conn<'_>,
    events: &[&PushEventWrite],
    raws: &[&str],
) -> Result<Result<Vec<bool>>> {
    execute(conn, "SAVEPOINT headroom_push").await?;
    match write_group(conn, events, raws).await {
        Ok(new) => {
            execute(conn, "RELEASE SAVEPOINT headroom_push").await?;
            Ok(Ok(new))
        }
        Err(error) => {
            execute(conn, "ROLLBACK TO SAVEPOINT headroom_push").await?;
            execute(conn, "RELEASE SAVEPOINT headroom_push").await?;
            Ok(Err(error))
        }
    }
}

async fn execute(conn: &mut Conn<'_>, sql: &'static str) -> Result<()> {
    on_each_conn!(conn, |c| {
        sqlx::query(sql).execute(&mut *c).await?;
        Ok(())
    })
}

/// The group's steps. Fails as a whole.
async fn write_group(
    conn: &mut Conn<'_>,
    events: &[&PushEventWrite],
    raws: &[&str],
) -> Result<Vec<bool>> {
    let new = new_events(conn, events).await?;
    let fold = EntityFold::of_group(events, &new);
    write_entities(conn, "actors", ACTOR_COLUMNS, ACTOR_UPDATE, &fold.actors).await?;
    write_entities(
        conn,
        "repositories",
        REPOSITORY_COLUMNS,
        REPOSITORY_UPDATE,
        &fold.repositories,
    )
    .await?;
    let (chosen, chosen_raws): (Vec<&PushEventWrite>, Vec<&str>) = events
        .iter()
        .zip(raws)
        .zip(&new)
        .filter(|(_, is_new)| **is_new)
        .map(|((event, raw), _)| (*event, *raw))
        .unzip();
    if chosen.is_empty() {
        return Ok(new);
    }
    let inserted = insert_events(conn, &chosen, &chosen_raws).await?;
    if inserted != chosen.len() as u64 {
        return Err(StoreError::Conflict(
            "push events appeared during the batch".into(),
        ));
    }
    Ok(new)
}

/// Which of `$1` (event ids) push_events holds, on PostgreSQL.
pub(crate) const STORED_EVENT_IDS: &str =
    "SELECT github_event_id FROM push_events WHERE github_event_id = ANY($1)";

/// For each event of the group, whether it is new: not stored yet and not earlier in the
/// group.
async fn new_events(conn: &mut Conn<'_>, events: &[&PushEventWrite]) -> Result<Vec<bool>> {
    let ids: Vec<&str> = events.iter().map(|e| e.github_event_id.as_str()).collect();
    let mut stored: HashSet<String> = HashSet::new();
    match conn {
        Conn::Pg(c) => {
            stored.extend(
                sqlx::query_scalar::<_, String>(STORED_EVENT_IDS)
                    .bind(&ids)
                    .fetch_all(&mut **c)
                    .await?,
            );
        }
        Conn::Sqlite(c) => {
            for chunk in ids.chunks(SQLITE_ROWS) {
                let sql = format!(
                    "SELECT github_event_id FROM push_events WHERE github_event_id IN ({})",
                    vec!["?"; chunk.len()].join(", ")
                );
                let mut query = sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(sql));
                for id in chunk {
                    query = query.bind(*id);
                }
                stored.extend(query.fetch_all(&mut **c).await?);
            }
        }
    }
    let mut fresh: HashSet<&str> = HashSet::with_capacity(ids.len());
    Ok(ids
        .iter()
        .map(|id| !stored.contains(*id) && fresh.insert(id))
        .collect())
}

/// `(?, …), (…)` for `rows` rows of `columns` anonymous parameters.
fn sqlite_rows(rows: usize, columns: usize) -> String {
    let row = format!("({})", vec!["?"; columns].join(", "));
    vec![row; rows].join(", ")
}

/// One entity table's rows of the group, each once.
pub(crate) async fn write_entities<I: Identity>(
    conn: &mut Conn<'_>,
    table: &str,
    columns: &str,
    update: &str,
    rows: &std::collections::BTreeMap<i64, Pending<I>>,
) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    match conn {
        Conn::Pg(c) => {
            let n = rows.len();
            let mut ids = Vec::with_capacity(n);
            let mut identity: [Vec<Option<&str>>; 4] = Default::default();
            let (mut created, mut updated) = (Vec::with_capacity(n), Vec::with_capacity(n));
            let (mut first, mut last, mut latest) = (
                Vec::with_capacity(n),
                Vec::with_capacity(n),
                Vec::with_capacity(n),
            );
            for (id, p) in rows {
                ids.push(*id);
                for (column, value) in identity.iter_mut().zip(p.identity.columns()) {
                    column.push(value);
                }
                created.push(p.first_received);
                updated.push(p.last_received);
                let (f, l, x) = split(p.activity);
                first.push(f);
                last.push(l);
                latest.push(x);
            }
            let [c2, c3, c4, c5] = identity;
            let sql = format!(
                "INSERT INTO {table} ({columns}) \
                 SELECT c1, c2, c3, c4, c5, c6, c6, c6, c7, c8, c9, c10 \
                 FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], \
                     $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[]) \
                     AS u(c1, c2, c3, c4, c5, c6, c7, c8, c9, c10) {update}"
            );
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(ids)
                .bind(c2)
                .bind(c3)
                .bind(c4)
                .bind(c5)
                .bind(created)
                .bind(updated)
                .bind(first)
                .bind(last)
                .bind(latest)
                .execute(&mut **c)
                .await?;
        }
        Conn::Sqlite(c) => {
            let rows: Vec<(&i64, &Pending<I>)> = rows.iter().collect();
            for chunk in rows.chunks(SQLITE_ROWS) {
                let sql = format!(
                    "INSERT INTO {table} ({columns}) VALUES {} {update}",
                    sqlite_rows(chunk.len(), 12)
                );
                let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
                for (id, p) in chunk {
                    let [c2, c3, c4, c5] = p.identity.columns();
                    let (first, last, latest) = split(p.activity);
                    query = query
                        .bind(**id)
                        .bind(c2)
                        .bind(c3)
                        .bind(c4)
                        .bind(c5)
                        .bind(p.first_received)
                        .bind(p.first_received)
                        .bind(p.first_received)
                        .bind(p.last_received)
                        .bind(first)
                        .bind(last)
                        .bind(latest);
                }
                query.execute(&mut **c).await?;
            }
        }
    }
    Ok(())
}

/// The group's new events, in group order; returns the rows inserted.
pub(crate) async fn insert_events(
    conn: &mut Conn<'_>,
    chosen: &[&PushEventWrite],
    raws: &[&str],
) -> Result<u64> {
    match conn {
        Conn::Pg(c) => {
            let int = |f: fn(&PushEventWrite) -> Option<i64>| -> Vec<Option<i64>> {
                chosen.iter().map(|e| f(e)).collect()
            };
            let text = |f: fn(&PushEventWrite) -> &str| -> Vec<&str> {
                chosen.iter().map(|e| f(e)).collect()
            };
            let sql = format!(
                "INSERT INTO push_events ({PUSH_COLUMNS}) \
                 SELECT c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15, \
                     CAST(c16 AS JSON) \
                 FROM UNNEST($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], \
                     $6::text[], $7::text[], $8::text[], $9::text[], $10::bigint[], $11::bigint[], \
                     $12::bigint[], $13::bigint[], $14::text[], $15::bigint[], $16::text[]) \
                     WITH ORDINALITY AS u(c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, \
                     c14, c15, c16, n) \
                 ORDER BY n \
                 ON CONFLICT (github_event_id) DO NOTHING"
            );
            Ok(sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(text(|e| &e.github_event_id))
                .bind(int(|e| e.github_push_id))
                .bind(int(|e| Some(e.actor.github_id)))
                .bind(int(|e| Some(e.repository.github_id)))
                .bind(text(|e| &e.actor.login))
                .bind(text(|e| &e.repository.full_name))
                .bind(text(|e| &e.git_ref))
                .bind(text(|e| &e.head_sha))
                .bind(
                    chosen
                        .iter()
                        .map(|e| e.before_sha.as_deref())
                        .collect::<Vec<Option<&str>>>(),
                )
                .bind(int(|e| e.commit_count))
                .bind(int(|e| e.distinct_commit_count))
                .bind(int(|e| Some(ms(e.occurred_at))))
                .bind(int(|e| e.ingestion_run_id))
                .bind(text(|e| e.origin.as_str()))
                .bind(int(|e| Some(ms(e.received_at))))
                .bind(raws.to_vec())
                .execute(&mut **c)
                .await?
                .rows_affected())
        }
        Conn::Sqlite(c) => {
            let mut inserted = 0;
            let rows: Vec<(&&PushEventWrite, &&str)> = chosen.iter().zip(raws).collect();
            for chunk in rows.chunks(SQLITE_ROWS) {
                let sql = format!(
                    "INSERT INTO push_events ({PUSH_COLUMNS}) VALUES {} \
                     ON CONFLICT (github_event_id) DO NOTHING",
                    sqlite_rows(chunk.len(), 16)
                );
                let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
                for (ev, raw) in chunk {
                    query = query
                        .bind(ev.github_event_id.as_str())
                        .bind(ev.github_push_id)
                        .bind(ev.actor.github_id)
                        .bind(ev.repository.github_id)
                        .bind(ev.actor.login.as_str())
                        .bind(ev.repository.full_name.as_str())
                        .bind(ev.git_ref.as_str())
                        .bind(ev.head_sha.as_str())
                        .bind(ev.before_sha.as_deref())
                        .bind(ev.commit_count)
                        .bind(ev.distinct_commit_count)
                        .bind(ms(ev.occurred_at))
                        .bind(ev.ingestion_run_id)
                        .bind(ev.origin.as_str())
                        .bind(ms(ev.received_at))
                        .bind(**raw);
                }
                inserted += query.execute(&mut **c).await?.rows_affected();
            }
            Ok(inserted)
        }
    }
}
