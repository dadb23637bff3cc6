//! The errors that leave the exit door. Every message is redacted when the error is built, so
//! whatever displays, logs or stores one cannot leak a credential.

use headroom_core::words::counted;
use std::fmt;

use headroom_core::clock::Timestamp;
use headroom_core::governor::{GovernorError, WaitReason};
use headroom_core::redact::redact;
use headroom_core::{Bucket, Dimension, LimitReason};

use crate::graphql::CostError;
use crate::policy::PolicyError;
pub use crate::transport::CERTIFICATE_NOT_TRUSTED;

/// Why a request did not produce a usable response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// The URL policy refused the URL (or a redirect target); nothing was sent to it.
    #[error("refused: {0}")]
    Refused(PolicyError),
    /// The quota says wait; nothing was sent (or the origin refused for a limit). Defer the
    /// work until `until`.
    #[error("rate limited on {bucket} until {until}: {reason}")]
    RateLimited {
        /// The earliest instant worth trying again.
        until: Timestamp,
        /// The bucket that is closed.
        bucket: Bucket,
        /// The budget dimension the refused request would have spent.
        dimension: Dimension,
        /// The provider's request id, when the origin answered the refusal itself.
        request_id: Option<String>,
        /// Why.
        reason: RateLimitReason,
    },
    /// 401/403 without rate-limit markers: permission, SSO, bad credentials. Never retried.
    /// A 401 reads [`TOKEN_REFUSED`], which the binary follows with where the token came from.
    #[error("{}", forbidden_text(*status, message))]
    Forbidden {
        /// The status.
        status: u16,
        /// The provider's message, redacted.
        message: String,
    },
    /// 404 or 410: the entity is gone (or never was).
    #[error("not found ({status})")]
    Gone {
        /// The status.
        status: u16,
    },
    /// A redirect the call did not opt into following.
    #[error("redirect {status} to {location} not followed")]
    Redirect {
        /// The status.
        status: u16,
        /// Where it pointed, redacted.
        location: String,
    },
    /// More redirect hops than allowed.
    #[error("too many redirects ({hops})")]
    TooManyRedirects {
        /// Hops followed.
        hops: u32,
    },
    /// 5xx after the retries the policy allows (or the first one, for a mutation).
    #[error("server error {status} after {}", counted(*attempts, "attempt", "attempts"))]
    Server {
        /// The last status.
        status: u16,
        /// Attempts made.
        attempts: u32,
    },
    /// Another 4xx (422 validation, 409 conflict, 400 …).
    #[error("request failed ({status}): {message}")]
    Status {
        /// The status.
        status: u16,
        /// The provider's message, redacted.
        message: String,
    },
    /// No response in time, after the retries allowed.
    #[error("timed out after {}", counted(*attempts, "attempt", "attempts"))]
    Timeout {
        /// Attempts made.
        attempts: u32,
    },
    /// The connection failed, after the retries allowed.
    #[error("transport failed after {}: {message}", counted(*attempts, "attempt", "attempts"))]
    Transport {
        /// Attempts made.
        attempts: u32,
        /// What failed, redacted.
        message: String,
    },
    /// The server's certificate was refused (its detail in words). Never retried: it fails
    /// the same way until the CA that signed it is trusted.
    #[error("{CERTIFICATE_NOT_TRUSTED}: {0}")]
    Certificate(String),
    /// A GraphQL query that can never be sent as written.
    #[error("{0}")]
    Cost(CostError),
    /// The body did not decode as expected.
    #[error("response did not decode: {0}")]
    Decode(String),
    /// The governor's state backend failed.
    #[error("{0}")]
    Governor(GovernorError),
    /// The credential's owner could not be discovered.
    #[error("cannot discover the credential's owner: {0}")]
    Identity(String),
}

/// The start of a 401's message: the binary adds how the token is supplied.
pub const TOKEN_REFUSED: &str = "the token was refused (401)";

fn forbidden_text(status: u16, message: &str) -> String {
    if status == 401 {
        format!("{TOKEN_REFUSED}: {message}")
    } else {
        format!("forbidden ({status}): {message}")
    }
}

/// Why the exit door says wait: the governor's verdict, or (when the governor states no wait)
/// the kind of limit the origin reported.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RateLimitReason {
    /// The governor's verdict: quota exhausted, a secondary block, the in-flight ceiling, or
    /// a local points or content-creation limiter.
    Governor(WaitReason),
    /// The origin refused with a rate limit the governor holds no wait for.
    Origin(LimitReason),
    /// Nothing was sent: an operator's cap on what sync may spend of this window holds it
    /// back until the window resets (`headroom_core::budget`).
    Cap(headroom_core::budget::CapReason),
    /// Nothing was sent: another request of the same identity and route family — from this
    /// process or another, with any credential of that identity — met this limit, and its
    /// cooldown still holds (`headroom_core::cooldown`).
    Cooldown(LimitReason),
}

impl RateLimitReason {
    /// Whether the wait follows a secondary limit the origin answered with (a 403/429 it
    /// sent); every other wait was decided before sending or is a primary limit. A cooldown
    /// is not one: the limit it remembers was counted when it was met.
    pub fn is_secondary(&self) -> bool {
        matches!(
            self,
            RateLimitReason::Governor(WaitReason::SecondaryBlock { .. })
                | RateLimitReason::Origin(LimitReason::Secondary)
        )
    }

    /// The governor's verdict, if the wait is one.
    pub fn wait_reason(&self) -> Option<&WaitReason> {
        match self {
            RateLimitReason::Governor(reason) => Some(reason),
            RateLimitReason::Origin(_) | RateLimitReason::Cooldown(_) | RateLimitReason::Cap(_) => {
                None
            }
        }
    }
}

impl fmt::Display for RateLimitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RateLimitReason::Governor(reason) => reason.fmt(f),
            RateLimitReason::Origin(limit) => write!(f, "{} rate limit", limit.as_str()),
            RateLimitReason::Cap(cap) => cap.fmt(f),
            RateLimitReason::Cooldown(limit) => write!(
                f,
                "cooling down after a {} rate limit another request met",
                limit.as_str()
            ),
        }
    }
}

impl From<WaitReason> for RateLimitReason {
    fn from(reason: WaitReason) -> Self {
        RateLimitReason::Governor(reason)
    }
}

impl ApiError {
    /// A 4xx other than the ones with their own variant.
    pub fn status(status: u16, body: &[u8]) -> Self {
        Self::Status {
            status,
            message: provider_message(body),
        }
    }

    /// Whether this error means "try later" rather than "this will never work".
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            ApiError::RateLimited { .. }
                | ApiError::Server { .. }
                | ApiError::Timeout { .. }
                | ApiError::Transport { .. }
        )
    }
}

/// The `message` of a provider's JSON error body (or the start of the body), redacted.
pub fn provider_message(body: &[u8]) -> String {
    let text = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned());
    redact(&text)
}

impl From<PolicyError> for ApiError {
    fn from(e: PolicyError) -> Self {
        ApiError::Refused(e)
    }
}

impl From<GovernorError> for ApiError {
    fn from(e: GovernorError) -> Self {
        ApiError::Governor(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_read_as_before_and_know_a_secondary_limit() {
        let secondary = RateLimitReason::Governor(WaitReason::SecondaryBlock {
            bucket: Bucket::core(),
            strikes: 2,
        });
        assert_eq!(
            secondary.to_string(),
            "core blocked by a secondary rate limit (2 in a row)"
        );
        assert!(secondary.is_secondary());
        let origin = RateLimitReason::Origin(LimitReason::Secondary);
        assert_eq!(origin.to_string(), "secondary rate limit");
        assert!(origin.is_secondary());
        let ceiling = RateLimitReason::Governor(WaitReason::InFlightCeiling {
            in_flight: 10,
            ceiling: 10,
        });
        assert!(!ceiling.is_secondary());
        assert!(matches!(
            ceiling.wait_reason(),
            Some(WaitReason::InFlightCeiling { .. })
        ));
        let primary = RateLimitReason::Origin(LimitReason::Primary);
        assert_eq!(primary.to_string(), "primary rate limit");
        assert!(!primary.is_secondary());
        assert_eq!(primary.wait_reason(), None);
    }
}
