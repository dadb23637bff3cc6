//! `scripts/provider-demo.sh` never builds a binary silently: it runs the one `HEADROOM_BIN`
//! names without calling cargo, and says so when it builds one itself. `cargo` is a stub on
//! `PATH` here that records being called and fails.

#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;
use common::BIN;

/// A directory holding a `cargo` that leaves `called` beside itself and exits 3.
fn stub_cargo(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let stub = dir.join("cargo");
    std::fs::write(
        &stub,
        format!(
            "#!/bin/sh\ntouch '{}'\nexit 3\n",
            dir.join("called").display()
        ),
    )
    .expect("stub");
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir.join("called")
}

/// Runs the script (killed after 120 s) with the stub first on `PATH`: exit code and stderr.
fn demo(stub_dir: &Path, headroom_bin: Option<&str>) -> (i32, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/provider-demo.sh");
    let path = format!(
        "{}:{}",
        stub_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("timeout");
    cmd.args(["-s", "KILL", "120", "bash"])
        .arg(script)
        .env("PATH", path)
        .env_remove("HEADROOM_BIN")
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_CONFIG")
        .env_remove("GITHUB_API_URL")
        .stdin(Stdio::null());
    if let Some(bin) = headroom_bin {
        cmd.env("HEADROOM_BIN", bin);
    }
    let out = cmd.output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_provider_demo_runs_the_binary_it_is_given_without_building_one() {
    let dir = tempfile::tempdir().expect("tmp");
    let called = stub_cargo(dir.path());
    let (code, err) = demo(dir.path(), Some(BIN));
    assert_eq!(code, 0, "{err}");
    assert!(!called.exists(), "cargo was called: {err}");
    assert!(err.contains(&format!("using {BIN}")), "{err}");
}

#[test]
fn the_provider_demo_says_so_when_it_builds_a_binary() {
    let dir = tempfile::tempdir().expect("tmp");
    let called = stub_cargo(dir.path());
    let (code, err) = demo(dir.path(), None);
    assert!(called.exists(), "{err}");
    assert_ne!(code, 0, "the stub's failure stops it: {err}");
    assert!(err.contains("building headroom (debug"), "{err}");
    assert!(err.contains("HEADROOM_BIN"), "{err}");
}
