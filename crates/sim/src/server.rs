//! The handler over HTTP/1.1 (and HTTPS) on a listener the caller bound, normally loopback.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, Uri};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;

use crate::SimFuture;
use crate::body_faults::{BodyFault, SimBody};
use crate::error::SimError;
use crate::sim::Simulator;

/// A certificate chain and private key, PEM-encoded.
#[derive(Clone)]
pub struct TlsConfig {
    /// Certificate chain (PEM).
    pub cert_pem: Vec<u8>,
    /// Private key (PEM).
    pub key_pem: Vec<u8>,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("TlsConfig")
            .field("cert_pem_bytes", &self.cert_pem.len())
            .finish_non_exhaustive()
    }
}

/// Where a generated self-signed pair was written.
#[derive(Debug, Clone)]
pub struct GeneratedCert {
    /// The TLS configuration.
    pub tls: TlsConfig,
    /// The certificate file (give it to clients as their trusted CA).
    pub cert_path: PathBuf,
    /// The key file.
    pub key_path: PathBuf,
}

impl TlsConfig {
    /// Reads a certificate chain and key from PEM files.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<TlsConfig, SimError> {
        let read = |p: &Path| {
            std::fs::read(p).map_err(|source| SimError::Io {
                action: "reading",
                path: p.to_path_buf(),
                source,
            })
        };
        Ok(TlsConfig {
            cert_pem: read(cert)?,
            key_pem: read(key)?,
        })
    }

    /// Generates a self-signed certificate for `localhost` and `127.0.0.1` and writes
    /// `cert.pem` and `key.pem` into `dir`.
    pub fn self_signed(dir: &Path) -> Result<GeneratedCert, SimError> {
        let names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
        let generated =
            rcgen::generate_simple_self_signed(names).map_err(|e| SimError::Tls(e.to_string()))?;
        let tls = TlsConfig {
            cert_pem: generated.cert.pem().into_bytes(),
            key_pem: generated.signing_key.serialize_pem().into_bytes(),
        };
        let cert_path = dir.join("cert.pem");
        let key_path = dir.join("key.pem");
        for (path, bytes) in [(&cert_path, &tls.cert_pem), (&key_path, &tls.key_pem)] {
            std::fs::write(path, bytes).map_err(|source| SimError::Io {
                action: "writing",
                path: path.clone(),
                source,
            })?;
        }
        Ok(GeneratedCert {
            tls,
            cert_path,
            key_path,
        })
    }

    fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, SimError> {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&self.cert_pem)
            .collect::<Result<_, _>>()
            .map_err(|e| SimError::Tls(format!("reading the certificate: {e}")))?;
        if certs.is_empty() {
            return Err(SimError::Tls("no certificate in the PEM data".to_owned()));
        }
        let key = PrivateKeyDer::from_pem_slice(&self.key_pem)
            .map_err(|e| SimError::Tls(format!("reading the private key: {e}")))?;
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| SimError::Tls(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| SimError::Tls(e.to_string()))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

/// The largest request body accepted (GitHub refuses large payloads too).
const MAX_BODY: usize = 25 * 1024 * 1024;

async fn answer(
    sim: Simulator,
    req: Request<Incoming>,
    peer: SocketAddr,
    local: SocketAddr,
    scheme: &'static str,
) -> Result<Response<SimBody>, std::convert::Infallible> {
    let (mut parts, body) = req.into_parts();
    let body = match http_body_util::Limited::new(body, MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            let mut resp = Response::new(SimBody::new(
                Bytes::from_static(br#"{"message":"Payload too large"}"#),
                None,
                sim.clock(),
            ));
            *resp.status_mut() = http::StatusCode::PAYLOAD_TOO_LARGE;
            return Ok(resp);
        }
    };
    // Make the URI absolute, so bodies and Link headers point back at this server.
    let authority = parts
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .unwrap_or_else(|| local.to_string());
    let pq = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "/".to_owned());
    if let Ok(uri) = format!("{scheme}://{authority}{pq}").parse::<Uri>() {
        parts.uri = uri;
    }
    let resp = sim
        .handle_on_the_wire(Request::from_parts(parts, body), peer.ip())
        .await;
    let (parts, body) = resp.into_parts();
    let fault = parts.extensions.get::<BodyFault>().copied();
    Ok(Response::from_parts(
        parts,
        SimBody::new(body, fault, sim.clock()),
    ))
}

/// Serves the simulator on `listener` until `shutdown` completes. With `tls`, every
/// connection is HTTPS.
pub fn serve<'a>(
    sim: Simulator,
    listener: TcpListener,
    tls: Option<TlsConfig>,
    shutdown: impl Future<Output = ()> + Send + 'a,
) -> SimFuture<'a, Result<(), SimError>> {
    // Only this line is compiled per caller; the server itself is compiled once, here.
    serve_until(sim, listener, tls, Box::pin(shutdown))
}

fn serve_until<'a>(
    sim: Simulator,
    listener: TcpListener,
    tls: Option<TlsConfig>,
    shutdown: SimFuture<'a, ()>,
) -> SimFuture<'a, Result<(), SimError>> {
    Box::pin(serve_loop(sim, listener, tls, shutdown))
}

async fn serve_loop(
    sim: Simulator,
    listener: TcpListener,
    tls: Option<TlsConfig>,
    mut shutdown: SimFuture<'_, ()>,
) -> Result<(), SimError> {
    let acceptor = match &tls {
        Some(t) => Some(tokio_rustls::TlsAcceptor::from(t.server_config()?)),
        None => None,
    };
    let local = listener.local_addr().map_err(|source| SimError::Io {
        action: "reading the listener's address",
        path: PathBuf::from("<listener>"),
        source,
    })?;
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                // A failed accept (too many open files, a reset) concerns one connection;
                // pause briefly so a persistent failure does not spin.
                Err(_) => {
                    sim.clock().sleep(headroom_core::clock::SignedDuration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let sim = sim.clone();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            match acceptor {
                Some(acceptor) => {
                    let Ok(stream) = acceptor.accept(stream).await else {
                        return;
                    };
                    let service =
                        service_fn(move |req| answer(sim.clone(), req, peer, local, "https"));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                }
                None => {
                    let service =
                        service_fn(move |req| answer(sim.clone(), req, peer, local, "http"));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                }
            }
        });
    }
}
