//! Exit messages a person can act on, against `headroom sim` on 127.0.0.1: a 401 says the
//! token was refused and how one is supplied; a refused server certificate is tried once and
//! names `--ca-bundle`; an `op` error names its kind once; `op`'s own flags go after the
//! operation as in `gh`.

#![allow(clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

mod common;
use common::{BIN, Sim};

/// `headroom ARGS` in `dir` against `api`, with only the token variables given.
fn headroom(
    dir: &Path,
    api: &str,
    tokens: &[(&str, &str)],
    args: &[&str],
) -> (i32, String, String) {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir)
        .args(["--db", "hints.db", "--api-url", api])
        .args(args)
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .env_remove("GITLAB_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_CONFIG")
        .env_remove("GITHUB_API_URL")
        .stdin(Stdio::null());
    for (name, value) in tokens {
        cmd.env(name, value);
    }
    let out = cmd.output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn sim() -> Sim {
    Sim::start(&["--org", "acme", "--repos", "1", "--token", "t1=alice"])
}

#[test]
fn a_refused_token_says_where_it_came_from_and_how_to_supply_one() {
    let sim = sim();
    let dir = tempfile::tempdir().expect("tmp");
    let get = ["op", "get-repo", "alice/widgets"];

    let (code, out, err) = headroom(dir.path(), &sim.url, &[("GITHUB_TOKEN", "wrong")], &get);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("the token was refused (401)"), "{err}");
    assert!(err.contains("environment variable GITHUB_TOKEN"), "{err}");
    for way in ["GH_TOKEN", "--token-file", "token_file", "--config"] {
        assert!(err.contains(way), "{way} is not named: {err}");
    }
    assert!(!err.contains("forbidden"), "{err}");

    // A token file is named as the source.
    let file = dir.path().join("token");
    std::fs::write(&file, "wrong\n").expect("token file");
    let with_file = [
        "op",
        "--token-file",
        file.to_str().expect("utf-8"),
        "get-repo",
        "alice/w",
    ];
    let (code, _, err) = headroom(dir.path(), &sim.url, &[], &with_file);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("the token came from flag --token-file"),
        "{err}"
    );

    // GitLab's operations name GitLab's variable, never GitHub's.
    let api = format!("{}/api/v4", sim.url);
    let (code, out, err) = headroom(dir.path(), &api, &[("GITLAB_TOKEN", "wrong")], &get);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("the token was refused (401)"), "{err}");
    assert!(err.contains("environment variable GITLAB_TOKEN"), "{err}");
    assert!(!err.contains("GITHUB_TOKEN"), "{err}");

    // Not only `op`: every command's exit message carries the hint.
    let (code, out, err) = headroom(
        dir.path(),
        &sim.url,
        &[("GH_TOKEN", "wrong")],
        &["quota", "show"],
    );
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("the token was refused (401)"), "{err}");
    assert!(err.contains("environment variable GH_TOKEN"), "{err}");
}

/// A TCP relay to `target` on 127.0.0.1 that counts the connections made through it.
fn counting_relay(target: &str) -> (String, Arc<AtomicUsize>) {
    let target = target.to_owned();
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { continue };
            counted.fetch_add(1, Ordering::SeqCst);
            let Ok(server) = TcpStream::connect(&target) else {
                continue;
            };
            let pipe = |mut from: TcpStream, mut to: TcpStream| {
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16 * 1024];
                    while let Ok(n) = from.read(&mut buf) {
                        if n == 0 || to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = to.shutdown(std::net::Shutdown::Both);
                });
            };
            let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else {
                continue;
            };
            pipe(client, s2);
            pipe(server, c2);
        }
    });
    (format!("https://127.0.0.1:{}", addr.port()), count)
}

#[test]
fn a_refused_certificate_is_tried_once_and_names_the_ca_bundle() {
    let dir = tempfile::tempdir().expect("tmp");
    let tls = dir.path().join("tls");
    let sim = Sim::start(&[
        "--token",
        "t1=alice",
        "--tls",
        "--tls-dir",
        tls.to_str().expect("utf-8"),
    ]);
    let target = sim.url.strip_prefix("https://").expect("an https URL");
    let (api, connections) = counting_relay(target);

    let (code, out, err) = headroom(
        dir.path(),
        &api,
        &[("GITHUB_TOKEN", "t1")],
        &["op", "get-repo", "alice/widgets"],
    );
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        err.contains("the server's certificate is not trusted"),
        "{err}"
    );
    assert!(err.contains("--ca-bundle"), "{err}");
    assert!(err.contains("ca_bundle"), "{err}");
    assert_eq!(connections.load(Ordering::SeqCst), 1, "retried: {err}");

    // The hint is right: with the simulator's certificate trusted, the same call goes through
    // the TLS handshake (and answers that the repository does not exist).
    let cert = tls.join("cert.pem");
    let trusted = [
        "op",
        "get-repo",
        "alice/widgets",
        "--ca-bundle",
        cert.to_str().expect("utf-8"),
    ];
    let (code, _, err) = headroom(dir.path(), &api, &[("GITHUB_TOKEN", "t1")], &trusted);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("not found: repository alice/widgets"), "{err}");
}

#[test]
fn an_op_error_names_its_kind_once() {
    let sim = sim();
    let dir = tempfile::tempdir().expect("tmp");
    let (code, out, err) = headroom(
        dir.path(),
        &sim.url,
        &[("GITHUB_TOKEN", "t1")],
        &["op", "get-repo", "alice/nothing"],
    );
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("not found: repository alice/nothing"), "{err}");
    assert!(!err.contains("not_found"), "{err}");
}

#[test]
fn op_flags_are_accepted_after_the_operation_as_in_gh() {
    let sim = sim();
    let dir = tempfile::tempdir().expect("tmp");
    let (code, out, err) = headroom(
        dir.path(),
        &sim.url,
        &[("GITHUB_TOKEN", "t1")],
        &[
            "op",
            "get-repo",
            "alice/nothing",
            "--json",
            "--provider",
            "github",
        ],
    );
    assert_eq!(code, 1, "{out}\n{err}");
    let answer: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
    assert_eq!(answer["ok"], false, "{out}");
    // The machine-readable code stays in --json.
    assert_eq!(answer["error"]["kind"], "not_found", "{out}");

    let (code, out, err) = headroom(
        dir.path(),
        &sim.url,
        &[("GITHUB_TOKEN", "t1")],
        &["op", "create-repo", "fresh", "--json"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let answer: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
    assert_eq!(answer["result"]["repo"]["name"], "fresh", "{out}");
}
