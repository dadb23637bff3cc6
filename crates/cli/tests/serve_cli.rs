//! `headroom run --listen` against `headroom sim` on loopback: the HTTP API comes up beside
//! the poll/enrich loop, serves what the poll stored (pages that chain, single events with
//! their payload), publishes the same status document as `headroom status --json`, and stops
//! gracefully on SIGTERM.

#![allow(clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
use common::{BIN, Sim};

fn command(dir: &Path, api: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir)
        .args(["--api-url", api, "--db", "h.db"])
        .args(args)
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("GITHUB_API_URL")
        .env_remove("HEADROOM_LISTEN")
        .env_remove("SEARCH_PACING_SECONDS");
    cmd
}

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    json: serde_json::Value,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A plain HTTP/1.1 GET on loopback (no client library: the request is one line).
fn get(addr: &str, path: &str) -> Option<Reply> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let mut lines = head.lines();
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Some(Reply {
        status,
        headers,
        json: serde_json::from_str(body).unwrap_or(serde_json::Value::Null),
    })
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    for _ in 0..300 {
        if ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("timed out waiting for {what}");
}

/// Every key path in a JSON value (array elements as `[]`).
/// `v` without its ages: `/status` serves a document up to five seconds old, so an age read
/// by it and by `status --json` a moment apart may differ.
fn without_ages(v: &serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => m
            .iter()
            .filter(|(k, _)| !k.ends_with("age_seconds"))
            .map(|(k, v)| (k.clone(), without_ages(v)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        other => other.clone(),
    }
}

fn paths(v: &serde_json::Value, prefix: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let p = format!("{prefix}.{k}");
                out.push(p.clone());
                paths(v, &p, out);
            }
        }
        serde_json::Value::Array(a) => {
            for v in a {
                paths(v, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn run_serves_the_api_beside_the_loop() {
    let sim = Sim::start(&["--scenario", "default"]);
    let dir = tempfile::tempdir().expect("tmp");
    let mut child = command(
        dir.path(),
        &sim.url,
        &[
            "run",
            "--tick-secs",
            "1",
            "--search-pacing",
            "0",
            "--listen",
            "127.0.0.1:0",
            "--actor-weight",
            "2",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("spawn");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("first line");
    let addr = line
        .trim()
        .strip_prefix("headroom run: serving HTTP on http://")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();

    wait_for("/health/ready", || {
        get(&addr, "/health/ready").is_some_and(|r| r.status == 200 && r.json["status"] == "ok")
    });
    let live = get(&addr, "/health/live").expect("live");
    assert_eq!(live.json, serde_json::json!({"status": "ok"}));
    // `headroom run` serves the quota dashboard and its API too, as `headroom serve` does.
    let page = get(&addr, "/").expect("page");
    assert_eq!(page.status, 200);
    let quota = get(&addr, "/api/quota").expect("quota");
    assert_eq!(quota.status, 200);
    assert!(quota.json.is_object(), "{:?}", quota.json);

    // The poll stores the default corpus page (4 push events); enrichment settles 2 + 1 per
    // class (the fourth entity of each is a planted 404).
    let mut status = serde_json::Value::Null;
    wait_for("the poll and enrichment to show in /status", || {
        status = get(&addr, "/status").map(|r| r.json).unwrap_or_default();
        status["coverage"]["events_in_window"] == 4
            && status["enrichment"]["actors"]["complete"] == 2
            && status["enrichment"]["repositories"]["permanent_failure"] == 1
    });
    assert_eq!(status["sources"][0]["source_type"], "github_public_events");
    assert_eq!(status["sources"][0]["binding"], "cadence_due_at");
    assert_eq!(status["ledger"]["present"], true);
    assert_eq!(status["ledger"]["poll"]["used"], 1);
    assert_eq!(status["search_ledger"]["present"], true);
    assert_eq!(status["scheduler"]["tick_seconds"], 1);
    assert_eq!(status["coverage"]["actor_enriched"]["events"], 3);
    assert!(status["batches"]["search_actors"]["attempts"].as_u64() >= Some(1));

    // Pages of 3: the first links to the second, the second ends the list.
    let first = get(&addr, "/api/push_events?limit=3").expect("page 1");
    assert_eq!(first.status, 200);
    let rows = first.json["data"].as_array().expect("data").clone();
    assert_eq!(rows.len(), 3);
    let link = first.header("link").expect("a Link header").to_owned();
    assert!(link.ends_with("; rel=\"next\""), "{link}");
    let next = link
        .trim_start_matches('<')
        .split('>')
        .next()
        .expect("a target")
        .to_owned();
    let second = get(&addr, &next).expect("page 2");
    assert_eq!(second.status, 200, "{next}");
    let more = second.json["data"].as_array().expect("data").clone();
    assert_eq!(more.len(), 1);
    assert!(second.header("link").is_none());
    let mut ids: Vec<String> = rows
        .iter()
        .chain(more.iter())
        .map(|r| r["github_event_id"].as_str().expect("id").to_owned())
        .collect();
    for row in rows.iter().chain(more.iter()) {
        assert!(row["actor"]["enrichment_status"].is_string(), "{row}");
        assert!(row["repository"]["enrichment_status"].is_string(), "{row}");
        assert!(row.get("raw_payload").is_none());
        assert!(row.get("id").is_none());
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4, "{ids:?}");

    let one = get(&addr, &format!("/api/push_events/{}", ids[0])).expect("one");
    assert_eq!(one.status, 200);
    assert_eq!(one.json["data"]["raw_payload"]["type"], "PushEvent");
    assert_eq!(one.json["data"]["raw_payload"]["id"], ids[0].as_str());
    let bad = get(&addr, "/api/push_events?limit=101").expect("bad");
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json["error"]["parameter"], "limit");

    // `headroom status --json` prints the same document: the same keys throughout, and the
    // same values where time does not enter.
    let served = get(&addr, "/status").expect("status").json;
    let out = command(dir.path(), &sim.url, &["status", "--json"])
        .output()
        .expect("status --json");
    assert!(out.status.success());
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let (mut a, mut b) = (Vec::new(), Vec::new());
    paths(&served, "", &mut a);
    paths(&printed, "", &mut b);
    assert_eq!(a, b);
    for block in ["ledger", "search_ledger"] {
        assert_eq!(
            served[block]["present"], printed[block]["present"],
            "{block}"
        );
    }
    assert_eq!(
        without_ages(&served["enrichment"]["actors"]),
        without_ages(&printed["enrichment"]["actors"])
    );
    assert_eq!(
        served["coverage"]["events_in_window"],
        printed["coverage"]["events_in_window"]
    );
    // The service publishes its own tuning; `status` publishes what it was given, and is not
    // the service, so it has no tick.
    assert_eq!(served["scheduler"]["actor_enrichment_weight"], 2);
    assert_eq!(printed["scheduler"]["actor_enrichment_weight"], 1);
    assert_eq!(
        printed["scheduler"]["tick_seconds"],
        serde_json::Value::Null
    );

    // SIGTERM: the loop and the server stop, cleanly.
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let code = child.wait().expect("wait");
    assert!(code.success(), "{code:?}");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).expect("rest");
    assert!(rest.contains("stopped after"), "{rest}");
    assert!(TcpStream::connect(&addr).is_err(), "still listening");
}
