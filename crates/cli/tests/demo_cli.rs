//! `headroom demo`: the reference's offline figures on a fresh database — 4 created,
//! 3 quarantined, 1 ignored; 6 backlog rows served in 4 requests (two search batches enrich 4,
//! two detail fallbacks meet 404s and go terminal); a replay after the poll floor absorbs 4
//! duplicates with entity activity unchanged.

#![allow(clippy::expect_used)]

use std::process::Command;

#[test]
fn demo_reproduces_the_reference_figures() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = dir.path().join("demo.db");
    let out = Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args(["demo", "--db"])
        .arg(&db)
        .env("RUST_LOG", "off")
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let ingest = stdout.split("== 2.").next().expect("section 1");
    let enrich = stdout
        .split("== 2.")
        .nth(1)
        .and_then(|s| s.split("== 3.").next())
        .expect("section 2");
    let replay = stdout.split("== 3.").nth(1).expect("section 3");
    for line in [
        "Push events created:              4",
        "Events quarantined:               3",
        "Non-push events ignored:          1",
        "Pending actor enrichments:        3",
        "Pending repository enrichments:   3",
    ] {
        assert!(ingest.contains(line), "missing {line:?}:\n{stdout}");
    }
    for line in [
        "Requests:                         4 (2 search batches, 2 detail fallbacks)",
        "Entities enriched:                4",
        "Given up (gone or refused):       2",
        "actors:        2 complete · 0 pending · 0 to retry · 1 given up",
        "repositories:  2 complete · 0 pending · 0 to retry · 1 given up",
    ] {
        assert!(enrich.contains(line), "missing {line:?}:\n{stdout}");
    }
    for line in [
        "Push events created:              0",
        "Duplicates skipped:               4",
        "Entity activity unchanged:        yes",
        "Requests the simulator saw:       6 (2 /events, 2 search, 2 detail)",
    ] {
        assert!(replay.contains(line), "missing {line:?}:\n{stdout}");
    }
    assert!(db.exists(), "--db keeps the database");

    // A second demo on the same file is refused: its figures are those of a fresh database.
    let again = Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args(["demo", "--db"])
        .arg(&db)
        .output()
        .expect("runs");
    assert_eq!(again.status.code(), Some(2));
}
