//! Linear meters every request twice — a request and its complexity points — and says so on
//! every answer. The exit door feeds both readings to the governor, so a document whose
//! complexity the bucket no longer holds is deferred before it is sent, while the requests
//! bucket still has room.

#![allow(clippy::expect_used)]

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use headroom_core::clock::{Timestamp, TokioClock};
use headroom_core::governor::{BoxFuture, GovernorConfig};
use headroom_core::signal::Provider;
use headroom_core::{Bucket, Governor, QuotaKey, Subject};
use headroom_http::sinks::{CredentialRegistry, MemoryCredentials};
use headroom_http::{
    ApiError, ApiRequest, Client, ClientParts, Credential, Transport, TransportError, UrlPolicy,
};

const START: i64 = 1_800_000_000;

/// Answers every request 200 with Linear's headers: requests plenty, complexity as given.
#[derive(Debug)]
struct Linear {
    sent: Mutex<u32>,
    complexity_remaining: &'static str,
    complexity: &'static str,
}

impl Default for Linear {
    /// Complexity nearly spent.
    fn default() -> Self {
        Self {
            sent: Mutex::new(0),
            complexity_remaining: "40",
            complexity: "12",
        }
    }
}

impl Transport for Linear {
    fn send(
        &self,
        _request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, TransportError>> {
        Box::pin(async move {
            *self.sent.lock().expect("lock") += 1;
            let reset_ms = ((START + 3600) * 1000).to_string();
            Ok(http::Response::builder()
                .status(200)
                .header("x-ratelimit-requests-limit", "2500")
                .header("x-ratelimit-requests-remaining", "2400")
                .header("x-ratelimit-requests-reset", reset_ms.as_str())
                .header("x-ratelimit-complexity-limit", "3000000")
                .header(
                    "x-ratelimit-complexity-remaining",
                    self.complexity_remaining,
                )
                .header("x-ratelimit-complexity-reset", reset_ms.as_str())
                .header("x-complexity", self.complexity)
                .body(Bytes::from_static(b"{\"data\":{}}"))
                .expect("valid"))
        })
    }
}

fn owner() -> QuotaKey {
    QuotaKey::new(
        Provider::Linear,
        "api.linear.app",
        Subject::User("u-1".into()),
    )
}

async fn door() -> (Client, Arc<Linear>, Governor) {
    door_over(Linear::default()).await
}

async fn door_over(transport: Linear) -> (Client, Arc<Linear>, Governor) {
    let clock = TokioClock::anchored_at(Timestamp::from_second(START).expect("valid"));
    let governor = Governor::in_memory(
        GovernorConfig::for_provider(Provider::Linear),
        Arc::new(clock),
    )
    .expect("valid");
    let transport = Arc::new(transport);
    let policy = UrlPolicy::for_api_url("https://api.linear.app").expect("valid");
    let mut parts = ClientParts::new(policy, governor.clone(), transport.clone(), clock);
    parts.config.provider = Provider::Linear;
    let credentials = Arc::new(MemoryCredentials::default());
    credentials
        .record("api.linear.app", key().fingerprint(), &owner().subject)
        .await;
    parts.credentials = credentials;
    (Client::new(parts), transport, governor)
}

fn key() -> Credential {
    Credential::new("lin_api_0123456789abcdef")
}

fn document(complexity: u32) -> ApiRequest {
    ApiRequest::mutation(
        http::Method::POST,
        "/graphql",
        &serde_json::json!({ "query": "query { viewer { id } }" }),
        false,
    )
    .credential(Some(&key()))
    .bucket(Bucket::new("requests"))
    .also_spends(Bucket::new("complexity"), complexity)
}

#[tokio::test]
async fn a_document_the_complexity_bucket_cannot_hold_waits_unsent() {
    let (client, transport, governor) = door().await;
    client.send(document(12)).await.expect("sent");
    let snapshot = governor.snapshot(&owner()).await.expect("backend");
    let complexity = snapshot
        .buckets
        .iter()
        .find(|b| b.state.bucket == Bucket::new("complexity"))
        .expect("the complexity bucket is known");
    assert_eq!(complexity.state.remaining, Some(40), "{snapshot:?}");
    let requests = snapshot
        .buckets
        .iter()
        .find(|b| b.state.bucket == Bucket::new("requests"))
        .expect("the requests bucket is known");
    assert_eq!(requests.state.remaining, Some(2400));

    // 100 points do not fit in the 40 left: deferred to the complexity reset, nothing sent.
    let refused = client.send(document(100)).await;
    assert!(
        matches!(refused, Err(ApiError::RateLimited { ref bucket, .. }) if bucket.as_str() == "complexity"),
        "{refused:?}"
    );
    assert_eq!(*transport.sent.lock().expect("lock"), 1);
}

/// A document's complexity is its own bucket's cost. Read as the requests bucket's cost too,
/// the grant rule kept ceiling × complexity requests in reserve: 300 points a page and 2,400
/// requests left deferred every request though 2,400 remained.
#[tokio::test]
async fn a_documents_complexity_is_not_taken_for_its_cost_in_requests() {
    let (client, transport, _governor) = door_over(Linear {
        complexity_remaining: "2990000",
        complexity: "300",
        ..Linear::default()
    })
    .await;
    for _ in 0..3 {
        client.send(document(300)).await.expect("sent");
    }
    assert_eq!(*transport.sent.lock().expect("lock"), 3);
}
