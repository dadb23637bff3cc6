//! `Client::send`: the only way any part of headroom reaches a provider.
//!
//! In order: the URL policy, the quota identity, the governor, the transport, the reading fed
//! back to the governor, one usage record per round trip, classification, and retries for
//! reads only (each retry acquiring again). A refusal by the governor returns
//! [`ApiError::RateLimited`] without sending anything.

use std::fmt;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::{Acquire, Governor, Headroom, Permit, endpoint};
use headroom_core::retry::{Failure, RetryPolicy, is_retryable};
use headroom_core::signal::{self, LimitReason, Provider, RateLimitSignal, WaitBounds};
use headroom_core::telemetry;
use headroom_core::{Bucket, QuotaKey, RequestKind, Subject, Surface};
use http::header::{ETAG, IF_NONE_MATCH, LOCATION, USER_AGENT};
use http::{HeaderValue, StatusCode};
use rand::SeedableRng;
use rand::rngs::StdRng;
use url::Url;

use crate::credential::Credential;
use crate::error::{ApiError, RateLimitReason, provider_message};
use crate::policy::UrlPolicy;
use crate::request::{ApiRequest, ApiResponse};
use crate::sinks::{
    CredentialRegistry, EtagStore, MemoryCredentials, MemoryEtags, MemoryQuotaReadings,
    MemoryRateLimitLog, MemoryUsage, NoRefusals, QuotaReadings, RateLimitEventKind, RateLimitLog,
    ReadingThrottle, RefusalSource, UsageRecord, UsageSink,
};
use crate::transport::{Transport, TransportError};

mod cooldown;
mod dialect;
mod identity;
mod report;
mod whoami;

/// Settings of the exit door. Defaults are GitHub's.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Whose dialect the responses speak.
    pub provider: Provider,
    /// Retries for reads.
    pub retry: RetryPolicy,
    /// Bounds on server-provided waits.
    pub bounds: WaitBounds,
    /// Redirect hops followed when a call opts in.
    pub max_redirects: u32,
    /// The longest a round trip may take, connect and read together.
    pub request_timeout: SignedDuration,
    /// Sent as User-Agent.
    pub user_agent: String,
    /// Sent as `X-GitHub-Api-Version`.
    pub api_version: Option<String>,
    /// The quota subject for unauthenticated requests (the outbound IP).
    pub unauthenticated_subject: String,
    /// Seed for retry jitter (tests pin it; `None` seeds from the clock).
    pub jitter_seed: Option<u64>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            provider: Provider::GitHub,
            retry: RetryPolicy::default(),
            bounds: WaitBounds::default(),
            max_redirects: 2,
            request_timeout: SignedDuration::from_secs(20),
            user_agent: format!("headroom/{}", env!("CARGO_PKG_VERSION")),
            api_version: Some("2022-11-28".into()),
            unauthenticated_subject: "outbound".into(),
            jitter_seed: None,
        }
    }
}

/// The pieces a client is made of.
#[derive(Debug)]
pub struct ClientParts {
    /// The URL policy (which also names the API host).
    pub policy: UrlPolicy,
    /// The governor.
    pub governor: Governor,
    /// The transport.
    pub transport: Arc<dyn Transport>,
    /// The clock (tokio-derived, so retries sleep on paused time in tests).
    pub clock: TokioClock,
    /// ETags.
    pub etags: Arc<dyn EtagStore>,
    /// Usage records.
    pub usage: Arc<dyn UsageSink>,
    /// Credential owners.
    pub credentials: Arc<dyn CredentialRegistry>,
    /// Rate-limit events: every deferral and every rate-limited refusal.
    pub rate_limits: Arc<dyn RateLimitLog>,
    /// The governor's readings of the identities this door spends, at most once a second.
    pub readings: Arc<dyn QuotaReadings>,
    /// The refusals every process recorded, read back for cooldown gating.
    pub refusals: Arc<dyn RefusalSource>,
    /// Settings.
    pub config: ClientConfig,
}

impl ClientParts {
    /// Parts with in-memory sinks.
    pub fn new(
        policy: UrlPolicy,
        governor: Governor,
        transport: Arc<dyn Transport>,
        clock: TokioClock,
    ) -> Self {
        Self {
            policy,
            governor,
            transport,
            clock,
            etags: Arc::new(MemoryEtags::default()),
            usage: Arc::new(MemoryUsage::default()),
            credentials: Arc::new(MemoryCredentials::default()),
            rate_limits: Arc::new(MemoryRateLimitLog::default()),
            readings: Arc::new(MemoryQuotaReadings::default()),
            refusals: Arc::new(NoRefusals),
            config: ClientConfig::default(),
        }
    }
}

/// The exit door. Cheap to clone.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    parts: ClientParts,
    rng: Mutex<StdRng>,
    throttle: Mutex<ReadingThrottle>,
    /// What was reported under provisional keys, held back until their owners are known.
    held: Mutex<report::Held>,
    cooldowns: cooldown::CooldownGate,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("api", &self.inner.parts.policy.base().as_str())
            .finish_non_exhaustive()
    }
}

/// How one round trip ended, before classification.
enum Trip {
    Answered(http::Response<Bytes>, Box<RateLimitSignal>),
    Failed(TransportError),
}

/// Where the exit door's loop stands for one request: the URL (a redirect changes it), whether
/// credentials still go with it, redirect hops followed, and attempts at the current URL.
struct Attempt {
    url: Url,
    with_credential: bool,
    hops: u32,
    attempts: u32,
}

impl Attempt {
    /// The caller's response to an answer at the current URL.
    fn finish(&self, response: http::Response<Bytes>, signal: RateLimitSignal) -> ApiResponse {
        finish(response, self.url.clone(), signal, self.attempts, self.hops)
    }
}

/// What to do after an answer or a failed round trip.
enum Next {
    /// Hand this response to the caller.
    Done(Box<ApiResponse>),
    /// Back off, then acquire and send again.
    Retry,
    /// Wait what the provider announced (within the in-place cap), then acquire and send again.
    RetryAfter(SignedDuration),
    /// A redirect was accepted: acquire and send to the new URL at once.
    Follow,
}

impl Client {
    /// Assembles a client.
    pub fn new(parts: ClientParts) -> Self {
        let seed = parts.config.jitter_seed.unwrap_or_else(|| {
            u64::try_from(parts.clock.now().as_nanosecond() & i128::from(u64::MAX)).unwrap_or(0)
        });
        Self {
            inner: Arc::new(Inner {
                parts,
                rng: Mutex::new(StdRng::seed_from_u64(seed)),
                throttle: Mutex::new(ReadingThrottle::default()),
                held: Mutex::new(report::Held::default()),
                cooldowns: cooldown::CooldownGate::default(),
            }),
        }
    }

    fn parts(&self) -> &ClientParts {
        &self.inner.parts
    }

    /// The provider this door speaks to.
    pub fn provider(&self) -> Provider {
        self.parts().config.provider
    }

    /// The URL policy.
    pub fn policy(&self) -> &UrlPolicy {
        &self.parts().policy
    }

    /// The governor.
    pub fn governor(&self) -> &Governor {
        &self.parts().governor
    }

    /// Sleeps until `until` on the client's clock (paused time in tests): for a caller that
    /// takes a short governor wait in place rather than deferring.
    pub async fn sleep_until(&self, until: Timestamp) {
        self.parts().clock.sleep_until(until).await;
    }

    /// The credential registry.
    pub fn credentials(&self) -> &Arc<dyn CredentialRegistry> {
        &self.parts().credentials
    }

    /// Remembers the ETag `response` carried, so that the next conditional `request` for
    /// the same URL and credential sends it. Call it only once what the response carried is
    /// durably stored: the next request may then come back 304, and a body lost between the
    /// response and its commit (a crash, a failed write) would never be offered again.
    pub async fn remember_etag(&self, request: &ApiRequest, response: &ApiResponse) {
        if !request.conditional || !response.status.is_success() {
            return;
        }
        if let Some(tag) = response.headers.get(ETAG).and_then(|v| v.to_str().ok()) {
            self.inner
                .parts
                .etags
                .put(etag_owner(request), response.url.as_str(), tag)
                .await;
        }
    }

    /// Sends one request through every step of the exit door.
    pub async fn send(&self, request: ApiRequest) -> Result<ApiResponse, ApiError> {
        let key = self.identity(request.credential.as_ref()).await?;
        self.send_as(&key, request).await
    }

    async fn send_as(&self, key: &QuotaKey, request: ApiRequest) -> Result<ApiResponse, ApiError> {
        let mut attempt = Attempt {
            url: self.parts().policy.resolve(&request.target)?,
            with_credential: request.credential.is_some(),
            hops: 0,
            attempts: 0,
        };
        loop {
            // A unit of work is gated once, before its first attempt: its retries follow the
            // waits this door itself decided.
            if attempt.attempts == 0 {
                self.cooled_down(key, &request).await?;
            }
            let permit = self.acquire(key, &request).await?;
            attempt.attempts += 1;
            let trip = self.round_trip(&request, &attempt, &permit).await?;
            self.record_usage(key, &request, &trip).await;
            // Freed before the answer goes back: whatever the caller decides next counts
            // this request as finished.
            permit.release().await;
            let next = match trip {
                Trip::Failed(e) => self.classify_failure(&request, e, attempt.attempts)?,
                Trip::Answered(response, signal) => {
                    self.classify(key, &request, &mut attempt, response, *signal)
                        .await?
                }
            };
            match next {
                Next::Done(response) => return Ok(*response),
                Next::Retry => self.back_off(attempt.attempts).await,
                Next::RetryAfter(wait) => self.parts().clock.sleep(wait).await,
                Next::Follow => {}
            }
        }
    }

    /// The governor's verdict: a permit, or [`ApiError::RateLimited`] with nothing sent. A
    /// request over several buckets is granted by all of them or by none; its refusal names
    /// the bucket that waits longest.
    async fn acquire(&self, key: &QuotaKey, request: &ApiRequest) -> Result<Permit, ApiError> {
        let governor = &self.parts().governor;
        // An OAuth app's requests spend its hourly points too (Jira's apps [jr-rl]): the app
        // is the identity, so its bucket is asked here, whatever the caller named.
        let app_points = (key.provider == Provider::Jira && matches!(key.subject, Subject::App(_)))
            .then(|| (Bucket::new(signal::JIRA_APP_POINTS), request.app_points));
        let (acquired, bucket) = if request.also_spends.is_empty() && app_points.is_none() {
            let acquired = governor
                .acquire(key, &request.bucket, request.estimated_cost, request.kind)
                .await?;
            (acquired, None)
        } else {
            let mut asks = vec![(request.bucket.clone(), request.estimated_cost)];
            asks.extend(request.also_spends.iter().cloned());
            asks.extend(app_points);
            let acquired = governor.acquire_all(key, &asks, request.kind).await?;

            let bucket = match &acquired {
                Acquire::Wait(wait) => wait.reason.bucket().cloned(),
                Acquire::Grant(_) => None,
            };
            (acquired, bucket)
        };
        let bucket = bucket.unwrap_or_else(|| request.bucket.clone());
        match acquired {
            Acquire::Grant(permit) => Ok(permit),
            Acquire::Wait(wait) => {
                tracing::info!(
                    event = telemetry::QUOTA_DENIED,
                    identity = %key,
                    bucket = %bucket,
                    until = %wait.until,
                    reason = %wait.reason,
                    "The governor deferred a request."
                );
                let error = ApiError::RateLimited {
                    until: wait.until,
                    bucket,
                    dimension: request.dimension,
                    request_id: None,
                    reason: RateLimitReason::Governor(wait.reason),
                };
                self.log_rate_limit(key, request, RateLimitEventKind::Deferred, &error, None)
                    .await;
                Err(error)
            }
        }
    }

    /// Sends the request once (with the remembered ETag when conditional) and, when an
    /// answer came, feeds its reading to the governor.
    async fn round_trip(
        &self,
        request: &ApiRequest,
        attempt: &Attempt,
        permit: &Permit,
    ) -> Result<Trip, ApiError> {
        let parts = self.parts();
        let etag = if request.conditional && request.method == http::Method::GET {
            parts
                .etags
                .get(etag_owner(request), attempt.url.as_str())
                .await
        } else {
            None
        };
        let wire = self.wire_request(
            request,
            &attempt.url,
            attempt.with_credential,
            etag.as_deref(),
        )?;
        let sent = parts
            .clock
            .timeout(parts.config.request_timeout, parts.transport.send(wire))
            .await;
        Ok(match sent {
            None => Trip::Failed(TransportError::Timeout),
            Some(Err(e)) => Trip::Failed(e),
            Some(Ok(response)) => {
                let signal = self.read_signal(request, &response);
                parts.governor.observe(permit, &signal).await?;
                // The response's word on the request's other buckets (Linear's complexity).
                for other in &signal.others {
                    parts.governor.observe(permit, other).await?;
                }
                self.report_reading(permit.key()).await;
                Trip::Answered(response, Box::new(signal))
            }
        })
    }

    /// The rate-limit reading of a response, in the provider's dialect.
    fn read_signal(
        &self,
        request: &ApiRequest,
        response: &http::Response<Bytes>,
    ) -> RateLimitSignal {
        let parts = self.parts();
        let now = parts.clock.now();
        let status = response.status().as_u16();
        let (headers, body, bounds) = (response.headers(), response.body(), &parts.config.bounds);
        // Each provider's parser decides what a status means with its headers (a GitLab 403
        // is a limit only when a wait is announced or the quota is spent: core::signal::gitlab).
        match (parts.config.provider, request.kind.surface) {
            (Provider::GitHub, Surface::GraphQl) => {
                signal::github_graphql(status, headers, body, now, bounds)
            }
            (Provider::GitHub, Surface::Rest) => {
                signal::github_rest(status, headers, body, now, bounds)
            }
            (Provider::GitLab, _) => signal::gitlab(status, headers, now, bounds),
            (Provider::Jira, _) => signal::jira(status, headers, now, bounds),
            (Provider::Linear, _) => signal::linear(status, headers, body, now, bounds),
            (Provider::LaunchDarkly, _) => {
                // The route's remaining belongs to the route bucket the request spends.
                let route = request
                    .also_spends
                    .iter()
                    .map(|(bucket, _)| bucket)
                    .find(|b| b.as_str().starts_with(signal::LD_ROUTE_PREFIX));
                signal::launchdarkly(status, headers, route, now, bounds)
            }
        }
    }

    /// One usage record per round trip, answered or not.
    async fn record_usage(&self, key: &QuotaKey, request: &ApiRequest, trip: &Trip) {
        let parts = self.parts();
        let (status, actual_cost, bucket, reset_at) = match trip {
            Trip::Answered(r, s) => (
                Some(r.status().as_u16()),
                s.cost,
                s.resource.clone().unwrap_or_else(|| request.bucket.clone()),
                s.reset_at,
            ),
            Trip::Failed(_) => (None, None, request.bucket.clone(), None),
        };
        self.report_usage(UsageRecord {
            key: key.clone(),
            route_family: request.route_family.to_string(),
            dimension: request.dimension,
            bucket,
            status,
            estimated_cost: request.estimated_cost,
            actual_cost,
            at: parts.clock.now(),
            sync_run_id: request.sync_run_id,
            reset_at,
        })
        .await;
    }

    /// A round trip that got no answer: retried if the policy allows it, else the error.
    fn classify_failure(
        &self,
        request: &ApiRequest,
        error: TransportError,
        attempts: u32,
    ) -> Result<Next, ApiError> {
        let failure = match error {
            TransportError::Timeout => Failure::Timeout,
            // A refused certificate is refused again on every attempt: never retried.
            TransportError::Certificate(detail) => return Err(ApiError::Certificate(detail)),
            _ => Failure::Connection,
        };
        if self.should_retry(request.kind, failure, attempts) {
            return Ok(Next::Retry);
        }
        Err(match error {
            TransportError::Timeout => ApiError::Timeout { attempts },
            other => ApiError::Transport {
                attempts,
                message: headroom_core::redact(&other.to_string()),
            },
        })
    }

    /// What an answer means: the response, a retry, a redirect to follow, or an error.
    async fn classify(
        &self,
        key: &QuotaKey,
        request: &ApiRequest,
        attempt: &mut Attempt,
        response: http::Response<Bytes>,
        signal: RateLimitSignal,
    ) -> Result<Next, ApiError> {
        let status = response.status();
        match status.as_u16() {
            200..=299 => {
                if signal.reason == Some(LimitReason::Primary) {
                    // GraphQL's "rate limited" arrives as a 200.
                    return Err(self.rate_limited(key, request, &signal).await);
                }
                Ok(Next::Done(Box::new(attempt.finish(response, signal))))
            }
            304 => Ok(Next::Done(Box::new(attempt.finish(response, signal)))),
            301 | 302 | 303 | 307 | 308 => self.follow_redirect(request, attempt, &response),
            401 => Err(ApiError::Forbidden {
                status: 401,
                message: provider_message(response.body()),
            }),
            403 | 429 => match signal.reason {
                Some(LimitReason::Permission | LimitReason::Complexity) | None => {
                    Err(ApiError::Forbidden {
                        status: status.as_u16(),
                        message: provider_message(response.body()),
                    })
                }
                // A GitLab read answered 429 waits in place when the wait fits; otherwise
                // the governor (already fed the reading) decides when to come back.
                Some(_) => {
                    let code = status.as_u16();
                    match self
                        .wait_in_place(key, request, code, &signal, attempt.attempts)
                        .await
                    {
                        Some(wait) => Ok(Next::RetryAfter(wait)),
                        None => Err(self.rate_limited(key, request, &signal).await),
                    }
                }
            },
            404 | 410 => Err(ApiError::Gone {
                status: status.as_u16(),
            }),
            500..=599 => {
                let failure = Failure::Status {
                    status: status.as_u16(),
                    rate_limit_remaining_zero: signal.remaining == Some(0),
                };
                if self.should_retry(request.kind, failure, attempt.attempts) {
                    return Ok(Next::Retry);
                }
                Err(ApiError::Server {
                    status: status.as_u16(),
                    attempts: attempt.attempts,
                })
            }
            400 if signal.reason == Some(LimitReason::Primary) => {
                Err(self.rate_limited(key, request, &signal).await)
            }
            other => Err(ApiError::status(other, response.body())),
        }
    }

    /// A redirect: refused unless the call opted in; followed only to a URL the policy
    /// allows (a pre-signed download host, without credentials), within the hop limit.
    fn follow_redirect(
        &self,
        request: &ApiRequest,
        attempt: &mut Attempt,
        response: &http::Response<Bytes>,
    ) -> Result<Next, ApiError> {
        let parts = self.parts();
        let status = response.status();
        let location = response
            .headers()
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        if !request.follow_redirects {
            return Err(ApiError::Redirect {
                status: status.as_u16(),
                location: headroom_core::redact(&location),
            });
        }
        attempt.hops += 1;
        if attempt.hops > parts.config.max_redirects {
            return Err(ApiError::TooManyRedirects {
                hops: attempt.hops - 1,
            });
        }
        let next = attempt
            .url
            .join(&location)
            .map_err(|e| ApiError::Refused(crate::policy::PolicyError::Invalid(e.to_string())))?;
        match parts.policy.check_api(&next) {
            Ok(()) => {}
            Err(api_refusal) => {
                // A pre-signed download host is followed, but never with credentials.
                if parts.policy.check_download(&next).is_ok() {
                    attempt.with_credential = false;
                } else {
                    tracing::warn!(
                        event = telemetry::HTTP_REDIRECT_REFUSED,
                        location = %headroom_core::redact(next.as_str()),
                        reason = %api_refusal,
                        "Refused to follow a redirect."
                    );
                    return Err(ApiError::Refused(api_refusal));
                }
            }
        }
        attempt.url = next;
        attempt.attempts = 0;
        Ok(Next::Follow)
    }

    fn should_retry(&self, kind: RequestKind, failure: Failure, attempts: u32) -> bool {
        let parts = self.parts();
        is_retryable(parts.config.provider, kind, failure)
            && parts.config.retry.allows_another(attempts)
    }

    async fn back_off(&self, attempts: u32) {
        let delay = {
            let mut rng = self.inner.rng.lock().unwrap_or_else(|p| p.into_inner());
            self.parts()
                .config
                .retry
                .backoff(attempts.saturating_sub(1), &mut *rng)
        };
        self.parts().clock.sleep(delay).await;
    }

    /// When a rate-limited request may come back, and why: the governor's verdict (it was
    /// already fed the reading), else the signal's own instant; with the bucket it names
    /// (a Jira burst's: the endpoint's).
    pub(super) async fn come_back_at(
        &self,
        key: &QuotaKey,
        request: &ApiRequest,
        signal: &RateLimitSignal,
    ) -> (Timestamp, RateLimitReason, headroom_core::Bucket) {
        let parts = self.parts();
        let now = parts.clock.now();
        // A Jira burst closes the request's endpoint bucket, not its own (governor::endpoint).
        let bucket = signal
            .resource
            .clone()
            .or_else(|| endpoint::reacting_bucket(signal, &request.bucket, &request.also_spends))
            .unwrap_or_else(|| request.bucket.clone());
        let verdict = parts
            .governor
            .headroom(key, &bucket, request.estimated_cost, request.kind)
            .await;
        match verdict {
            Ok(Headroom::Closed(wait)) => {
                (wait.until, RateLimitReason::Governor(wait.reason), bucket)
            }
            _ => (
                signal
                    .not_before(now)
                    .unwrap_or_else(|| now + parts.config.bounds.default_wait),
                RateLimitReason::Origin(signal.reason.unwrap_or(LimitReason::Unknown)),
                bucket,
            ),
        }
    }

    /// The error for a rate-limited response: the governor (already fed the reading) says until
    /// when; the signal's own instant is the fallback.
    async fn rate_limited(
        &self,
        key: &QuotaKey,
        request: &ApiRequest,
        signal: &RateLimitSignal,
    ) -> ApiError {
        let (until, reason, bucket) = self.come_back_at(key, request, signal).await;
        let error = ApiError::RateLimited {
            until,
            bucket,
            dimension: request.dimension,
            request_id: signal.request_id.clone(),
            reason,
        };
        self.log_rate_limit(
            key,
            request,
            RateLimitEventKind::Refused,
            &error,
            Some(signal),
        )
        .await;
        error
    }

    fn wire_request(
        &self,
        request: &ApiRequest,
        url: &Url,
        with_credential: bool,
        etag: Option<&str>,
    ) -> Result<http::Request<Bytes>, ApiError> {
        let parts = self.parts();
        let mut builder = http::Request::builder()
            .method(request.method.clone())
            .uri(url.as_str());
        let headers = builder
            .headers_mut()
            .ok_or_else(|| ApiError::Decode("invalid request".into()))?;
        headers.extend(request.headers.clone());
        let provider = parts.config.provider;
        dialect::default_headers(provider, parts.config.api_version.as_deref(), headers);
        if let Ok(ua) = HeaderValue::from_str(&parts.config.user_agent) {
            headers.insert(USER_AGENT, ua);
        }
        if with_credential && let Some(credential) = &request.credential {
            dialect::credential_header(provider, credential, headers)?;
        }
        if let Some(tag) = etag.and_then(|t| HeaderValue::from_str(t).ok()) {
            headers.insert(IF_NONE_MATCH, tag);
        }
        if request.body.is_some() {
            headers.insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
        builder
            .body(request.body.clone().unwrap_or_default())
            .map_err(|e| ApiError::Decode(headroom_core::redact(&e.to_string())))
    }
}

fn etag_owner(request: &ApiRequest) -> &str {
    request
        .credential
        .as_ref()
        .map_or("anonymous", Credential::fingerprint)
}

fn finish(
    response: http::Response<Bytes>,
    url: Url,
    signal: RateLimitSignal,
    attempts: u32,
    hops: u32,
) -> ApiResponse {
    let (head, body) = response.into_parts();
    ApiResponse {
        status: head.status,
        headers: head.headers,
        body: if head.status == StatusCode::NOT_MODIFIED {
            Bytes::new()
        } else {
            body
        },
        url,
        signal,
        attempts,
        hops,
    }
}
