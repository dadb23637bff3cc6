//! Credentials are not capacity: every token configured for a run must spend one quota.
//!
//! A process is given one token to spend and possibly others besides (another environment
//! variable, a token file). Nothing here ever chooses among them: the one spent is fixed by
//! the caller. This only establishes that all of them resolve to one quota identity (one
//! governor, one budget), and refuses when they do not, so that precedence never decides
//! silently whose quota a run spends.

use headroom_core::QuotaKey;
use headroom_http::{ApiError, Client, Credential};

/// Why the configured tokens cannot be used for one run.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// An identity could not be established.
    #[error(transparent)]
    Api(#[from] ApiError),
    /// The tokens belong to more than one quota identity.
    #[error(
        "the configured tokens spend different quotas ({}): a run spends one quota, and more \
         tokens never buy more; configure only tokens of the owner whose quota it should spend",
        .0.join("; ")
    )]
    SeveralOwners(Vec<String>),
}

/// The quota identity `used` spends, once every token in `also` is known to spend it too;
/// each entry of `also` is named by where it came from, for the message. Resolving an owner
/// costs one `GET /user` per credential the first time (the owner is stored after that).
pub async fn one_identity(
    client: &Client,
    used: (&str, Option<&Credential>),
    also: &[(&str, &Credential)],
) -> Result<QuotaKey, IdentityError> {
    let key = client.identity(used.1).await?;
    let mut seen = vec![describe(used.0, used.1, &key)];
    let mut differ = false;
    for (source, credential) in also {
        let other = client.identity(Some(credential)).await?;
        differ |= other != key;
        seen.push(describe(source, Some(credential), &other));
    }
    if differ {
        return Err(IdentityError::SeveralOwners(seen));
    }
    Ok(key)
}

/// `GH_TOKEN: credential 0123456789abcdef spends user alice on api.github.com`.
fn describe(source: &str, credential: Option<&Credential>, key: &QuotaKey) -> String {
    let credential = credential.map_or_else(|| "no credential".to_owned(), |c| c.to_string());
    format!(
        "{source}: {credential} spends {} on {}",
        key.subject, key.host
    )
}
