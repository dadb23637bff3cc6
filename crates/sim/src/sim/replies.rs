//! GitHub's refusals and failures as the handler answers them: injected server errors, the
//! gateway timeout, primary and secondary limit refusals.

use bytes::Bytes;
use headroom_core::clock::{SignedDuration, Timestamp};
use http::{HeaderMap, StatusCode};
use serde_json::json;

use super::{Reply, http_date};
use crate::quota::{Resource, SecondaryHit, SecondaryKind, Subject};

/// One of the injected server errors: a JSON 500, an HTML 502 or a JSON 503.
pub(super) fn injected_error(pick: u8) -> Reply {
    match pick {
        0 => Reply::json(
            StatusCode::INTERNAL_SERVER_ERROR,
            &json!({"message": "Server Error"}),
        ),
        1 => Reply {
            status: StatusCode::BAD_GATEWAY,
            headers: HeaderMap::new(),
            body: Bytes::from_static(b"<html><body><h1>502 Bad Gateway</h1></body></html>"),
            etag: false,
        },
        _ => Reply::json(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"message": "Service Unavailable"}),
        ),
    }
}

/// GitHub's answer to a request it could not answer in time.
pub(super) fn gateway_timeout() -> Reply {
    Reply::message(
        StatusCode::GATEWAY_TIMEOUT,
        "We couldn't respond to your request in time. Sorry about that. Please try resubmitting your request and contact us if the problem persists.",
        "https://docs.github.com/rest",
    )
}

pub(super) fn primary_reply(subject: &Subject, request_id: &str, resource: Resource) -> Reply {
    let mut message = subject.exceeded_message(false);
    if subject.is_authenticated() {
        message.push_str(&format!(
            " If you reach out to GitHub Support for help, please include the request ID {request_id}."
        ));
    }
    let doc = match resource {
        Resource::Search | Resource::CodeSearch => {
            "https://docs.github.com/rest/search/search#rate-limit"
        }
        _ => "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
    };
    Reply::json(
        StatusCode::FORBIDDEN,
        &json!({"message": message, "documentation_url": doc}),
    )
}

/// `as_date` is `Some(now)` when `retry-after` is to be sent as an HTTP-date.
pub(super) fn secondary_reply(
    hit: SecondaryHit,
    request_id: &str,
    as_date: Option<Timestamp>,
) -> Reply {
    let message = match hit.kind {
        SecondaryKind::Abuse => format!(
            "You have triggered an abuse detection mechanism. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID {request_id}."
        ),
        SecondaryKind::ContentCreation => format!(
            "You have exceeded a secondary rate limit and have been temporarily blocked from content creation. Please retry your request again later. If you reach out to GitHub Support for help, please include the request ID {request_id}."
        ),
        _ => format!(
            "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID {request_id}."
        ),
    };
    let reply = Reply::json(
        StatusCode::FORBIDDEN,
        &json!({
            "message": message,
            "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
        }),
    );
    match hit.retry_after {
        Some(secs) => match as_date {
            Some(now) => {
                let at = now + SignedDuration::from_secs(i64::try_from(secs).unwrap_or(3600));
                reply.header("retry-after", &http_date(at))
            }
            None => reply.header("retry-after", &secs.to_string()),
        },
        None => reply,
    }
}
