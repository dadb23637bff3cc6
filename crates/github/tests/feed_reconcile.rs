//! The reconciler rebuilds pending enrichment work from committed rows after the kinds of
//! loss a crash causes — on SQLite and PostgreSQL.

#![allow(clippy::expect_used, clippy::unwrap_used)]

#[path = "../../store/tests/common/mod.rs"]
mod common;

use std::sync::Arc;

use headroom_core::Governor;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::GovernorConfig;
use headroom_github::feed::enrich::{EnrichOptions, EnrichSettings, Enricher};
use headroom_github::feed::poll::{PollOutcome, PollSettings, Poller, SOURCE_TYPE};
use headroom_github::feed::reconcile::reconcile;
use headroom_http::transport::SimTransport;
use headroom_http::{Client, ClientParts, UrlPolicy};
use headroom_sim::{Scenario, SimConfig, Simulator};
use headroom_store::feed_state::{EntityKind, Lane, open_feed};
use sqlx::Connection as _;

use common::Fixture;

const API: &str = "http://127.0.0.1:7000";

async fn poller(f: &Fixture) -> (Poller, TokioClock) {
    let clock = TokioClock::anchored_at(Timestamp::from_second(1_800_000_000).expect("valid"));
    let mut config = SimConfig::default().with_scenario(Scenario::Default);
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
    let parts = ClientParts::new(
        UrlPolicy::for_api_url(API).expect("loopback API"),
        governor,
        Arc::new(SimTransport::new(sim)),
        clock,
    );
    let (store, state) = open_feed(&f.target).await.expect("open");
    let poller = Poller {
        store,
        state,
        client: Client::new(parts),
        credential: None,
        clock,
        settings: PollSettings::default(),
    };
    (poller, clock)
}

async fn skip(clock: &TokioClock, secs: i64) {
    tokio::time::pause();
    clock.sleep(SignedDuration::from_secs(secs)).await;
    tokio::time::resume();
}

/// Runs statements the way a crash or a careless operator would leave the database: behind
/// the store's back, with foreign keys not enforced.
async fn tamper(f: &Fixture, statements: &[&str]) {
    if f.target.starts_with("postgres") {
        let mut conn = sqlx::PgConnection::connect(&f.target)
            .await
            .expect("connect");
        sqlx::query("SET session_replication_role = replica")
            .execute(&mut conn)
            .await
            .expect("disable triggers");
        for s in statements {
            sqlx::query(sqlx::AssertSqlSafe(*s))
                .execute(&mut conn)
                .await
                .expect("tamper");
        }
        conn.close().await.expect("close");
    } else {
        let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", f.target))
            .await
            .expect("connect");
        sqlx::query("PRAGMA foreign_keys = OFF")
            .execute(&mut conn)
            .await
            .expect("pragma");
        for s in statements {
            sqlx::query(sqlx::AssertSqlSafe(*s))
                .execute(&mut conn)
                .await
                .expect("tamper");
        }
        conn.close().await.expect("close");
    }
}

async fn lost_work_is_found_again(f: &Fixture) {
    let (poller, clock) = poller(f).await;
    let first = poller.poll_once(false).await.expect("poll");
    assert!(matches!(first, PollOutcome::Completed { .. }), "{first:?}");
    let state = poller.state.clone();
    let now = clock.now();

    // A worker claims every actor into a batch and dies before the request.
    let claimed = state
        .claim(
            EntityKind::Actor,
            Lane::Batch,
            10,
            now,
            "dead-worker",
            now + SignedDuration::from_secs(600),
        )
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 3);
    // A poller dies holding the source and leaves its run open.
    let source = state
        .event_source(SOURCE_TYPE)
        .await
        .expect("read")
        .expect("source");
    assert!(
        state
            .try_lock_event_source(
                source.id,
                "dead-poller",
                now,
                now + SignedDuration::from_secs(120)
            )
            .await
            .expect("lock")
    );
    state
        .start_ingestion_run("dead-run", Some(source.id), "feed", None, now)
        .await
        .expect("run");
    // Queue state lost: one repository's row is gone, another rests where no lane looks.
    tamper(
        f,
        &[
            "DELETE FROM repositories WHERE github_id = 880003",
            "UPDATE repositories SET enrichment_stage = 'contract_complete' WHERE github_id = 880002",
        ],
    )
    .await;
    assert_eq!(
        state
            .enrichment_counts(EntityKind::Repository)
            .await
            .expect("counts")
            .pending,
        2,
        "one repository row is missing"
    );

    // Until the leases lapse nothing is claimable for actors: the work looks lost.
    assert!(
        !state
            .has_claimable(EntityKind::Actor, Lane::Batch, now)
            .await
            .expect("q")
    );
    skip(&clock, 601).await;

    let sweep = reconcile(&poller, SignedDuration::from_secs(300))
        .await
        .expect("sweep");
    let found = sweep.found;
    assert_eq!(found.repositories_restored, 1, "{found:?}");
    assert_eq!(found.actors_restored, 0, "{found:?}");
    assert_eq!(found.requeued, 1, "{found:?}");
    assert_eq!(found.leases_reclaimed, 3, "{found:?}");
    assert_eq!(found.source_locks_released, 1, "{found:?}");
    assert_eq!(found.runs_abandoned, 1, "{found:?}");
    assert_eq!((found.pending_actors, found.pending_repositories), (3, 3));
    assert!(sweep.claimable_now);
    // The restored repository carries its identity from the stored event, back in the backlog.
    let restored = poller
        .store
        .repository(880_003)
        .await
        .expect("read")
        .expect("restored");
    assert_eq!(
        (restored.name.as_str(), restored.enrichment_stage.as_str()),
        ("octo-gone/ember", "batch_pending")
    );

    // A second sweep finds nothing more.
    let again = reconcile(&poller, SignedDuration::from_secs(300))
        .await
        .expect("sweep");
    assert_eq!(again.found.repaired(), 0, "{again:?}");

    // And enrichment finishes exactly as if nothing had happened: the reference's figures.
    // Four requests means the restored (deleted-upstream) repository's detail URL came back
    // too: without it the entity would go terminal without its 404 request.
    let mut settings = EnrichSettings::default();
    settings.search.pacing = SignedDuration::ZERO;
    let enricher = Enricher::new(poller.clone(), settings);
    let report = enricher
        .run(EnrichOptions::default())
        .await
        .expect("enrich");
    assert_eq!(
        (report.requests, report.applied, report.terminal),
        (4, 4, 2),
        "{report:?}"
    );
    for kind in [EntityKind::Actor, EntityKind::Repository] {
        let c = state.enrichment_counts(kind).await.expect("counts");
        assert_eq!(
            (c.complete, c.permanent_failure, c.pending),
            (2, 1, 0),
            "{kind:?}"
        );
    }
    // The source is free again: a forced poll runs instead of reporting it busy.
    let polled = poller.poll_once(true).await.expect("poll");
    assert!(!matches!(polled, PollOutcome::Busy), "{polled:?}");
}

headroom_testkit::both_backends!(lost_work_is_found_again);
