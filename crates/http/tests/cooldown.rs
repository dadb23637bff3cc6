//! The exit door's cooldown gate: a refusal another process recorded for the identity and
//! route family holds a request back with nothing sent, other families go, a retry of a unit
//! already dispatched is not re-gated, a source that cannot be read fails open, and one
//! provider's refusal never holds back another provider's API on the same host.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use headroom_core::clock::{SignedDuration, Timestamp, TokioClock};
use headroom_core::cooldown::Refusal;
use headroom_core::governor::{BoxFuture, GovernorConfig};
use headroom_core::route::{self, RouteFamily};
use headroom_core::{Dimension, Governor, LimitReason, Provider, QuotaKey};
use headroom_http::sinks::{MemoryCredentials, RefusalSource};
use headroom_http::{
    ApiError, ApiRequest, Client, ClientParts, Credential, RateLimitReason, Transport,
    TransportError, UrlPolicy,
};

const START: i64 = 1_800_000_000;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(START + secs).expect("valid")
}

/// Answers 200 to everything and counts what was sent.
#[derive(Debug, Default)]
struct Counting {
    sent: Mutex<Vec<String>>,
}

impl Transport for Counting {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, TransportError>> {
        self.sent
            .lock()
            .expect("lock")
            .push(request.uri().path().to_owned());
        let response = http::Response::builder()
            .status(200)
            .header("x-ratelimit-remaining", "4000")
            .header("x-ratelimit-limit", "5000")
            .header("x-ratelimit-reset", (START + 3600).to_string())
            .header("x-ratelimit-resource", "core")
            .body(Bytes::from_static(b"{}"))
            .expect("valid");
        Box::pin(std::future::ready(Ok(response)))
    }
}

/// Refusals as another process recorded them; or a store that cannot be read.
#[derive(Debug)]
struct Recorded {
    refusals: Result<Vec<Refusal>, String>,
    reads: Mutex<u32>,
}

impl RefusalSource for Recorded {
    fn refusals<'a>(
        &'a self,
        _key: &'a QuotaKey,
        _since: Timestamp,
    ) -> BoxFuture<'a, Result<Vec<Refusal>, String>> {
        *self.reads.lock().expect("lock") += 1;
        Box::pin(std::future::ready(self.refusals.clone()))
    }
}

fn alice() -> QuotaKey {
    QuotaKey::user("api.github.com", "alice")
}

fn secondary_on(family: RouteFamily) -> Refusal {
    Refusal {
        provider: Provider::GitHub,
        key: alice(),
        route_family: Some(family.name.to_owned()),
        dimension: Some(Dimension::RestCore),
        reason: LimitReason::Secondary,
        retry_after: Some(SignedDuration::from_secs(60)),
        reset_at: Some(t(3000)),
        observed_at: t(-10),
    }
}

async fn door(refusals: Result<Vec<Refusal>, String>) -> (Client, Arc<Counting>, Arc<Recorded>) {
    let clock = TokioClock::anchored_at(t(0));
    let governor = Governor::in_memory(GovernorConfig::default(), Arc::new(clock)).expect("valid");
    let transport = Arc::new(Counting::default());
    let policy = UrlPolicy::for_api_url("https://api.github.com").expect("valid");
    let mut parts = ClientParts::new(policy, governor, transport.clone(), clock);
    let credentials = Arc::new(MemoryCredentials::default());
    // The owner is known, as another process recorded it.
    headroom_http::sinks::CredentialRegistry::record(
        credentials.as_ref(),
        "api.github.com",
        token().fingerprint(),
        &alice().subject,
    )
    .await;
    parts.credentials = credentials;
    let source = Arc::new(Recorded {
        refusals,
        reads: Mutex::new(0),
    });
    parts.refusals = source.clone();
    (Client::new(parts), transport, source)
}

fn token() -> Credential {
    Credential::new("ghp_0123456789abcdefghijklmnopqrstuvwxyz")
}

fn get(family: RouteFamily) -> ApiRequest {
    ApiRequest::get("/repos/acme/widgets/issues")
        .credential(Some(&token()))
        .route(family)
}

#[tokio::test(start_paused = true)]
async fn a_recorded_refusal_holds_its_family_back_with_nothing_sent() {
    let (client, transport, source) = door(Ok(vec![secondary_on(route::ISSUES)])).await;
    match client.send(get(route::ISSUES)).await {
        Err(ApiError::RateLimited { until, reason, .. }) => {
            assert_eq!(until, t(50), "observed 10 s ago, retry-after 60 s");
            assert_eq!(reason, RateLimitReason::Cooldown(LimitReason::Secondary));
        }
        other => panic!("expected a cooldown, got {other:?}"),
    }
    assert!(transport.sent.lock().expect("lock").is_empty());
    // Another family of the same identity goes.
    client.send(get(route::PULL_REQUESTS)).await.expect("sent");
    assert_eq!(transport.sent.lock().expect("lock").len(), 1);
    // Both checks were one read: the refusals are reused within a second.
    assert_eq!(*source.reads.lock().expect("lock"), 1);

    // Once its window has passed (and the read is refreshed), the family goes again.
    tokio::time::advance(std::time::Duration::from_secs(51)).await;
    client
        .send(get(route::ISSUES))
        .await
        .expect("sent after the cooldown");
    assert_eq!(*source.reads.lock().expect("lock"), 2);
}

#[tokio::test(start_paused = true)]
async fn a_store_that_cannot_be_read_fails_open() {
    let (client, transport, _) = door(Err("database is locked".to_owned())).await;
    client.send(get(route::ISSUES)).await.expect("sent");
    assert_eq!(transport.sent.lock().expect("lock").len(), 1);
}

/// GitHub refuses every mutation with a secondary limit; GitLab (under `/api/v4`) creates.
#[derive(Debug, Default)]
struct TwoProviders {
    sent: Mutex<Vec<String>>,
}

impl Transport for TwoProviders {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, TransportError>> {
        let path = request.uri().path().to_owned();
        self.sent.lock().expect("lock").push(path.clone());
        let response = if path.starts_with("/api/v4/") {
            http::Response::builder()
                .status(201)
                .header("content-type", "application/json")
                .body(Bytes::from_static(br#"{"id":1}"#))
        } else {
            http::Response::builder()
                .status(429)
                .header("content-type", "application/json")
                .header("retry-after", "60")
                .body(Bytes::from_static(
                    br#"{"message":"You have exceeded a secondary rate limit."}"#,
                ))
        };
        Box::pin(std::future::ready(Ok(response.expect("valid"))))
    }
}

/// The refusals every door records, read back by every door: one database's observations.
#[derive(Debug, Default)]
struct Observations {
    refused: Mutex<Vec<Refusal>>,
}

impl headroom_http::sinks::RateLimitLog for Observations {
    fn record(&self, e: headroom_http::sinks::RateLimitEvent) -> BoxFuture<'_, ()> {
        if e.kind == headroom_http::sinks::RateLimitEventKind::Refused {
            self.refused.lock().expect("lock").push(Refusal {
                provider: e.provider,
                key: e.key,
                route_family: Some(e.route_family),
                dimension: Some(e.dimension),
                reason: match e.reason {
                    RateLimitReason::Origin(reason) => reason,
                    _ => LimitReason::Unknown,
                },
                retry_after: e.retry_after,
                reset_at: e.reset_at,
                observed_at: e.at,
            });
        }
        Box::pin(std::future::ready(()))
    }
}

impl RefusalSource for Observations {
    fn refusals<'a>(
        &'a self,
        key: &'a QuotaKey,
        _since: Timestamp,
    ) -> BoxFuture<'a, Result<Vec<Refusal>, String>> {
        // As the store reads them: by host and subject.
        let refused = self.refused.lock().expect("lock");
        let same = |r: &&Refusal| r.key.host == key.host && r.key.subject == key.subject;
        Box::pin(std::future::ready(Ok(refused
            .iter()
            .filter(same)
            .cloned()
            .collect())))
    }
}

/// Issue 34, item 10: GitHub's 429 on host H holds GitHub's `alice` back — whatever the door —
/// and never GitLab's `alice` on H, though both doors share one governor and one store.
#[tokio::test(start_paused = true)]
async fn a_github_429_never_cools_down_a_gitlab_mutation_on_the_same_host() {
    let clock = TokioClock::anchored_at(t(0));
    let governor = Governor::in_memory(GovernorConfig::default(), Arc::new(clock)).expect("valid");
    let transport = Arc::new(TwoProviders::default());
    let observations = Arc::new(Observations::default());
    let credentials = Arc::new(MemoryCredentials::default());
    headroom_http::sinks::CredentialRegistry::record(
        credentials.as_ref(),
        "127.0.0.1",
        token().fingerprint(),
        &alice().subject,
    )
    .await;
    let door = |provider: Provider, api: &str| {
        let policy = UrlPolicy::for_api_url(api).expect("loopback");
        let mut parts = ClientParts::new(policy, governor.clone(), transport.clone(), clock);
        parts.credentials = credentials.clone();
        parts.rate_limits = observations.clone();
        parts.refusals = observations.clone();
        parts.config.provider = provider;
        Client::new(parts)
    };
    let github = door(Provider::GitHub, "http://127.0.0.1:7000");
    let gitlab = door(Provider::GitLab, "http://127.0.0.1:7000/api/v4");
    let create = |target: &str, family: RouteFamily| {
        ApiRequest::mutation(
            http::Method::POST,
            target,
            &serde_json::json!({"name": "widgets"}),
            true,
        )
        .credential(Some(&token()))
        .route(family)
    };

    let refused = github.send(create("/user/repos", route::GITHUB_OPS)).await;
    assert!(
        matches!(refused, Err(ApiError::RateLimited { .. })),
        "{refused:?}"
    );
    gitlab
        .send(create("/projects", route::GITLAB_OPS))
        .await
        .expect("GitLab's alice is another quota");
    // GitHub's alice is still held back, by a door that never met the 429 too.
    let again = door(Provider::GitHub, "http://127.0.0.1:7000")
        .send(create("/user/repos", route::GITHUB_OPS))
        .await;
    assert!(
        matches!(again, Err(ApiError::RateLimited { .. })),
        "{again:?}"
    );
    assert_eq!(
        *transport.sent.lock().expect("lock"),
        vec!["/user/repos".to_owned(), "/api/v4/projects".to_owned()]
    );
}
