//! A request over several buckets in the database: the pure rule of
//! [`headroom_core::governor::multi`] applied to every bucket in one decision — under the
//! identity's write lock on SQLite (`BEGIN IMMEDIATE`), in one optimistic statement on
//! PostgreSQL — taking one lease per bucket, all or none. The first bucket's lease counts for
//! the identity; the others name it in `request_lease` and are freed with it.

use headroom_core::clock::Timestamp;
use headroom_core::governor::multi::{self, AllDecision, Ask, Granted};
use headroom_core::governor::rule::IdentityState;
use headroom_core::governor::{Acquire, GovernorError, Wait};
use headroom_core::quota::{Bucket, QuotaKey, RequestKind};

use super::optimistic::{LeaseChange, Optimistic};
use super::{IdentityKey, SharedQuotaState, backend_error, holder};
use crate::db::{Conn, DbTx, on_each_conn};
use crate::model::ms;

/// Deletes the identity's expired leases (inside a decision's write transaction).
pub(super) async fn clear_expired_leases(
    conn: &mut Conn<'_>,
    id: &IdentityKey,
    now: Timestamp,
) -> Result<(), GovernorError> {
    on_each_conn!(conn, |c| {
        sqlx::query(
            "DELETE FROM governor_leases WHERE host = $1 AND subject_kind = $2 \
             AND subject_id = $3 AND expires_at_ms <= $4",
        )
        .bind(&id.host)
        .bind(id.kind)
        .bind(&id.id)
        .bind(ms(now))
        .execute(c)
        .await
        .map(|_| ())
    })
    .map_err(backend_error)
}

/// A grant over several buckets split into its first bucket and the others.
fn split(granted: Vec<Granted>) -> Result<(Granted, Vec<Granted>), GovernorError> {
    let mut granted = granted.into_iter();
    let first = granted.next().ok_or(GovernorError::NoBucket)?;
    Ok((first, granted.collect()))
}

fn also_of(others: Vec<Granted>) -> Vec<Ask> {
    others.into_iter().map(|g| (g.bucket, g.cost)).collect()
}

impl SharedQuotaState {
    /// What every decision does first: note the instant, free the leases of holders gone.
    pub(super) async fn before_deciding(&self, now: Timestamp) {
        self.saw(now);
        self.swept
            .get_or_init(|| async {
                // A failure leaves the ghosts' leases to expire by their TTL, as before.
                let _ = holder::free_leases_of_gone_holders(&self.pool).await;
            })
            .await;
    }

    /// Takes an in-flight lease of `bucket` for `(granted, expires)`, returning its id; a
    /// request's other buckets name its first lease in `request_lease`.
    pub(super) async fn insert_lease(
        &self,
        conn: &mut Conn<'_>,
        id: &IdentityKey,
        bucket: &Bucket,
        request_lease: Option<i64>,
        (now, expires): (Timestamp, Timestamp),
    ) -> Result<i64, GovernorError> {
        on_each_conn!(conn, |c| {
            sqlx::query_scalar(
                "INSERT INTO governor_leases (host, subject_kind, subject_id, bucket, holder, \
                 granted_at_ms, expires_at_ms, request_lease) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
            )
            .bind(&id.host)
            .bind(id.kind)
            .bind(&id.id)
            .bind(bucket.as_str())
            .bind(&self.options.holder)
            .bind(ms(now))
            .bind(ms(expires))
            .bind(request_lease)
            .fetch_one(c)
            .await
        })
        .map_err(backend_error)
    }

    /// [`headroom_core::governor::QuotaState::acquire_all`].
    pub(super) async fn acquire_all_inner(
        &self,
        key: &QuotaKey,
        asks: &[Ask],
        kind: RequestKind,
        now: Timestamp,
    ) -> Result<Acquire, GovernorError> {
        let asks = multi::merge_asks(asks);
        if asks.is_empty() {
            return Err(GovernorError::NoBucket);
        }
        self.before_deciding(now).await;
        if let Some(optimistic) = &self.optimistic {
            return self
                .acquire_all_optimistic(optimistic, key, &asks, kind, now)
                .await;
        }
        let id = IdentityKey::of(key);
        let mut tx = DbTx::begin(self.pool.pools())
            .await
            .map_err(backend_error)?;
        let mut conn = tx.conn();
        let mut state = self.lock_identity(&mut conn, key, &id, now).await?;
        clear_expired_leases(&mut conn, &id, now).await?;
        self.count_leases(&mut conn, &id, &mut state, now).await?;
        let outcome = match multi::grant_all(&self.config, &mut state, &asks, kind, now) {
            AllDecision::Grant(granted) => {
                let (first, others) = split(granted)?;
                let span = (now, self.lease_expiry(now));
                let lead = self
                    .insert_lease(&mut conn, &id, &first.bucket, None, span)
                    .await?;
                for other in &others {
                    self.insert_lease(&mut conn, &id, &other.bucket, Some(lead), span)
                        .await?;
                }
                Ok((first, others, lead))
            }
            AllDecision::Wait { until, reason } => Err(Wait { until, reason }),
        };
        self.save(&mut conn, &id, &state, now).await?;
        tx.commit().await.map_err(backend_error)?;
        Ok(match outcome {
            Ok((first, others, lead)) => Acquire::Grant(self.permit_all(
                key,
                &first.bucket,
                (first.cost, first.slot, lead),
                also_of(others),
                kind,
                now,
            )),
            Err(wait) => Acquire::Wait(wait),
        })
    }

    fn lease_expiry(&self, now: Timestamp) -> Timestamp {
        now.checked_add(self.options.lease_ttl)
            .unwrap_or(Timestamp::MAX)
    }

    /// [`Self::acquire_all_inner`] on PostgreSQL: every lease taken in one optimistic write.
    async fn acquire_all_optimistic(
        &self,
        optimistic: &Optimistic,
        key: &QuotaKey,
        asks: &[Ask],
        kind: RequestKind,
        now: Timestamp,
    ) -> Result<Acquire, GovernorError> {
        let expires = self.lease_expiry(now);
        let holder = self.options.holder.as_str();
        let fresh = || IdentityState::new(&self.config);
        let (decision, lease_id) = optimistic
            .write(key, fresh, now, |state, _| {
                let decision = multi::grant_all(&self.config, state, asks, kind, now);
                let change = match (&decision, asks.split_first()) {
                    (AllDecision::Grant(_), Some(((bucket, _), also))) => LeaseChange::Take {
                        bucket,
                        also,
                        holder,
                        expires,
                    },
                    _ => LeaseChange::None,
                };
                (decision, change)
            })
            .await?;
        match decision {
            AllDecision::Grant(granted) => {
                let lead = lease_id.ok_or_else(|| {
                    GovernorError::Backend("a grant was written without its lease".to_owned())
                })?;
                let (first, others) = split(granted)?;
                Ok(Acquire::Grant(self.permit_all(
                    key,
                    &first.bucket,
                    (first.cost, first.slot, lead),
                    also_of(others),
                    kind,
                    now,
                )))
            }
            AllDecision::Wait { until, reason } => Ok(Acquire::Wait(Wait { until, reason })),
        }
    }
}
