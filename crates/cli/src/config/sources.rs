//! Where each resolved setting came from — a flag, an environment variable, a line of the
//! config file, or the default — as `headroom config show` prints it. Values that are secrets
//! are never kept here: a token is its fingerprint, a database URL is redacted.

use std::path::PathBuf;

use serde::Serialize;

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// A command-line flag (`--db`).
    Flag {
        /// The flag.
        name: &'static str,
    },
    /// An environment variable (`HEADROOM_DB`).
    Env {
        /// The variable.
        name: &'static str,
    },
    /// A line of the config file.
    File {
        /// The file.
        path: PathBuf,
        /// The line that sets it.
        line: usize,
    },
    /// Nothing set it.
    Default,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Flag { name } => write!(f, "flag {name}"),
            Source::Env { name } => write!(f, "environment variable {name}"),
            Source::File { path, line } => write!(f, "config file {} line {line}", path.display()),
            Source::Default => f.write_str("default"),
        }
    }
}

/// One setting as resolved: its name (the config file's key), its value as shown, its source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sourced {
    /// The setting, as `headroom.toml` names it.
    pub setting: &'static str,
    /// The value, safe to print: `none` when unset.
    pub value: String,
    /// Where it came from.
    pub source: Source,
}

/// The settings of a resolution, in the order they are listed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Sources {
    /// The config file read, if any, and how it was named.
    pub config_file: Option<(PathBuf, Source)>,
    /// Each setting.
    pub settings: Vec<Sourced>,
}

impl Sources {
    /// Records a setting.
    pub(super) fn push(&mut self, setting: &'static str, value: impl Into<String>, source: Source) {
        self.settings.push(Sourced {
            setting,
            value: value.into(),
            source,
        });
    }

    /// The listing in words: one line per setting, `setting  value  (source)`.
    pub fn text(&self) -> String {
        let mut out = match &self.config_file {
            Some((path, source)) => format!("config file: {} ({source})\n", path.display()),
            None => "config file: none\n".to_owned(),
        };
        let width = self
            .settings
            .iter()
            .map(|s| s.setting.len())
            .max()
            .unwrap_or(0);
        for s in &self.settings {
            out.push_str(&format!(
                "{:width$}  {}  ({})\n",
                s.setting, s.value, s.source
            ));
        }
        out
    }

    /// The listing as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "config_file": self.config_file.as_ref().map(|(path, source)| serde_json::json!({
                "path": path,
                "source": source,
            })),
            "settings": self.settings,
        })
    }
}
