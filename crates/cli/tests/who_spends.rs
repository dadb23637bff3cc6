//! Issue 36, item 8: who spends an identity's quota can be answered. headroom spends alice's
//! quota with one token (`quota show`, `sync org`) while "another client" spends it with her
//! second token by plain HTTP straight to the simulator; `headroom serve` over the database
//! then says, per bucket window, what the sync run spent (what the simulator logged for its
//! requests) and what was spent outside headroom (what the other client sent).

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
use common::{BIN, Sim, sim_log};

/// A plain HTTP/1.1 GET with an optional token: the status and the body.
fn get(addr: &str, path: &str, token: Option<&str>) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let auth = token.map_or_else(String::new, |t| format!("Authorization: token {t}\r\n"));
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: another-client\r\n{auth}\
         Connection: close\r\n\r\n"
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

/// `GET /api/quota/spend` as `headroom serve` answers it over `db`.
fn spend_document(db: &Path) -> serde_json::Value {
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
    let (status, body) = get(&addr, "/api/quota/spend", None);
    let (page_status, page) = get(&addr, "/", None);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(status, 200, "{body}");
    assert_eq!(page_status, 200);
    let doc: serde_json::Value = serde_json::from_str(&body).expect("json");
    // The page says the same sentence as the API.
    let words = doc["identities"][0]["buckets"][0]["words"]
        .as_str()
        .expect("words");
    let escaped = words.replace('\'', "&#39;");
    assert!(
        page.contains("Who spends the quota") && page.contains(&escaped),
        "the page lacks {words:?}"
    );
    doc
}

/// What the simulator logged in `entries` for `token` on `bucket`, the paths `skip` left out.
fn cost(entries: &[serde_json::Value], token: &str, bucket: &str, skip: &[&str]) -> u64 {
    let fingerprint = headroom_sim::token_fingerprint(token);
    entries
        .iter()
        .filter(|e| e["token_fingerprint"].as_str() == Some(fingerprint.as_str()))
        .filter(|e| e["bucket"].as_str() == Some(bucket))
        .filter(|e| !skip.contains(&e["path"].as_str().unwrap_or_default()))
        .map(|e| e["cost"].as_u64().expect("cost"))
        .sum()
}

fn headroom(dir: &Path, sim: &Sim, args: &[&str]) {
    let out = Command::new(BIN)
        .current_dir(dir)
        .args(["--db", "sync.db", "--api-url", &sim.url])
        .args(args)
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_CONFIG")
        .env_remove("GITHUB_API_URL")
        .env("GITHUB_TOKEN", "t1")
        .env("RUST_LOG", "off")
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The bucket `name` of alice's identity in the spend document.
fn bucket<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    let alice = doc["identities"]
        .as_array()
        .expect("identities")
        .iter()
        .find(|i| i["subject"] == "user:alice")
        .unwrap_or_else(|| panic!("no identity of alice: {doc}"));
    alice["buckets"]
        .as_array()
        .expect("buckets")
        .iter()
        .find(|b| b["bucket"] == name)
        .unwrap_or_else(|| panic!("no {name} bucket: {doc}"))
}

#[test]
fn another_client_of_the_same_user_shows_as_outside_headroom_beside_each_sync_run() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("sim.log");
    let log_arg = log.display().to_string();
    let sim = Sim::start(&[
        "--org",
        "acme",
        "--repos",
        "2",
        "--core-limit",
        "400",
        "--token",
        "t1=alice",
        "--token",
        "t2=alice",
        "--log",
        &log_arg,
    ]);
    let addr = sim.url.strip_prefix("http://").expect("http").to_owned();
    let outside = |n: usize| {
        for _ in 0..n {
            let (status, body) = get(&addr, "/orgs/acme", Some("t2"));
            assert_eq!(status, 200, "{body}");
        }
    };

    headroom(dir.path(), &sim, &["quota", "show"]);
    outside(7);
    let before_sync = sim_log(&log).len();
    headroom(dir.path(), &sim, &["sync", "org", "acme"]);
    let entries = sim_log(&log);
    let the_sync = &entries[before_sync..];
    outside(5);
    // The last word: a reading that counts everything sent so far.
    headroom(dir.path(), &sim, &["quota", "show"]);
    let entries = sim_log(&log);
    drop(sim);

    let doc = spend_document(&dir.path().join("sync.db"));
    let core = bucket(&doc, "core");
    let sent_outside = cost(&entries, "t2", "core", &[]);
    assert_eq!(
        sent_outside, 12,
        "the other client's 12 requests each cost 1"
    );
    assert_eq!(
        core["outside"].as_u64(),
        Some(sent_outside),
        "outside headroom is what the other client sent: {core}"
    );
    // Headroom's records start within this window (a fresh database): an upper bound, said.
    assert_eq!(core["outside_is_upper_bound"], true, "{core}");
    let words = core["words"].as_str().expect("words");
    assert!(
        words.contains(&format!("outside headroom: up to {sent_outside} ")),
        "{words}"
    );
    // What the provider counted is headroom's rows plus outside, to the request.
    let used = core["provider_used"].as_u64().expect("used");
    let alice_core = cost(&entries, "t1", "core", &[]) + sent_outside;
    assert_eq!(used, alice_core, "{core}");
    let rows: u64 = core["activities"]
        .as_array()
        .expect("activities")
        .iter()
        .map(|a| a["units"].as_u64().expect("units"))
        .sum();
    assert_eq!(rows + sent_outside, used, "{core}");

    // The sync run's own rows are what the simulator logged for its requests (its token's,
    // while it ran, but for the `GET /user` that learns the token's owner).
    for name in ["core", "graphql"] {
        let spent = bucket(&doc, name);
        let runs: Vec<&serde_json::Value> = spent["activities"]
            .as_array()
            .expect("activities")
            .iter()
            .filter(|a| a["activity"] == "sync_run")
            .collect();
        let logged = cost(the_sync, "t1", name, &["/user"]);
        assert!(logged > 0, "the sync spent {name}");
        assert_eq!(runs.len(), 1, "one sync run on {name}: {spent}");
        assert_eq!(runs[0]["units"].as_u64(), Some(logged), "{spent}");
        assert!(
            runs[0]["label"]
                .as_str()
                .is_some_and(|l| l.starts_with("sync run #")),
            "{spent}"
        );
    }
    // Nobody else spent GraphQL: nothing outside.
    assert_eq!(bucket(&doc, "graphql")["outside"].as_u64(), Some(0));
}
