//! The providers' published API descriptions, read where the team keeps them: `../shared/oracles`
//! beside the repository (they cannot be committed into it), or the folder `HEADROOM_ORACLES`
//! names. A test that needs one and finds it absent reports a skip with the reason ([`skip`]),
//! which fails under CI.
//!
//! [`skip`]: crate::skip

use std::path::PathBuf;

/// The variable naming the oracles' folder, when it is not `../shared/oracles`.
pub const ORACLES_VAR: &str = "HEADROOM_ORACLES";

/// The oracles' folder: `HEADROOM_ORACLES`, else `shared/oracles` beside the repository.
pub fn folder() -> PathBuf {
    match std::env::var_os(ORACLES_VAR) {
        Some(dir) => PathBuf::from(dir),
        // crates/testkit → the workspace → its parent.
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/oracles"),
    }
}

/// The oracle file `relative` (`jira/jira-platform-v3.json`), or `None` after reporting
/// `test` skipped because it is absent (a failure under CI).
pub fn file(test: &str, relative: &str) -> Option<PathBuf> {
    let path = folder().join(relative);
    if path.is_file() {
        return Some(path);
    }
    crate::skip(
        test,
        &format!(
            "the published description {} is absent (set {ORACLES_VAR} to the oracles' folder)",
            path.display()
        ),
    );
    None
}

/// The oracle file `relative`, read as text (see [`file`]).
pub fn read(test: &str, relative: &str) -> Option<String> {
    let path = file(test, relative)?;
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) => panic!("{test}: {} is there but unreadable: {e}", path.display()),
    }
}
