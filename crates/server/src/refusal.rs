//! Refusals made before a handler runs, in the JSON every other refusal uses: a path
//! parameter that does not decode (invalid percent-encoding or UTF-8, [`ApiPath`]), a URI
//! longer than any request of this API needs ([`refuse_long_uris`]), and the bodies of the
//! refusals hyper makes itself and the listener rewrites ([`protocol_refusal`]) or makes past
//! its caps ([`json_body`]). Without them axum and hyper answer those in plain text or with
//! an empty body.

use axum::extract::{FromRequestParts, Path, Request};
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use crate::ApiError;

/// The longest URI answered (path and query). The longest real request — a filtered list with
/// a cursor — is a few hundred bytes. hyper refuses past 64 KiB itself, before any of this
/// runs; the listener gives that 414 its JSON body ([`protocol_refusal`]).
pub const MAX_URI_BYTES: usize = 8 * 1024;

/// `{"error": {"code", "message"}}` as bytes, for answers written below the router.
pub fn json_body(code: &str, message: String) -> Vec<u8> {
    let body = crate::ErrorBody {
        error: crate::ErrorDetail {
            code: code.to_owned(),
            message,
            parameter: None,
        },
    };
    // Two strings cannot fail to serialize; an empty body is the fallback all the same.
    serde_json::to_vec(&body).unwrap_or_default()
}

/// The JSON body of a refusal hyper makes itself, before the router sees the request: a
/// request it cannot parse (400), a head too large or with too many headers (431), a URI past
/// its 64 KiB (414). `None` for any other status.
pub fn protocol_refusal(status: u16) -> Option<Vec<u8>> {
    let (code, message) = match status {
        400 => (
            "malformed_request",
            "the request is not well-formed HTTP/1.1".to_owned(),
        ),
        414 => (
            "uri_too_long",
            format!("the URI is too long to read; at most {MAX_URI_BYTES} bytes are answered"),
        ),
        431 => (
            "headers_too_large",
            "the request's headers are too large or too many".to_owned(),
        ),
        _ => return None,
    };
    Some(json_body(code, message))
}

/// [`Path`], refusing a segment that does not decode with a JSON 400 (`invalid_path`).
#[derive(Debug, Clone)]
pub struct ApiPath<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiPath<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Send,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(ApiPath(value)),
            Err(rejection) => Err(ApiError::BadRequest {
                code: "invalid_path",
                parameter: "path".to_owned(),
                message: rejection.body_text(),
            }),
        }
    }
}

/// Answers 414 in JSON for a URI past [`MAX_URI_BYTES`].
pub async fn refuse_long_uris(request: Request, next: Next) -> Response {
    let len = request
        .uri()
        .path_and_query()
        .map_or(0, |pq| pq.as_str().len());
    if len > MAX_URI_BYTES {
        return ApiError::UriTooLong(len).into_response();
    }
    next.run(request).await
}
