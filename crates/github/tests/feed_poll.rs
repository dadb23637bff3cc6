//! `headroom ingest`'s polling cycle against the in-process simulator (time skipped on tokio's
//! paused clock): the
//! fixture scenario matrix rows that concern polling, the five schedule components, and both
//! ledger behaviours a poll can meet — each on SQLite and on PostgreSQL.

#![allow(clippy::expect_used, clippy::unwrap_used)]

#[path = "../../store/tests/common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex};

use headroom_core::Governor;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::{BoxFuture, GovernorConfig};
use headroom_github::feed::poll::{
    CREDENTIAL_REJECTED, FEED_PATH, PollOutcome, PollSettings, Poller, SOURCE_TYPE,
    credential_rejected,
};
use headroom_http::sinks::{EtagStore, MemoryEtags};
use headroom_http::transport::SimTransport;
use headroom_http::{Client, ClientParts, Credential, UrlPolicy};
use headroom_sim::{Scenario, SimConfig, Simulator};
use headroom_store::Store;
use headroom_store::feed_state::{WindowStatus, open_feed};

use common::Fixture;

const API: &str = "http://127.0.0.1:7000";

struct Rig {
    poller: Poller,
    sim: Simulator,
    clock: TokioClock,
}

async fn rig(scenario: Scenario, f: &Fixture, settings: PollSettings) -> Rig {
    rig_with_etags(scenario, f, settings, Arc::new(MemoryEtags::default())).await
}

async fn rig_with_etags(
    scenario: Scenario,
    f: &Fixture,
    settings: PollSettings,
    etags: Arc<dyn EtagStore>,
) -> Rig {
    let clock = TokioClock::anchored_at(Timestamp::from_second(1_800_000_000).expect("valid"));
    let mut config = SimConfig::default().with_scenario(scenario);
    config.public_base_url = API.to_owned();
    let sim = Simulator::new(config, clock).expect("simulator");
    let governor =
        Governor::in_memory(GovernorConfig::default(), Arc::new(clock)).expect("governor");
    let mut parts = ClientParts::new(
        UrlPolicy::for_api_url(API).expect("loopback API"),
        governor,
        Arc::new(SimTransport::new(sim.clone())),
        clock,
    );
    parts.config.jitter_seed = Some(3);
    parts.etags = etags;
    let (store, state) = open_feed(&f.target).await.expect("open");
    Rig {
        poller: Poller {
            store,
            state,
            client: Client::new(parts),
            credential: None,
            clock,
            settings,
        },
        sim,
        clock,
    }
}

/// Lets `secs` of simulated time pass: paused only while sleeping, because SQLite's pool
/// times out on a paused clock while its worker thread runs a query.
async fn skip(r: &Rig, secs: i64) {
    tokio::time::pause();
    r.clock.sleep(SignedDuration::from_secs(secs)).await;
    tokio::time::resume();
}

fn completed(outcome: &PollOutcome) -> (headroom_github::feed::PageCounts, u64, String) {
    match outcome {
        PollOutcome::Completed {
            counts,
            pages_fetched,
            stop_reason,
            ..
        } => (*counts, *pages_fetched, stop_reason.clone()),
        other => panic!("expected a completed poll, got {other:?}"),
    }
}

fn deferred(outcome: &PollOutcome) -> (Option<Timestamp>, String) {
    match outcome {
        PollOutcome::Deferred { until, reason, .. } => (*until, reason.clone()),
        other => panic!("expected a deferral, got {other:?}"),
    }
}

fn events_requests(sim: &Simulator) -> usize {
    sim.request_log()
        .iter()
        .filter(|e| e.path.starts_with("/events"))
        .count()
}

async fn default_then_cadence_then_floor_then_replay(f: &Fixture) {
    let r = rig(Scenario::Default, f, PollSettings::default()).await;
    let first = r.poller.poll_once(false).await.expect("poll");
    let (counts, pages, stop) = completed(&first);
    assert_eq!(
        (
            counts.events_received,
            counts.events_created,
            counts.events_quarantined,
            counts.events_ignored
        ),
        (8, 4, 3, 1)
    );
    assert_eq!((pages, stop.as_str()), (1, "no_next_link"));
    assert_eq!(events_requests(&r.sim), 1);

    // Inside the cadence window: deferred, and no request at all.
    let (until, reason) = deferred(&r.poller.poll_once(false).await.expect("poll"));
    assert_eq!(reason, "cadence_due_at");
    let until = until.expect("an instant");
    let now = r.clock.now();
    assert!(
        until > now + SignedDuration::from_secs(290)
            && until <= now + SignedDuration::from_secs(300)
    );
    // --force drops the cadence but not GitHub's 60 s floor.
    let (_, reason) = deferred(&r.poller.poll_once(true).await.expect("poll"));
    assert_eq!(reason, "poll_floor_until");
    assert_eq!(events_requests(&r.sim), 1);

    skip(&r, 61).await;
    let (counts, _, _) = completed(&r.poller.poll_once(true).await.expect("poll"));
    assert_eq!(counts.events_created, 0);
    assert_eq!(counts.duplicates_skipped, 4);
    assert_eq!(counts.events_quarantined, 3);
    assert_eq!(events_requests(&r.sim), 2);

    let ledger = r.poller.core_ledger().await.expect("read");
    let overview = r.poller.state.feed_overview().await.expect("overview");
    assert_eq!(overview.push_events, 4);
    assert_eq!(overview.pending_actors, 3);
    assert_eq!(overview.pending_repositories, 3);
    assert!(overview.latest_completed_run.is_some());
    let ledger = ledger.expect("the first poll bootstraps the window");
    assert_eq!(ledger.window_status, WindowStatus::Active);
    assert_eq!(ledger.poll_used, 2);
    assert_eq!(ledger.poll_allowance, 12);
    assert_eq!(ledger.limit, Some(60));
    assert_eq!(ledger.remaining, Some(58));
}

async fn paginated_walks_three_pages_and_absorbs_the_overlap(f: &Fixture) {
    let settings = PollSettings {
        lanes: headroom_core::lanes::CoreLaneConfig {
            max_pages_per_poll: 3,
            detail_allowance: 16,
            ..Default::default()
        },
        ..PollSettings::default()
    };
    let r = rig(Scenario::Paginated, f, settings).await;
    let (counts, pages, stop) = completed(&r.poller.poll_once(false).await.expect("poll"));
    assert_eq!(pages, 3);
    assert_eq!(counts.events_received, 11);
    assert_eq!(counts.events_created, 6);
    assert_eq!(counts.duplicates_skipped, 1);
    assert_eq!(counts.events_quarantined, 3);
    assert_eq!(stop, "empty_page");
}

async fn page_cap_stops_a_deeper_walk(f: &Fixture) {
    let settings = PollSettings {
        lanes: headroom_core::lanes::CoreLaneConfig {
            max_pages_per_poll: 2,
            ..Default::default()
        },
        ..PollSettings::default()
    };
    let r = rig(Scenario::Paginated, f, settings).await;
    let (counts, pages, stop) = completed(&r.poller.poll_once(false).await.expect("poll"));
    assert_eq!((pages, stop.as_str()), (2, "page_cap"));
    assert_eq!(counts.events_created, 6);
}

async fn paginated_final_page_stops_without_a_next_link(f: &Fixture) {
    let settings = PollSettings {
        lanes: headroom_core::lanes::CoreLaneConfig {
            max_pages_per_poll: 3,
            detail_allowance: 16,
            ..Default::default()
        },
        ..PollSettings::default()
    };
    let r = rig(Scenario::PaginatedFinalPage, f, settings).await;
    let (counts, pages, stop) = completed(&r.poller.poll_once(false).await.expect("poll"));
    assert_eq!((pages, stop.as_str()), (2, "no_next_link"));
    assert_eq!(counts.events_created, 4);
}

async fn transient_failure_succeeds_on_retry(f: &Fixture) {
    let r = rig(Scenario::TransientFailure, f, PollSettings::default()).await;
    let (counts, _, _) = completed(&r.poller.poll_once(false).await.expect("poll"));
    assert_eq!(counts.events_created, 4);
    assert_eq!(r.sim.count_status(500), 1);
}

async fn transient_failure_exhausted_backs_the_source_off(f: &Fixture) {
    let r = rig(
        Scenario::TransientFailureExhausted,
        f,
        PollSettings::default(),
    )
    .await;
    let outcome = r.poller.poll_once(false).await.expect("poll");
    assert!(matches!(outcome, PollOutcome::Failed { .. }), "{outcome:?}");
    let (until, reason) = deferred(&r.poller.poll_once(true).await.expect("poll"));
    // The floor was never set (no response), so the source's own backoff holds it.
    assert_eq!(reason, "retry_not_before_at");
    assert!(until.is_some_and(|u| u > r.clock.now()));
}

/// A token the provider refuses is a failed attempt, recorded on the source, never a quiet
/// deferral; a later success clears it.
async fn a_rejected_credential_fails_the_attempt_until_a_request_succeeds(f: &Fixture) {
    let mut r = rig(Scenario::Default, f, PollSettings::default()).await;
    r.poller.credential = Some(Credential::new("a-token-nobody-issued"));
    let outcome = r.poller.poll_once(false).await.expect("poll");
    let PollOutcome::Failed { error, .. } = &outcome else {
        panic!("expected a failed attempt, got {outcome:?}");
    };
    assert!(error.starts_with(CREDENTIAL_REJECTED), "{error}");
    assert!(!error.contains("a-token-nobody-issued"), "{error}");
    assert_eq!(events_requests(&r.sim), 0, "nothing sent past the identity");
    let now = r.clock.now();
    let source = r
        .poller
        .state
        .ensure_event_source(SOURCE_TYPE, FEED_PATH, now)
        .await
        .expect("source");
    assert_eq!(source.consecutive_failures, 1);
    assert!(credential_rejected(&source), "{source:?}");

    // The operator fixes the credential (here: none, the simulator's anonymous quota); past
    // the source's backoff the next attempt succeeds and the rejection is forgotten.
    r.poller.credential = None;
    skip(&r, 61).await;
    let (counts, _, _) = completed(&r.poller.poll_once(false).await.expect("poll"));
    assert_eq!(counts.events_created, 4);
    let source = r
        .poller
        .state
        .ensure_event_source(SOURCE_TYPE, FEED_PATH, r.clock.now())
        .await
        .expect("source");
    assert_eq!(source.consecutive_failures, 0);
    assert!(!credential_rejected(&source));
}

async fn rate_limited_sets_a_global_block(f: &Fixture) {
    let r = rig(Scenario::RateLimited, f, PollSettings::default()).await;
    let (until, reason) = deferred(&r.poller.poll_once(false).await.expect("poll"));
    assert_eq!(reason, "rate_limited");
    let until = until.expect("an instant");
    assert!(until > r.clock.now() + SignedDuration::from_secs(3000));
    let (_, reason) = deferred(&r.poller.poll_once(true).await.expect("poll"));
    assert_eq!(reason, "globally_blocked");
}

async fn secondary_rate_limited_blocks_globally_for_its_retry_after(f: &Fixture) {
    let r = rig(Scenario::SecondaryRateLimited, f, PollSettings::default()).await;
    let (until, reason) = deferred(&r.poller.poll_once(false).await.expect("poll"));
    assert_eq!(reason, "rate_limited");
    assert!(until.is_some_and(|u| u >= r.clock.now() + SignedDuration::from_secs(59)));
    let ledger = r.poller.core_ledger().await.expect("read").expect("row");
    assert_eq!(ledger.window_status, WindowStatus::GloballyBlocked);
    assert_eq!(ledger.consecutive_secondary_limits, 1);
}

/// GitHub's former wording of the secondary limit ("You have triggered an abuse detection
/// mechanism") blocks every lane and counts a strike, exactly as the current wording does.
async fn abuse_detection_wording_blocks_globally_as_a_secondary_limit(f: &Fixture) {
    let r = rig(Scenario::AbuseDetection, f, PollSettings::default()).await;
    let (until, reason) = deferred(&r.poller.poll_once(false).await.expect("poll"));
    assert_eq!(reason, "rate_limited");
    assert!(until.is_some_and(|u| u >= r.clock.now() + SignedDuration::from_secs(59)));
    let ledger = r.poller.core_ledger().await.expect("read").expect("row");
    assert_eq!(ledger.window_status, WindowStatus::GloballyBlocked);
    assert_eq!(ledger.consecutive_secondary_limits, 1);
}

async fn an_infeasible_formula_is_refused(f: &Fixture) {
    let settings = PollSettings {
        lanes: headroom_core::lanes::CoreLaneConfig {
            max_pages_per_poll: 5,
            ..Default::default()
        },
        ..PollSettings::default()
    };
    let r = rig(Scenario::Default, f, settings).await;
    assert!(r.poller.poll_once(false).await.is_err());
    assert_eq!(events_requests(&r.sim), 0);
}

/// ETags in memory that note, at each `put`, how many push events were stored by then.
#[derive(Debug)]
struct WitnessEtags {
    inner: MemoryEtags,
    store: Arc<dyn Store>,
    stored_at_put: Mutex<Vec<u64>>,
}

impl EtagStore for WitnessEtags {
    fn get<'a>(&'a self, fingerprint: &'a str, url: &'a str) -> BoxFuture<'a, Option<String>> {
        self.inner.get(fingerprint, url)
    }
    fn put<'a>(&'a self, fingerprint: &'a str, url: &'a str, etag: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let stored = self.store.count_rows("push_events").await.expect("count");
            self.stored_at_put.lock().expect("lock").push(stored);
            self.inner.put(fingerprint, url, etag).await;
        })
    }
}

/// A crash between the response and the page's commit must not leave an ETag behind: the
/// next poll would get a 304 and the page's events would never be offered again. So the
/// ETag is remembered only after the poll's pages are stored, and it is then used.
async fn the_etag_is_remembered_only_once_the_page_is_stored(f: &Fixture) {
    let witness = Arc::new(WitnessEtags {
        inner: MemoryEtags::default(),
        store: f.store.clone(),
        stored_at_put: Mutex::default(),
    });
    let r = rig_with_etags(
        Scenario::Default,
        f,
        PollSettings::default(),
        witness.clone(),
    )
    .await;
    let (counts, _, _) = completed(&r.poller.poll_once(false).await.expect("poll"));
    assert_eq!(counts.events_created, 4);
    assert_eq!(
        *witness.stored_at_put.lock().expect("lock"),
        vec![4],
        "remembered once, after the page's four push events were committed"
    );

    // Past the cadence: the unforced poll sends the ETag and the unchanged feed answers 304.
    skip(&r, 301).await;
    let (counts, pages, stop) = completed(&r.poller.poll_once(false).await.expect("poll"));
    assert_eq!((pages, stop.as_str()), (1, "not_modified"));
    assert_eq!(counts.events_received, 0);
    assert_eq!(events_requests(&r.sim), 2);
}

headroom_testkit::both_backends!(
    the_etag_is_remembered_only_once_the_page_is_stored,
    default_then_cadence_then_floor_then_replay,
    paginated_walks_three_pages_and_absorbs_the_overlap,
    page_cap_stops_a_deeper_walk,
    paginated_final_page_stops_without_a_next_link,
    transient_failure_succeeds_on_retry,
    transient_failure_exhausted_backs_the_source_off,
    a_rejected_credential_fails_the_attempt_until_a_request_succeeds,
    rate_limited_sets_a_global_block,
    secondary_rate_limited_blocks_globally_for_its_retry_after,
    abuse_detection_wording_blocks_globally_as_a_secondary_limit,
    an_infeasible_formula_is_refused,
);
