//! What recording quota readings costs the request path: the same REST GET sent through the
//! exit door over the in-process simulator, by a client whose readings go nowhere and by one
//! whose readings are written to an SQLite store as `headroom` writes them (one row per
//! bucket, with its per-process and per-minute summaries, at most once a second per identity
//! and only when the reading changed). Both run in one process, alternately, so the ratio
//! is what to read on a noisy machine.
//!
//! `cargo bench -p headroom-github --bench recording`. Target: recording costs under 1 % of
//! the request path.

#![allow(clippy::expect_used)]

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};

use headroom_core::clock::{Timestamp, TokioClock};
use headroom_core::governor::{BoxFuture, Governor, GovernorConfig, IdentitySnapshot};
use headroom_core::signal::Provider;
use headroom_http::credential::Credential;
use headroom_http::policy::UrlPolicy;
use headroom_http::request::ApiRequest;
use headroom_http::sinks::QuotaReadings;
use headroom_http::transport::SimTransport;
use headroom_http::{Client, ClientParts};
use headroom_sim::{SimConfig, Simulator, TokenSpec};
use headroom_store::quota_history::QuotaRecorder as _;
use headroom_store::{QuotaReading, SqliteStore};

const API: &str = "http://127.0.0.1:9";

/// Readings into the store, shaped as the binary shapes them (one per bucket).
#[derive(Debug)]
struct StoreReadings(SqliteStore);

impl QuotaReadings for StoreReadings {
    fn record(
        &self,
        provider: Provider,
        snapshot: IdentitySnapshot,
        at: Timestamp,
    ) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            for b in &snapshot.buckets {
                let s = &b.state;
                let reading = QuotaReading {
                    provider: headroom_store::provider_name(provider).to_owned(),
                    host: snapshot.key.host.to_string(),
                    subject: headroom_store::subject_label(&snapshot.key.subject),
                    bucket: s.bucket.to_string(),
                    limit: s.limit,
                    remaining: s.remaining,
                    used: s.used,
                    reset_at: s.reset_at,
                    in_flight: u64::from(s.in_flight),
                    waiting: u64::from(s.waiting),
                    blocked_until: s.blocked_until,
                    last_reason: None,
                    process_id: "bench".into(),
                    observed_at: at,
                };
                self.0
                    .record_quota_reading(&reading)
                    .await
                    .expect("a reading");
            }
        })
    }
}

fn client(sim: &Simulator, clock: TokioClock, readings: Option<Arc<dyn QuotaReadings>>) -> Client {
    let governor = Governor::in_memory(
        GovernorConfig {
            // No local points pacing: the bench sends as fast as the door lets it.
            rest_points: None,
            graphql_points: None,
            ..GovernorConfig::default()
        },
        Arc::new(clock),
    )
    .expect("governor");
    let mut parts = ClientParts::new(
        UrlPolicy::for_api_url(API).expect("loopback API"),
        governor,
        Arc::new(SimTransport::new(sim.clone())),
        clock,
    );
    if let Some(readings) = readings {
        parts.readings = readings;
    }
    Client::new(parts)
}

fn recording(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let clock = TokioClock::system();
    let mut config = SimConfig::default();
    config.public_base_url = API.to_owned();
    config.tokens = vec![TokenSpec::user("t1", "alice")];
    config.core_limit = 1_000_000_000;
    config.rest_points_per_minute = 1_000_000_000;
    config.log_capacity = 1_000;
    let sim = Simulator::new(config, clock).expect("simulator");
    let dir = tempfile::tempdir().expect("tmp");
    let store = runtime
        .block_on(SqliteStore::open(
            dir.path().join("r.db").to_str().expect("utf-8"),
        ))
        .expect("open");
    let plain = client(&sim, clock, None);
    let recorded = client(&sim, clock, Some(Arc::new(StoreReadings(store.clone()))));
    let token = Credential::new("t1");
    let request = || ApiRequest::get("/user").credential(Some(&token));
    let mut group = c.benchmark_group("request_path");
    group.bench_function("send_without_recording", |b| {
        b.iter(|| runtime.block_on(plain.send(request())).expect("sent"))
    });
    group.bench_function("send_with_recording", |b| {
        b.iter(|| runtime.block_on(recorded.send(request())).expect("sent"))
    });
    group.finish();
    let rows = runtime
        .block_on(headroom_store::StoreRead::count_rows(
            &store,
            "quota_readings",
        ))
        .expect("count");
    eprintln!("readings written by the recording client: {rows}");
}

criterion_group!(benches, recording);
criterion_main!(benches);
