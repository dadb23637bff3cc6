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
use headroom_core::clock::SignedDuration;
use headroom_core::deferral::DeferralBudget;
use headroom_http::{Credential, UrlPolicy};
use serde::Deserialize;

mod caps;
mod tokens;

pub use self::tokens::ConfiguredToken;

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

    /// Sync runs: rate-limit deferrals allowed in one episode of waiting (default 10). An
    /// episode ends when a page is stored, so this bounds waits that make no progress.
    #[arg(long, global = true, value_name = "N")]
    pub max_deferrals: Option<String>,

    /// Sync runs: total waiting allowed in one episode, from its first deferral (default 2h;
    /// seconds, or a duration such as 90m or 6h).
    #[arg(long, global = true, value_name = "DURATION")]
    pub max_deferred_wait: Option<String>,

    /// Days of rate-limit history (observations, quota readings) long-running processes keep
    /// (default 14, 1-3650); older rows are pruned.
    #[arg(long, global = true, value_name = "DAYS")]
    pub retention_days: Option<String>,

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
    max_deferrals: Option<u64>,
    max_deferred_wait: Option<DurationSetting>,
    retention_days: Option<u64>,
    sync_caps: Option<caps::SyncCapsFile>,
}

/// A duration in `headroom.toml`: whole seconds, or text such as "90m" or "2h".
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum DurationSetting {
    Seconds(u64),
    Text(String),
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
    /// Where it comes from (`--token-file`, `GITHUB_TOKEN`, `GH_TOKEN`).
    pub credential_source: Option<&'static str>,
    /// Other tokens configured beside it, never spent: see [`tokens`].
    pub also_configured: Vec<ConfiguredToken>,
    /// The CA bundle's PEM bytes.
    pub ca_bundle: Option<Vec<u8>>,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Read timeout.
    pub read_timeout: Duration,
    /// The identity's in-flight ceiling.
    pub in_flight_ceiling: u32,
    /// Sync runs' deferral budgets (per episode of waiting).
    pub deferral: DeferralBudget,
    /// How long rate-limit history is kept.
    pub retention: SignedDuration,
    /// What organization sync may spend of a quota window (`[sync_caps]`).
    pub sync_caps: headroom_core::budget::SyncCaps,
}

impl Settings {
    /// For commands that only read: the database must exist already, since opening a missing
    /// SQLite file would create (and migrate) an empty one and report its zeros.
    pub fn require_existing_database(&self) -> Result<(), ConfigError> {
        match headroom_store::sqlite::database_file(&self.db) {
            Some(path) if !path.exists() => Err(invalid(
                "--db",
                format!(
                    "{} does not exist; a read-only command never creates a database \
                     (ingest, import, sync org or demo --db create one)",
                    path.display()
                ),
            )),
            _ => Ok(()),
        }
    }
}

/// Days of rate-limit history kept unless a setting says otherwise.
const DEFAULT_RETENTION_DAYS: u64 = 14;

/// The longest episode of waiting a setting may allow: a week.
const MAX_DEFERRED_WAIT_SECS: u64 = 7 * 24 * 3600;

/// Seconds, or a duration jiff reads ("90m", "2h 30m", "PT2H"), between 1 s and a week.
fn parse_wait(setting: &str, raw: &str) -> Result<SignedDuration, ConfigError> {
    let raw = raw.trim();
    let secs = match raw.parse::<u64>() {
        Ok(n) => n,
        Err(_) => {
            let d: SignedDuration = raw.parse().map_err(|_| {
                invalid(
                    setting,
                    format!("`{raw}` is not a duration (seconds, or e.g. 90m, 2h)"),
                )
            })?;
            u64::try_from(d.as_secs()).unwrap_or(0)
        }
    };
    if !(1..=MAX_DEFERRED_WAIT_SECS).contains(&secs) {
        return Err(invalid(
            setting,
            format!("{secs} s is outside 1 s-{MAX_DEFERRED_WAIT_SECS} s (a week)"),
        ));
    }
    Ok(SignedDuration::from_secs(
        i64::try_from(secs).unwrap_or(i64::MAX),
    ))
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
        let retention = self.retention(&file)?;
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

        let token_file = self.token_file.clone().or(file.token_file.clone());
        let (used, also_configured) = tokens::tokens(token_file.as_deref(), env)?;
        let (credential_source, credential) = used.unzip();

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
        let mut deferral = DeferralBudget::default();
        let max_deferrals = match &self.max_deferrals {
            Some(raw) => Some(parse_number("--max-deferrals", raw, 1, 10_000)?),
            None => match file.max_deferrals {
                Some(n) if !(1..=10_000).contains(&n) => {
                    return Err(invalid("max_deferrals", format!("{n} is outside 1-10000")));
                }
                other => other,
            },
        };
        if let Some(n) = max_deferrals {
            deferral.max_deferrals = u32::try_from(n).unwrap_or(u32::MAX);
        }
        let max_wait = match (&self.max_deferred_wait, file.max_deferred_wait) {
            (Some(raw), _) => Some(parse_wait("--max-deferred-wait", raw)?),
            (None, Some(DurationSetting::Seconds(n))) => {
                Some(parse_wait("max_deferred_wait", &n.to_string())?)
            }
            (None, Some(DurationSetting::Text(t))) => Some(parse_wait("max_deferred_wait", &t)?),
            (None, None) => None,
        };
        if let Some(wait) = max_wait {
            deferral.max_total_wait = wait;
        }
        let sync_caps = caps::sync_caps(file.sync_caps)?;
        Ok(Settings {
            db,
            policy,
            credential,
            credential_source,
            also_configured,
            ca_bundle,
            connect_timeout: Duration::from_secs(connect_timeout),
            read_timeout: Duration::from_secs(read_timeout),
            in_flight_ceiling: u32::try_from(ceiling).unwrap_or(10),
            deferral,
            retention,
            sync_caps,
        })
    }

    /// How long rate-limit history is kept: `--retention-days`, else `retention_days`, else
    /// [`DEFAULT_RETENTION_DAYS`]; 1 to 3650 days.
    fn retention(&self, file: &FileSettings) -> Result<SignedDuration, ConfigError> {
        let days = match &self.retention_days {
            Some(raw) => parse_number("--retention-days", raw, 1, 3650)?,
            None => match file.retention_days {
                Some(n) if !(1..=3650).contains(&n) => {
                    return Err(invalid("retention_days", format!("{n} is outside 1-3650")));
                }
                other => other.unwrap_or(DEFAULT_RETENTION_DAYS),
            },
        };
        Ok(SignedDuration::from_hours(
            i64::try_from(days.saturating_mul(24)).unwrap_or(i64::MAX / 3600),
        ))
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
        toml::from_str(&text).map_err(|e| toml_problem(&path, &text, &e))
    }
}

/// A `headroom.toml` the parser refused, in words: the setting the offending line sets (with
/// its table, `sync_caps.share`), the file, line and column, and the parser's message.
fn toml_problem(path: &std::path::Path, text: &str, e: &toml::de::Error) -> ConfigError {
    let Some(span) = e.span() else {
        return invalid("--config", format!("{}: {}", path.display(), e.message()));
    };
    let before = text.get(..span.start).unwrap_or(text);
    let line_no = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    let line = text.lines().nth(line_no - 1).unwrap_or("");
    let table = text
        .lines()
        .take(line_no)
        .filter_map(|l| {
            let l = l.trim();
            l.strip_prefix('[')?.strip_suffix(']').map(str::trim)
        })
        .last();
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().trim_matches('"'))
        .filter(|k| !k.is_empty() && !k.starts_with('['));
    let setting = match (table, key) {
        (Some(t), Some(k)) => format!("{t}.{k}"),
        (None, Some(k)) => k.to_owned(),
        _ => "--config".to_owned(),
    };
    invalid(
        &setting,
        format!(
            "{} line {line_no}, column {column}: {}",
            path.display(),
            e.message()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn toml_refusal(text: &str) -> ConfigError {
        let e = toml::from_str::<FileSettings>(text).expect_err("refused");
        toml_problem(std::path::Path::new("headroom.toml"), text, &e)
    }

    #[test]
    fn a_toml_error_names_the_setting_its_line_and_column() {
        let e = toml_refusal("db = \"h.db\"\n\nin_flight_ceiling = \"ten\"\n");
        assert_eq!(e.setting, "in_flight_ceiling", "{e}");
        assert!(
            e.problem.starts_with("headroom.toml line 3, column 21: "),
            "{e}"
        );
        let e = toml_refusal("db = \"h.db\"\ninflight_ceiling = 4\n");
        assert_eq!(e.setting, "inflight_ceiling", "{e}");
        assert!(e.problem.contains("line 2"), "{e}");
        assert!(e.problem.contains("unknown field"), "{e}");
        let e = toml_refusal("[sync_caps]\nshare = 7\n");
        assert_eq!(e.setting, "sync_caps.share", "{e}");
        assert!(e.problem.contains("line 2"), "{e}");
        // Not a key's line at all: the file is named.
        let e = toml_refusal("db = \"h.db\"\n[[[\n");
        assert_eq!(e.setting, "--config", "{e}");
        assert!(e.problem.contains("line 2"), "{e}");
    }

    /// A process environment of fixed variables, for tests here and in `config::tokens`.
    pub(super) struct Env(pub(super) HashMap<&'static str, &'static str>);
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
}
