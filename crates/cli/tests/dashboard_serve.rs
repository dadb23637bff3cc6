//! `headroom serve` over a database `headroom demo` left: the page, the API and the feed's
//! routes answer; a non-loopback address is refused (exit 2); SIGTERM stops it even while an
//! event stream is open. And over a database a finished `headroom sync org` left: the run is
//! on the page, done, with what it spent.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use headroom_core::clock::{Clock as _, SystemClock};

mod common;
use common::BIN;

fn serve_command(db: &std::path::Path, listen: &str) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("--db")
        .arg(db)
        .args(["serve", "--listen", listen])
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_LISTEN")
        .env("RUST_LOG", "off");
    cmd
}

/// A plain HTTP/1.1 GET: the status and the body.
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).expect("response");
    let (head, body) = raw.split_once("\r\n\r\n").expect("a head");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    (status, body.to_owned())
}

#[test]
fn serve_reads_a_demo_database_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = dir.path().join("demo.db");
    let demo = Command::new(BIN)
        .args(["demo", "--db"])
        .arg(&db)
        .env("RUST_LOG", "off")
        .output()
        .expect("demo runs");
    assert_eq!(demo.status.code(), Some(0));

    let refused = serve_command(&db, "0.0.0.0:0").output().expect("runs");
    assert_eq!(
        refused.status.code(),
        Some(2),
        "a public address is refused"
    );
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("--listen") && said.contains("--allow-remote"),
        "{said}"
    );
    // `headroom run` refuses it too (issue 20: a public address only when asked for).
    let run = Command::new(BIN)
        .arg("--db")
        .arg(&db)
        .args(["run", "--listen", "0.0.0.0:0"])
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_LISTEN")
        .env("RUST_LOG", "off")
        .output()
        .expect("runs");
    assert_eq!(
        run.status.code(),
        Some(2),
        "run on a public address is refused"
    );
    let said = String::from_utf8_lossy(&run.stderr);
    assert!(
        said.contains("--listen") && said.contains("--allow-remote"),
        "{said}"
    );

    let mut child = serve_command(&db, "127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve starts");
    // Kept open to the end: the last line goes to it after the stop.
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    stdout.read_line(&mut first).expect("first line");
    let addr = first
        .trim()
        .strip_prefix("headroom serve: dashboard on http://")
        .and_then(|rest| rest.strip_suffix('/'))
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_owned();

    let (status, page) = get(&addr, "/");
    assert_eq!(status, 200);
    for needle in ["<h2>Quota</h2>", "<h2>Sync runs</h2>", "<h2>Feed</h2>"] {
        assert!(page.contains(needle), "the page lacks {needle}");
    }
    for path in ["/api/quota", "/api/sync/runs", "/status", "/health/ready"] {
        let (status, body) = get(&addr, path);
        assert_eq!(status, 200, "{path}: {body}");
    }
    assert_eq!(get(&addr, "/api/quota?bogus=1").0, 400);

    // An open event stream does not keep the server from stopping.
    let mut events = TcpStream::connect(&addr).expect("connect");
    write!(events, "GET /api/events HTTP/1.1\r\nHost: {addr}\r\n\r\n").expect("request");
    events
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut start = [0u8; 64];
    let n = events.read(&mut start).expect("the stream starts");
    assert!(String::from_utf8_lossy(&start[..n]).starts_with("HTTP/1.1 200"));

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let started = SystemClock.now();
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        assert!(
            SystemClock.now().duration_since(started)
                < headroom_core::clock::SignedDuration::from_secs(30),
            "serve did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(code, Some(0));
    let mut last = String::new();
    stdout.read_line(&mut last).expect("last line");
    assert_eq!(last.trim(), "headroom serve: stopped");
    drop(events);
}

/// Starts `headroom serve` on a free loopback port over `db`; the child and its address.
fn serve(db: &std::path::Path) -> (std::process::Child, String) {
    let mut child = serve_command(db, "127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve starts");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    stdout.read_line(&mut first).expect("first line");
    let addr = first
        .trim()
        .strip_prefix("headroom serve: dashboard on http://")
        .and_then(|rest| rest.strip_suffix('/'))
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_owned();
    (child, addr)
}

#[test]
fn serve_reads_the_database_a_finished_sync_left() {
    let sim = common::Sim::start(&["--org", "acme", "--repos", "2", "--token", "t1=alice"]);
    let dir = tempfile::tempdir().expect("tmp");
    let db = dir.path().join("sync.db");
    let (code, out, err) =
        common::run_against(dir.path(), &sim, &["sync", "org", "acme", "--json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    drop(sim);
    let (mut child, addr) = serve(&db);
    let (status, page) = get(&addr, "/");
    assert_eq!(status, 200);
    assert!(page.contains("<td class=\"status\">done</td>"), "{page}");
    assert!(page.contains("org acme"), "the run's target is on the page");
    assert!(
        page.contains("<td class=\"spent\">core "),
        "what the run spent is shown"
    );
    let (status, runs) = get(&addr, "/api/sync/runs");
    assert_eq!(status, 200, "{runs}");
    let runs: serde_json::Value = serde_json::from_str(&runs).expect("json");
    assert_eq!(runs["runs"][0]["status"], "done");
    assert!(runs["runs"][0]["progress"]["spent"][0]["requests"].as_u64() > Some(0));
    let (status, quota) = get(&addr, "/api/quota");
    assert_eq!(status, 200, "{quota}");
    assert!(quota.contains("alice on 127.0.0.1"), "{quota}");
    let _ = child.kill();
    let _ = child.wait();
}
