//! The real binary in a temporary directory, against `headroom sim` on loopback.

use std::path::Path;
use std::process::Command;

mod common;
use common::{BIN, Sim};

fn headroom(dir: &Path, token: Option<&str>, args: &[&str]) -> (i32, String, String) {
    let mut command = Command::new(BIN);
    command
        .current_dir(dir)
        .args(args)
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("GITHUB_API_URL")
        .env("RUST_LOG", "debug");
    if let Some(token) = token {
        command.env("GITHUB_TOKEN", token);
    }
    let out = command.output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn help_and_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, out, _) = headroom(dir.path(), None, &["--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("quota") && out.contains("sim"), "{out}");
    let (code, out, _) = headroom(dir.path(), None, &["--version"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("headroom "), "{out}");
}

#[test]
fn quota_show_names_the_owner_and_the_credentials_that_share_it() {
    let sim = Sim::start(&["--token", "t1=alice", "--token", "t2=alice"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, out, err) = headroom(
        dir.path(),
        Some("t1"),
        &["quota", "show", "--api-url", &sim.url],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("user alice"), "{out}");
    assert!(out.contains("core"), "{out}");
    let (code, out, err) = headroom(
        dir.path(),
        Some("t2"),
        &["quota", "show", "--api-url", &sim.url],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("2 credentials share alice's quota"), "{out}");
    let (code, out, _) = headroom(
        dir.path(),
        Some("t2"),
        &["quota", "show", "--json", "--api-url", &sim.url],
    );
    assert_eq!(code, 0);
    let json: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        json["credentials_sharing"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(json["snapshot"]["buckets"][0]["bucket"], "core");
}

/// `quota show` probes core only, yet shows what other processes on the same database spent:
/// after a `sync org` (REST and GraphQL) in another process, the governor's state — shared
/// through the SQLite file — holds both buckets, and both are listed as recorded, GraphQL's
/// remaining being what the sync last read.
#[test]
fn quota_show_sees_what_other_processes_on_the_database_spent() {
    let sim = Sim::start(&["--org", "acme", "--repos", "2", "--token", "t1=alice"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, out, err) = headroom(
        dir.path(),
        Some("t1"),
        &[
            "--db",
            "q.db",
            "--api-url",
            &sim.url,
            "sync",
            "org",
            "acme",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let (code, out, err) = headroom(
        dir.path(),
        Some("t1"),
        &[
            "--db",
            "q.db",
            "quota",
            "show",
            "--json",
            "--api-url",
            &sim.url,
        ],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let json: serde_json::Value = serde_json::from_str(&out).expect("json");
    let own: Vec<&str> = json["snapshot"]["buckets"]
        .as_array()
        .expect("buckets")
        .iter()
        .filter_map(|b| b["bucket"].as_str())
        .collect();
    assert!(
        own.contains(&"core") && own.contains(&"graphql"),
        "the shared governor state holds the sync's GraphQL bucket beside the probe's core: {own:?}"
    );
    let recorded = json["recorded"].as_array().expect("recorded");
    let graphql = recorded
        .iter()
        .find(|b| b["latest"]["bucket"] == "graphql")
        .unwrap_or_else(|| panic!("the sync's GraphQL bucket is not recorded: {out}"));
    let remaining = graphql["latest"]["remaining"].as_u64().expect("remaining");
    assert!(
        remaining < 5000,
        "the sync spent GraphQL points: {remaining}"
    );
    let (code, text, _) = headroom(
        dir.path(),
        Some("t1"),
        &["--db", "q.db", "quota", "show", "--api-url", &sim.url],
    );
    assert_eq!(code, 0);
    assert!(
        text.contains("Recorded by every headroom process on this database:")
            && text.contains("graphql"),
        "{text}"
    );
}

/// GitHub Enterprise Server with rate limiting off: no headers to read and `/rate_limit` a
/// 404. `quota show` still answers, and says the limits are off rather than unknown.
#[test]
fn quota_show_says_limits_are_off_on_an_enterprise_server_without_them() {
    let sim = Sim::start(&["--token", "t1=alice", "--rate-limits", "off"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, out, err) = headroom(
        dir.path(),
        Some("t1"),
        &["quota", "show", "--api-url", &sim.url],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("user alice"), "{out}");
    assert!(
        out.contains(
            "core: no rate-limit headers — limits are off on this server (the default of GitHub Enterprise Server and self-managed GitLab); local limits still apply"
        ),
        "{out}"
    );
    assert!(!out.contains("? / ?"), "{out}");
    let (code, out, _) = headroom(
        dir.path(),
        Some("t1"),
        &["quota", "show", "--json", "--api-url", &sim.url],
    );
    assert_eq!(code, 0);
    let json: serde_json::Value = serde_json::from_str(&out).expect("json");
    let core = &json["snapshot"]["buckets"][0];
    assert_eq!(core["bucket"], "core");
    assert_eq!(core["limits"], "not_reported");
    assert_eq!(core["remaining"], serde_json::Value::Null);
    // On github.com the same command reads the headers.
    let dotcom = Sim::start(&["--token", "t1=alice"]);
    let (code, out, _) = headroom(
        dir.path(),
        Some("t1"),
        &["quota", "show", "--json", "--api-url", &dotcom.url],
    );
    assert_eq!(code, 0);
    let json: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(json["snapshot"]["buckets"][0]["limits"], "reported");
}

#[test]
fn invalid_settings_refuse_with_exit_code_two() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (args, setting) in [
        (
            vec!["quota", "show", "--api-url", "http://example.com"],
            "--api-url",
        ),
        (
            vec!["quota", "show", "--api-url", "https://10.0.0.1"],
            "--api-url",
        ),
        (
            vec!["quota", "show", "--in-flight-ceiling", "0"],
            "--in-flight-ceiling",
        ),
        (
            vec!["quota", "show", "--read-timeout", "never"],
            "--read-timeout",
        ),
        (
            vec!["quota", "show", "--token-file", "/nonexistent"],
            "--token-file",
        ),
    ] {
        let (code, out, err) = headroom(dir.path(), None, &args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(setting), "{args:?}: {err}");
    }
}

/// Planted secrets never reach output, logs or the database.
#[test]
fn planted_tokens_never_leak() {
    let planted = "ghp_PLANTEDtokenPLANTEDtoken0123456789";
    let sim = Sim::start(&["--token", &format!("{planted}=alice")]);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut seen = String::new();
    // A good run with debug logs on.
    let (code, out, err) = headroom(
        dir.path(),
        Some(planted),
        &["quota", "show", "--api-url", &sim.url],
    );
    assert_eq!(code, 0, "{out}{err}");
    seen.push_str(&out);
    seen.push_str(&err);
    // A rejected token, a URL with userinfo, a fine-grained token in the API URL's userinfo.
    let pat = "github_pat_11PLANTED0000_PLANTEDPLANTEDPLANTED";
    let (_, out, err) = headroom(
        dir.path(),
        Some(pat),
        &["quota", "show", "--api-url", &sim.url],
    );
    seen.push_str(&out);
    seen.push_str(&err);
    let with_userinfo = sim.url.replace("http://", &format!("http://x:{planted}@"));
    let (code, out, err) = headroom(
        dir.path(),
        None,
        &["quota", "show", "--api-url", &with_userinfo],
    );
    assert_eq!(code, 2);
    seen.push_str(&out);
    seen.push_str(&err);
    let bearer = format!("Bearer {planted}");
    let (_, out, err) = headroom(
        dir.path(),
        Some(&bearer),
        &["quota", "show", "--api-url", &sim.url],
    );
    seen.push_str(&out);
    seen.push_str(&err);
    assert!(!seen.contains("PLANTED"), "a planted token leaked:\n{seen}");
    // Nor in any byte of the database files.
    for entry in std::fs::read_dir(dir.path()).expect("dir") {
        let path = entry.expect("entry").path();
        let bytes = std::fs::read(&path).expect("read");
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("PLANTED"),
            "a planted token is in {}",
            path.display()
        );
    }
}

/// Defect: a PostgreSQL password was printed in clear. Every credential form of a database
/// URL — a `password=` or `sslpassword=` parameter, userinfo with an unencoded `@` — is
/// masked wherever the URL is shown, with `--db`, `HEADROOM_DB` and trace logging alike.
#[test]
fn a_database_password_is_never_printed() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Port 1 on loopback: nothing listens, so opening fails and the error names the target.
    let urls = [
        "postgres://alice@127.0.0.1:1/db?password=SECRETPW",
        "postgres://alice:SEC@RETPW@127.0.0.1:1/db",
        "postgresql://alice@127.0.0.1:1/db?sslpassword=SECRETPW&sslmode=disable",
    ];
    for url in urls {
        let (code, out, err) = headroom(dir.path(), None, &["--db", url, "status"]);
        assert_ne!(code, 0, "{out}{err}");
        let mut command = Command::new(BIN);
        let env = command
            .current_dir(dir.path())
            .args(["status"])
            .env("HEADROOM_DB", url)
            .env("RUST_LOG", "trace")
            .output()
            .expect("runs");
        let seen = format!(
            "{out}{err}{}{}",
            String::from_utf8_lossy(&env.stdout),
            String::from_utf8_lossy(&env.stderr)
        );
        for secret in ["SECRETPW", "RETPW"] {
            assert!(
                !seen.contains(secret),
                "{secret} printed for {url}:\n{seen}"
            );
        }
        assert!(
            seen.contains("127.0.0.1"),
            "the error still names the host:\n{seen}"
        );
    }
}

/// Defect: two processes opening a new SQLite file at once, one failed ("database is
/// locked", or a migration applied twice). Openers of one file now take turns migrating it.
#[test]
fn processes_opening_a_new_sqlite_file_at_once_all_succeed() {
    let dir = tempfile::tempdir().expect("tempdir");
    // An import of an empty file: it opens (creating) the database and stores nothing.
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "").expect("writes");
    let empty = empty.to_str().expect("utf-8 path").to_owned();
    for round in 0..3 {
        let db = dir.path().join(format!("new-{round}.db"));
        let db = db.to_str().expect("utf-8 path").to_owned();
        let children: Vec<_> = (0..10)
            .map(|_| {
                Command::new(BIN)
                    .current_dir(dir.path())
                    .args(["--db", &db, "import", "gharchive", &empty])
                    .env_remove("HEADROOM_DB")
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .expect("spawns")
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().expect("waits");
            assert!(
                out.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// Defect: read-only commands wrote — `status` on a mistyped path created and migrated a
/// database and reported zeros. They now refuse a missing SQLite file and create nothing.
#[test]
fn read_only_commands_never_create_a_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    for args in [
        &["--db", "typo.db", "status"][..],
        &["--db", "typo.db", "status", "--json"],
        &["--db", "typo.db", "sync", "status"],
        &["--db", "typo.db", "serve", "--listen", "127.0.0.1:0"],
    ] {
        let (code, out, err) = headroom(dir.path(), None, args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains("does not exist"), "{args:?}: {err}");
        assert!(err.contains("--db"), "the message names the setting: {err}");
        assert!(!dir.path().join("typo.db").exists(), "{args:?} created it");
    }
}

/// Defect: importing into another application's SQLite file added headroom's thirty tables
/// to it silently. A file with tables but no headroom schema is refused and left as it was;
/// an empty file is taken.
#[test]
fn another_applications_database_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let foreign = dir.path().join("app.db");
    let tables = |path: &Path| -> Vec<String> {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        runtime.block_on(async {
            use sqlx::Connection as _;
            let url = format!("sqlite://{}?mode=rwc", path.display());
            let mut conn = sqlx::SqliteConnection::connect(&url)
                .await
                .expect("connects");
            sqlx::query("CREATE TABLE IF NOT EXISTS invoices (id INTEGER PRIMARY KEY)")
                .execute(&mut conn)
                .await
                .expect("creates");
            let names: Vec<(String,)> =
                sqlx::query_as("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
                    .fetch_all(&mut conn)
                    .await
                    .expect("lists");
            names.into_iter().map(|(n,)| n).collect()
        })
    };
    assert_eq!(tables(&foreign), ["invoices"]);
    let events = dir.path().join("events.json");
    std::fs::write(&events, "").expect("writes");
    let db = foreign.to_str().expect("utf-8");
    let (code, out, err) = headroom(
        dir.path(),
        None,
        &[
            "--db",
            db,
            "import",
            "gharchive",
            events.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("another application"), "{err}");
    assert_eq!(tables(&foreign), ["invoices"], "nothing was added to it");
    // An empty file is a new database.
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, "").expect("writes");
    let (code, out, err) = headroom(
        dir.path(),
        None,
        &[
            "--db",
            empty.to_str().expect("utf-8"),
            "import",
            "gharchive",
            events.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
}
