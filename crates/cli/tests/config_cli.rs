//! The configuration as a user meets it, through the real binary: what a config file found in
//! the current directory may decide, which files are read, what a refusal says (and never
//! prints), where each setting came from, and which databases a command may write to.

#![allow(clippy::expect_used)]

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

mod common;
use common::BIN;

/// The binary in `dir` with no headroom or GitHub variable from the test's environment, plus
/// `env`: its exit code, stdout and stderr.
fn headroom(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let mut command = Command::new(BIN);
    command.current_dir(dir).args(args);
    for name in [
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "GITLAB_TOKEN",
        "HEADROOM_DB",
        "HEADROOM_CONFIG",
        "GITHUB_API_URL",
    ] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    let out = command.output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// [`headroom`] under a 2 GB address-space limit, killed after 20 s: a file that never ends
/// exhausts the limit (not the machine), one that blocks is killed (exit 137), rather than
/// either hanging the test run.
fn bounded_headroom(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let mut command = Command::new("sh");
    command
        .current_dir(dir)
        .arg("-c")
        .arg(r#"ulimit -v 2000000; exec timeout -s KILL 20 "$0" "$@""#)
        .arg(BIN)
        .args(args)
        .env_remove("HEADROOM_CONFIG")
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN");
    let out = command.output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Defect: a PostgreSQL password holding `/`, `?`, `#` or a blank was printed when the URL
/// did not parse (or failed to connect), whether `--db`, `HEADROOM_DB` or `headroom.toml`
/// gave it: none of its parts is ever printed, trace logging included.
#[test]
fn a_database_password_holding_url_delimiters_is_never_printed() {
    let dir = tempfile::tempdir().expect("tempdir");
    for delimiter in ["/", "?", "#", " "] {
        let password = format!("SEC{delimiter}RETPW");
        // Port 1 on loopback: nothing listens, so a URL that parses fails to connect.
        let url = format!("postgres://alice:{password}@127.0.0.1:1/db");
        let toml = format!("db = \"{url}\"\n");
        for source in ["--db", "HEADROOM_DB", "headroom.toml"] {
            let toml_path = dir.path().join("headroom.toml");
            if source == "headroom.toml" {
                std::fs::write(&toml_path, &toml).expect("write");
            } else {
                let _ = std::fs::remove_file(&toml_path);
            }
            let flags: &[&str] = if source == "--db" {
                &["--db", &url]
            } else {
                &[]
            };
            let mut env = vec![("RUST_LOG", "trace")];
            if source == "HEADROOM_DB" {
                env.push(("HEADROOM_DB", &url));
            }
            for command in [
                &["status"][..],
                &["config", "show"],
                &["config", "show", "--json"],
            ] {
                let args: Vec<&str> = flags.iter().chain(command).copied().collect();
                let (code, out, err) = headroom(dir.path(), &env, &args);
                let seen = format!("{out}{err}");
                if command == ["status"] {
                    assert_ne!(code, 0, "{source} {delimiter:?}: {seen}");
                } else {
                    // The setting is shown, its password masked.
                    assert_eq!(code, 0, "{source} {delimiter:?}: {seen}");
                    assert!(
                        seen.contains("postgres://[REDACTED]@127.0.0.1:1/db"),
                        "{source} {delimiter:?}: {seen}"
                    );
                }
                for secret in [password.as_str(), "SEC", "RETPW"] {
                    assert!(
                        !seen.contains(secret),
                        "{secret} printed from {source} by {command:?}:\n{seen}"
                    );
                }
            }
        }
    }
}

/// A loopback listener that records every request's head and answers 401.
struct Listener {
    url: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Listener {
    fn start() -> Listener {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                seen.lock()
                    .expect("lock")
                    .push(String::from_utf8_lossy(&head).into_owned());
                let _ = stream.write_all(
                    b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                );
            }
        });
        Listener { url, requests }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().expect("lock").clone()
    }
}

/// Defect: running headroom in a cloned repository whose `headroom.toml` set `api_url` sent
/// `Authorization: Bearer <token>` to that host (and `token_file`, `ca_bundle` chose the
/// token read and the certificates trusted). An implicit `./headroom.toml` setting any of them
/// refuses to start (exit 2) naming the key and `--config`; the same file named by `--config`
/// is obeyed.
#[test]
fn an_implicit_config_file_never_chooses_where_the_token_goes() {
    let listener = Listener::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let token = [("GITHUB_TOKEN", "ghp_PLANTEDsecret0123456789")];
    let toml = dir.path().join("headroom.toml");
    std::fs::write(
        &toml,
        format!("db = \"h.db\"\napi_url = \"{}\"\n", listener.url),
    )
    .expect("write");
    for command in [
        &["quota", "show"][..],
        &["sync", "org", "acme"],
        &["ingest"],
    ] {
        let (code, out, err) = headroom(dir.path(), &token, command);
        assert_eq!(code, 2, "{command:?}: {out}{err}");
        assert!(
            err.contains("`api_url`") && err.contains("--config") && err.contains("line 2"),
            "{command:?}: {err}"
        );
    }
    assert_eq!(
        listener.requests(),
        Vec::<String>::new(),
        "a request was sent"
    );

    // The other keys that decide where a credential goes are refused the same way.
    let pem = dir.path().join("ca.pem");
    std::fs::write(&pem, "not a certificate").expect("write");
    for (key, value) in [("token_file", "ca.pem"), ("ca_bundle", "ca.pem")] {
        std::fs::write(&toml, format!("{key} = \"{value}\"\n")).expect("write");
        let (code, _, err) = headroom(dir.path(), &token, &["quota", "show"]);
        assert_eq!(code, 2, "{key}: {err}");
        assert!(
            err.contains(&format!("`{key}`")) && err.contains("--config"),
            "{key}: {err}"
        );
    }

    // Named explicitly, the file is trusted: the request goes to its host (the listener
    // hears it, so its silence above is meaningful).
    std::fs::write(
        &toml,
        format!("db = \"h.db\"\napi_url = \"{}\"\n", listener.url),
    )
    .expect("write");
    for env in [
        vec![token[0]],
        vec![token[0], ("HEADROOM_CONFIG", "headroom.toml")],
    ] {
        let explicit: &[&str] = if env.len() == 1 {
            &["--config", "headroom.toml", "quota", "show"]
        } else {
            &["quota", "show"]
        };
        let (code, out, err) = headroom(dir.path(), &env, explicit);
        assert_ne!(code, 2, "{out}{err}");
    }
    let requests = listener.requests();
    assert!(!requests.is_empty(), "the explicit file was not obeyed");
    assert!(
        requests
            .iter()
            .all(|r| r.to_ascii_lowercase().contains("authorization: bearer")),
        "{requests:?}"
    );
}

/// `headroom config show` says where each setting came from — flag, environment variable,
/// config file line, default — and never prints a token.
#[test]
fn config_show_says_where_each_setting_came_from() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("settings.toml"),
        "db = \"file.db\"\nin_flight_ceiling = 4\n",
    )
    .expect("write");
    let env = [
        ("GITHUB_TOKEN", "ghp_PLANTEDsecret0123456789"),
        ("GITHUB_API_URL", "http://127.0.0.1:9"),
        ("HEADROOM_CONFIG", "settings.toml"),
    ];
    let (code, out, err) = headroom(
        dir.path(),
        &env,
        &["config", "show", "--json", "--read-timeout", "30"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        !out.contains("PLANTED") && !err.contains("PLANTED"),
        "{out}"
    );
    let doc: serde_json::Value = serde_json::from_str(&out).expect("json");
    let setting = |name: &str| {
        doc["settings"]
            .as_array()
            .and_then(|a| a.iter().find(|s| s["setting"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("{name} missing: {doc}"))
    };
    assert_eq!(doc["config_file"]["source"]["name"], "HEADROOM_CONFIG");
    assert_eq!(setting("db")["value"], "file.db");
    assert_eq!(setting("db")["source"]["kind"], "file");
    assert_eq!(setting("db")["source"]["line"], 1);
    assert_eq!(setting("in_flight_ceiling")["source"]["line"], 2);
    assert_eq!(setting("read_timeout_secs")["value"], "30");
    assert_eq!(
        setting("read_timeout_secs")["source"]["name"],
        "--read-timeout"
    );
    assert_eq!(setting("api_url")["source"]["name"], "GITHUB_API_URL");
    assert_eq!(setting("connect_timeout_secs")["source"]["kind"], "default");
    assert_eq!(setting("token")["source"]["name"], "GITHUB_TOKEN");
    assert!(
        setting("token")["value"]
            .as_str()
            .is_some_and(|v| v.starts_with("fingerprint ")),
        "{doc}"
    );

    // A flag beats its variable, and says so; the text lists the same.
    let (code, out, _) = headroom(
        dir.path(),
        &env,
        &[
            "config",
            "show",
            "--db",
            "flag.db",
            "--api-url",
            "http://127.0.0.1:8",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("flag.db  (flag --db)"), "{out}");
    assert!(out.contains("(flag --api-url)"), "{out}");
    assert!(out.contains("(environment variable GITHUB_TOKEN)"), "{out}");
    assert!(out.contains("config file settings.toml line 2"), "{out}");
    assert!(!out.contains("PLANTED"), "{out}");
}

/// Defect: `--config /dev/zero` ran out of memory and a FIFO blocked forever. Only regular
/// files are read, and only up to a bound: each refuses to start (exit 2), naming the file,
/// well within the 20 s the process is given.
#[test]
fn a_config_or_token_file_that_never_ends_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let fifo = fifo.to_str().expect("utf-8").to_owned();
    let big = dir.path().join("big.toml");
    std::fs::write(&big, format!("# {}\n", "x".repeat(2 << 20))).expect("write");
    let big = big.to_str().expect("utf-8").to_owned();
    for (args, named) in [
        (vec!["--config", "/dev/zero", "status"], "/dev/zero"),
        (vec!["--config", &fifo, "status"], fifo.as_str()),
        (vec!["--token-file", &fifo, "status"], fifo.as_str()),
        (vec!["--token-file", "/dev/zero", "status"], "/dev/zero"),
        (vec!["--ca-bundle", &fifo, "status"], fifo.as_str()),
        (vec!["--config", &big, "status"], big.as_str()),
    ] {
        let (code, out, err) = bounded_headroom(dir.path(), &args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(named), "{args:?}: {err}");
    }
    // The implicit ./headroom.toml as well.
    std::fs::rename(&fifo, dir.path().join("headroom.toml")).expect("rename");
    let (code, out, err) = bounded_headroom(dir.path(), &["status"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("headroom.toml") && err.contains("FIFO"),
        "{err}"
    );
}

/// Defect: `--db :memory:` was accepted by commands whose rows are meant to outlive them (an
/// import stored into nothing; a sync's run, an operation's ledger vanished at exit). Each
/// refuses it (exit 2) saying why; a read-only command refuses it as new and empty.
#[test]
fn an_in_memory_database_is_refused_where_its_rows_would_vanish() {
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "").expect("write");
    let empty = empty.to_str().expect("utf-8");
    let api = ["--api-url", "http://127.0.0.1:9"];
    for db in [":memory:", "sqlite::memory:", "sqlite://x.db?mode=memory"] {
        for command in [
            &["import", "gharchive", empty][..],
            &["ingest"],
            &["enrich"],
            &["run"],
            &["sync", "org", "acme"],
            &["sync", "worker", "--once"],
            &["op", "get-repo", "o/r"],
            &["demo"],
            &["status"],
            &["serve"],
        ] {
            let args: Vec<&str> = ["--db", db]
                .iter()
                .chain(&api)
                .chain(command)
                .copied()
                .collect();
            let (code, out, err) = headroom(dir.path(), &[], &args);
            assert_eq!(code, 2, "{args:?}: {out}{err}");
            assert!(err.contains("in-memory"), "{args:?}: {err}");
        }
    }
    // Nothing is written by `config show`: it says where the setting came from.
    let (code, out, err) = headroom(dir.path(), &[], &["--db", ":memory:", "config", "show"]);
    assert_eq!(code, 0, "{out}{err}");
}

/// Defect: `--max-deferred-wait 7d` was refused as "not a duration" though the documented
/// range runs to a week; days are accepted, in the flag and in the file, and past a week is
/// still refused.
#[test]
fn a_deferred_wait_of_seven_days_is_accepted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, out, err) = headroom(
        dir.path(),
        &[],
        &["--max-deferred-wait", "7d", "config", "show", "--json"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("\"604800 s\""), "{out}");
    std::fs::write(
        dir.path().join("headroom.toml"),
        "max_deferred_wait = \"1d 12h\"\n",
    )
    .expect("write");
    let (code, out, err) = headroom(dir.path(), &[], &["config", "show"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("129600 s"), "{out}");
    let (code, _, err) = headroom(
        dir.path(),
        &[],
        &["--max-deferred-wait", "8d", "config", "show"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--max-deferred-wait") && err.contains("a week"),
        "{err}"
    );
}
