//! Which credential a sync run is bound to: stamped when the run is created, adopted by the
//! first resume of a run created before credentials were recorded, and replaced only by an
//! explicit rebind, which is recorded. A run created while its credential's owner could not be
//! learned (the quota spent, `GET /user` held back) is bound to the credential with its owner
//! pending: its subject stands for the credential until the first resume learns the owner and
//! adopts it. The rules that decide between those live in the sync
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

/// What an owner-pending run's login starts with (`user:credential:<fingerprint>` as a subject
/// label): a login never contains a colon, so no owner's subject can look like one.
const OWNER_PENDING_PREFIX: &str = "credential:";

impl CredentialUsed {
    /// The login that stands for `fingerprint`'s owner while it is not known: the run's
    /// subject is `Subject::User` of it, and the binding's owner its label.
    pub fn pending_login(fingerprint: &str) -> String {
        format!("{OWNER_PENDING_PREFIX}{fingerprint}")
    }
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

impl CredentialBinding {
    /// The fingerprint of the credential an owner-pending run is bound to (its owner not
    /// learned yet), else `None`.
    pub fn owner_pending(&self) -> Option<&str> {
        let fingerprint = self.fingerprint.as_deref()?;
        let login = self.owner.as_deref()?.strip_prefix("user:")?;
        (login.strip_prefix(OWNER_PENDING_PREFIX)? == fingerprint).then_some(fingerprint)
    }
}

/// A change to a run's binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindingChange {
    /// Bind a run that has no binding yet (created before bindings were recorded), or give an
    /// owner-pending run its credential's owner, which becomes its subject too.
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
            let pending_label = fingerprint
                .as_deref()
                .map(|f| format!("user:{}", CredentialUsed::pending_login(f)));
            on_each_pool!(pools, |pool| {
                // An unbound run's subject is already the owner's (the rules check it); an
                // owner-pending one takes it here, still bound to the very same credential.
                sqlx::query(
                    "UPDATE sync_runs SET credential_fingerprint = $2, credential_owner = $3, \
                     subject = $3 \
                     WHERE id = $1 AND (credential_owner IS NULL \
                       OR (credential_owner = subject AND credential_owner = $4 \
                           AND credential_fingerprint IS NOT DISTINCT FROM $2))",
                )
                .bind(id)
                .bind(fingerprint.clone())
                .bind(used.owner.clone())
                .bind(pending_label.clone())
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
