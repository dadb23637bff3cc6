//! `headroom.toml`: reading it (bounded, [`super::read`]), parsing it with each value's place
//! in the file, so that every refusal names the key, the file and the line, and refusing an
//! implicit file that would decide where a credential goes.
//!
//! The file is the one `--config` or `HEADROOM_CONFIG` names, else `./headroom.toml` when it
//! exists. The implicit one may hold anything but the settings that decide where a credential
//! goes ([`CREDENTIAL_ROUTES`]): running headroom inside a cloned repository must never send
//! the token to a host, or read a token from a file, that the repository chose.

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::read::{CONFIG_MAX_BYTES, read_bounded};
use super::sources::Source;
use super::{ConfigError, invalid};
use super::{caps, providers};

/// The keys that decide where a credential goes: the host the token is sent to (GitHub's or
/// GitLab's API, by its URL), the file read as the token, the certificates trusted to be that
/// host. Only a file named by `--config` or `HEADROOM_CONFIG` may set them.
pub(super) const CREDENTIAL_ROUTES: [&str; 3] = ["api_url", "token_file", "ca_bundle"];

/// `headroom.toml` as written, each value with its byte span in the file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileSettings {
    pub(super) db: Option<Spanned<String>>,
    pub(super) api_url: Option<Spanned<String>>,
    pub(super) token_file: Option<Spanned<PathBuf>>,
    pub(super) ca_bundle: Option<Spanned<PathBuf>>,
    pub(super) connect_timeout_secs: Option<Spanned<u64>>,
    pub(super) read_timeout_secs: Option<Spanned<u64>>,
    pub(super) in_flight_ceiling: Option<Spanned<u64>>,
    pub(super) max_deferrals: Option<Spanned<u64>>,
    /// Whole seconds, or text such as "90m", "2h" or "7d".
    pub(super) max_deferred_wait: Option<Spanned<toml::Value>>,
    pub(super) retention_days: Option<Spanned<u64>>,
    pub(super) sync_caps: Option<caps::SyncCapsFile>,
    pub(super) gitlab: Option<providers::ApiSection>,
    pub(super) jira: Option<providers::JiraSection>,
    pub(super) linear: Option<providers::ApiSection>,
    pub(super) launchdarkly: Option<providers::ApiSection>,
}

impl FileSettings {
    /// The credential-routing keys it sets, with their spans: GitHub's, and each other
    /// provider's API URL (Jira's site) and token file.
    fn credential_routes(&self) -> Vec<(&'static str, Range<usize>)> {
        let [api_url, token_file, ca_bundle] = CREDENTIAL_ROUTES;
        let api = |section: &Option<providers::ApiSection>, url, file| {
            section.as_ref().map_or_else(Vec::new, |s| {
                [
                    s.api_url.as_ref().map(|v| (url, v.span())),
                    s.token_file.as_ref().map(|v| (file, v.span())),
                ]
                .into_iter()
                .flatten()
                .collect()
            })
        };
        let jira = self.jira.as_ref().map_or_else(Vec::new, |s| {
            [
                s.site.as_ref().map(|v| ("jira.site", v.span())),
                s.token_file.as_ref().map(|v| ("jira.token_file", v.span())),
            ]
            .into_iter()
            .flatten()
            .collect()
        });
        [
            self.api_url.as_ref().map(|v| (api_url, v.span())),
            self.token_file.as_ref().map(|v| (token_file, v.span())),
            self.ca_bundle.as_ref().map(|v| (ca_bundle, v.span())),
        ]
        .into_iter()
        .flatten()
        .chain(api(&self.gitlab, "gitlab.api_url", "gitlab.token_file"))
        .chain(jira)
        .chain(api(&self.linear, "linear.api_url", "linear.token_file"))
        .chain(api(
            &self.launchdarkly,
            "launchdarkly.api_url",
            "launchdarkly.token_file",
        ))
        .collect()
    }
}

/// The config file read (or none), with its text for locating values.
#[derive(Debug, Default)]
pub(super) struct ConfigFile {
    /// The file and how it was named (`--config`, `HEADROOM_CONFIG`, or the default).
    pub(super) origin: Option<(PathBuf, Source)>,
    text: String,
    /// Its settings.
    pub(super) settings: FileSettings,
}

impl ConfigFile {
    /// Reads the file `named` names (flag or variable), else `./headroom.toml` if it exists.
    pub(super) fn load(named: Option<(&Path, Source)>) -> Result<Self, ConfigError> {
        let (path, source) = match named {
            Some((path, source)) => (path.to_path_buf(), source),
            None => {
                let path = PathBuf::from("./headroom.toml");
                if !path.exists() {
                    return Ok(ConfigFile::default());
                }
                (path, Source::Default)
            }
        };
        let bytes = read_bounded("--config", &path, CONFIG_MAX_BYTES)?;
        let text = String::from_utf8(bytes)
            .map_err(|_| invalid("--config", format!("{}: not UTF-8 text", path.display())))?;
        let settings: FileSettings =
            toml::from_str(&text).map_err(|e| toml_problem(&path, &text, &e))?;
        let file = ConfigFile {
            origin: Some((path, source)),
            text,
            settings,
        };
        file.refuse_implicit_credential_routes()?;
        Ok(file)
    }

    /// Refuses an implicit file that sets where a credential goes, naming the key; never
    /// falls back to the default host either (the user meant some host; it is not ours to
    /// guess which).
    fn refuse_implicit_credential_routes(&self) -> Result<(), ConfigError> {
        let Some((path, Source::Default)) = &self.origin else {
            return Ok(());
        };
        match self.settings.credential_routes().into_iter().next() {
            None => Ok(()),
            Some((key, span)) => Err(invalid(
                key,
                format!(
                    "{} line {} decides where the token goes, and a file found in the current \
                     directory (a cloned repository's, say) never decides that: run with \
                     --config {} (or HEADROOM_CONFIG) if you trust it, or remove `{key}`",
                    path.display(),
                    self.line(&span),
                    path.display()
                ),
            )),
        }
    }

    /// The line a byte span starts on.
    fn line(&self, span: &Range<usize>) -> usize {
        let before = self.text.get(..span.start).unwrap_or(&self.text);
        before.matches('\n').count() + 1
    }

    /// `PATH line N`, for a value at `span`.
    pub(super) fn at(&self, span: &Range<usize>) -> String {
        let path = self
            .origin
            .as_ref()
            .map_or_else(|| "headroom.toml".into(), |(p, _)| p.display().to_string());
        format!("{path} line {}", self.line(span))
    }

    /// Where a value at `span` came from.
    pub(super) fn source(&self, span: &Range<usize>) -> Source {
        Source::File {
            path: self
                .origin
                .as_ref()
                .map_or_else(|| PathBuf::from("headroom.toml"), |(p, _)| p.clone()),
            line: self.line(span),
        }
    }

    /// A refusal of the value at `span`, naming `key`, the file and the line.
    pub(super) fn invalid_at(
        &self,
        key: &str,
        span: &Range<usize>,
        problem: impl std::fmt::Display,
    ) -> ConfigError {
        invalid(key, format!("{}: {problem}", self.at(span)))
    }

    /// A whole-number key within `min..=max`, with where it came from.
    pub(super) fn number(
        &self,
        key: &str,
        value: Option<&Spanned<u64>>,
        min: u64,
        max: u64,
    ) -> Result<Option<(u64, Source)>, ConfigError> {
        let Some(value) = value else {
            return Ok(None);
        };
        let n = *value.get_ref();
        if !(min..=max).contains(&n) {
            return Err(self.invalid_at(key, &value.span(), format!("{n} is outside {min}-{max}")));
        }
        Ok(Some((n, self.source(&value.span()))))
    }
}

/// A `headroom.toml` the parser refused, in words: the setting the offending line sets (with
/// its table, `sync_caps.share`), the file, line and column, and the parser's message. A
/// value spread over several lines is named by the line its key is on.
pub(super) fn toml_problem(path: &Path, text: &str, e: &toml::de::Error) -> ConfigError {
    let Some(span) = e.span() else {
        return invalid("--config", format!("{}: {}", path.display(), e.message()));
    };
    let before = text.get(..span.start).unwrap_or(text);
    let line_no = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    let lines: Vec<&str> = text.lines().take(line_no).collect();
    let table = lines.iter().rev().find_map(|l| header(l));
    // The key: on the offending line, else on the nearest line above it in the same table.
    let key = lines
        .iter()
        .rev()
        .take_while(|l| !l.trim_start().starts_with('['))
        .find_map(|l| l.split_once('=').map(|(k, _)| k.trim().trim_matches('"')))
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

/// The table a `[table]` line opens.
fn header(line: &str) -> Option<&str> {
    let line = line.trim();
    line.strip_prefix('[')?.strip_suffix(']').map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toml_refusal(text: &str) -> ConfigError {
        let e = toml::from_str::<FileSettings>(text).expect_err("refused");
        toml_problem(Path::new("headroom.toml"), text, &e)
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

    /// Defect: a value of the wrong type or out of range, refused after parsing, named the
    /// setting but not where it is: every such refusal names the key, the file and the line.
    #[test]
    fn a_semantic_toml_error_names_the_key_and_the_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("h.toml");
        for (text, key, line) in [
            (
                "db = \"x.db\"\nin_flight_ceiling = 0\n",
                "in_flight_ceiling",
                2,
            ),
            ("\n\nretention_days = 4000\n", "retention_days", 3),
            ("connect_timeout_secs = 301\n", "connect_timeout_secs", 1),
            (
                "db = \"x\"\nmax_deferred_wait = true\n",
                "max_deferred_wait",
                2,
            ),
            (
                "db = \"x\"\nmax_deferred_wait = \"9d\"\n",
                "max_deferred_wait",
                2,
            ),
            ("max_deferrals = -3\n", "max_deferrals", 1),
            ("db = [\n  \"a\",\n  1,\n]\n", "db", 1),
            (
                "db = \"x\"\n[sync_caps]\nshare = { core = 1.5 }\n",
                "sync_caps.share.core",
                3,
            ),
            (
                "[sync_caps.families]\n\nnot_a_family = 5\n",
                "sync_caps.families.not_a_family",
                3,
            ),
        ] {
            std::fs::write(&path, text).expect("write");
            let e = super::super::GlobalArgs {
                config: Some(path.clone()),
                ..Default::default()
            }
            .resolve(&super::super::tests::Env(Default::default()))
            .expect_err(text);
            assert_eq!(e.setting, key, "{text}: {e}");
            assert!(
                e.problem
                    .starts_with(&format!("{} line {line}", path.display())),
                "{text}: {e}"
            );
        }
    }
}
