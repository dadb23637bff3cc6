//! `headroom import gharchive` as a user runs it: a corpus file, then the same lines from
//! stdin (all duplicates), and a missing file (exit 1).

#![allow(clippy::expect_used)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn corpus_file(name: &str) -> PathBuf {
    let start = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for dir in start.ancestors() {
        let candidate = dir.join("shared/corpus/gh-pulse").join(name);
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!(
        "shared/corpus/gh-pulse/{name} not found above {}",
        start.display()
    );
}

fn headroom(db: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_headroom"));
    cmd.arg("--db")
        .arg(db)
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_CONFIG");
    cmd
}

#[test]
fn import_a_file_then_the_same_lines_from_stdin() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = dir.path().join("headroom.db");
    let file = corpus_file("sample_hour.jsonl");

    let out = headroom(&db)
        .args(["import", "gharchive"])
        .arg(&file)
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Lines read:                       7"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Events quarantined:               0"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Duplicates skipped:               0"),
        "{stdout}"
    );

    let mut child = headroom(&db)
        .args(["import", "gharchive", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&std::fs::read(&file).expect("read"))
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("Push events created:              0"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("Duplicates skipped:               0"),
        "{stdout}"
    );

    let out = headroom(&db)
        .args(["import", "gharchive"])
        .arg(dir.path().join("missing.json.gz"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open"));
}

#[test]
fn import_without_files_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = headroom(&dir.path().join("h.db"))
        .args(["import", "gharchive"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
}
