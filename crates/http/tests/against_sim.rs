//! The exit door against the in-process simulator, on tokio's paused clock: hours of quota
//! windows in milliseconds, deterministically. The simulator implements GitHub's rules on its
//! own (it shares only the clock with headroom), so agreement here is evidence, not an echo.

use std::sync::Arc;

use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::{GovernorConfig, Headroom};
use headroom_core::{Bucket, Governor, QuotaKey, RequestKind, Subject};
use headroom_http::sinks::{CredentialRegistry, MemoryCredentials, MemoryUsage};
use headroom_http::transport::SimTransport;
use headroom_http::{ApiError, ApiRequest, Client, ClientParts, Credential, UrlPolicy};
use headroom_sim::{ExternalSpend, Scenario, SimConfig, Simulator, TokenSpec};
use http::Method;

const API: &str = "http://127.0.0.1:7000";
const T1: &str = "ghp_simtokenone0000000000000000000001";
const T2: &str = "ghp_simtokentwo0000000000000000000002";

fn start() -> Timestamp {
    Timestamp::from_second(1_800_000_000).expect("valid")
}

fn base_config() -> SimConfig {
    let mut config = SimConfig::default()
        .with_token(TokenSpec::user(T1, "alice"))
        .with_token(TokenSpec::user(T2, "alice"))
        .with_seed(7);
    config.public_base_url = API.to_owned();
    config
}

struct Rig {
    sim: Simulator,
    client: Client,
    usage: Arc<MemoryUsage>,
    clock: TokioClock,
    credentials: Arc<MemoryCredentials>,
}

fn rig(config: SimConfig, governor: GovernorConfig) -> Rig {
    let clock = TokioClock::anchored_at(start());
    let sim = Simulator::new(config, clock).expect("valid simulator");
    let governor = Governor::in_memory(governor, Arc::new(clock)).expect("valid governor");
    let usage = Arc::new(MemoryUsage::default());
    let credentials = Arc::new(MemoryCredentials::default());
    let mut parts = ClientParts::new(
        UrlPolicy::for_api_url(API).expect("loopback API"),
        governor,
        Arc::new(SimTransport::new(sim.clone())),
        clock,
    );
    parts.usage = usage.clone();
    parts.credentials = credentials.clone();
    parts.config.jitter_seed = Some(11);
    Rig {
        sim,
        client: Client::new(parts),
        usage,
        clock,
        credentials,
    }
}

fn alice() -> QuotaKey {
    QuotaKey::user("127.0.0.1", "alice")
}

async fn known_alice(r: &Rig) {
    // Recorded as if discovered in an earlier run, so no discovery request is spent here.
    let subject = Subject::User("alice".into());
    for token in [T1, T2] {
        r.credentials
            .record("127.0.0.1", Credential::new(token).fingerprint(), &subject)
            .await;
    }
}

fn status_count(sim: &Simulator, status: u16) -> usize {
    sim.request_log()
        .iter()
        .filter(|e| e.status == status)
        .count()
}

/// 1. Twenty-five concurrent reads while remaining counts down from 15: no 403, grants stop
/// exactly where the rule keeps cost × (in flight + 1 + ceiling) in reserve, the rest wait.
#[tokio::test(start_paused = true)]
async fn twenty_five_concurrent_reads_never_meet_a_403() {
    let mut config = base_config();
    config.core_limit = 15;
    config.faults.latency = SignedDuration::from_millis(200);
    let r = rig(config, GovernorConfig::default());
    known_alice(&r).await;
    let t1 = Credential::new(T1);
    // One read makes the window known: 14 remain.
    r.client
        .send(ApiRequest::get("/user").credential(Some(&t1)))
        .await
        .expect("first read");
    let mut tasks = Vec::new();
    for _ in 0..25 {
        let client = r.client.clone();
        let t1 = t1.clone();
        tasks.push(tokio::spawn(async move {
            client
                .send(ApiRequest::get("/user").credential(Some(&t1)))
                .await
        }));
    }
    let mut granted = 0;
    let mut waited = Vec::new();
    for task in tasks {
        match task.await.expect("task") {
            Ok(_) => granted += 1,
            Err(ApiError::RateLimited { until, .. }) => waited.push(until),
            Err(other) => panic!("unexpected {other}"),
        }
    }
    // 14 ≥ 1 × (k + 1 + 10) holds for k = 0..=3 in flight: four grants, then the margin.
    assert_eq!(granted, 4);
    assert_eq!(waited.len(), 21);
    assert_eq!(status_count(&r.sim, 403), 0, "zero 403s");
    let snapshot = r
        .client
        .governor()
        .snapshot(&alice())
        .await
        .expect("snapshot");
    let core = snapshot
        .buckets
        .iter()
        .find(|b| b.state.bucket == Bucket::core())
        .expect("core");
    assert_eq!(
        core.state.remaining,
        Some(10),
        "the ceiling's worth is kept in reserve"
    );
    let reset = core.state.reset_at.expect("reset known");
    assert!(
        waited
            .iter()
            .all(|u| *u == reset + SignedDuration::from_secs(60)),
        "everyone waits for reset + margin"
    );
}

/// 2. Two tokens of one owner: one governor, and the second sees the first's request in flight.
#[tokio::test(start_paused = true)]
async fn two_tokens_of_one_owner_share_one_governor() {
    let mut config = base_config();
    config.faults.latency = SignedDuration::from_secs(1);
    let r = rig(config, GovernorConfig::default());
    let (t1, t2) = (Credential::new(T1), Credential::new(T2));
    let k1 = r
        .client
        .identity(Some(&t1))
        .await
        .expect("discovered by GET /user");
    let k2 = r
        .client
        .identity(Some(&t2))
        .await
        .expect("discovered by GET /user");
    assert_eq!(k1, k2);
    assert_eq!(k1, alice());
    assert_eq!(
        r.sim
            .request_log()
            .iter()
            .filter(|e| e.path.starts_with("/user"))
            .count(),
        2
    );

    let client = r.client.clone();
    let t1c = t1.clone();
    let first = tokio::spawn(async move {
        client
            .send(ApiRequest::get("/user").credential(Some(&t1c)))
            .await
    });
    r.clock.sleep(SignedDuration::from_millis(10)).await;
    let snapshot = r.client.governor().snapshot(&k2).await.expect("snapshot");
    assert_eq!(
        snapshot.in_flight, 1,
        "t2's identity sees t1's request in flight"
    );
    let client = r.client.clone();
    let second = tokio::spawn(async move {
        client
            .send(ApiRequest::get("/user").credential(Some(&t2)))
            .await
    });
    r.clock.sleep(SignedDuration::from_millis(10)).await;
    assert_eq!(
        r.client
            .governor()
            .snapshot(&k1)
            .await
            .expect("snapshot")
            .in_flight,
        2
    );
    first.await.expect("task").expect("ok");
    second.await.expect("task").expect("ok");
    assert_eq!(
        r.client
            .governor()
            .snapshot(&k1)
            .await
            .expect("snapshot")
            .in_flight,
        0
    );
    // Both tokens' requests were counted against alice's one quota by the simulator too.
    let used = r
        .sim
        .request_log()
        .iter()
        .filter(|e| e.identity == "alice")
        .count();
    assert_eq!(used, 4);
}

/// 3. Someone else spends alice's quota: the headers correct the governor, and no primary 403
/// follows (beyond what the ceiling may grant in the dark right after a reset).
#[tokio::test(start_paused = true)]
async fn external_spend_is_corrected_by_headers() {
    let mut config = base_config();
    config.core_limit = 300;
    let config = config.with_external_spend(ExternalSpend::parse("alice:4").expect("valid"));
    let r = rig(config, GovernorConfig::default());
    known_alice(&r).await;
    let t1 = Credential::new(T1);
    let end = start() + SignedDuration::from_hours(5);
    let mut ok = 0;
    let mut deferred = 0;
    let mut resets_seen = std::collections::BTreeSet::new();
    while r.clock.now() < end {
        match r
            .client
            .send(ApiRequest::get("/user").credential(Some(&t1)))
            .await
        {
            Ok(response) => {
                ok += 1;
                if let Some(reset) = response.signal.reset_at {
                    resets_seen.insert(reset);
                }
                r.clock.sleep(SignedDuration::from_secs(20)).await;
            }
            Err(ApiError::RateLimited { until, .. }) => {
                deferred += 1;
                r.clock.sleep_until(until).await;
            }
            Err(other) => panic!("unexpected {other}"),
        }
    }
    let primary_403s = status_count(&r.sim, 403);
    assert!(
        deferred >= 4,
        "the external spender exhausts every window: {deferred} deferrals"
    );
    assert!(ok > 100, "{ok} requests succeeded");
    assert!(resets_seen.len() >= 4, "several windows were crossed");
    // A request granted in the dark after each reset may meet a spent window; nothing else may.
    assert!(
        primary_403s <= resets_seen.len() * 10,
        "{primary_403s} primary 403s"
    );
    assert_eq!(
        primary_403s, 0,
        "with 4/min spent elsewhere, the first request after a reset still fits"
    );
}

/// 4a. A secondary limit with retry-after blocks the bucket for exactly that long.
#[tokio::test(start_paused = true)]
async fn secondary_limit_with_retry_after_blocks_for_it() {
    let r = rig(
        base_config().with_scenario(Scenario::SecondaryRateLimited),
        GovernorConfig::default(),
    );
    known_alice(&r).await;
    let t1 = Credential::new(T1);
    let err = r
        .client
        .send(ApiRequest::get("/user").credential(Some(&t1)))
        .await
        .expect_err("secondary");
    let ApiError::RateLimited { until, .. } = err else {
        panic!("{err}")
    };
    assert_eq!(until, start() + SignedDuration::from_secs(60));
    // Nothing is sent while blocked.
    let before = r.sim.request_log().len();
    assert!(
        r.client
            .send(ApiRequest::get("/user").credential(Some(&t1)))
            .await
            .is_err()
    );
    assert_eq!(r.sim.request_log().len(), before);
    r.clock.sleep_until(until).await;
    r.client
        .send(ApiRequest::get("/user").credential(Some(&t1)))
        .await
        .expect("lifted");
}

/// 4b. Without retry-after, the first wait is 60 s; a success resets the escalation.
#[tokio::test(start_paused = true)]
async fn secondary_limit_without_retry_after_escalates_from_sixty_seconds() {
    let r = rig(
        base_config().with_scenario(Scenario::SecondaryWithoutRetryAfter),
        GovernorConfig::default(),
    );
    known_alice(&r).await;
    let t1 = Credential::new(T1);
    let err = r
        .client
        .send(ApiRequest::get("/user").credential(Some(&t1)))
        .await
        .expect_err("secondary");
    let ApiError::RateLimited { until, .. } = err else {
        panic!("{err}")
    };
    assert_eq!(until, start() + SignedDuration::from_secs(60));
    r.clock.sleep_until(until).await;
    r.client
        .send(ApiRequest::get("/user").credential(Some(&t1)))
        .await
        .expect("lifted after 60 s");
    let snapshot = r
        .client
        .governor()
        .snapshot(&alice())
        .await
        .expect("snapshot");
    let core = snapshot
        .buckets
        .iter()
        .find(|b| b.state.bucket == Bucket::core())
        .expect("core");
    assert_eq!(
        core.state.secondary_strikes, 0,
        "a success resets the escalation"
    );
}

/// 5. A 5xx on a read is retried with jitter within the budget; a mutation is not retried.
#[tokio::test(start_paused = true)]
async fn server_errors_retry_reads_only() {
    let mut config = base_config();
    config.faults.error_rate = 1.0;
    let r = rig(config, GovernorConfig::default());
    known_alice(&r).await;
    let t1 = Credential::new(T1);
    let started = r.clock.now();
    let err = r
        .client
        .send(ApiRequest::get("/user").credential(Some(&t1)))
        .await
        .expect_err("always 5xx");
    assert!(matches!(err, ApiError::Server { attempts: 4, .. }), "{err}");
    assert!(r.clock.now().duration_since(started) <= SignedDuration::from_millis(1750));
    assert_eq!(r.sim.request_log().len(), 4);
    let create = ApiRequest::mutation(
        Method::POST,
        "/orgs/acme/repos",
        &serde_json::json!({"name": "new"}),
        true,
    )
    .credential(Some(&t1));
    let err = r.client.send(create).await.expect_err("5xx");
    assert!(matches!(err, ApiError::Server { attempts: 1, .. }), "{err}");
    assert_eq!(r.sim.request_log().len(), 5);
    assert_eq!(r.usage.records().len(), 5);
}

/// 6a. A hostile redirect is refused; its second hop never reaches any server.
#[tokio::test(start_paused = true)]
async fn hostile_redirect_is_refused() {
    let r = rig(
        base_config().with_scenario(Scenario::HostileRedirect),
        GovernorConfig::default(),
    );
    let (path, _) = redirecting_repository(&r).await;
    let err = r
        .client
        .send(ApiRequest::get(path.as_str()).follow_redirects())
        .await
        .expect_err("refused");
    assert!(matches!(err, ApiError::Refused(_)), "{err}");
    let log = r.sim.request_log();
    assert_eq!(log.last().map(|e| e.status), Some(301));
    assert!(
        !log.iter().any(|e| e.path.starts_with("/repositories/")),
        "the second hop was never sent"
    );
}

/// 6b. A renamed repository: one validated hop, two acquisitions.
#[tokio::test(start_paused = true)]
async fn renamed_repository_is_one_hop_two_acquisitions() {
    let r = rig(
        base_config().with_scenario(Scenario::RedirectingRepository),
        GovernorConfig::default(),
    );
    let (path, before) = redirecting_repository(&r).await;
    let response = r
        .client
        .send(ApiRequest::get(path.as_str()).follow_redirects())
        .await
        .expect("followed");
    assert_eq!(response.hops, 1);
    assert!(
        response.url.path().starts_with("/repositories/"),
        "{}",
        response.url
    );
    assert_eq!(
        r.usage.records().len() - before,
        2,
        "each hop acquired and recorded separately"
    );
}

/// Finds the repository whose detail URL redirects, the way a client would: from the feed.
async fn redirecting_repository(r: &Rig) -> (String, usize) {
    let feed = r
        .client
        .send(ApiRequest::get("/events"))
        .await
        .expect("feed");
    let events: Vec<serde_json::Value> = feed.json().expect("json");
    for event in events {
        let Some(url) = event.pointer("/repo/url").and_then(|u| u.as_str()) else {
            continue;
        };
        let Ok(parsed) = url::Url::parse(url) else {
            continue;
        };
        let path = parsed.path().to_owned();
        match r.client.send(ApiRequest::get(path.as_str())).await {
            Err(ApiError::Redirect { status: 301, .. }) => return (path, r.usage.records().len()),
            _ => continue,
        }
    }
    panic!("the scenario serves a repository whose detail URL redirects");
}

/// The governor closes one bucket without touching another, against real headers.
#[tokio::test(start_paused = true)]
async fn headroom_reflects_what_the_simulator_says() {
    let mut config = base_config();
    config.core_limit = 11;
    let r = rig(config, GovernorConfig::default());
    known_alice(&r).await;
    let t1 = Credential::new(T1);
    r.client
        .send(ApiRequest::get("/user").credential(Some(&t1)))
        .await
        .expect("ok");
    // 10 left < 1 × (0 in flight + 1 + ceiling 10): core is closed until reset + margin…
    let core = r
        .client
        .governor()
        .headroom(&alice(), &Bucket::core(), 1, RequestKind::REST_READ)
        .await
        .expect("ok");
    assert!(matches!(core, Headroom::Closed(_)), "{core:?}");
    // …while GraphQL, another bucket, is untouched.
    let graphql = r
        .client
        .governor()
        .headroom(&alice(), &Bucket::graphql(), 1, RequestKind::GRAPHQL_QUERY)
        .await
        .expect("ok");
    assert!(graphql.is_open());
    let query = ApiRequest::graphql(
        "{ viewer { login } rateLimit { cost remaining resetAt } }",
        &serde_json::Value::Null,
    )
    .expect("valid")
    .credential(Some(&t1));
    let response = r.client.send(query).await.expect("graphql still flows");
    assert_eq!(response.actual_cost(), Some(1));
}
