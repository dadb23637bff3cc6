//! The queries both backends share. SQLite and PostgreSQL accept the same `$N` placeholders,
//! `INSERT … ON CONFLICT … DO UPDATE`, `RETURNING` and `excluded.`, and sqlx encodes JSON as
//! TEXT or JSONB by backend, so most SQL is written once here and instantiated for each
//! backend's concrete types by [`store_impl!`]. What differs (opening, migrations, the catalog
//! query) lives in `sqlite.rs` and `postgres.rs`.

/// Column lists, so that every query reading a type reads the same columns.
pub(crate) const CREDENTIAL_COLUMNS: &str =
    "id, host, fingerprint, subject_kind, owner_login, first_seen_at_ms, last_seen_at_ms";
pub(crate) const SYNC_RUN_COLUMNS: &str = "id, kind, target, host, subject, status, \
    requested_stages, not_before_at_ms, deferral_count, first_deferred_at_ms, total_wait_ms, \
    failure_reason, summary_json, claimed_by, claim_expires_at_ms, created_at_ms, started_at_ms, finished_at_ms, updated_at_ms";
pub(crate) const CHECKPOINT_COLUMNS: &str = "sync_run_id, stage, scope, status, page_cursor, \
    pages_done, rows_written, detail, updated_at_ms";
pub(crate) const OBSERVATION_COLUMNS: &str = "id, provider, host, subject, \
    credential_fingerprint, sync_run_id, bucket, route_family, route_family_attribution, \
    dimension, reason, retry_after_secs, reset_at_ms, rate_limit, remaining, used, request_id, \
    observed_at_ms";

pub(crate) const UPSERT_CHECKPOINT: &str = "INSERT INTO sync_checkpoints \
    (sync_run_id, stage, scope, status, page_cursor, pages_done, rows_written, detail, updated_at_ms) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
    ON CONFLICT (sync_run_id, stage, scope) DO UPDATE SET \
    status = excluded.status, page_cursor = excluded.page_cursor, \
    pages_done = sync_checkpoints.pages_done + excluded.pages_done, \
    rows_written = sync_checkpoints.rows_written + excluded.rows_written, \
    detail = excluded.detail, updated_at_ms = excluded.updated_at_ms";

/// Implements [`crate::Store`] and [`crate::StoreTx`] for one backend.
///
/// `$store` has a `pool: sqlx::Pool<$db>` field; `$tx` is declared here.
macro_rules! store_impl {
    ($store:ident, $tx:ident, $db:ty, $conn:ty, $backend:expr, $tables_sql:expr, $begin_sql:expr, $quota_state:ident, $anonymous_params:expr) => {
        use async_trait::async_trait;
        use headroom_core::clock::{SignedDuration, Timestamp};
        use headroom_core::redact::redact;
        use sqlx::Row as _;

        use crate::backend::{
            CHECKPOINT_COLUMNS, CREDENTIAL_COLUMNS, OBSERVATION_COLUMNS, SYNC_RUN_COLUMNS,
            UPSERT_CHECKPOINT,
        };
        use crate::error::{Result, StoreError};
        use crate::model::{
            self, Backend, Checkpoint, CheckpointStatus, CheckpointUpdate, Credential,
            CredentialSeen, FeedEntity, NewSyncRun, PushEventWrite, QuarantineRow,
            QuarantinedEvent, RateLimitObservation, StoredEtag, StoredObservation,
            StoredPushEvent, SubjectKind, SyncRun, SyncRunStatus, UsageRecord, UsageTotal,
            Watermark, from_ms, from_opt_ms, ms, to_i64, to_u64,
        };
        use crate::records::{Record, SqlValue, TABLES};
        use crate::{Store, StoreTx};

        type DbRow = <$db as sqlx::Database>::Row;
        type DbQuery<'q> = sqlx::query::Query<'q, $db, <$db as sqlx::Database>::Arguments>;

        fn get<T>(row: &DbRow, column: &'static str) -> Result<T>
        where
            T: for<'r> sqlx::Decode<'r, $db> + sqlx::Type<$db>,
        {
            row.try_get::<T, _>(column)
                .map_err(|e| StoreError::corrupt(column, e))
        }

        fn get_u64(row: &DbRow, column: &'static str) -> Result<u64> {
            to_u64(column, get::<i64>(row, column)?)
        }

        fn get_opt_u64(row: &DbRow, column: &'static str) -> Result<Option<u64>> {
            get::<Option<i64>>(row, column)?
                .map(|v| to_u64(column, v))
                .transpose()
        }

        fn get_json(row: &DbRow, column: &'static str) -> Result<Option<serde_json::Value>> {
            Ok(get::<Option<sqlx::types::Json<serde_json::Value>>>(row, column)?.map(|j| j.0))
        }

        fn opt_i64(field: &'static str, v: Option<u64>) -> Result<Option<i64>> {
            v.map(|v| to_i64(field, v)).transpose()
        }

        fn bind_value<'q>(query: DbQuery<'q>, value: &SqlValue) -> DbQuery<'q> {
            match value {
                SqlValue::Int(v) => query.bind(*v),
                SqlValue::Text(v) => query.bind(v.clone()),
                SqlValue::Bool(v) => query.bind(*v),
                SqlValue::Json(v) => query.bind(v.clone().map(sqlx::types::Json)),
            }
        }

        fn credential_from(row: &DbRow) -> Result<Credential> {
            Ok(Credential {
                id: get(row, "id")?,
                host: get(row, "host")?,
                fingerprint: get(row, "fingerprint")?,
                subject_kind: SubjectKind::parse(&get::<String>(row, "subject_kind")?)?,
                owner_login: get(row, "owner_login")?,
                first_seen_at: from_ms("first_seen_at_ms", get(row, "first_seen_at_ms")?)?,
                last_seen_at: from_ms("last_seen_at_ms", get(row, "last_seen_at_ms")?)?,
            })
        }

        fn sync_run_from(row: &DbRow) -> Result<SyncRun> {
            let stages = match get_json(row, "requested_stages")? {
                Some(value) => Some(
                    serde_json::from_value::<Vec<String>>(value)
                        .map_err(|e| StoreError::corrupt("requested_stages", e))?,
                ),
                None => None,
            };
            let deferrals = get::<i64>(row, "deferral_count")?;
            Ok(SyncRun {
                id: get(row, "id")?,
                kind: get(row, "kind")?,
                target: get(row, "target")?,
                host: get(row, "host")?,
                subject: get(row, "subject")?,
                status: SyncRunStatus::parse(&get::<String>(row, "status")?)?,
                requested_stages: stages,
                not_before: from_opt_ms("not_before_at_ms", get(row, "not_before_at_ms")?)?,
                deferral_count: u32::try_from(deferrals)
                    .map_err(|e| StoreError::corrupt("deferral_count", e))?,
                first_deferred_at: from_opt_ms(
                    "first_deferred_at_ms",
                    get(row, "first_deferred_at_ms")?,
                )?,
                total_wait: SignedDuration::from_millis(get(row, "total_wait_ms")?),
                failure_reason: get(row, "failure_reason")?,
                summary: get_json(row, "summary_json")?,
                claimed_by: get(row, "claimed_by")?,
                claim_expires_at: from_opt_ms(
                    "claim_expires_at_ms",
                    get(row, "claim_expires_at_ms")?,
                )?,
                created_at: from_ms("created_at_ms", get(row, "created_at_ms")?)?,
                started_at: from_opt_ms("started_at_ms", get(row, "started_at_ms")?)?,
                finished_at: from_opt_ms("finished_at_ms", get(row, "finished_at_ms")?)?,
                updated_at: from_ms("updated_at_ms", get(row, "updated_at_ms")?)?,
            })
        }

        fn checkpoint_from(row: &DbRow) -> Result<Checkpoint> {
            Ok(Checkpoint {
                sync_run_id: get(row, "sync_run_id")?,
                stage: get(row, "stage")?,
                scope: get(row, "scope")?,
                status: CheckpointStatus::parse(&get::<String>(row, "status")?)?,
                page_cursor: get(row, "page_cursor")?,
                pages_done: get_u64(row, "pages_done")?,
                rows_written: get_u64(row, "rows_written")?,
                detail: get(row, "detail")?,
                updated_at: from_ms("updated_at_ms", get(row, "updated_at_ms")?)?,
            })
        }

        fn observation_from(row: &DbRow) -> Result<StoredObservation> {
            Ok(StoredObservation {
                id: get(row, "id")?,
                provider: get(row, "provider")?,
                host: get(row, "host")?,
                subject: get(row, "subject")?,
                credential_fingerprint: get(row, "credential_fingerprint")?,
                sync_run_id: get(row, "sync_run_id")?,
                bucket: get(row, "bucket")?,
                route_family: get(row, "route_family")?,
                route_family_attribution: get(row, "route_family_attribution")?,
                dimension: get(row, "dimension")?,
                reason: get(row, "reason")?,
                retry_after_secs: get_opt_u64(row, "retry_after_secs")?,
                reset_at: from_opt_ms("reset_at_ms", get(row, "reset_at_ms")?)?,
                limit: get_opt_u64(row, "rate_limit")?,
                remaining: get_opt_u64(row, "remaining")?,
                used: get_opt_u64(row, "used")?,
                request_id: get(row, "request_id")?,
                observed_at: from_ms("observed_at_ms", get(row, "observed_at_ms")?)?,
            })
        }

        async fn upsert_on(conn: &mut $conn, record: &Record) -> Result<Option<i64>> {
            let spec = record.spec();
            let sql = spec.sql();
            let mut query = sqlx::query::<$db>(sqlx::AssertSqlSafe(sql));
            for (_, value) in &spec.values {
                query = bind_value(query, value);
            }
            if spec.returns_id {
                let row = query.fetch_one(&mut *conn).await?;
                Ok(Some(get::<i64>(&row, "id")?))
            } else {
                query.execute(&mut *conn).await?;
                Ok(None)
            }
        }

        async fn set_checkpoint_on(conn: &mut $conn, u: &CheckpointUpdate) -> Result<()> {
            sqlx::query::<$db>(UPSERT_CHECKPOINT)
                .bind(u.sync_run_id)
                .bind(u.stage.clone())
                .bind(u.scope.clone())
                .bind(u.status.as_str())
                .bind(u.page_cursor.clone())
                .bind(to_i64("pages_added", u.pages_added)?)
                .bind(to_i64("rows_added", u.rows_added)?)
                .bind(u.detail.clone())
                .bind(ms(u.at))
                .execute(&mut *conn)
                .await?;
            Ok(())
        }

        async fn set_watermark_on(
            conn: &mut $conn,
            repository_github_id: i64,
            watermark: Watermark,
            at: Timestamp,
        ) -> Result<()> {
            let column = watermark.column();
            let sql = format!(
                "UPDATE repositories SET {column} = $1 \
                 WHERE github_id = $2 AND ({column} IS NULL OR {column} < $1)"
            );
            let done = sqlx::query::<$db>(sqlx::AssertSqlSafe(sql))
                .bind(ms(at))
                .bind(repository_github_id)
                .execute(&mut *conn)
                .await?;
            if done.rows_affected() == 0 {
                let exists = sqlx::query::<$db>("SELECT 1 FROM repositories WHERE github_id = $1")
                    .bind(repository_github_id)
                    .fetch_optional(&mut *conn)
                    .await?;
                if exists.is_none() {
                    return Err(StoreError::NotFound(format!(
                        "repository {repository_github_id}"
                    )));
                }
            }
            Ok(())
        }

        async fn write_push_event_inner(conn: &mut $conn, ev: &PushEventWrite) -> Result<bool> {
            let received = ms(ev.received_at);
            sqlx::query::<$db>(
                "INSERT INTO actors (github_id, login, display_login, detail_url, avatar_url, \
                 event_native_at_ms, batch_pending_at_ms, created_at_ms, updated_at_ms) \
                 VALUES ($1, $2, $3, $4, $5, $6, $6, $6, $6) \
                 ON CONFLICT (github_id) DO UPDATE SET login = excluded.login, \
                 display_login = excluded.display_login, \
                 detail_url = COALESCE(excluded.detail_url, actors.detail_url), \
                 avatar_url = COALESCE(excluded.avatar_url, actors.avatar_url), \
                 updated_at_ms = excluded.updated_at_ms",
            )
            .bind(ev.actor.github_id)
            .bind(ev.actor.login.clone())
            .bind(ev.actor.display_login.clone())
            .bind(ev.actor.url.clone())
            .bind(ev.actor.avatar_url.clone())
            .bind(received)
            .execute(&mut *conn)
            .await?;
            let (owner, name) = match ev.repository.full_name.split_once('/') {
                Some((owner, name)) => (Some(owner.to_owned()), Some(name.to_owned())),
                None => (None, None),
            };
            sqlx::query::<$db>(
                "INSERT INTO repositories (github_id, full_name, name, owner_login, detail_url, \
                 event_native_at_ms, batch_pending_at_ms, created_at_ms, updated_at_ms) \
                 VALUES ($1, $2, $3, $4, $5, $6, $6, $6, $6) \
                 ON CONFLICT (github_id) DO UPDATE SET full_name = excluded.full_name, \
                 name = excluded.name, owner_login = excluded.owner_login, \
                 detail_url = COALESCE(excluded.detail_url, repositories.detail_url), \
                 updated_at_ms = excluded.updated_at_ms",
            )
            .bind(ev.repository.github_id)
            .bind(ev.repository.full_name.clone())
            .bind(name)
            .bind(owner)
            .bind(ev.repository.url.clone())
            .bind(received)
            .execute(&mut *conn)
            .await?;
            let inserted = sqlx::query::<$db>(
                "INSERT INTO push_events (github_event_id, github_push_id, github_actor_id, \
                 github_repository_id, actor_login, repository_name, ref, head_sha, before_sha, \
                 commit_count, distinct_commit_count, occurred_at_ms, ingestion_run_id, source, \
                 created_at_ms, raw_json) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) \
                 ON CONFLICT (github_event_id) DO NOTHING RETURNING id",
            )
            .bind(ev.github_event_id.clone())
            .bind(ev.github_push_id)
            .bind(ev.actor.github_id)
            .bind(ev.repository.github_id)
            .bind(ev.actor.login.clone())
            .bind(ev.repository.full_name.clone())
            .bind(ev.git_ref.clone())
            .bind(ev.head_sha.clone())
            .bind(ev.before_sha.clone())
            .bind(ev.commit_count)
            .bind(ev.distinct_commit_count)
            .bind(ms(ev.occurred_at))
            .bind(ev.ingestion_run_id)
            .bind(ev.origin.as_str())
            .bind(received)
            .bind(sqlx::types::Json(ev.raw.clone()))
            .fetch_optional(&mut *conn)
            .await?
            .is_some();
            if inserted {
                for table in ["actors", "repositories"] {
                    let id = if table == "actors" {
                        ev.actor.github_id
                    } else {
                        ev.repository.github_id
                    };
                    let sql = format!(
                        "UPDATE {table} SET first_seen_at_ms = COALESCE(first_seen_at_ms, $2), \
                         last_seen_at_ms = CASE WHEN last_seen_at_ms IS NULL OR last_seen_at_ms < $2 \
                             THEN $2 ELSE last_seen_at_ms END, \
                         latest_event_at_ms = CASE WHEN latest_event_at_ms IS NULL OR latest_event_at_ms < $3 \
                             THEN $3 ELSE latest_event_at_ms END \
                         WHERE github_id = $1"
                    );
                    sqlx::query::<$db>(sqlx::AssertSqlSafe(sql))
                        .bind(id)
                        .bind(received)
                        .bind(ms(ev.occurred_at))
                        .execute(&mut *conn)
                        .await?;
                }
            }
            Ok(inserted)
        }

        async fn write_push_event_on(conn: &mut $conn, ev: &PushEventWrite) -> Result<bool> {
            sqlx::query::<$db>("SAVEPOINT headroom_event")
                .execute(&mut *conn)
                .await?;
            match write_push_event_inner(conn, ev).await {
                Ok(inserted) => {
                    sqlx::query::<$db>("RELEASE SAVEPOINT headroom_event")
                        .execute(&mut *conn)
                        .await?;
                    Ok(inserted)
                }
                Err(error) => {
                    sqlx::query::<$db>("ROLLBACK TO SAVEPOINT headroom_event")
                        .execute(&mut *conn)
                        .await?;
                    sqlx::query::<$db>("RELEASE SAVEPOINT headroom_event")
                        .execute(&mut *conn)
                        .await?;
                    Err(error)
                }
            }
        }


        /// Rows per multi-row statement (16 parameters per event keeps far below both
        /// backends' parameter limits).
        const BATCH_ROWS: usize = 200;

        /// `(…), (…)` for a multi-row statement. SQLite gets anonymous `?` parameters: it looks
        /// a named parameter (`$N`) up by a linear scan on every bind, which makes a statement
        /// of a thousand `$N` parameters quadratic. PostgreSQL needs `$N`.
        fn placeholders(rows: usize, columns: usize, cast: bool) -> String {
            let mut out = String::with_capacity(rows * columns * 6);
            for r in 0..rows {
                if r > 0 {
                    out.push_str(", ");
                }
                out.push('(');
                for c in 0..columns {
                    if c > 0 {
                        out.push_str(", ");
                    }
                    let param = if $anonymous_params {
                        "?".to_owned()
                    } else {
                        format!("${}", r * columns + c + 1)
                    };
                    if cast {
                        out.push_str(&format!("CAST({param} AS BIGINT)"));
                    } else {
                        out.push_str(&param);
                    }
                }
                out.push(')');
            }
            out
        }

        /// The whole page in a handful of multi-row statements. Fails as a whole.
        async fn write_push_events_batch(
            conn: &mut $conn,
            events: &[PushEventWrite],
        ) -> Result<Vec<bool>> {
            use std::collections::{BTreeMap, HashSet};
            // Identity: the last event of the page naming an entity wins, as one by one.
            let mut actors: BTreeMap<i64, &PushEventWrite> = BTreeMap::new();
            let mut repositories: BTreeMap<i64, &PushEventWrite> = BTreeMap::new();
            for ev in events {
                actors.insert(ev.actor.github_id, ev);
                repositories.insert(ev.repository.github_id, ev);
            }
            let actors: Vec<&PushEventWrite> = actors.into_values().collect();
            for chunk in actors.chunks(BATCH_ROWS) {
                let sql = format!(
                    "INSERT INTO actors (github_id, login, display_login, detail_url, avatar_url, \
                     event_native_at_ms, batch_pending_at_ms, created_at_ms, updated_at_ms) \
                     VALUES {} \
                     ON CONFLICT (github_id) DO UPDATE SET login = excluded.login, \
                     display_login = excluded.display_login, \
                     detail_url = COALESCE(excluded.detail_url, actors.detail_url), \
                     avatar_url = COALESCE(excluded.avatar_url, actors.avatar_url), \
                     updated_at_ms = excluded.updated_at_ms",
                    placeholders(chunk.len(), 9, false)
                );
                let mut query = sqlx::query::<$db>(sqlx::AssertSqlSafe(sql));
                for ev in chunk {
                    let received = ms(ev.received_at);
                    query = query
                        .bind(ev.actor.github_id)
                        .bind(ev.actor.login.clone())
                        .bind(ev.actor.display_login.clone())
                        .bind(ev.actor.url.clone())
                        .bind(ev.actor.avatar_url.clone())
                        .bind(received)
                        .bind(received)
                        .bind(received)
                        .bind(received);
                }
                query.execute(&mut *conn).await?;
            }
            let repositories: Vec<&PushEventWrite> = repositories.into_values().collect();
            for chunk in repositories.chunks(BATCH_ROWS) {
                let sql = format!(
                    "INSERT INTO repositories (github_id, full_name, name, owner_login, detail_url, \
                     event_native_at_ms, batch_pending_at_ms, created_at_ms, updated_at_ms) \
                     VALUES {} \
                     ON CONFLICT (github_id) DO UPDATE SET full_name = excluded.full_name, \
                     name = excluded.name, owner_login = excluded.owner_login, \
                     detail_url = COALESCE(excluded.detail_url, repositories.detail_url), \
                     updated_at_ms = excluded.updated_at_ms",
                    placeholders(chunk.len(), 9, false)
                );
                let mut query = sqlx::query::<$db>(sqlx::AssertSqlSafe(sql));
                for ev in chunk {
                    let received = ms(ev.received_at);
                    let (owner, name) = match ev.repository.full_name.split_once('/') {
                        Some((owner, name)) => (Some(owner.to_owned()), Some(name.to_owned())),
                        None => (None, None),
                    };
                    query = query
                        .bind(ev.repository.github_id)
                        .bind(ev.repository.full_name.clone())
                        .bind(name)
                        .bind(owner)
                        .bind(ev.repository.url.clone())
                        .bind(received)
                        .bind(received)
                        .bind(received)
                        .bind(received);
                }
                query.execute(&mut *conn).await?;
            }
            let mut inserted_ids: HashSet<String> = HashSet::new();
            for chunk in events.chunks(BATCH_ROWS) {
                let sql = format!(
                    "INSERT INTO push_events (github_event_id, github_push_id, github_actor_id, \
                     github_repository_id, actor_login, repository_name, ref, head_sha, before_sha, \
                     commit_count, distinct_commit_count, occurred_at_ms, ingestion_run_id, source, \
                     created_at_ms, raw_json) VALUES {} \
                     ON CONFLICT (github_event_id) DO NOTHING RETURNING github_event_id",
                    placeholders(chunk.len(), 16, false)
                );
                let mut query = sqlx::query::<$db>(sqlx::AssertSqlSafe(sql));
                for ev in chunk {
                    query = query
                        .bind(ev.github_event_id.clone())
                        .bind(ev.github_push_id)
                        .bind(ev.actor.github_id)
                        .bind(ev.repository.github_id)
                        .bind(ev.actor.login.clone())
                        .bind(ev.repository.full_name.clone())
                        .bind(ev.git_ref.clone())
                        .bind(ev.head_sha.clone())
                        .bind(ev.before_sha.clone())
                        .bind(ev.commit_count)
                        .bind(ev.distinct_commit_count)
                        .bind(ms(ev.occurred_at))
                        .bind(ev.ingestion_run_id)
                        .bind(ev.origin.as_str())
                        .bind(ms(ev.received_at))
                        .bind(sqlx::types::Json(ev.raw.clone()));
                }
                for row in query.fetch_all(&mut *conn).await? {
                    inserted_ids.insert(get::<String>(&row, "github_event_id")?);
                }
            }
            // The first occurrence of an inserted id is the new one; repeats are duplicates.
            let mut outcome = Vec::with_capacity(events.len());
            // (first seen, last seen, latest event) per entity, over new events only.
            let mut actor_activity: BTreeMap<i64, (i64, i64, i64)> = BTreeMap::new();
            let mut repository_activity: BTreeMap<i64, (i64, i64, i64)> = BTreeMap::new();
            for ev in events {
                let new = inserted_ids.remove(&ev.github_event_id);
                outcome.push(new);
                if new {
                    let (seen, occurred) = (ms(ev.received_at), ms(ev.occurred_at));
                    for (map, id) in [
                        (&mut actor_activity, ev.actor.github_id),
                        (&mut repository_activity, ev.repository.github_id),
                    ] {
                        let entry = map.entry(id).or_insert((seen, seen, occurred));
                        entry.0 = entry.0.min(seen);
                        entry.1 = entry.1.max(seen);
                        entry.2 = entry.2.max(occurred);
                    }
                }
            }
            for (table, activity) in [
                ("actors", actor_activity),
                ("repositories", repository_activity),
            ] {
                let rows: Vec<(i64, (i64, i64, i64))> = activity.into_iter().collect();
                for chunk in rows.chunks(BATCH_ROWS) {
                    let sql = format!(
                        "UPDATE {table} SET \
                         first_seen_at_ms = COALESCE({table}.first_seen_at_ms, v.column2), \
                         last_seen_at_ms = CASE WHEN {table}.last_seen_at_ms IS NULL \
                             OR {table}.last_seen_at_ms < v.column3 \
                             THEN v.column3 ELSE {table}.last_seen_at_ms END, \
                         latest_event_at_ms = CASE WHEN {table}.latest_event_at_ms IS NULL \
                             OR {table}.latest_event_at_ms < v.column4 \
                             THEN v.column4 ELSE {table}.latest_event_at_ms END \
                         FROM (VALUES {}) AS v WHERE {table}.github_id = v.column1",
                        placeholders(chunk.len(), 4, true)
                    );
                    let mut query = sqlx::query::<$db>(sqlx::AssertSqlSafe(sql));
                    for (id, (first, last, latest)) in chunk {
                        query = query.bind(*id).bind(*first).bind(*last).bind(*latest);
                    }
                    query.execute(&mut *conn).await?;
                }
            }
            Ok(outcome)
        }

        async fn write_push_events_on(
            conn: &mut $conn,
            events: &[PushEventWrite],
        ) -> Result<Vec<Result<bool>>> {
            sqlx::query::<$db>("SAVEPOINT headroom_page")
                .execute(&mut *conn)
                .await?;
            match write_push_events_batch(conn, events).await {
                Ok(outcome) => {
                    sqlx::query::<$db>("RELEASE SAVEPOINT headroom_page")
                        .execute(&mut *conn)
                        .await?;
                    Ok(outcome.into_iter().map(Ok).collect())
                }
                Err(_) => {
                    // Something in the page is bad: undo the page and take the events one by
                    // one, each in its own savepoint, so only the bad ones fail.
                    sqlx::query::<$db>("ROLLBACK TO SAVEPOINT headroom_page")
                        .execute(&mut *conn)
                        .await?;
                    sqlx::query::<$db>("RELEASE SAVEPOINT headroom_page")
                        .execute(&mut *conn)
                        .await?;
                    let mut outcome = Vec::with_capacity(events.len());
                    for ev in events {
                        outcome.push(write_push_event_on(conn, ev).await);
                    }
                    Ok(outcome)
                }
            }
        }

        fn feed_entity_from(row: &DbRow) -> Result<FeedEntity> {
            Ok(FeedEntity {
                github_id: get(row, "github_id")?,
                name: get(row, "name")?,
                enrichment_status: get(row, "enrichment_status")?,
                enrichment_stage: get(row, "enrichment_stage")?,
                first_seen_at: from_opt_ms("first_seen_at_ms", get(row, "first_seen_at_ms")?)?,
                last_seen_at: from_opt_ms("last_seen_at_ms", get(row, "last_seen_at_ms")?)?,
                latest_event_at: from_opt_ms(
                    "latest_event_at_ms",
                    get(row, "latest_event_at_ms")?,
                )?,
            })
        }

        /// A transaction on this backend.
        pub struct $tx {
            tx: sqlx::Transaction<'static, $db>,
        }

        impl std::fmt::Debug for $tx {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($tx)).finish_non_exhaustive()
            }
        }

        #[async_trait]
        impl StoreTx for $tx {
            async fn upsert(&mut self, record: &Record) -> Result<Option<i64>> {
                upsert_on(&mut self.tx, record).await
            }

            async fn set_checkpoint(&mut self, update: &CheckpointUpdate) -> Result<()> {
                set_checkpoint_on(&mut self.tx, update).await
            }

            async fn set_watermark(
                &mut self,
                repository_github_id: i64,
                watermark: Watermark,
                at: Timestamp,
            ) -> Result<()> {
                set_watermark_on(&mut self.tx, repository_github_id, watermark, at).await
            }

            async fn write_push_event(&mut self, event: &PushEventWrite) -> Result<bool> {
                write_push_event_on(&mut self.tx, event).await
            }

            async fn write_push_events(
                &mut self,
                events: &[PushEventWrite],
            ) -> Result<Vec<Result<bool>>> {
                write_push_events_on(&mut self.tx, events).await
            }

            async fn commit(self: Box<Self>) -> Result<()> {
                self.tx.commit().await?;
                Ok(())
            }

            async fn rollback(self: Box<Self>) -> Result<()> {
                self.tx.rollback().await?;
                Ok(())
            }
        }

        #[async_trait]
        impl Store for $store {
            fn backend(&self) -> Backend {
                $backend
            }

            async fn close(&self) {
                self.pool.close().await;
            }

            fn quota_state(
                &self,
                config: headroom_core::governor::GovernorConfig,
                options: crate::PgGovernorOptions,
            ) -> std::result::Result<
                std::sync::Arc<dyn headroom_core::governor::QuotaState>,
                headroom_core::governor::ConfigError,
            > {
                $quota_state(self, config, options)
            }

            async fn table_names(&self) -> Result<Vec<String>> {
                let rows = sqlx::query::<$db>($tables_sql)
                    .fetch_all(&self.pool)
                    .await?;
                rows.iter().map(|r| get::<String>(r, "name")).collect()
            }

            async fn count_rows(&self, table: &str) -> Result<u64> {
                let Some(table) = TABLES.iter().find(|t| **t == table) else {
                    return Err(StoreError::Invalid {
                        field: "table",
                        problem: format!("{:?} is not a table of the schema", redact(table)),
                    });
                };
                let sql = format!("SELECT COUNT(*) AS n FROM {table}");
                let row = sqlx::query::<$db>(sqlx::AssertSqlSafe(sql))
                    .fetch_one(&self.pool)
                    .await?;
                get_u64(&row, "n")
            }

            async fn upsert_credential(&self, seen: &CredentialSeen) -> Result<Credential> {
                model::check_fingerprint(&seen.fingerprint)?;
                let sql = format!(
                    "INSERT INTO credentials \
                     (host, fingerprint, subject_kind, owner_login, first_seen_at_ms, last_seen_at_ms) \
                     VALUES ($1, $2, $3, $4, $5, $5) \
                     ON CONFLICT (host, fingerprint) DO UPDATE SET \
                     subject_kind = excluded.subject_kind, owner_login = excluded.owner_login, \
                     first_seen_at_ms = CASE WHEN excluded.first_seen_at_ms < credentials.first_seen_at_ms \
                         THEN excluded.first_seen_at_ms ELSE credentials.first_seen_at_ms END, \
                     last_seen_at_ms = CASE WHEN excluded.last_seen_at_ms > credentials.last_seen_at_ms \
                         THEN excluded.last_seen_at_ms ELSE credentials.last_seen_at_ms END \
                     RETURNING {CREDENTIAL_COLUMNS}"
                );
                let row = sqlx::query::<$db>(sqlx::AssertSqlSafe(sql))
                    .bind(seen.host.clone())
                    .bind(seen.fingerprint.clone())
                    .bind(seen.subject_kind.as_str())
                    .bind(seen.owner_login.clone())
                    .bind(ms(seen.seen_at))
                    .fetch_one(&self.pool)
                    .await?;
                credential_from(&row)
            }

            async fn credential(
                &self,
                host: &str,
                fingerprint: &str,
            ) -> Result<Option<Credential>> {
                let sql = format!(
                    "SELECT {CREDENTIAL_COLUMNS} FROM credentials WHERE host = $1 AND fingerprint = $2"
                );
                let row = sqlx::query::<$db>(sqlx::AssertSqlSafe(sql))
                    .bind(host.to_owned())
                    .bind(fingerprint.to_owned())
                    .fetch_optional(&self.pool)
                    .await?;
                row.as_ref().map(credential_from).transpose()
            }

            async fn credentials_of(
                &self,
                host: &str,
                kind: SubjectKind,
                owner: &str,
            ) -> Result<Vec<Credential>> {
                let sql = format!(
                    "SELECT {CREDENTIAL_COLUMNS} FROM credentials \
                     WHERE host = $1 AND subject_kind = $2 AND owner_login = $3 \
                     ORDER BY first_seen_at_ms, id"
                );
                let rows = sqlx::query::<$db>(sqlx::AssertSqlSafe(sql))
                    .bind(host.to_owned())
                    .bind(kind.as_str())
                    .bind(owner.to_owned())
                    .fetch_all(&self.pool)
                    .await?;
                rows.iter().map(credential_from).collect()
            }

            async fn count_credentials_sharing(
                &self,
                host: &str,
                kind: SubjectKind,
                owner: &str,
            ) -> Result<u64> {
                let row = sqlx::query::<$db>(
                    "SELECT COUNT(*) AS n FROM credentials \
                     WHERE host = $1 AND subject_kind = $2 AND owner_login = $3",
                )
                .bind(host.to_owned())
                .bind(kind.as_str())
                .bind(owner.to_owned())
                .fetch_one(&self.pool)
                .await?;
                get_u64(&row, "n")
            }

            async fn etag(
                &self,
                credential_fingerprint: &str,
                url: &str,
            ) -> Result<Option<StoredEtag>> {
                let row = sqlx::query::<$db>(
                    "SELECT credential_fingerprint, url, etag, last_modified, stored_at_ms \
                     FROM etags WHERE credential_fingerprint = $1 AND url = $2",
                )
                .bind(credential_fingerprint.to_owned())
                .bind(redact(url))
                .fetch_optional(&self.pool)
                .await?;
                let Some(row) = row else { return Ok(None) };
                Ok(Some(StoredEtag {
                    credential_fingerprint: get(&row, "credential_fingerprint")?,
                    url: get(&row, "url")?,
                    etag: get(&row, "etag")?,
                    last_modified: get(&row, "last_modified")?,
                    stored_at: from_ms("stored_at_ms", get(&row, "stored_at_ms")?)?,
                }))
            }

            async fn put_etag(&self, etag: &StoredEtag) -> Result<()> {
                if etag.credential_fingerprint != model::ANONYMOUS_FINGERPRINT {
                    model::check_fingerprint(&etag.credential_fingerprint)?;
                }
                sqlx::query::<$db>(
                    "INSERT INTO etags (credential_fingerprint, url, etag, last_modified, stored_at_ms) \
                     VALUES ($1, $2, $3, $4, $5) \
                     ON CONFLICT (credential_fingerprint, url) DO UPDATE SET \
                     etag = excluded.etag, last_modified = excluded.last_modified, \
                     stored_at_ms = excluded.stored_at_ms",
                )
                .bind(etag.credential_fingerprint.clone())
                .bind(redact(&etag.url))
                .bind(etag.etag.clone())
                .bind(etag.last_modified.clone())
                .bind(ms(etag.stored_at))
                .execute(&self.pool)
                .await?;
                Ok(())
            }

            async fn record_usage(&self, record: &UsageRecord) -> Result<()> {
                let window_start = record.window_start()?;
                sqlx::query::<$db>(
                    "INSERT INTO usage_records (host, subject, route_family, dimension, \
                     window_start_at_ms, requests, units, last_recorded_at_ms) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                     ON CONFLICT (host, subject, route_family, dimension, window_start_at_ms) \
                     DO UPDATE SET requests = usage_records.requests + excluded.requests, \
                     units = usage_records.units + excluded.units, \
                     last_recorded_at_ms = CASE WHEN excluded.last_recorded_at_ms > usage_records.last_recorded_at_ms \
                         THEN excluded.last_recorded_at_ms ELSE usage_records.last_recorded_at_ms END",
                )
                .bind(record.key.host.to_string())
                .bind(model::subject_label(&record.key.subject))
                .bind(record.route_family.clone())
                .bind(record.dimension.as_str())
                .bind(ms(window_start))
                .bind(to_i64("requests", record.requests)?)
                .bind(to_i64("units", record.units)?)
                .bind(ms(record.at))
                .execute(&self.pool)
                .await?;
                Ok(())
            }

            async fn usage_totals(
                &self,
                key: &headroom_core::QuotaKey,
                since: Timestamp,
                until: Timestamp,
            ) -> Result<Vec<UsageTotal>> {
                let rows = sqlx::query::<$db>(
                    "SELECT route_family, dimension, \
                     CAST(SUM(requests) AS BIGINT) AS requests, CAST(SUM(units) AS BIGINT) AS units, \
                     MIN(window_start_at_ms) AS first_window, MAX(last_recorded_at_ms) AS last_recorded \
                     FROM usage_records \
                     WHERE host = $1 AND subject = $2 AND window_start_at_ms >= $3 AND window_start_at_ms < $4 \
                     GROUP BY route_family, dimension ORDER BY route_family, dimension",
                )
                .bind(key.host.to_string())
                .bind(model::subject_label(&key.subject))
                .bind(ms(since))
                .bind(ms(until))
                .fetch_all(&self.pool)
                .await?;
                rows.iter()
                    .map(|row| {
                        Ok(UsageTotal {
                            route_family: get(row, "route_family")?,
                            dimension: get(row, "dimension")?,
                            requests: get_u64(row, "requests")?,
                            units: get_u64(row, "units")?,
                            first_window_start: from_ms("first_window", get(row, "first_window")?)?,
                            last_recorded_at: from_ms("last_recorded", get(row, "last_recorded")?)?,
                        })
                    })
                    .collect()
            }

            async fn record_rate_limit_observation(
                &self,
                o: &RateLimitObservation,
            ) -> Result<i64> {
                if let Some(fp) = &o.credential_fingerprint {
                    model::check_fingerprint(fp)?;
                }
                let retry_after_secs = o.retry_after.map(|d| d.as_secs().max(0));
                let row = sqlx::query::<$db>(
                    "INSERT INTO rate_limit_observations (provider, host, subject, \
                     credential_fingerprint, sync_run_id, bucket, route_family, \
                     route_family_attribution, dimension, reason, retry_after_secs, reset_at_ms, \
                     rate_limit, remaining, used, request_id, observed_at_ms) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) \
                     RETURNING id",
                )
                .bind(model::provider_name(o.provider))
                .bind(o.key.host.to_string())
                .bind(model::subject_label(&o.key.subject))
                .bind(o.credential_fingerprint.clone())
                .bind(o.sync_run_id)
                .bind(o.bucket.clone())
                .bind(o.route_family.clone())
                .bind(o.route_family_attribution.clone())
                .bind(o.dimension.map(|d| d.as_str()))
                .bind(o.reason.map(|r| r.as_str()))
                .bind(retry_after_secs)
                .bind(o.reset_at.map(ms))
                .bind(opt_i64("limit", o.limit)?)
                .bind(opt_i64("remaining", o.remaining)?)
                .bind(opt_i64("used", o.used)?)
                .bind(o.request_id.as_deref().map(redact))
                .bind(ms(o.observed_at))
                .fetch_one(&self.pool)
                .await?;
                get(&row, "id")
            }

            async fn recent_rate_limit_observations(
                &self,
                host: &str,
                since: Timestamp,
                limit: u32,
            ) -> Result<Vec<StoredObservation>> {
                let sql = format!(
                    "SELECT {OBSERVATION_COLUMNS} FROM rate_limit_observations \
                     WHERE host = $1 AND observed_at_ms >= $2 \
                     ORDER BY observed_at_ms DESC, id DESC LIMIT $3"
                );
                let rows = sqlx::query::<$db>(sqlx::AssertSqlSafe(sql))
                    .bind(host.to_owned())
                    .bind(ms(since))
                    .bind(i64::from(limit))
                    .fetch_all(&self.pool)
                    .await?;
                rows.iter().map(observation_from).collect()
            }

            async fn create_sync_run(&self, run: &NewSyncRun) -> Result<SyncRun> {
                let stages = run
                    .requested_stages
                    .as_ref()
                    .map(|s| sqlx::types::Json(serde_json::json!(s)));
                let sql = format!(
                    "INSERT INTO sync_runs (kind, target, host, subject, status, requested_stages, \
                     created_at_ms, updated_at_ms) VALUES ($1, $2, $3, $4, 'pending', $5, $6, $6) \
                     RETURNING {SYNC_RUN_COLUMNS}"
                );
                let row = sqlx::query::<$db>(sqlx::AssertSqlSafe(sql))
                    .bind(run.kind.clone())
                    .bind(run.target.clone())
                    .bind(run.key.host.to_string())
                    .bind(model::subject_label(&run.key.subject))
                    .bind(stages)
                    .bind(ms(run.created_at))
                    .fetch_one(&self.pool)
                    .await?;
                sync_run_from(&row)
            }

            async fn sync_run(&self, id: i64) -> Result<Option<SyncRun>> {
                let sql = format!("SELECT {SYNC_RUN_COLUMNS} FROM sync_runs WHERE id = $1");
                let row = sqlx::query::<$db>(sqlx::AssertSqlSafe(sql))
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await?;
                row.as_ref().map(sync_run_from).transpose()
            }

            async fn save_sync_run(&self, run: &SyncRun) -> Result<()> {
                let total_wait = i64::try_from(run.total_wait.as_millis()).map_err(|_| {
                    StoreError::Invalid {
                        field: "total_wait",
                        problem: "too long".to_owned(),
                    }
                })?;
                let done = sqlx::query::<$db>(
                    "UPDATE sync_runs SET status = $2, not_before_at_ms = $3, deferral_count = $4, \
                     first_deferred_at_ms = $5, total_wait_ms = $6, failure_reason = $7, \
                     summary_json = $8, started_at_ms = $9, finished_at_ms = $10, updated_at_ms = $11 \
                     WHERE id = $1",
                )
                .bind(run.id)
                .bind(run.status.as_str())
                .bind(run.not_before.map(ms))
                .bind(i64::from(run.deferral_count))
                .bind(run.first_deferred_at.map(ms))
                .bind(total_wait)
                .bind(run.failure_reason.as_deref().map(redact))
                .bind(run.summary.clone().map(sqlx::types::Json))
                .bind(run.started_at.map(ms))
                .bind(run.finished_at.map(ms))
                .bind(ms(run.updated_at))
                .execute(&self.pool)
                .await?;
                if done.rows_affected() == 0 {
                    return Err(StoreError::NotFound(format!("sync run {}", run.id)));
                }
                Ok(())
            }

            async fn due_sync_runs(&self, now: Timestamp, limit: u32) -> Result<Vec<SyncRun>> {
                let sql = format!(
                    "SELECT {SYNC_RUN_COLUMNS} FROM sync_runs \
                     WHERE status = 'pending' \
                        OR (status = 'hibernating' AND (not_before_at_ms IS NULL OR not_before_at_ms <= $1)) \
                        OR (status = 'running' AND (claimed_by IS NULL OR claim_expires_at_ms <= $1)) \
                     ORDER BY COALESCE(not_before_at_ms, created_at_ms), id LIMIT $2"
                );
                let rows = sqlx::query::<$db>(sqlx::AssertSqlSafe(sql))
                    .bind(ms(now))
                    .bind(i64::from(limit))
                    .fetch_all(&self.pool)
                    .await?;
                rows.iter().map(sync_run_from).collect()
            }

            async fn claim_sync_run(
                &self,
                id: i64,
                holder: &str,
                now: Timestamp,
                until: Timestamp,
            ) -> Result<bool> {
                let done = sqlx::query::<$db>(
                    "UPDATE sync_runs SET claimed_by = $2, claim_expires_at_ms = $4 \
                     WHERE id = $1 AND status NOT IN ('done', 'failed') \
                     AND (claimed_by IS NULL OR claimed_by = $2 OR claim_expires_at_ms <= $3)",
                )
                .bind(id)
                .bind(holder.to_owned())
                .bind(ms(now))
                .bind(ms(until))
                .execute(&self.pool)
                .await?;
                Ok(done.rows_affected() == 1)
            }

            async fn release_sync_run(&self, id: i64, holder: &str) -> Result<()> {
                sqlx::query::<$db>(
                    "UPDATE sync_runs SET claimed_by = NULL, claim_expires_at_ms = NULL \
                     WHERE id = $1 AND claimed_by = $2",
                )
                .bind(id)
                .bind(holder.to_owned())
                .execute(&self.pool)
                .await?;
                Ok(())
            }

            async fn checkpoints(&self, sync_run_id: i64) -> Result<Vec<Checkpoint>> {
                let sql = format!(
                    "SELECT {CHECKPOINT_COLUMNS} FROM sync_checkpoints WHERE sync_run_id = $1 \
                     ORDER BY stage, scope"
                );
                let rows = sqlx::query::<$db>(sqlx::AssertSqlSafe(sql))
                    .bind(sync_run_id)
                    .fetch_all(&self.pool)
                    .await?;
                rows.iter().map(checkpoint_from).collect()
            }

            async fn checkpoint(
                &self,
                sync_run_id: i64,
                stage: &str,
                scope: &str,
            ) -> Result<Option<Checkpoint>> {
                let sql = format!(
                    "SELECT {CHECKPOINT_COLUMNS} FROM sync_checkpoints \
                     WHERE sync_run_id = $1 AND stage = $2 AND scope = $3"
                );
                let row = sqlx::query::<$db>(sqlx::AssertSqlSafe(sql))
                    .bind(sync_run_id)
                    .bind(stage.to_owned())
                    .bind(scope.to_owned())
                    .fetch_optional(&self.pool)
                    .await?;
                row.as_ref().map(checkpoint_from).transpose()
            }

            async fn set_checkpoint(&self, update: &CheckpointUpdate) -> Result<()> {
                let mut conn = self.pool.acquire().await?;
                set_checkpoint_on(&mut conn, update).await
            }

            async fn organization_id(&self, login: &str) -> Result<Option<i64>> {
                let row = sqlx::query::<$db>("SELECT id FROM organizations WHERE login = $1")
                    .bind(login.to_owned())
                    .fetch_optional(&self.pool)
                    .await?;
                row.as_ref().map(|r| get::<i64>(r, "id")).transpose()
            }

            async fn watermark(
                &self,
                repository_github_id: i64,
                watermark: Watermark,
            ) -> Result<Option<Timestamp>> {
                let column = watermark.column();
                let sql = format!("SELECT {column} AS mark FROM repositories WHERE github_id = $1");
                let row = sqlx::query::<$db>(sqlx::AssertSqlSafe(sql))
                    .bind(repository_github_id)
                    .fetch_optional(&self.pool)
                    .await?;
                let Some(row) = row else {
                    return Err(StoreError::NotFound(format!(
                        "repository {repository_github_id}"
                    )));
                };
                from_opt_ms("mark", get(&row, "mark")?)
            }

            async fn commit_shas_without_files(
                &self,
                repository_github_id: i64,
            ) -> Result<Vec<String>> {
                let rows = sqlx::query::<$db>(
                    "SELECT DISTINCT c.commit_sha FROM pull_request_commits c \
                     WHERE c.repository_github_id = $1 AND NOT EXISTS (\
                       SELECT 1 FROM commit_files f \
                       WHERE f.repository_github_id = c.repository_github_id \
                       AND f.commit_sha = c.commit_sha) \
                     ORDER BY c.commit_sha",
                )
                .bind(repository_github_id)
                .fetch_all(&self.pool)
                .await?;
                rows.iter().map(|r| get::<String>(r, "commit_sha")).collect()
            }

            async fn quarantine_event(&self, e: &QuarantinedEvent) -> Result<QuarantineRow> {
                model::check_fingerprint(&e.payload_fingerprint)?;
                let row = sqlx::query::<$db>(
                    "INSERT INTO quarantined_events (payload_fingerprint, github_event_id, \
                     event_type, error_code, error_message, occurrence_count, source, \
                     first_received_at_ms, last_received_at_ms, raw_json, raw_text) \
                     VALUES ($1, $2, $3, $4, $5, 1, $6, $7, $7, $8, $9) \
                     ON CONFLICT (payload_fingerprint) DO UPDATE SET \
                     occurrence_count = quarantined_events.occurrence_count + 1, \
                     last_received_at_ms = CASE WHEN excluded.last_received_at_ms > quarantined_events.last_received_at_ms \
                         THEN excluded.last_received_at_ms ELSE quarantined_events.last_received_at_ms END \
                     RETURNING payload_fingerprint, error_code, occurrence_count, \
                     first_received_at_ms, last_received_at_ms",
                )
                .bind(e.payload_fingerprint.clone())
                .bind(e.github_event_id.clone())
                .bind(e.event_type.clone())
                .bind(e.error_code.clone())
                .bind(redact(&e.error_message))
                .bind(e.origin.as_str())
                .bind(ms(e.received_at))
                .bind(e.raw.clone().map(sqlx::types::Json))
                .bind(e.raw_text.clone())
                .fetch_one(&self.pool)
                .await?;
                Ok(QuarantineRow {
                    payload_fingerprint: get(&row, "payload_fingerprint")?,
                    error_code: get(&row, "error_code")?,
                    occurrence_count: get_u64(&row, "occurrence_count")?,
                    first_received_at: from_ms(
                        "first_received_at_ms",
                        get(&row, "first_received_at_ms")?,
                    )?,
                    last_received_at: from_ms(
                        "last_received_at_ms",
                        get(&row, "last_received_at_ms")?,
                    )?,
                })
            }

            async fn push_event(&self, github_event_id: &str) -> Result<Option<StoredPushEvent>> {
                let row = sqlx::query::<$db>(
                    "SELECT github_event_id, github_actor_id, github_repository_id, actor_login, \
                     repository_name, ref, head_sha, before_sha, occurred_at_ms, created_at_ms, \
                     raw_json FROM push_events WHERE github_event_id = $1",
                )
                .bind(github_event_id.to_owned())
                .fetch_optional(&self.pool)
                .await?;
                let Some(row) = row else { return Ok(None) };
                Ok(Some(StoredPushEvent {
                    github_event_id: get(&row, "github_event_id")?,
                    github_actor_id: get(&row, "github_actor_id")?,
                    github_repository_id: get(&row, "github_repository_id")?,
                    actor_login: get(&row, "actor_login")?,
                    repository_name: get(&row, "repository_name")?,
                    git_ref: get(&row, "ref")?,
                    head_sha: get(&row, "head_sha")?,
                    before_sha: get(&row, "before_sha")?,
                    occurred_at: from_ms("occurred_at_ms", get(&row, "occurred_at_ms")?)?,
                    created_at: from_ms("created_at_ms", get(&row, "created_at_ms")?)?,
                    raw: get_json(&row, "raw_json")?.unwrap_or(serde_json::Value::Null),
                }))
            }

            async fn actor(&self, github_id: i64) -> Result<Option<FeedEntity>> {
                let row = sqlx::query::<$db>(
                    "SELECT github_id, login AS name, enrichment_status, enrichment_stage, \
                     first_seen_at_ms, last_seen_at_ms, latest_event_at_ms \
                     FROM actors WHERE github_id = $1",
                )
                .bind(github_id)
                .fetch_optional(&self.pool)
                .await?;
                row.as_ref().map(feed_entity_from).transpose()
            }

            async fn repository(&self, github_id: i64) -> Result<Option<FeedEntity>> {
                let row = sqlx::query::<$db>(
                    "SELECT github_id, full_name AS name, enrichment_status, enrichment_stage, \
                     first_seen_at_ms, last_seen_at_ms, latest_event_at_ms \
                     FROM repositories WHERE github_id = $1",
                )
                .bind(github_id)
                .fetch_optional(&self.pool)
                .await?;
                row.as_ref().map(feed_entity_from).transpose()
            }

            async fn bulk_writer(
                &self,
                options: crate::bulk::BulkOptions,
            ) -> Result<Box<dyn crate::bulk::BulkWriter + '_>> {
                self.open_bulk(options).await
            }

            async fn begin(&self) -> Result<Box<dyn StoreTx>> {
                let tx = self.pool.begin_with($begin_sql).await?;
                Ok(Box::new($tx { tx }))
            }
        }
    };
}

pub(crate) use store_impl;
