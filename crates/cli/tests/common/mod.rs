//! What the binary's black-box tests share: the binary's path, a `headroom sim` process
//! on loopback that is stopped when dropped, and throwaway PostgreSQL databases.

#![allow(dead_code, clippy::expect_used)]

pub mod served;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_headroom");

/// A `headroom sim` process on 127.0.0.1, stopped when dropped.
pub struct Sim {
    pub child: Child,
    /// `http://127.0.0.1:PORT`, from the first line the simulator prints.
    pub url: String,
}

impl Sim {
    /// Starts `headroom sim --addr 127.0.0.1:0 ARGS…` and waits for its first line.
    pub fn start(args: &[&str]) -> Sim {
        let mut child = Command::new(BIN)
            .arg("sim")
            .args(["--addr", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the binary starts");
        let stdout = child.stdout.take().expect("stdout piped");
        let mut first = String::new();
        BufReader::new(stdout)
            .read_line(&mut first)
            .expect("first line");
        let url = first
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .to_owned();
        Sim { child, url }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The admin URL of the test PostgreSQL server, or `None` after saying `test` was skipped
/// (a failure under `CI`).
#[allow(unused_imports)] // each test binary uses its own part of it
pub use headroom_testkit::admin_url as postgres_admin;
/// Named databases that the binary's processes share: created empty, dropped with force.
#[allow(unused_imports)]
pub use headroom_testkit::{create_database, drop_database};

/// Runs the binary in `dir` on `sync.db` against `sim` with token `t1` (no other headroom or
/// GitHub variable from the environment): its exit code, stdout and stderr.
pub fn run_against(dir: &std::path::Path, sim: &Sim, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .current_dir(dir)
        .args(["--db", "sync.db", "--api-url", &sim.url])
        .args(args)
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("GITHUB_API_URL")
        .env("GITHUB_TOKEN", "t1")
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A database several processes of a test share — an SQLite file in the test's directory or a
/// fresh PostgreSQL database — and how to drop it.
pub struct Shared {
    /// The `--db` argument.
    pub db: String,
    drop_pg: Option<(String, String)>,
}

impl Shared {
    pub async fn sqlite(dir: &std::path::Path) -> Self {
        Self {
            db: dir.join("headroom.db").display().to_string(),
            drop_pg: None,
        }
    }

    /// `None` after saying the test was skipped (a failure under `CI`).
    pub async fn postgres(test: &str) -> Option<Self> {
        let admin = postgres_admin(test)?;
        let name = format!("headroom_{test}_{}", std::process::id());
        let db = create_database(&admin, &name).await;
        Some(Self {
            db,
            drop_pg: Some((admin, name)),
        })
    }

    pub async fn finish(self) {
        if let Some((admin, name)) = self.drop_pg {
            drop_database(&admin, &name).await;
        }
    }
}

/// The simulator's request log (`--log FILE`), one JSON object per request.
pub fn sim_log(log: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .expect("sim log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

/// GH Archive-format PushEvents (the current payload shape) over `actors` actors and `repos`
/// repositories; with `malformed_every` > 0, every such line is cut short instead (quarantined).
pub fn write_push_archive(
    path: &std::path::Path,
    n: u64,
    actors: u64,
    repos: u64,
    malformed_every: u64,
) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    for i in 0..n {
        if malformed_every > 0 && i % malformed_every == malformed_every - 1 {
            writeln!(
                out,
                r#"{{"id":"{}","type":"PushEvent","actor":"#,
                60_000_000_000 + i
            )
            .expect("write");
            continue;
        }
        let (actor, repo) = (1 + i % actors, 100_000 + i % repos);
        writeln!(
            out,
            r#"{{"id":"{}","type":"PushEvent","actor":{{"id":{actor},"login":"user{actor}","display_login":"user{actor}","url":"https://api.github.com/users/user{actor}","avatar_url":"https://avatars.githubusercontent.com/u/{actor}?"}},"repo":{{"id":{repo},"name":"org/repo{repo}","url":"https://api.github.com/repos/org/repo{repo}"}},"payload":{{"repository_id":{repo},"push_id":{},"ref":"refs/heads/main","head":"{:040x}","before":"{:040x}"}},"public":true,"created_at":"2026-06-01T15:{:02}:{:02}Z"}}"#,
            50_000_000_000 + i,
            30_000_000_000 + i,
            i + 1,
            i + 2,
            (i / 60) % 60,
            i % 60,
        )
        .expect("write");
    }
    out.flush().expect("flush");
}

impl Sim {
    /// The small organization the hibernation tests share: `acme` with two repositories
    /// (seed 4), the `tokens` given as `TOKEN=alice`, and 60 core requests a window of
    /// `window_secs` — a sync's ~100 REST requests need several windows. `extra` goes last.
    pub fn small_org(tokens: &[&str], window_secs: u32, extra: &[&str]) -> Sim {
        let mut args: Vec<String> = ["--org", "acme", "--repos", "2", "--seed", "4"]
            .map(str::to_owned)
            .to_vec();
        for token in tokens {
            args.extend(["--token".to_owned(), format!("{token}=alice")]);
        }
        args.extend(["--core-limit".to_owned(), "60".to_owned()]);
        args.extend(["--window-secs".to_owned(), window_secs.to_string()]);
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Sim::start(&args)
    }
}

/// `headroom` in `dir` on `db` against the API at `api` with token `t1`, and no headroom or
/// GitHub variable from the environment.
pub fn headroom_against(dir: &std::path::Path, db: &str, api: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir)
        .args(["--db", db, "--api-url", api])
        .args(args)
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_CONFIG")
        .env_remove("GITHUB_API_URL")
        .env_remove("SEARCH_PACING_SECONDS")
        .env("GITHUB_TOKEN", "t1");
    cmd
}

/// What a feed's database must agree on with an undisturbed run's: events once each, their
/// entities' activity, enrichment outcomes, quarantine (one number per query).
pub const FEED_DIGEST: &[&str] = &[
    "SELECT COUNT(*) FROM push_events",
    "SELECT COUNT(DISTINCT github_event_id) FROM push_events",
    "SELECT CAST(COALESCE(SUM(github_push_id), 0) AS BIGINT) FROM push_events",
    "SELECT COUNT(*) FROM actors",
    "SELECT CAST(COALESCE(SUM(latest_event_at_ms), 0) AS BIGINT) FROM actors",
    "SELECT COUNT(*) FROM actors WHERE enrichment_status = 'complete'",
    "SELECT COUNT(*) FROM actors WHERE enrichment_status = 'permanent_failure'",
    "SELECT COUNT(name) FROM actors",
    "SELECT COUNT(*) FROM repositories",
    "SELECT CAST(COALESCE(SUM(latest_event_at_ms), 0) AS BIGINT) FROM repositories",
    "SELECT COUNT(*) FROM repositories WHERE enrichment_status = 'complete'",
    "SELECT COUNT(*) FROM repositories WHERE enrichment_status = 'permanent_failure'",
    "SELECT COUNT(description) FROM repositories",
    "SELECT COUNT(*) FROM quarantined_events",
];

/// Runs `status` (a `sync status RUN --json` command) and returns the run's row counts per
/// table, asserting that the run is done.
pub fn done_run_tables(mut status: Command) -> serde_json::Value {
    let out = status.output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).expect("status JSON");
    assert_eq!(status[0]["run"]["status"], "done", "{status}");
    status[0]["tables"].clone()
}

/// One number per query, read from the SQLite file at `path` opened read-only.
pub async fn sqlite_digest(path: &std::path::Path, queries: &[&str]) -> Vec<i64> {
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .read_only(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.expect("open");
    let mut values = Vec::new();
    for sql in queries {
        values.push(
            sqlx::query_scalar(sqlx::AssertSqlSafe(*sql))
                .fetch_one(&pool)
                .await
                .expect(sql),
        );
    }
    pool.close().await;
    values
}
