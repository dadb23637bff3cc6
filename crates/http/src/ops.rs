//! What the exit door's outcomes mean for a Git provider operation, the same on every
//! provider: a read that failed changed nothing (its transient failures are
//! [`ProviderError::Transient`]); a mutation that was sent and got no usable answer (a
//! timeout, a 5xx, a broken connection, an unreadable body) may have been applied
//! ([`ProviderError::Ambiguous`]). Only what a provider's refusal statuses mean differs
//! (GitHub's 422 "already exists", GitLab's 400 and 406): each provider passes its own
//! [`StatusMeaning`].
//!
//! [`send_json`] is the one way an operation sends: through [`Client::send`], a mutation
//! marked as one so nothing retries it, the answer's JSON (`Value::Null` for an empty body).

use headroom_core::RouteFamily;
use headroom_core::provider::ProviderError;
use http::Method;
use serde_json::Value;

use crate::Client;
use crate::credential::Credential;
use crate::error::ApiError;
use crate::request::ApiRequest;

/// Whether the failed request was a read or a mutation (what an unknown outcome means).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// A read: nothing changed whatever happened.
    Read,
    /// A mutation: an unanswered one may have been applied.
    Mutation,
}

/// What a provider's refusal with `status` and (redacted) `message` means.
pub type StatusMeaning = fn(u16, String) -> ProviderError;

/// The contract's error for `error`, the request having been `sent`; `what` names the thing
/// asked for (for not-found messages); `status` reads the provider's refusals.
pub fn provider_error(
    error: ApiError,
    sent: Sent,
    what: &str,
    status: StatusMeaning,
) -> ProviderError {
    let unknown = |message: String| match sent {
        Sent::Read => ProviderError::Transient(message),
        Sent::Mutation => ProviderError::Ambiguous(message),
    };
    match error {
        ApiError::RateLimited { until, .. } => ProviderError::RateLimited { until },
        e @ ApiError::Forbidden { status: 401, .. } => ProviderError::Permission(e.to_string()),
        ApiError::Forbidden { message, .. } => ProviderError::Permission(message),
        ApiError::Identity(message) => ProviderError::Permission(message),
        ApiError::Gone { .. } => ProviderError::NotFound(what.to_owned()),
        ApiError::Status {
            status: code,
            message,
        } => status(code, message),
        // The TLS handshake failed: nothing was sent, even for a mutation.
        e @ ApiError::Certificate(_) => ProviderError::Transient(e.to_string()),
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

/// One operation's request: a read (`GET`) or a mutation with its JSON body.
#[derive(Debug, Clone, Copy)]
pub enum OpRequest<'a> {
    /// `GET target`.
    Read,
    /// A mutation; `creates_content` subjects it to the content-creation limits.
    Mutation {
        /// The verb.
        method: &'a Method,
        /// The JSON body.
        body: &'a Value,
        /// Whether it creates content.
        creates_content: bool,
        /// The provider application limit it spends, if any.
        app_limit: Option<headroom_core::AppLimit>,
    },
}

/// Sends `request` to `target` through `client` with `credential` and returns the answer's
/// JSON (`Value::Null` for an empty body), every failure read by [`provider_error`].
pub async fn send_json(
    client: &Client,
    credential: Option<&Credential>,
    target: String,
    request: OpRequest<'_>,
    what: &str,
    status: StatusMeaning,
    family: RouteFamily,
) -> Result<Value, ProviderError> {
    let (api, sent) = match request {
        OpRequest::Read => (ApiRequest::get(target), Sent::Read),
        OpRequest::Mutation {
            method,
            body,
            creates_content,
            app_limit,
        } => {
            let api = ApiRequest::mutation(method.clone(), target, body, creates_content);
            let api = match app_limit {
                Some(limit) => api.app_limit(limit),
                None => api,
            };
            (api, Sent::Mutation)
        }
    };
    let api = api.credential(credential).route(family);
    let failed = |e| provider_error(e, sent, what, status);
    let response = client.send(api).await.map_err(failed)?;
    if sent == Sent::Mutation && response.body.is_empty() {
        return Ok(Value::Null);
    }
    response.json().map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(_: u16, message: String) -> ProviderError {
        ProviderError::validation(&message)
    }

    #[test]
    fn unanswered_mutations_are_ambiguous_and_unanswered_reads_transient() {
        let timeout = || ApiError::Timeout { attempts: 1 };
        assert!(matches!(
            provider_error(timeout(), Sent::Mutation, "x", plain),
            ProviderError::Ambiguous(_)
        ));
        assert!(matches!(
            provider_error(timeout(), Sent::Read, "x", plain),
            ProviderError::Transient(_)
        ));
        let server = ApiError::Server {
            status: 502,
            attempts: 1,
        };
        assert!(matches!(
            provider_error(server, Sent::Mutation, "x", plain),
            ProviderError::Ambiguous(_)
        ));
        assert_eq!(
            provider_error(
                ApiError::Gone { status: 404 },
                Sent::Read,
                "repo a/b",
                plain
            ),
            ProviderError::NotFound("repo a/b".into())
        );
    }
}
