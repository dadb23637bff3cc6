//! The simulator's token table: who owns a token, and the tokens a test adds or revokes while
//! serving.

use sha2::{Digest, Sha256};

use super::{Simulator, lock};
use crate::config::{TokenOwner, TokenSpec};

/// SHA-256 of a token, first 16 hexadecimal characters: enough to tell tokens apart in a log,
/// useless to anyone who reads it.
pub fn token_fingerprint(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

impl Simulator {
    /// Who owns a token, if the simulator accepts it.
    pub(crate) fn token_owner(&self, token: &str) -> Option<TokenOwner> {
        lock(&self.inner.tokens).get(token).cloned()
    }

    /// Adds a token while serving (a new token of a user, as after an OAuth refresh).
    pub fn add_token(&self, token: TokenSpec) {
        lock(&self.inner.tokens).insert(token.token, token.owner);
    }

    /// Revokes a token while serving: from now on it is refused with 401, as an expired
    /// OAuth token or a revoked personal token is.
    pub fn revoke_token(&self, token: &str) {
        lock(&self.inner.tokens).remove(token);
    }
}

/// The token of an `Authorization: token …` or `Bearer …` header.
pub(super) fn token_of(authorization: &str) -> Option<String> {
    let (scheme, rest) = authorization.split_once(' ')?;
    let scheme = scheme.to_ascii_lowercase();
    (scheme == "token" || scheme == "bearer").then(|| rest.trim().to_owned())
}
