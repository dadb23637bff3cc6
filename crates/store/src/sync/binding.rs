//! Which credential a sync run is bound to: stamped when the run is created, adopted by the
//! first resume of a run created before credentials were recorded, and replaced only by an
//! explicit rebind, which is recorded. The rules that decide between those live in the sync
//! crate; this module only stores what they decided, each change a compare-and-set so that two
//! workers cannot both rebind one run.

use headroom_core::clock::Timestamp;
use serde::{Deserialize, Serialize};

use crate::db::{Pools, ReadRow, on_each_pool};
use crate::error::{Result, StoreError};
use crate::model::{self, ms};

/// The credential a run (or a feed ingestion run) spends: never the token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialUsed {
    /// The token's fingerprint; `None` for unauthenticated requests.
    pub fingerprint: Option<String>,
    /// The quota identity it resolved to, as a subject label (`user:alice`, `ip:203.0.113.9`).
    pub owner: String,
}

/// A sync run's credential binding as stored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CredentialBinding {
    /// The fingerprint of the credential the run is bound to (`None`: unauthenticated, or a
    /// run created before bindings were recorded when `owner` is `None` too).
    pub fingerprint: Option<String>,
    /// The quota identity the credential resolved to when it was bound (`None`: not bound yet).
    pub owner: Option<String>,
    /// The fingerprint the latest rebind replaced.
    pub rebound_from: Option<String>,
    /// When the latest rebind happened.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub rebound_at: Option<Timestamp>,
    /// How many times the run was rebound.
    pub rebind_count: u32,
}

/// A change to a run's binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindingChange {
    /// Bind a run that has no binding yet (created before bindings were recorded).
    Adopt(CredentialUsed),
    /// Replace the bound credential `from` by `to` (same owner), recorded as a rebind at `at`.
    Rebind {
        /// The fingerprint the run is bound to now.
        from: Option<String>,
        /// The new fingerprint.
        to: Option<String>,
        /// When.
        at: Timestamp,
    },
}

/// The binding, from a row of `sync_runs` read with every column of the run.
pub(crate) fn binding_from(row: &impl ReadRow) -> Result<CredentialBinding> {
    Ok(CredentialBinding {
        fingerprint: row.opt_text("credential_fingerprint")?,
        owner: row.opt_text("credential_owner")?,
        rebound_from: row.opt_text("rebound_from_fingerprint")?,
        rebound_at: row.opt_ts("rebound_at_ms")?,
        rebind_count: u32::try_from(row.int("rebind_count")?)
            .map_err(|e| StoreError::corrupt("rebind_count", e))?,
    })
}

fn checked(fingerprint: Option<&String>) -> Result<Option<String>> {
    if let Some(f) = fingerprint {
        model::check_fingerprint(f)?;
    }
    Ok(fingerprint.cloned())
}

/// Applies `change` to run `id` if the run still stands where the change expects (no binding
/// for an adoption, bound to `from` for a rebind). Returns whether it did.
pub(crate) async fn bind_sync_run_credential(
    pools: Pools<'_>,
    id: i64,
    change: &BindingChange,
) -> Result<bool> {
    let affected = match change {
        BindingChange::Adopt(used) => {
            let fingerprint = checked(used.fingerprint.as_ref())?;
            on_each_pool!(pools, |pool| {
                sqlx::query(
                    "UPDATE sync_runs SET credential_fingerprint = $2, credential_owner = $3 \
                     WHERE id = $1 AND credential_owner IS NULL",
                )
                .bind(id)
                .bind(fingerprint.clone())
                .bind(used.owner.clone())
                .execute(pool)
                .await?
                .rows_affected()
            })
        }
        BindingChange::Rebind { from, to, at } => {
            let to = checked(to.as_ref())?;
            on_each_pool!(pools, |pool| {
                sqlx::query(
                    "UPDATE sync_runs SET credential_fingerprint = $3, \
                     rebound_from_fingerprint = credential_fingerprint, rebound_at_ms = $4, \
                     rebind_count = rebind_count + 1 \
                     WHERE id = $1 AND credential_owner IS NOT NULL \
                     AND credential_fingerprint IS NOT DISTINCT FROM $2",
                )
                .bind(id)
                .bind(from.clone())
                .bind(to.clone())
                .bind(ms(*at))
                .execute(pool)
                .await?
                .rows_affected()
            })
        }
    };
    Ok(affected == 1)
}
