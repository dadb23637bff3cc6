//! `headroom maintenance scrub`: a dry run by default that says what it would mask and
//! changes nothing; `--apply` masks; a second run finds nothing; a missing database is refused.

#![allow(clippy::expect_used)]

mod common;

use std::process::Command;

use common::BIN;

const SECRET: &str = "sekritsekrit123456";

fn headroom(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .current_dir(dir)
        .args(["--db", "h.db"])
        .args(args)
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_CONFIG")
        .output()
        .expect("the binary runs")
}

async fn stored_message(db: &std::path::Path) -> String {
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display()))
        .await
        .expect("open");
    let text: String = sqlx::query_scalar("SELECT error_message FROM quarantined_events")
        .fetch_one(&pool)
        .await
        .expect("one quarantined envelope");
    pool.close().await;
    text
}

#[tokio::test]
async fn a_scrub_is_a_dry_run_unless_applied_and_masks_old_rows_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("hour.json");
    std::fs::write(&file, "{\"id\": \"1\", \"type\": \"PushEvent\"}\n").expect("write");
    let out = headroom(dir.path(), &["import", "gharchive", "hour.json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A row written before its pattern existed, planted behind the store's back.
    let db = dir.path().join("h.db");
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display()))
        .await
        .expect("open");
    sqlx::query("UPDATE quarantined_events SET error_message = $1")
        .bind(format!("upstream said: Authorization: Bearer {SECRET}"))
        .execute(&pool)
        .await
        .expect("plant");
    pool.close().await;

    let dry = headroom(dir.path(), &["maintenance", "scrub"]);
    let text = String::from_utf8_lossy(&dry.stdout);
    assert!(
        dry.status.success(),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    assert!(
        text.contains("quarantined_events.error_message: 1 of 1 rows hold a credential"),
        "{text}"
    );
    assert!(text.contains("--apply"), "{text}");
    assert!(
        stored_message(&db).await.contains(SECRET),
        "a dry run changes nothing"
    );

    let applied = headroom(dir.path(), &["maintenance", "scrub", "--apply"]);
    let text = String::from_utf8_lossy(&applied.stdout);
    assert!(applied.status.success(), "{text}");
    assert!(text.contains("1 of 1 rows masked"), "{text}");
    assert_eq!(
        stored_message(&db).await,
        "upstream said: Authorization: [REDACTED]"
    );

    let again = headroom(dir.path(), &["maintenance", "scrub", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&again.stdout).expect("JSON");
    assert_eq!(report["applied"], false);
    let found: u64 = report["columns"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| c["rows_with_secrets"].as_u64().expect("a count"))
        .sum();
    assert_eq!(found, 0, "{report}");
}

#[test]
fn a_scrub_of_a_missing_database_is_refused_and_creates_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = headroom(dir.path(), &["maintenance", "scrub", "--apply"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(!dir.path().join("h.db").exists());
}
