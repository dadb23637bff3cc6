//! `headroom enrich` against the in-process simulator: the enrichment rows of the fixture
//! scenario matrix, after one ingest of the default page.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;

use headroom_core::Governor;
use headroom_core::clock::{SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::GovernorConfig;
use headroom_github::feed::enrich::{EnrichOptions, EnrichReport, EnrichSettings, Enricher};
use headroom_github::feed::poll::{PollOutcome, PollSettings, Poller};
use headroom_http::transport::SimTransport;
use headroom_http::{Client, ClientParts, UrlPolicy};
use headroom_sim::{Scenario, SimConfig, Simulator};
use headroom_store::feed_state::{EnrichmentCounts, EntityKind, Lane, open_feed};

const API: &str = "http://127.0.0.1:7000";

struct Rig {
    enricher: Enricher,
    sim: Simulator,
    _dir: tempfile::TempDir,
}

async fn rig(scenario: Scenario) -> Rig {
    let clock = TokioClock::anchored_at(Timestamp::from_second(1_800_000_000).expect("valid"));
    let mut config = SimConfig::default().with_scenario(scenario);
    config.public_base_url = API.to_owned();
    let sim = Simulator::new(config, clock).expect("simulator");
    let governor = Governor::in_memory(
        GovernorConfig {
            ceiling: 1,
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
    parts.config.jitter_seed = Some(5);
    let dir = tempfile::tempdir().expect("tmp");
    let (store, state) = open_feed(dir.path().join("h.db").to_str().expect("utf-8"))
        .await
        .expect("open");
    let poller = Poller {
        store,
        state,
        client: Client::new(parts),
        credential: None,
        clock,
        settings: PollSettings::default(),
    };
    let first = poller.poll_once(false).await.expect("poll");
    assert!(matches!(first, PollOutcome::Completed { .. }), "{first:?}");
    let mut settings = EnrichSettings::default();
    settings.search.pacing = SignedDuration::ZERO;
    Rig {
        enricher: Enricher { poller, settings },
        sim,
        _dir: dir,
    }
}

async fn counts(r: &Rig, kind: EntityKind) -> EnrichmentCounts {
    r.enricher
        .poller
        .state
        .enrichment_counts(kind)
        .await
        .expect("counts")
}

fn requests_to(sim: &Simulator, prefix: &str) -> usize {
    sim.request_log()
        .iter()
        .filter(|e| e.path.starts_with(prefix))
        .count()
}

async fn run(r: &Rig, options: EnrichOptions) -> EnrichReport {
    r.enricher.run(options).await.expect("enrich")
}

#[tokio::test]
async fn default_serves_six_rows_in_four_requests() {
    let r = rig(Scenario::Default).await;
    let report = run(
        &r,
        EnrichOptions {
            limit: Some(6),
            ..EnrichOptions::default()
        },
    )
    .await;
    assert_eq!(
        (
            report.requests,
            report.search_batches,
            report.detail_requests
        ),
        (4, 2, 2)
    );
    assert_eq!((report.applied, report.terminal), (4, 2));
    for kind in [EntityKind::Actor, EntityKind::Repository] {
        let c = counts(&r, kind).await;
        assert_eq!((c.complete, c.permanent_failure, c.pending), (2, 1, 0));
    }
    // Nothing left: a second run sends nothing.
    let again = run(&r, EnrichOptions::default()).await;
    assert_eq!(again.requests, 0);
    assert_eq!(requests_to(&r.sim, "/search/"), 2);
}

#[tokio::test]
async fn limit_counts_requests_and_stage_restricts_the_lane() {
    let r = rig(Scenario::Default).await;
    let report = run(
        &r,
        EnrichOptions {
            limit: Some(1),
            ..EnrichOptions::default()
        },
    )
    .await;
    assert_eq!(report.requests, 1);
    let report = run(
        &r,
        EnrichOptions {
            lane: Some(Lane::Batch),
            ..EnrichOptions::default()
        },
    )
    .await;
    assert_eq!((report.search_batches, report.detail_requests), (1, 0));
    let report = run(
        &r,
        EnrichOptions {
            lane: Some(Lane::Detail),
            class: Some(EntityKind::Actor),
            ..EnrichOptions::default()
        },
    )
    .await;
    assert_eq!((report.search_batches, report.detail_requests), (0, 1));
    assert_eq!(
        counts(&r, EntityKind::Repository).await.permanent_failure,
        0
    );
}

#[tokio::test]
async fn search_complete_needs_no_fallback() {
    let r = rig(Scenario::SearchComplete).await;
    let report = run(&r, EnrichOptions::default()).await;
    assert_eq!(
        (report.requests, report.detail_requests, report.applied),
        (2, 0, 6)
    );
}

#[tokio::test]
async fn a_renamed_repository_is_refused_by_search_and_resolved_by_detail() {
    let r = rig(Scenario::SearchRenamedRepository).await;
    let report = run(
        &r,
        EnrichOptions {
            lane: Some(Lane::Batch),
            class: Some(EntityKind::Repository),
            ..EnrichOptions::default()
        },
    )
    .await;
    assert_eq!(report.search_batches, 1);
    assert!(report.fallbacks_admitted >= 1, "{report:?}");
    let c = counts(&r, EntityKind::Repository).await;
    assert!(
        c.complete <= 2,
        "the renamed one is not applied from search: {c:?}"
    );
}

#[tokio::test]
async fn incomplete_results_still_apply_what_matched() {
    let r = rig(Scenario::SearchIncompleteResults).await;
    let report = run(
        &r,
        EnrichOptions {
            lane: Some(Lane::Batch),
            ..EnrichOptions::default()
        },
    )
    .await;
    assert_eq!(report.applied, 4);
    assert_eq!(report.fallbacks_admitted, 2);
}

#[tokio::test]
async fn a_malformed_envelope_fails_the_batch_and_applies_nothing() {
    let r = rig(Scenario::SearchMalformed).await;
    let report = run(
        &r,
        EnrichOptions {
            lane: Some(Lane::Batch),
            ..EnrichOptions::default()
        },
    )
    .await;
    assert_eq!(report.applied, 0);
    assert_eq!(report.retries, 6, "every member rescheduled");
    assert_eq!(counts(&r, EntityKind::Actor).await.retryable_failure, 3);
}

#[tokio::test]
async fn search_rate_limited_defers_and_leaves_core_alone() {
    let r = rig(Scenario::SearchRateLimited).await;
    let before = r.enricher.poller.core_ledger().await.expect("ledger");
    let report = run(
        &r,
        EnrichOptions {
            lane: Some(Lane::Batch),
            ..EnrichOptions::default()
        },
    )
    .await;
    assert_eq!(report.applied, 0);
    assert!(
        report
            .deferrals
            .iter()
            .any(|(reason, _)| reason == "search_blocked"),
        "{report:?}"
    );
    assert_eq!(
        counts(&r, EntityKind::Actor).await.pending,
        3,
        "deferral is not failure"
    );
    let after = r.enricher.poller.core_ledger().await.expect("ledger");
    assert_eq!(before, after, "the core ledger is untouched");
}

#[tokio::test]
async fn a_redirecting_repository_is_followed_and_debited_twice() {
    let r = rig(Scenario::RedirectingRepository).await;
    let report = run(
        &r,
        EnrichOptions {
            class: Some(EntityKind::Repository),
            ..EnrichOptions::default()
        },
    )
    .await;
    assert_eq!(report.detail_requests, 1);
    assert_eq!(
        report.requests, 3,
        "one batch, the detail request and its hop"
    );
    assert_eq!(counts(&r, EntityKind::Repository).await.complete, 3);
    let ledger = r
        .enricher
        .poller
        .core_ledger()
        .await
        .expect("ledger")
        .expect("row");
    assert_eq!(ledger.enrichment_used, 2);
}

#[tokio::test]
async fn a_hostile_redirect_is_refused_and_the_source_stays_in_service() {
    let r = rig(Scenario::HostileRedirect).await;
    let report = run(
        &r,
        EnrichOptions {
            class: Some(EntityKind::Repository),
            ..EnrichOptions::default()
        },
    )
    .await;
    assert_eq!(report.detail_requests, 1);
    assert_eq!(report.retries, 1, "the entity records the failure");
    assert_eq!(
        requests_to(&r.sim, "/repositories/"),
        0,
        "the second hop is never sent"
    );
    let c = counts(&r, EntityKind::Repository).await;
    assert_eq!(c.retryable_failure, 1);
}
