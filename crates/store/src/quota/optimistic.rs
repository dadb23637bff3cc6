//! PostgreSQL's governor decisions in one round trip each.
//!
//! The process keeps the last state it read or wrote of each identity with that row's
//! `version`, applies the pure rule to a copy, and sends one statement that writes the copy
//! only if the row is still at that version and holds no expired lease — taking the grant's
//! lease or deleting the released one in the same statement. When the write loses (another
//! process wrote first), the same statement has returned the row as it stood, with its live
//! leases counted, and the decision is made again on that. A lone process therefore decides,
//! observes and releases in one round trip each; several processes pay one more per conflict,
//! and never decide on a state another process has moved past.
//!
//! Within the process, one identity's decisions go one at a time (an async lock per identity):
//! they would queue on the row anyway, and this way they never lose to each other.
//!
//! Expired leases (a process killed with permits outstanding) make the write lose; they are
//! then deleted in a statement that also moves the version, so every process counting them
//! re-reads.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use headroom_core::clock::Timestamp;
use headroom_core::governor::GovernorError;
use headroom_core::governor::rule::IdentityState;
use headroom_core::quota::{Bucket, QuotaKey};
use sqlx::postgres::PgPool;
use sqlx::types::Json;

use super::{IdentityKey, apply_lease_counts, backend_error, insert_identity};
use crate::db::Conn;
use crate::model::ms;

/// Writes that lose this many times in a row give up (a backend error, which the caller
/// treats as it treats a database that does not answer).
const MAX_ATTEMPTS: usize = 64;

/// What the write does to the leases besides saving the state.
pub(super) enum LeaseChange<'a> {
    /// Nothing.
    None,
    /// Takes an in-flight lease of `bucket` until `expires`, and one of each bucket of `also`
    /// naming it as their request's lease.
    Take {
        bucket: &'a Bucket,
        also: &'a [(Bucket, u32)],
        holder: &'a str,
        expires: Timestamp,
    },
    /// Deletes lease `lease_id`.
    Free { lease_id: i64 },
}

/// The last state this process read or wrote of one identity.
struct Cached {
    state: IdentityState,
    version: i64,
}

/// One identity's entry: its decisions queue on the lock.
type Entry = Arc<tokio::sync::Mutex<Option<Cached>>>;

/// The PostgreSQL backend's optimistic writer and its per-identity cache.
pub(super) struct Optimistic {
    pool: PgPool,
    identities: Mutex<HashMap<(String, &'static str, String), Entry>>,
}

/// What one write statement returned.
#[derive(sqlx::FromRow)]
struct WriteRow {
    won: bool,
    lease_id: Option<i64>,
    state: Option<Json<IdentityState>>,
    version: Option<i64>,
    live: Json<HashMap<String, i64>>,
    requests: i64,
    expired: i64,
    lease_present: bool,
}

/// The write: the state at `$4` replaced by `$5`, the lease taken (`$7` its bucket, `$11` the
/// request's other buckets) or freed (`$10`, with the leases naming it), and — only when it
/// lost — the row as it stood before the statement.
const WRITE_SQL: &str = "\
WITH upd AS ( \
    UPDATE governor_identities SET state = $5, version = version + 1, updated_at_ms = $6 \
    WHERE host = $1 AND subject_kind = $2 AND subject_id = $3 AND version = $4 \
      AND NOT EXISTS (SELECT 1 FROM governor_leases x WHERE x.host = $1 \
          AND x.subject_kind = $2 AND x.subject_id = $3 AND x.expires_at_ms <= $6) \
    RETURNING version \
), taken AS ( \
    INSERT INTO governor_leases \
        (host, subject_kind, subject_id, bucket, holder, granted_at_ms, expires_at_ms) \
    SELECT $1, $2, $3, $7, $8, $6, $9 FROM upd WHERE $7::text IS NOT NULL \
    RETURNING id \
), also_taken AS ( \
    INSERT INTO governor_leases (host, subject_kind, subject_id, bucket, holder, \
        granted_at_ms, expires_at_ms, request_lease) \
    SELECT $1, $2, $3, b.bucket, $8, $6, $9, taken.id FROM taken, \
        unnest($11::text[]) AS b(bucket) \
    RETURNING id \
), freed AS ( \
    DELETE FROM governor_leases WHERE (id = $10 OR request_lease = $10) \
        AND EXISTS (SELECT 1 FROM upd) RETURNING id \
) \
SELECT won, lease_id, \
    CASE WHEN won THEN NULL ELSE g.state END AS state, \
    CASE WHEN won THEN NULL ELSE g.version END AS version, \
    CASE WHEN won THEN '{}'::jsonb ELSE \
        (SELECT COALESCE(jsonb_object_agg(c.bucket, c.n), '{}'::jsonb) FROM \
            (SELECT bucket, COUNT(*) AS n FROM governor_leases WHERE host = $1 \
             AND subject_kind = $2 AND subject_id = $3 AND expires_at_ms > $6 \
             GROUP BY bucket) c) \
    END AS live, \
    CASE WHEN won THEN 0 ELSE \
        (SELECT COUNT(*) FROM governor_leases WHERE host = $1 AND subject_kind = $2 \
         AND subject_id = $3 AND expires_at_ms > $6 AND request_lease IS NULL) \
    END AS requests, \
    CASE WHEN won THEN 0 ELSE \
        (SELECT COUNT(*) FROM governor_leases WHERE host = $1 AND subject_kind = $2 \
         AND subject_id = $3 AND expires_at_ms <= $6) \
    END AS expired, \
    CASE WHEN won THEN TRUE ELSE \
        EXISTS (SELECT 1 FROM governor_leases WHERE id = $10) \
    END AS lease_present \
FROM (SELECT EXISTS (SELECT 1 FROM upd) AS won, (SELECT id FROM taken) AS lease_id) AS w \
LEFT JOIN governor_identities g \
    ON NOT w.won AND g.host = $1 AND g.subject_kind = $2 AND g.subject_id = $3";

/// Deletes the identity's expired leases and, if there were any, moves its version.
const CLEAR_EXPIRED_SQL: &str = "\
WITH gone AS ( \
    DELETE FROM governor_leases WHERE host = $1 AND subject_kind = $2 AND subject_id = $3 \
    AND expires_at_ms <= $4 RETURNING 1 \
) \
UPDATE governor_identities SET version = version + 1 \
WHERE host = $1 AND subject_kind = $2 AND subject_id = $3 AND EXISTS (SELECT 1 FROM gone)";

impl Optimistic {
    pub(super) fn new(pool: PgPool) -> Self {
        Self {
            pool,
            identities: Mutex::new(HashMap::new()),
        }
    }

    fn entry(&self, id: &IdentityKey) -> Entry {
        let mut map = self.identities.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(
            map.entry((id.host.clone(), id.kind, id.id.clone()))
                .or_default(),
        )
    }

    /// Decides on the identity's current state and writes the result: `decide` gets a copy of
    /// the state and whether the lease the change frees still exists (always true when it
    /// frees none), changes the copy and says what to do with the leases. It may run several
    /// times, each on a newer state; what the winning run returned comes back, with the id of
    /// the lease it took.
    pub(super) async fn write<'a, R>(
        &self,
        key: &QuotaKey,
        fresh: impl Fn() -> IdentityState,
        now: Timestamp,
        mut decide: impl FnMut(&mut IdentityState, bool) -> (R, LeaseChange<'a>),
    ) -> Result<(R, Option<i64>), GovernorError> {
        let id = IdentityKey::of(key);
        let entry = self.entry(&id);
        let mut cached = entry.lock().await;
        let mut lease_present = true;
        for _ in 0..MAX_ATTEMPTS {
            let Some(current) = cached.as_ref() else {
                // Nothing known yet: a write at version -1 always loses and reads the row (the
                // decision on a fresh state only names the lease to look for).
                let mut probe = fresh();
                let (_, change) = decide(&mut probe, true);
                let row = self.send(&id, -1, &probe, &change, now).await?;
                lease_present = frees_none(&change) || row.lease_present;
                *cached = self.reread(key, &id, &fresh, row, now).await?;
                continue;
            };
            let mut next = current.state.clone();
            let (result, change) = decide(&mut next, lease_present);
            let row = self.send(&id, current.version, &next, &change, now).await?;
            if row.won {
                *cached = Some(Cached {
                    state: next,
                    version: current.version + 1,
                });
                return Ok((result, row.lease_id));
            }
            lease_present = frees_none(&change) || row.lease_present;
            *cached = self.reread(key, &id, &fresh, row, now).await?;
        }
        // Forget what is known, so the next decision starts from the row.
        *cached = None;
        Err(GovernorError::Backend(format!(
            "the governor state kept changing under {MAX_ATTEMPTS} writes in a row"
        )))
    }

    async fn send(
        &self,
        id: &IdentityKey,
        version: i64,
        state: &IdentityState,
        change: &LeaseChange<'_>,
        now: Timestamp,
    ) -> Result<WriteRow, GovernorError> {
        let (bucket, holder, expires, freed) = match change {
            LeaseChange::None => (None, None, None, None),
            LeaseChange::Take {
                bucket,
                holder,
                expires,
                ..
            } => (
                Some(bucket.as_str()),
                Some(*holder),
                Some(ms(*expires)),
                None,
            ),
            LeaseChange::Free { lease_id } => (None, None, None, Some(*lease_id)),
        };
        let also: Vec<&str> = match change {
            LeaseChange::Take { also, .. } => also.iter().map(|(b, _)| b.as_str()).collect(),
            _ => Vec::new(),
        };
        sqlx::query_as(WRITE_SQL)
            .bind(&id.host)
            .bind(id.kind)
            .bind(&id.id)
            .bind(version)
            .bind(Json(state))
            .bind(ms(now))
            .bind(bucket)
            .bind(holder)
            .bind(expires)
            .bind(freed)
            .bind(also)
            .fetch_one(&self.pool)
            .await
            .map_err(backend_error)
    }

    /// The state a lost write returned, with its live leases counted; creates the row when it
    /// does not exist and clears expired leases, and then knows nothing (the next write reads).
    async fn reread(
        &self,
        key: &QuotaKey,
        id: &IdentityKey,
        fresh: &impl Fn() -> IdentityState,
        row: WriteRow,
        now: Timestamp,
    ) -> Result<Option<Cached>, GovernorError> {
        let (Some(Json(mut state)), Some(version)) = (row.state, row.version) else {
            let mut c = self.pool.acquire().await.map_err(backend_error)?;
            insert_identity(&mut Conn::Pg(&mut c), key, id, &fresh(), now).await?;
            return Ok(None);
        };
        if row.expired > 0 {
            sqlx::query(CLEAR_EXPIRED_SQL)
                .bind(&id.host)
                .bind(id.kind)
                .bind(&id.id)
                .bind(ms(now))
                .execute(&self.pool)
                .await
                .map_err(backend_error)?;
            return Ok(None);
        }
        apply_lease_counts(&mut state, row.live.0, row.requests);
        Ok(Some(Cached { state, version }))
    }
}

fn frees_none(change: &LeaseChange<'_>) -> bool {
    !matches!(change, LeaseChange::Free { .. })
}
