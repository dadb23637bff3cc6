//! Credentials are not capacity, end to end against `headroom sim`: a sync run is bound to the
//! token it was created with; resuming it (`sync org --resume`, `sync worker`) with another
//! token of the same owner is refused until `--rebind-credential`, which is recorded in the
//! run; a token of another owner is refused even then; and a process configured with tokens of
//! two owners refuses to sync at all, while two tokens of one owner spend one quota.

#![allow(clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use headroom_core::QuotaKey;
use headroom_core::clock::Timestamp;
use headroom_http::credential::fingerprint;
use headroom_store::{CredentialUsed, NewSyncRun, SyncRun, SyncRunStatus};
use serde_json::Value;

mod common;
use common::{BIN, Sim};

/// Alice has two tokens, Bob one.
fn sim() -> Sim {
    Sim::start(&[
        "--org", "acme", "--repos", "1", "--seed", "3", "--token", "t1=alice", "--token",
        "t2=alice", "--token", "t3=bob",
    ])
}

/// Runs the binary in `dir` on `sync.db` against `sim` with exactly the tokens in `env`.
fn run(dir: &Path, sim: &Sim, env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .args(["--db", "sync.db", "--api-url", &sim.url])
        .args(args)
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("GITHUB_API_URL");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn db(dir: &Path) -> String {
    dir.join("sync.db").to_str().expect("utf-8").to_owned()
}

/// A pending run of the `org` stage of acme, bound to `token` of alice, as `sync org` creates
/// it.
fn pending_run(dir: &Path, host: &str, token: &str) -> i64 {
    rt().block_on(async {
        let store = headroom_store::open(&db(dir)).await.expect("open");
        let created = store
            .create_sync_run(&NewSyncRun {
                kind: "org".into(),
                target: "acme".into(),
                key: QuotaKey::user(host, "alice"),
                requested_stages: Some(vec!["org".into()]),
                credential: Some(CredentialUsed {
                    fingerprint: Some(fingerprint(token)),
                    owner: "user:alice".into(),
                }),
                created_at: Timestamp::from_second(1_800_000_000).expect("valid"),
            })
            .await
            .expect("create");
        store.close().await;
        created.id
    })
}

fn find(dir: &Path, id: i64) -> Option<SyncRun> {
    rt().block_on(async {
        let store = headroom_store::open(&db(dir)).await.expect("open");
        let run = store.sync_run(id).await.expect("read");
        store.close().await;
        run
    })
}

fn stored(dir: &Path, id: i64) -> SyncRun {
    find(dir, id).expect("the run")
}

fn host(sim: &Sim) -> String {
    let url = url::Url::parse(&sim.url).expect("url");
    url.host_str().expect("host").to_owned()
}

#[test]
fn a_resume_with_another_token_of_the_owner_needs_the_flag_and_is_recorded() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = sim();
    let id = pending_run(dir.path(), &host(&sim), "t1");
    let resume = ["sync", "org", "acme", "--json", "--resume", &id.to_string()];
    let resume = resume.as_slice();

    let (code, out, err) = run(dir.path(), &sim, &[("GITHUB_TOKEN", "t2")], resume);
    assert_eq!(code, 2, "refused: {out}\n{err}");
    for part in [
        format!("sync run {id}"),
        fingerprint("t1"),
        fingerprint("t2"),
        "--rebind-credential".to_owned(),
    ] {
        assert!(err.contains(&part), "{part:?} not in {err}");
    }
    let run_now = stored(dir.path(), id);
    assert_eq!(run_now.status, SyncRunStatus::Pending, "nothing ran");
    assert_eq!(run_now.credential.fingerprint, Some(fingerprint("t1")));

    // The worker refuses it the same way, and leaves it as it was.
    let (code, out, err) = run(
        dir.path(),
        &sim,
        &[("GITHUB_TOKEN", "t2")],
        &["sync", "worker", "--json", "--once"],
    );
    assert_eq!(code, 0, "{err}");
    // Said on stdout as the skip's JSON line, with the command that resumes it.
    assert!(out.contains("--rebind-credential"), "{out}\n{err}");
    assert_eq!(stored(dir.path(), id).status, SyncRunStatus::Pending);

    let mut rebind = resume.to_vec();
    rebind.push("--rebind-credential");
    let (code, out, err) = run(dir.path(), &sim, &[("GITHUB_TOKEN", "t2")], &rebind);
    assert_eq!(code, 0, "{out}\n{err}");
    let done = stored(dir.path(), id);
    assert_eq!(done.status, SyncRunStatus::Done, "{out}\n{err}");
    assert_eq!(done.credential.fingerprint, Some(fingerprint("t2")));
    assert_eq!(done.credential.rebound_from, Some(fingerprint("t1")));
    assert_eq!(done.credential.rebind_count, 1);
    assert!(done.credential.rebound_at.is_some());
    assert_eq!(done.subject, "user:alice");

    // `sync status` names the binding and the rebind (fingerprints, never the token).
    let (code, out, err) = run(
        dir.path(),
        &sim,
        &[("GITHUB_TOKEN", "t2")],
        &["sync", "status", &id.to_string()],
    );
    assert_eq!(code, 0, "{err}");
    let expected = format!(
        "credential: user:alice, fingerprint {} · rebound 1 time (latest at",
        fingerprint("t2")
    );
    assert!(out.contains(&expected), "{expected:?} not in {out}");
    assert!(
        out.contains(&format!("from fingerprint {})", fingerprint("t1"))),
        "{out}"
    );
}

#[test]
fn a_token_of_another_owner_never_resumes_a_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = sim();
    let id = pending_run(dir.path(), &host(&sim), "t1");
    let (code, out, err) = run(
        dir.path(),
        &sim,
        &[("GITHUB_TOKEN", "t3")],
        &[
            "sync",
            "org",
            "acme",
            "--json",
            "--resume",
            &id.to_string(),
            "--rebind-credential",
        ],
    );
    assert_eq!(code, 2, "refused: {out}\n{err}");
    assert!(
        err.contains("user:alice") && err.contains("user:bob"),
        "{err}"
    );
    assert!(err.contains("never moves to another quota"), "{err}");
    let run_now = stored(dir.path(), id);
    assert_eq!(run_now.status, SyncRunStatus::Pending);
    assert_eq!(run_now.credential.fingerprint, Some(fingerprint("t1")));
    assert_eq!(run_now.credential.rebind_count, 0);
}

#[test]
fn tokens_of_two_owners_are_refused_and_two_of_one_owner_share_its_quota() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = sim();
    let sync = ["sync", "org", "acme", "--json", "--stages", "org", "--wait"];
    let (code, out, err) = run(
        dir.path(),
        &sim,
        &[("GITHUB_TOKEN", "t1"), ("GH_TOKEN", "t3")],
        &sync,
    );
    assert_eq!(code, 2, "refused: {out}\n{err}");
    for part in [
        "GITHUB_TOKEN",
        "GH_TOKEN",
        &fingerprint("t1"),
        &fingerprint("t3"),
        "different quotas",
    ] {
        assert!(err.contains(part), "{part:?} not in {err}");
    }
    assert!(find(dir.path(), 1).is_none(), "no run was created");

    // A token file beside an environment token of another owner is refused too.
    let file = dir.path().join("token");
    std::fs::write(&file, "t3\n").expect("write");
    let mut with_file = sync.to_vec();
    with_file.extend(["--token-file", file.to_str().expect("utf-8")]);
    let (code, _, err) = run(dir.path(), &sim, &[("GITHUB_TOKEN", "t1")], &with_file);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--token-file"), "{err}");

    // Two tokens of alice: one quota, so the run goes, bound to the one used.
    let (code, out, err) = run(
        dir.path(),
        &sim,
        &[("GITHUB_TOKEN", "t1"), ("GH_TOKEN", "t2")],
        &sync,
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let run = stored(dir.path(), 1);
    assert_eq!(run.status, SyncRunStatus::Done);
    assert_eq!(run.subject, "user:alice");
    assert_eq!(run.credential.fingerprint, Some(fingerprint("t1")));
    assert_eq!(run.credential.owner.as_deref(), Some("user:alice"));
}

#[test]
fn a_provider_operation_logs_the_credential_it_spent() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = sim();
    let mut c = Command::new(BIN);
    c.current_dir(dir.path())
        .args(["--db", "op.db", "--api-url", &sim.url])
        .args(["op", "--json", "create-repo", "hello"])
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("GITHUB_API_URL")
        .env("GITHUB_TOKEN", "t2")
        .env("RUST_LOG", "info");
    let out = c.output().expect("runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let line: Value = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["event"] == "provider.operation")
        .unwrap_or_else(|| panic!("no provider.operation line in {stderr}"));
    assert_eq!(line["operation"], "create-repo", "{line}");
    assert_eq!(line["outcome"], "ok", "{line}");
    assert_eq!(line["provider"], "github", "{line}");
    assert_eq!(line["fingerprint"], fingerprint("t2"), "{line}");
    assert_eq!(line["owner"], "user:alice", "{line}");
    assert!(!stderr.contains("\"t2\""), "the token itself never shows");
}

#[test]
fn a_feed_poll_records_the_credential_it_spent_and_refuses_two_owners() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = sim();
    let (code, out, err) = run(
        dir.path(),
        &sim,
        &[("GITHUB_TOKEN", "t1"), ("GH_TOKEN", "t3")],
        &["ingest"],
    );
    assert_eq!(code, 2, "refused: {out}\n{err}");
    assert!(err.contains("different quotas"), "{err}");

    let (code, out, err) = run(
        dir.path(),
        &sim,
        &[("GITHUB_TOKEN", "t1"), ("GH_TOKEN", "t2")],
        &["ingest"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let rows: Vec<(Option<String>, Option<String>)> = rt().block_on(async {
        use sqlx::Connection as _;
        let url = format!("sqlite://{}", db(dir.path()));
        let mut conn = sqlx::SqliteConnection::connect(&url)
            .await
            .expect("connect");
        sqlx::query_as("SELECT credential_fingerprint, credential_owner FROM ingestion_runs")
            .fetch_all(&mut conn)
            .await
            .expect("rows")
    });
    assert_eq!(
        rows,
        vec![(Some(fingerprint("t1")), Some("user:alice".to_owned()))]
    );
}
