//! The chaos suite's PostgreSQL restart: the server is restarted (`pg_ctl restart -m fast`)
//! while `headroom sync org` is writing pages. The process either rides it out or stops with
//! an error that names the database — never a hang or a panic — and a resumed run then stores
//! exactly what an undisturbed run stores. Alone in its test binary, because the restart drops
//! every connection to the server.
//!
//! `scripts/test` sets `HEADROOM_TEST_PG_RESTART` to the restart command of the throwaway
//! server it starts; with a server of your own, set it yourself (the test fails under `CI`
//! without it, and says it was skipped otherwise).

#![allow(clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use headroom_core::clock::{SignedDuration, TokioClock};
use serde_json::Value;

mod common;
use common::{Shared, Sim};

fn headroom(dir: &Path, db: &str, sim: &Sim, args: &[&str]) -> Command {
    common::headroom_against(dir, db, &sim.url, args)
}

fn tables(dir: &Path, db: &str, sim: &Sim) -> Value {
    common::done_run_tables(headroom(dir, db, sim, &["sync", "status", "1", "--json"]))
}

fn restart_command() -> Option<String> {
    match std::env::var("HEADROOM_TEST_PG_RESTART") {
        Ok(cmd) if !cmd.trim().is_empty() => Some(cmd),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "HEADROOM_TEST_PG_RESTART is not set but CI is (scripts/test sets it)"
            );
            println!(
                "skipped: HEADROOM_TEST_PG_RESTART not set (the restart command of the test server)"
            );
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_restart_mid_sync_ends_exact_after_a_resume() {
    let Some(shared) = Shared::postgres("pg_restart").await else {
        return;
    };
    let Some(restart) = restart_command() else {
        shared.finish().await;
        return;
    };
    let dir = tempfile::tempdir().expect("tmp");
    let sim = Sim::start(&[
        "--org",
        "acme",
        "--repos",
        "4",
        "--token",
        "t1=alice",
        "--latency-ms",
        "10",
    ]);
    let reference = dir.path().join("reference.db").display().to_string();
    let out = headroom(
        dir.path(),
        &reference,
        &sim,
        &["sync", "org", "acme", "--json", "--wait"],
    )
    .output()
    .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let whole = tables(dir.path(), &reference, &sim);

    let mut child = headroom(
        dir.path(),
        &shared.db,
        &sim,
        &[
            "sync",
            "org",
            "acme",
            "--json",
            "--wait",
            "--claim-secs",
            "1",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("starts");
    let stdout = child.stdout.take().expect("piped");
    let mut lines = BufReader::new(stdout).lines().map_while(Result::ok);
    let pages = lines
        .by_ref()
        .filter(|l| l.contains("\"event\":\"sync.page\""))
        .take(20)
        .count();
    assert_eq!(pages, 20, "the sync was writing pages before the restart");
    let restarted = Command::new("sh")
        .arg("-c")
        .arg(&restart)
        .status()
        .expect("restart runs");
    assert!(restarted.success(), "{restart}");
    // The rest of its output, to the end: a process that hangs fails the test by timing out.
    let rest: Vec<String> = lines.collect();
    let status = child.wait().expect("exits");
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        std::io::Read::read_to_string(&mut e, &mut err).expect("stderr");
    }
    assert!(!err.contains("panicked"), "{err}");
    let mut resumes = 0;
    if !status.success() {
        let said = format!("{}\n{err}", rest.join("\n"));
        assert!(
            said.contains("database") || said.contains("connection"),
            "the failure names the database:\n{said}"
        );
        TokioClock::system()
            .sleep(SignedDuration::from_millis(1_200))
            .await;
        loop {
            resumes += 1;
            let out = headroom(
                dir.path(),
                &shared.db,
                &sim,
                &[
                    "sync",
                    "org",
                    "acme",
                    "--json",
                    "--resume",
                    "1",
                    "--wait",
                    "--claim-secs",
                    "1",
                ],
            )
            .output()
            .expect("runs");
            if out.status.success() {
                break;
            }
            assert!(
                resumes < 3,
                "first: {status}\n{}\n{err}\nresume:\n{}\n{}",
                rest.join("\n"),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            TokioClock::system()
                .sleep(SignedDuration::from_millis(1_200))
                .await;
        }
    }
    println!(
        "pg restart: first process {status}, {resumes} resumes; it said: {}",
        err.lines().last().unwrap_or_default()
    );
    assert_eq!(tables(dir.path(), &shared.db, &sim), whole);
    shared.finish().await;
}
