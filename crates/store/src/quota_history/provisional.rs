//! Credential-keyed identities: the provisional key (`user:credential:FINGERPRINT`) the exit
//! door spends a credential's first `GET /user` under, before its owner is known. Since the
//! door hands what it learns under that key over to the owner, rows keyed by it come only from
//! older versions (or from a credential whose owner was never learned); the reads leave out
//! those whose owner is stored, which the owner's own rows stand for.

/// The stored subject label's prefix of a provisional key (the client's `credential:` under a
/// `user:` subject).
pub(crate) const SUBJECT_PREFIX: &str = "user:credential:";

/// An SQL condition, true of a row of `table` (with `host` and `subject` columns) keyed by a
/// credential whose owner is stored. Both backends concatenate with `||`.
pub(crate) fn owner_is_stored(table: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM credentials c WHERE c.host = {table}.host \
         AND {table}.subject = '{SUBJECT_PREFIX}' || c.fingerprint)"
    )
}
