//! What the exit door's errors mean for a provider operation on GitHub.
//!
//! A read that failed changed nothing: its transient failures are [`ProviderError::Transient`].
//! A mutation whose request was sent and got no usable answer (a timeout, a 5xx, a broken
//! connection, an unreadable body) may have been applied: [`ProviderError::Ambiguous`].

use headroom_core::provider::ProviderError;
use headroom_http::ApiError;

/// Whether the failed request was a read or a mutation (what an unknown outcome means).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sent {
    /// A read: nothing changed whatever happened.
    Read,
    /// A mutation: an unanswered one may have been applied.
    Mutation,
}

/// The contract's error for `error`, the request having been `sent`; `what` names the thing
/// asked for (for not-found messages).
pub(crate) fn from_api(error: ApiError, sent: Sent, what: &str) -> ProviderError {
    let unknown = |message: String| match sent {
        Sent::Read => ProviderError::Transient(message),
        Sent::Mutation => ProviderError::Ambiguous(message),
    };
    match error {
        ApiError::RateLimited { until, .. } => ProviderError::RateLimited { until },
        ApiError::Forbidden { message, .. } => ProviderError::Permission(message),
        ApiError::Identity(message) => ProviderError::Permission(message),
        ApiError::Gone { .. } => ProviderError::NotFound(what.to_owned()),
        ApiError::Status { status, message } => match status {
            405 | 409 => ProviderError::Conflict(message),
            422 if message.contains("already exists") => ProviderError::Conflict(message),
            _ => ProviderError::validation(&message),
        },
        e @ (ApiError::Server { .. }
        | ApiError::Timeout { .. }
        | ApiError::Transport { .. }
        | ApiError::Decode(_)) => unknown(e.to_string()),
        e @ (ApiError::Refused(_)
        | ApiError::Redirect { .. }
        | ApiError::TooManyRedirects { .. }
        | ApiError::Cost(_)) => ProviderError::validation(&e.to_string()),
        // Nothing was sent (the governor's backend failed), or a kind added later: a read's
        // retry is harmless, a mutation's outcome is not known.
        e => unknown(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unanswered_mutations_are_ambiguous_and_unanswered_reads_transient() {
        let timeout = || ApiError::Timeout { attempts: 1 };
        assert!(matches!(
            from_api(timeout(), Sent::Mutation, "x"),
            ProviderError::Ambiguous(_)
        ));
        assert!(matches!(
            from_api(timeout(), Sent::Read, "x"),
            ProviderError::Transient(_)
        ));
        let server = ApiError::Server {
            status: 502,
            attempts: 1,
        };
        assert!(matches!(
            from_api(server, Sent::Mutation, "x"),
            ProviderError::Ambiguous(_)
        ));
    }

    #[test]
    fn statuses_map_to_their_kinds() {
        let status = |status, message: &str| ApiError::Status {
            status,
            message: message.into(),
        };
        assert!(matches!(
            from_api(status(422, "Reference already exists"), Sent::Mutation, "x"),
            ProviderError::Conflict(_)
        ));
        assert!(matches!(
            from_api(status(422, "Validation Failed"), Sent::Mutation, "x"),
            ProviderError::Validation(_)
        ));
        assert_eq!(
            from_api(ApiError::Gone { status: 404 }, Sent::Read, "repo a/b"),
            ProviderError::NotFound("repo a/b".into())
        );
    }
}
