//! Refusals made before a handler runs, in the JSON every other refusal uses: a path
//! parameter that does not decode (invalid percent-encoding or UTF-8, [`ApiPath`]) and a URI
//! longer than any request of this API needs ([`refuse_long_uris`]). Without them axum and
//! hyper answer those in plain text.

use axum::extract::{FromRequestParts, Path, Request};
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use crate::ApiError;

/// The longest URI answered (path and query). The longest real request — a filtered list with
/// a cursor — is a few hundred bytes. hyper refuses past 64 KiB itself, before any of this
/// runs, with an empty 414.
pub const MAX_URI_BYTES: usize = 8 * 1024;

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
