//! Settings shared by every subcommand: where the database is, which API to talk to, which
//! credential to use, timeouts and the in-flight ceiling.
//!
//! Each setting comes from, in order: its flag, its environment variable, `headroom.toml`,
//! the default. Invalid values refuse to start with a message naming the setting (exit 2).
//! The token is never a flag (it would show in `ps` and shell history): `GITHUB_TOKEN`,
//! `GH_TOKEN` or `--token-file`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use headroom_http::{Credential, UrlPolicy};
use serde::Deserialize;

/// Global options, accepted before or after any subcommand.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Global options (for commands that talk to an API or a database)")]
pub struct GlobalArgs {
    /// The database: a SQLite file path (default ./headroom.db) or a postgres:// URL.
    #[arg(long, global = true, env = "HEADROOM_DB", value_name = "PATH|URL")]
    pub db: Option<String>,

    /// The API base URL (default https://api.github.com; GitHub Enterprise:
    /// https://HOST/api/v3; the simulator: http://127.0.0.1:PORT).
    #[arg(long, global = true, env = "GITHUB_API_URL", value_name = "URL")]
    pub api_url: Option<String>,

    /// Read the token from this file (otherwise GITHUB_TOKEN or GH_TOKEN; none means
    /// unauthenticated).
    #[arg(long, global = true, value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// Trust only the certificates in this PEM bundle.
    #[arg(long, global = true, value_name = "FILE")]
    pub ca_bundle: Option<PathBuf>,

    /// Connect timeout in seconds (default 5).
    #[arg(long, global = true, value_name = "SECS")]
    pub connect_timeout: Option<String>,

    /// Read timeout in seconds (default 15).
    #[arg(long, global = true, value_name = "SECS")]
    pub read_timeout: Option<String>,

    /// Requests in flight per quota identity (default 10, at most 100).
    #[arg(long, global = true, value_name = "N")]
    pub in_flight_ceiling: Option<String>,

    /// A TOML file with the same settings (default ./headroom.toml when it exists).
    #[arg(long, global = true, env = "HEADROOM_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// `headroom.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    db: Option<String>,
    api_url: Option<String>,
    token_file: Option<PathBuf>,
    ca_bundle: Option<PathBuf>,
    connect_timeout_secs: Option<u64>,
    read_timeout_secs: Option<u64>,
    in_flight_ceiling: Option<u64>,
}

/// A setting that cannot be used; the message names it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid setting `{setting}`: {problem}")]
pub struct ConfigError {
    /// The setting, as the user spells it.
    pub setting: String,
    /// What is wrong.
    pub problem: String,
}

fn invalid(setting: &str, problem: impl Into<String>) -> ConfigError {
    ConfigError {
        setting: setting.to_owned(),
        problem: problem.into(),
    }
}

/// The resolved settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The database location.
    pub db: String,
    /// The API base URL and its policy.
    pub policy: UrlPolicy,
    /// The credential, if any.
    pub credential: Option<Credential>,
    /// The CA bundle's PEM bytes.
    pub ca_bundle: Option<Vec<u8>>,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Read timeout.
    pub read_timeout: Duration,
    /// The identity's in-flight ceiling.
    pub in_flight_ceiling: u32,
}

/// Where the environment's values come from (injected so tests need not touch the process).
pub trait Environment {
    /// A variable's value.
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment.
#[derive(Debug, Clone, Copy)]
pub struct ProcessEnv;

impl Environment for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.trim().is_empty())
    }
}

fn parse_number(setting: &str, raw: &str, min: u64, max: u64) -> Result<u64, ConfigError> {
    let n: u64 = raw
        .trim()
        .parse()
        .map_err(|_| invalid(setting, format!("`{raw}` is not a whole number")))?;
    if !(min..=max).contains(&n) {
        return Err(invalid(setting, format!("{n} is outside {min}-{max}")));
    }
    Ok(n)
}

fn read_file(setting: &str, path: &Path) -> Result<Vec<u8>, ConfigError> {
    std::fs::read(path)
        .map_err(|e| invalid(setting, format!("cannot read {}: {e}", path.display())))
}

impl GlobalArgs {
    /// Resolves every setting, or names the first one that is wrong.
    pub fn resolve(&self, env: &dyn Environment) -> Result<Settings, ConfigError> {
        let file = self.file_settings()?;
        let db = self
            .db
            .clone()
            .or(file.db)
            .unwrap_or_else(|| "./headroom.db".to_owned());
        if db.trim().is_empty() {
            return Err(invalid("--db", "must not be empty"));
        }
        let api_url = self
            .api_url
            .clone()
            .or(file.api_url)
            .unwrap_or_else(|| "https://api.github.com".to_owned());
        let policy =
            UrlPolicy::for_api_url(&api_url).map_err(|e| invalid("--api-url", e.to_string()))?;

        let credential = match self.token_file.clone().or(file.token_file) {
            Some(path) => {
                let bytes = read_file("--token-file", &path)?;
                let token = String::from_utf8(bytes)
                    .map_err(|_| invalid("--token-file", "the file is not UTF-8 text"))?;
                let token = token.trim();
                if token.is_empty() || token.contains(char::is_whitespace) {
                    return Err(invalid(
                        "--token-file",
                        "the file must hold exactly one token",
                    ));
                }
                Some(Credential::new(token))
            }
            None => env
                .var("GITHUB_TOKEN")
                .or_else(|| env.var("GH_TOKEN"))
                .map(|t| Credential::new(&t)),
        };

        let ca_bundle = match self.ca_bundle.clone().or(file.ca_bundle) {
            Some(path) => Some(read_file("--ca-bundle", &path)?),
            None => None,
        };
        let connect_timeout = match &self.connect_timeout {
            Some(raw) => parse_number("--connect-timeout", raw, 1, 300)?,
            None => file.connect_timeout_secs.map_or(Ok(5), |n| {
                if (1..=300).contains(&n) {
                    Ok(n)
                } else {
                    Err(invalid(
                        "connect_timeout_secs",
                        format!("{n} is outside 1-300"),
                    ))
                }
            })?,
        };
        let read_timeout = match &self.read_timeout {
            Some(raw) => parse_number("--read-timeout", raw, 1, 600)?,
            None => file.read_timeout_secs.map_or(Ok(15), |n| {
                if (1..=600).contains(&n) {
                    Ok(n)
                } else {
                    Err(invalid(
                        "read_timeout_secs",
                        format!("{n} is outside 1-600"),
                    ))
                }
            })?,
        };
        let ceiling = match &self.in_flight_ceiling {
            Some(raw) => parse_number("--in-flight-ceiling", raw, 1, 100)?,
            None => file.in_flight_ceiling.map_or(Ok(10), |n| {
                if (1..=100).contains(&n) {
                    Ok(n)
                } else {
                    Err(invalid(
                        "in_flight_ceiling",
                        format!("{n} is outside 1-100"),
                    ))
                }
            })?,
        };
        Ok(Settings {
            db,
            policy,
            credential,
            ca_bundle,
            connect_timeout: Duration::from_secs(connect_timeout),
            read_timeout: Duration::from_secs(read_timeout),
            in_flight_ceiling: u32::try_from(ceiling).unwrap_or(10),
        })
    }

    fn file_settings(&self) -> Result<FileSettings, ConfigError> {
        let (path, explicit) = match &self.config {
            Some(p) => (p.clone(), true),
            None => (PathBuf::from("headroom.toml"), false),
        };
        if !explicit && !path.exists() {
            return Ok(FileSettings::default());
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| invalid("--config", format!("cannot read {}: {e}", path.display())))?;
        toml::from_str(&text)
            .map_err(|e| invalid("--config", format!("{}: {}", path.display(), e.message())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Env(HashMap<&'static str, &'static str>);
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
        assert!(
            error_of(GlobalArgs {
                config: Some(path.clone()),
                ..Default::default()
            })
            .contains("--config")
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
}
