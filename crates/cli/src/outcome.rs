//! How a command ends, and the one mapping from that to an exit code: 0 ran or deferred,
//! 1 the attempt failed, 2 refused to run. Commands return [`CommandResult`]; only `main`
//! prints a [`CliError`] and turns either side into an [`ExitCode`].

use std::fmt::Display;
use std::process::ExitCode;

/// What a command that ran to its end reports through its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It ran, or deferred its work to a later run (exit 0).
    Success,
    /// It ran to its end and its printed report says part of the work failed (exit 1): the
    /// report on stdout already says why, so there is nothing more to print.
    Unsuccessful,
}

/// Why a command stopped before its end. The message is final text (already redacted where
/// it may carry a credential); `main` prints it once, after the program's name.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Refused to run: a bad option or configuration; the message names the setting (exit 2).
    #[error("{0}")]
    Refused(String),
    /// The attempt failed (exit 1).
    #[error("{0}")]
    Failed(String),
}

impl CliError {
    /// Refuses over `error`, its text redacted.
    pub fn refused(error: &dyn Display) -> Self {
        Self::Refused(headroom_core::redact(&error.to_string()))
    }

    /// Fails over `error`, its text redacted.
    pub fn failed(error: &dyn Display) -> Self {
        Self::Failed(headroom_core::redact(&error.to_string()))
    }

    /// The same message, as a failure rather than a refusal (exit 1).
    pub fn into_failure(self) -> Self {
        match self {
            Self::Refused(message) | Self::Failed(message) => Self::Failed(message),
        }
    }

    fn exit_code(&self) -> u8 {
        match self {
            Self::Refused(_) => 2,
            Self::Failed(_) => 1,
        }
    }
}

/// Which provider's token a command spent: the variables that supply one differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenFor {
    /// `GITHUB_TOKEN` or `GH_TOKEN`.
    GitHub,
    /// `GITLAB_TOKEN` (`headroom op` on GitLab).
    GitLab,
    /// `JIRA_API_TOKEN` with `JIRA_EMAIL`.
    Jira,
    /// `LINEAR_API_KEY`.
    Linear,
    /// `LD_ACCESS_TOKEN`.
    LaunchDarkly,
}

impl CliError {
    /// The message with what a person needs to act on it when the message alone does not
    /// say: after a 401, where the token came from (`source`, if known: "environment variable
    /// GITHUB_TOKEN") and every way to supply one; after a refused certificate, how to trust
    /// the server. Both follow the marker headroom-http's errors start with.
    pub fn with_hints(self, token: TokenFor, source: impl FnOnce() -> Option<String>) -> Self {
        let hint = |message: &str| {
            if message.contains("\nhint: ") {
                None
            } else if message.contains(headroom_http::TOKEN_REFUSED) {
                Some(token_hint(token, source()))
            } else if message.contains(headroom_http::CERTIFICATE_NOT_TRUSTED) {
                Some(
                    "trust the CA that signed the server's certificate with --ca-bundle FILE \
                     (a PEM bundle), or ca_bundle in a config file named by --config"
                        .to_owned(),
                )
            } else {
                None
            }
        };
        match self {
            Self::Failed(message) => match hint(&message) {
                Some(h) => Self::Failed(format!("{message}\nhint: {h}")),
                None => Self::Failed(message),
            },
            refused => refused,
        }
    }
}

/// Where the token `settings` spend came from, as `headroom config show` says it
/// ("environment variable GITHUB_TOKEN", "config file FILE line N"); `None` without one.
pub fn token_source(settings: &crate::config::Settings) -> Option<String> {
    settings
        .sources
        .settings
        .iter()
        .find(|s| s.setting == "token" && s.source != crate::config::Source::Default)
        .map(|s| s.source.to_string())
}

/// Where the refused token came from and how to supply another.
fn token_hint(token: TokenFor, source: Option<String>) -> String {
    let came = match source {
        Some(source) => format!("the token came from {source}; "),
        None => "no token was given; ".to_owned(),
    };
    let variables = match token {
        TokenFor::GitHub => "GITHUB_TOKEN or GH_TOKEN",
        TokenFor::GitLab => "GITLAB_TOKEN (or GITLAB_OAUTH_TOKEN)",
        TokenFor::Linear => "LINEAR_API_KEY (or LINEAR_OAUTH_TOKEN)",
        TokenFor::LaunchDarkly => "LD_ACCESS_TOKEN (or LD_OAUTH_TOKEN)",
        // A Jira API token goes with its account's e-mail, so no bare token file will do.
        TokenFor::Jira => {
            return format!(
                "{came}supply a valid one in JIRA_API_TOKEN with the account's JIRA_EMAIL (or \
                 JIRA_OAUTH_TOKEN with JIRA_OAUTH_CLIENT_ID), or as token_file and email in the \
                 [jira] section of a config file named by --config"
            );
        }
    };
    format!(
        "{came}supply a valid one in {variables}, with --token-file FILE, or as token_file in a \
         config file named by --config"
    )
}

/// What every command returns.
pub type CommandResult = Result<Outcome, CliError>;

/// The one mapping to the process's exit code; a [`CliError`] is printed on stderr here as
/// `PROGRAM: MESSAGE` and nowhere else.
pub fn exit_code(program: &str, result: CommandResult) -> ExitCode {
    match result {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::Unsuccessful) => ExitCode::from(1),
        Err(error) => {
            eprintln!("{program}: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}
