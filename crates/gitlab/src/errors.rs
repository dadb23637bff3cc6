//! What the exit door's errors mean for a provider operation on GitLab.
//!
//! GitLab says "already exists" with a 400 (`Branch already exists`, `has already been taken`,
//! `A file with this name already exists`) or a 409, and "cannot merge" with 405, 406 or 409.
//! A mutation that was sent and got no usable answer may have been applied: ambiguous.

use headroom_core::provider::ProviderError;
use headroom_http::ApiError;

/// Whether the failed request was a read or a mutation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sent {
    /// A read: nothing changed whatever happened.
    Read,
    /// A mutation: an unanswered one may have been applied.
    Mutation,
}

/// The contract's error for `error`; `what` names the thing asked for.
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
            405 | 406 | 409 => ProviderError::Conflict(message),
            400 if message.contains("already") => ProviderError::Conflict(message),
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
        e => unknown(e.to_string()),
    }
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
