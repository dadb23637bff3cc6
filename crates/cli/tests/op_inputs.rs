//! `headroom op` against `headroom sim`: names that would leave their URL path segment are
//! refused before anything is sent (exit 2, no request in the simulator's log), and
//! `commit-files` reads only the regular files it is named — a symbolic link is committed as a
//! link (GitHub) or refused (GitLab), never followed; a FIFO, a directory reached through a
//! link, a name that is not UTF-8 and a file over the size bound are refused. The inputs that
//! could read without end or block run under a memory limit and a timeout.

#![allow(clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

mod common;
use common::{BIN, Sim, sim_log};

/// A simulator with alice's token `t1`, logging every request to `dir/sim.log`.
fn sim(dir: &Path) -> (Sim, PathBuf) {
    let log = dir.join("sim.log");
    let sim = Sim::start(&[
        "--org",
        "acme",
        "--repos",
        "1",
        "--token",
        "t1=alice",
        "--log",
        log.to_str().expect("utf-8 path"),
    ]);
    (sim, log)
}

/// `headroom op ARGS` in `work` against the simulator's GitHub (or GitLab, under /api/v4).
fn op(work: &Path, sim: &Sim, gitlab: bool, args: &[&str]) -> Command {
    let api = if gitlab {
        format!("{}/api/v4", sim.url)
    } else {
        sim.url.clone()
    };
    let db = work.parent().expect("a parent").join("op.db");
    let mut cmd = Command::new(BIN);
    cmd.current_dir(work)
        .args(["--db", db.to_str().expect("utf-8"), "--api-url", &api, "op"])
        .args(args)
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_CONFIG")
        .env_remove("GITHUB_API_URL")
        .env("GITHUB_TOKEN", "t1")
        .env("GITLAB_TOKEN", "t1")
        .stdin(Stdio::null());
    cmd
}

/// `headroom op commit-files alice/demo --branch f --message m ARGS`.
fn commit(work: &Path, sim: &Sim, gitlab: bool, args: &[&str]) -> Command {
    let mut cmd = op(
        work,
        sim,
        gitlab,
        &[
            "commit-files",
            "alice/demo",
            "--branch",
            "f",
            "--message",
            "m",
        ],
    );
    cmd.args(args);
    cmd
}

/// Runs `cmd` to its end: exit code, stdout, stderr.
fn run(mut cmd: Command) -> (i32, String, String) {
    let out = cmd.output().expect("runs");
    outcome(&out)
}

fn outcome(out: &Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `cmd` with its address space limited to 2 GiB, killed by `timeout` after `secs`
/// seconds: `None` when it had to be killed (it hung).
fn run_limited(cmd: &Command, secs: u64) -> Option<(i32, String, String)> {
    let mut limited = Command::new("sh");
    limited
        .arg("-c")
        .arg(format!(
            r#"ulimit -v 2097152 && exec timeout -s KILL {secs} "$0" "$@""#
        ))
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .current_dir(cmd.get_current_dir().expect("a directory"))
        .stdin(Stdio::null());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(v) => limited.env(key, v),
            None => limited.env_remove(key),
        };
    }
    let (code, out, err) = outcome(&limited.output().expect("runs"));
    // timeout's own code for a command it had to kill.
    (code != 137).then_some((code, out, err))
}

/// The simulator's requests so far, as `METHOD PATH`.
fn requests(log: &Path) -> Vec<String> {
    sim_log(log)
        .iter()
        .map(|l| format!("{} {}", l["method"], l["path"]))
        .collect()
}

/// A work directory and a directory outside it holding a secret.
fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let top = tempfile::tempdir().expect("temp dir");
    let work = top.path().join("work");
    let outside = top.path().join("outside");
    std::fs::create_dir_all(&work).expect("work");
    std::fs::create_dir_all(&outside).expect("outside");
    std::fs::write(outside.join("secret.txt"), "the secret\n").expect("secret");
    (top, work, outside)
}

/// `alice/demo` with a branch `f` from `main`.
fn demo(work: &Path, sim: &Sim, gitlab: bool) {
    for args in [
        &["create-repo", "demo"][..],
        &["create-branch", "alice/demo", "f", "--from", "main"][..],
    ] {
        let (code, out, err) = run(op(work, sim, gitlab, args));
        assert_eq!(code, 0, "{args:?}: {out}\n{err}");
    }
}

fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ABC[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The content (base64, as GitHub's contents API answers) of `path` on branch `f` of
/// alice/demo in the simulator.
fn committed(sim: &Sim, path: &str) -> Option<String> {
    let addr = sim.url.strip_prefix("http://").expect("http");
    let mut stream = TcpStream::connect(addr).expect("connects");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        stream,
        "GET /repos/alice/demo/contents/{path}?ref=f HTTP/1.1\r\nHost: {addr}\r\n\
         Authorization: Bearer t1\r\nConnection: close\r\n\r\n"
    )
    .expect("writes");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).expect("reads");
    let (head, body) = raw.split_once("\r\n\r\n")?;
    if !head.starts_with("HTTP/1.1 200") {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    v["content"].as_str().map(str::to_owned)
}

#[test]
fn protect_branch_refuses_a_branch_name_that_would_escape_its_path_segment() {
    let (_top, work, _) = dirs();
    let (sim, log) = sim(&work);
    let (code, _, err) = run(op(
        &work,
        &sim,
        false,
        &[
            "protect-branch",
            "alice/demo",
            "main/../../../../../orgs/acme/memberships/mallory#",
        ],
    ));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("branch name"), "{err}");
    assert_eq!(requests(&log), Vec::<String>::new(), "nothing was sent");
    // The log does record what is sent.
    demo(&work, &sim, false);
    assert!(!requests(&log).is_empty());
}

#[test]
fn create_repo_refuses_an_owner_that_would_escape_its_path_segment() {
    let (_top, work, _) = dirs();
    let (sim, log) = sim(&work);
    let (code, _, err) = run(op(
        &work,
        &sim,
        false,
        &["create-repo", "x", "--owner", "../user"],
    ));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("owner"), "{err}");
    let (code, _, err) = run(op(&work, &sim, false, &["get-repo", "../orgs/acme/x"]));
    assert_eq!(code, 2, "{err}");
    assert_eq!(requests(&log), Vec::<String>::new(), "nothing was sent");
}

#[test]
fn a_symlinked_file_is_committed_as_a_link_and_never_read() {
    let (_top, work, outside) = dirs();
    let (sim, _log) = sim(&work);
    demo(&work, &sim, false);
    let secret = outside.join("secret.txt");
    std::os::unix::fs::symlink(&secret, work.join("leak")).expect("link");
    let (code, out, err) = run(commit(&work, &sim, false, &["leak"]));
    assert_eq!(code, 0, "{out}\n{err}");
    let target = secret.to_str().expect("utf-8");
    assert_eq!(committed(&sim, "leak"), Some(base64(target.as_bytes())));
    assert_ne!(committed(&sim, "leak"), Some(base64(b"the secret\n")));
}

#[test]
fn a_symlinked_directory_is_never_followed() {
    let (_top, work, outside) = dirs();
    let (sim, log) = sim(&work);
    demo(&work, &sim, false);
    std::os::unix::fs::symlink(&outside, work.join("linked")).expect("link");
    let before = requests(&log).len();
    let (code, _, err) = run(commit(&work, &sim, false, &["linked/secret.txt"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not followed"), "{err}");
    assert_eq!(requests(&log).len(), before, "nothing was sent");
    assert_eq!(committed(&sim, "linked/secret.txt"), None);
}

#[test]
fn a_link_to_dev_zero_is_committed_as_a_link_in_bounded_memory() {
    let (_top, work, _) = dirs();
    let (sim, _log) = sim(&work);
    demo(&work, &sim, false);
    std::os::unix::fs::symlink("/dev/zero", work.join("zero")).expect("link");
    let cmd = commit(&work, &sim, false, &["zero"]);
    let (code, out, err) = run_limited(&cmd, 60).expect("it ends within 60 s");
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(committed(&sim, "zero"), Some(base64(b"/dev/zero")));
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    let (_top, work, _) = dirs();
    let (sim, log) = sim(&work);
    demo(&work, &sim, false);
    let made = Command::new("mkfifo")
        .arg(work.join("pipe"))
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let before = requests(&log).len();
    let cmd = commit(&work, &sim, false, &["pipe"]);
    let (code, _, err) = run_limited(&cmd, 30).expect("it ends within 30 s");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a regular file"), "{err}");
    assert_eq!(requests(&log).len(), before, "nothing was sent");
}

#[test]
fn a_path_that_is_not_utf8_is_refused_not_dropped() {
    use std::os::unix::ffi::OsStrExt as _;
    let (_top, work, _) = dirs();
    let (sim, log) = sim(&work);
    demo(&work, &sim, false);
    let bad = std::ffi::OsStr::from_bytes(b"bad\xffdir");
    std::fs::create_dir(work.join(bad)).expect("dir");
    std::fs::write(work.join(bad).join("f.txt"), "f").expect("file");
    let before = requests(&log).len();
    let mut cmd = commit(&work, &sim, false, &[]);
    cmd.arg(Path::new(bad).join("f.txt"));
    let (code, _, err) = run(cmd);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not UTF-8"), "{err}");
    assert_eq!(requests(&log).len(), before, "nothing was sent");
    assert_eq!(committed(&sim, "f.txt"), None);
}

#[test]
fn stdin_as_and_delete_paths_get_the_same_checks_as_disk_paths() {
    let (_top, work, _) = dirs();
    let (sim, log) = sim(&work);
    demo(&work, &sim, false);
    let before = requests(&log).len();
    for args in [
        &["--stdin-as", "../x"][..],
        &["--delete", "../x"][..],
        &["--delete", ".git/config"][..],
        &["--stdin-as", "/abs"][..],
    ] {
        let mut cmd = commit(&work, &sim, false, &[]);
        cmd.args(args);
        let (code, _, err) = run(cmd);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("file path"), "{err}");
    }
    assert_eq!(requests(&log).len(), before, "nothing was sent");
}

#[test]
fn a_file_over_the_size_bound_is_refused() {
    let (_top, work, _) = dirs();
    let (sim, log) = sim(&work);
    demo(&work, &sim, false);
    let big = std::fs::File::create(work.join("big.bin")).expect("file");
    big.set_len(100 * 1024 * 1024 + 1).expect("sparse");
    let before = requests(&log).len();
    let cmd = commit(&work, &sim, false, &["big.bin"]);
    let (code, _, err) = run_limited(&cmd, 60).expect("it ends within 60 s");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("100 MiB"), "{err}");
    assert_eq!(requests(&log).len(), before, "nothing was sent");
}

#[test]
fn a_symlink_is_refused_on_gitlab() {
    let (_top, work, outside) = dirs();
    let (sim, log) = sim(&work);
    demo(&work, &sim, true);
    std::os::unix::fs::symlink(outside.join("secret.txt"), work.join("leak")).expect("link");
    let before = requests(&log).len();
    let (code, _, err) = run(commit(&work, &sim, true, &["leak"]));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("\"leak\"") && err.contains("symbolic link"),
        "{err}"
    );
    assert_eq!(requests(&log).len(), before, "nothing was sent");
}
