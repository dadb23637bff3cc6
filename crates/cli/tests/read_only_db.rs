//! Commands that only read an SQLite database (`status`, `sync status`, `serve`) open it
//! read-only: they work on one in a read-only directory and change nothing in or beside it;
//! and a database refused as another application's is left byte for byte as it was, with
//! nothing new beside it.

#![allow(clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use headroom_core::clock::{Clock, SignedDuration, TokioClock};

mod common;
use common::BIN;

/// Every file of `dir` with its bytes.
fn listing(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("list")
        .map(|entry| {
            let entry = entry.expect("entry");
            (
                entry.file_name().to_string_lossy().into_owned(),
                std::fs::read(entry.path()).expect("read"),
            )
        })
        .collect()
}

/// `headroom --db DB ARGS…` in `dir` under `wrapper` (a shell script run with the binary as
/// `$0` and the arguments after it), ended at 60 s if it has not ended by then.
fn run(dir: &Path, wrapper: &[&str], db: &str, args: &[&str]) -> Output {
    let mut cmd = if wrapper.is_empty() {
        Command::new(BIN)
    } else {
        let mut c = Command::new(wrapper[0]);
        c.args(&wrapper[1..]).arg(BIN);
        c
    };
    let mut child = cmd
        .current_dir(dir)
        .args(["--db", db])
        .args(args)
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_CONFIG")
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let clock = TokioClock::system();
    let deadline = clock.now() + SignedDuration::from_secs(60);
    while child.try_wait().expect("poll").is_none() && clock.now() < deadline {
        runtime.block_on(clock.sleep(SignedDuration::from_millis(20)));
    }
    let _ = child.kill();
    child.wait_with_output().expect("output")
}

/// `serve` on `db` under `wrapper`: it must come up and answer `GET /status` with 200; then
/// it is stopped. Its first stdout line and the answer's status line.
fn serve_once(dir: &Path, wrapper: &[&str], db: &str) -> (String, String) {
    let mut cmd = if wrapper.is_empty() {
        Command::new(BIN)
    } else {
        let mut c = Command::new(wrapper[0]);
        c.args(&wrapper[1..]).arg(BIN);
        c
    };
    let mut child = cmd
        .current_dir(dir)
        .args(["--db", db, "serve", "--listen", "127.0.0.1:0"])
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_CONFIG")
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut first = String::new();
    let stdout = child.stdout.take().expect("stdout");
    // A refusal closes stdout at once: the line is then empty.
    BufReader::new(stdout).read_line(&mut first).expect("line");
    let answer = first
        .trim()
        .strip_prefix("headroom serve: dashboard on http://")
        .and_then(|rest| rest.strip_suffix('/'))
        .map(|addr| {
            let mut stream = std::net::TcpStream::connect(addr).expect("connect");
            stream
                .set_read_timeout(Some(std::time::Duration::from_secs(30)))
                .expect("timeout");
            write!(
                stream,
                "GET /status HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
            )
            .expect("request");
            let mut text = String::new();
            let _ = stream.read_to_string(&mut text);
            text.lines().next().unwrap_or_default().to_owned()
        })
        .unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    (first, answer)
}

/// A headroom database of five events in `dir/h.db`, without the lock files the import
/// left beside it (so that a command creating one shows).
fn imported(dir: &Path) -> String {
    let events = dir.join("events.json");
    common::write_push_archive(&events, 5, 2, 3, 0);
    let db = dir.join("h.db").display().to_string();
    let out = run(
        dir,
        &[],
        &db,
        &["import", "gharchive", events.to_str().expect("utf-8")],
    );
    assert!(out.status.success(), "{out:?}");
    std::fs::remove_file(&events).expect("rm");
    for lock in ["h.db-open-lock", "h.db-import-lock"] {
        let _ = std::fs::remove_file(dir.join(lock));
    }
    db
}

/// The read-only commands, each with what its output must say.
const READERS: [(&[&str], &str); 3] = [
    (&["status"], "Persisted push events:            5"),
    (&["status", "--json"], "\"captured_at\""),
    (&["sync", "status"], "no unfinished sync runs"),
];

/// Defect: `import` into another application's SQLite file was refused, but only after the
/// open had switched the file to WAL (rewriting its header) and made an `-open-lock` file
/// beside it; `status` and the other read-only commands did the same. Now the refusal comes
/// first: the file is byte for byte as it was, and nothing is new beside it (no `-wal`,
/// `-shm` or lock file), whether the application kept it in rollback or WAL mode.
#[test]
fn a_refused_foreign_database_is_left_byte_for_byte_as_it_was() {
    let dir = tempfile::tempdir().expect("tmp");
    let events = dir.path().join("events.json");
    std::fs::write(&events, "").expect("write");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    for mode in ["DELETE", "WAL"] {
        let apps = dir.path().join(format!("app-{mode}"));
        std::fs::create_dir(&apps).expect("mkdir");
        let app = apps.join("app.db");
        runtime.block_on(async {
            use sqlx::Connection as _;
            let url = format!("sqlite://{}?mode=rwc", app.display());
            let mut conn = sqlx::SqliteConnection::connect(&url)
                .await
                .expect("connects");
            for sql in [
                format!("PRAGMA journal_mode = {mode}"),
                "CREATE TABLE invoices (id INTEGER PRIMARY KEY)".to_owned(),
                "INSERT INTO invoices VALUES (1)".to_owned(),
            ] {
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .execute(&mut conn)
                    .await
                    .expect("writes");
            }
            conn.close().await.expect("closes");
        });
        let before = listing(&apps);
        assert_eq!(before.keys().collect::<Vec<_>>(), ["app.db"]);
        let db = app.display().to_string();
        let events = events.to_str().expect("utf-8");
        for args in [
            &["import", "gharchive", events][..],
            &["status"],
            &["status", "--json"],
            &["sync", "status"],
            &["serve", "--listen", "127.0.0.1:0"],
        ] {
            let out = run(dir.path(), &[], &db, args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{mode} {args:?}: {err}");
            assert!(
                err.contains("another application"),
                "{mode} {args:?}: {err}"
            );
            assert!(
                listing(&apps) == before,
                "{mode} {args:?} changed the directory: {:?}",
                listing(&apps).keys().collect::<Vec<_>>()
            );
        }
    }
}

/// Defect: `status`, `sync status` and `serve` failed on a database in a read-only
/// directory (they opened it for writing, to migrate it and make a lock file beside it). Now
/// they open it read-only and work. The directory is a read-only bind mount in a mount
/// namespace of the command's own (`unshare -rm`), which stops root as well (a 0555
/// directory does not).
#[test]
fn read_only_commands_work_on_a_database_in_a_read_only_directory() {
    let dir = tempfile::tempdir().expect("tmp");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).expect("mkdir");
    let db = imported(&data);
    let data = data.to_str().expect("utf-8");
    // `$D` read-only for the command; exit 98 if it is not.
    let script = r#"mount --bind "$D" "$D" && mount -o remount,bind,ro "$D" || exit 97
        if touch "$D/probe" 2>/dev/null; then exit 98; fi
        exec "$0" "$@""#;
    let probe = Command::new("unshare")
        .args(["-rm", "sh", "-c", script, "true"])
        .env("D", data)
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        headroom_testkit::skip(
            "read_only_commands_work_on_a_database_in_a_read_only_directory",
            "`unshare -rm` cannot make a read-only bind mount on this machine",
        );
        return;
    }
    let wrapper = [
        "env",
        &format!("D={data}"),
        "unshare",
        "-rm",
        "sh",
        "-c",
        script,
    ];
    for (args, says) in READERS {
        let out = run(dir.path(), &wrapper, &db, args);
        let (stdout, err) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stdout}{err}");
        assert!(stdout.contains(says), "{args:?}: {stdout}");
    }
    let (first, answer) = serve_once(dir.path(), &wrapper, &db);
    assert!(
        first.starts_with("headroom serve: dashboard on"),
        "{first:?}"
    );
    assert!(answer.contains(" 200 "), "{answer:?}");
}

/// Defect: the read-only commands opened the database for writing (migrations, a lock file
/// beside it). In a directory they could write to, they now leave the file as it was and
/// add nothing beside it but what any SQLite reader of a WAL database shares with its
/// writers: the `-shm` index and an empty `-wal`.
#[test]
fn read_only_commands_write_nothing_to_the_database_or_beside_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).expect("mkdir");
    let db = imported(&data);
    let before = listing(&data);
    for (args, says) in READERS {
        let out = run(dir.path(), &[], &db, args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        assert!(stdout.contains(says), "{args:?}: {stdout}");
    }
    let (first, answer) = serve_once(dir.path(), &[], &db);
    assert!(
        first.starts_with("headroom serve: dashboard on"),
        "{first:?}"
    );
    assert!(answer.contains(" 200 "), "{answer:?}");
    let mut after = listing(&data);
    assert_eq!(after.remove("h.db-wal").unwrap_or_default(), b"", "-wal");
    after.remove("h.db-shm");
    assert!(
        after == before,
        "{:?} became {:?}",
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
}
