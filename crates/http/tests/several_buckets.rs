//! A request that spends several buckets at once (`ApiRequest::also_spends`): the exit door
//! acquires them all through the governor in one grant — sent holding every bucket, or
//! deferred by the bucket that waits longest with nothing sent — and frees them all after.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use headroom_core::clock::{Timestamp, TokioClock};
use headroom_core::governor::{Acquire, BoxFuture, GovernorConfig};
use headroom_core::{Bucket, Governor, QuotaKey, RateLimitSignal, RequestKind};
use headroom_http::sinks::MemoryCredentials;
use headroom_http::{
    ApiError, ApiRequest, Client, ClientParts, Credential, RateLimitReason, Transport,
    TransportError, UrlPolicy,
};

const START: i64 = 1_800_000_000;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(START + secs).expect("valid")
}

fn alice() -> QuotaKey {
    QuotaKey::user("api.github.com", "alice")
}

fn token() -> Credential {
    Credential::new("ghp_0123456789abcdefghijklmnopqrstuvwxyz")
}

/// A second bucket with a window and a reserve (Linear's own `complexity` keeps none and
/// refills continuously: core's `governor_complexity.rs`).
fn complexity() -> Bucket {
    Bucket::new("points")
}

/// Answers 200 to everything and notes, as each request is sent, what the governor holds in
/// flight: (identity, core, complexity).
#[derive(Debug)]
struct Holding {
    governor: Governor,
    seen: Mutex<Vec<(u32, u32, u32)>>,
}

async fn held(governor: &Governor) -> (u32, u32, u32) {
    let snapshot = governor.snapshot(&alice()).await.expect("backend");
    let of = |bucket: Bucket| {
        snapshot
            .buckets
            .iter()
            .find(|b| b.state.bucket == bucket)
            .map_or(0, |b| b.state.in_flight)
    };
    (snapshot.in_flight, of(Bucket::core()), of(complexity()))
}

impl Transport for Holding {
    fn send(
        &self,
        _request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, TransportError>> {
        Box::pin(async move {
            let now = held(&self.governor).await;
            self.seen.lock().expect("lock").push(now);
            Ok(http::Response::builder()
                .status(200)
                .body(Bytes::from_static(b"{}"))
                .expect("valid"))
        })
    }
}

async fn door() -> (Client, Arc<Holding>, Governor) {
    let clock = TokioClock::anchored_at(t(0));
    let governor = Governor::in_memory(GovernorConfig::default(), Arc::new(clock)).expect("valid");
    let transport = Arc::new(Holding {
        governor: governor.clone(),
        seen: Mutex::new(Vec::new()),
    });
    let policy = UrlPolicy::for_api_url("https://api.github.com").expect("valid");
    let mut parts = ClientParts::new(policy, governor.clone(), transport.clone(), clock);
    let credentials = Arc::new(MemoryCredentials::default());
    // The owner is known, as another process recorded it: no `GET /user` first.
    headroom_http::sinks::CredentialRegistry::record(
        credentials.as_ref(),
        "api.github.com",
        token().fingerprint(),
        &alice().subject,
    )
    .await;
    parts.credentials = credentials;
    (Client::new(parts), transport, governor)
}

fn request(complexity_cost: u32) -> ApiRequest {
    ApiRequest::get("/repos/acme/widgets")
        .credential(Some(&token()))
        .also_spends(complexity(), complexity_cost)
}

/// Teaches the governor that complexity has `remaining` left until `reset`.
async fn complexity_left(governor: &Governor, remaining: u64, reset: Timestamp) {
    let kind = RequestKind::REST_READ;
    let Acquire::Grant(p) = governor
        .acquire(&alice(), &complexity(), 1, kind)
        .await
        .expect("backend")
    else {
        panic!("expected a grant");
    };
    let signal = RateLimitSignal {
        resource: Some(complexity()),
        limit: Some(3000),
        remaining: Some(remaining),
        used: Some(3000 - remaining),
        reset_at: Some(reset),
        ..RateLimitSignal::default()
    };
    governor.observe(&p, &signal).await.expect("backend");
    p.release().await;
}

#[tokio::test(start_paused = true)]
async fn a_request_that_also_spends_a_bucket_is_sent_holding_both_and_frees_both() {
    let (client, transport, governor) = door().await;
    client.send(request(5)).await.expect("sent");
    assert_eq!(
        *transport.seen.lock().expect("lock"),
        vec![(1, 1, 1)],
        "sent holding one slot of each bucket and one of the identity"
    );
    assert_eq!(held(&governor).await, (0, 0, 0), "all freed after");
}

#[tokio::test(start_paused = true)]
async fn a_request_that_also_spends_an_exhausted_bucket_is_deferred_with_nothing_sent() {
    let (client, transport, governor) = door().await;
    // 100 left: a cost of 10 needs 10 × (0 + 1 + 10) = 110.
    complexity_left(&governor, 100, t(1800)).await;
    match client.send(request(10)).await {
        Err(ApiError::RateLimited {
            bucket,
            until,
            reason: RateLimitReason::Governor(_),
            ..
        }) => {
            assert_eq!(bucket, complexity(), "named by the bucket that waits");
            assert_eq!(until, t(1860), "its reset plus the margin");
        }
        other => panic!("expected a deferral, got {other:?}"),
    }
    assert!(
        transport.seen.lock().expect("lock").is_empty(),
        "nothing sent"
    );
    assert_eq!(
        held(&governor).await,
        (0, 0, 0),
        "core reserved nothing either"
    );
    // The same request without complexity goes: core alone has room.
    client
        .send(ApiRequest::get("/repos/acme/widgets").credential(Some(&token())))
        .await
        .expect("sent");
    assert_eq!(transport.seen.lock().expect("lock").len(), 1);
}
