//! The resolution of settings: precedence, defaults, refusals naming the setting.

use super::*;
use std::collections::HashMap;

/// A process environment of fixed variables, for tests here and in `config::tokens`.
pub(crate) struct Env(pub(crate) HashMap<&'static str, &'static str>);
impl Environment for Env {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).map(|v| (*v).to_owned())
    }
}

fn no_env() -> Env {
    Env(HashMap::new())
}

fn error_of(args: GlobalArgs) -> String {
    args.resolve(&no_env())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

#[test]
fn defaults() {
    let s = GlobalArgs {
        config: Some(PathBuf::from("/nonexistent/but/explicit.toml")),
        ..GlobalArgs::default()
    };
    assert!(error_of(s).contains("--config"));
    let s = GlobalArgs::default()
        .resolve(&no_env())
        .expect("defaults are valid");
    assert_eq!(s.db, "./headroom.db");
    assert_eq!(s.policy.host(), "api.github.com");
    assert!(s.credential.is_none());
    assert_eq!(
        (
            s.connect_timeout.as_secs(),
            s.read_timeout.as_secs(),
            s.in_flight_ceiling
        ),
        (5, 15, 10)
    );
}

#[test]
fn every_bad_value_names_its_setting() {
    let cases = [
        (
            GlobalArgs {
                api_url: Some("http://api.github.com".into()),
                ..Default::default()
            },
            "--api-url",
        ),
        (
            GlobalArgs {
                api_url: Some("https://user:pw@ghe.example.com".into()),
                ..Default::default()
            },
            "--api-url",
        ),
        (
            GlobalArgs {
                connect_timeout: Some("soon".into()),
                ..Default::default()
            },
            "--connect-timeout",
        ),
        (
            GlobalArgs {
                read_timeout: Some("0".into()),
                ..Default::default()
            },
            "--read-timeout",
        ),
        (
            GlobalArgs {
                in_flight_ceiling: Some("500".into()),
                ..Default::default()
            },
            "--in-flight-ceiling",
        ),
        (
            GlobalArgs {
                token_file: Some("/nonexistent/token".into()),
                ..Default::default()
            },
            "--token-file",
        ),
        (
            GlobalArgs {
                ca_bundle: Some("/nonexistent/ca.pem".into()),
                ..Default::default()
            },
            "--ca-bundle",
        ),
        (
            GlobalArgs {
                db: Some(" ".into()),
                ..Default::default()
            },
            "--db",
        ),
    ];
    for (args, setting) in cases {
        let message = error_of(args);
        assert!(message.contains(setting), "{setting}: {message}");
    }
}

#[test]
fn token_comes_from_the_environment_or_a_file_never_shown() {
    let env = Env(HashMap::from([("GH_TOKEN", "ghp_fromghtoken0123456789")]));
    let s = GlobalArgs::default().resolve(&env).expect("valid");
    let c = s.credential.expect("token");
    assert!(!format!("{c:?}").contains("fromghtoken"));
    let env = Env(HashMap::from([
        ("GITHUB_TOKEN", "ghp_a"),
        ("GH_TOKEN", "ghp_b"),
    ]));
    let s = GlobalArgs::default().resolve(&env).expect("valid");
    assert_eq!(
        s.credential.expect("token").fingerprint(),
        headroom_http::credential::fingerprint("ghp_a")
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("token");
    std::fs::write(&path, "ghp_fromfile\n").expect("write");
    let s = GlobalArgs {
        token_file: Some(path.clone()),
        ..Default::default()
    }
    .resolve(&no_env())
    .expect("valid");
    assert_eq!(
        s.credential.expect("token").fingerprint(),
        headroom_http::credential::fingerprint("ghp_fromfile")
    );
    std::fs::write(&path, "two tokens\n").expect("write");
    assert!(
        error_of(GlobalArgs {
            token_file: Some(path),
            ..Default::default()
        })
        .contains("--token-file")
    );
}

#[test]
fn deferral_budgets_come_from_flags_or_the_file_and_refuse_naming_the_setting() {
    let s = GlobalArgs::default().resolve(&no_env()).expect("defaults");
    assert_eq!(s.deferral, DeferralBudget::default());
    let s = GlobalArgs {
        max_deferrals: Some("25".into()),
        max_deferred_wait: Some("6h".into()),
        ..Default::default()
    }
    .resolve(&no_env())
    .expect("valid");
    assert_eq!(s.deferral.max_deferrals, 25);
    assert_eq!(s.deferral.max_total_wait, SignedDuration::from_hours(6));
    assert_eq!(
        s.deferral.max_chunk,
        DeferralBudget::default().max_chunk,
        "only the two budgets are settings"
    );
    let s = GlobalArgs {
        max_deferred_wait: Some("5400".into()),
        ..Default::default()
    }
    .resolve(&no_env())
    .expect("seconds");
    assert_eq!(s.deferral.max_total_wait, SignedDuration::from_secs(5400));
    for (args, setting) in [
        (
            GlobalArgs {
                max_deferrals: Some("0".into()),
                ..Default::default()
            },
            "--max-deferrals",
        ),
        (
            GlobalArgs {
                max_deferrals: Some("ten".into()),
                ..Default::default()
            },
            "--max-deferrals",
        ),
        (
            GlobalArgs {
                max_deferred_wait: Some("soon".into()),
                ..Default::default()
            },
            "--max-deferred-wait",
        ),
        (
            GlobalArgs {
                max_deferred_wait: Some("30d".into()),
                ..Default::default()
            },
            "--max-deferred-wait",
        ),
    ] {
        let message = error_of(args);
        assert!(message.contains(setting), "{setting}: {message}");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("headroom.toml");
    std::fs::write(&path, "max_deferrals = 40\nmax_deferred_wait = \"90m\"\n").expect("write");
    let s = GlobalArgs {
        config: Some(path.clone()),
        ..Default::default()
    }
    .resolve(&no_env())
    .expect("valid file");
    assert_eq!(s.deferral.max_deferrals, 40);
    assert_eq!(s.deferral.max_total_wait, SignedDuration::from_mins(90));
    std::fs::write(&path, "max_deferred_wait = 3600\n").expect("write");
    let s = GlobalArgs {
        config: Some(path.clone()),
        max_deferrals: Some("3".into()),
        ..Default::default()
    }
    .resolve(&no_env())
    .expect("valid file");
    assert_eq!(s.deferral.max_total_wait, SignedDuration::from_hours(1));
    assert_eq!(s.deferral.max_deferrals, 3, "a flag beats the file");
    for (text, setting) in [
        ("max_deferrals = 0\n", "max_deferrals"),
        ("max_deferred_wait = \"never\"\n", "max_deferred_wait"),
        ("max_deferred_wait = 0\n", "max_deferred_wait"),
    ] {
        std::fs::write(&path, text).expect("write");
        let message = error_of(GlobalArgs {
            config: Some(path.clone()),
            ..Default::default()
        });
        assert!(message.contains(setting), "{text}: {message}");
    }
}

#[test]
fn retention_defaults_to_fourteen_days_and_refuses_what_is_out_of_range() {
    let s = GlobalArgs::default().resolve(&no_env()).expect("valid");
    assert_eq!(s.retention, SignedDuration::from_hours(14 * 24));
    let s = GlobalArgs {
        retention_days: Some("2".into()),
        ..Default::default()
    }
    .resolve(&no_env())
    .expect("valid");
    assert_eq!(s.retention, SignedDuration::from_hours(48));
    for bad in ["0", "3651", "soon"] {
        assert!(
            error_of(GlobalArgs {
                retention_days: Some(bad.into()),
                ..Default::default()
            })
            .contains("--retention-days"),
            "{bad}"
        );
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("headroom.toml");
    std::fs::write(&path, "retention_days = 0\n").expect("write");
    assert!(
        error_of(GlobalArgs {
            config: Some(path),
            ..Default::default()
        })
        .contains("retention_days")
    );
}

#[test]
fn the_toml_file_fills_what_flags_leave_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("headroom.toml");
    std::fs::write(
        &path,
        "api_url = \"https://ghe.example.com/api/v3\"\nin_flight_ceiling = 4\ndb = \"x.db\"\n",
    )
    .expect("write");
    let s = GlobalArgs {
        config: Some(path.clone()),
        db: Some("flag.db".into()),
        ..Default::default()
    }
    .resolve(&no_env())
    .expect("valid");
    assert_eq!(s.policy.host(), "ghe.example.com");
    assert_eq!(s.in_flight_ceiling, 4);
    assert_eq!(s.db, "flag.db", "a flag beats the file");
    std::fs::write(&path, "unknown_key = 1\n").expect("write");
    let refused = error_of(GlobalArgs {
        config: Some(path.clone()),
        ..Default::default()
    });
    // The key, the file and the line (issue 20, item 9: TOML errors named neither).
    assert!(refused.contains("`unknown_key`"), "{refused}");
    assert!(
        refused.contains(&format!("{} line 1", path.display())),
        "{refused}"
    );
    std::fs::write(&path, "in_flight_ceiling = 0\n").expect("write");
    assert!(
        error_of(GlobalArgs {
            config: Some(path),
            ..Default::default()
        })
        .contains("in_flight_ceiling")
    );
}
