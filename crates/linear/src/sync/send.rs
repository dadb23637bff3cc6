//! A Linear read through the exit door: `POST /graphql` with the document and its variables,
//! spending one of the identity's requests and the document's estimated complexity (the
//! governor grants both or sends nothing; the answer's `X-Complexity` replaces the estimate),
//! and the answer read: its `data`, or why not.

use bytes::Bytes;
use headroom_core::signal::LINEAR_COMPLEXITY;
use headroom_core::{Bucket, RequestKind, RouteFamily};
use headroom_http::ApiRequest;
use headroom_sync::{StageCtx, StageError};
use serde_json::{Value, json};

use super::page::{self, PageSize};
use crate::documents::Document;

/// Linear's request bucket (the complexity one is [`LINEAR_COMPLEXITY`]).
pub const REQUESTS: &str = "requests";

/// The request of `doc` with `variables`, estimated at `points`.
pub fn request(doc: &Document, variables: &Value, points: u64, route: RouteFamily) -> ApiRequest {
    let body = json!({ "query": doc.text, "variables": variables, "operationName": doc.name });
    ApiRequest {
        method: http::Method::POST,
        kind: RequestKind::GRAPHQL_QUERY,
        body: Some(Bytes::from(body.to_string())),
        ..ApiRequest::get("/graphql")
    }
    .bucket(Bucket::new(REQUESTS))
    .also_spends(
        Bucket::new(LINEAR_COMPLEXITY),
        u32::try_from(points).unwrap_or(u32::MAX),
    )
    .route(route)
}

/// How a page's request ended.
#[derive(Debug)]
pub enum Answer {
    /// HTTP 200: the body (`data`, and `errors` if any).
    Body(Value),
    /// "Query too complex": the message.
    TooComplex(String),
}

/// Sends `doc` with `variables`; a rate limit is a wait (the client turns Linear's 400
/// `RATELIMITED` into one), a too-complex refusal is told apart for the caller to shrink.
pub async fn query(
    ctx: &StageCtx<'_>,
    doc: &Document,
    route: RouteFamily,
    variables: &Value,
    points: u64,
) -> Result<Answer, StageError> {
    match ctx.send(request(doc, variables, points, route)).await {
        Ok(response) => Ok(Answer::Body(response.json::<Value>()?)),
        Err(e) if page::too_complex(&e) => Ok(Answer::TooComplex(e.to_string())),
        Err(e) => Err(e.into()),
    }
}

/// The `data` of a body, or the stage's permanent failure with Linear's messages.
pub fn data(doc: &Document, body: Value) -> Result<Value, StageError> {
    if let Some(message) = page::errors(&body) {
        return Err(StageError::Permanent(format!("{}: {message}", doc.name)));
    }
    match body {
        Value::Object(mut map) => match map.remove("data") {
            Some(data @ Value::Object(_)) => Ok(data),
            _ => Err(StageError::Permanent(format!("{}: no data", doc.name))),
        },
        _ => Err(StageError::Permanent(format!(
            "{}: the answer is not an object",
            doc.name
        ))),
    }
}

/// One page of `doc` at `size` (fitted under Linear's maximum), halving the size on "too
/// complex" until it is answered or one row is refused; `size` is left as the next page
/// should ask. Returns the body.
pub async fn page(
    ctx: &StageCtx<'_>,
    doc: &Document,
    route: RouteFamily,
    size: &mut PageSize,
    variables: impl Fn(u32) -> Value,
) -> Result<Value, StageError> {
    loop {
        let (first, vars, points) =
            page::fitted(doc, *size, &variables).map_err(StageError::Permanent)?;
        match query(ctx, doc, route, &vars, points).await? {
            Answer::Body(body) => {
                *size = size.after_success();
                return Ok(body);
            }
            Answer::TooComplex(message) => match size.halved_from(first) {
                Some(smaller) => *size = smaller,
                None => {
                    return Err(StageError::Permanent(format!(
                        "{}: a page of one is too complex: {message}",
                        doc.name
                    )));
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents;

    #[test]
    fn a_read_spends_one_request_and_its_estimate_and_is_retried_as_a_read() {
        let vars = json!({ "first": 50, "after": null, "filter": null });
        let r = request(
            &documents::ISSUES,
            &vars,
            1711,
            headroom_core::route::LINEAR_ISSUES,
        );
        assert_eq!(r.method, http::Method::POST);
        assert_eq!(r.target, "/graphql");
        assert_eq!(r.kind, RequestKind::GRAPHQL_QUERY);
        assert_eq!((r.bucket.as_str(), r.estimated_cost), (REQUESTS, 1));
        assert_eq!(r.also_spends, vec![(Bucket::new(LINEAR_COMPLEXITY), 1711)]);
        assert_eq!(r.route_family, headroom_core::route::LINEAR_ISSUES);
        let body: Value =
            serde_json::from_slice(r.body.as_deref().unwrap_or_default()).unwrap_or_default();
        assert_eq!(body["query"], documents::ISSUES.text);
        assert_eq!(body["variables"], vars);
    }

    #[test]
    fn errors_in_an_answer_fail_the_stage_with_linears_message() {
        let doc = &documents::TEAMS;
        let ok = json!({ "data": { "teams": { "nodes": [] } } });
        assert!(data(doc, ok).is_ok());
        let refused =
            json!({ "data": null, "errors": [{ "message": "Argument Validation Error" }] });
        assert!(matches!(
            data(doc, refused),
            Err(StageError::Permanent(m)) if m.contains("Argument Validation Error")
        ));
        let partial = json!({ "data": { "teams": null }, "errors": [{ "message": "boom" }] });
        assert!(matches!(data(doc, partial), Err(StageError::Permanent(_))));
        assert!(matches!(
            data(doc, json!([])),
            Err(StageError::Permanent(_))
        ));
    }
}
