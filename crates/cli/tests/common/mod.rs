//! What the binary's black-box tests share: the binary's path, a `headroom sim` process
//! on loopback that is stopped when dropped, and throwaway PostgreSQL databases.

#![allow(dead_code, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_headroom");

/// A `headroom sim` process on 127.0.0.1, stopped when dropped.
pub struct Sim {
    pub child: Child,
    /// `http://127.0.0.1:PORT`, from the first line the simulator prints.
    pub url: String,
}

impl Sim {
    /// Starts `headroom sim --addr 127.0.0.1:0 ARGS…` and waits for its first line.
    pub fn start(args: &[&str]) -> Sim {
        let mut child = Command::new(BIN)
            .arg("sim")
            .args(["--addr", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the binary starts");
        let stdout = child.stdout.take().expect("stdout piped");
        let mut first = String::new();
        BufReader::new(stdout)
            .read_line(&mut first)
            .expect("first line");
        let url = first
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .to_owned();
        Sim { child, url }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The admin URL of the test PostgreSQL server, or `None` after saying `test` was skipped
/// (a failure under `CI`).
#[allow(unused_imports)] // each test binary uses its own part of it
pub use headroom_testkit::admin_url as postgres_admin;
/// Named databases that the binary's processes share: created empty, dropped with force.
#[allow(unused_imports)]
pub use headroom_testkit::{create_database, drop_database};

/// Runs the binary in `dir` on `sync.db` against `sim` with token `t1` (no other headroom or
/// GitHub variable from the environment): its exit code, stdout and stderr.
pub fn run_against(dir: &std::path::Path, sim: &Sim, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .current_dir(dir)
        .args(["--db", "sync.db", "--api-url", &sim.url])
        .args(args)
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("GITHUB_API_URL")
        .env("GITHUB_TOKEN", "t1")
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
