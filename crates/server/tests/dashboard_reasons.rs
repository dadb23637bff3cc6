//! Issue 36, items 1, 2, 5 and 6, through the page and `/api/...` on SQLite: a bucket that
//! holds a sync run back on the governor's reserve says why in words; a run no live process
//! resumes says so, why, and the command that will; a reset already past reads as such; in
//! flight counts live processes only.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use common::{get, settings};
use headroom_core::clock::{ManualClock, SignedDuration, Timestamp};
use headroom_core::governor::WaitReason;
use headroom_server::{AppState, DashboardSettings, DashboardState};
use headroom_store::quota_history::{QuotaStores, open_quota_history};
use headroom_store::{
    CheckpointStatus, CheckpointUpdate, CredentialUsed, NewSyncRun, ProcessMark, QuotaReading,
    SqliteStore, SyncRunStatus,
};

const HOST: &str = "api.github.com";
const ALICE: &str = "user:alice";

fn now() -> Timestamp {
    // 15:56:00 UTC.
    Timestamp::from_second(1_800_000_000 - 1_800_000_000 % 86_400 + 15 * 3600 + 56 * 60)
        .expect("valid")
}

fn at(secs: i64) -> Timestamp {
    now() + SignedDuration::from_secs(secs)
}

fn reading(remaining: u64, reset: Timestamp, process: &str, in_flight: u64) -> QuotaReading {
    QuotaReading {
        provider: "github".into(),
        host: HOST.into(),
        subject: ALICE.into(),
        bucket: "core".into(),
        limit: Some(400),
        remaining: Some(remaining),
        used: Some(400 - remaining),
        reset_at: Some(reset),
        in_flight,
        waiting: 0,
        blocked_until: None,
        last_reason: None,
        process_id: process.into(),
        observed_at: at(-5),
    }
}

struct Fixture {
    _dir: headroom_testkit::TempSqlite,
    writer: QuotaStores,
    app: axum::Router,
}

async fn fixture() -> Fixture {
    let dir = headroom_testkit::TempSqlite::new();
    let target = dir.path();
    let writer = open_quota_history(&target).await.expect("open");
    let server = Arc::new(SqliteStore::open(&target).await.expect("open"));
    let clock = Arc::new(ManualClock::new(now()));
    let state = DashboardState {
        app: AppState {
            report: server.clone(),
            feed: server.clone(),
            clock: clock.clone(),
            settings: Arc::new(settings()),
            status: Default::default(),
        },
        store: server.clone(),
        history: server,
        clock,
        settings: DashboardSettings::default(),
        pacer: headroom_core::clock::TokioClock::system(),
        snapshots: Default::default(),
    };
    Fixture {
        _dir: dir,
        writer,
        app: headroom_server::dashboard_router(state),
    }
}

/// A hibernating organization run of alice, bound to `fingerprint`, waking at `wake`, with
/// one deferred checkpoint per detail (one per stage).
async fn hibernating(f: &Fixture, fingerprint: &str, wake: Timestamp, details: &[String]) -> i64 {
    let store = &f.writer.store;
    let run = store
        .create_sync_run(&NewSyncRun {
            kind: "org".into(),
            target: "acme".into(),
            key: headroom_core::QuotaKey::user(HOST, "alice"),
            requested_stages: None,
            credential: Some(CredentialUsed {
                fingerprint: Some(fingerprint.into()),
                owner: ALICE.into(),
            }),
            created_at: at(-3600),
        })
        .await
        .expect("run");
    let mut run = store.sync_run(run.id).await.expect("read").expect("run");
    run.status = SyncRunStatus::Hibernating;
    run.not_before = Some(wake);
    store.save_sync_run(&run).await.expect("save");
    for (stage, detail) in ["org", "repositories", "pull_requests"].iter().zip(details) {
        store
            .set_checkpoint(&CheckpointUpdate {
                sync_run_id: run.id,
                stage: (*stage).into(),
                scope: String::new(),
                status: CheckpointStatus::Deferred,
                page_cursor: None,
                pages_added: 0,
                rows_added: 0,
                detail: Some(detail.clone()),
                at: at(-60),
            })
            .await
            .expect("checkpoint");
    }
    run.id
}

/// The governor's verdict as the sync runner records it.
fn held(remaining: u64, needed: u64, reset: Timestamp) -> String {
    WaitReason::Exhausted {
        bucket: "core".into(),
        remaining,
        needed,
        reset_at: reset,
    }
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_holding_a_run_back_on_the_reserve_says_why_in_words_before_zero() {
    let f = fixture().await;
    f.writer
        .recorder
        .record_quota_reading(&reading(10, at(60), "service", 0))
        .await
        .expect("reading");
    // Two stages deferred in two windows: the run's why is still one sentence.
    let run = hibernating(
        &f,
        "aaaa1111",
        at(60),
        &[held(14, 11, at(-3000)), held(10, 11, at(60))],
    )
    .await;

    let quota = get(&f.app, "/api/quota").await;
    let core = &quota.json["identities"][0]["buckets"][0];
    assert_eq!(
        core["wait"],
        "REST held back: 10 left, the next request needs 11 to stay safe — reopens 15:57 UTC \
         (in 1 min); 1 sync run waiting",
        "{}",
        quota.text
    );
    assert_eq!(core["held_back"]["runs"], 1);
    assert_eq!(core["held_back"]["hold"]["needed"], 11);

    let runs = get(&f.app, "/api/sync/runs").await;
    let progress = &runs.json["runs"][0]["progress"];
    assert_eq!(runs.json["runs"][0]["id"], run);
    assert_eq!(
        progress["why"],
        "REST held back: 10 left, the next request needs 11 to stay safe — reopens 15:57 UTC \
         (in 1 min)",
        "{}",
        runs.text
    );
    assert_eq!(progress["holds"].as_array().map(Vec::len), Some(1));

    let page = get(&f.app, "/").await;
    let reopen = at(60);
    for needle in [
        "REST held back: 10 left, the next request needs 11 to stay safe — <span class=\"when\"",
        &format!("(in <time class=\"countdown\" datetime=\"{reopen}\">1 min</time>)"),
        "; 1 sync run waiting</p>",
    ] {
        assert!(page.text.contains(needle), "the page lacks {needle}");
    }
    // No governor text with RFC 3339 times in the run's row.
    assert!(
        !page.text.contains("needed to send safely"),
        "{}",
        page.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_bound_to_a_credential_no_live_process_holds_says_who_can_resume_it() {
    let f = fixture().await;
    // The service spends alice's quota (with another token); the quota is free.
    f.writer
        .recorder
        .record_quota_reading(&reading(390, at(1800), "service", 0))
        .await
        .expect("reading");
    let run = hibernating(&f, "aaaa1111", at(-300), &[]).await;

    let runs = get(&f.app, "/api/sync/runs").await;
    let unresumed = &runs.json["runs"][0]["progress"]["unresumed"];
    let why = unresumed["why"].as_str().expect("said: nobody resumes it");
    assert!(why.starts_with("No live process resumes it"), "{why}");
    assert!(why.contains("bound to credential aaaa1111"), "{why}");
    let command = unresumed["command"].as_str().expect("a command");
    assert!(
        command.contains(&format!("headroom sync org acme --resume {run}"))
            && command.contains("headroom sync worker --rebind-credential"),
        "{command}"
    );
    let detail = get(&f.app, &format!("/api/sync/runs/{run}")).await;
    assert_eq!(detail.json["progress"]["unresumed"], *unresumed);

    let page = get(&f.app, "/").await;
    for needle in [
        "<td class=\"status\">hibernating · nobody resumes it</td>",
        "<span class=\"past\">due since",
        "headroom sync worker --rebind-credential",
    ] {
        assert!(page.text.contains(needle), "the page lacks {needle}");
    }
    assert!(
        !page.text.contains(">now</time>)"),
        "a wake past reads as past"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_already_past_reads_as_awaiting_the_new_window_never_in_now() {
    let f = fixture().await;
    f.writer
        .recorder
        .record_quota_reading(&reading(0, at(-30), "service", 0))
        .await
        .expect("reading");
    let quota = get(&f.app, "/api/quota").await;
    let core = &quota.json["identities"][0]["buckets"][0];
    assert_eq!(core["reset_passed"], true);
    assert_eq!(
        core["wait"],
        "REST exhausted — reset 15:55 UTC — awaiting the new window's first response"
    );
    let page = get(&f.app, "/").await;
    assert!(
        page.text
            .contains("<span class=\"past\">reset <time class=\"clock\""),
        "{}",
        page.text
    );
    assert!(!page.text.contains(">now</time>)"), "{}", page.text);
}

// Process marks are read from /proc: Linux only.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_flight_counts_live_processes_only_not_one_that_exited() {
    let f = fixture().await;
    let mut gone = ProcessMark::current().expect("Linux has /proc");
    // This very process, started at another time: a process that exited (its pid reused).
    gone.started += 1;
    assert!(ProcessMark::holder_is_gone(&gone.to_string()));
    let live = ProcessMark::current().expect("a mark").to_string();
    f.writer
        .recorder
        .record_quota_reading(&reading(390, at(1800), &gone.to_string(), 10))
        .await
        .expect("reading");
    f.writer
        .recorder
        .record_quota_reading(&reading(390, at(1800), &live, 2))
        .await
        .expect("reading");
    let quota = get(&f.app, "/api/quota").await;
    let core = &quota.json["identities"][0]["buckets"][0];
    assert_eq!(core["in_flight"], 2, "{}", quota.text);
    assert_eq!(core["live_processes"], 1);
    let page = get(&f.app, "/").await;
    assert!(
        page.text
            .contains("<span class=\"in-flight\">2</span> in flight")
    );
}
