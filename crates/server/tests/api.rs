//! The HTTP surface through `router(state)` and `oneshot`, on SQLite and PostgreSQL: health,
//! the status document's blocks and conventions, and the push event API.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use headroom_core::clock::Clock as _;

use axum::http::StatusCode;
use common::{Db, app, at, get, seed};
use serde_json::Value;

fn keys(v: &Value) -> Vec<String> {
    v.as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// Every object key in a JSON value, recursively.
fn all_keys(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                out.push(k.clone());
                all_keys(v, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| all_keys(v, out)),
        _ => {}
    }
}

async fn health(db: &Db) {
    let app = app(db, at(60));
    let live = get(&app, "/health/live").await;
    assert_eq!(live.status, StatusCode::OK);
    assert_eq!(live.json, serde_json::json!({"status": "ok"}));
    let ready = get(&app, "/health/ready").await;
    assert_eq!(ready.status, StatusCode::OK, "{}", ready.text);
    assert_eq!(ready.json, serde_json::json!({"status": "ok"}));
    let nothing = get(&app, "/nope").await;
    assert_eq!(nothing.status, StatusCode::NOT_FOUND);
    assert_eq!(nothing.json["error"]["code"], "not_found");
    // A known path with a method it does not serve answers JSON too (issue 20, item 9).
    for (method, uri) in [
        (axum::http::Method::POST, "/status"),
        (axum::http::Method::DELETE, "/api/push_events"),
    ] {
        let reply = common::request(&app, method.clone(), uri).await;
        assert_eq!(
            reply.status,
            StatusCode::METHOD_NOT_ALLOWED,
            "{method} {uri}"
        );
        assert_eq!(
            reply
                .headers
                .get(axum::http::header::ALLOW)
                .map(|v| v.as_bytes()),
            Some(&b"GET, HEAD"[..]),
            "{method} {uri}"
        );
        assert_eq!(
            reply.json["error"]["code"], "method_not_allowed",
            "{}",
            reply.text
        );
        assert!(
            reply.json["error"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with(method.as_str())),
            "{}",
            reply.text
        );
    }

    // A path segment that is not UTF-8, and a URI no real request needs, answer JSON too.
    let bad = get(&app, "/api/push_events/%FF%FE").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.text);
    assert_eq!(bad.json["error"]["code"], "invalid_path", "{}", bad.text);
    let long = format!("/api/push_events?actor={}", "a".repeat(9_000));
    let long = common::request(&app, axum::http::Method::GET, &long).await;
    assert_eq!(long.status, StatusCode::URI_TOO_LONG);
    assert_eq!(long.json["error"]["code"], "uri_too_long", "{}", long.text);

    // With the database gone, live stays ok and ready says why it is not.
    db.server_store.close().await;
    let live = get(&app, "/health/live").await;
    assert_eq!(live.status, StatusCode::OK);
    let ready = get(&app, "/health/ready").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(ready.json["reason"], "database_unreachable");
}

/// Like every other endpoint, the health checks refuse a parameter rather than ignore it.
async fn health_checks_refuse_unknown_parameters(db: &Db) {
    let app = app(db, at(60));
    for path in ["/health/live", "/health/ready"] {
        let reply = get(&app, &format!("{path}?x=1")).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{path}: {}",
            reply.text
        );
        assert_eq!(reply.json["error"]["code"], "unknown_parameter", "{path}");
        assert_eq!(reply.json["error"]["parameter"], "x", "{path}");
        assert_eq!(get(&app, path).await.status, StatusCode::OK, "{path}");
    }
}

async fn status_on_an_empty_database(db: &Db) {
    let app = app(db, at(60));
    let reply = get(&app, "/status").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    let s = &reply.json;
    // Nothing persisted: nulls where a number does not exist, zeros where zero was counted.
    assert_eq!(s["ledger"]["present"], false);
    assert_eq!(s["ledger"]["remaining"], Value::Null);
    assert_eq!(s["search_ledger"]["present"], false);
    assert_eq!(s["search_ledger"]["spendable"], 8);
    assert_eq!(s["sources"][0]["source_type"], "github_public_events");
    assert_eq!(s["sources"][0]["present"], false);
    assert_eq!(s["sources"][0]["due_now"], true);
    assert_eq!(s["sources"][0]["binding"], Value::Null);
    assert_eq!(s["enrichment"]["actors"]["backlog_count"], 0);
    assert_eq!(s["enrichment"]["claimable_now"], false);
    assert_eq!(s["enrichment"]["next_enrichment_at"], Value::Null);
    assert_eq!(s["coverage"]["events_in_window"], 0);
    for k in ["actor_enriched", "repository_enriched", "fully_enriched"] {
        assert_eq!(s["coverage"][k]["percent"], Value::Null, "{k}");
        assert_eq!(s["coverage"][k]["events"], 0, "{k}");
    }
    assert_eq!(s["batches"]["search_actors"]["attempts"], 0);
    assert_eq!(s["batches"]["search_actors"]["fill_ratio"], Value::Null);
    assert_eq!(s["throughput"]["sample_start"], Value::Null);
    assert_eq!(
        s["throughput"]["combined"]["arrivals_per_hour"],
        Value::Null
    );
    assert_eq!(s["throughput"]["catch_up"]["state"], "insufficient_sample");
}

async fn status_of_a_seeded_feed(db: &Db) {
    seed(db).await;
    let app = app(db, at(60));
    let reply = get(&app, "/status").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    let s = &reply.json;
    // The nine blocks, in their fixed order (checked on the wire text, not a parsed map).
    let order = [
        "captured_at",
        "sources",
        "ledger",
        "search_ledger",
        "scheduler",
        "enrichment",
        "batches",
        "throughput",
        "coverage",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|k| reply.text.find(&format!("\"{k}\":")).expect(k))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    assert_eq!(keys(s).len(), 9);
    assert_eq!(s["captured_at"], at(60).to_string());

    // sources: the cadence binds (the floor has passed).
    let source = &s["sources"][0];
    assert_eq!(source["present"], true);
    assert_eq!(source["binding"], "cadence_due_at");
    assert_eq!(source["binding_until"], at(300).to_string());
    assert_eq!(source["due_now"], false);
    assert_eq!(source["poll_floor_until"], at(60).to_string());

    // ledger: the row as stored, the shares derived from the allowance.
    let ledger = &s["ledger"];
    assert_eq!(ledger["present"], true);
    assert_eq!(ledger["window_status"], "active");
    assert_eq!(ledger["remaining"], 55);
    assert_eq!(ledger["poll"]["used"], 1);
    assert_eq!(ledger["poll"]["allowance"], 12);
    assert_eq!(ledger["detail_fallback"]["available"], 37);
    assert_eq!(ledger["actor_requests"]["guarantee"], 20);
    assert_eq!(ledger["actor_requests"]["available"], 18);
    assert_eq!(ledger["repository_requests"]["available"], 19);

    // scheduler: the reference's defaults, published.
    let scheduler = &s["scheduler"];
    assert_eq!(scheduler["search_request_ceiling"], 10);
    assert_eq!(scheduler["search_safety_reserve"], 2);
    assert_eq!(scheduler["search_pacing_seconds"], 6);
    assert_eq!(scheduler["poll_allowance"], 12);
    assert_eq!(scheduler["detail_fallback_allowance"], 40);
    assert_eq!(scheduler["actor_enrichment_weight"], 1);
    assert_eq!(scheduler["refresh"]["actor_refresh_ttl_seconds"], 86_400);
    assert_eq!(
        scheduler["refresh"]["refresh_active_within_seconds"],
        604_800
    );
    assert_eq!(scheduler["metrics"]["metrics_window_seconds"], 3600);
    assert_eq!(scheduler["metrics"]["catch_up_min_sample_seconds"], 900);
    assert_eq!(scheduler["metrics"]["coverage_window_seconds"], 86_400);

    // enrichment: actor 101 complete, 102 pending; repository 201 terminal, 202 pending.
    let actors = &s["enrichment"]["actors"];
    assert_eq!(actors["complete"], 1);
    assert_eq!(actors["pending"], 1);
    assert_eq!(actors["backlog_count"], 1);
    assert_eq!(actors["contract_backlog_count"], 1);
    assert_eq!(actors["stages"]["contract_complete"]["count"], 1);
    assert_eq!(actors["stages"]["batch_pending"]["count"], 1);
    assert_eq!(actors["stages"]["terminal"]["count"], 0);
    assert_eq!(
        actors["stages"]["terminal"]["oldest_created_at"],
        Value::Null
    );
    assert_eq!(keys(&actors["stages"]).len(), 7);
    assert_eq!(actors["oldest_pending_at"], at(1).to_string());
    assert_eq!(actors["oldest_pending_age_seconds"], 59);
    let repositories = &s["enrichment"]["repositories"];
    assert_eq!(repositories["permanent_failure"], 1);
    assert_eq!(repositories["stages"]["terminal"]["count"], 1);
    assert_eq!(repositories["backlog_count"], 1);
    // Batch rows wait and the search ledger has no row yet: work is claimable now.
    assert_eq!(s["enrichment"]["claimable_now"], true);
    assert_eq!(s["enrichment"]["next_enrichment_at"], at(60).to_string());

    // batches: one search batch for actors, 1 of 2 returned; empty groups have null ratios.
    let search = &s["batches"]["search_actors"];
    assert_eq!(search["attempts"], 1);
    assert_eq!(search["succeeded"], 1);
    assert_eq!(search["requested_items"], 2);
    assert_eq!(search["returned_items"], 1);
    assert_eq!(search["fill_ratio"], 0.5);
    assert_eq!(s["batches"]["detail_repositories"]["attempts"], 0);
    assert_eq!(
        s["batches"]["detail_repositories"]["fill_ratio"],
        Value::Null
    );

    // throughput: 60 s of sample is below the 900 s minimum.
    let t = &s["throughput"];
    assert_eq!(t["sample_start"], at(0).to_string());
    assert_eq!(t["sample_seconds"], 60);
    assert_eq!(t["actors"]["arrivals"], 2);
    assert_eq!(t["actors"]["completions"], 1);
    assert_eq!(t["repositories"]["terminals"], 1);
    assert_eq!(t["combined"]["arrivals"], 4);
    assert_eq!(t["combined"]["exits"], 2);
    assert_eq!(t["combined"]["backlog_delta"], 2);
    assert_eq!(t["combined"]["arrivals_per_hour"], 240.0);
    assert_eq!(t["catch_up"]["state"], "insufficient_sample");

    // coverage: 3 events; 2 by the enriched actor; no repository enriched (0, not null).
    let c = &s["coverage"];
    assert_eq!(c["basis"], "created_at");
    assert_eq!(c["events_in_window"], 3);
    assert_eq!(c["actor_enriched"]["events"], 2);
    assert_eq!(c["actor_enriched"]["percent"], 66.67);
    assert_eq!(c["repository_enriched"]["percent"], 0.0);
    assert_eq!(c["fully_enriched"]["events"], 0);

    // An hour later the sample is long enough for a verdict: nothing arrived in the last
    // hour and nothing left, so the backlog is not growing.
    let later = app_at(db, 3 * 3600);
    let reply = get(&later, "/status").await;
    assert_eq!(reply.json["throughput"]["sample_seconds"], 3600);
    assert_eq!(reply.json["throughput"]["catch_up"]["state"], "keeping_up");
    // Two days later the events have left the coverage window: null, not zero.
    let much_later = app_at(db, 2 * 86_400);
    let reply = get(&much_later, "/status").await;
    assert_eq!(reply.json["coverage"]["events_in_window"], 0);
    assert_eq!(
        reply.json["coverage"]["actor_enriched"]["percent"],
        Value::Null
    );
}

fn app_at(db: &Db, secs: i64) -> axum::Router {
    app(db, at(secs))
}

async fn push_event_pages(db: &Db) {
    seed(db).await;
    // Two more, one sharing an occurred_at with an earlier event (the tie-break matters).
    common::write_events(
        db,
        &[
            common::event("1004", 102, 202, -50, 3),
            common::event("1005", 101, 201, -50, 4),
        ],
    )
    .await;
    let app = app(db, at(60));
    let mut seen = Vec::new();
    let mut uri = "/api/push_events?limit=2".to_owned();
    let mut pages = 0;
    loop {
        let reply = get(&app, &uri).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
        pages += 1;
        let data = reply.json["data"].as_array().expect("data").clone();
        for row in &data {
            seen.push(row["github_event_id"].as_str().expect("id").to_owned());
            // Nested entities with their status; no raw payload in the list.
            assert!(row["actor"]["enrichment_status"].is_string());
            assert!(row["repository"]["enrichment_status"].is_string());
            assert!(row.get("raw_payload").is_none());
        }
        let mut all = Vec::new();
        all_keys(&reply.json, &mut all);
        assert!(
            !all.iter().any(|k| k == "id"),
            "a surrogate key leaked: {all:?}"
        );
        let next = &reply.json["pagination"]["next_cursor"];
        match next.as_str() {
            Some(cursor) => {
                let link = reply.headers["link"].to_str().expect("ascii");
                assert!(link.ends_with("; rel=\"next\""), "{link}");
                assert!(link.contains(cursor), "{link}");
                assert_eq!(reply.json["pagination"]["has_more"], true);
                uri = format!("/api/push_events?limit=2&cursor={cursor}");
            }
            None => {
                assert!(reply.headers.get("link").is_none());
                assert_eq!(reply.json["pagination"]["has_more"], false);
                break;
            }
        }
    }
    assert_eq!(pages, 3);
    // Newest first by occurred_at, ties by event id, every event exactly once.
    assert_eq!(seen, ["1005", "1004", "1003", "1002", "1001"]);

    // Filters by GitHub id; a page of everything has no next link.
    let reply = get(&app, "/api/push_events?actor_id=101").await;
    let ids: Vec<&str> = reply.json["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|r| r["github_event_id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["1005", "1003", "1001"]);
    assert_eq!(reply.json["pagination"]["limit"], 25);
    let first = &reply.json["data"][0];
    assert_eq!(first["actor"]["login"], "user101");
    assert_eq!(first["actor"]["enrichment_status"], "complete");
    assert_eq!(first["repository"]["full_name"], "org201/repo201");
    assert_eq!(
        first["repository"]["enrichment_status"],
        "permanent_failure"
    );
    assert_eq!(first["ref"], "refs/heads/main");
    let reply = get(&app, "/api/push_events?actor_id=102&repository_id=202").await;
    assert_eq!(reply.json["data"].as_array().map(Vec::len), Some(1));
    let reply = get(&app, "/api/push_events?repository_id=999").await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json["data"], serde_json::json!([]));

    // One event: its raw payload; an absent one: a JSON 404.
    let reply = get(&app, "/api/push_events/1003").await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json["data"]["github_event_id"], "1003");
    assert_eq!(reply.json["data"]["raw_payload"]["id"], "1003");
    assert_eq!(reply.json["data"]["raw_payload"]["type"], "PushEvent");
    let reply = get(&app, "/api/push_events/424242").await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(reply.json["error"]["code"], "not_found");
}

async fn refused_queries(db: &Db) {
    let app = app(db, at(60));
    for (uri, parameter, code) in [
        ("/api/push_events?limit=0", "limit", "invalid_parameter"),
        ("/api/push_events?limit=101", "limit", "invalid_parameter"),
        ("/api/push_events?limit=500", "limit", "invalid_parameter"),
        ("/api/push_events?limit=ten", "limit", "invalid_parameter"),
        ("/api/push_events?page=2", "page", "unknown_parameter"),
        ("/api/push_events?actor=1", "actor", "unknown_parameter"),
        (
            "/api/push_events?actor_id=abc",
            "actor_id",
            "invalid_parameter",
        ),
        ("/api/push_events?cursor=xyz", "cursor", "invalid_cursor"),
        (
            "/api/push_events?limit=5&limit=6",
            "limit",
            "repeated_parameter",
        ),
        // `/status` takes no parameter and says so, as the list does.
        ("/status?since=1", "since", "unknown_parameter"),
    ] {
        let reply = get(&app, uri).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{uri}");
        assert_eq!(reply.json["error"]["parameter"], parameter, "{uri}");
        assert_eq!(reply.json["error"]["code"], code, "{uri}");
        let message = reply.json["error"]["message"].as_str().expect("message");
        assert!(message.contains(parameter), "{uri}: {message}");
    }
}

/// A paced search ledger holds the batch lane: nothing is claimable now, and the next
/// enrichment is when pacing lets the next search request go.
async fn gates_decide_claimable_now(db: &Db) {
    seed(db).await;
    let paced = headroom_store::feed_state::SearchLedger {
        host: common::HOST.into(),
        subject: common::subject(),
        limit: Some(10),
        remaining: Some(9),
        request_ceiling: 10,
        reserve: 2,
        used: 1,
        actor_used: 1,
        repository_used: 0,
        blocked_until: None,
        last_request_at: Some(at(58)),
        reset_at: Some(at(100)),
    };
    db.writer_feed
        .save_search_ledger(&paced, at(58))
        .await
        .expect("save");
    let reply = get(&app(db, at(60)), "/status").await;
    let e = &reply.json["enrichment"];
    assert_eq!(e["actors"]["rows_claimable"]["batch"], true);
    assert_eq!(e["claimable_now"], false, "{e}");
    assert_eq!(e["gates"]["batch"], "search_pacing");
    assert_eq!(e["next_enrichment_at"], at(64).to_string());
    let s = &reply.json["search_ledger"];
    assert_eq!(s["present"], true);
    assert_eq!(s["window_open"], true);
    assert_eq!(s["used"], 1);
    assert_eq!(s["next_request_earliest_at"], at(64).to_string());

    // Spent down to the reserve: held until the minute resets.
    let spent = headroom_store::feed_state::SearchLedger {
        used: 8,
        last_request_at: Some(at(50)),
        ..paced
    };
    db.writer_feed
        .save_search_ledger(&spent, at(58))
        .await
        .expect("save");
    let reply = get(&app(db, at(60)), "/status").await;
    let e = &reply.json["enrichment"];
    assert_eq!(e["gates"]["batch"], "search_reserve");
    assert_eq!(e["next_enrichment_at"], at(100).to_string());
    // Once the minute has reset the lane is open again.
    let reply = get(&app(db, at(120)), "/status").await;
    assert_eq!(reply.json["enrichment"]["claimable_now"], true);
    assert_eq!(reply.json["search_ledger"]["window_open"], false);
}

/// Readiness needs the schema this build ships, not just a database that answers.
async fn ready_needs_the_current_schema(db: &Db) {
    let app = app(db, at(60));
    assert_eq!(get(&app, "/health/ready").await.status, StatusCode::OK);
    let latest = db
        .report
        .schema_state()
        .await
        .expect("schema")
        .expected
        .into_iter()
        .max()
        .expect("migrations");
    // Forget the newest migration (through the writer: the server's own pool may be
    // read-only), as if this build were newer than the database.
    let forget = format!("DELETE FROM _sqlx_migrations WHERE version = {latest}");
    if db.target.starts_with("postgres") {
        let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&db.target)
            .await
            .expect("connect");
        sqlx::query(sqlx::AssertSqlSafe(forget))
            .execute(&mut conn)
            .await
            .expect("delete");
    } else {
        let mut conn = <sqlx::SqliteConnection as sqlx::Connection>::connect(&format!(
            "sqlite://{}",
            db.target
        ))
        .await
        .expect("connect");
        sqlx::query(sqlx::AssertSqlSafe(forget))
            .execute(&mut conn)
            .await
            .expect("delete");
    }
    let reply = get(&app, "/health/ready").await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(reply.json["reason"], "schema_not_current");
    assert_eq!(
        reply.json["missing_migrations"],
        serde_json::json!([latest])
    );
    assert_eq!(get(&app, "/health/live").await.status, StatusCode::OK);
}

/// A source out of service says so, whatever its timestamps say; a global block binds the
/// others and shows in the ledger.
async fn sources_name_what_holds_them(db: &Db) {
    seed(db).await;
    let feed = &db.writer_feed;
    let mut ledger = feed
        .core_ledger(common::HOST, &common::subject())
        .await
        .expect("read")
        .expect("seeded");
    ledger.global_blocked_until = Some(at(900));
    feed.save_core_ledger(&ledger, at(30)).await.expect("save");
    let reply = get(&app(db, at(60)), "/status").await;
    let source = &reply.json["sources"][0];
    assert_eq!(source["binding"], "globally_blocked");
    assert_eq!(source["binding_until"], at(900).to_string());
    assert_eq!(source["global_blocked_until"], at(900).to_string());
    assert_eq!(reply.json["ledger"]["globally_blocked_now"], true);
    let mut source_row = feed
        .event_source(headroom_github::feed::poll::SOURCE_TYPE)
        .await
        .expect("read")
        .expect("seeded");
    source_row.status = headroom_store::feed_state::SourceStatus::Failed;
    source_row.last_error = Some("HTTP 404 on /events".into());
    feed.save_event_source(&source_row, at(40))
        .await
        .expect("save");
    let reply = get(&app(db, at(60)), "/status").await;
    let source = &reply.json["sources"][0];
    assert_eq!(source["status"], "failed");
    assert_eq!(source["binding"], "source_failed");
    assert_eq!(source["binding_until"], Value::Null);
    assert_eq!(source["due_now"], false);
    assert_eq!(source["last_error"], "HTTP 404 on /events");
}

/// A credential the provider rejected at the source's latest attempt fails readiness, naming
/// the source's error; the next success (failures cleared) makes it ready again.
async fn a_rejected_credential_fails_readiness_until_a_success(db: &Db) {
    seed(db).await;
    let feed = &db.writer_feed;
    let mut source = feed
        .event_source(headroom_github::feed::poll::SOURCE_TYPE)
        .await
        .expect("read")
        .expect("seeded");
    source.consecutive_failures = 1;
    source.last_error = Some("credential rejected (401): Bad credentials".into());
    feed.save_event_source(&source, at(40)).await.expect("save");
    let reply = get(&app(db, at(60)), "/health/ready").await;
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        reply.text
    );
    assert_eq!(reply.json["reason"], "credential_rejected");
    assert_eq!(
        reply.json["message"],
        "credential rejected (401): Bad credentials"
    );
    // Another failure (a 502) is the source's backoff, not a readiness matter.
    source.last_error = Some("server error 502 after 4 attempt(s)".into());
    feed.save_event_source(&source, at(45)).await.expect("save");
    assert_eq!(
        get(&app(db, at(60)), "/health/ready").await.status,
        StatusCode::OK
    );
    source.last_error = Some("credential rejected (401): Bad credentials".into());
    feed.save_event_source(&source, at(46)).await.expect("save");
    assert_eq!(
        get(&app(db, at(60)), "/health/ready").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    source.consecutive_failures = 0;
    source.last_error = None;
    feed.save_event_source(&source, at(50)).await.expect("save");
    assert_eq!(
        get(&app(db, at(60)), "/health/ready").await.status,
        StatusCode::OK
    );
}

/// `/status` is reused for five seconds of the server's clock, then served stale once while
/// one background build replaces it; `captured_at` always says when it was read.
async fn the_status_document_is_reused_briefly_then_rebuilt(db: &Db) {
    let clock = std::sync::Arc::new(headroom_core::clock::ManualClock::new(at(60)));
    let app = headroom_server::router(headroom_server::AppState {
        report: db.report.clone(),
        feed: db.feed.clone(),
        clock: clock.clone(),
        settings: std::sync::Arc::new(common::settings()),
        status: Default::default(),
    });
    let first = get(&app, "/status").await;
    assert_eq!(first.json["coverage"]["events_in_window"], 0);
    common::write_events(db, &[common::event("2001", 101, 201, 30, 59)]).await;
    clock.advance(headroom_core::clock::SignedDuration::from_secs(4));
    let reused = get(&app, "/status").await;
    assert_eq!(
        reused.json, first.json,
        "a 4-second-old document is served as it is"
    );
    clock.advance(headroom_core::clock::SignedDuration::from_secs(2));
    let stale = get(&app, "/status").await;
    assert_eq!(stale.json["captured_at"], first.json["captured_at"]);
    // The rebuild the stale read started lands; the next read has the new event.
    let started = headroom_core::clock::SystemClock.now();
    loop {
        let fresh = get(&app, "/status").await;
        if fresh.json["coverage"]["events_in_window"] == 1 {
            assert_ne!(fresh.json["captured_at"], first.json["captured_at"]);
            break;
        }
        assert!(
            headroom_core::clock::SystemClock
                .now()
                .duration_since(started)
                < headroom_core::clock::SignedDuration::from_secs(10),
            "the background rebuild never landed"
        );
        tokio::task::yield_now().await;
    }
}

headroom_testkit::both_backends!(
    multi_thread:
    the_status_document_is_reused_briefly_then_rebuilt,
    sources_name_what_holds_them,
    gates_decide_claimable_now,
    ready_needs_the_current_schema,
    a_rejected_credential_fails_readiness_until_a_success,
    health,
    health_checks_refuse_unknown_parameters,
    status_on_an_empty_database,
    status_of_a_seeded_feed,
    push_event_pages,
    refused_queries
);
