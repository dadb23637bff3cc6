//! `headroom enrich` against the in-process simulator: the enrichment rows of the fixture
//! scenario matrix, after one ingest of the default page; refresh after the TTL under the
//! composition rule; weighted rotation across paced cycles — each on SQLite and PostgreSQL.

#![allow(clippy::expect_used, clippy::unwrap_used)]

#[path = "../../store/tests/common/mod.rs"]
mod common;

use std::sync::Arc;

use headroom_core::Governor;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::GovernorConfig;
use headroom_github::feed::enrich::{EnrichOptions, EnrichReport, EnrichSettings, Enricher};
use headroom_github::feed::poll::{PollOutcome, PollSettings, Poller};
use headroom_github::feed::{IngestContext, ingest_page};
use headroom_http::transport::SimTransport;
use headroom_http::{Client, ClientParts, UrlPolicy};
use headroom_sim::{Scenario, SimConfig, Simulator};
use headroom_store::EventOrigin;
use headroom_store::feed_state::{EnrichmentCounts, EntityKind, Lane, open_feed};

use common::Fixture;

const API: &str = "http://127.0.0.1:7000";

struct Rig {
    enricher: Enricher,
    sim: Simulator,
    clock: TokioClock,
}

async fn rig(scenario: Scenario, f: &Fixture) -> Rig {
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
    let (store, state) = open_feed(&f.target).await.expect("open");
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
        enricher: Enricher::new(poller, settings),
        sim,
        clock,
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

/// Lets `secs` of simulated time pass (paused only while sleeping: the pools' own timers
/// misfire under a clock that stays paused while a query runs).
async fn skip(r: &Rig, secs: i64) {
    tokio::time::pause();
    r.clock.sleep(SignedDuration::from_secs(secs)).await;
    tokio::time::resume();
}

/// Stores one more valid push by a new actor (and, if asked, a new repository), as a poll
/// would: the new entities join the backlog, the known ones register activity.
async fn push_by_newcomer(r: &Rig, event_id: &str, new_repository: bool) {
    let mut envelope = headroom_sim::feed::default_page(API)
        .into_iter()
        .find(|e| e["type"] == "PushEvent")
        .expect("a push in the default page");
    envelope["id"] = serde_json::json!(event_id);
    envelope["actor"]["id"] = serde_json::json!(9_000_001);
    envelope["actor"]["login"] = serde_json::json!("newcomer");
    envelope["actor"]["display_login"] = serde_json::json!("newcomer");
    envelope["actor"]["url"] = serde_json::json!(format!("{API}/users/newcomer"));
    if new_repository {
        envelope["repo"] = serde_json::json!({"id": 9_900_001, "name": "newcomer/tool",
            "url": format!("{API}/repos/newcomer/tool")});
        envelope["payload"]["repository_id"] = serde_json::json!(9_900_001);
    }
    ingest_one(r, envelope).await;
}

/// Stores one envelope, as a poll would; it must be created.
async fn ingest_one(r: &Rig, envelope: serde_json::Value) {
    let ctx = IngestContext {
        origin: EventOrigin::Feed,
        run_id: "test".into(),
        ingestion_run_id: None,
    };
    let counts = ingest_page(
        r.enricher.poller.store.as_ref(),
        vec![envelope],
        &ctx,
        r.clock.now(),
    )
    .await
    .expect("ingest");
    assert_eq!(counts.events_created, 1, "{counts:?}");
}

/// The search requests the simulator saw, as their decoded `q`.
fn search_queries(sim: &Simulator) -> Vec<String> {
    sim.request_log()
        .iter()
        .filter(|e| e.path.starts_with("/search/"))
        .filter_map(|e| {
            let query = e.path.split_once('?')?.1;
            url_query_q(query)
        })
        .collect()
}

fn url_query_q(query: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let value = pair.strip_prefix("q=")?;
        let spaced = value.replace('+', " ");
        let mut out = Vec::new();
        let bytes = spaced.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' && i + 2 < bytes.len() + 1 {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        String::from_utf8(out).ok()
    })
}

async fn run(r: &Rig, options: EnrichOptions) -> EnrichReport {
    r.enricher.run(options).await.expect("enrich")
}

async fn default_serves_six_rows_in_four_requests(f: &Fixture) {
    let r = rig(Scenario::Default, f).await;
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

async fn limit_counts_requests_and_stage_restricts_the_lane(f: &Fixture) {
    let r = rig(Scenario::Default, f).await;
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

async fn search_complete_needs_no_fallback(f: &Fixture) {
    let r = rig(Scenario::SearchComplete, f).await;
    let report = run(&r, EnrichOptions::default()).await;
    assert_eq!(
        (report.requests, report.detail_requests, report.applied),
        (2, 0, 6)
    );
}

async fn a_renamed_repository_is_refused_by_search_and_resolved_by_detail(f: &Fixture) {
    let r = rig(Scenario::SearchRenamedRepository, f).await;
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

async fn incomplete_results_still_apply_what_matched(f: &Fixture) {
    let r = rig(Scenario::SearchIncompleteResults, f).await;
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

async fn a_malformed_envelope_fails_the_batch_and_applies_nothing(f: &Fixture) {
    let r = rig(Scenario::SearchMalformed, f).await;
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

async fn search_rate_limited_defers_and_leaves_core_alone(f: &Fixture) {
    let r = rig(Scenario::SearchRateLimited, f).await;
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

async fn a_redirecting_repository_is_followed_and_debited_twice(f: &Fixture) {
    let r = rig(Scenario::RedirectingRepository, f).await;
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

async fn a_hostile_redirect_is_refused_and_the_source_stays_in_service(f: &Fixture) {
    let r = rig(Scenario::HostileRedirect, f).await;
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

/// Issue 20, defect 3: an event's `actor.url` and `repo.url` are data, not instructions. A
/// newcomer whose URLs name `/orgs/acme/members` and `/rate_limit` (search does not find it,
/// so it falls to the detail lane) is terminal with the reason, and neither is requested.
async fn imported_data_never_chooses_where_the_token_goes(f: &Fixture) {
    let r = rig(Scenario::Default, f).await;
    let mut envelope = headroom_sim::feed::default_page(API)
        .into_iter()
        .find(|e| e["type"] == "PushEvent")
        .expect("a push in the default page");
    envelope["id"] = serde_json::json!("77000000001");
    envelope["actor"] = serde_json::json!({"id": 9_000_002, "login": "stranger",
        "url": format!("{API}/orgs/acme/members")});
    envelope["repo"] = serde_json::json!({"id": 9_900_002, "name": "stranger/tool",
        "url": format!("{API}/users/x/../../rate_limit")});
    envelope["payload"]["repository_id"] = serde_json::json!(9_900_002);
    ingest_one(&r, envelope).await;
    let report = run(&r, EnrichOptions::default()).await;
    assert_eq!(requests_to(&r.sim, "/orgs/"), 0);
    assert_eq!(requests_to(&r.sim, "/rate_limit"), 0);
    assert!(report.terminal >= 2, "{report:?}");
    for (table, id) in [("actors", 9_000_002), ("repositories", 9_900_002)] {
        assert_eq!(
            terminal_reason(&f.target, table, id).await.as_deref(),
            Some("detail_url_not_entity_shaped"),
            "{table}"
        );
    }
}

/// The `terminal_reason` of one entity row, read from the database itself.
async fn terminal_reason(target: &str, table: &str, id: i64) -> Option<String> {
    let sql = format!("SELECT terminal_reason FROM {table} WHERE github_id = $1");
    let sql = sqlx::AssertSqlSafe(sql);
    if target.starts_with("postgres") {
        let pool = sqlx::PgPool::connect(target).await.expect("connect");
        let reason = sqlx::query_scalar(sql)
            .bind(id)
            .fetch_one(&pool)
            .await
            .expect("row");
        pool.close().await;
        reason
    } else {
        let options = sqlx::sqlite::SqliteConnectOptions::new().filename(target);
        let pool = sqlx::SqlitePool::connect_with(options).await.expect("open");
        let reason = sqlx::query_scalar(sql)
            .bind(id)
            .fetch_one(&pool)
            .await
            .expect("row");
        pool.close().await;
        reason
    }
}

/// Complete entities are re-fetched only after their TTL, through Search batches, and never
/// the terminal ones.
async fn refresh_waits_for_the_ttl(f: &Fixture) {
    let r = rig(Scenario::Default, f).await;
    let first = run(&r, EnrichOptions::default()).await;
    assert_eq!((first.applied, first.terminal), (4, 2));
    // Inside the TTL: the freshness cache answers, nothing is sent.
    skip(&r, 3_600).await;
    assert_eq!(run(&r, EnrichOptions::default()).await.requests, 0);
    // Past it (24 h by default) and active within the week: one refresh batch per class.
    skip(&r, 86_400).await;
    let refresh = run(&r, EnrichOptions::default()).await;
    assert_eq!(
        (
            refresh.search_batches,
            refresh.detail_requests,
            refresh.refreshed,
            refresh.applied
        ),
        (2, 0, 4, 0),
        "{refresh:?}"
    );
    for kind in [EntityKind::Actor, EntityKind::Repository] {
        let c = counts(&r, kind).await;
        assert_eq!(
            (c.complete, c.permanent_failure),
            (2, 1),
            "terminal stays terminal"
        );
    }
    // Refreshed rows are fresh again.
    assert_eq!(run(&r, EnrichOptions::default()).await.requests, 0);
}

/// Entities not seen pushing within REFRESH_ACTIVE_WITHIN are never refreshed.
async fn inactive_entities_are_not_refreshed(f: &Fixture) {
    let r = rig(Scenario::Default, f).await;
    run(&r, EnrichOptions::default()).await;
    skip(&r, 8 * 86_400).await;
    let report = run(&r, EnrichOptions::default()).await;
    assert_eq!(report.requests, 0, "{report:?}");
}

/// The composition rule: a batch fills from its own class's backlog first; refresh tops up
/// only when its own backlog is exhausted and the other class has none; a refresh-only batch
/// runs only when neither class has backlog.
async fn refresh_rides_only_spare_slots_and_never_before_backlog(f: &Fixture) {
    let r = rig(Scenario::Default, f).await;
    run(&r, EnrichOptions::default()).await;
    skip(&r, 86_400 + 60).await;
    // A new actor and a new repository arrive: both classes have backlog again.
    push_by_newcomer(&r, "59000000001", true).await;
    let before = search_queries(&r.sim).len();
    let batch_only = |limit| EnrichOptions {
        lane: Some(Lane::Batch),
        limit: Some(limit),
        ..EnrichOptions::default()
    };
    // The first batch of each class carries only its backlog while the other class still
    // has backlog...
    let one = run(&r, batch_only(1)).await;
    assert_eq!((one.search_batches, one.refreshed), (1, 0), "{one:?}");
    let q = search_queries(&r.sim);
    assert_eq!(q.len(), before + 1);
    let first = q.last().expect("a query").clone();
    assert_eq!(first.split_whitespace().count(), 1, "backlog only: {first}");
    // ...the second class's batch finds the first class's backlog drained, so its spare
    // slots take its own refresh candidates beside its backlog row.
    let two = run(&r, batch_only(1)).await;
    assert_eq!(two.search_batches, 1);
    let second = search_queries(&r.sim).last().expect("a query").clone();
    assert_eq!(
        second.split_whitespace().count(),
        3,
        "backlog + 2 refresh: {second}"
    );
    assert!(second.contains("newcomer"), "{second}");
    assert_eq!(two.refreshed, 2, "{two:?}");
    // Now neither class has backlog: a refresh-only batch for the first class.
    let three = run(&r, batch_only(1)).await;
    let third = search_queries(&r.sim).last().expect("a query").clone();
    assert!(!third.contains("newcomer"), "{third}");
    assert_eq!(three.refreshed, 2, "{three:?}");
    assert_eq!(run(&r, batch_only(1)).await.requests, 0);
}

/// Weighted rotation: 1/1 alternates the classes across cycles even when pacing lets only
/// one batch out per cycle, so a paced service never starves repositories.
async fn paced_cycles_alternate_the_classes(f: &Fixture) {
    let mut r = rig(Scenario::SearchComplete, f).await;
    r.enricher.settings.search.pacing = SignedDuration::from_secs(6);
    r.enricher = Enricher::new(r.enricher.poller.clone(), r.enricher.settings.clone());
    let batch_only = EnrichOptions {
        lane: Some(Lane::Batch),
        ..EnrichOptions::default()
    };
    let one = run(&r, batch_only).await;
    assert_eq!(one.search_batches, 1);
    assert!(
        one.deferrals.iter().any(|(why, _)| why == "search_pacing"),
        "{one:?}"
    );
    skip(&r, 6).await;
    let two = run(&r, batch_only).await;
    assert_eq!(two.search_batches, 1);
    let q = search_queries(&r.sim);
    let kinds: Vec<bool> = r
        .sim
        .request_log()
        .iter()
        .filter(|e| e.path.starts_with("/search/"))
        .map(|e| e.path.starts_with("/search/users"))
        .collect();
    assert_eq!(
        kinds,
        [true, false],
        "actor batch, then repository batch: {q:?}"
    );
}

headroom_testkit::both_backends!(
    refresh_waits_for_the_ttl,
    inactive_entities_are_not_refreshed,
    refresh_rides_only_spare_slots_and_never_before_backlog,
    paced_cycles_alternate_the_classes,
    default_serves_six_rows_in_four_requests,
    limit_counts_requests_and_stage_restricts_the_lane,
    search_complete_needs_no_fallback,
    a_renamed_repository_is_refused_by_search_and_resolved_by_detail,
    incomplete_results_still_apply_what_matched,
    a_malformed_envelope_fails_the_batch_and_applies_nothing,
    search_rate_limited_defers_and_leaves_core_alone,
    a_redirecting_repository_is_followed_and_debited_twice,
    a_hostile_redirect_is_refused_and_the_source_stays_in_service,
    imported_data_never_chooses_where_the_token_goes,
);
