//! The contract suite's rig: an exit door to the in-process simulator for either provider,
//! and a transport between them that can answer a chosen request with a fault (429, 502) or
//! lose its answer after the simulator applied it (a timeout), counting every request that
//! left the exit door.

#![allow(dead_code, clippy::expect_used)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use headroom_core::clock::{Timestamp, TokioClock};
use headroom_core::governor::{BoxFuture, GovernorConfig};
use headroom_core::provider::Recheck;
use headroom_core::signal::Provider;
use headroom_core::{Governor, Subject};
use headroom_github::ops::GitHubOps;
use headroom_gitlab::GitLabOps;
use headroom_http::sinks::{CredentialRegistry, MemoryCredentials};
use headroom_http::transport::{SimTransport, Transport, TransportError};
use headroom_http::{Client, ClientParts, Credential, UrlPolicy};
use headroom_sim::{SimConfig, Simulator, TokenSpec};

pub const HOST: &str = "http://127.0.0.1:7000";
pub const TOKEN: &str = "ghp_contracttoken00000000000000000000001";

/// What the faulty transport does to a matching request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Answers this status itself, in the provider's dialect; the simulator never sees it.
    Status(u16),
    /// Lets the simulator apply it, then never answers (the client times out).
    LoseAnswer,
}

#[derive(Debug)]
struct Armed {
    method: http::Method,
    path: String,
    fault: Fault,
    times: u32,
}

/// The transport between the exit door and the simulator.
#[derive(Debug)]
pub struct FaultyTransport {
    inner: SimTransport,
    provider: Provider,
    armed: Mutex<Option<Armed>>,
    log: Mutex<Vec<(String, String)>>,
    sent: AtomicU32,
}

impl FaultyTransport {
    /// Requests that left the exit door with this method and path (query ignored).
    pub fn count(&self, method: &str, path: &str) -> usize {
        self.log
            .lock()
            .expect("log")
            .iter()
            .filter(|(m, p)| m == method && p == path)
            .count()
    }

    fn fault_for(&self, request: &http::Request<Bytes>) -> Option<Fault> {
        let mut armed = self.armed.lock().expect("armed");
        let a = armed.as_mut()?;
        if a.times == 0 || a.method != request.method() || a.path != request.uri().path() {
            return None;
        }
        a.times -= 1;
        Some(a.fault)
    }

    fn answer(&self, status: u16) -> http::Response<Bytes> {
        let mut b = http::Response::builder().status(status);
        b = match (self.provider, status) {
            (Provider::GitLab, 429) => b
                .header("content-type", "text/plain")
                .header("retry-after", "60")
                .header("ratelimit-limit", "2000")
                .header("ratelimit-remaining", "0")
                .header("ratelimit-reset", "1800000060"),
            (_, 429) => b
                .header("content-type", "application/json")
                .header("retry-after", "60"),
            _ => b.header("content-type", "text/plain"),
        };
        let body = match status {
            429 if self.provider == Provider::GitLab => "Retry later",
            429 => r#"{"message":"You have exceeded a secondary rate limit."}"#,
            _ => "Bad Gateway",
        };
        b.body(Bytes::from_static(body.as_bytes()))
            .expect("valid response")
    }
}

impl Transport for FaultyTransport {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, TransportError>> {
        Box::pin(async move {
            self.sent.fetch_add(1, Ordering::SeqCst);
            self.log.lock().expect("log").push((
                request.method().to_string(),
                request.uri().path().to_owned(),
            ));
            match self.fault_for(&request) {
                Some(Fault::Status(status)) => Ok(self.answer(status)),
                Some(Fault::LoseAnswer) => {
                    let _applied = self.inner.send(request).await;
                    std::future::pending().await
                }
                None => self.inner.send(request).await,
            }
        })
    }
}

/// One provider's side, ready for the suite.
pub struct Rig<P> {
    pub provider: Provider,
    pub sim: Simulator,
    pub ops: P,
    pub transport: Arc<FaultyTransport>,
    /// The API's path prefix as the simulator logs it (`""` or `/api/v4`).
    pub prefix: &'static str,
}

impl<P> Rig<P> {
    /// Answers the next `times` requests `method path` (path after the prefix) with `fault`.
    pub fn arm(&self, method: http::Method, path: &str, fault: Fault, times: u32) {
        *self.transport.armed.lock().expect("armed") = Some(Armed {
            method,
            path: format!("{}{path}", self.prefix),
            fault,
            times,
        });
    }

    /// Requests that left the exit door as `method path` (path after the prefix).
    pub fn sent(&self, method: &str, path: &str) -> usize {
        self.transport
            .count(method, &format!("{}{path}", self.prefix))
    }

    /// Requests the simulator logged as `method path`.
    pub fn at_sim(&self, method: &str, path: &str) -> usize {
        let full = format!("{}{path}", self.prefix);
        self.sim
            .request_log()
            .iter()
            .filter(|e| e.method == method && e.path.split('?').next() == Some(full.as_str()))
            .count()
    }
}

async fn client(
    provider: Provider,
    sim: &Simulator,
    clock: TokioClock,
    known_owner: bool,
) -> (Client, Arc<FaultyTransport>) {
    let governor =
        Governor::in_memory(GovernorConfig::default(), Arc::new(clock)).expect("governor");
    let credentials = Arc::new(MemoryCredentials::default());
    if known_owner {
        credentials
            .record(
                "127.0.0.1",
                Credential::new(TOKEN).fingerprint(),
                &Subject::User("alice".into()),
            )
            .await;
    }
    let transport = Arc::new(FaultyTransport {
        inner: SimTransport::new(sim.clone()),
        provider,
        armed: Mutex::new(None),
        log: Mutex::new(Vec::new()),
        sent: AtomicU32::new(0),
    });
    let base = match provider {
        Provider::GitLab => format!("{HOST}/api/v4"),
        _ => HOST.to_owned(),
    };
    let mut parts = ClientParts::new(
        UrlPolicy::for_api_url(&base).expect("loopback"),
        governor,
        transport.clone(),
        clock,
    );
    parts.credentials = credentials;
    parts.config.provider = provider;
    if provider == Provider::GitLab {
        parts.config.api_version = None;
    }
    parts.config.jitter_seed = Some(11);
    (Client::new(parts), transport)
}

fn simulator() -> (Simulator, TokioClock) {
    let clock = TokioClock::anchored_at(Timestamp::from_second(1_800_000_000).expect("valid"));
    let mut config = SimConfig::default().with_token(TokenSpec::user(TOKEN, "alice"));
    config.public_base_url = HOST.to_owned();
    (Simulator::new(config, clock).expect("simulator"), clock)
}

/// GitHub's side.
pub async fn github(recheck: Recheck, token: &str) -> Rig<GitHubOps> {
    let (sim, clock) = simulator();
    let (client, transport) = client(Provider::GitHub, &sim, clock, token == TOKEN).await;
    Rig {
        provider: Provider::GitHub,
        ops: GitHubOps::new(client, Some(Credential::new(token))).with_recheck(recheck),
        sim,
        transport,
        prefix: "",
    }
}

/// GitLab's side.
pub async fn gitlab(recheck: Recheck, token: &str) -> Rig<GitLabOps> {
    let (sim, clock) = simulator();
    let (client, transport) = client(Provider::GitLab, &sim, clock, token == TOKEN).await;
    Rig {
        provider: Provider::GitLab,
        ops: GitLabOps::new(client, Some(Credential::new(token))).with_recheck(recheck),
        sim,
        transport,
        prefix: "/api/v4",
    }
}
