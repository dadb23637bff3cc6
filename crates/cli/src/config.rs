//! Settings shared by every subcommand: where the database is, which API to talk to, which
//! credential to use, timeouts and the in-flight ceiling.
//!
//! Each setting comes from, in order: its flag, its environment variable, `headroom.toml`,
//! the default; [`Settings::sources`] says which, for `headroom config show`. Invalid values
//! refuse to start with a message naming the setting (exit 2); a value from the file also
//! names the file and line ([`file`]). The token is never a flag (it would show in `ps` and
//! shell history): `GITHUB_TOKEN`, `GH_TOKEN` or `--token-file`. Files are read bounded and
//! only when regular ([`read`]). Where a credential goes is never decided by an implicit
//! `./headroom.toml` ([`file::CREDENTIAL_ROUTES`]).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use headroom_core::clock::SignedDuration;
use headroom_core::deferral::DeferralBudget;
use headroom_http::{Credential, UrlPolicy};

mod caps;
mod file;
mod providers;
mod read;
mod sources;
#[cfg(test)]
mod tests;
mod tokens;
mod values;

use self::file::ConfigFile;
pub use self::providers::{ProviderAccess, Providers};
pub use self::sources::{Source, Sources};
pub use self::tokens::ConfiguredToken;
pub use self::values::in_memory;
use self::values::{parse_number, parse_wait};

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
    /// seconds, or a duration such as 90m, 6h or 7d; at most a week).
    #[arg(long, global = true, value_name = "DURATION")]
    pub max_deferred_wait: Option<String>,

    /// Days of rate-limit history (observations, quota readings) long-running processes keep
    /// (default 14, 1-3650); older rows are pruned.
    #[arg(long, global = true, value_name = "DAYS")]
    pub retention_days: Option<String>,

    /// A TOML file with the same settings (default ./headroom.toml when it exists; only a
    /// file named here or by HEADROOM_CONFIG may set api_url, token_file or ca_bundle).
    #[arg(long, global = true, env = "HEADROOM_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Which of the options above took their value from the environment (set by `main`).
    #[arg(skip)]
    pub env_sourced: EnvSourced,

    /// The command, when it writes rows meant to outlive it (set by `main`): an in-memory
    /// database is refused for it.
    #[arg(skip)]
    pub keeps_rows: Option<&'static str>,
}

/// Which options with an environment variable took their value from it rather than their
/// flag: clap merges the two, and `headroom config show` tells them apart.
#[derive(Debug, Clone, Copy, Default)]
pub struct EnvSourced {
    /// `HEADROOM_DB`.
    pub db: bool,
    /// `GITHUB_API_URL`.
    pub api_url: bool,
    /// `HEADROOM_CONFIG`.
    pub config: bool,
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
    /// GitLab's, Jira's, Linear's and LaunchDarkly's API and credential.
    pub providers: Providers,
    /// Where each setting came from, its value safe to print.
    pub sources: Sources,
}

impl Settings {
    /// For commands that only read: the database must exist already, since opening a missing
    /// SQLite file would create (and migrate) an empty one and report its zeros — as would
    /// an in-memory database, which is always new.
    pub fn require_existing_database(&self) -> Result<(), ConfigError> {
        if in_memory(&self.db) {
            return Err(invalid(
                "--db",
                format!(
                    "`{}` is an in-memory database, new and empty: a read-only command reads \
                     a database file or a postgres:// URL",
                    self.db
                ),
            ));
        }
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

/// The flag's source, or its variable's when the value came from the environment.
fn flag_or_env(flag: &'static str, var: &'static str, from_env: bool) -> Source {
    if from_env {
        Source::Env { name: var }
    } else {
        Source::Flag { name: flag }
    }
}

/// A flag's value (with its source), else the file's (with its line).
fn flag_or_file<T: Clone>(
    flag: Option<(&T, Source)>,
    value: Option<&toml::Spanned<T>>,
    file: &ConfigFile,
) -> Option<(T, Source)> {
    match (flag, value) {
        (Some((v, source)), _) => Some((v.clone(), source)),
        (None, Some(v)) => Some((v.get_ref().clone(), file.source(&v.span()))),
        (None, None) => None,
    }
}

/// A whole-number setting: its flag, else the file's key, else none.
fn number_setting(
    (flag, raw): (&'static str, Option<&String>),
    (key, value): (&str, Option<&toml::Spanned<u64>>),
    file: &ConfigFile,
    (min, max): (u64, u64),
) -> Result<Option<(u64, Source)>, ConfigError> {
    match raw {
        Some(raw) => Ok(Some((
            parse_number(flag, raw, min, max)?,
            Source::Flag { name: flag },
        ))),
        None => file.number(key, value, min, max),
    }
}

/// A number, from a setting or its default, recorded in `sources`.
fn record(
    sources: &mut Sources,
    setting: &'static str,
    found: Option<(u64, Source)>,
    default: u64,
) -> u64 {
    let (n, source) = found.unwrap_or((default, Source::Default));
    sources.push(setting, n.to_string(), source);
    n
}

impl GlobalArgs {
    /// Resolves every setting, or names the first one that is wrong.
    pub fn resolve(&self, env: &dyn Environment) -> Result<Settings, ConfigError> {
        let named = self.config.as_deref().map(|path| {
            let source = flag_or_env("--config", "HEADROOM_CONFIG", self.env_sourced.config);
            (path, source)
        });
        let mut file = ConfigFile::load(named)?;
        let mut sources = Sources {
            config_file: file.origin.clone(),
            settings: Vec::new(),
        };
        let db = self.database(&file, &mut sources)?;
        let policy = self.api(&file, &mut sources)?;
        let credentials = self.credentials(&file, env, &mut sources)?;
        let ca_bundle = self.ca_bundle(&file, &mut sources)?;
        let f = &file.settings;
        let found = number_setting(
            ("--connect-timeout", self.connect_timeout.as_ref()),
            ("connect_timeout_secs", f.connect_timeout_secs.as_ref()),
            &file,
            (1, 300),
        )?;
        let connect_timeout = record(&mut sources, "connect_timeout_secs", found, 5);
        let found = number_setting(
            ("--read-timeout", self.read_timeout.as_ref()),
            ("read_timeout_secs", f.read_timeout_secs.as_ref()),
            &file,
            (1, 600),
        )?;
        let read_timeout = record(&mut sources, "read_timeout_secs", found, 15);
        let found = number_setting(
            ("--in-flight-ceiling", self.in_flight_ceiling.as_ref()),
            ("in_flight_ceiling", f.in_flight_ceiling.as_ref()),
            &file,
            (1, 100),
        )?;
        let ceiling = record(&mut sources, "in_flight_ceiling", found, 10);
        let deferral = self.deferral(&file, &mut sources)?;
        let found = number_setting(
            ("--retention-days", self.retention_days.as_ref()),
            ("retention_days", f.retention_days.as_ref()),
            &file,
            (1, 3650),
        )?;
        let days = record(
            &mut sources,
            "retention_days",
            found,
            DEFAULT_RETENTION_DAYS,
        );
        let retention = SignedDuration::from_hours(
            i64::try_from(days.saturating_mul(24)).unwrap_or(i64::MAX / 3600),
        );
        let caps_file = file.settings.sync_caps.take();
        let caps_source = caps_file.as_ref().and_then(caps::SyncCapsFile::first_span);
        let caps_source = caps_source.map_or(Source::Default, |span| file.source(&span));
        let sync_caps = caps::sync_caps(caps_file, &|span| file.at(span))?;
        sources.push("sync_caps", caps_summary(&sync_caps), caps_source);
        let providers = providers::resolve(&file, env, &mut sources)?;
        let (credential, credential_source, also_configured) = credentials;
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
            providers,
            sources,
        })
    }
}

impl GlobalArgs {
    /// `--db`, `HEADROOM_DB`, `db`, else `./headroom.db`; an in-memory database is refused
    /// for a command whose rows must outlive it.
    fn database(&self, file: &ConfigFile, sources: &mut Sources) -> Result<String, ConfigError> {
        let flag = self
            .db
            .as_ref()
            .map(|db| (db, flag_or_env("--db", "HEADROOM_DB", self.env_sourced.db)));
        let (db, source) = flag_or_file(flag, file.settings.db.as_ref(), file)
            .unwrap_or_else(|| ("./headroom.db".to_owned(), Source::Default));
        if db.trim().is_empty() {
            return Err(invalid("--db", "must not be empty"));
        }
        if let Some(command) = self.keeps_rows
            && in_memory(&db)
        {
            return Err(invalid(
                "--db",
                format!(
                    "`{db}` is an in-memory database: the rows `headroom {command}` writes \
                     would vanish when it exits; give a database file or a postgres:// URL"
                ),
            ));
        }
        sources.push("db", headroom_core::redact::redact_url(&db), source);
        Ok(db)
    }

    /// `--api-url`, `GITHUB_API_URL`, `api_url`, else GitHub's.
    fn api(&self, file: &ConfigFile, sources: &mut Sources) -> Result<UrlPolicy, ConfigError> {
        let flag = self.api_url.as_ref().map(|url| {
            let source = flag_or_env("--api-url", "GITHUB_API_URL", self.env_sourced.api_url);
            (url, source)
        });
        let (api_url, source) = flag_or_file(flag, file.settings.api_url.as_ref(), file)
            .unwrap_or_else(|| ("https://api.github.com".to_owned(), Source::Default));
        let policy =
            UrlPolicy::for_api_url(&api_url).map_err(|e| invalid("--api-url", e.to_string()))?;
        sources.push("api_url", policy.base().to_string(), source);
        Ok(policy)
    }

    /// The token used, where it comes from, and the others configured beside it; listed by
    /// fingerprint only.
    fn credentials(
        &self,
        file: &ConfigFile,
        env: &dyn Environment,
        sources: &mut Sources,
    ) -> Result<Credentials, ConfigError> {
        let flag = self.token_file.as_ref().map(|path| {
            (
                path,
                Source::Flag {
                    name: "--token-file",
                },
            )
        });
        let token_file = flag_or_file(flag, file.settings.token_file.as_ref(), file);
        let (used, also_configured) =
            tokens::tokens(token_file.as_ref().map(|(p, _)| p.as_path()), env)?;
        let shown = |source: &'static str| match (&token_file, source) {
            (Some((_, s)), "--token-file") => s.clone(),
            _ => Source::Env { name: source },
        };
        match &token_file {
            Some((path, source)) => {
                sources.push("token_file", path.display().to_string(), source.clone());
            }
            None => sources.push("token_file", "none", Source::Default),
        }
        match &used {
            Some((source, credential)) => sources.push(
                "token",
                format!("fingerprint {}", credential.fingerprint()),
                shown(source),
            ),
            None => sources.push("token", "none (unauthenticated)", Source::Default),
        }
        for other in &also_configured {
            sources.push(
                "other_token",
                format!(
                    "fingerprint {} (configured too, never spent)",
                    other.credential.fingerprint()
                ),
                shown(other.source),
            );
        }
        let (credential_source, credential) = used.unzip();
        Ok((credential, credential_source, also_configured))
    }

    /// `--ca-bundle` or `ca_bundle`: the PEM file's bytes.
    fn ca_bundle(
        &self,
        file: &ConfigFile,
        sources: &mut Sources,
    ) -> Result<Option<Vec<u8>>, ConfigError> {
        let flag = self.ca_bundle.as_ref().map(|path| {
            (
                path,
                Source::Flag {
                    name: "--ca-bundle",
                },
            )
        });
        let Some((path, source)) = flag_or_file(flag, file.settings.ca_bundle.as_ref(), file)
        else {
            sources.push("ca_bundle", "none (the system's roots)", Source::Default);
            return Ok(None);
        };
        let bytes = read::read_bounded("--ca-bundle", &path, read::CA_BUNDLE_MAX_BYTES)?;
        sources.push("ca_bundle", path.display().to_string(), source);
        Ok(Some(bytes))
    }

    /// Sync runs' deferral budgets: `--max-deferrals`/`max_deferrals` and
    /// `--max-deferred-wait`/`max_deferred_wait`.
    fn deferral(
        &self,
        file: &ConfigFile,
        sources: &mut Sources,
    ) -> Result<DeferralBudget, ConfigError> {
        let mut deferral = DeferralBudget::default();
        let found = number_setting(
            ("--max-deferrals", self.max_deferrals.as_ref()),
            ("max_deferrals", file.settings.max_deferrals.as_ref()),
            file,
            (1, 10_000),
        )?;
        let default = u64::from(deferral.max_deferrals);
        let n = record(sources, "max_deferrals", found, default);
        deferral.max_deferrals = u32::try_from(n).unwrap_or(u32::MAX);
        let (wait, source) = match (&self.max_deferred_wait, &file.settings.max_deferred_wait) {
            (Some(raw), _) => (
                parse_wait("--max-deferred-wait", raw)?,
                Source::Flag {
                    name: "--max-deferred-wait",
                },
            ),
            (None, Some(value)) => {
                let span = value.span();
                let raw = match value.get_ref() {
                    toml::Value::Integer(n) => n.to_string(),
                    toml::Value::String(text) => text.clone(),
                    _ => {
                        return Err(file.invalid_at(
                            "max_deferred_wait",
                            &span,
                            "whole seconds, or text such as \"90m\", \"2h\" or \"7d\"",
                        ));
                    }
                };
                let wait = parse_wait("max_deferred_wait", &raw)
                    .map_err(|e| file.invalid_at("max_deferred_wait", &span, e.problem))?;
                (wait, file.source(&span))
            }
            (None, None) => (deferral.max_total_wait, Source::Default),
        };
        deferral.max_total_wait = wait;
        sources.push("max_deferred_wait", format!("{} s", wait.as_secs()), source);
        Ok(deferral)
    }
}

/// The token used, where it comes from, and the others configured beside it.
type Credentials = (
    Option<Credential>,
    Option<&'static str>,
    Vec<ConfiguredToken>,
);

/// `[sync_caps]` in one line.
fn caps_summary(caps: &headroom_core::budget::SyncCaps) -> String {
    if caps.is_empty() {
        return "none".to_owned();
    }
    let shares = caps.shares.iter().map(|(b, s)| format!("share.{b} = {s}"));
    let families = caps
        .families
        .iter()
        .map(|(f, n)| format!("families.{f} = {n}"));
    shares.chain(families).collect::<Vec<_>>().join(", ")
}
