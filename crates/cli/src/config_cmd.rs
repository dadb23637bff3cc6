//! `headroom config show [--json]`: every global setting as resolved for the same options,
//! environment and config file, with where it came from (flag, environment variable, config
//! file line, default). Secrets are never printed: a token is its source and fingerprint, a
//! database URL is redacted. Nothing is opened or sent.

use clap::{Args, Subcommand};

use crate::config::{GlobalArgs, ProcessEnv};
use crate::outcome::{CliError, CommandResult, Outcome};

/// `headroom config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    command: ConfigCommand,
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Each setting's value and where it came from: a flag, an environment variable, a line
    /// of the config file, or the default (tokens by fingerprint only).
    Show {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `headroom config …`.
pub fn run(global: &GlobalArgs, args: ConfigArgs) -> CommandResult {
    let ConfigCommand::Show { json } = args.command;
    let settings = global
        .resolve(&ProcessEnv)
        .map_err(|e| CliError::refused(&e))?;
    if json {
        outln!("{}", settings.sources.json());
    } else {
        outln!("{}", settings.sources.text().trim_end());
    }
    Ok(Outcome::Success)
}
