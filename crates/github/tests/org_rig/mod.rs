//! What the organization-sync tests and the makespan benchmark share: an exit door to the
//! in-process simulator whose credential's owner is already known (so no discovery request
//! shows in the counts), and a store in a temporary SQLite file.

#![allow(dead_code, clippy::expect_used)]

use std::sync::Arc;

use headroom_core::clock::TokioClock;
use headroom_core::governor::GovernorConfig;
use headroom_core::{Governor, Subject};
use headroom_http::sinks::{CredentialRegistry, MemoryCredentials};
use headroom_http::transport::SimTransport;
use headroom_http::{Client, ClientParts, Credential, UrlPolicy};
use headroom_sim::Simulator;
use headroom_store::{SqliteStore, Store};

/// The loopback API URL the simulator's links name.
pub const API: &str = "http://127.0.0.1:7000";

/// A client to `sim` through an in-memory governor with `config`, spending `token`, whose
/// owner `login` is recorded beforehand. Returns the governor too, for tests that watch it.
pub async fn client(
    sim: &Simulator,
    clock: TokioClock,
    token: &str,
    login: &str,
    config: GovernorConfig,
) -> (Client, Governor) {
    let governor = Governor::in_memory(config, Arc::new(clock)).expect("governor");
    (
        client_over(sim, clock, token, login, governor.clone()).await,
        governor,
    )
}

/// A client to `sim` through `governor` (the store's own, for a run as the binary makes it),
/// spending `token`, whose owner `login` is recorded beforehand.
pub async fn client_over(
    sim: &Simulator,
    clock: TokioClock,
    token: &str,
    login: &str,
    governor: Governor,
) -> Client {
    let credentials = Arc::new(MemoryCredentials::default());
    credentials
        .record(
            "127.0.0.1",
            Credential::new(token).fingerprint(),
            &Subject::User(login.into()),
        )
        .await;
    let mut parts = ClientParts::new(
        UrlPolicy::for_api_url(API).expect("loopback API"),
        governor,
        Arc::new(SimTransport::new(sim.clone())),
        clock,
    );
    parts.credentials = credentials;
    parts.config.jitter_seed = Some(5);
    Client::new(parts)
}

/// A fresh SQLite store; the directory goes with the guard.
pub async fn sqlite_store() -> (Arc<dyn Store>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("headroom.db");
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(path.to_str().expect("utf-8"))
            .await
            .expect("store"),
    );
    (store, dir)
}
