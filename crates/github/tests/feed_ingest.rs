//! Feed ingestion against a real store, on SQLite and PostgreSQL: the default fixture page
//! (4 created, 3 quarantined, 1 ignored; a replay absorbs 4 duplicates with entity activity
//! unchanged), and the live-shape check on the gh-pulse corpus (all 4,268 PushEvents of the
//! 5,000-line GH Archive hour accepted, nothing valid quarantined, a second import all
//! duplicates).

#![allow(clippy::expect_used, clippy::unwrap_used)]

#[path = "../../store/tests/common/mod.rs"]
mod common;

use std::path::PathBuf;

use headroom_core::clock::{ManualClock, SignedDuration, Timestamp};
use headroom_github::feed::import::{ImportOptions, ImportProgress, import_reader, open_input};
use headroom_github::feed::{IngestContext, ingest_page};
use headroom_store::{EventOrigin, Store};

/// The real-data corpus kept in the repository (`testdata/corpus`).
fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/corpus")
}

fn ctx(origin: EventOrigin) -> IngestContext {
    IngestContext {
        origin,
        run_id: "test-run".into(),
        ingestion_run_id: None,
    }
}

fn t0() -> Timestamp {
    Timestamp::from_second(1_800_000_000).expect("valid")
}

/// The simulator's `default` page: 4 valid pushes, 1 WatchEvent, 3 malformed.
fn default_page() -> Vec<serde_json::Value> {
    headroom_sim::feed::default_page("https://api.github.com")
}

async fn default_page_and_replay(store: &dyn Store) {
    let c = ctx(EventOrigin::Feed);
    let first = ingest_page(store, default_page(), &c, t0())
        .await
        .expect("ingest");
    assert_eq!(first.events_received, 8);
    assert_eq!(first.push_events_seen, 6);
    assert_eq!(first.events_created, 4);
    assert_eq!(first.duplicates_skipped, 0);
    assert_eq!(first.events_quarantined, 3);
    assert_eq!(first.events_ignored, 1);
    assert_eq!(first.events_failed, 0);
    assert_eq!(store.count_rows("push_events").await.expect("count"), 4);
    assert_eq!(store.count_rows("actors").await.expect("count"), 3);
    assert_eq!(store.count_rows("repositories").await.expect("count"), 3);
    assert_eq!(
        store.count_rows("quarantined_events").await.expect("count"),
        3
    );

    let before = (
        store.actor(7_700_419).await.expect("read"),
        store.repository(880_001).await.expect("read"),
    );
    assert!(
        before
            .0
            .as_ref()
            .is_some_and(|a| a.last_seen_at == Some(t0()))
    );

    let later = t0() + SignedDuration::from_secs(60);
    let replay = ingest_page(store, default_page(), &c, later)
        .await
        .expect("replay");
    assert_eq!(replay.events_created, 0);
    assert_eq!(replay.duplicates_skipped, 4);
    assert_eq!(replay.events_quarantined, 3);
    assert_eq!(store.count_rows("push_events").await.expect("count"), 4);
    assert_eq!(
        store.count_rows("quarantined_events").await.expect("count"),
        3
    );
    let after = (
        store.actor(7_700_419).await.expect("read"),
        store.repository(880_001).await.expect("read"),
    );
    assert_eq!(before, after, "a replay must not register entity activity");
}

#[tokio::test]
async fn default_page_and_replay_sqlite() {
    let f = common::sqlite().await;
    default_page_and_replay(f.store.as_ref()).await;
}

#[tokio::test]
async fn default_page_and_replay_postgres() {
    let Some(f) = common::postgres("default_page_and_replay_postgres").await else {
        return;
    };
    default_page_and_replay(f.store.as_ref()).await;
}

/// Imports the file at `path` in batches of `batch`, with no progress callback.
async fn import_file(
    store: &dyn Store,
    clock: &ManualClock,
    c: &IngestContext,
    path: &str,
    batch: usize,
) -> ImportProgress {
    let (reader, _, bytes) = open_input(path).expect("open");
    import_reader(
        store,
        reader,
        bytes,
        clock,
        c,
        ImportOptions::with_batch(batch),
        |_| {},
    )
    .await
    .expect("import")
}

async fn corpus_hour(store: &dyn Store) {
    let file = corpus_dir().join("gh-pulse/gharchive-2026-06-01-15-first5000.jsonl");
    let path = file.to_str().expect("utf-8 path");
    let clock = ManualClock::new(t0());
    let c = ctx(EventOrigin::Gharchive);

    let (reader, _, bytes) = open_input(path).expect("open");
    let mut calls = 0;
    // Batches of 2,000: several progress reports for the 5,000 lines.
    let first = import_reader(
        store,
        reader,
        bytes,
        &clock,
        &c,
        ImportOptions::with_batch(2_000),
        |_| calls += 1,
    )
    .await
    .expect("import");
    assert!(calls >= 2, "progress is reported per batch");
    assert_eq!(first.lines, 5_000);
    assert_eq!(first.counts.events_received, 5_000);
    assert_eq!(first.counts.push_events_seen, 4_268);
    assert_eq!(first.counts.events_created, 4_268);
    assert_eq!(
        first.counts.events_quarantined, 0,
        "nothing valid is quarantined"
    );
    assert_eq!(first.counts.events_ignored, 732);
    assert_eq!(first.counts.events_failed, 0);
    assert_eq!(store.count_rows("push_events").await.expect("count"), 4_268);
    let actors = store.count_rows("actors").await.expect("count");

    clock.advance(SignedDuration::from_secs(3600));
    let second = import_file(store, &clock, &c, path, 1_000).await;
    assert_eq!(second.counts.events_created, 0);
    assert_eq!(second.counts.duplicates_skipped, 4_268);
    assert_eq!(second.counts.events_quarantined, 0);
    assert_eq!(store.count_rows("push_events").await.expect("count"), 4_268);
    assert_eq!(store.count_rows("actors").await.expect("count"), actors);
}

#[tokio::test]
async fn corpus_hour_sqlite() {
    let f = common::sqlite().await;
    corpus_hour(f.store.as_ref()).await;
}

#[tokio::test]
async fn corpus_hour_postgres() {
    let Some(f) = common::postgres("corpus_hour_postgres").await else {
        return;
    };
    corpus_hour(f.store.as_ref()).await;
}

/// GitHub's PushEvents of 2012 have no `payload.before`: both real ones are valid and
/// stored, with no before, by the page path and by the import alike, and a replay of either
/// is a duplicate.
async fn pushes_of_2012_without_before(store: &dyn Store) {
    let file = corpus_dir().join("old-shapes/push-2012-without-before.jsonl");
    let text = std::fs::read_to_string(&file).expect("readable");
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(events.len(), 2);
    let page = ingest_page(store, events[..1].to_vec(), &ctx(EventOrigin::Feed), t0())
        .await
        .expect("ingest");
    assert_eq!(
        (page.events_created, page.events_quarantined),
        (1, 0),
        "{page:?}"
    );
    let clock = ManualClock::new(t0());
    let c = ctx(EventOrigin::Gharchive);
    let got = import_file(store, &clock, &c, file.to_str().expect("utf-8"), 1).await;
    assert_eq!(got.counts.events_quarantined, 0, "{got:?}");
    assert_eq!(got.counts.events_created, 1, "{got:?}");
    assert_eq!(got.counts.duplicates_skipped, 1, "{got:?}");
    for id in ["1526010140", "1526009779"] {
        let stored = store.push_event(id).await.expect("read").expect("stored");
        assert_eq!(stored.before_sha, None, "{id}");
        assert_eq!(stored.git_ref, "refs/heads/master");
        assert_eq!(stored.head_sha.len(), 40);
    }
    assert_eq!(
        store.count_rows("quarantined_events").await.expect("count"),
        0
    );
}

#[tokio::test]
async fn pushes_of_2012_without_before_sqlite() {
    let f = common::sqlite().await;
    pushes_of_2012_without_before(f.store.as_ref()).await;
}

#[tokio::test]
async fn pushes_of_2012_without_before_postgres() {
    let Some(f) = common::postgres("pushes_of_2012_without_before_postgres").await else {
        return;
    };
    pushes_of_2012_without_before(f.store.as_ref()).await;
}

/// Both PushEvent payload shapes of `sample_hour.jsonl`, the array form of
/// `sample_events.json`, gzip input, and lines that are not JSON.
async fn sample_files_gzip_and_garbage(f: &common::Fixture) {
    let store = f.store.as_ref();
    let clock = ManualClock::new(t0());
    let c = ctx(EventOrigin::Gharchive);
    let dir = corpus_dir().join("gh-pulse");

    let hour = dir.join("sample_hour.jsonl");
    let got = import_file(store, &clock, &c, hour.to_str().expect("utf-8"), 3).await;
    assert_eq!(got.lines, 7);
    assert_eq!(got.counts.events_quarantined, 0);
    assert_eq!(got.counts.events_created, got.counts.push_events_seen);
    assert!(got.counts.events_created >= 2);
    stored_as_read(f, &hour).await;

    let events = dir.join("sample_events.json");
    let got = import_file(store, &clock, &c, events.to_str().expect("utf-8"), 100).await;
    assert_eq!(got.lines, 5);
    assert_eq!(got.counts.events_quarantined, 0);
    assert!(got.counts.events_created >= 1);

    // The same hour, gzipped, with lines of garbage appended (two the same, one not UTF-8):
    // all duplicates, and the garbage quarantined once per distinct line.
    let tmp = tempfile::tempdir().expect("tmp");
    let gz = tmp.path().join("hour.json.gz");
    {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).expect("create"),
            flate2::Compression::fast(),
        );
        enc.write_all(&std::fs::read(&hour).expect("read"))
            .expect("write");
        enc.write_all(b"\n{not json\n{not json\n[1,2]\n{\"id\": \"\xff\"}\n")
            .expect("write");
        enc.finish().expect("finish");
    }
    let got = import_file(store, &clock, &c, gz.to_str().expect("utf-8"), 100).await;
    assert_eq!(got.lines, 11);
    assert_eq!(got.counts.events_created, 0);
    assert_eq!(got.counts.events_quarantined, 4);
    assert_eq!(
        store.count_rows("quarantined_events").await.expect("count"),
        3
    );
}

/// Every PushEvent of the JSON-lines file at `path` is stored with its envelope as read: the
/// same JSON value on both backends, and on SQLite (a TEXT column) the line itself, byte for
/// byte.
async fn stored_as_read(f: &common::Fixture, path: &std::path::Path) {
    use sqlx::Connection;
    let text = std::fs::read_to_string(path).expect("read");
    let mut sqlite = if f.target.starts_with("postgres") {
        None
    } else {
        Some(
            sqlx::SqliteConnection::connect(&format!("sqlite://{}", f.target))
                .await
                .expect("open the SQLite file"),
        )
    };
    let mut checked = 0;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let value: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        if value["type"] != "PushEvent" {
            continue;
        }
        let id = value["id"].as_str().expect("an event id");
        let stored = f.store.push_event(id).await.expect("read").expect("stored");
        assert_eq!(stored.raw, value, "event {id}");
        if let Some(conn) = sqlite.as_mut() {
            let raw: String =
                sqlx::query_scalar("SELECT raw_json FROM push_events WHERE github_event_id = ?")
                    .bind(id)
                    .fetch_one(&mut *conn)
                    .await
                    .expect("select");
            assert_eq!(raw, line, "event {id}: the line as read");
        }
        checked += 1;
    }
    assert!(checked >= 2, "the file holds PushEvents");
    if let Some(conn) = sqlite {
        conn.close().await.expect("close");
    }
}

headroom_testkit::both_backends!(sample_files_gzip_and_garbage);
