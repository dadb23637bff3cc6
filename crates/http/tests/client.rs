//! The exit door against a scripted transport: each test states the responses the provider
//! gives and checks what the client sent and returned. Time is tokio's paused clock.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use headroom_core::clock::{SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::{BoxFuture, GovernorConfig};
use headroom_core::{Bucket, Governor, QuotaKey};
use headroom_http::sinks::{
    MemoryQuotaReadings, MemoryRateLimitLog, MemoryUsage, RateLimitEventKind,
};
use headroom_http::{
    ApiError, ApiRequest, Client, ClientParts, Credential, Transport, TransportError, UrlPolicy,
};
use http::Method;

const START: i64 = 1_800_000_000;

#[derive(Debug, Clone)]
struct Sent {
    method: Method,
    uri: String,
    authorization: Option<String>,
    if_none_match: Option<String>,
}

type Scripted = Result<http::Response<Bytes>, TransportError>;

#[derive(Debug, Default)]
struct Script {
    replies: Mutex<VecDeque<Scripted>>,
    sent: Mutex<Vec<Sent>>,
}

impl Script {
    fn sent(&self) -> Vec<Sent> {
        self.sent.lock().expect("lock").clone()
    }
}

impl Transport for Script {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, TransportError>> {
        let header = |name: &str| {
            request
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        self.sent.lock().expect("lock").push(Sent {
            method: request.method().clone(),
            uri: request.uri().to_string(),
            authorization: header("authorization"),
            if_none_match: header("if-none-match"),
        });
        let reply = self
            .replies
            .lock()
            .expect("lock")
            .pop_front()
            .unwrap_or_else(|| Err(TransportError::Other("script exhausted".into())));
        Box::pin(std::future::ready(reply))
    }
}

fn reply(status: u16, headers: &[(&str, &str)], body: &str) -> Scripted {
    let mut builder = http::Response::builder().status(status);
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    Ok(builder
        .body(Bytes::from(body.to_owned()))
        .expect("valid response"))
}

fn ok_json(body: &str) -> Scripted {
    reply(
        200,
        &[
            ("x-ratelimit-remaining", "4999"),
            ("x-ratelimit-limit", "5000"),
            ("x-ratelimit-reset", "1800003600"),
            ("x-ratelimit-resource", "core"),
        ],
        body,
    )
}

struct Rig {
    client: Client,
    script: Arc<Script>,
    usage: Arc<MemoryUsage>,
    rate_limits: Arc<MemoryRateLimitLog>,
    readings: Arc<MemoryQuotaReadings>,
}

fn rig(replies: Vec<Scripted>) -> Rig {
    let clock = TokioClock::anchored_at(Timestamp::from_second(START).expect("valid"));
    let governor = Governor::in_memory(GovernorConfig::default(), Arc::new(clock)).expect("valid");
    let script = Arc::new(Script {
        replies: Mutex::new(replies.into()),
        sent: Mutex::default(),
    });
    let usage = Arc::new(MemoryUsage::default());
    let policy = UrlPolicy::for_api_url("https://api.github.com")
        .expect("valid")
        .with_download_hosts(&["objects.githubusercontent.com"]);
    let mut parts = ClientParts::new(policy, governor, script.clone(), clock);
    parts.usage = usage.clone();
    let rate_limits = Arc::new(MemoryRateLimitLog::default());
    parts.rate_limits = rate_limits.clone();
    let readings = Arc::new(MemoryQuotaReadings::default());
    parts.readings = readings.clone();
    parts.config.jitter_seed = Some(7);
    Rig {
        client: Client::new(parts),
        script,
        usage,
        rate_limits,
        readings,
    }
}

fn token() -> Credential {
    Credential::new("ghp_0123456789abcdefghijklmnopqrstuvwxyz")
}

fn user(login: &str) -> Scripted {
    ok_json(&format!(r#"{{"login":"{login}","id":1}}"#))
}

#[tokio::test(start_paused = true)]
async fn a_failing_read_is_retried_with_jitter_then_succeeds() {
    let r = rig(vec![
        reply(502, &[], "bad gateway"),
        Err(TransportError::Timeout),
        reply(503, &[], ""),
        ok_json(r#"{"full_name":"o/r"}"#),
    ]);
    let clock = TokioClock::anchored_at(Timestamp::from_second(START).expect("valid"));
    let started = clock_now(&clock);
    let response = r
        .client
        .send(ApiRequest::get("/repos/o/r"))
        .await
        .expect("fourth attempt succeeds");
    assert_eq!(response.attempts, 4);
    // Three full-jitter waits: at most 250 + 500 + 1000 ms.
    let elapsed = clock_now(&clock).duration_since(started);
    assert!(elapsed <= SignedDuration::from_millis(1750), "{elapsed:?}");
    assert_eq!(r.script.sent().len(), 4);
    assert_eq!(
        r.usage.records().len(),
        4,
        "one usage record per physical round trip"
    );
}

#[tokio::test(start_paused = true)]
async fn reads_give_up_after_four_attempts_and_mutations_after_one() {
    let r = rig((0..6).map(|_| reply(500, &[], "")).collect());
    let err = r
        .client
        .send(ApiRequest::get("/repos/o/r"))
        .await
        .expect_err("always 500");
    assert_eq!(
        err,
        ApiError::Server {
            status: 500,
            attempts: 4
        }
    );

    let r = rig(vec![reply(503, &[], ""), ok_json("{}")]);
    let create = ApiRequest::mutation(
        Method::POST,
        "/orgs/acme/repos",
        &serde_json::json!({"name":"x"}),
        true,
    );
    let err = r
        .client
        .send(create)
        .await
        .expect_err("mutation fails on the first 503");
    assert_eq!(
        err,
        ApiError::Server {
            status: 503,
            attempts: 1
        }
    );
    assert_eq!(r.script.sent().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_hostile_redirect_is_refused_and_never_sent() {
    let r = rig(vec![reply(
        301,
        &[("location", "https://evil.example/steal")],
        r#"{"message":"Moved Permanently"}"#,
    )]);
    let err = r
        .client
        .send(ApiRequest::get("/repos/o/r").follow_redirects())
        .await
        .expect_err("refused");
    assert!(matches!(err, ApiError::Refused(_)), "{err}");
    assert_eq!(r.script.sent().len(), 1, "the second hop was never sent");
}

#[tokio::test(start_paused = true)]
async fn a_renamed_repository_is_one_validated_hop_and_two_acquisitions() {
    let r = rig(vec![
        reply(
            301,
            &[("location", "https://api.github.com/repositories/42")],
            r#"{"message":"Moved Permanently","url":"https://api.github.com/repositories/42"}"#,
        ),
        ok_json(r#"{"id":42,"full_name":"o/new-name"}"#),
    ]);
    let response = r
        .client
        .send(ApiRequest::get("/repos/o/old-name").follow_redirects())
        .await
        .expect("followed");
    assert_eq!(response.hops, 1);
    assert_eq!(
        response.url.as_str(),
        "https://api.github.com/repositories/42"
    );
    assert_eq!(r.usage.records().len(), 2);
    let sent = r.script.sent();
    assert_eq!(sent[0].uri, "https://api.github.com/repos/o/old-name");
    assert_eq!(sent[1].uri, "https://api.github.com/repositories/42");
    assert!(sent.iter().all(|s| s.method == Method::GET));

    // Without opting in, a redirect is an error, not a silent follow.
    let r = rig(vec![reply(
        301,
        &[("location", "https://api.github.com/repositories/42")],
        "",
    )]);
    let err = r
        .client
        .send(ApiRequest::get("/repos/o/old-name"))
        .await
        .expect_err("not followed");
    assert!(matches!(err, ApiError::Redirect { status: 301, .. }));

    // Hops are bounded.
    let loop_reply = || reply(302, &[("location", "/repos/o/r")], "");
    let r = rig(vec![loop_reply(), loop_reply(), loop_reply(), loop_reply()]);
    let err = r
        .client
        .send(ApiRequest::get("/repos/o/r").follow_redirects())
        .await
        .expect_err("loop");
    assert_eq!(err, ApiError::TooManyRedirects { hops: 2 });
    assert_eq!(r.script.sent().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_presigned_download_is_fetched_without_the_authorization_header() {
    let r = rig(vec![
        user("alice"),
        reply(
            302,
            &[(
                "location",
                "https://objects.githubusercontent.com/blob?sig=abc",
            )],
            "",
        ),
        reply(200, &[], "zipbytes"),
    ]);
    let response = r
        .client
        .send(
            ApiRequest::get("/repos/o/r/actions/artifacts/1/zip")
                .credential(Some(&token()))
                .follow_redirects(),
        )
        .await
        .expect("downloaded");
    assert_eq!(&response.body[..], b"zipbytes");
    let sent = r.script.sent();
    assert_eq!(sent.len(), 3);
    assert!(sent[1].authorization.is_some());
    assert_eq!(
        sent[2].authorization, None,
        "no credential to the download host"
    );
}

#[tokio::test(start_paused = true)]
async fn a_primary_limit_defers_and_nothing_more_is_sent_until_the_reset() {
    let reset = (START + 1800).to_string();
    let r = rig(vec![reply(
        403,
        &[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-limit", "60"),
            ("x-ratelimit-reset", reset.as_str()),
            ("x-ratelimit-resource", "core"),
        ],
        r#"{"message":"API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit.)"}"#,
    )]);
    let err = r
        .client
        .send(ApiRequest::get("/events"))
        .await
        .expect_err("limited");
    let ApiError::RateLimited { until, bucket, .. } = err else {
        panic!("{err}")
    };
    assert_eq!(bucket, Bucket::core());
    assert_eq!(
        until,
        Timestamp::from_second(START + 1800 + 60).expect("valid"),
        "reset plus margin"
    );
    // The next call is refused by the governor without touching the network.
    let err = r
        .client
        .send(ApiRequest::get("/events"))
        .await
        .expect_err("still limited");
    assert!(matches!(err, ApiError::RateLimited { .. }));
    assert_eq!(r.script.sent().len(), 1);
    // Both are kept as rate-limit events: the refusal with the origin's reading, then the
    // governor's deferral, each with its reason and the reset.
    let events = r.rate_limits.events();
    assert_eq!(
        events.iter().map(|e| e.kind).collect::<Vec<_>>(),
        [RateLimitEventKind::Refused, RateLimitEventKind::Deferred]
    );
    assert_eq!((events[0].limit, events[0].remaining), (Some(60), Some(0)));
    let reset = Timestamp::from_second(START + 1800).expect("valid");
    assert_eq!(events[0].reset_at, Some(reset));
    assert_eq!(events[1].reset_at, Some(reset));
    assert!(
        events[1].reason.wait_reason().is_some(),
        "{:?}",
        events[1].reason
    );
    assert!(
        events
            .iter()
            .all(|e| e.bucket == Bucket::core() && e.route_family == "rest")
    );
}

#[tokio::test(start_paused = true)]
async fn secondary_limits_and_permission_errors_are_told_apart() {
    let r = rig(vec![reply(
        403,
        &[("retry-after", "30")],
        r#"{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}"#,
    )]);
    let err = r
        .client
        .send(ApiRequest::get("/repos/o/r"))
        .await
        .expect_err("secondary");
    let ApiError::RateLimited { until, .. } = err else {
        panic!("{err}")
    };
    assert_eq!(until, Timestamp::from_second(START + 30).expect("valid"));
    let events = r.rate_limits.events();
    assert_eq!(events.len(), 1);
    assert!(events[0].reason.is_secondary(), "{:?}", events[0].reason);
    assert_eq!(events[0].retry_after, Some(SignedDuration::from_secs(30)));

    let r = rig(vec![reply(
        403,
        &[("x-ratelimit-remaining", "4000")],
        r#"{"message":"Resource protected by organization SAML enforcement."}"#,
    )]);
    let err = r
        .client
        .send(ApiRequest::get("/orgs/acme/repos"))
        .await
        .expect_err("forbidden");
    assert!(
        matches!(err, ApiError::Forbidden { status: 403, .. }),
        "{err}"
    );
    assert_eq!(
        r.script.sent().len(),
        1,
        "permission errors are never retried"
    );
    assert!(
        r.rate_limits.events().is_empty(),
        "a permission error is not a rate limit"
    );
}

#[tokio::test(start_paused = true)]
async fn conditional_requests_send_the_etag_the_caller_remembered() {
    let r = rig(vec![
        reply(200, &[("etag", "W/\"abc\"")], "[]"),
        reply(200, &[("etag", "W/\"abc\"")], "[]"),
        reply(304, &[("etag", "W/\"abc\"")], ""),
    ]);
    let request = || ApiRequest::get("/events").conditional();
    let first = r.client.send(request()).await.expect("200");
    assert!(!first.not_modified());
    // Not remembered yet (the caller has not stored the body): the next request is
    // unconditional, so a body lost before its commit is offered again.
    let second = r.client.send(request()).await.expect("200");
    r.client.remember_etag(&request(), &second).await;
    let third = r.client.send(request()).await.expect("304");
    assert!(third.not_modified());
    let sent = r.script.sent();
    assert_eq!(sent[0].if_none_match, None);
    assert_eq!(sent[1].if_none_match, None);
    assert_eq!(sent[2].if_none_match.as_deref(), Some("W/\"abc\""));
}

#[tokio::test(start_paused = true)]
async fn graphql_rate_limited_with_200_is_a_rate_limit() {
    let r = rig(vec![reply(
        200,
        &[
            ("x-ratelimit-reset", "1800003600"),
            ("x-ratelimit-resource", "graphql"),
        ],
        r#"{"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded for user ID 1."}]}"#,
    )]);
    let request =
        ApiRequest::graphql("{ viewer { login } }", &serde_json::Value::Null).expect("valid");
    let err = r.client.send(request).await.expect_err("limited");
    assert!(
        matches!(err, ApiError::RateLimited { ref bucket, .. } if bucket.as_str() == "graphql"),
        "{err}"
    );
}

#[tokio::test(start_paused = true)]
async fn two_tokens_of_one_owner_share_one_identity() {
    let r = rig(vec![user("alice"), user("alice"), ok_json("{}")]);
    let t1 = Credential::new("ghp_firsttokenfirsttokenfirsttoken01");
    let t2 = Credential::new("github_pat_secondtoken_secondtoken_0002");
    let k1 = r.client.identity(Some(&t1)).await.expect("discovered");
    let k2 = r.client.identity(Some(&t2)).await.expect("discovered");
    assert_eq!(k1, k2);
    assert_eq!(k1, QuotaKey::user("api.github.com", "alice"));
    // Discovery happens once per credential.
    r.client
        .send(ApiRequest::get("/rate_limit").credential(Some(&t1)))
        .await
        .expect("ok");
    assert_eq!(r.script.sent().len(), 3);
    let sharing = r
        .client
        .credentials()
        .sharing("api.github.com", &k1.subject)
        .await;
    assert_eq!(sharing.len(), 2);
    let anon = r.client.identity(None).await.expect("ip key");
    assert_ne!(anon, k1);
}

#[tokio::test(start_paused = true)]
async fn planted_tokens_never_appear_in_errors() {
    let secret = "ghp_PLANTEDplantedPLANTEDplanted0123";
    let r = rig(vec![
        Err(TransportError::Connect(format!(
            "refused while sending Authorization: Bearer {secret} to https://x:{secret}@api.github.com"
        ))),
        reply(
            422,
            &[],
            &format!(
                r#"{{"message":"Validation failed for token={secret} github_pat_11AAAA_{secret}"}}"#
            ),
        ),
    ]);
    let mutation = ApiRequest::mutation(Method::POST, "/user/repos", &serde_json::json!({}), true)
        .credential(None);
    let err = r
        .client
        .send(mutation.clone())
        .await
        .expect_err("connect fails");
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains("PLANTED"), "{shown}");
    let err = r.client.send(mutation).await.expect_err("422");
    let shown = format!("{err} {err:?}");
    assert!(matches!(err, ApiError::Status { status: 422, .. }));
    assert!(!shown.contains("PLANTED"), "{shown}");
}

#[tokio::test(start_paused = true)]
async fn the_url_policy_runs_before_anything_is_sent() {
    let r = rig(vec![ok_json("{}")]);
    for hostile in [
        "https://evil.example/x",
        "http://api.github.com/x",
        "https://169.254.169.254/latest",
    ] {
        let err = r
            .client
            .send(ApiRequest::get(hostile))
            .await
            .expect_err(hostile);
        assert!(matches!(err, ApiError::Refused(_)), "{hostile}: {err}");
    }
    assert!(r.script.sent().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_timeout_is_enforced_on_the_clock() {
    #[derive(Debug)]
    struct Hang;
    impl Transport for Hang {
        fn send(
            &self,
            _: http::Request<Bytes>,
        ) -> BoxFuture<'_, Result<http::Response<Bytes>, TransportError>> {
            Box::pin(async {
                TokioClock::system()
                    .sleep(SignedDuration::from_hours(1))
                    .await;
                Err(TransportError::Other("unreachable".into()))
            })
        }
    }
    let clock = TokioClock::anchored_at(Timestamp::from_second(START).expect("valid"));
    let governor = Governor::in_memory(GovernorConfig::default(), Arc::new(clock)).expect("valid");
    let mut parts = ClientParts::new(
        UrlPolicy::for_api_url("https://api.github.com").expect("valid"),
        governor,
        Arc::new(Hang),
        clock,
    );
    parts.config.request_timeout = SignedDuration::from_secs(20);
    let client = Client::new(parts);
    let started = clock_now(&clock);
    let err = client
        .send(ApiRequest::get("/repos/o/r"))
        .await
        .expect_err("times out");
    assert_eq!(err, ApiError::Timeout { attempts: 4 });
    assert!(clock_now(&clock).duration_since(started) >= SignedDuration::from_secs(80));
}

#[tokio::test(start_paused = true)]
async fn secondary_limits_without_retry_after_escalate_and_a_success_resets() {
    let secondary = || {
        reply(
            403,
            &[],
            r#"{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}"#,
        )
    };
    let r = rig(vec![
        secondary(),
        secondary(),
        secondary(),
        ok_json("{}"),
        secondary(),
    ]);
    let clock = TokioClock::anchored_at(Timestamp::from_second(START).expect("valid"));
    let mut waits = Vec::new();
    for _ in 0..3 {
        let err = r
            .client
            .send(ApiRequest::get("/repos/o/r"))
            .await
            .expect_err("secondary");
        let ApiError::RateLimited { until, .. } = err else {
            panic!("{err}")
        };
        waits.push(until.duration_since(clock_now(&clock)).as_secs());
        clock.sleep_until(until).await;
    }
    assert_eq!(waits, vec![60, 120, 240]);
    r.client
        .send(ApiRequest::get("/repos/o/r"))
        .await
        .expect("success");
    let err = r
        .client
        .send(ApiRequest::get("/repos/o/r"))
        .await
        .expect_err("secondary again");
    let ApiError::RateLimited { until, .. } = err else {
        panic!("{err}")
    };
    assert_eq!(
        until.duration_since(clock_now(&clock)).as_secs(),
        60,
        "the success reset the escalation"
    );
}

fn clock_now(clock: &TokioClock) -> Timestamp {
    use headroom_core::clock::Clock;
    clock.now()
}

/// The governor's reading is handed over after a response, at most once a second per
/// identity: three answers in one instant give one reading, the next second another, each
/// with what the origin said remained.
#[tokio::test(start_paused = true)]
async fn readings_are_reported_at_most_once_a_second() {
    let remaining = |n: &str| {
        reply(
            200,
            &[
                ("x-ratelimit-remaining", n),
                ("x-ratelimit-limit", "5000"),
                ("x-ratelimit-reset", "1800003600"),
                ("x-ratelimit-resource", "core"),
            ],
            "{}",
        )
    };
    let r = rig(vec![
        remaining("4999"),
        remaining("4998"),
        remaining("4997"),
        remaining("4996"),
    ]);
    for _ in 0..3 {
        r.client.send(ApiRequest::get("/events")).await.expect("ok");
    }
    assert_eq!(r.readings.readings().len(), 1);
    tokio::time::advance(std::time::Duration::from_secs(2)).await;
    r.client.send(ApiRequest::get("/events")).await.expect("ok");
    let readings = r.readings.readings();
    assert_eq!(readings.len(), 2);
    let core = |i: usize| {
        readings[i]
            .0
            .buckets
            .iter()
            .find(|b| b.state.bucket == Bucket::core())
            .and_then(|b| b.state.remaining)
    };
    assert_eq!((core(0), core(1)), (Some(4999), Some(4996)));
    assert!(readings[1].1.duration_since(readings[0].1) >= SignedDuration::from_secs(1));
}
