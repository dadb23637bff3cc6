//! `headroom enrich` speaks to a person in words: why it waits and what became of the
//! entities, never the enricher's or the store's codes (`search_pacing`, `retryable_failure`),
//! which `--json` keeps for machines.

#![allow(clippy::expect_used)]

use std::path::Path;
use std::process::Command;

mod common;
use common::{BIN, Sim};

fn headroom(dir: &Path, sim: &Sim, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .current_dir(dir)
        .args(["--db", "enrich.db", "--api-url", &sim.url])
        .args(args)
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_CONFIG")
        .env_remove("GITHUB_API_URL")
        .env_remove("SEARCH_PACING_SECONDS")
        .env("GITHUB_TOKEN", "t1")
        .env("RUST_LOG", "off")
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The words of `text` that look like codes: lowercase joined by underscores.
fn codes(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.contains('_') && w.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn enrich_prints_words_not_internal_codes() {
    let sim = Sim::start(&["--token", "t1=alice"]);
    let dir = tempfile::tempdir().expect("tmp");
    let (code, out, err) = headroom(dir.path(), &sim, &["ingest"]);
    assert_eq!(code, 0, "{out}\n{err}");

    // One search batch, then the next is held back by pacing.
    let (code, out, err) = headroom(dir.path(), &sim, &["enrich", "--search-pacing", "3600"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("search requests are paced"), "{out}");
    assert!(
        out.contains("to retry") && out.contains("given up"),
        "{out}"
    );
    assert!(out.contains("(1 search batch,"), "{out}");
    assert_eq!(
        codes(&out),
        Vec::<String>::new(),
        "codes in the text:\n{out}"
    );

    // --json keeps the codes.
    let (code, out, err) = headroom(
        dir.path(),
        &sim,
        &["enrich", "--search-pacing", "3600", "--json"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let answer: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    assert_eq!(answer["ok"], true, "{out}");
    assert_eq!(
        answer["report"]["deferrals"][0][0], "search_pacing",
        "{out}"
    );
    assert!(
        answer["enrichment"]["actor"]["retryable_failure"].is_u64(),
        "{out}"
    );
}
