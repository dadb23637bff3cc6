//! The request handler: identity, in-flight accounting, latency and faults, secondary and
//! primary limits, routing, headers, and the request log.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};

use crate::body_faults::BodyFault;
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::SimFuture;
use crate::config::{SimConfig, TokenOwner};
use crate::error::SimError;
use crate::gitlab::{self, GitlabState};
use crate::graphql::{self, GitHubSchema, GqlCtx, RateInfo};
use crate::quota::{Quotas, Reading, Resource, Subject};
use crate::render::ts;
use crate::scenario::Scenario;
use crate::world::World;

mod graphql_endpoint;
mod log;
mod provider_faults;
mod replies;
mod request;
mod tokens;

pub use log::LogEntry;
pub use tokens::token_fingerprint;

use log::LogState;
pub(crate) use log::{PendingLog, ts_millis};

pub(crate) use provider_faults::{Provider, ProviderFault, bad_gateway};

use replies::{gateway_timeout, injected_error, primary_reply, secondary_reply};

#[derive(Debug, Default)]
pub(crate) struct ScenarioState {
    pub(crate) events_requests: u64,
    pub(crate) commit_counter: u64,
    pub(crate) graphql_timeouts_answered: u32,
    /// Bounded like the request log.
    pub(crate) graphql_queries: VecDeque<GraphqlQuery>,
    /// Identities whose first request of the provider scenario's kind was taken.
    pub(crate) provider_firsts: HashSet<(Provider, String)>,
}

/// One GraphQL query as the simulator costed it: what a test needs to see page sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphqlQuery {
    /// The query string of the request's URL (headroom puts `stage=NAME` there).
    pub url_query: Option<String>,
    /// Nodes the query may return, by GitHub's rule.
    pub node_count: u64,
    /// Answered 502 (the `graphql_timeout_above_nodes` fault).
    pub timed_out: bool,
}

pub(crate) struct Inner {
    pub(crate) config: SimConfig,
    pub(crate) clock: TokioClock,
    pub(crate) started: Timestamp,
    /// Every token and its owner; a test may add and revoke tokens while serving.
    tokens: Mutex<HashMap<String, TokenOwner>>,
    pub(crate) world: Arc<Mutex<World>>,
    quotas: Mutex<Quotas>,
    schema: GitHubSchema,
    log: Mutex<LogState>,
    seq: AtomicU64,
    fault_rng: Mutex<StdRng>,
    pub(crate) scenario_state: Mutex<ScenarioState>,
    pub(crate) gitlab: Mutex<GitlabState>,
    pub(crate) jira: Mutex<crate::jira::JiraState>,
    pub(crate) linear: Mutex<crate::linear::LinearState>,
    pub(crate) launchdarkly: Mutex<crate::launchdarkly::LdState>,
    /// Requests by method and path, counted on arrival (an answer that never leaves, as in
    /// `mutation_response_lost`, still counts).
    arrivals: Mutex<HashMap<(String, String), usize>>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner")
            .field("config", &self.config)
            .field("started", &self.started)
            .finish_non_exhaustive()
    }
}

/// The simulated GitHub. Cheap to clone: clones share one state.
#[derive(Debug, Clone)]
pub struct Simulator {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a lock leaves plain data behind; keep serving.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

use request::{Class, classify};
pub(crate) use request::{Ctx, Reply};
pub(crate) use request::{parse_query, path_segments};

impl Simulator {
    /// Builds a simulator: generates the data from the seed and opens the log file.
    pub fn new(config: SimConfig, clock: TokioClock) -> Result<Simulator, SimError> {
        config.validate()?;
        let now = clock.now();
        let file = match &config.log_file {
            Some(path) => Some(BufWriter::new(
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|source| SimError::Io {
                        action: "opening log file",
                        path: path.clone(),
                        source,
                    })?,
            )),
            None => None,
        };
        let tokens = config
            .tokens
            .iter()
            .map(|t| (t.token.clone(), t.owner.clone()))
            .collect();
        let mut world = World::generate(&config);
        if let Some(events) = &config.feed_events {
            crate::replay::adopt(&mut world, events);
        }
        let mut gitlab_state = GitlabState::default();
        if let Some(spec) = &config.gitlab_group {
            let members = gitlab::group::seed::members_of(&config, &world);
            gitlab_state.group.world =
                Some(gitlab::group::seed::seed(spec, config.seed, now, members));
        }
        let quotas = Quotas::new(&config, now);
        let fault_rng = StdRng::seed_from_u64(config.seed.wrapping_add(0x5EED));
        Ok(Simulator {
            inner: Arc::new(Inner {
                tokens: Mutex::new(tokens),
                jira: Mutex::new(crate::jira::state(&config, &world, now)),
                linear: Mutex::new(crate::linear::state(&config, now)),
                launchdarkly: Mutex::new(crate::launchdarkly::state(&config, now)),
                world: Arc::new(Mutex::new(world)),
                quotas: Mutex::new(quotas),
                schema: graphql::schema(),
                log: Mutex::new(LogState {
                    entries: VecDeque::new(),
                    file,
                }),
                seq: AtomicU64::new(0),
                fault_rng: Mutex::new(fault_rng),
                scenario_state: Mutex::new(ScenarioState::default()),
                gitlab: Mutex::new(gitlab_state),
                arrivals: Mutex::new(HashMap::new()),
                started: now,
                clock,
                config,
            }),
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &SimConfig {
        &self.inner.config
    }

    /// Every GraphQL query that was costed, in arrival order.
    pub fn graphql_queries(&self) -> Vec<GraphqlQuery> {
        lock(&self.inner.scenario_state)
            .graphql_queries
            .iter()
            .cloned()
            .collect()
    }

    /// Reads or changes the data in place (tests count what the world holds and touch
    /// items between syncs).
    pub fn with_world<R>(&self, f: impl FnOnce(&mut World) -> R) -> R {
        f(&mut lock(&self.inner.world))
    }

    /// The simulator's clock.
    pub fn clock(&self) -> TokioClock {
        self.inner.clock
    }

    /// Every scenario with its one-line description.
    pub fn scenarios() -> Vec<(&'static str, &'static str)> {
        Scenario::ALL
            .iter()
            .map(|s| (s.name(), s.description()))
            .collect()
    }

    /// The request log (the newest `log_capacity` entries), oldest first.
    pub fn request_log(&self) -> Vec<LogEntry> {
        lock(&self.inner.log).entries.iter().cloned().collect()
    }

    /// How many requests arrived with this method and path (as sent, percent-encoding
    /// included, the query string ignored), answered or not: the per-route count a test uses
    /// to prove a mutation was sent exactly once.
    pub fn count_requests(&self, method: &str, path: &str) -> usize {
        let key = (method.to_owned(), path.to_owned());
        lock(&self.inner.arrivals).get(&key).copied().unwrap_or(0)
    }

    /// Reads or changes the simulated GitLab's data in place.
    pub fn with_gitlab<R>(&self, f: impl FnOnce(&mut GitlabState) -> R) -> R {
        f(&mut lock(&self.inner.gitlab))
    }

    /// How many requests were logged with this status.
    pub fn count_status(&self, status: u16) -> usize {
        lock(&self.inner.log)
            .entries
            .iter()
            .filter(|e| e.status == status)
            .count()
    }

    /// The state of a bucket as `/rate_limit` would report it (opens no window).
    pub fn quota(&self, subject: &Subject, resource: Resource) -> Reading {
        let now = self.inner.clock.now();
        lock(&self.inner.quotas).report(&self.inner.config, now, subject, resource)
    }

    /// The identity a token belongs to, as the simulator sees it.
    pub fn subject_for_token(&self, token: &str) -> Option<Subject> {
        let owner = self.token_owner(token)?;
        Some(self.subject_of(&owner))
    }

    fn subject_of(&self, owner: &TokenOwner) -> Subject {
        match owner {
            TokenOwner::User(login) => {
                let id = lock(&self.inner.world)
                    .user(login)
                    .map(|u| u.id)
                    .unwrap_or(0);
                Subject::User {
                    login: login.clone(),
                    id,
                }
            }
            TokenOwner::Installation(id) => Subject::Installation { id: *id },
        }
    }

    pub(crate) fn next_request_id(&self) -> String {
        let n = self.inner.seq.fetch_add(1, Ordering::SeqCst) + 1;
        let s = self.inner.config.seed;
        format!(
            "{:04X}:{:05X}:{:06X}:{:07X}:{:08X}",
            (s & 0xFFFF) as u16,
            (n >> 20) & 0xFFFFF,
            n & 0xFFFFFF,
            (n.wrapping_mul(2_654_435_761)) & 0xFFF_FFFF,
            (n.wrapping_mul(40_503) ^ s) & 0xFFFF_FFFF
        )
    }

    /// Answers one request, as GitHub would. The URI may be absolute
    /// (`http://127.0.0.1:PORT/events?…`) or origin-form (`/events?…`). Latency and timeout
    /// faults sleep on the clock before answering. Boxed ([`SimFuture`]).
    pub fn handle(&self, req: Request<Bytes>, peer: IpAddr) -> SimFuture<'_, Response<Bytes>> {
        Box::pin(self.answer(req, peer, false))
    }

    /// [`Self::handle`] for an answer sent over HTTP, where a served answer may also meet a
    /// body fault ([`crate::body_faults`]); the response carries it as an extension.
    pub fn handle_on_the_wire(
        &self,
        req: Request<Bytes>,
        peer: IpAddr,
    ) -> SimFuture<'_, Response<Bytes>> {
        Box::pin(self.answer(req, peer, true))
    }

    async fn answer(&self, req: Request<Bytes>, peer: IpAddr, wire: bool) -> Response<Bytes> {
        let route = (
            req.method().as_str().to_owned(),
            req.uri().path().to_owned(),
        );
        *lock(&self.inner.arrivals).entry(route).or_insert(0) += 1;
        let mut response = if gitlab::is_gitlab_path(req.uri().path()) {
            self.handle_gitlab(req, peer).await
        } else if crate::linear::is_linear_path(req.uri().path()) {
            self.handle_linear(req, peer).await
        } else if crate::jira::is_jira_path(req.uri().path()) {
            self.handle_jira(req, peer).await
        } else if crate::launchdarkly::is_launchdarkly_path(req.uri().path()) {
            self.handle_launchdarkly(req, peer).await
        } else {
            self.handle_github(req, peer).await
        };
        let fault = if wire && response.status().is_success() {
            self.draw_body_fault()
        } else {
            None
        };
        // The log line waits for the fault, so the log says which answers were cut.
        if let Some(PendingLog(mut entry)) = response.extensions_mut().remove::<PendingLog>() {
            entry.body_fault = fault.map(BodyFault::name);
            self.record(entry);
        }
        if let Some(fault) = fault {
            response.extensions_mut().insert(fault);
        }
        response
    }

    /// The identity of a GitHub request (`None`: a token the simulator does not know) and its
    /// token's fingerprint.
    fn github_subject(
        &self,
        headers: &HeaderMap,
        peer: IpAddr,
    ) -> (Option<Subject>, Option<String>) {
        let auth = headers
            .get(http::header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .map(str::trim);
        let token = auth.and_then(tokens::token_of);
        let fingerprint = token.as_deref().map(token_fingerprint);
        let subject = match (&token, auth) {
            (Some(t), _) => self.token_owner(t).map(|owner| self.subject_of(&owner)),
            (None, Some(_)) => None,
            (None, None) => Some(Subject::Ip(peer)),
        };
        (subject, fingerprint)
    }

    async fn handle_github(&self, req: Request<Bytes>, peer: IpAddr) -> Response<Bytes> {
        let inner = &self.inner;
        let arrived = inner.clock.now();
        let request_id = self.next_request_id();
        let (parts, body) = req.into_parts();
        let uri = parts.uri.clone();
        let base = self.request_base(&uri, &parts.headers);
        let path = uri.path().to_owned();
        let path_and_query = uri
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_else(|| path.clone());
        let segments = path_segments(&path);

        let (subject, fingerprint) = self.github_subject(&parts.headers, peer);
        let Some(subject) = subject else {
            let reply = Reply::message(
                StatusCode::UNAUTHORIZED,
                "Bad credentials",
                "https://docs.github.com/rest",
            );
            let subject = Subject::Ip(peer);
            let reading =
                lock(&inner.quotas).peek(&inner.config, arrived, &subject, Resource::Core);
            return self.finish(FinishArgs {
                reply,
                reading: Some(reading),
                spent: 0,
                subject: &subject,
                fingerprint,
                method: &parts.method,
                path: &path_and_query,
                in_flight: 0,
                request_id,
                arrived,
                now: arrived,
            });
        };

        // In flight for the whole request, latency included; released on drop, so a caller
        // that gives up (a read timeout) frees its slot.
        let in_flight = lock(&inner.quotas).enter(&subject);
        let _guard = InFlight {
            sim: self.clone(),
            subject: subject.clone(),
        };

        // Latency (the bucket's own, where one is set) and timeouts.
        let class = classify(&parts.method, &segments);
        let (delay, timeout, error) = self.draw_faults(class.resource);
        inner.clock.sleep(delay).await;
        if timeout {
            inner.clock.sleep(inner.config.faults.timeout_after).await;
        }
        let now = inner.clock.now();

        let ctx = Ctx {
            method: parts.method.clone(),
            segments,
            query: parse_query(uri.query()),
            raw_query: uri.query().map(str::to_owned),
            base,
            subject: subject.clone(),
            headers: parts.headers.clone(),
            body,
            request_id: request_id.clone(),
            now,
        };
        let finish = |reply: Reply, reading: Option<Reading>, spent: u64| {
            self.finish(FinishArgs {
                reply,
                reading,
                spent,
                subject: &subject,
                fingerprint: fingerprint.clone(),
                method: &parts.method,
                path: &path_and_query,
                in_flight,
                request_id: request_id.clone(),
                arrived,
                now,
            })
        };

        if timeout {
            let reading = lock(&inner.quotas).peek(&inner.config, now, &subject, class.resource);
            return finish(gateway_timeout(), Some(reading), 0);
        }

        let read = matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS);
        let mutation = !read && !class.graphql;
        let fault = self.provider_fault(Provider::GitHub, &subject.log_name(), mutation);
        if let Some((reply, reading)) =
            self.github_fault_answer(fault, &subject, class.resource, now, &request_id)
        {
            return finish(reply, reading, 0);
        }

        if class.graphql {
            let (reply, reading, spent) = self.graphql(&ctx, in_flight).await;
            return finish(reply, reading, spent);
        }

        let (reading, spent) = match self.charge(&ctx, &class, in_flight) {
            Ok(charged) => charged,
            Err((reply, reading)) => return finish(reply, Some(reading), 0),
        };

        if let Some(pick) = error {
            return finish(injected_error(pick), Some(reading), spent);
        }

        let reply = self.rest_reply(&ctx, &class);
        if fault == Some(ProviderFault::ResponseLost) {
            self.lose_response().await;
        }
        let (reply, reading, spent) =
            self.answer_conditionally(&ctx, reply, fingerprint.as_deref(), reading, spent);
        finish(reply, Some(reading), spent)
    }

    /// The API root this request reached: its absolute URI's, else its `Host` on the configured
    /// scheme, else the configured public URL.
    pub(crate) fn request_base(&self, uri: &http::Uri, headers: &HeaderMap) -> String {
        let inner = &self.inner;
        match (uri.scheme_str(), uri.authority()) {
            (Some(scheme), Some(auth)) => format!("{scheme}://{auth}"),
            _ => match headers
                .get(http::header::HOST)
                .and_then(|h| h.to_str().ok())
            {
                Some(host) => {
                    let scheme = inner
                        .config
                        .public_base_url
                        .split("://")
                        .next()
                        .unwrap_or("https");
                    format!("{scheme}://{host}")
                }
                None => inner
                    .config
                    .public_base_url
                    .trim_end_matches('/')
                    .to_owned(),
            },
        }
    }

    /// The latency of a request to `resource`, whether it times out, and which injected error
    /// (if any) it gets.
    fn draw_faults(&self, resource: Resource) -> (SignedDuration, bool, Option<u8>) {
        let inner = &self.inner;
        let f = &inner.config.faults;
        let mut rng = lock(&inner.fault_rng);
        let jitter_ms = f.latency_jitter.as_millis().max(0) as u64;
        let jitter = if jitter_ms > 0 {
            rng.random_range(0..=jitter_ms)
        } else {
            0
        };
        let timeout = f.timeout_rate > 0.0 && rng.random_bool(f.timeout_rate);
        let error = f.error_rate > 0.0 && rng.random_bool(f.error_rate);
        let pick = rng.random_range(0..3u8);
        let fixed = f
            .bucket_latency
            .get(&resource)
            .copied()
            .unwrap_or(f.latency);
        (
            fixed + SignedDuration::from_millis(jitter as i64),
            timeout,
            error.then_some(pick),
        )
    }

    /// Conditional requests: the reply's weak ETag (per body and token), and a 304 when
    /// `If-None-Match` matches; an authorized 304 does not count, an unauthenticated one does.
    fn answer_conditionally(
        &self,
        ctx: &Ctx,
        reply: Reply,
        fingerprint: Option<&str>,
        reading: Reading,
        spent: u64,
    ) -> (Reply, Reading, u64) {
        let inner = &self.inner;
        let (now, subject) = (ctx.now, &ctx.subject);
        let mut reply = reply;
        let mut reading = reading;
        let mut spent = spent;
        if reply.etag && reply.status == StatusCode::OK {
            let mut h = Sha256::new();
            h.update(&reply.body);
            h.update(fingerprint.unwrap_or("anonymous").as_bytes());
            let digest = h.finalize();
            let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
            let etag = format!("W/\"{hex}\"");
            let matches = ctx
                .headers
                .get(http::header::IF_NONE_MATCH)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| {
                    v.split(',').map(str::trim).any(|t| {
                        t == etag
                            || t == "*"
                            || t.trim_start_matches("W/") == etag.trim_start_matches("W/")
                    })
                });
            reply = reply.header("etag", &etag);
            if matches {
                reply.status = StatusCode::NOT_MODIFIED;
                reply.body = Bytes::new();
                reply.headers.remove(http::header::CONTENT_TYPE);
                if subject.is_authenticated() && spent > 0 {
                    let mut q = lock(&inner.quotas);
                    q.refund(subject, reading.resource, spent);
                    reading = q.peek(&inner.config, now, subject, reading.resource);
                    spent = 0;
                }
            }
        }
        (reply, reading, spent)
    }

    /// Secondary limits, then the primary bucket: what this request costs, or the refusal.
    // The error is the response itself, built at most once per request.
    #[allow(clippy::result_large_err)]
    fn charge(
        &self,
        ctx: &Ctx,
        class: &Class,
        in_flight: u32,
    ) -> Result<(Reading, u64), (Reply, Reading)> {
        let inner = &self.inner;
        let (now, subject) = (ctx.now, &ctx.subject);
        let points = if matches!(ctx.method, Method::GET | Method::HEAD | Method::OPTIONS) {
            1
        } else {
            5
        };
        let secondary = lock(&inner.quotas).secondary(
            &inner.config,
            now,
            subject,
            in_flight,
            false,
            points,
            class.creates_content,
        );
        if let Err(hit) = secondary {
            let reading = lock(&inner.quotas).peek(&inner.config, now, subject, class.resource);
            return Err((
                secondary_reply(hit, &ctx.request_id, self.retry_after_date(now)),
                reading,
            ));
        }
        // `/rate_limit` is free; with rate limiting off (Enterprise Server) nothing counts.
        let (reading, spent) = if class.free || !inner.config.rate_limiting {
            (
                lock(&inner.quotas).peek(&inner.config, now, subject, class.resource),
                0,
            )
        } else {
            match lock(&inner.quotas).try_spend(&inner.config, now, subject, class.resource, 1) {
                Ok(r) => (r, 1),
                Err(r) => {
                    let mut reply = primary_reply(subject, &ctx.request_id, r.resource);
                    if inner.config.scenario == Scenario::RateLimited429 {
                        reply.status = StatusCode::TOO_MANY_REQUESTS;
                    }
                    return Err((reply, r));
                }
            }
        };
        Ok((reading, spent))
    }

    /// The answer of a REST request admitted by the limits: `/rate_limit` (refused where rate
    /// limiting is off, as Enterprise Server does) or a route.
    fn rest_reply(&self, ctx: &Ctx, class: &Class) -> Reply {
        let inner = &self.inner;
        if class.free && !inner.config.rate_limiting {
            // What GitHub Enterprise Server answers when rate limiting is off.
            Reply::json(
                StatusCode::NOT_FOUND,
                &json!({
                    "message": "Rate limiting is not enabled.",
                    "documentation_url": "https://docs.github.com/enterprise-server/rest",
                }),
            )
        } else if class.free {
            self.rate_limit_body(ctx)
        } else {
            self.route(ctx)
        }
    }

    fn retry_after_date(&self, now: Timestamp) -> Option<Timestamp> {
        self.inner.config.retry_after_as_http_date.then_some(now)
    }

    fn finish(&self, a: FinishArgs<'_>) -> Response<Bytes> {
        let inner = &self.inner;
        let mut reply = a.reply;
        let h = &mut reply.headers;
        // With rate limiting off there is no bucket: no headers, nothing in the log.
        let reading = a.reading.filter(|_| inner.config.rate_limiting);
        if let Some(r) = reading {
            for (name, value) in [
                ("x-ratelimit-limit", r.limit.to_string()),
                ("x-ratelimit-remaining", r.remaining.to_string()),
                ("x-ratelimit-reset", r.reset.as_second().to_string()),
                ("x-ratelimit-used", r.used.to_string()),
                ("x-ratelimit-resource", r.resource.name().to_owned()),
            ] {
                if let Ok(v) = HeaderValue::from_str(&value) {
                    h.insert(HeaderName::from_static(name), v);
                }
            }
        }
        if let Ok(v) = HeaderValue::from_str(&a.request_id) {
            h.insert(HeaderName::from_static("x-github-request-id"), v);
        }
        h.insert(
            HeaderName::from_static("x-github-media-type"),
            HeaderValue::from_static("github.v3; format=json"),
        );
        h.insert(
            HeaderName::from_static("x-github-api-version-selected"),
            HeaderValue::from_static("2022-11-28"),
        );
        if let Ok(v) = HeaderValue::from_str(&http_date(a.now)) {
            h.insert(http::header::DATE, v);
        }
        h.insert(http::header::SERVER, HeaderValue::from_static("github.com"));
        if let Ok(v) = HeaderValue::from_str(&reply.body.len().to_string()) {
            h.insert(http::header::CONTENT_LENGTH, v);
        }

        let entry = LogEntry {
            time: ts_millis(a.now),
            arrived: ts_millis(a.arrived),
            identity: a.subject.log_name(),
            token_fingerprint: a.fingerprint,
            method: a.method.as_str().to_owned(),
            path: a.path.to_owned(),
            status: reply.status.as_u16(),
            bucket: reading.map(|r| r.resource.name().to_owned()),
            cost: a.spent,
            remaining: reading.map(|r| r.remaining),
            in_flight: a.in_flight,
            request_id: a.request_id,
            body_fault: None,
        };
        let mut resp = Response::new(reply.body);
        *resp.status_mut() = reply.status;
        *resp.headers_mut() = reply.headers;
        resp.extensions_mut().insert(PendingLog(entry));
        resp
    }

    /// Appends one entry to the request log (and its file), dropping the oldest beyond capacity.
    pub(crate) fn record(&self, entry: LogEntry) {
        let inner = &self.inner;
        {
            let mut log = lock(&inner.log);
            if let Some(f) = log.file.as_mut()
                && let Ok(line) = serde_json::to_string(&entry)
            {
                // The log is a diagnostic: a full disk must not take the simulator down.
                let _ = writeln!(f, "{line}").and_then(|()| f.flush());
            }
            log.entries.push_back(entry);
            while log.entries.len() > inner.config.log_capacity {
                log.entries.pop_front();
            }
        }
    }
}

struct FinishArgs<'a> {
    reply: Reply,
    reading: Option<Reading>,
    spent: u64,
    subject: &'a Subject,
    fingerprint: Option<String>,
    method: &'a Method,
    path: &'a str,
    in_flight: u32,
    request_id: String,
    arrived: Timestamp,
    now: Timestamp,
}

struct InFlight {
    sim: Simulator,
    subject: Subject,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        lock(&self.sim.inner.quotas).leave(&self.subject);
    }
}

/// An RFC 9110 HTTP-date (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub(crate) fn http_date(t: Timestamp) -> String {
    t.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

/// Writes GitHub's timestamp (re-exported for routes).
pub(crate) fn stamp(t: Timestamp) -> String {
    ts(t)
}
