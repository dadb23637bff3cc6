//! Credentials: a token that can be used but never shown.
//!
//! A [`Credential`] holds the token and its fingerprint (the first 16 hex digits of its
//! SHA-256). Its `Debug` and `Display` print only the fingerprint, so a credential that ends
//! up in a log line or an error message by accident leaks nothing.

use std::fmt;
use std::sync::Arc;

use sha2::{Digest, Sha256};

/// The first 16 hex digits of the SHA-256 of `token`: enough to tell credentials apart, never
/// enough to recover one.
pub fn fingerprint(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// An API token.
#[derive(Clone)]
pub struct Credential {
    token: Arc<str>,
    fingerprint: Arc<str>,
}

impl Credential {
    /// Wraps a token. Surrounding whitespace (a trailing newline in a token file) is removed.
    pub fn new(token: &str) -> Self {
        let token = token.trim();
        Self {
            fingerprint: fingerprint(token).into(),
            token: token.into(),
        }
    }

    /// The fingerprint, safe to log and store.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Whether this looks like a GitHub App installation token (`ghs_`), whose quota belongs to
    /// the installation rather than a user.
    pub fn is_installation_token(&self) -> bool {
        self.token.starts_with("ghs_")
    }

    /// The token itself (GitLab's `PRIVATE-TOKEN` header). Only the transport step may call this.
    pub(crate) fn token(&self) -> &str {
        &self.token
    }

    /// The `Authorization` header value. Only the transport step may call this.
    pub(crate) fn authorization(&self) -> String {
        format!("Bearer {}", self.token)
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Credential({})", self.fingerprint)
    }
}

impl fmt::Display for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "credential {}", self.fingerprint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_show_only_the_fingerprint() {
        let c = Credential::new("ghp_supersecret0123456789\n");
        let shown = format!("{c:?} {c}");
        assert!(!shown.contains("supersecret"), "{shown}");
        assert_eq!(c.fingerprint().len(), 16);
        assert_eq!(c.fingerprint(), fingerprint("ghp_supersecret0123456789"));
        assert_ne!(fingerprint("a"), fingerprint("b"));
        assert!(Credential::new("ghs_abc").is_installation_token());
    }
}
