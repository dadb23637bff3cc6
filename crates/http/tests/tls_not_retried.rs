//! A server certificate the client does not trust (the simulator's self-signed one, served on
//! 127.0.0.1) is a certificate error, said so, and not retried: it would fail the same way.
//! The live transport is wrapped to count the round trips it carries.

#![cfg(feature = "sim")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use headroom_core::Governor;
use headroom_core::clock::TokioClock;
use headroom_core::governor::{BoxFuture, GovernorConfig};
use headroom_http::{
    ApiError, ApiRequest, CERTIFICATE_NOT_TRUSTED, Client, ClientParts, LiveConfig, LiveTransport,
    Transport, TransportError, UrlPolicy,
};
use headroom_sim::{SimConfig, Simulator, TlsConfig};

/// The live transport, counting what it is asked to carry.
#[derive(Debug)]
struct Counting {
    live: LiveTransport,
    sent: AtomicUsize,
}

impl Transport for Counting {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, TransportError>> {
        self.sent.fetch_add(1, Ordering::SeqCst);
        self.live.send(request)
    }
}

/// The simulator over HTTPS with a fresh self-signed certificate: its URL and the PEM.
async fn tls_sim(dir: &std::path::Path) -> (String, Vec<u8>) {
    let clock = TokioClock::system();
    let sim = Simulator::new(SimConfig::default(), clock).expect("valid simulator");
    let cert = TlsConfig::self_signed(dir).expect("a certificate");
    let pem = std::fs::read(&cert.cert_path).expect("cert.pem");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(headroom_sim::serve(
        sim,
        listener,
        Some(cert.tls),
        std::future::pending(),
    ));
    (format!("https://127.0.0.1:{port}"), pem)
}

fn client(api: &str, ca_bundle: Option<Vec<u8>>) -> (Client, Arc<Counting>) {
    let clock = TokioClock::system();
    let live = LiveTransport::new(&LiveConfig {
        ca_bundle,
        ..LiveConfig::default()
    })
    .expect("a client");
    let transport = Arc::new(Counting {
        live,
        sent: AtomicUsize::new(0),
    });
    let governor =
        Governor::in_memory(GovernorConfig::default(), Arc::new(clock)).expect("valid governor");
    let policy = UrlPolicy::for_api_url(api).expect("loopback API");
    let mut parts = ClientParts::new(policy, governor, transport.clone(), clock);
    parts.config.jitter_seed = Some(3);
    (Client::new(parts), transport)
}

#[tokio::test]
async fn a_certificate_the_client_does_not_trust_is_said_so_and_not_retried() {
    let dir = std::env::temp_dir().join(format!("headroom-tls-not-retried-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (api, pem) = tls_sim(&dir).await;

    let (untrusting, carried) = client(&api, None);
    let error = untrusting
        .send(ApiRequest::get("/rate_limit"))
        .await
        .expect_err("the certificate is self-signed");
    assert!(matches!(error, ApiError::Certificate(_)), "{error:?}");
    assert!(
        error.to_string().starts_with(CERTIFICATE_NOT_TRUSTED),
        "{error}"
    );
    assert!(!error.is_transient(), "{error:?}");
    assert_eq!(carried.sent.load(Ordering::SeqCst), 1, "retried: {error}");

    // Trusting the simulator's certificate, the same request is answered.
    let (trusting, _) = client(&api, Some(pem));
    let answer = trusting.send(ApiRequest::get("/rate_limit")).await;
    assert!(answer.is_ok(), "{answer:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
