//! The chaos suite's random kills of a provider's sync command (`sync gitlab`, `sync jira`,
//! `sync linear`), shared by `chaos_gitlab.rs`, `chaos_jira.rs` and `chaos_linear.rs`: each
//! names its [`Case`]. The command is SIGKILLed at seeded random moments, on SQLite and on
//! PostgreSQL, and run again the way an operator would (the same command with `--wait`, which
//! takes up the unfinished run at once: its killed holder was a process of this machine). The
//! database must then hold exactly what an uninterrupted run stores — every row of the case's
//! tables, every column but `collected_at_ms`, `raw_json` byte for byte — with one run, done,
//! and every checkpoint done. The simulator's request log shows what the kills cost: a resume
//! redoes at most the pages each scope had in flight per kill.
//!
//! Each moment is drawn in 5–90 % of the uninterrupted run's duration measured in the same
//! test; every other moment also kills the first resume halfway. The fast subset (3 moments
//! per backend) runs with the workspace's tests; more with `HEADROOM_CHAOS_KILLS=10`
//! (`HEADROOM_CHAOS_SEED` picks another seed; each moment prints one `chaos:` line and each
//! backend a summary, whose last figures are in docs/RELIABILITY.md).

#![allow(dead_code, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use headroom_core::clock::{Clock, SignedDuration, TokioClock};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;

use crate::common::{self, BIN, Sim};

/// Moments per backend when `HEADROOM_CHAOS_KILLS` is not set.
const FAST_KILLS: u32 = 3;
const DEFAULT_SEED: u64 = 20_261_207;

/// One provider's sync under the suite.
pub struct Case {
    /// `sync_runs.kind` (`gitlab`).
    pub kind: &'static str,
    /// Every table the sync fills; each is compared row by row.
    pub tables: &'static [&'static str],
    /// `headroom sim` arguments seeding a tenant that never changes (`--log` is added).
    pub sim: &'static [&'static str],
    /// The command's arguments after `--db DB`, given the simulator's root URL; it must end
    /// with `--json --wait`.
    pub command: fn(&str) -> Vec<String>,
    /// The environment the command runs with (its provider's credential).
    pub env: &'static [(&'static str, &'static str)],
    /// Whether a logged request is not the run's (each process asks who its token is).
    pub not_the_runs: fn(&str) -> bool,
    /// Whether a logged status is one a complete run meets (GitLab's are all 200; Jira's
    /// kanban boards answer sprints with 400).
    pub expected_status: fn(u64) -> bool,
    /// The pages of one scope a kill may make a resume ask again: 1 where every page has a
    /// path of its own; the run's in-flight ceiling where pages share one path (a POST whose
    /// body names the page).
    pub redo_per_kill: u32,
    /// The reference run's own check (that the tenant is big enough to be worth killing).
    pub check_reference: fn(&Digest),
}

/// The one column that says when a row was collected, not what it holds.
const WHEN_COLLECTED: &str = "collected_at_ms";

/// What the database must agree on with an uninterrupted run: the run's state, and each
/// table's rows (every column but [`WHEN_COLLECTED`], as text, sorted).
#[derive(Debug, PartialEq, Eq)]
pub struct Digest {
    pub run: Vec<i64>,
    pub tables: BTreeMap<&'static str, Vec<String>>,
}

impl Digest {
    /// `table rows/fnv` for each table, one line.
    pub fn brief(&self) -> String {
        let tables: Vec<String> = self
            .tables
            .iter()
            .map(|(t, rows)| {
                format!(
                    "{}={}/{:016x}",
                    t.split_once('_').map_or(*t, |(_, rest)| rest),
                    rows.len(),
                    fnv(rows)
                )
            })
            .collect();
        format!("run {:?}; {}", self.run, tables.join(" "))
    }

    /// Where `self` differs from `want`: per table, the counts and a few rows each side lacks.
    fn differences(&self, want: &Digest) -> String {
        let mut out = Vec::new();
        if self.run != want.run {
            out.push(format!("run state {:?}, want {:?}", self.run, want.run));
        }
        for (table, rows) in &self.tables {
            let expected = &want.tables[table];
            if rows == expected {
                continue;
            }
            // The start of a row names it; its raw JSON would drown the message.
            let short = |r: &String| r.chars().take(120).collect::<String>();
            let missing: Vec<String> = expected
                .iter()
                .filter(|r| !rows.contains(r))
                .map(short)
                .collect();
            let extra: Vec<String> = rows
                .iter()
                .filter(|r| !expected.contains(r))
                .map(short)
                .collect();
            out.push(format!(
                "{table}: {} rows, want {}; {} missing, e.g. {:?}; {} unexpected, e.g. {:?}",
                rows.len(),
                expected.len(),
                missing.len(),
                missing.iter().take(2).collect::<Vec<_>>(),
                extra.len(),
                extra.iter().take(2).collect::<Vec<_>>(),
            ));
        }
        out.join("\n")
    }
}

/// FNV-1a over the rows: a short, stable fingerprint for the printed lines.
fn fnv(rows: &[String]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in rows.iter().flat_map(|r| r.bytes().chain([b'\n'])) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// A row of `columns` as one text, NULL spelled `~` (the same expression on both backends).
fn row_text(columns: &[String]) -> String {
    columns
        .iter()
        .map(|c| format!("COALESCE(CAST({c} AS TEXT), '~')"))
        .collect::<Vec<_>>()
        .join(" || '|' || ")
}

/// Where one moment's processes store: a fresh SQLite file or PostgreSQL database.
enum Db {
    Sqlite(PathBuf),
    Postgres {
        admin: String,
        name: String,
        url: String,
    },
}

enum Pool {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

impl Pool {
    async fn try_number(&self, sql: &str) -> Option<i64> {
        let sql = sqlx::AssertSqlSafe(sql.to_owned());
        let got = match self {
            Pool::Sqlite(p) => sqlx::query_scalar(sql).fetch_one(p).await,
            Pool::Postgres(p) => sqlx::query_scalar(sql).fetch_one(p).await,
        };
        got.ok()
    }

    async fn number(&self, sql: &str) -> i64 {
        self.try_number(sql)
            .await
            .unwrap_or_else(|| panic!("a digest query: {sql}"))
    }

    async fn texts(&self, sql: &str) -> Vec<String> {
        let sql = sqlx::AssertSqlSafe(sql.to_owned());
        let got = match self {
            Pool::Sqlite(p) => sqlx::query_scalar(sql).fetch_all(p).await,
            Pool::Postgres(p) => sqlx::query_scalar(sql).fetch_all(p).await,
        };
        got.expect("a digest query")
    }

    /// A table's columns in their order, read from the schema (so a column added later is
    /// compared too).
    async fn columns(&self, table: &str) -> Vec<String> {
        let sql = match self {
            Pool::Sqlite(_) => {
                format!("SELECT name FROM pragma_table_info('{table}') ORDER BY cid")
            }
            Pool::Postgres(_) => format!(
                "SELECT CAST(column_name AS TEXT) FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = '{table}' \
                 ORDER BY ordinal_position"
            ),
        };
        self.texts(&sql).await
    }

    async fn close(self) {
        match self {
            Pool::Sqlite(p) => p.close().await,
            Pool::Postgres(p) => p.close().await,
        }
    }
}

impl Db {
    fn arg(&self) -> String {
        match self {
            Db::Sqlite(path) => path.display().to_string(),
            Db::Postgres { url, .. } => url.clone(),
        }
    }

    async fn pool(&self) -> Pool {
        match self {
            Db::Sqlite(path) => {
                let options = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(path)
                    .read_only(true);
                Pool::Sqlite(sqlx::SqlitePool::connect_with(options).await.expect("open"))
            }
            Db::Postgres { url, .. } => {
                Pool::Postgres(sqlx::PgPool::connect(url).await.expect("connect"))
            }
        }
    }

    async fn digest(&self, case: &Case) -> Digest {
        let pool = self.pool().await;
        // One run, done, every checkpoint done.
        let run = vec![
            pool.number("SELECT COUNT(*) FROM sync_runs").await,
            pool.number(&format!(
                "SELECT COUNT(*) FROM sync_runs WHERE status = 'done' AND kind = '{}'",
                case.kind
            ))
            .await,
            pool.number("SELECT COUNT(*) FROM sync_checkpoints WHERE status <> 'done'")
                .await,
        ];
        let mut tables = BTreeMap::new();
        for &table in case.tables {
            let columns: Vec<String> = pool
                .columns(table)
                .await
                .into_iter()
                .filter(|c| c != WHEN_COLLECTED)
                .collect();
            assert!(!columns.is_empty(), "no columns in {table}");
            let mut rows = pool
                .texts(&format!("SELECT {} FROM {table}", row_text(&columns)))
                .await;
            rows.sort();
            tables.insert(table, rows);
        }
        pool.close().await;
        Digest { run, tables }
    }

    /// Whether a run exists and every run is done. Right after a kill the database may not
    /// exist yet, or lack its tables (killed during the migrations): not finished.
    async fn finished(&self) -> bool {
        let pool = match self {
            // Read-write: the killed process's WAL is recovered as by the next process.
            Db::Sqlite(path) => sqlx::SqlitePool::connect_with(
                sqlx::sqlite::SqliteConnectOptions::new().filename(path),
            )
            .await
            .map(Pool::Sqlite),
            Db::Postgres { url, .. } => sqlx::PgPool::connect(url).await.map(Pool::Postgres),
        };
        let Ok(pool) = pool else {
            return false;
        };
        let runs = pool.try_number("SELECT COUNT(*) FROM sync_runs").await;
        let open = pool
            .try_number("SELECT COUNT(*) FROM sync_runs WHERE status <> 'done'")
            .await;
        pool.close().await;
        matches!((runs, open), (Some(runs), Some(0)) if runs > 0)
    }

    async fn remove(self) {
        match self {
            Db::Sqlite(path) => {
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
            }
            Db::Postgres { admin, name, .. } => common::drop_database(&admin, &name).await,
        }
    }
}

/// Requests per page (path and query) in the simulator's log from line `from` on, leaving out
/// what is not the run's; a limit or an error fails the test.
fn pages(case: &Case, log: &std::path::Path, from: usize) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    for entry in common::sim_log(log).into_iter().skip(from) {
        let path = entry["path"].as_str().expect("path").to_owned();
        let status = entry["status"].as_u64().expect("status");
        assert!(
            (case.expected_status)(status),
            "the simulator answered {entry}"
        );
        if !(case.not_the_runs)(&path) {
            *out.entry(path).or_default() += 1;
        }
    }
    out
}

/// Pages asked for more often than in the uninterrupted run, per scope (the path without its
/// query: a list of one project, or one merge request's notes).
fn redone(got: &BTreeMap<String, u32>, reference: &BTreeMap<String, u32>) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    for (page, n) in got {
        let extra = n.saturating_sub(reference.get(page).copied().unwrap_or(0));
        if extra > 0 {
            let scope = page.split('?').next().unwrap_or(page).to_owned();
            *out.entry(scope).or_default() += extra;
        }
    }
    out
}

fn log_lines(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// One backend's run of the suite, against one simulator.
struct Suite {
    case: &'static Case,
    runtime: tokio::runtime::Runtime,
    clock: TokioClock,
    dir: tempfile::TempDir,
    sim: Sim,
    log: PathBuf,
    /// The PostgreSQL admin URL, or `None` for SQLite.
    admin: Option<String>,
    backend: &'static str,
    created: u32,
}

impl Suite {
    fn new(case: &'static Case, admin: Option<String>) -> Suite {
        let dir = tempfile::tempdir().expect("tmp");
        let log = dir.path().join("sim.jsonl");
        let log_arg = log.display().to_string();
        let mut args: Vec<&str> = case.sim.to_vec();
        args.extend(["--log", &log_arg]);
        let sim = Sim::start(&args);
        Suite {
            case,
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
            clock: TokioClock::system(),
            dir,
            sim,
            log,
            backend: if admin.is_some() {
                "postgres"
            } else {
                "sqlite"
            },
            admin,
            created: 0,
        }
    }

    fn fresh_db(&mut self) -> Db {
        self.created += 1;
        match &self.admin {
            None => Db::Sqlite(self.dir.path().join(format!("chaos-{}.db", self.created))),
            Some(admin) => {
                let name = format!(
                    "headroom_chaos_{}_{}_{}",
                    self.case.kind,
                    std::process::id(),
                    self.created
                );
                let url = self.runtime.block_on(common::create_database(admin, &name));
                Db::Postgres {
                    admin: admin.clone(),
                    name,
                    url,
                }
            }
        }
    }

    fn sleep_ms(&self, ms: u64) {
        let d = SignedDuration::from_millis(i64::try_from(ms).unwrap_or(i64::MAX));
        self.runtime.block_on(self.clock.sleep(d));
    }

    fn elapsed_ms(&self, since: headroom_core::clock::Timestamp) -> u64 {
        u64::try_from(self.clock.now().duration_since(since).as_millis()).unwrap_or(u64::MAX)
    }

    /// The case's command on `db`, with its credential and no GitHub or headroom setting
    /// from the environment.
    fn sync(&self, db: &Db) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.current_dir(self.dir.path())
            .args(["--db", &db.arg()])
            .args((self.case.command)(&self.sim.url));
        for var in [
            "GH_TOKEN",
            "GITHUB_TOKEN",
            "GITHUB_API_URL",
            "HEADROOM_DB",
            "HEADROOM_CONFIG",
            "GITLAB_OAUTH_TOKEN",
            "JIRA_OAUTH_TOKEN",
            "LINEAR_OAUTH_TOKEN",
        ] {
            cmd.env_remove(var);
        }
        for (var, value) in self.case.env {
            cmd.env(var, value);
        }
        cmd
    }

    /// Runs the sync to its end: it must exit 0 with the run done.
    fn complete(&self, db: &Db, what: &str) {
        let out = self.sync(db).output().expect("runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let done = stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["event"] == "sync.run_completed");
        assert!(
            out.status.success() && done.as_ref().is_some_and(|d| d["status"] == "done"),
            "{} {what}: {}, completion {done:?}\n{}",
            self.backend,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Starts the sync, sleeps `ms`, SIGKILLs it.
    fn kill_after(&self, db: &Db, ms: u64) {
        let mut child: Child = self
            .sync(db)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        self.sleep_ms(ms);
        child.kill().expect("SIGKILL");
        let _ = child.wait();
    }

    /// The uninterrupted run: its digest, the pages it asked for, how long it took.
    fn reference(&mut self) -> (Digest, BTreeMap<String, u32>, u64) {
        let db = self.fresh_db();
        let from = log_lines(&self.log);
        let started = self.clock.now();
        self.complete(&db, "uninterrupted");
        let took = self.elapsed_ms(started);
        let digest = self.runtime.block_on(db.digest(self.case));
        self.runtime.block_on(db.remove());
        (digest, pages(self.case, &self.log, from), took.max(20))
    }

    /// One moment on a fresh database: the sync killed after `ms` (its first resume killed
    /// too, after `ms / 2`, when `twice`), resumed to the end, compared with `want`.
    /// Returns how many kills hit an unfinished run, and the pages redone.
    fn moment(
        &mut self,
        ms: u64,
        twice: bool,
        want: &Digest,
        reference: &BTreeMap<String, u32>,
    ) -> (u32, u32) {
        let db = self.fresh_db();
        let from = log_lines(&self.log);
        // A kill that lands once the run is done hit nothing (seen on a loaded machine: the
        // run ended before 82 % of the reference's time). Running the sync again then would
        // start a second run, not resume one: the moment ends there, with one run done.
        let mut kills = 0;
        for wait in std::iter::once(ms).chain(twice.then_some(ms / 2)) {
            self.kill_after(&db, wait);
            if self.runtime.block_on(db.finished()) {
                break;
            }
            kills += 1;
        }
        if !self.runtime.block_on(db.finished()) {
            self.complete(&db, &format!("resumed after a kill at {ms} ms"));
        }
        let got = self.runtime.block_on(db.digest(self.case));
        let redone = redone(&pages(self.case, &self.log, from), reference);
        let total: u32 = redone.values().sum();
        let worst = redone.values().copied().max().unwrap_or(0);
        println!(
            "chaos: {} sync {} killed at {ms} ms{} ({kills} kill(s) of an unfinished run) \
             -> {}; {total} pages redone over {} scopes, at most {worst} in one",
            self.backend,
            self.case.kind,
            if twice { ", its resume too" } else { "" },
            if got == *want { "exact" } else { "DIFFERS" },
            redone.len(),
        );
        assert!(
            got == *want,
            "{} sync {} killed at {ms} ms{}: the resumed run differs from an uninterrupted \
             one\n{}\ngot  {}\nwant {}",
            self.backend,
            self.case.kind,
            if twice { " (and its resume)" } else { "" },
            got.differences(want),
            got.brief(),
            want.brief()
        );
        // Each kill costs at most the pages each scope had in flight.
        let bound = kills * self.case.redo_per_kill;
        assert!(
            worst <= bound,
            "{} killed at {ms} ms: a scope redid more than {bound} page(s): {redone:?}",
            self.backend
        );
        self.runtime.block_on(db.remove());
        (kills, total)
    }
}

fn kills() -> u32 {
    std::env::var("HEADROOM_CHAOS_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(FAST_KILLS)
}

fn seed() -> u64 {
    std::env::var("HEADROOM_CHAOS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_SEED)
}

/// `kills()` moments of `case` on one backend (PostgreSQL when `admin` names a server).
pub fn random_kills(case: &'static Case, admin: Option<String>) {
    let mut suite = Suite::new(case, admin);
    let seed = seed();
    let kills = kills();
    let started = suite.clock.now();
    let (want, reference, took) = suite.reference();
    println!(
        "chaos: {} sync {} uninterrupted in {took} ms: {}",
        suite.backend,
        case.kind,
        want.brief()
    );
    assert_eq!(want.run, [1, 1, 0], "the uninterrupted run did not finish");
    (case.check_reference)(&want);
    let salt = u64::from(suite.admin.is_some()) << 32;
    let mut rng = SmallRng::seed_from_u64(seed ^ salt);
    let (mut live, mut redone) = (0, 0);
    for k in 0..kills {
        let ms = rng.random_range(took / 20..=took * 9 / 10);
        let (hit, pages) = suite.moment(ms, k % 2 == 1, &want, &reference);
        live += u32::from(hit > 0);
        redone += pages;
    }
    // A kill that lands after the run ended proves nothing: most must land inside.
    assert!(
        kills == 0 || live * 2 >= kills,
        "{}: only {live} of {kills} moments killed an unfinished run (uninterrupted {took} ms)",
        suite.backend
    );
    println!(
        "chaos summary (seed {seed}): {} sync {}: {kills} moments ({live} killed an \
         unfinished run), all exact, {redone} pages redone in all; uninterrupted {took} ms, {} requests; \
         {} ms in all",
        suite.backend,
        case.kind,
        reference.values().sum::<u32>(),
        suite.elapsed_ms(started)
    );
}
