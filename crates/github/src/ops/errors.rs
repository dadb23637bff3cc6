//! What a GitHub refusal means for a provider operation; the rest of the mapping (reads
//! transient, unanswered mutations ambiguous) is the exit door's, shared by every provider
//! (`headroom_http::ops`).

use headroom_core::provider::ProviderError;
use headroom_http::ApiError;
pub(crate) use headroom_http::ops::Sent;

/// GitHub's refusals: 405 and 409 (not mergeable, a conflict), 422 "… already exists".
pub(crate) fn github_status(status: u16, message: String) -> ProviderError {
    match status {
        405 | 409 => ProviderError::Conflict(message),
        422 if message.contains("already exists") => ProviderError::Conflict(message),
        _ => ProviderError::validation(&message),
    }
}

/// The contract's error for `error`, the request having been `sent`; `what` names the thing
/// asked for (for not-found messages).
pub(crate) fn from_api(error: ApiError, sent: Sent, what: &str) -> ProviderError {
    headroom_http::ops::provider_error(error, sent, what, github_status)
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
