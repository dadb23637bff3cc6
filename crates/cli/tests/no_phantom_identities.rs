//! Issue 36, item 3: a new credential's first request (the `GET /user` that learns its owner)
//! is the owner's. After `quota show` or `sync org` on a fresh database, the dashboard lists
//! the owner's identity only — no "credential:628b… on 127.0.0.1" beside it —, `/metrics`
//! carries no fingerprint, and the owner's records count every request the simulator served.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
use common::{BIN, Sim, sim_log};

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

/// `/api/quota` and `/metrics` as `headroom serve` answers them over `db`.
fn dashboard(db: &Path) -> (serde_json::Value, String) {
    let mut child = Command::new(BIN)
        .arg("--db")
        .arg(db)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_LISTEN")
        .env("RUST_LOG", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve starts");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("first line");
    let addr = first
        .trim()
        .strip_prefix("headroom serve: dashboard on http://")
        .and_then(|rest| rest.strip_suffix('/'))
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_owned();
    let (status, quota) = get(&addr, "/api/quota");
    assert_eq!(status, 200, "{quota}");
    let (status, metrics) = get(&addr, "/metrics");
    assert_eq!(status, 200, "{metrics}");
    let _ = child.kill();
    let _ = child.wait();
    (serde_json::from_str(&quota).expect("json"), metrics)
}

/// The distinct subjects of `table`, and alice's requests in `usage_records`.
async fn stored(db: &Path) -> (Vec<(String, String)>, i64) {
    use sqlx::Connection as _;
    let url = format!("sqlite://{}?mode=ro", db.display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("open");
    let mut subjects = Vec::new();
    for table in ["quota_readings", "usage_records", "rate_limit_observations"] {
        let rows: Vec<(String,)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT DISTINCT subject FROM {table}"
        )))
        .fetch_all(&mut conn)
        .await
        .expect("subjects");
        subjects.extend(rows.into_iter().map(|(s,)| (table.to_owned(), s)));
    }
    let (requests,): (i64,) = sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(requests), 0) AS BIGINT) FROM usage_records \
         WHERE subject = 'user:alice'",
    )
    .fetch_one(&mut conn)
    .await
    .expect("usage");
    (subjects, requests)
}

async fn a_new_credentials_first_request_lists_no_identity_beside_its_owner(command: &[&str]) {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("sim.log").display().to_string();
    let sim = Sim::start(&[
        "--org", "acme", "--repos", "2", "--token", "t1=alice", "--log", &log,
    ]);
    let (code, out, err) = common::run_against(dir.path(), &sim, command);
    assert_eq!(code, 0, "{command:?}: {out}\n{err}");
    let served = sim_log(Path::new(&log)).len();
    drop(sim);
    assert!(
        served >= 2,
        "the discovery and at least one more request: {served}"
    );
    let db = dir.path().join("sync.db");

    let (quota, metrics) = dashboard(&db);
    let subjects: Vec<&str> = quota["identities"]
        .as_array()
        .expect("identities")
        .iter()
        .map(|i| i["subject"].as_str().expect("subject"))
        .collect();
    assert_eq!(subjects, vec!["user:alice"], "{quota}");
    // The owner's panel lists the credentials that spend it; no identity is one.
    assert!(!quota.to_string().contains("credential:"), "{quota}");
    // Labels carry an identity's own name, never a fingerprint (docs/DASHBOARD.md).
    let fingerprint = headroom_http::credential::fingerprint("t1");
    assert!(
        !metrics.contains(&fingerprint) && !metrics.contains("credential:"),
        "/metrics names the credential's fingerprint:\n{metrics}"
    );

    let (subjects, requests) = stored(&db).await;
    assert!(
        subjects.iter().all(|(_, s)| s == "user:alice"),
        "only alice's identity is recorded: {subjects:?}"
    );
    assert!(subjects.iter().any(|(t, _)| t == "quota_readings"));
    assert_eq!(
        usize::try_from(requests).expect("positive"),
        served,
        "alice's usage counts every request, GET /user included"
    );
}

#[tokio::test]
async fn quota_show_with_a_new_credential_lists_no_identity_beside_its_owner() {
    a_new_credentials_first_request_lists_no_identity_beside_its_owner(&["quota", "show"]).await;
}

#[tokio::test]
async fn sync_org_with_a_new_credential_lists_no_identity_beside_its_owner() {
    a_new_credentials_first_request_lists_no_identity_beside_its_owner(&["sync", "org", "acme"])
        .await;
}
