//! `headroom import gharchive` as a user runs it: a corpus file, then the same lines from
//! stdin (all duplicates), a missing file (exit 1), and an import killed midway and run again.

#![allow(clippy::expect_used)]

use std::io::Write;

use headroom_core::clock::{Clock, SignedDuration, TokioClock};
use std::path::PathBuf;
use std::process::{Command, Stdio};

mod common;

/// A file of the real-data corpus kept in the repository (`testdata/corpus`).
fn corpus_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/corpus/gh-pulse")
        .join(name)
}

fn headroom(db: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_headroom"));
    cmd.arg("--db")
        .arg(db)
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_CONFIG");
    cmd
}

/// `headroom import gharchive FILE`, run to its end.
fn import(db: impl AsRef<std::ffi::OsStr>, file: &std::path::Path) -> std::process::Output {
    headroom(db)
        .args(["import", "gharchive"])
        .arg(file)
        .output()
        .expect("run")
}

#[test]
fn import_a_file_then_the_same_lines_from_stdin() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = dir.path().join("headroom.db");
    let file = corpus_file("sample_hour.jsonl");

    let out = import(&db, &file);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Lines read:                       7"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Events quarantined:               0"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Duplicates skipped:               0"),
        "{stdout}"
    );

    let mut child = headroom(&db)
        .args(["import", "gharchive", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&std::fs::read(&file).expect("read"))
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("Push events created:              0"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("Duplicates skipped:               0"),
        "{stdout}"
    );

    let out = headroom(&db)
        .args(["import", "gharchive"])
        .arg(dir.path().join("missing.json.gz"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open"));
}

#[test]
fn import_without_files_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = headroom(dir.path().join("h.db"))
        .args(["import", "gharchive"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
}

/// Envelopes in the file the kill test imports: three commit windows at `--commit-every
/// 50000` on SQLite, fifteen batches (each its own transaction) on PostgreSQL.
const KILL_TEST_ENVELOPES: u64 = 150_000;

/// push_events' per-actor and per-repository indexes on SQLite.
const PUSH_EVENT_INDEXES: &str = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' \
    AND name IN ('push_events_by_actor', 'push_events_by_repository')";

/// The database a kill test imports into, read from the test's side.
enum Target {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Target {
    fn arg(&self) -> std::ffi::OsString {
        match self {
            Target::Sqlite(path) => path.clone().into_os_string(),
            Target::Postgres(url) => url.into(),
        }
    }

    /// One number, or `None` while the database or its tables do not exist yet.
    async fn try_count(&self, sql: &str) -> Option<i64> {
        let sql = sqlx::AssertSqlSafe(sql);
        match self {
            Target::Sqlite(path) => {
                if !path.exists() {
                    return None;
                }
                let options = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(path)
                    .read_only(true);
                let pool = sqlx::SqlitePool::connect_with(options).await.ok()?;
                let n = sqlx::query_scalar(sql).fetch_one(&pool).await.ok();
                pool.close().await;
                n
            }
            Target::Postgres(url) => {
                let pool = sqlx::PgPool::connect(url).await.ok()?;
                let n = sqlx::query_scalar(sql).fetch_one(&pool).await.ok();
                pool.close().await;
                n
            }
        }
    }

    async fn count(&self, sql: &str) -> i64 {
        self.try_count(sql)
            .await
            .unwrap_or_else(|| panic!("cannot count: {sql}"))
    }
}

/// SIGKILL after the first commit: what was committed stays, whole (no event without its
/// actor and repository, whose rows are written at the commit), nothing after it is visible,
/// and importing the file again completes it exactly.
#[tokio::test(flavor = "multi_thread")]
async fn an_import_killed_after_a_commit_keeps_it_whole_and_the_next_run_completes_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = Target::Sqlite(dir.path().join("headroom.db"));
    // Commits every 50,000 envelopes, so the file holds three windows (the default is larger).
    killed_and_completed(&db, dir.path(), &["--commit-every", "50000"]).await;
    // The next run built them again.
    assert_eq!(
        db.count(PUSH_EVENT_INDEXES).await,
        2,
        "{PUSH_EVENT_INDEXES}"
    );
    // The bulk connection does not evaluate CHECK constraints; integrity_check does.
    let Target::Sqlite(path) = &db else {
        unreachable!("an SQLite target")
    };
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .read_only(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.expect("open");
    let integrity: String = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_one(&pool)
        .await
        .expect("integrity_check");
    assert_eq!(integrity, "ok");
    pool.close().await;
}

/// The same on PostgreSQL, where each batch is a transaction of its own.
#[tokio::test(flavor = "multi_thread")]
async fn the_same_on_postgres() {
    let Some(admin) = common::postgres_admin("the_same_on_postgres") else {
        return;
    };
    let name = format!("headroom_import_kill_{}", std::process::id());
    let url = common::create_database(&admin, &name).await;
    let dir = tempfile::tempdir().expect("tmp");
    killed_and_completed(
        &Target::Postgres(url),
        dir.path(),
        &["--commit-every", "50000"],
    )
    .await;
    common::drop_database(&admin, &name).await;
}

async fn killed_and_completed(db: &Target, dir: &std::path::Path, options: &[&str]) {
    let file = dir.join("archive.jsonl");
    common::write_push_archive(&file, KILL_TEST_ENVELOPES, 5_000, 7_000, 0);
    let mut child = headroom(db.arg())
        .args(["import", "gharchive"])
        .args(options)
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");

    // Wait until the first commit is visible to another connection, then kill.
    let clock = TokioClock::system();
    let deadline = clock.now() + SignedDuration::from_secs(300);
    loop {
        assert!(
            child.try_wait().expect("poll").is_none(),
            "the import ended before a commit was seen; the file is too small to kill it midway"
        );
        assert!(clock.now() < deadline, "no commit within 5 minutes");
        if db
            .try_count("SELECT COUNT(*) FROM push_events")
            .await
            .is_some_and(|n| n > 0)
        {
            break;
        }
        clock.sleep(SignedDuration::from_millis(50)).await;
    }
    child.kill().expect("SIGKILL");
    let status = child.wait().expect("wait");
    assert!(!status.success(), "{status}");

    let kept = db.count("SELECT COUNT(*) FROM push_events").await;
    assert!(
        kept > 0 && kept < KILL_TEST_ENVELOPES as i64,
        "kept {kept} of {KILL_TEST_ENVELOPES}"
    );
    for orphans in [
        "SELECT COUNT(*) FROM push_events e WHERE NOT EXISTS \
         (SELECT 1 FROM actors a WHERE a.github_id = e.github_actor_id)",
        "SELECT COUNT(*) FROM push_events e WHERE NOT EXISTS \
         (SELECT 1 FROM repositories r WHERE r.github_id = e.github_repository_id)",
        "SELECT COUNT(*) FROM actors WHERE latest_event_at_ms IS NULL",
    ] {
        assert_eq!(db.count(orphans).await, 0, "{orphans}");
    }
    if let Target::Sqlite(_) = db {
        // Into an empty table, the import dropped the two indexes in its first commit, to build
        // them at its end, which it did not reach.
        assert_eq!(
            db.count(PUSH_EVENT_INDEXES).await,
            0,
            "{PUSH_EVENT_INDEXES}"
        );
    }

    let out = import(db.arg(), &file);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let created = KILL_TEST_ENVELOPES as i64 - kept;
    assert!(
        stdout.contains(&format!("Push events created:              {created}\n")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("Duplicates skipped:               {kept}\n")),
        "{stdout}"
    );
    for (sql, expected) in [
        (
            "SELECT COUNT(*) FROM push_events",
            KILL_TEST_ENVELOPES as i64,
        ),
        ("SELECT COUNT(*) FROM actors", 5_000),
        ("SELECT COUNT(*) FROM repositories", 7_000),
        (
            "SELECT COUNT(*) FROM actors WHERE latest_event_at_ms IS NULL",
            0,
        ),
    ] {
        assert_eq!(db.count(sql).await, expected, "{sql}");
    }
}

/// Gzips `lines` of `path` into `out`, as one member.
fn gzip_file(path: &std::path::Path, out: &std::path::Path) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder
        .write_all(&std::fs::read(path).expect("read"))
        .expect("compress");
    let bytes = encoder.finish().expect("finish");
    std::fs::write(out, &bytes).expect("write");
    bytes
}

/// Issue 20, defect 2: a complete `.json.gz` followed by zero padding (which `gzip -t` and
/// `zcat` accept) imports every event; a file cut in half stores every envelope before the
/// cut, then fails saying how far it got.
#[test]
fn a_gzip_read_error_keeps_what_was_parsed_before_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let plain = dir.path().join("archive.jsonl");
    common::write_push_archive(&plain, 20_000, 5_000, 7_000, 0);
    let padded = dir.path().join("padded.json.gz");
    let mut bytes = gzip_file(&plain, &padded);
    bytes.extend([0u8; 1024]);
    std::fs::write(&padded, &bytes).expect("write");
    let db = dir.path().join("padded.db");
    let out = import(&db, &padded);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Push events created:              20000\n"),
        "{stdout}"
    );

    let cut = dir.path().join("cut.json.gz");
    let whole = gzip_file(&plain, &cut);
    std::fs::write(&cut, &whole[..whole.len() / 2]).expect("write");
    let db = dir.path().join("cut.db");
    let out = import(&db, &cut);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the input failed after"), "{stderr}");
    let target = Target::Sqlite(db);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let stored = rt.block_on(target.count("SELECT COUNT(*) FROM push_events"));
    assert!(
        stored > 5_000 && stored < 20_000,
        "about half the file is stored: {stored}"
    );
    assert!(
        stderr.contains(&format!("after {stored} lines")),
        "every line read before the cut is stored: {stderr}"
    );
}

/// Issue 20, defect 9: a UTF-8 byte-order mark before the first line is not part of the
/// first envelope: the file imports as it does without it.
#[test]
fn a_utf8_bom_does_not_quarantine_the_first_event() {
    let dir = tempfile::tempdir().expect("tmp");
    let plain = corpus_file("sample_hour.jsonl");
    let with_bom = dir.path().join("bom.jsonl");
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(std::fs::read(&plain).expect("read"));
    std::fs::write(&with_bom, bytes).expect("write");
    let summary = |file: &std::path::Path, db: &str| {
        let out = import(dir.path().join(db), file);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("Push events created") || l.starts_with("Events quarantined"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(summary(&with_bom, "bom.db"), summary(&plain, "plain.db"));
}

/// A saved `/events` response imports whatever its layout: pretty-printed (each event over
/// many lines, as GitHub and `jq` write it), one element per line, or on one line — the same
/// events each time, nothing quarantined (issue 20, item 9: pretty-printed arrays were
/// quarantined line by line).
#[test]
fn a_saved_events_array_imports_in_every_layout() {
    let dir = tempfile::tempdir().expect("tmp");
    let events: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(corpus_file("sample_events.json")).expect("corpus"),
    )
    .expect("a JSON array");
    let layouts = [
        (
            "pretty",
            serde_json::to_string_pretty(&events).expect("json"),
        ),
        ("one_line", events.to_string()),
        (
            "per_line",
            std::fs::read_to_string(corpus_file("sample_events.json")).expect("corpus"),
        ),
    ];
    for (name, text) in layouts {
        let file = dir.path().join(format!("{name}.json"));
        std::fs::write(&file, text).expect("write");
        let out = import(dir.path().join(format!("{name}.db")), &file);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name}: {stdout}");
        for line in [
            "Lines read:                       5\n",
            "Push events created:              1\n",
            "Events quarantined:               0\n",
            "Non-push events ignored:          4\n",
        ] {
            assert!(stdout.contains(line), "{name}: {stdout}");
        }
    }
}
