//! The `headroom` binary: command-line definition and glue. The work lives in the library
//! crates; this file parses arguments, wires the pieces together and maps outcomes to exit
//! codes (0 ran or deferred, 1 the attempt failed, 2 refused to run).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod sim_cmd;

/// Collect GitHub data without fighting the provider's quota.
///
/// One quota governor per quota identity decides every request before it is sent; the
/// provider's response headers are the truth; work that must wait is deferred, never slept on.
#[derive(Debug, Parser)]
#[command(name = "headroom", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve a simulated GitHub API on loopback (the demo, benchmarks, other clients).
    Sim(sim_cmd::SimArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => {
            use clap::CommandFactory;
            // No subcommand yet: show what exists rather than doing nothing silently.
            let mut cmd = Cli::command();
            if cmd.print_help().is_err() {
                return ExitCode::from(1);
            }
            ExitCode::SUCCESS
        }
        Some(Command::Sim(args)) => sim_cmd::run(args),
    }
}
