//! `headroom import gharchive` throughput: generates a GH Archive-format file of
//! `HEADROOM_BENCH_EVENTS` envelopes in a temporary directory (default 1,000,000; about 87 %
//! PushEvents in both payload shapes, the rest other types, 1 % malformed; `created_at` in
//! order at about 150,000 events an hour, as GH Archive's hour files are; up to 60,000 actors
//! and 80,000 repositories, or `HEADROOM_BENCH_ACTORS` and `HEADROOM_BENCH_REPOSITORIES`: a
//! real hour names far more, and a first import of such a file runs much slower, see the
//! docs/PERFORMANCE.md), imports it into a
//! fresh SQLite database and, when `HEADROOM_TEST_DATABASE_URL` is set, into a fresh PostgreSQL
//! database created (and dropped) for the run, then imports it again (all duplicates). Each
//! backend runs in a child process of this binary, so its peak resident memory (VmHWM) is its
//! own: compare the figure at 1,000,000, 2,000,000 and 3,000,000 envelopes to see that it does
//! not grow with the file (below about 1,000,000 the SQLite page cache is still filling). Each
//! import also prints the child's CPU time per envelope, bytes written and the load average:
//! on a shared machine the rate swings with other work, CPU per envelope much less. The file
//! and the databases are deleted afterwards, unless `HEADROOM_BENCH_FILE` names where to keep
//! the file: an existing file there is imported as it is (the counts above no longer apply).
//! `HEADROOM_BENCH_CHILD="DB<TAB>FILE"` runs only the child, to put a profiler on it.
//!
//! `cargo bench -p headroom-github --bench import` (a plain binary: criterion's repetitions
//! would take minutes per sample at this size).

#![allow(clippy::expect_used, clippy::unwrap_used)]

use headroom_core::clock::{Clock, SystemClock};
use std::io::{BufWriter, Write};

use headroom_github::feed::IngestContext;
use headroom_github::feed::import::{ImportOptions, import_reader, open_input};
use headroom_store::{EventOrigin, Store};
use sqlx::{ConnectOptions, Connection};

/// The allocator the `headroom` binary uses (see its `main.rs`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Set in a child process: `DB\tFILE`, the store to open and the file to import.
const CHILD_VAR: &str = "HEADROOM_BENCH_CHILD";

/// Set in a child process by the parent: where the child writes its first import's rate
/// (events/s), for the PostgreSQL/SQLite ratio.
const RATE_VAR: &str = "HEADROOM_BENCH_RATE_FILE";

/// The issue's target: PostgreSQL imports at least this fraction of SQLite's rate, on the
/// same file in the same run.
const TARGET_RATIO: f64 = 0.5;

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// CPU seconds (user, system) of this process so far, from `/proc/self/stat` (clock ticks
/// of 1/100 s, Linux's fixed `USER_HZ`).
fn cpu_secs() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(") ")
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| -> f64 {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 100.0
    };
    // After the command name: state is field 3, utime 14 and stime 15.
    (ticks(11), ticks(12))
}

/// Bytes this process has caused to be written to storage, from `/proc/self/io`.
fn bytes_written() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|io| {
            io.lines()
                .find(|l| l.starts_with("write_bytes:"))?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn sha(n: u64, salt: u64) -> String {
    let a = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ salt;
    let b = a.rotate_left(17).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    format!("{a:016x}{b:016x}{:08x}", (a ^ b) as u32)
}

/// Actors and repositories the file names (each event's drawn in a fixed cycle), from
/// `HEADROOM_BENCH_ACTORS` and `HEADROOM_BENCH_REPOSITORIES`.
struct Entities {
    actors: u64,
    repositories: u64,
}

impl Entities {
    fn from_env() -> Self {
        let var = |name: &str, default: u64| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
                .filter(|&n| n > 0)
                .unwrap_or(default)
        };
        Self {
            actors: var("HEADROOM_BENCH_ACTORS", 60_000),
            repositories: var("HEADROOM_BENCH_REPOSITORIES", 80_000),
        }
    }
}

/// Events per second of `created_at`: GH Archive hours hold about 150,000 events, in
/// `created_at` order (the corpus's first 5,000 lines span two minutes, out of order only
/// within a second or so).
const EVENTS_PER_SECOND: u64 = 42;

fn generate(path: &std::path::Path, n: u64, entities: &Entities) {
    let file = std::fs::File::create(path).expect("create");
    let mut out = BufWriter::with_capacity(1 << 20, file);
    // 2026-06-01T15:00:00Z.
    let start = 1_780_326_000;
    for i in 0..n {
        let actor = 1_000 + (i * 7919) % entities.actors;
        let repo = 500_000 + (i * 104_729) % entities.repositories;
        let id = 40_000_000_000 + i * 3;
        let second = i64::try_from(i / EVENTS_PER_SECOND).expect("seconds");
        let ts = jiff::Timestamp::from_second(start + second).expect("timestamp");
        let actor_json = format!(
            r#"{{"id":{actor},"login":"user{actor}","display_login":"user{actor}","gravatar_id":"","url":"https://api.github.com/users/user{actor}","avatar_url":"https://avatars.githubusercontent.com/u/{actor}?"}}"#
        );
        let repo_json = format!(
            r#"{{"id":{repo},"name":"org{}/repo{repo}","url":"https://api.github.com/repos/org{}/repo{repo}"}}"#,
            repo % 5_000,
            repo % 5_000
        );
        let line = match i % 100 {
            0..=59 => format!(
                r#"{{"id":"{id}","type":"PushEvent","actor":{actor_json},"repo":{repo_json},"payload":{{"repository_id":{repo},"push_id":{},"ref":"refs/heads/main","head":"{}","before":"{}"}},"public":true,"created_at":"{ts}"}}"#,
                30_000_000_000 + i,
                sha(i, 1),
                sha(i, 2)
            ),
            60..=86 => format!(
                r#"{{"id":"{id}","type":"PushEvent","actor":{actor_json},"repo":{repo_json},"payload":{{"push_id":{},"size":1,"distinct_size":1,"ref":"refs/heads/feature-{}","head":"{}","before":"{}","commits":[{{"sha":"{}","author":{{"email":"u@example.com","name":"U"}},"message":"Change {i}","distinct":true,"url":"https://api.github.com/repos/o/r/commits/{}"}}]}},"public":true,"created_at":"{ts}"}}"#,
                30_000_000_000 + i,
                i % 13,
                sha(i, 1),
                sha(i, 2),
                sha(i, 1),
                sha(i, 1)
            ),
            87 => format!(
                r#"{{"id":"{id}","type":"PushEvent","actor":{actor_json},"repo":{repo_json},"payload":{{"ref":"refs/heads/main","head":"not-a-sha-{i}"}},"public":true,"created_at":"{ts}"}}"#
            ),
            _ => format!(
                r#"{{"id":"{id}","type":"WatchEvent","actor":{actor_json},"repo":{repo_json},"payload":{{"action":"started"}},"public":true,"created_at":"{ts}"}}"#
            ),
        };
        out.write_all(line.as_bytes()).expect("write");
        out.write_all(b"\n").expect("write");
    }
    out.flush().expect("flush");
    // On disk before the import starts: otherwise the kernel writes the file back while the
    // import runs, and the import is charged for it (about 13 % of its rate here).
    out.get_ref().sync_all().expect("sync");
}

/// Imports `path` into `store`, prints what it cost, and returns the rate (events/s).
async fn run_import(store: &dyn Store, path: &str, label: &str) -> f64 {
    let ctx = IngestContext {
        origin: EventOrigin::Gharchive,
        run_id: "bench".into(),
        ingestion_run_id: None,
    };
    let started = SystemClock.now();
    let (user0, sys0) = cpu_secs();
    let written0 = bytes_written();
    let (reader, _, bytes) = open_input(path).expect("open");
    let progress = import_reader(
        store,
        reader,
        bytes,
        &SystemClock,
        &ctx,
        ImportOptions::default(),
        |_| {},
    )
    .await
    .expect("import");
    let secs = SystemClock.now().duration_since(started).as_secs_f64();
    let (user1, sys1) = cpu_secs();
    let (user, sys) = (user1 - user0, sys1 - sys0);
    let lines = progress.lines.max(1) as f64;
    println!(
        "{label}: CPU user {user:.1} s + system {sys:.1} s = {:.1} µs per envelope; {} MiB written; load average {}",
        (user + sys) * 1e6 / lines,
        (bytes_written() - written0) / (1 << 20),
        load_average(),
    );
    println!(
        "{label}: {} envelopes in {secs:.2} s = {:.0} events/s ({} created, {} duplicates, {} quarantined, {} ignored, {} failed); peak RSS so far {} MiB",
        progress.lines,
        progress.lines as f64 / secs,
        progress.counts.events_created,
        progress.counts.duplicates_skipped,
        progress.counts.events_quarantined,
        progress.counts.events_ignored,
        progress.counts.events_failed,
        peak_rss_kib().unwrap_or(0) / 1024
    );
    progress.lines as f64 / secs
}

/// The child: one backend, first import then replay.
fn child(spec: &str) {
    let (db, file) = spec.split_once('\t').expect("DB<TAB>FILE");
    let backend = if db.starts_with("postgres") {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let store = headroom_store::open(db).await.expect("open the store");
        let rate = run_import(store.as_ref(), file, &format!("{backend}, first import")).await;
        if let Ok(rate_file) = std::env::var(RATE_VAR) {
            std::fs::write(rate_file, rate.to_string()).expect("write the rate");
        }
        run_import(
            store.as_ref(),
            file,
            &format!("{backend}, replay (all duplicates)"),
        )
        .await;
        store.close().await;
    });
}

/// Runs one backend's child and returns its first import's rate (events/s).
fn run_child(db: &str, file: &str, rate_file: &std::path::Path) -> f64 {
    // Each import starts with nothing of the one before still to be written out (the
    // generated file, the SQLite database): the kernel writing those back during the next
    // import charged it for the previous one's bytes.
    let _ = std::process::Command::new("sync").status();
    let status = std::process::Command::new(std::env::current_exe().expect("own path"))
        .env(CHILD_VAR, format!("{db}\t{file}"))
        .env(RATE_VAR, rate_file)
        .status()
        .expect("run the child");
    assert!(status.success(), "the import child failed: {status}");
    std::fs::read_to_string(rate_file)
        .expect("the child's rate")
        .trim()
        .parse()
        .expect("a rate")
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD_VAR) {
        child(&spec);
        return;
    }
    // `cargo bench` passes `--bench`; a filter argument may follow. Nothing to filter here.
    let n: u64 = std::env::var("HEADROOM_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("tmp");
    // A kept file is reused as it is, whatever the variables say now: repeated runs (or a
    // profiler on the child) then import the very same bytes.
    let kept = std::env::var_os("HEADROOM_BENCH_FILE").map(std::path::PathBuf::from);
    let path = kept
        .clone()
        .unwrap_or_else(|| dir.path().join("gharchive.jsonl"));
    let started = SystemClock.now();
    let entities = Entities::from_env();
    if kept.as_ref().is_some_and(|p| p.exists()) {
        println!("reusing {}", path.display());
    } else {
        generate(&path, n, &entities);
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        println!(
            "generated {n} envelopes ({} MiB; up to {} actors and {} repositories) in {:.1} s",
            size / (1 << 20),
            entities.actors,
            entities.repositories,
            SystemClock.now().duration_since(started).as_secs_f64(),
        );
    }
    let file = path.to_str().expect("utf-8").to_owned();
    let db = dir.path().join("bench.db");
    let rate_file = dir.path().join("rate");
    let sqlite_rate = run_child(db.to_str().expect("utf-8"), &file, &rate_file);

    match std::env::var("HEADROOM_TEST_DATABASE_URL") {
        Ok(admin) if !admin.trim().is_empty() => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            let admin: sqlx::postgres::PgConnectOptions = admin.parse().expect("admin URL");
            let name = format!("headroom_bench_{}", std::process::id());
            let sql = |s: String| sqlx::query(sqlx::AssertSqlSafe(s));
            runtime.block_on(async {
                let mut conn = admin.connect().await.expect("connect as admin");
                sql(format!("DROP DATABASE IF EXISTS {name}"))
                    .execute(&mut conn)
                    .await
                    .expect("drop");
                sql(format!("CREATE DATABASE {name}"))
                    .execute(&mut conn)
                    .await
                    .expect("create");
                // The durability the figures were measured under (the target is for the
                // server's defaults, not `fsync = off`).
                let mut settings = Vec::new();
                for setting in [
                    "fsync",
                    "synchronous_commit",
                    "full_page_writes",
                    "wal_level",
                ] {
                    let value: String = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                        "SELECT current_setting('{setting}')"
                    )))
                    .fetch_one(&mut conn)
                    .await
                    .expect("a setting");
                    settings.push(format!("{setting} = {value}"));
                }
                println!("PostgreSQL: {}", settings.join(", "));
                conn.close().await.expect("close");
            });
            let url = format!(
                "postgres://{}@{}:{}/{name}",
                admin.get_username(),
                admin.get_host(),
                admin.get_port()
            );
            let pg_rate = run_child(&url, &file, &rate_file);
            let ratio = pg_rate / sqlite_rate.max(f64::MIN_POSITIVE);
            println!(
                "first imports, same file, same run: PostgreSQL {pg_rate:.0} events/s / SQLite \
                 {sqlite_rate:.0} = {ratio:.2} (target at least {TARGET_RATIO}: {})",
                if ratio >= TARGET_RATIO {
                    "met"
                } else {
                    "NOT met"
                }
            );
            runtime.block_on(async {
                let mut conn = admin.connect().await.expect("connect as admin");
                sql(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut conn)
                    .await
                    .expect("drop");
                conn.close().await.expect("close");
            });
        }
        _ => println!("PostgreSQL: skipped: HEADROOM_TEST_DATABASE_URL is not set"),
    }
}
