//! `headroom maintenance scrub [--apply] [--json]`: masks credentials in diagnostics stored
//! before a redaction pattern existed. A dry run by default: it reads every diagnostic column
//! (`headroom_store::scrub`) and says what it would mask; `--apply` rewrites those rows.
//! Running it again after an apply finds nothing.

use clap::{Args, Subcommand};
use headroom_store::scrub::ScrubReport;

use crate::config::{GlobalArgs, ProcessEnv};
use crate::outcome::{CliError, CommandResult, Outcome};

/// Maintenance commands.
#[derive(Debug, Args)]
pub struct MaintenanceArgs {
    #[command(subcommand)]
    command: MaintenanceCommand,
}

#[derive(Debug, Subcommand)]
enum MaintenanceCommand {
    /// Mask credentials (tokens, passwords, Authorization headers) in stored error texts,
    /// reasons and summaries written before the pattern that matches them existed. New rows
    /// are masked as they are written; this reaches the old ones. A dry run unless --apply.
    Scrub {
        /// Rewrite the rows that hold a credential (default: only count them).
        #[arg(long)]
        apply: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `headroom maintenance …`.
pub async fn run(global: &GlobalArgs, args: MaintenanceArgs) -> CommandResult {
    let MaintenanceCommand::Scrub { apply, json } = args.command;
    let settings = global
        .resolve(&ProcessEnv)
        .map_err(|e| CliError::refused(&e))?;
    settings
        .require_existing_database()
        .map_err(|e| CliError::refused(&e))?;
    let store = headroom_store::open(&settings.db)
        .await
        .map_err(|e| CliError::refused(&e))?;
    let report = store.scrub_diagnostics(apply).await;
    store.close().await;
    let report = report.map_err(|e| CliError::failed(&e))?;
    if json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| CliError::failed(&e))?;
        outln!("{text}");
    } else {
        print_report(&report);
    }
    Ok(Outcome::Success)
}

fn print_report(report: &ScrubReport) {
    let found = report.rows_with_secrets();
    for c in report.columns.iter().filter(|c| c.rows_with_secrets > 0) {
        outln!(
            "{}.{}: {} of {} rows hold a credential{}",
            c.table,
            c.column,
            c.rows_with_secrets,
            c.rows_read,
            if report.applied {
                format!(", {} masked", c.rows_masked)
            } else {
                String::new()
            }
        );
    }
    let read: u64 = report.columns.iter().map(|c| c.rows_read).sum();
    match (found, report.applied) {
        (0, _) => outln!("No stored diagnostic holds a credential ({read} rows read)."),
        (n, false) => outln!(
            "{n} rows would be masked ({read} rows read). Run again with --apply to mask them."
        ),
        (n, true) => outln!(
            "{} of {n} rows masked ({read} rows read).",
            report.rows_masked()
        ),
    }
}
