//! An organization sync against GitHub Enterprise Server with rate limiting off (its
//! default), through the in-process simulator: no response carries a rate-limit header and
//! `/rate_limit` is a 404. The sync must finish without asking `/rate_limit`, the governor
//! must hold every bucket as unknown — granting up to the identity's in-flight ceiling and no
//! further, while other work of the same identity competes — and nothing may be refused.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use headroom_core::QuotaKey;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::{GovernorConfig, LimitReporting, WaitReason};
use headroom_github::org;
use headroom_http::{ApiError, ApiRequest, Credential};
use headroom_sim::{Density, SimConfig, Simulator, TokenSpec};
use headroom_store::NewSyncRun;
use headroom_sync::{RunOutcome, Runner, RunnerConfig};

mod org_rig;
use org_rig::API;
const TOKEN: &str = "ghp_ghessynctoken0000000000000000000001";
const CEILING: u32 = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_finishes_on_an_enterprise_server_without_rate_limits() {
    let clock = TokioClock::anchored_at(Timestamp::from_second(1_800_000_000).expect("valid"));
    let mut config = SimConfig::default()
        .with_org("acme", 3)
        .with_token(TokenSpec::user(TOKEN, "alice"))
        .with_seed(3)
        .without_rate_limiting();
    config.public_base_url = API.to_owned();
    config.density = Density::SPARSE;
    // Latency keeps requests in flight long enough to meet; the server's own concurrency
    // limit is the ceiling, so one request past it would come back a secondary 403.
    config.faults.latency = SignedDuration::from_millis(15);
    config.concurrency_limit = CEILING;
    let sim = Simulator::new(config, clock).expect("valid simulator");

    let (client, governor) = org_rig::client(
        &sim,
        clock,
        TOKEN,
        "alice",
        GovernorConfig {
            ceiling: CEILING,
            ..GovernorConfig::default()
        },
    )
    .await;
    let (store, _dir) = org_rig::sqlite_store().await;
    let key = QuotaKey::user("127.0.0.1", "alice");
    let id = store
        .create_sync_run(&NewSyncRun {
            credential: None,
            kind: "org".into(),
            target: "acme".into(),
            key: key.clone(),
            requested_stages: None,
            created_at: clock.now(),
        })
        .await
        .expect("run")
        .id;
    let runner = Runner::new(
        org::stages(),
        Some(org::REPOSITORY_SOURCE),
        store.clone(),
        client.clone(),
        Some(Credential::new(TOKEN)),
        clock,
        RunnerConfig::default(),
    )
    .expect("valid graph");

    // Other reads of the same identity compete for its slots all along.
    let readers_done = Arc::new(AtomicU32::new(0));
    let mut readers = Vec::new();
    for _ in 0..12 {
        let (client, done) = (client.clone(), readers_done.clone());
        readers.push(tokio::spawn(async move {
            for _ in 0..6 {
                loop {
                    let request = ApiRequest::get("/users/alice")
                        .credential(Some(&Credential::new(TOKEN)))
                        .route(headroom_core::route::REST);
                    match client.send(request).await {
                        Ok(r) => {
                            assert_eq!(r.status.as_u16(), 200);
                            break;
                        }
                        // The in-flight ceiling: a short wait in place, as any caller does.
                        Err(ApiError::RateLimited { until, reason, .. }) => {
                            assert!(
                                matches!(
                                    reason.wait_reason(),
                                    Some(WaitReason::InFlightCeiling { .. })
                                ),
                                "{reason}"
                            );
                            clock.sleep_until(until).await;
                        }
                        Err(e) => panic!("a competing read failed: {e}"),
                    }
                }
            }
            done.fetch_add(1, Ordering::SeqCst);
        }));
    }
    let mut outcome = None;
    for _ in 0..20 {
        match runner.run(id).await.expect("run") {
            RunOutcome::Done { summary } => {
                outcome = Some(summary);
                break;
            }
            // Pacing only (the points limiters): nothing here is a quota window.
            RunOutcome::Hibernating { until, reason } => {
                assert!(!reason.contains("exhausted"), "{reason}");
                clock.sleep_until(until).await;
            }
            RunOutcome::Failed { reason, .. } => panic!("run failed: {reason}"),
        }
    }
    let summary = outcome.expect("the run finished");
    for r in readers {
        r.await.expect("a reader finished");
    }
    assert_eq!(readers_done.load(Ordering::SeqCst), 12);
    assert_eq!(store.count_rows("repositories").await.expect("count"), 3);
    assert!(store.count_rows("workflow_runs").await.expect("count") > 0);
    eprintln!("{summary:?}");

    let log = sim.request_log();
    assert!(log.len() > 100, "{} requests", log.len());
    assert!(
        !log.iter().any(|e| e.path.starts_with("/rate_limit")),
        "nothing asks /rate_limit"
    );
    assert!(
        log.iter().all(|e| e.bucket.is_none()),
        "no answer carried a bucket"
    );
    let refused: Vec<_> = log.iter().filter(|e| e.status >= 400).collect();
    assert!(refused.is_empty(), "refused: {refused:?}");
    // `in_flight` is what was in flight when a request arrived, itself excluded.
    let peak = log.iter().map(|e| e.in_flight + 1).max().unwrap_or(0);
    assert!(peak <= CEILING, "{peak} in flight, ceiling {CEILING}");
    assert_eq!(peak, CEILING, "the competition reached the ceiling");

    let snapshot = governor.snapshot(&key).await.expect("snapshot");
    for bucket in ["core", "graphql"] {
        let b = snapshot
            .buckets
            .iter()
            .find(|b| b.state.bucket.as_str() == bucket)
            .unwrap_or_else(|| panic!("{bucket} was used"));
        assert_eq!(b.limits, LimitReporting::NotReported, "{bucket}");
        assert!(!b.known && b.state.remaining.is_none(), "{bucket}");
    }
}
