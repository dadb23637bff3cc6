//! What `--help` says a command does matches what it does.

#![allow(clippy::expect_used)]

use std::process::Command;

mod common;
use common::BIN;

#[test]
fn run_help_says_it_serves_the_dashboard_and_runs_the_sync_worker() {
    for flag in ["-h", "--help"] {
        let out = Command::new(BIN)
            .args(["run", flag])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0));
        let help = String::from_utf8_lossy(&out.stdout);
        // The description, before the options (whose own words mention the dashboard).
        let about = help.split("Usage:").next().expect("a description");
        for words in ["events feed", "dashboard", "sync worker", "--listen"] {
            assert!(
                about.contains(words),
                "{flag}: {words:?} is not said:\n{about}"
            );
        }
    }
}
