//! A token of any provider never leaks: not in stdout, stderr (debug logs on), an error, or
//! any byte of the database. Each provider's token is planted where a user puts it — GitLab's
//! for a real exchange with the simulator, Linear's, LaunchDarkly's and Jira's in the
//! configuration `config show` lists and in settings refused at start.

#![allow(clippy::expect_used)]

use std::path::Path;
use std::process::Command;

mod common;
use common::{BIN, Sim};

/// `headroom ARGS` in `dir` with exactly `env` set among the provider variables, debug logs on.
fn headroom(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> (i32, String) {
    let mut command = Command::new(BIN);
    command.current_dir(dir).args(args).env("RUST_LOG", "debug");
    for var in [
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "GITHUB_API_URL",
        "HEADROOM_DB",
        "HEADROOM_CONFIG",
        "GITLAB_TOKEN",
        "GITLAB_OAUTH_TOKEN",
        "LINEAR_API_KEY",
        "LINEAR_OAUTH_TOKEN",
        "LD_ACCESS_TOKEN",
        "LD_OAUTH_TOKEN",
        "JIRA_EMAIL",
        "JIRA_API_TOKEN",
        "JIRA_OAUTH_TOKEN",
        "JIRA_OAUTH_CLIENT_ID",
    ] {
        command.env_remove(var);
    }
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().expect("runs");
    let mut seen = String::from_utf8_lossy(&out.stdout).into_owned();
    seen.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), seen)
}

#[test]
fn planted_tokens_of_every_provider_never_leak() {
    let gitlab = "glpat-PLANTEDgitlabPLANTED0123";
    let sim = Sim::start(&["--token", &format!("{gitlab}=alice")]);
    let dir = tempfile::tempdir().expect("tempdir");
    let api = format!("{}/api/v4", sim.url);
    let mut seen = String::new();

    // GitLab: a good exchange, then a token GitLab refuses.
    let show = [
        "--db",
        "p.db",
        "quota",
        "show",
        "--provider",
        "gitlab",
        "--api-url",
        &api,
    ];
    let (code, out) = headroom(dir.path(), &[("GITLAB_TOKEN", gitlab)], &show);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("user alice"), "{out}");
    seen.push_str(&out);
    let refused = "glpat-PLANTEDrefusedPLANTED9876";
    let (code, out) = headroom(dir.path(), &[("GITLAB_TOKEN", refused)], &show);
    assert_ne!(code, 0, "{out}");
    seen.push_str(&out);

    // Every provider's token in the configuration a person reads back.
    let configured = [
        ("GITLAB_OAUTH_TOKEN", "PLANTEDgitlabOAuthPLANTED"),
        ("LINEAR_API_KEY", "lin_api_PLANTEDlinearPLANTED0123456789"),
        ("LD_ACCESS_TOKEN", "api-PLANTED-launchdarkly-PLANTED"),
        ("JIRA_EMAIL", "me@example.com"),
        ("JIRA_API_TOKEN", "ATATT3xPLANTEDjiraPLANTED=0123"),
    ];
    for args in [["config", "show"].as_slice(), &["config", "show", "--json"]] {
        let (code, out) = headroom(dir.path(), &configured, args);
        assert_eq!(code, 0, "{out}");
        assert!(
            out.contains("fingerprint"),
            "tokens are listed by fingerprint: {out}"
        );
        seen.push_str(&out);
    }

    // Settings refused at start name the setting, never the token.
    for (env, named) in [
        (
            vec![("JIRA_API_TOKEN", "ATATT3xPLANTEDnoEmailPLANTED")],
            "JIRA_EMAIL",
        ),
        (
            vec![("JIRA_OAUTH_TOKEN", "PLANTEDjiraOAuthPLANTED")],
            "JIRA_OAUTH_CLIENT_ID",
        ),
        (
            vec![("LINEAR_API_KEY", "lin_api_PLANTED two_words")],
            "LINEAR_API_KEY",
        ),
    ] {
        let (code, out) = headroom(dir.path(), &env, &["config", "show"]);
        assert_eq!(code, 2, "{out}");
        assert!(out.contains(named), "{named} not in {out}");
        seen.push_str(&out);
    }

    assert!(!seen.contains("PLANTED"), "a planted token leaked:\n{seen}");
    for entry in std::fs::read_dir(dir.path()).expect("dir") {
        let path = entry.expect("entry").path();
        let bytes = std::fs::read(&path).expect("read");
        assert!(
            !String::from_utf8_lossy(&bytes).contains("PLANTED"),
            "a planted token is in {}",
            path.display()
        );
    }
}
