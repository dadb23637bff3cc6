//! Transports: how a request that passed every check actually travels.
//!
//! Two implementations: [`LiveTransport`] (reqwest with rustls, a configurable CA bundle,
//! connect and read timeouts, no automatic redirects and no retries of its own — the client
//! decides both) and, in tests and the demo, the simulator's in-process handler.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use headroom_core::governor::BoxFuture;
use headroom_core::redact::redact;

/// A transport failure (no HTTP response at all).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// Connecting or reading took too long.
    #[error("timed out")]
    Timeout,
    /// The connection could not be made (refused, reset, DNS, a TLS handshake).
    #[error("connection failed: {0}")]
    Connect(String),
    /// The server's certificate was refused (unknown issuer, self-signed, expired, another
    /// name): trying again cannot help until the CA that signed it is trusted.
    #[error("{CERTIFICATE_NOT_TRUSTED}: {0}")]
    Certificate(String),
    /// Anything else.
    #[error("transport failed: {0}")]
    Other(String),
}

/// Carries one HTTP request and returns the response as received.
pub trait Transport: Send + Sync + fmt::Debug {
    /// Sends `request` (an absolute URI) and returns the full response.
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, TransportError>>;
}

/// Settings of the live transport.
#[derive(Debug, Clone)]
pub struct LiveConfig {
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Read timeout.
    pub read_timeout: Duration,
    /// A PEM bundle to trust instead of the platform's roots (GitHub Enterprise behind a
    /// private CA, or the simulator's self-signed certificate).
    pub ca_bundle: Option<Vec<u8>>,
    /// The User-Agent GitHub requires.
    pub user_agent: String,
}

impl Default for LiveConfig {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(15),
            ca_bundle: None,
            user_agent: format!("headroom/{}", env!("CARGO_PKG_VERSION")),
        }
    }
}

/// reqwest with rustls; redirects off, no hidden retries.
#[derive(Debug, Clone)]
pub struct LiveTransport {
    client: reqwest::Client,
}

/// The live transport could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot build the HTTP client: {0}")]
pub struct BuildError(String);

impl LiveTransport {
    /// Builds the reqwest client.
    pub fn new(config: &LiveConfig) -> Result<Self, BuildError> {
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(config.connect_timeout)
            .read_timeout(config.read_timeout)
            .user_agent(config.user_agent.clone())
            .no_proxy();
        if let Some(pem) = &config.ca_bundle {
            let certs = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| BuildError(format!("the CA bundle is not valid PEM: {e}")))?;
            if certs.is_empty() {
                return Err(BuildError("the CA bundle holds no certificate".into()));
            }
            builder = builder.tls_certs_only(certs);
        }
        let client = builder
            .build()
            .map_err(|e| BuildError(redact(&e.to_string())))?;
        Ok(Self { client })
    }
}

/// The start of every certificate failure's message: the binary adds how to trust the server.
pub const CERTIFICATE_NOT_TRUSTED: &str = "the server's certificate is not trusted";

fn classify(e: &reqwest::Error) -> TransportError {
    // reqwest's messages may quote the URL; redact in case a query carried a secret.
    let text = redact(&e.to_string());
    if e.is_timeout() {
        TransportError::Timeout
    } else if let Some(refused) = certificate_error(e) {
        TransportError::Certificate(certificate_words(refused))
    } else if e.is_connect() {
        TransportError::Connect(text)
    } else {
        TransportError::Other(text)
    }
}

/// The rustls refusal of the server's certificate somewhere in `e`'s causes. The TLS layer
/// reports it inside `io::Error`s (nested), whose `source` skips the error each wraps: look
/// inside each.
fn certificate_error(e: &reqwest::Error) -> Option<&rustls::CertificateError> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(error) = cause {
        let mut wrapped = Some(error);
        while let Some(candidate) = wrapped {
            if let Some(rustls::Error::InvalidCertificate(refused)) =
                candidate.downcast_ref::<rustls::Error>()
            {
                return Some(refused);
            }
            wrapped = candidate
                .downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::get_ref)
                .map(|inner| inner as &(dyn std::error::Error + 'static));
        }
        cause = error.source();
    }
    None
}

/// Why the certificate was refused, in words.
fn certificate_words(refused: &rustls::CertificateError) -> String {
    use rustls::CertificateError as E;
    match refused {
        E::UnknownIssuer => {
            "it is signed by an authority this client does not trust (or by itself)".into()
        }
        E::Expired | E::ExpiredContext { .. } => "it has expired".into(),
        E::NotValidYet | E::NotValidYetContext { .. } => "it is not valid yet".into(),
        E::NotValidForName | E::NotValidForNameContext { .. } => {
            "it is not valid for this host name".into()
        }
        E::Revoked => "it has been revoked".into(),
        other => redact(&other.to_string()),
    }
}

impl Transport for LiveTransport {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, TransportError>> {
        Box::pin(async move {
            let request = reqwest::Request::try_from(request.map(reqwest::Body::from))
                .map_err(|e| TransportError::Other(redact(&e.to_string())))?;
            let response = self
                .client
                .execute(request)
                .await
                .map_err(|e| classify(&e))?;
            let status = response.status();
            let version = response.version();
            let headers = response.headers().clone();
            let body = response.bytes().await.map_err(|e| classify(&e))?;
            let mut out = http::Response::new(body);
            *out.status_mut() = status;
            *out.version_mut() = version;
            *out.headers_mut() = headers;
            Ok(out)
        })
    }
}

#[cfg(feature = "sim")]
pub use self::in_process::SimTransport;

#[cfg(feature = "sim")]
mod in_process {
    use std::net::{IpAddr, Ipv4Addr};

    use bytes::Bytes;
    use headroom_core::governor::BoxFuture;

    use super::{Transport, TransportError};

    /// The simulator's handler, called in-process on the shared clock: no sockets, fully
    /// deterministic under a paused tokio clock.
    #[derive(Debug, Clone)]
    pub struct SimTransport {
        sim: headroom_sim::Simulator,
        peer: IpAddr,
    }

    impl SimTransport {
        /// Requests appear to come from 127.0.0.1.
        pub fn new(sim: headroom_sim::Simulator) -> Self {
            Self::from_peer(sim, IpAddr::V4(Ipv4Addr::LOCALHOST))
        }

        /// Requests appear to come from `peer` (unauthenticated quotas are per IP).
        pub fn from_peer(sim: headroom_sim::Simulator, peer: IpAddr) -> Self {
            Self { sim, peer }
        }
    }

    impl Transport for SimTransport {
        fn send(
            &self,
            request: http::Request<Bytes>,
        ) -> BoxFuture<'_, Result<http::Response<Bytes>, TransportError>> {
            Box::pin(async move { Ok(self.sim.handle(request, self.peer).await) })
        }
    }
}
