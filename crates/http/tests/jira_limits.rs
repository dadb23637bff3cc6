//! Jira's limits at the exit door, as Atlassian states them [jr-build] [jr-rl]: every endpoint
//! and method has a burst bucket (a steady rate plus a buffer), paced locally so that a sync
//! many times the rate meets no 429; a 429's `RateLimit-Reason` decides what it closes — a
//! burst, per-issue or unknown reason that endpoint only, a quota the whole identity until
//! `X-RateLimit-Reset` (written with or without seconds); a 403 is a permission refusal,
//! never retried and never a limit.

#![allow(clippy::expect_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::{BoxFuture, GovernorConfig, PointsLimit, WaitReason};
use headroom_core::signal::Provider;
use headroom_core::{Bucket, Governor, QuotaKey, Subject};
use headroom_http::sinks::{CredentialRegistry, MemoryCredentials};
use headroom_http::{
    ApiError, ApiRequest, AuthScheme, Client, ClientParts, Credential, RateLimitReason, Transport,
    TransportError, UrlPolicy,
};

const SITE: &str = "acme.atlassian.net";
const COMMENTS: &str = "GET /rest/api/3/issue/{key}/comment";
const CHANGELOG: &str = "GET /rest/api/3/issue/{key}/changelog";

/// A canned answer: status and headers.
type Answer = (u16, Vec<(&'static str, String)>);

/// A fake Jira site: a token bucket per endpoint and method (`rate` a second, holding
/// `rate + buffer`), and canned answers for the first requests to chosen endpoints.
#[derive(Debug)]
struct FakeJira {
    clock: TokioClock,
    rate: u64,
    buffer: u64,
    /// (tokens in thousandths, last refill) per endpoint.
    buckets: Mutex<HashMap<String, (u64, Timestamp)>>,
    /// Answers queued per endpoint: (status, headers), served before anything else.
    canned: Mutex<HashMap<String, Vec<Answer>>>,
    sent: Mutex<Vec<String>>,
    refused: Mutex<u32>,
}

impl FakeJira {
    fn new(clock: TokioClock, rate: u64, buffer: u64) -> Self {
        Self {
            clock,
            rate,
            buffer,
            buckets: Mutex::new(HashMap::new()),
            canned: Mutex::new(HashMap::new()),
            sent: Mutex::new(Vec::new()),
            refused: Mutex::new(0),
        }
    }

    fn answer(&self, endpoint: &str, status: u16, headers: &[(&'static str, &str)]) {
        let headers = headers.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
        self.canned
            .lock()
            .expect("lock")
            .entry(endpoint.to_owned())
            .or_default()
            .push((status, headers));
    }

    fn sent_to(&self, endpoint: &str) -> usize {
        let sent = self.sent.lock().expect("lock");
        sent.iter().filter(|e| *e == endpoint).count()
    }

    /// Takes a token of `endpoint`'s bucket; false when it is empty.
    fn take(&self, endpoint: &str) -> bool {
        let now = self.clock.now();
        let capacity = (self.rate + self.buffer) * 1_000;
        let mut buckets = self.buckets.lock().expect("lock");
        let (tokens, at) = buckets
            .entry(endpoint.to_owned())
            .or_insert((capacity, now));
        let elapsed = u64::try_from(now.duration_since(*at).as_millis()).unwrap_or(0);
        *tokens = (*tokens + elapsed * self.rate).min(capacity);
        *at = now;
        if *tokens < 1_000 {
            return false;
        }
        *tokens -= 1_000;
        true
    }
}

/// `GET /rest/api/3/issue/ABC-1/comment` → `GET /rest/api/3/issue/{key}/comment`.
fn endpoint_of(request: &http::Request<Bytes>) -> String {
    let mut segments = Vec::new();
    let mut after_issue = false;
    for s in request.uri().path().split('/').filter(|s| !s.is_empty()) {
        segments.push(if after_issue { "{key}" } else { s });
        after_issue = s == "issue";
    }
    format!("{} /{}", request.method(), segments.join("/"))
}

impl Transport for FakeJira {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, TransportError>> {
        let endpoint = endpoint_of(&request);
        self.sent.lock().expect("lock").push(endpoint.clone());
        let canned = {
            let mut canned = self.canned.lock().expect("lock");
            canned
                .get_mut(&endpoint)
                .and_then(|q| (!q.is_empty()).then(|| q.remove(0)))
        };
        let (status, headers) = match canned {
            Some(answer) => answer,
            None if self.take(&endpoint) => (200, Vec::new()),
            None => {
                *self.refused.lock().expect("lock") += 1;
                let burst = vec![
                    ("retry-after", "1".to_owned()),
                    ("ratelimit-reason", "jira-burst-based".to_owned()),
                    ("x-ratelimit-limit", self.rate.to_string()),
                    ("x-ratelimit-remaining", "0".to_owned()),
                ];
                (429, burst)
            }
        };
        let mut response = http::Response::builder().status(status);
        for (k, v) in headers {
            response = response.header(k, v);
        }
        let body = if status == 200 {
            Bytes::from_static(b"{\"comments\":[]}")
        } else {
            Bytes::from_static(b"{\"errorMessages\":[\"refused\"],\"errors\":{}}")
        };
        Box::pin(async move { Ok(response.body(body).expect("valid")) })
    }
}

fn owner() -> QuotaKey {
    QuotaKey::new(Provider::Jira, SITE, Subject::User("557058:me".into()))
}

fn token() -> Credential {
    Credential::with_scheme(
        "jira-api-token",
        AuthScheme::Basic {
            user: "me@acme.example".into(),
        },
    )
}

/// A door to the fake site at `start`, with `endpoint_rate` and the fake's bucket.
async fn door(
    start: Timestamp,
    endpoint_rate: Option<PointsLimit>,
    rate: u64,
    buffer: u64,
) -> (Client, Arc<FakeJira>, TokioClock) {
    let clock = TokioClock::anchored_at(start);
    let config = GovernorConfig {
        endpoint_rate,
        ..GovernorConfig::for_provider(Provider::Jira)
    };
    let governor = Governor::in_memory(config, Arc::new(clock)).expect("valid");
    let jira = Arc::new(FakeJira::new(clock, rate, buffer));
    let policy = UrlPolicy::for_api_url(&format!("https://{SITE}")).expect("valid");
    let mut parts = ClientParts::new(policy, governor, jira.clone(), clock);
    parts.config.provider = Provider::Jira;
    parts.config.jitter_seed = Some(7);
    let credentials = Arc::new(MemoryCredentials::default());
    credentials
        .record(SITE, token().fingerprint(), &owner().subject)
        .await;
    parts.credentials = credentials;
    (Client::new(parts), jira, clock)
}

fn get(endpoint: &str, issue: u32) -> ApiRequest {
    let path = endpoint
        .trim_start_matches("GET ")
        .replace("{key}", &format!("ABC-{issue}"));
    ApiRequest::get(path)
        .credential(Some(&token()))
        .endpoint(endpoint)
}

fn start() -> Timestamp {
    "2026-03-26T16:00:10Z".parse().expect("valid")
}

/// What a stage does with a wait that is only pacing: sleeps until it ends, then sends again.
async fn send_paced(client: &Client, clock: &TokioClock, request: ApiRequest) -> ApiError {
    loop {
        match client.send(request.clone()).await {
            Err(ApiError::RateLimited {
                until,
                reason: RateLimitReason::Governor(WaitReason::LocalPoints { .. }),
                ..
            }) => clock.sleep_until(until).await,
            Ok(_) => return ApiError::Decode("sent".into()),
            Err(other) => return other,
        }
    }
}

/// The benchmark's target in small: a hundred requests to one endpoint, ten times its burst
/// rate of 10 a second, meet no 429 and take just under ten seconds. Unpaced, the fake's
/// bucket (10 a second, buffer 5) refuses most of them.
#[tokio::test(start_paused = true)]
async fn a_hundred_requests_to_one_endpoint_paced_at_its_rate_meet_no_429() {
    let paced = PointsLimit::paced_per_second(10);
    let (client, jira, clock) = door(start(), paced, 10, 5).await;
    for issue in 0..100 {
        let outcome = send_paced(&client, &clock, get(COMMENTS, issue)).await;
        assert!(
            matches!(&outcome, ApiError::Decode(m) if m == "sent"),
            "request {issue}: {outcome:?}"
        );
    }
    assert_eq!(*jira.refused.lock().expect("lock"), 0, "429s met");
    assert_eq!(jira.sent_to(COMMENTS), 100);
    // One every 100 ms: the 100th at 9.9 s, so the pacing is not stricter than the rate.
    assert_eq!(
        clock.now().duration_since(start()),
        SignedDuration::from_millis(9_900)
    );
}

/// A burst, per-issue write or undocumented reason closes the endpoint it met, for its
/// `Retry-After`: another endpoint, and a request spending no endpoint, still go.
#[tokio::test(start_paused = true)]
async fn a_jira_burst_429_closes_that_endpoint_only_and_another_endpoint_still_goes() {
    for reason in [
        "jira-burst-based",
        "jira-per-issue-on-write",
        "jira-new-limit",
    ] {
        let (client, jira, clock) = door(start(), None, 1_000, 0).await;
        jira.answer(
            COMMENTS,
            429,
            &[("retry-after", "2"), ("ratelimit-reason", reason)],
        );
        let refused = client.send(get(COMMENTS, 1)).await;
        let Err(ApiError::RateLimited { until, bucket, .. }) = refused else {
            panic!("{reason}: {refused:?}");
        };
        assert_eq!(bucket.as_str(), format!("endpoint:{COMMENTS}"), "{reason}");
        assert_eq!(until, start() + SignedDuration::from_secs(2), "{reason}");

        client
            .send(get(CHANGELOG, 1))
            .await
            .expect("another endpoint goes");
        let myself = ApiRequest::get("/rest/api/3/myself").credential(Some(&token()));
        client.send(myself).await.expect("the identity is not held");
        let held = client.send(get(COMMENTS, 2)).await;
        assert!(
            matches!(&held, Err(ApiError::RateLimited { reason: RateLimitReason::Governor(WaitReason::SecondaryBlock { bucket, .. }), .. }) if *bucket == Bucket::new(&format!("endpoint:{COMMENTS}"))),
            "{reason}: {held:?}"
        );
        assert_eq!(jira.sent_to(COMMENTS), 1, "{reason}: held back unsent");
        clock.sleep(SignedDuration::from_secs(2)).await;
        client.send(get(COMMENTS, 2)).await.expect("open again");
    }
}

/// A quota reason holds every request of the identity until `X-RateLimit-Reset`, here written
/// without seconds, though `Retry-After` said less.
#[tokio::test(start_paused = true)]
async fn a_jira_quota_429_holds_everything_until_its_reset_without_seconds() {
    let (client, jira, clock) = door(start(), None, 1_000, 0).await;
    jira.answer(
        COMMENTS,
        429,
        &[
            ("retry-after", "5"),
            ("ratelimit-reason", "jira-quota-global-based"),
            ("x-ratelimit-reset", "2026-03-26T16:01Z"),
        ],
    );
    let reset: Timestamp = "2026-03-26T16:01:00Z".parse().expect("valid");
    let refused = client.send(get(COMMENTS, 1)).await;
    assert!(
        matches!(&refused, Err(ApiError::RateLimited { until, .. }) if *until == reset),
        "{refused:?}"
    );
    clock.sleep(SignedDuration::from_secs(10)).await;
    for request in [
        get(CHANGELOG, 1),
        get(COMMENTS, 2),
        ApiRequest::get("/rest/api/3/myself").credential(Some(&token())),
    ] {
        let held = client.send(request).await;
        assert!(
            matches!(&held, Err(ApiError::RateLimited { until, .. }) if *until == reset),
            "{held:?}"
        );
    }
    assert_eq!(
        jira.sent.lock().expect("lock").len(),
        1,
        "nothing more sent"
    );
    clock.sleep_until(reset).await;
    client
        .send(get(CHANGELOG, 1))
        .await
        .expect("after the reset");
}

/// A 403 is a permission refusal [jr-rl]: returned as such after one attempt, and it holds
/// nothing back — not its endpoint, not the identity.
#[tokio::test(start_paused = true)]
async fn a_jira_403_is_a_permission_refusal_never_retried_nor_a_limit() {
    let (client, jira, _clock) = door(start(), None, 1_000, 0).await;
    jira.answer(COMMENTS, 403, &[("retry-after", "30")]);
    let refused = client.send(get(COMMENTS, 1)).await;
    assert!(
        matches!(refused, Err(ApiError::Forbidden { status: 403, .. })),
        "{refused:?}"
    );
    assert_eq!(jira.sent_to(COMMENTS), 1, "never retried");
    client
        .send(get(COMMENTS, 2))
        .await
        .expect("no wait follows a 403");
}

/// The request's endpoint buckets are the ones the governor paces and closes alone.
#[test]
fn the_door_names_endpoint_buckets_as_the_governor_recognizes_them() {
    assert_eq!(
        headroom_http::ENDPOINT_PREFIX,
        headroom_core::governor::ENDPOINT_PREFIX
    );
    let request = get(COMMENTS, 1);
    let (bucket, _) = request.also_spends.first().expect("an endpoint bucket");
    assert!(headroom_core::governor::endpoint::is_endpoint(bucket));
}
