//! What a caller asks the exit door to send, and what comes back.

use bytes::Bytes;
use headroom_core::route::{self, RouteFamily};
use headroom_core::signal::{Dimension, RateLimitSignal};
use headroom_core::{Bucket, RequestKind};
use http::{HeaderMap, Method, StatusCode};
use serde::de::DeserializeOwned;
use url::Url;

use crate::credential::Credential;
use crate::error::ApiError;
use crate::graphql::{QueryCost, estimate_cost};

/// How [`ApiRequest::endpoint`]'s buckets are named: `endpoint:GET /rest/api/3/myself`.
pub const ENDPOINT_PREFIX: &str = "endpoint:";

/// One provider request, with everything the governor and the usage records need.
#[derive(Debug, Clone)]
pub struct ApiRequest {
    /// The HTTP method.
    pub method: Method,
    /// An API path (`/repos/o/r`) or an absolute URL (a `Link` target).
    pub target: String,
    /// Read or mutation, REST or GraphQL, content-creating or not.
    pub kind: RequestKind,
    /// The bucket it is expected to spend.
    pub bucket: Bucket,
    /// The cost estimated before sending.
    pub estimated_cost: u32,
    /// Other buckets it spends besides `bucket`, each with its estimated cost (Linear's
    /// complexity beside its requests, LaunchDarkly's route window beside its global one): the
    /// governor grants the request against all of them or sends nothing.
    pub also_spends: Vec<(Bucket, u32)>,
    /// The endpoint group (from the catalogue, [`headroom_core::route`]); usage records carry
    /// its name.
    pub route_family: RouteFamily,
    /// The budget dimension.
    pub dimension: Dimension,
    /// The credential to send, if any.
    pub credential: Option<Credential>,
    /// Extra request headers.
    pub headers: HeaderMap,
    /// The request body.
    pub body: Option<Bytes>,
    /// Whether redirects are followed (each hop re-validated and separately acquired).
    pub follow_redirects: bool,
    /// Whether to send `If-None-Match` with a stored ETag and store the response's.
    pub conditional: bool,
    /// The GraphQL estimate, when this is a GraphQL request.
    pub graphql_estimate: Option<QueryCost>,
    /// The sync run that sends it, if one does: its usage records name the run, so the
    /// dashboard can say what each run spent.
    pub sync_run_id: Option<i64>,
    /// What it is expected to cost an OAuth app's hourly points (Jira: 1 a request plus 1 an
    /// issue or project returned), spent only when the identity is an app; 1 when unsaid.
    pub app_points: u32,
}

impl ApiRequest {
    /// A REST GET on the `core` bucket.
    pub fn get(target: impl Into<String>) -> Self {
        Self {
            method: Method::GET,
            target: target.into(),
            kind: RequestKind::REST_READ,
            bucket: Bucket::core(),
            estimated_cost: 1,
            also_spends: Vec::new(),
            route_family: route::REST,
            dimension: Dimension::RestCore,
            credential: None,
            headers: HeaderMap::new(),
            body: None,
            follow_redirects: false,
            conditional: false,
            graphql_estimate: None,
            sync_run_id: None,
            app_points: 1,
        }
    }

    /// A REST mutation with a JSON body. `creates_content` subjects it to the
    /// content-creation limits.
    pub fn mutation(
        method: Method,
        target: impl Into<String>,
        body: &serde_json::Value,
        creates_content: bool,
    ) -> Self {
        let mut kind = RequestKind::REST_MUTATION;
        kind.creates_content = creates_content;
        Self {
            method,
            kind,
            body: Some(Bytes::from(body.to_string())),
            ..Self::get(target)
        }
    }

    /// A GraphQL query or mutation, its cost estimated by GitHub's rule.
    pub fn graphql(query: &str, variables: &serde_json::Value) -> Result<Self, ApiError> {
        let estimate = estimate_cost(query, variables).map_err(ApiError::Cost)?;
        let mutation = query.trim_start().starts_with("mutation");
        let body = serde_json::json!({ "query": query, "variables": variables });
        Ok(Self {
            method: Method::POST,
            target: "/graphql".into(),
            kind: if mutation {
                RequestKind::GRAPHQL_MUTATION
            } else {
                RequestKind::GRAPHQL_QUERY
            },
            bucket: Bucket::graphql(),
            estimated_cost: estimate.cost,
            route_family: route::GRAPHQL,
            dimension: Dimension::GraphqlCost,
            body: Some(Bytes::from(body.to_string())),
            graphql_estimate: Some(estimate),
            ..Self::get("/graphql")
        })
    }

    /// Sends with this credential.
    pub fn credential(mut self, credential: Option<&Credential>) -> Self {
        self.credential = credential.cloned();
        self
    }

    /// Sent by this sync run (its usage records carry the run's id).
    pub fn sync_run(mut self, run_id: i64) -> Self {
        self.sync_run_id = Some(run_id);
        self
    }

    /// Names the endpoint group, and spends its dimension. Only a catalogued family can be
    /// named, so every family sent is one docs/ROUTE-FAMILIES.md lists.
    pub fn route(mut self, family: RouteFamily) -> Self {
        self.route_family = family;
        self.dimension = family.dimension;
        self
    }

    /// Spends one unit of a provider application limit too (counted by the governor).
    pub fn app_limit(mut self, limit: headroom_core::AppLimit) -> Self {
        self.kind = self.kind.with_app_limit(limit);
        self
    }

    /// Spends another bucket (e.g. `search`).
    pub fn bucket(mut self, bucket: Bucket) -> Self {
        if bucket.as_str() == "search" || bucket.as_str() == "code_search" {
            self.dimension = Dimension::Search;
        }
        self.bucket = bucket;
        self
    }

    /// Spends `bucket` too, at an estimated `cost`, besides [`Self::bucket`]'s: granted by
    /// every bucket at once or deferred with nothing sent.
    pub fn also_spends(mut self, bucket: Bucket, cost: u32) -> Self {
        self.also_spends.push((bucket, cost));
        self
    }

    /// Spends the provider's burst bucket of one endpoint and method too (Jira limits each
    /// site × endpoint × method on its own): `endpoint` is the method and the path template,
    /// `GET /rest/api/3/issue/{key}/comment`, never a path with ids in it, so every issue's
    /// comments share one bucket as they do at Jira.
    pub fn endpoint(self, endpoint: &str) -> Self {
        self.also_spends(Bucket::new(&format!("{ENDPOINT_PREFIX}{endpoint}")), 1)
    }

    /// Spends LaunchDarkly's account-wide bucket and the bucket of one route: `route` is the
    /// method and the path template (`GET /api/v2/flags/{projectKey}`), never a path with keys
    /// in it, so every project's pages share the route's one window as at LaunchDarkly.
    pub fn launchdarkly_route(self, route: &str) -> Self {
        self.bucket(Bucket::new(headroom_core::signal::LD_GLOBAL))
            .also_spends(
                Bucket::new(&format!(
                    "{}{route}",
                    headroom_core::signal::LD_ROUTE_PREFIX
                )),
                1,
            )
    }

    /// Expects to cost `points` of an OAuth app's hourly points when the identity is an app
    /// (Jira charges a page by what it returns): the governor holds the app's bucket to it.
    pub fn app_points(mut self, points: u32) -> Self {
        self.app_points = points.max(1);
        self
    }

    /// Follows redirects (each hop re-validated and separately acquired).
    pub fn follow_redirects(mut self) -> Self {
        self.follow_redirects = true;
        self
    }

    /// Sends the ETag remembered for this URL and credential (`If-None-Match`); the
    /// response's own ETag is remembered only when the caller says its body is stored
    /// ([`crate::Client::remember_etag`]).
    pub fn conditional(mut self) -> Self {
        self.conditional = true;
        self
    }
}

/// A response that came back usable (2xx, or 304 for a conditional request).
#[derive(Debug, Clone)]
pub struct ApiResponse {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The body (empty for a 304).
    pub body: Bytes,
    /// The URL that answered (after redirects).
    pub url: Url,
    /// What the response said about quota.
    pub signal: RateLimitSignal,
    /// Physical attempts made for the final URL.
    pub attempts: u32,
    /// Redirect hops followed.
    pub hops: u32,
}

impl ApiResponse {
    /// Whether the provider said "unchanged since the ETag you sent".
    pub fn not_modified(&self) -> bool {
        self.status == StatusCode::NOT_MODIFIED
    }

    /// The body as JSON.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        serde_json::from_slice(&self.body).map_err(|e| ApiError::Decode(e.to_string()))
    }

    /// The GraphQL cost GitHub reported, if it did.
    pub fn actual_cost(&self) -> Option<u64> {
        self.signal.cost
    }
}
