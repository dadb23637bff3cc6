//! What a GitLab refusal means for a provider operation. GitLab says "already exists" with a
//! 400 (`Branch already exists`, `has already been taken`, `A file with this name already
//! exists`) or a 409, and "cannot merge" with 405, 406 or 409. The rest of the mapping (reads
//! transient, unanswered mutations ambiguous) is the exit door's, shared by every provider
//! (`headroom_http::ops`).

use headroom_core::provider::ProviderError;
use headroom_http::ApiError;
pub(crate) use headroom_http::ops::Sent;

/// GitLab's refusals.
pub(crate) fn gitlab_status(status: u16, message: String) -> ProviderError {
    match status {
        405 | 406 | 409 => ProviderError::Conflict(message),
        400 if message.contains("already") => ProviderError::Conflict(message),
        _ => ProviderError::validation(&message),
    }
}

/// The contract's error for `error`; `what` names the thing asked for.
pub(crate) fn from_api(error: ApiError, sent: Sent, what: &str) -> ProviderError {
    headroom_http::ops::provider_error(error, sent, what, gitlab_status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16, message: &str) -> ApiError {
        ApiError::Status {
            status,
            message: message.into(),
        }
    }

    #[test]
    fn gitlab_statuses_map_to_their_kinds() {
        for (code, message) in [
            (400, "Branch already exists"),
            (400, r#"{"message":{"name":["has already been taken"]}}"#),
            (405, "405 Method Not Allowed"),
            (406, "Branch cannot be merged"),
            (409, "Protected branch 'main' already exists"),
        ] {
            assert!(
                matches!(
                    from_api(status(code, message), Sent::Mutation, "x"),
                    ProviderError::Conflict(_)
                ),
                "{code} {message}"
            );
        }
        assert!(matches!(
            from_api(
                status(400, "Invalid reference name: nope"),
                Sent::Mutation,
                "x"
            ),
            ProviderError::Validation(_)
        ));
        assert!(matches!(
            from_api(
                ApiError::Server {
                    status: 502,
                    attempts: 1
                },
                Sent::Mutation,
                "x"
            ),
            ProviderError::Ambiguous(_)
        ));
        assert!(matches!(
            from_api(ApiError::Timeout { attempts: 4 }, Sent::Read, "x"),
            ProviderError::Transient(_)
        ));
    }
}
