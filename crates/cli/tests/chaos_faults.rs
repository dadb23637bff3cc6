//! The chaos suite's faults: a whole organization sync, a feed cycle and a replayed feed hour
//! of recorded events against a simulator that answers seeded 5xx, hangs past the client's
//! read timeout, cuts answers off halfway with the connection closed and stalls bodies; and an import into an SQLite file that runs
//! out of room (a file-size limit standing in for a full disk). Each ends with exactly the data
//! of an undisturbed run, or with a clear error that leaves nothing half-written and a rerun
//! that completes it. (A PostgreSQL restart mid-run is `chaos_pg_restart.rs`: it must not share
//! its test binary with other PostgreSQL tests.)

#![allow(clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use headroom_core::clock::{Clock, SignedDuration, TokioClock};
use serde_json::Value;

mod common;
use common::{BIN, Shared, Sim, sim_log};

/// 5 % server errors, 5 % answers cut off, 2 % bodies stalled 300 ms, 1 % requests hung past
/// the client's one-second read timeout: about one request in eight is disturbed.
const FAULTS: [&str; 10] = [
    "--error-rate",
    "0.05",
    "--cut-rate",
    "0.05",
    "--stall-rate",
    "0.02",
    "--stall-ms",
    "300",
    "--timeout-rate",
    "0.01",
];

/// A feed's requests are few, so its faults are harsher than the sync's: 15 % 5xx, 10 % cut
/// off, 5 % stalled 300 ms.
const FEED_FAULTS: [&str; 8] = [
    "--error-rate",
    "0.15",
    "--cut-rate",
    "0.1",
    "--stall-rate",
    "0.05",
    "--stall-ms",
    "300",
];

fn headroom(dir: &Path, db: &str, sim: &Sim, args: &[&str]) -> Command {
    let mut cmd = common::headroom_against(dir, db, &sim.url, &["--read-timeout", "1"]);
    cmd.args(args);
    cmd
}

fn output(cmd: &mut Command) -> (Output, String) {
    let out = cmd.output().expect("runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!err.contains("panicked"), "{err}");
    (out, err)
}

/// `sync status 1`'s row counts per table.
fn tables(dir: &Path, db: &str, sim: &Sim) -> Value {
    common::done_run_tables(headroom(dir, db, sim, &["sync", "status", "1", "--json"]))
}

/// Runs `sync org acme --wait`; a run that fails must say why, and is resumed (at most three
/// times) until done. Returns how many resumes it took.
fn sync_to_the_end(dir: &Path, db: &str, sim: &Sim) -> u32 {
    let (out, err) = output(&mut headroom(
        dir,
        db,
        sim,
        &["sync", "org", "acme", "--json", "--wait"],
    ));
    let mut ok = out.status.success();
    let mut resumes = 0;
    while !ok {
        let said = String::from_utf8_lossy(&out.stdout).into_owned() + &err;
        assert!(said.contains("fail"), "a failed sync says why:\n{said}");
        assert!(resumes < 3, "still failing after three resumes:\n{said}");
        resumes += 1;
        let resume = [
            "sync",
            "org",
            "acme",
            "--json",
            "--resume",
            "1",
            "--wait",
            "--claim-secs",
            "1",
        ];
        let (out, _) = output(&mut headroom(dir, db, sim, &resume));
        ok = out.status.success();
    }
    resumes
}

async fn a_sync_under_faults_stores_what_a_clean_sync_stores(shared: Shared, dir: &Path) {
    let org = [
        "--org", "acme", "--repos", "4", "--token", "t1=alice", "--seed", "7",
    ];
    let clean = Sim::start(&org);
    let reference = dir.join("reference.db").display().to_string();
    assert_eq!(sync_to_the_end(dir, &reference, &clean), 0);
    let whole = tables(dir, &reference, &clean);
    let clean_requests = clean_request_count(dir, &org);

    let log = dir.join("faulty.log").display().to_string();
    let faulty = Sim::start(&[&org[..], &FAULTS[..], &["--log", &log][..]].concat());
    let resumes = sync_to_the_end(dir, &shared.db, &faulty);
    assert_eq!(tables(dir, &shared.db, &faulty), whole);
    assert!(whole["pull_requests"].as_u64().unwrap_or(0) > 0, "{whole}");
    let entries = sim_log(Path::new(&log));
    let errors = entries
        .iter()
        .filter(|e| e["status"].as_u64().is_some_and(|s| s >= 500))
        .count();
    // The faults happened: server errors answered, and more requests than a clean run needs
    // (the retries of errors, cuts and hangs).
    assert!(errors > 0, "no 5xx was injected");
    assert!(
        entries.len() > clean_requests,
        "{} requests under faults, {clean_requests} clean",
        entries.len()
    );
    let cut = entries.iter().filter(|e| e["body_fault"] == "cut").count();
    let stalled = entries
        .iter()
        .filter(|e| e["body_fault"] == "stall")
        .count();
    assert!(cut > 0, "no answer was cut off");
    println!(
        "faults: {} requests ({errors} answered 5xx, {cut} cut off, {stalled} stalled) against \
         {clean_requests} clean; {resumes} resumes",
        entries.len()
    );
    shared.finish().await;
}

/// How many requests an undisturbed sync of `org` sends (a simulator of its own, logged).
fn clean_request_count(dir: &Path, org: &[&str]) -> usize {
    let log = dir.join("clean.log").display().to_string();
    let sim = Sim::start(&[org, &["--log", &log][..]].concat());
    let db = dir.join("count.db").display().to_string();
    assert_eq!(sync_to_the_end(dir, &db, &sim), 0);
    sim_log(Path::new(&log)).len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_under_faults_stores_what_a_clean_sync_stores_on_sqlite() {
    let dir = tempfile::tempdir().expect("tmp");
    let shared = Shared::sqlite(dir.path()).await;
    a_sync_under_faults_stores_what_a_clean_sync_stores(shared, dir.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_under_faults_stores_what_a_clean_sync_stores_on_postgres() {
    let Some(shared) = Shared::postgres("sync_under_faults").await else {
        return;
    };
    let dir = tempfile::tempdir().expect("tmp");
    a_sync_under_faults_stores_what_a_clean_sync_stores(shared, dir.path()).await;
}

/// The feed's figures after a cycle settles: events, actors and repositories enriched or gone.
fn feed_status(dir: &Path, db: &str, sim: &Sim) -> Value {
    let (out, err) = output(&mut headroom(dir, db, sim, &["status", "--json"]));
    assert!(out.status.success(), "{err}");
    serde_json::from_slice(&out.stdout).expect("status JSON")
}

fn settled(s: &Value) -> bool {
    s["coverage"]["events_in_window"] == 4
        && s["enrichment"]["actors"]["complete"] == 2
        && s["enrichment"]["actors"]["permanent_failure"] == 1
        && s["enrichment"]["repositories"]["complete"] == 2
        && s["enrichment"]["repositories"]["permanent_failure"] == 1
}

/// `headroom run` ticks against the faulty simulator until the default scenario's feed is
/// stored and enriched exactly as without faults. A cycle is a dozen requests, so the rates are
/// harsher than the sync's; should a seed's cycle meet no fault at all, the next seed is tried
/// (three at most), so the test always proves a disturbed cycle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_cycle_under_faults_ends_exact() {
    for seed in ["3", "4", "5"] {
        if feed_cycle_under_faults(seed).await > 0 {
            return;
        }
    }
    panic!("three seeds and no request of the cycle met a fault");
}

/// One cycle to the end under faults; how many of its requests met one.
async fn feed_cycle_under_faults(seed: &str) -> usize {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("feed.log").display().to_string();
    let sim = Sim::start(
        &[
            &["--token", "t1=alice", "--seed", seed, "--log", &log][..],
            &FEED_FAULTS[..],
        ]
        .concat(),
    );
    let db = dir.path().join("feed.db").display().to_string();
    let run = [
        "run",
        "--tick-secs",
        "1",
        "--no-listen",
        "--search-pacing",
        "0",
        "--no-sync",
    ];
    let mut run = headroom(dir.path(), &db, &sim, &run)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run starts");
    let clock = TokioClock::system();
    let deadline = clock.now() + SignedDuration::from_secs(90);
    let mut last = Value::Null;
    while clock.now() < deadline {
        clock.sleep(SignedDuration::from_millis(500)).await;
        last = feed_status(dir.path(), &db, &sim);
        if settled(&last) {
            break;
        }
    }
    let _ = run.kill();
    let _ = run.wait();
    assert!(settled(&last), "seed {seed}: {last}");
    let text = output(&mut headroom(dir.path(), &db, &sim, &["status"])).0;
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(
        text.lines()
            .any(|l| l.starts_with("Quarantined envelopes:") && l.ends_with(" 3")),
        "{text}"
    );
    // The cycle's own requests (`status` asks only /user) that met a fault.
    sim_log(Path::new(&log))
        .iter()
        .filter(|e| {
            let path = e["path"].as_str().unwrap_or_default();
            path != "/user"
                && (e["status"].as_u64().is_some_and(|s| s >= 500) || !e["body_fault"].is_null())
        })
        .count()
}

/// Every hundredth event of the recorded GH Archive hour, oldest first.
fn recorded_hour(to: &Path) -> usize {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/corpus/gh-pulse/gharchive-2026-06-01-15-first5000.jsonl");
    let text = std::fs::read_to_string(&corpus).expect("the corpus copy");
    let sample: Vec<&str> = text.lines().step_by(100).collect();
    std::fs::write(to, sample.join("\n") + "\n").expect("write the sample");
    sample
        .iter()
        .filter(|l| l.contains(r#""type":"PushEvent""#))
        .count()
}

/// `headroom run` against a simulator replaying the recorded hour over 20 s (polls every 4 s),
/// stopped once every push event is stored and no enrichment is pending or due again. Returns
/// the database's feed digest and how many of the feed's requests met a fault.
async fn feed_hour(dir: &Path, name: &str, pushes: usize, faults: &[&str]) -> (Vec<i64>, usize) {
    let log = dir.join(format!("{name}.log")).display().to_string();
    let feed = dir.join("hour.jsonl").display().to_string();
    let replay = [
        "--token",
        "t1=alice",
        "--feed-file",
        &feed,
        "--feed-replay-secs",
        "20",
        "--poll-interval-secs",
        "1",
        "--log",
        &log,
    ];
    let sim = Sim::start(&[&replay[..], faults].concat());
    let path = dir.join(format!("{name}.db"));
    let db = path.display().to_string();
    let run = [
        "run",
        "--tick-secs",
        "1",
        "--no-listen",
        "--search-pacing",
        "0",
        "--poll-interval",
        "4",
        "--no-sync",
    ];
    let mut run = headroom(dir, &db, &sim, &run)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run starts");
    let settled = |s: &Value| {
        let quiet = |kind: &str| {
            let e = &s["enrichment"][kind];
            e["pending"] == 0 && e["retryable_failure"] == 0 && e["complete"].as_u64() > Some(0)
        };
        s["coverage"]["events_in_window"].as_u64() == Some(pushes as u64)
            && quiet("actors")
            && quiet("repositories")
    };
    let clock = TokioClock::system();
    let deadline = clock.now() + SignedDuration::from_secs(300);
    let mut last = Value::Null;
    while clock.now() < deadline && !settled(&last) {
        clock.sleep(SignedDuration::from_secs(1)).await;
        last = feed_status(dir, &db, &sim);
    }
    let _ = run.kill();
    let _ = run.wait();
    assert!(settled(&last), "{name}: {last}");
    let digest = common::sqlite_digest(&path, common::FEED_DIGEST).await;
    let disturbed = sim_log(Path::new(&log))
        .iter()
        .filter(|e| e["status"].as_u64().is_some_and(|s| s >= 500) || !e["body_fault"].is_null())
        .count();
    (digest, disturbed)
}

/// A feed hour of real recorded events, replayed in 20 s: polled and enriched under faults
/// (server errors, answers cut off, bodies stalled, requests hung past the read timeout), the
/// database ends holding exactly what an undisturbed replay stores — every event once, every
/// account and repository enriched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_hour_under_faults_stores_what_a_clean_hour_stores() {
    let dir = tempfile::tempdir().expect("tmp");
    let pushes = recorded_hour(&dir.path().join("hour.jsonl"));
    let faults = [
        &["--seed", "11", "--timeout-rate", "0.03"][..],
        &FEED_FAULTS[..],
    ]
    .concat();
    // Both hours at once: the search ledger's minute makes each last a minute or more.
    let ((clean, calm), (faulty, disturbed)) = tokio::join!(
        feed_hour(dir.path(), "clean", pushes, &[]),
        feed_hour(dir.path(), "faulty", pushes, &faults),
    );
    assert_eq!(calm, 0);
    assert!(disturbed > 0, "no request of the faulty hour met a fault");
    assert_eq!(faulty, clean);
    assert_eq!(clean[0], pushes as i64, "{clean:?}");
    println!("feed hour: {pushes} push events, {disturbed} requests disturbed, digest {clean:?}");
}

fn sqlite_count(path: &Path, sql: &str) -> i64 {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(path)
            .read_only(true);
        let pool = sqlx::SqlitePool::connect_with(options).await.expect("open");
        let n = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_one(&pool)
            .await
            .expect(sql);
        pool.close().await;
        n
    })
}

/// Bytes the database's files take on disk.
fn size_of_database(db: &Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|s| std::fs::metadata(format!("{}{s}", db.display())).ok())
        .map(|m| m.len())
        .sum()
}

/// How much room an import's database gets.
#[derive(Clone, Copy)]
enum Room {
    /// As much as the disk has.
    Unlimited,
    /// Every file the process writes capped at this many KiB (`ulimit -f`): SIGXFSZ
    /// ignored, a write past it fails with EFBIG, as one on a full disk fails with ENOSPC.
    FileSizeLimit(u64),
    /// The database on a tmpfs of this many KiB, mounted in a mount namespace of the
    /// import's own (`unshare -rm`), which takes the mount away when the import ends; the
    /// database's files are copied out of it first.
    Tmpfs(u64),
}

/// `headroom import gharchive` of `archive` into `db` with `room`.
fn import_with(dir: &Path, archive: &Path, db: &Path, room: Room) -> Output {
    let script = match room {
        Room::Unlimited => r#"exec "$0" --db "$DB" "$@""#.to_owned(),
        Room::FileSizeLimit(kib) => {
            format!(r#"ulimit -f {kib}; trap '' XFSZ; exec "$0" --db "$DB" "$@""#)
        }
        Room::Tmpfs(kib) => format!(
            r#"mount -t tmpfs -o size={kib}k tmpfs "$MNT" || exit 99
            name=$(basename "$DB")
            "$0" --db "$MNT/$name" "$@"; rc=$?
            cp "$MNT/$name"* "$(dirname "$DB")"/ && exit $rc"#
        ),
    };
    let mut cmd = if matches!(room, Room::Tmpfs(_)) {
        let mut c = Command::new("unshare");
        c.args(["-rm", "bash"]);
        c
    } else {
        Command::new("bash")
    };
    let mnt = dir.join("tmpfs");
    std::fs::create_dir_all(&mnt).expect("mount point");
    cmd.arg("-c")
        .arg(script)
        .arg(BIN)
        .args(["import", "gharchive", "--commit-every", "5000"])
        .arg(archive)
        .env("DB", db)
        .env("MNT", &mnt)
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_CONFIG");
    let out = output(&mut cmd).0;
    assert_ne!(
        out.status.code(),
        Some(99),
        "mounting a tmpfs failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Whether this machine lets an unprivileged mount namespace mount a tmpfs.
fn tmpfs_mountable(dir: &Path) -> bool {
    let mnt = dir.join("probe");
    std::fs::create_dir_all(&mnt).expect("mount point");
    Command::new("unshare")
        .args([
            "-rm",
            "sh",
            "-c",
            r#"mount -t tmpfs -o size=64k tmpfs "$0""#,
        ])
        .arg(&mnt)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// An import whose database has half the room it needs fails saying the disk may be full,
/// keeps what it committed whole (no event without its actor and repository,
/// `integrity_check` ok), and the same import run again with room completes it exactly.
fn an_import_out_of_room_says_so_and_the_rerun_completes_it(
    dir: &Path,
    out_of_room: fn(u64) -> Room,
) {
    const EVENTS: u64 = 30_000;
    let archive = dir.join("archive.jsonl");
    common::write_push_archive(&archive, EVENTS, 500, 700, 0);
    let whole = dir.join("whole.db");
    assert!(
        import_with(dir, &archive, &whole, Room::Unlimited)
            .status
            .success()
    );
    let needed_kib = size_of_database(&whole) / 1024;

    let db = dir.join("full.db");
    let out = import_with(dir, &archive, &db, out_of_room(needed_kib / 2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("may be full"), "{err}");
    assert!(err.contains("importing again resumes"), "{err}");
    assert_eq!(
        sqlite_count(
            &db,
            "SELECT COUNT(*) FROM pragma_integrity_check WHERE integrity_check <> 'ok'"
        ),
        0
    );
    let kept = sqlite_count(&db, "SELECT COUNT(*) FROM push_events");
    assert!(kept < EVENTS as i64, "kept {kept}");
    for orphans in [
        "SELECT COUNT(*) FROM push_events e WHERE NOT EXISTS \
         (SELECT 1 FROM actors a WHERE a.github_id = e.github_actor_id)",
        "SELECT COUNT(*) FROM push_events e WHERE NOT EXISTS \
         (SELECT 1 FROM repositories r WHERE r.github_id = e.github_repository_id)",
    ] {
        assert_eq!(sqlite_count(&db, orphans), 0, "{orphans}");
    }

    let out = import_with(dir, &archive, &db, Room::Unlimited);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for sql in [
        "SELECT COUNT(*) FROM push_events",
        "SELECT COUNT(*) FROM actors",
        "SELECT COUNT(*) FROM repositories",
        "SELECT CAST(SUM(latest_event_at_ms) AS BIGINT) FROM actors",
    ] {
        assert_eq!(sqlite_count(&db, sql), sqlite_count(&whole, sql), "{sql}");
    }
}

#[test]
fn an_import_that_reaches_a_file_size_limit_says_so_and_the_rerun_completes_it() {
    let dir = tempfile::tempdir().expect("tmp");
    an_import_out_of_room_says_so_and_the_rerun_completes_it(dir.path(), Room::FileSizeLimit);
}

/// The real thing: a full file system. Where mount namespaces are not allowed the test says
/// it is skipped, and fails under `CI`, whose machines allow them.
#[test]
fn an_import_that_fills_a_tmpfs_says_so_and_the_rerun_completes_it() {
    let dir = tempfile::tempdir().expect("tmp");
    if !tmpfs_mountable(dir.path()) {
        headroom_testkit::skip(
            "an_import_that_fills_a_tmpfs_says_so_and_the_rerun_completes_it",
            "`unshare -rm` cannot mount a tmpfs on this machine",
        );
        return;
    }
    an_import_out_of_room_says_so_and_the_rerun_completes_it(dir.path(), Room::Tmpfs);
}
