//! Credentials: a token that can be used but never shown.
//!
//! A [`Credential`] holds the token, its fingerprint (the first 16 hex digits of its
//! SHA-256) and how it is presented ([`AuthScheme`]). Its `Debug` and `Display` print only the
//! fingerprint, so a credential that ends up in a log line or an error message by accident
//! leaks nothing.

use std::fmt;
use std::sync::Arc;

use sha2::{Digest, Sha256};

/// The first 16 hex digits of the SHA-256 of `token`: enough to tell credentials apart, never
/// enough to recover one.
pub fn fingerprint(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// How a token is presented to its provider. `ProviderDefault` lets the exit door choose by
/// the provider's convention for a personal token (PROVIDER-FACTS.md, Authentication):
/// GitHub `Authorization: Bearer`, GitLab `PRIVATE-TOKEN`, Linear and LaunchDarkly the raw
/// token in `Authorization`. Jira's API tokens need the account's e-mail (`Basic`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthScheme {
    /// The provider's convention for a personal token.
    ProviderDefault,
    /// `Authorization: Bearer TOKEN`: OAuth access tokens on every provider.
    Bearer,
    /// `Authorization: Bearer TOKEN` for an OAuth app's access token whose quota is the app's
    /// (Jira's points): the token cannot tell its app, so the app's client id comes with it.
    AppBearer {
        /// The OAuth app's client id (not secret).
        client_id: Arc<str>,
    },
    /// `Authorization: Basic base64(USER:TOKEN)`: Jira Cloud's e-mail and API token.
    Basic {
        /// The account's e-mail address (not secret, but not logged either).
        user: Arc<str>,
    },
}

/// An API token.
#[derive(Clone)]
pub struct Credential {
    token: Arc<str>,
    fingerprint: Arc<str>,
    scheme: AuthScheme,
}

impl Credential {
    /// Wraps a token. Surrounding whitespace (a trailing newline in a token file) is removed.
    pub fn new(token: &str) -> Self {
        let token = token.trim();
        Self {
            fingerprint: fingerprint(token).into(),
            token: token.into(),
            scheme: AuthScheme::ProviderDefault,
        }
    }

    /// Wraps a token presented with `scheme` (an OAuth token as `Bearer`, a Jira API token as
    /// `Basic` with its e-mail). The fingerprint is the token's alone.
    pub fn with_scheme(token: &str, scheme: AuthScheme) -> Self {
        Self {
            scheme,
            ..Self::new(token)
        }
    }

    /// How the token is presented.
    pub fn scheme(&self) -> &AuthScheme {
        &self.scheme
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

    /// `Authorization: Bearer TOKEN`. Only the transport step may call this.
    pub(crate) fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }

    /// `Authorization: Basic base64(USER:TOKEN)`. Only the transport step may call this.
    pub(crate) fn basic(&self, user: &str) -> String {
        use base64::Engine as _;
        let pair = format!("{user}:{}", self.token);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
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

    #[test]
    fn a_scheme_changes_the_header_not_the_fingerprint() {
        let basic = Credential::with_scheme(
            "ATATT3xsecret",
            AuthScheme::Basic {
                user: "me@example.com".into(),
            },
        );
        assert_eq!(basic.fingerprint(), fingerprint("ATATT3xsecret"));
        // RFC 7617: base64 of "user:password".
        assert_eq!(
            basic.basic("me@example.com"),
            "Basic bWVAZXhhbXBsZS5jb206QVRBVFQzeHNlY3JldA=="
        );
        let shown = format!("{basic:?} {basic}");
        assert!(
            !shown.contains("secret") && !shown.contains("example"),
            "{shown}"
        );
        assert_eq!(Credential::new("t").scheme(), &AuthScheme::ProviderDefault);
    }
}
