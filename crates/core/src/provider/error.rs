//! The one error type of the provider contract: what happened, in terms a caller can act on.

use crate::clock::Timestamp;
use crate::redact::redact;

/// Why a provider operation did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// The repository, branch or pull request does not exist (or is invisible to the token).
    #[error("not found: {0}")]
    NotFound(String),
    /// The thing already exists, or the pull request cannot be merged as asked.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The credential may not do this (bad token, missing scope, protected branch).
    #[error("permission denied: {0}")]
    Permission(String),
    /// A rate limit: nothing more should be sent before `until`.
    #[error("rate limited until {until}")]
    RateLimited {
        /// The earliest instant worth trying again.
        until: Timestamp,
    },
    /// The provider refused the request as invalid; its message, redacted.
    #[error("invalid request: {0}")]
    Validation(String),
    /// A failure that changed nothing and may pass (a read's retries ran out, a refusal
    /// before sending).
    #[error("transient failure: {0}")]
    Transient(String),
    /// A mutation was sent and its outcome is unknown: it may or may not have been applied.
    #[error("ambiguous: {0} (the change may or may not have been applied)")]
    Ambiguous(String),
}

impl ProviderError {
    /// A validation error with the provider's message redacted.
    pub fn validation(message: &str) -> Self {
        Self::Validation(redact(message))
    }

    /// The kind's stable name, for exit codes, JSON output and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NotFound(_) => "not_found",
            Self::Conflict(_) => "conflict",
            Self::Permission(_) => "permission",
            Self::RateLimited { .. } => "rate_limited",
            Self::Validation(_) => "validation",
            Self::Transient(_) => "transient",
            Self::Ambiguous(_) => "ambiguous",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_messages_are_redacted_and_kinds_are_stable() {
        let e = ProviderError::validation("bad token ghp_abcdefghijklmnopqrstuvwxyz0123456789");
        assert!(
            !e.to_string()
                .contains("ghp_abcdefghijklmnopqrstuvwxyz0123456789")
        );
        assert_eq!(e.kind(), "validation");
        assert_eq!(ProviderError::Ambiguous("x".into()).kind(), "ambiguous");
    }
}
