//! LaunchDarkly meters every request twice — the account's window and the route's — and says
//! what remains of each on every answer, under one reset. The exit door feeds each reading to
//! its own bucket: the route's remaining lands on the request's route bucket, never on the
//! account's, so a nearly spent route is held back while other routes go on.

#![allow(clippy::expect_used)]

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use headroom_core::clock::{Timestamp, TokioClock};
use headroom_core::governor::{BoxFuture, GovernorConfig, IdentitySnapshot};
use headroom_core::signal::{LD_GLOBAL, LD_ROUTE_PREFIX, Provider};
use headroom_core::{Bucket, Governor, QuotaKey, Subject};
use headroom_http::sinks::{CredentialRegistry, MemoryCredentials};
use headroom_http::{
    ApiError, ApiRequest, Client, ClientParts, Credential, Transport, TransportError, UrlPolicy,
};

const START: i64 = 1_800_000_000;
const FLAGS: &str = "GET /api/v2/flags/{projectKey}";
const MEMBERS: &str = "GET /api/v2/members";

/// Answers 200 with LaunchDarkly's headers: the account has plenty left; the flags route has
/// `flags_left`, every other route 40.
#[derive(Debug)]
struct LaunchDarkly {
    sent: Mutex<Vec<String>>,
    flags_left: &'static str,
}

impl Transport for LaunchDarkly {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, TransportError>> {
        Box::pin(async move {
            let path = request.uri().path().to_owned();
            let route_left = if path.starts_with("/api/v2/flags/") {
                self.flags_left
            } else {
                "40"
            };
            self.sent.lock().expect("lock").push(path);
            let reset_ms = ((START + 10) * 1000).to_string();
            Ok(http::Response::builder()
                .status(200)
                .header("X-Ratelimit-Global-Remaining", "90")
                .header("X-Ratelimit-Route-Remaining", route_left)
                .header("X-Ratelimit-Reset", reset_ms.as_str())
                .body(Bytes::from_static(b"{\"items\":[]}"))
                .expect("valid"))
        })
    }
}

fn owner() -> QuotaKey {
    QuotaKey::new(
        Provider::LaunchDarkly,
        "app.launchdarkly.com",
        Subject::User("account-1".into()),
    )
}

fn key() -> Credential {
    Credential::new("api-0123456789abcdef")
}

async fn door(flags_left: &'static str) -> (Client, Arc<LaunchDarkly>, Governor) {
    let clock = TokioClock::anchored_at(Timestamp::from_second(START).expect("valid"));
    let governor = Governor::in_memory(
        GovernorConfig::for_provider(Provider::LaunchDarkly),
        Arc::new(clock),
    )
    .expect("valid");
    let transport = Arc::new(LaunchDarkly {
        sent: Mutex::new(Vec::new()),
        flags_left,
    });
    let policy = UrlPolicy::for_api_url("https://app.launchdarkly.com").expect("valid");
    let mut parts = ClientParts::new(policy, governor.clone(), transport.clone(), clock);
    parts.config.provider = Provider::LaunchDarkly;
    let credentials = Arc::new(MemoryCredentials::default());
    credentials
        .record(
            "app.launchdarkly.com",
            key().fingerprint(),
            &owner().subject,
        )
        .await;
    parts.credentials = credentials;
    (Client::new(parts), transport, governor)
}

fn request(path: &str, route: &str) -> ApiRequest {
    ApiRequest::get(path)
        .credential(Some(&key()))
        .launchdarkly_route(route)
}

fn remaining(snapshot: &IdentitySnapshot, bucket: &str) -> Option<u64> {
    snapshot
        .buckets
        .iter()
        .find(|b| b.state.bucket == Bucket::new(bucket))
        .and_then(|b| b.state.remaining)
}

#[tokio::test]
async fn a_route_s_remaining_lands_on_the_route_bucket_not_on_global() {
    let (client, _transport, governor) = door("3").await;
    client
        .send(request("/api/v2/flags/default", FLAGS))
        .await
        .expect("sent");
    let snapshot = governor.snapshot(&owner()).await.expect("backend");
    assert_eq!(remaining(&snapshot, LD_GLOBAL), Some(90), "{snapshot:?}");
    let route = format!("{LD_ROUTE_PREFIX}{FLAGS}");
    assert_eq!(remaining(&snapshot, &route), Some(3), "{snapshot:?}");
}

#[tokio::test]
async fn a_nearly_spent_route_is_held_back_unsent_while_another_route_goes_on() {
    let (client, transport, _governor) = door("1").await;
    client
        .send(request("/api/v2/flags/default", FLAGS))
        .await
        .expect("sent");
    let refused = client.send(request("/api/v2/flags/other", FLAGS)).await;
    let route = format!("{LD_ROUTE_PREFIX}{FLAGS}");
    assert!(
        matches!(refused, Err(ApiError::RateLimited { ref bucket, .. }) if bucket.as_str() == route),
        "{refused:?}"
    );
    client
        .send(request("/api/v2/members", MEMBERS))
        .await
        .expect("another route goes on");
    let sent = transport.sent.lock().expect("lock").clone();
    assert_eq!(sent, ["/api/v2/flags/default", "/api/v2/members"]);
}
