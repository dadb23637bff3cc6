//! The bulk writer (archive imports) against the page path it must match: the same rows in
//! actors, repositories, push_events and quarantined_events for the same batches, on SQLite
//! (its own rusqlite connection) and PostgreSQL; a bad event fails alone.

#![allow(clippy::expect_used)]

mod common;

use headroom_core::clock::{SignedDuration, Timestamp, TokioClock};
use headroom_store::StoreRead as _;
use headroom_store::bulk::{BulkItem, BulkOptions, BulkOutcome, BulkPush, BulkWriter, TxWriter};
use headroom_store::{
    ActorRef, EventOrigin, PgStore, PushEventWrite, QuarantinedEvent, RepositoryRef, SqliteStore,
    Store, StoreError,
};

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

/// A tiny deterministic generator (no clock, no global state).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

fn push(
    id: u64,
    actor: (i64, &str),
    repo: (i64, &str),
    occurred: i64,
    received: i64,
) -> PushEventWrite {
    PushEventWrite {
        github_event_id: id.to_string(),
        github_push_id: Some(1000 + occurred),
        actor: ActorRef {
            github_id: actor.0,
            login: actor.1.into(),
            display_login: Some(actor.1.into()),
            url: (actor.0 % 2 == 0).then(|| format!("https://api.github.com/users/{}", actor.1)),
            avatar_url: None,
        },
        repository: RepositoryRef {
            github_id: repo.0,
            full_name: repo.1.into(),
            url: Some(format!("https://api.github.com/repos/{}", repo.1)),
        },
        git_ref: "refs/heads/main".into(),
        head_sha: "a".repeat(40),
        before_sha: Some("b".repeat(40)),
        commit_count: id.is_multiple_of(3).then_some(2),
        distinct_commit_count: id.is_multiple_of(3).then_some(1),
        occurred_at: t(occurred),
        received_at: t(received),
        ingestion_run_id: None,
        origin: EventOrigin::Gharchive,
        raw: serde_json::json!({"id": id.to_string(), "type": "PushEvent", "n": [1, 2]}),
    }
}

fn bulk(event: PushEventWrite) -> BulkItem {
    BulkItem::Push(Box::new(BulkPush::new(event).expect("serializable")))
}

fn quarantine(n: u64, received: i64) -> QuarantinedEvent {
    QuarantinedEvent {
        payload_fingerprint: format!("{n:064x}"),
        github_event_id: Some(n.to_string()),
        event_type: Some("PushEvent".into()),
        error_code: "missing_field".into(),
        error_message: format!("payload.head is missing ({n})"),
        origin: EventOrigin::Gharchive,
        received_at: t(received),
        raw: Some(serde_json::json!({"id": n.to_string()})),
        raw_text: None,
    }
}

/// Batches with duplicates inside and across them, entities renamed, activity out of order.
fn batches(seed: u64) -> Vec<Vec<BulkItem>> {
    let mut rng = Lcg(seed);
    let logins = ["octocat", "hubot", "monalisa", "mallory"];
    let mut out = Vec::new();
    for b in 0..6 {
        let len = 1 + rng.next(40);
        let mut batch = Vec::new();
        for _ in 0..len {
            let received = 100 * b + rng.next(3) as i64;
            if rng.next(10) == 0 {
                batch.push(BulkItem::Quarantine(Box::new(quarantine(
                    rng.next(4),
                    received,
                ))));
                continue;
            }
            let actor = 1 + rng.next(6) as i64;
            let repo = 50 + rng.next(6) as i64;
            let login = logins[rng.next(logins.len() as u64) as usize];
            let name = format!("org{}/repo{repo}", rng.next(2));
            batch.push(bulk(push(
                rng.next(60),
                (actor, login),
                (repo, &name),
                rng.next(1000) as i64,
                received,
            )));
        }
        out.push(batch);
    }
    out
}

fn dump_sql(table: &str, columns: &[&str], order: &str) -> String {
    let row = columns
        .iter()
        .map(|c| format!("COALESCE(CAST({c} AS TEXT), '-')"))
        .collect::<Vec<_>>()
        .join(" || '|' || ");
    format!("SELECT {row} FROM {table} ORDER BY {order}")
}

const TIMES: [&str; 7] = [
    "first_seen_at_ms",
    "last_seen_at_ms",
    "latest_event_at_ms",
    "event_native_at_ms",
    "batch_pending_at_ms",
    "created_at_ms",
    "updated_at_ms",
];

fn dumps() -> Vec<String> {
    let mut actor: Vec<&str> = vec![
        "github_id",
        "login",
        "display_login",
        "detail_url",
        "avatar_url",
        "enrichment_status",
        "enrichment_stage",
    ];
    actor.extend(TIMES);
    let mut repo: Vec<&str> = vec![
        "github_id",
        "full_name",
        "name",
        "owner_login",
        "detail_url",
        "enrichment_status",
        "enrichment_stage",
    ];
    repo.extend(TIMES);
    vec![
        dump_sql("actors", &actor, "github_id"),
        dump_sql("repositories", &repo, "github_id"),
        dump_sql(
            "push_events",
            &[
                "github_event_id",
                "github_push_id",
                "github_actor_id",
                "github_repository_id",
                "actor_login",
                "repository_name",
                "ref",
                "head_sha",
                "before_sha",
                "commit_count",
                "distinct_commit_count",
                "occurred_at_ms",
                "ingestion_run_id",
                "source",
                "created_at_ms",
            ],
            "id",
        ),
        dump_sql(
            "quarantined_events",
            &[
                "payload_fingerprint",
                "github_event_id",
                "event_type",
                "error_code",
                "error_message",
                "occurrence_count",
                "source",
                "first_received_at_ms",
                "last_received_at_ms",
                "raw_json",
                "raw_text",
            ],
            "payload_fingerprint",
        ),
    ]
}

/// Writes every batch, then all of them again later (a replay), through `writer`.
async fn write_all(writer: &mut dyn BulkWriter, seed: u64) -> Vec<Vec<BulkOutcome>> {
    let mut outcomes = Vec::new();
    for replay in [0, 10_000] {
        outcomes.extend(write_pass(writer, seed, replay).await);
    }
    writer.finish().await.expect("finish");
    outcomes
}

/// The batches of `seed`, received `replay` seconds later than the first time.
async fn write_pass(writer: &mut dyn BulkWriter, seed: u64, replay: i64) -> Vec<Vec<BulkOutcome>> {
    let mut outcomes = Vec::new();
    for mut batch in batches(seed) {
        for item in &mut batch {
            match item {
                BulkItem::Push(p) => p.event.received_at += secs(replay),
                BulkItem::Quarantine(q) => q.received_at += secs(replay),
            }
        }
        outcomes.push(writer.write(batch).await.expect("batch"));
    }
    outcomes
}

fn secs(secs: i64) -> headroom_core::clock::SignedDuration {
    headroom_core::clock::SignedDuration::from_secs(secs)
}

/// Every table dump of `bulk`'s database equals `page`'s (and none is empty). A macro
/// because the two backends' pools are different types.
macro_rules! assert_same_tables {
    ($page:expr, $bulk:expr, $seed:expr) => {
        for sql in dumps() {
            let a: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.clone()))
                .fetch_all($page.pool())
                .await
                .expect("dump");
            let b: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.clone()))
                .fetch_all($bulk.pool())
                .await
                .expect("dump");
            assert!(!a.is_empty(), "{sql}");
            assert_eq!(b, a, "seed {}: {sql}", $seed);
        }
        // The same JSON, not the same text: the bulk writers keep each envelope's text as
        // read, the page path writes the envelope it parsed.
        let raw = "SELECT CAST(raw_json AS TEXT) FROM push_events ORDER BY id";
        let (a, b): (Vec<String>, Vec<String>) = (
            sqlx::query_scalar(raw)
                .fetch_all($page.pool())
                .await
                .expect("dump"),
            sqlx::query_scalar(raw)
                .fetch_all($bulk.pool())
                .await
                .expect("dump"),
        );
        let parsed = |texts: Vec<String>| -> Vec<serde_json::Value> {
            texts
                .iter()
                .map(|t| serde_json::from_str(t).expect("stored JSON"))
                .collect()
        };
        assert_eq!(parsed(b), parsed(a), "seed {}: push_events.raw_json", $seed);
    };
}

/// Writes seed's events through a bulk writer: in one writer, or with `new_writer_for_replay`
/// the first pass and its replay in two writers, each finished.
async fn write_bulk(
    store: &dyn Store,
    options: BulkOptions,
    seed: u64,
    new_writer_for_replay: bool,
) -> Vec<Vec<BulkOutcome>> {
    if !new_writer_for_replay {
        let mut writer = store.bulk_writer(options).await.expect("writer");
        return write_all(writer.as_mut(), seed).await;
    }
    let mut got = Vec::new();
    for replay in [0, 10_000] {
        let mut writer = store.bulk_writer(options).await.expect("writer");
        got.extend(write_pass(writer.as_mut(), seed, replay).await);
        writer.finish().await.expect("finish");
    }
    got
}

#[tokio::test]
async fn bulk_matches_the_page_path_sqlite() {
    for seed in 1..=8 {
        let dir = tempfile::tempdir().expect("tmp");
        let open = |name: &str| {
            let path = dir.path().join(name);
            async move {
                SqliteStore::open(path.to_str().expect("utf-8"))
                    .await
                    .expect("open")
            }
        };
        let (page, bulk) = (open("page.db").await, open("bulk.db").await);
        let expected = write_all(&mut TxWriter::new(&page), seed).await;
        // Commits after every batch, every few, or only at the end: entity rows are written
        // at each commit, inserts first once a window's rows were mostly new, and the rows
        // come out the same whichever way.
        let commit_every = [1, 30, 80, BulkOptions::default().commit_every][(seed % 4) as usize];
        let options = BulkOptions {
            commit_every,
            ..BulkOptions::default()
        };
        // Past seed 4, a new writer for the replay: its first window has no last one to go
        // by and asks the table, which holds every row by then (the touch comes first).
        let got = write_bulk(&bulk, options, seed, seed > 4).await;
        assert_eq!(got, expected, "outcomes, seed {seed}");
        assert_same_tables!(page, bulk, seed);
        // The bulk connection does not evaluate CHECK constraints; integrity_check does.
        let integrity: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check")
            .fetch_all(bulk.pool())
            .await
            .expect("integrity_check");
        assert_eq!(integrity, ["ok"], "seed {seed}");
        page.close().await;
        bulk.close().await;
    }
}

#[tokio::test]
async fn bulk_matches_the_page_path_postgres() {
    let Some(admin) = common::admin_url("bulk_matches_the_page_path_postgres") else {
        return;
    };
    for seed in 1..=6 {
        let (db_a, db_b) = (
            common::PgDatabase::create(&admin).await,
            common::PgDatabase::create(&admin).await,
        );
        let (page, bulk): (PgStore, PgStore) = (
            common::pg_store(&db_a, 2).await,
            common::pg_store(&db_b, 2).await,
        );
        let expected = write_all(&mut TxWriter::new(&page), seed).await;
        // Commits after every batch, every few, or only at the end: the entity rows are
        // written once per commit window, and come out the same whichever way; a new writer
        // for the replay finds every row stored.
        let commit_every = [1, 30, 80, BulkOptions::default().commit_every][(seed % 4) as usize];
        let options = BulkOptions {
            commit_every,
            ..BulkOptions::default()
        };
        let got = write_bulk(&bulk, options, seed, seed > 3).await;
        assert_eq!(got, expected, "outcomes, seed {seed}");
        assert_same_tables!(page, bulk, seed);
        page.close().await;
        bulk.close().await;
    }
}

async fn a_bad_event_fails_alone(store: &dyn Store) {
    let mut writer = store
        .bulk_writer(BulkOptions::default())
        .await
        .expect("writer");
    let mut bad = push(2, (8, "mallory"), (80, "mal/ware"), 2, 10);
    // No such ingestion run: the foreign key refuses this one row.
    bad.ingestion_run_id = Some(12_345);
    let batch = vec![
        bulk(push(1, (7, "octocat"), (70, "octo/hello"), 1, 10)),
        bulk(bad),
        BulkItem::Quarantine(Box::new(quarantine(9, 10))),
        bulk(push(3, (7, "octocat"), (70, "octo/hello"), 3, 10)),
        bulk(push(3, (7, "octocat"), (70, "octo/hello"), 3, 10)),
    ];
    let outcome = writer.write(batch.clone()).await.expect("batch");
    writer.finish().await.expect("finish");
    assert_eq!(outcome[0], BulkOutcome::Created);
    assert!(
        matches!(
            outcome[1],
            BulkOutcome::Failed(StoreError::MissingReference(_))
        ),
        "{:?}",
        outcome[1]
    );
    assert_eq!(
        outcome[2],
        BulkOutcome::Quarantined {
            occurrence_count: 1
        }
    );
    assert_eq!(outcome[3], BulkOutcome::Created);
    assert_eq!(outcome[4], BulkOutcome::Duplicate);
    assert_eq!(store.count_rows("push_events").await.expect("count"), 2);
    // The refused event's entities went with it.
    assert_eq!(store.actor(8).await.expect("read"), None);
    assert_eq!(store.repository(80).await.expect("read"), None);
    let octocat = store.actor(7).await.expect("read").expect("present");
    assert_eq!(
        (
            octocat.first_seen_at,
            octocat.last_seen_at,
            octocat.latest_event_at
        ),
        (Some(t(10)), Some(t(10)), Some(t(3)))
    );

    // Again: duplicates, the bad one still refused, the quarantine counted twice.
    let outcome = writer.write(batch).await.expect("batch");
    writer.finish().await.expect("finish");
    assert_eq!(outcome[0], BulkOutcome::Duplicate);
    assert!(matches!(outcome[1], BulkOutcome::Failed(_)));
    assert_eq!(
        outcome[2],
        BulkOutcome::Quarantined {
            occurrence_count: 2
        }
    );
    assert_eq!(outcome[3], BulkOutcome::Duplicate);
    assert_eq!(store.count_rows("push_events").await.expect("count"), 2);
    assert_eq!(
        store.actor(7).await.expect("read").expect("present"),
        octocat
    );
}

#[tokio::test]
async fn a_bad_event_fails_alone_sqlite() {
    let f = common::sqlite().await;
    a_bad_event_fails_alone(f.store.as_ref()).await;
    f.store.close().await;
}

#[tokio::test]
async fn a_bad_event_fails_alone_in_memory_sqlite() {
    let store = SqliteStore::open(":memory:").await.expect("open");
    a_bad_event_fails_alone(&store).await;
}

#[tokio::test]
async fn a_bad_event_fails_alone_postgres() {
    let Some(f) = common::postgres("a_bad_event_fails_alone_postgres").await else {
        return;
    };
    a_bad_event_fails_alone(f.store.as_ref()).await;
    f.store.close().await;
}

/// Writes `batches` through the page path on one database and the bulk writer on another,
/// and compares the outcomes and every table.
async fn page_and_bulk_agree_postgres(
    name: &str,
    batches: Vec<Vec<BulkItem>>,
) -> Option<Vec<Vec<BulkOutcome>>> {
    let admin = common::admin_url(name)?;
    let (db_a, db_b) = (
        common::PgDatabase::create(&admin).await,
        common::PgDatabase::create(&admin).await,
    );
    let (page, bulk): (PgStore, PgStore) = (
        common::pg_store(&db_a, 2).await,
        common::pg_store(&db_b, 2).await,
    );
    let mut expected = Vec::new();
    let mut tx_writer = TxWriter::new(&page);
    for batch in batches.clone() {
        expected.push(tx_writer.write(batch).await.expect("page batch"));
    }
    let mut writer = bulk
        .bulk_writer(BulkOptions::default())
        .await
        .expect("writer");
    let mut got = Vec::new();
    for batch in batches {
        got.push(writer.write(batch).await.expect("bulk batch"));
    }
    writer.finish().await.expect("finish");
    drop(writer);
    assert_eq!(got, expected, "outcomes");
    assert_same_tables!(page, bulk, name);
    page.close().await;
    bulk.close().await;
    Some(got)
}

/// Text COPY has to escape, and JSON PostgreSQL refuses: a login and a repository name with
/// a tab, a newline, a backslash and `\N`; an envelope whose own text has tabs, newlines and
/// backslashes between and inside its tokens; one whose envelope has a `\u0000` escape
/// (`jsonb` refused it; the `json` column keeps it, as SQLite does); one whose login holds a
/// NUL, which no text column takes (it fails alone, its entities with it, on both paths); an
/// event id repeated in the batch.
#[tokio::test]
async fn copy_escapes_and_refusals_match_the_page_path_postgres() {
    let mut odd = push(1, (3, "tab\there\\N"), (30, "new\nline/back\\slash"), 1, 10);
    odd.git_ref = "refs/heads/\\N".into();
    let odd_text = "{\"id\":\"1\",\n\t\"type\":\"PushEvent\",\r\n\"s\":\"back\\\\slash \\t \\n \\\"q\\\" é😀\"}";
    let bad = push(2, (4, "nul\0login"), (40, "nul/repo"), 2, 10);
    let escaped = push(8, (5, "escaped"), (41, "esc/repo"), 8, 10);
    let escaped_text = "{\"id\":\"8\",\"s\":\"a\\u0000b\"}";
    let batch = vec![
        BulkItem::Push(Box::new(BulkPush::from_text(odd.clone(), odd_text.into()))),
        bulk(bad),
        bulk(push(5, (3, "renamed"), (30, "o/r"), 5, 11)),
        BulkItem::Push(Box::new(BulkPush::from_text(odd, odd_text.into()))),
        BulkItem::Quarantine(Box::new(quarantine(7, 11))),
        BulkItem::Push(Box::new(BulkPush::from_text(escaped, escaped_text.into()))),
    ];
    // The second batch repeats the first (all duplicates but the refused one) and adds new
    // events naming the same entities.
    let mut second = batch.clone();
    second.push(bulk(push(6, (3, "tab\there\\N"), (40, "nul/repo"), 6, 20)));
    let Some(got) = page_and_bulk_agree_postgres(
        "copy_escapes_and_refusals_match_the_page_path_postgres",
        vec![batch, second],
    )
    .await
    else {
        return;
    };
    assert_eq!(got[0][0], BulkOutcome::Created);
    assert!(
        matches!(got[0][1], BulkOutcome::Failed(_)),
        "{:?}",
        got[0][1]
    );
    assert_eq!(got[0][3], BulkOutcome::Duplicate);
    assert_eq!(got[0][5], BulkOutcome::Created);
    assert_eq!(got[1][0], BulkOutcome::Duplicate);
    assert_eq!(got[1][5], BulkOutcome::Duplicate);
    assert_eq!(got[1][6], BulkOutcome::Created);
}

/// Which of push_events' per-actor and per-repository indexes exist.
/// push_events' deferrable indexes and validated foreign keys to actors and repositories
/// that are present, by name.
async fn deferrable_indexes(store: &PgStore) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT name FROM ( \
             SELECT indexname::TEXT AS name FROM pg_indexes WHERE tablename = 'push_events' \
             AND indexname IN ('push_events_by_actor', 'push_events_by_repository') \
             UNION ALL SELECT conname::TEXT FROM pg_constraint \
             WHERE conrelid = 'push_events'::regclass AND contype = 'f' AND convalidated \
             AND conname IN ('push_events_github_actor_id_fkey', \
                 'push_events_github_repository_id_fkey') \
         ) AS deferred ORDER BY name",
    )
    .fetch_all(store.pool())
    .await
    .expect("indexes")
}

/// An import into a table smaller than itself drops push_events' random-key indexes and its
/// foreign keys to the entities, and builds them at its finish (the keys validated and
/// enforced again); a store opened meanwhile leaves them to it; one killed before its finish
/// leaves them missing, and the next open builds them.
#[tokio::test]
async fn deferred_indexes_are_built_at_the_finish_or_the_next_open_postgres() {
    let Some(admin) =
        common::admin_url("deferred_indexes_are_built_at_the_finish_or_the_next_open_postgres")
    else {
        return;
    };
    let db = common::PgDatabase::create(&admin).await;
    let store = common::pg_store(&db, 2).await;
    let both = [
        "push_events_by_actor",
        "push_events_by_repository",
        "push_events_github_actor_id_fkey",
        "push_events_github_repository_id_fkey",
    ];
    let options = BulkOptions {
        commit_every: 1,
        ..BulkOptions::default()
    };
    let mut writer = store.bulk_writer(options).await.expect("writer");
    let event = |id| bulk(push(id, (7, "octocat"), (70, "octo/hello"), 1, 10));
    writer.write(vec![event(1)]).await.expect("batch");
    assert!(deferrable_indexes(&store).await.is_empty(), "dropped");
    let meanwhile = common::pg_store(&db, 1).await;
    assert!(
        deferrable_indexes(&meanwhile).await.is_empty(),
        "left to the import"
    );
    meanwhile.close().await;
    writer.finish().await.expect("finish");
    assert_eq!(deferrable_indexes(&store).await, both);
    drop(writer);
    let orphan = sqlx::query(
        "INSERT INTO push_events (github_event_id, github_actor_id, github_repository_id, \
         actor_login, repository_name, ref, head_sha, before_sha, occurred_at_ms, \
         created_at_ms, raw_json) \
         VALUES ('orphan', 404, 70, 'nobody', 'octo/hello', 'refs/heads/main', 'a', 'b', 1, 1, \
         '{}')",
    )
    .execute(store.pool())
    .await;
    assert!(
        orphan.is_err_and(|e| e.to_string().contains("push_events_github_actor_id_fkey")),
        "the foreign key is enforced again"
    );

    // One row stored, so a second import drops them once it has created one (at its next
    // window), and is then killed: its session ends without the finish.
    let mut killed = store.bulk_writer(options).await.expect("writer");
    killed.write(vec![event(2)]).await.expect("batch");
    killed.write(vec![event(3)]).await.expect("batch");
    assert!(deferrable_indexes(&store).await.is_empty(), "dropped");
    drop(killed);
    // The server ends the killed session (and its lock) a moment after the socket closes.
    let mut built = Vec::new();
    for _ in 0..50 {
        let reopened = common::pg_store(&db, 1).await;
        built = deferrable_indexes(&reopened).await;
        reopened.close().await;
        if built.len() == both.len() {
            break;
        }
        TokioClock::system()
            .sleep(SignedDuration::from_millis(100))
            .await;
    }
    assert_eq!(built, both);
    assert_eq!(store.count_rows("push_events").await.expect("count"), 3);
    store.close().await;
}

/// An import that has grown push_events past its statistics refreshes them as it goes
/// (before its finish, which builds indexes and would refresh them anyway): a generic plan
/// made while the table was empty would otherwise stay a scan of the whole table (one probe
/// took 39 s at 252,000 rows).
#[tokio::test]
async fn an_import_refreshes_the_statistics_of_the_table_it_grows_postgres() {
    let Some(admin) =
        common::admin_url("an_import_refreshes_the_statistics_of_the_table_it_grows_postgres")
    else {
        return;
    };
    let db = common::PgDatabase::create(&admin).await;
    let store = common::pg_store(&db, 2).await;
    let reltuples = || async {
        sqlx::query_scalar::<_, f32>(
            "SELECT reltuples FROM pg_class WHERE oid = 'push_events'::regclass",
        )
        .fetch_one(store.pool())
        .await
        .expect("reltuples")
    };
    assert!(reltuples().await < 0.0, "a new table was never analyzed");
    let mut writer = store
        .bulk_writer(BulkOptions {
            commit_every: 30_000,
            ..BulkOptions::default()
        })
        .await
        .expect("writer");
    let mut id = 0;
    for _ in 0..6 {
        let batch: Vec<BulkItem> = (0..10_000)
            .map(|_| {
                id += 1;
                bulk(push(id, (7, "octocat"), (70, "octo/hello"), 1, 10))
            })
            .collect();
        writer.write(batch).await.expect("batch");
    }
    assert_eq!(
        store.count_rows("push_events").await.expect("count"),
        60_000
    );
    let estimate = reltuples().await;
    assert!(
        (50_000.0..=70_000.0).contains(&estimate),
        "refreshed after two windows: {estimate}"
    );
    writer.finish().await.expect("finish");
    store.close().await;
}

/// Another writer stores an event while an import's batch is copying it straight into
/// push_events (its insert was not committed when the batch probed, so the batch took the
/// event as new): the batch waits for that writer, then takes the event as a duplicate and
/// stores the rest, as the page path would, and the import goes on.
#[tokio::test]
async fn an_event_another_writer_stores_during_the_batch_is_a_duplicate_postgres() {
    let Some(admin) = common::admin_url(
        "an_event_another_writer_stores_during_the_batch_is_a_duplicate_postgres",
    ) else {
        return;
    };
    let db = common::PgDatabase::create(&admin).await;
    let store = common::pg_store(&db, 4).await;
    let (actor, repo) = ((7, "octocat"), (70, "octo/hello"));
    let mut writer = store
        .bulk_writer(BulkOptions::default())
        .await
        .expect("writer");
    // The first window of an import into an empty table drops push_events' keys to the
    // entities: its batches are copied straight into push_events.
    writer
        .write(vec![bulk(push(1, actor, repo, 1, 10))])
        .await
        .expect("first batch");
    let mut other = store.pool().begin().await.expect("begin");
    sqlx::query(
        "INSERT INTO push_events (github_event_id, github_actor_id, github_repository_id, \
         actor_login, repository_name, ref, head_sha, occurred_at_ms, source, created_at_ms, \
         raw_json) VALUES ('2', 7, 70, 'octocat', 'octo/hello', 'refs/heads/main', 'abc', 1, \
         'feed', 1, '{}')",
    )
    .execute(&mut *other)
    .await
    .expect("the other writer's insert");
    let batch = vec![
        bulk(push(2, actor, repo, 2, 11)),
        bulk(push(3, actor, repo, 3, 11)),
    ];
    let other_commits_once_the_batch_waits = async {
        let mut waited = false;
        for _ in 0..200 {
            let waiting: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE datname = current_database() AND wait_event_type = 'Lock'",
            )
            .fetch_one(store.pool())
            .await
            .expect("activity");
            if waiting > 0 {
                waited = true;
                break;
            }
            TokioClock::system()
                .sleep(SignedDuration::from_millis(50))
                .await;
        }
        other.commit().await.expect("the other writer commits");
        waited
    };
    let (outcomes, waited) = tokio::join!(writer.write(batch), other_commits_once_the_batch_waits);
    assert!(
        waited,
        "the batch's COPY never waited on the other writer's row: the race was not exercised"
    );
    let outcomes = outcomes.expect("the batch is written");
    assert!(
        matches!(
            outcomes.as_slice(),
            [BulkOutcome::Duplicate, BulkOutcome::Created]
        ),
        "{outcomes:?}"
    );
    writer.finish().await.expect("finish");
    let stored: Vec<(String, String)> =
        sqlx::query_as("SELECT github_event_id, source FROM push_events ORDER BY github_event_id")
            .fetch_all(store.pool())
            .await
            .expect("events");
    assert_eq!(
        stored,
        [("1", "gharchive"), ("2", "feed"), ("3", "gharchive")]
            .map(|(id, source)| (id.to_owned(), source.to_owned()))
    );
}
