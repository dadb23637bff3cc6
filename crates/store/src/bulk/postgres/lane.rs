//! A lane: one of the PostgreSQL bulk writer's two connections that write events, with its
//! session settings, its temporary stage, and the COPY of a batch's rows into the stage or
//! straight into push_events under a savepoint ([`Lane::copy_rows`], [`Lane::settle`]).

use sqlx::PgConnection;

use super::copy_binary::CopyBinary;
use crate::bulk::BulkPush;
use crate::error::{Result, StoreError};
use crate::model::ms;
use crate::push::group::PUSH_COLUMNS;

/// A lane's staging table: the event's push_events id, then push_events' columns
/// ([`PUSH_COLUMNS`]). Temporary: never WAL-logged, private to the lane's session.
pub(super) const STAGE_DDL: &str = "CREATE TEMP TABLE IF NOT EXISTS headroom_push_window ( \
    id BIGINT NOT NULL, github_event_id TEXT, github_push_id BIGINT, github_actor_id BIGINT, \
    github_repository_id BIGINT, actor_login TEXT, repository_name TEXT, ref TEXT, \
    head_sha TEXT, before_sha TEXT, commit_count BIGINT, distinct_commit_count BIGINT, \
    occurred_at_ms BIGINT, ingestion_run_id BIGINT, source TEXT, created_at_ms BIGINT, \
    raw_json JSON)";

/// Each lane's session settings, set once.
///
/// Memory: its stage held in temporary buffers rather than written out and read back. A
/// window of 250,000 envelopes stages about 1.1 KiB each, half on each lane, about 135 MiB; at
/// 64 MB each lane's insert read back and wrote out 11,800 blocks of its stage and took twice
/// as long (pg_stat_statements' `local_blks_*`, 2026-12-04). The buffers are taken as the
/// stage fills, so a small import uses little of them. The `work_mem` is for the entity
/// upserts' sorts. Neither touches durability: they are the session's private working memory.
///
/// No parallel workers for index builds: the writer builds up to four indexes at once on its
/// own connections, which keeps as many cores busy; a build's workers added their
/// coordination to CPUs already taken (after 200,000 envelopes on two cores the finish took
/// 1.64-1.71 s without them, 1.80-2.07 s with).
pub(super) const SESSION_SQL: &str = "SET temp_buffers = '192MB'; SET work_mem = '64MB'; \
    SET max_parallel_maintenance_workers = 0";

/// The writer session's `idle_in_transaction_session_timeout`: a window's transaction idles
/// while the parser fills the next batch, and the store's leak guard (30 s) would end the
/// session on a stalled input. This connection never goes back to the pool, so the guard's
/// reason does not apply to it.
pub(super) const IDLE_TIMEOUT_SQL: &str = "SET idle_in_transaction_session_timeout = '10min'";

/// One of the writer's connections, with its staging table.
pub(super) struct Lane {
    pub(super) conn: PgConnection,
    /// Rows in this lane's stage.
    rows: u64,
    /// Rows this lane's open transaction copied straight into push_events.
    direct: u64,
    /// The COPY data being sent, kept from one batch to the next.
    buf: Vec<u8>,
    /// Whether a transaction is open on it.
    pub(super) open: bool,
}

/// A connection of the writer's own, out of the pool, with its session settings.
pub(super) async fn writer_session(pool: &sqlx::PgPool) -> Result<PgConnection> {
    let mut conn = pool.acquire().await?.detach();
    // Before the session's first temporary table (PostgreSQL fixes temp_buffers then).
    sqlx::raw_sql(SESSION_SQL).execute(&mut conn).await?;
    sqlx::query(IDLE_TIMEOUT_SQL).execute(&mut conn).await?;
    Ok(conn)
}

impl Lane {
    pub(super) async fn open(pool: &sqlx::PgPool) -> Result<Self> {
        let mut conn = writer_session(pool).await?;
        sqlx::query(STAGE_DDL).execute(&mut conn).await?;
        Ok(Self {
            conn,
            rows: 0,
            direct: 0,
            buf: Vec::new(),
            open: false,
        })
    }

    pub(super) async fn execute(&mut self, sql: &'static str) -> Result<()> {
        sqlx::query(sql).execute(&mut self.conn).await?;
        Ok(())
    }

    pub(super) async fn begin(&mut self) -> Result<()> {
        if !self.open {
            self.execute("BEGIN").await?;
            self.open = true;
        }
        Ok(())
    }

    pub(super) async fn commit(&mut self) -> Result<()> {
        if self.open {
            self.execute("COMMIT").await?;
            self.open = false;
        }
        Ok(())
    }

    /// Opens `savepoint` and copies `pushes` into `target`; [`Lane::settle`] keeps or undoes
    /// it. The outer error is the transaction's own, the inner the COPY's.
    pub(super) async fn copy_rows(
        &mut self,
        savepoint: Savepoint,
        target: Target,
        pushes: &[(&BulkPush, i64)],
    ) -> Result<std::result::Result<u64, StoreError>> {
        self.execute(savepoint.open).await?;
        let Some(len) = stage_rows(pushes, &mut self.buf) else {
            return Ok(Ok(0));
        };
        Ok(copy_in(&mut self.conn, target, &self.buf[..len]).await)
    }

    /// Releases `savepoint`, keeping `Some(rows)` copied into `target`, or rolls back to it.
    pub(super) async fn settle(
        &mut self,
        savepoint: Savepoint,
        target: Target,
        kept: Option<u64>,
    ) -> Result<()> {
        match kept {
            Some(rows) => match target {
                Target::Stage => self.rows += rows,
                Target::PushEvents => self.direct += rows,
            },
            None => self.execute(savepoint.undo).await?,
        }
        self.execute(savepoint.release).await
    }

    /// Copies one event's row into the stage under a savepoint of its own: on failure the
    /// stage is as it was. The outer error is the transaction's own, the inner the COPY's.
    pub(super) async fn stage_one(
        &mut self,
        push: &[(&BulkPush, i64)],
    ) -> Result<std::result::Result<u64, StoreError>> {
        let copied = self.copy_rows(EVENT_SAVEPOINT, Target::Stage, push).await?;
        self.settle(
            EVENT_SAVEPOINT,
            Target::Stage,
            copied.as_ref().ok().copied(),
        )
        .await?;
        Ok(copied)
    }

    /// Inserts the staged events into push_events and commits, with the rows copied there
    /// directly (the second step of a commit); the stage is emptied. Returns the rows the lane
    /// added to push_events.
    pub(super) async fn insert_staged(&mut self) -> Result<u64> {
        if self.rows > 0 {
            self.begin().await?;
            let inserted = sqlx::query(INSERT_FROM_STAGE)
                .execute(&mut self.conn)
                .await?
                .rows_affected();
            // An id another writer stored after this window found it missing: the outcomes
            // already returned called it new, so these rows are not kept (importing again
            // resumes with it as a duplicate).
            if inserted != self.rows {
                return Err(StoreError::Conflict(
                    "push events were stored by another writer during the import's window".into(),
                ));
            }
        }
        self.commit().await?;
        let added = self.rows + self.direct;
        self.direct = 0;
        if self.rows > 0 {
            self.empty_stage().await?;
        }
        Ok(added)
    }

    pub(super) async fn empty_stage(&mut self) -> Result<()> {
        self.execute("TRUNCATE headroom_push_window").await?;
        self.rows = 0;
        Ok(())
    }

    /// After an error: the open transaction rolled back, the stage emptied. Returns the
    /// lane's own failure to do so.
    pub(super) async fn abandon(&mut self) -> Option<StoreError> {
        let mut failed = None;
        if self.open {
            self.open = false;
            if let Err(e) = self.execute("ROLLBACK").await {
                failed = Some(e);
            }
        }
        // The stage may hold rows whatever the transaction did (it is emptied after commits).
        if failed.is_none()
            && let Err(e) = self.empty_stage().await
        {
            failed = Some(e);
        }
        self.rows = 0;
        self.direct = 0;
        failed
    }
}

/// The statements of one savepoint.
#[derive(Clone, Copy)]
pub(super) struct Savepoint {
    pub(super) open: &'static str,
    pub(super) release: &'static str,
    pub(super) undo: &'static str,
}

/// Where a COPY writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Target {
    /// The lane's staging table, inserted into push_events at the commit.
    Stage,
    /// push_events itself, in the lane's open transaction: only while push_events' foreign
    /// keys to actors and repositories are dropped ([`super::deferral::IndexDeferral::foreign_keys_absent`]),
    /// as the window's entities are written on other connections and committed first.
    PushEvents,
}

/// Around a batch's COPY.
pub(super) const BATCH_SAVEPOINT: Savepoint = Savepoint {
    open: "SAVEPOINT headroom_batch",
    release: "RELEASE SAVEPOINT headroom_batch",
    undo: "ROLLBACK TO SAVEPOINT headroom_batch",
};

/// Around one event of the fallback.
pub(super) const EVENT_SAVEPOINT: Savepoint = Savepoint {
    open: "SAVEPOINT headroom_event",
    release: "RELEASE SAVEPOINT headroom_event",
    undo: "ROLLBACK TO SAVEPOINT headroom_event",
};

/// A lane's staged events, with the ids they were given. `ON CONFLICT` keeps an id another
/// writer stored meanwhile out, and the lane then refuses its rows (see
/// [`Lane::insert_staged`]). No `ORDER BY`: the ids are the rows' own, so the order they are
/// written in changes nothing but where they land, and sorting the window's rows (JSON
/// included) cost more than the insert's order saves.
pub(super) const INSERT_FROM_STAGE: &str = "INSERT INTO push_events (id, github_event_id, github_push_id, \
    github_actor_id, github_repository_id, actor_login, repository_name, ref, head_sha, \
    before_sha, commit_count, distinct_commit_count, occurred_at_ms, ingestion_run_id, source, \
    created_at_ms, raw_json) \
    SELECT id, github_event_id, github_push_id, github_actor_id, github_repository_id, \
        actor_login, repository_name, ref, head_sha, before_sha, commit_count, \
        distinct_commit_count, occurred_at_ms, ingestion_run_id, source, created_at_ms, raw_json \
    FROM headroom_push_window \
    ON CONFLICT (github_event_id) DO NOTHING";

/// Columns of a COPY row: the id, then [`PUSH_COLUMNS`].
pub(super) const COPY_COLUMNS: i16 = 17;

/// `pushes` as binary COPY rows of push_events' columns, each with its push_events id (the
/// stage has the same columns), written into `buf`; `None` when there are none.
pub(super) fn stage_rows(pushes: &[(&BulkPush, i64)], buf: &mut Vec<u8>) -> Option<usize> {
    // Room for each row at once: its JSON and about 300 bytes of the other columns.
    let bytes = pushes.iter().map(|(p, _)| p.raw_json.len() + 320).sum();
    let mut rows = CopyBinary::new(COPY_COLUMNS, std::mem::take(buf), bytes);
    for (push, id) in pushes {
        let e = &push.event;
        rows.row();
        rows.int(Some(*id));
        rows.text(Some(&e.github_event_id));
        rows.int(e.github_push_id);
        rows.int(Some(e.actor.github_id));
        rows.int(Some(e.repository.github_id));
        rows.text(Some(&e.actor.login));
        rows.text(Some(&e.repository.full_name));
        rows.text(Some(&e.git_ref));
        rows.text(Some(&e.head_sha));
        rows.text(e.before_sha.as_deref());
        rows.int(e.commit_count);
        rows.int(e.distinct_commit_count);
        rows.int(Some(ms(e.occurred_at)));
        rows.int(e.ingestion_run_id);
        rows.text(Some(e.origin.as_str()));
        rows.int(Some(ms(e.received_at)));
        rows.json(&push.raw_json);
    }
    let any = rows.rows() > 0;
    *buf = rows.finish();
    any.then_some(buf.len())
}

/// Sends `rows` into `target` by `COPY … FROM STDIN (FORMAT binary)`. A failed send aborts
/// the COPY, so the connection stays usable (the caller rolls back to its savepoint).
pub(super) async fn copy_in(conn: &mut PgConnection, target: Target, rows: &[u8]) -> Result<u64> {
    let table = match target {
        Target::Stage => "headroom_push_window",
        Target::PushEvents => "push_events",
    };
    let sql = format!("COPY {table} (id, {PUSH_COLUMNS}) FROM STDIN (FORMAT binary)");
    let mut copy = conn.copy_in_raw(&sql).await?;
    if let Err(e) = copy.send(rows).await {
        // The send's own error is the one to report; an abort that fails too leaves the
        // connection broken, which the next statement reports.
        let _ = copy.abort("headroom: sending the batch failed").await;
        return Err(e.into());
    }
    Ok(copy.finish().await?)
}
