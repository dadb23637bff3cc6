//! `headroom import gharchive FILE...`: backfill PushEvents from GH Archive files through the
//! feed's validation, quarantine and deduplication path. Streaming (constant memory), with a
//! progress bar when stderr is a terminal and plain lines otherwise.

use std::io::{IsTerminal, Write};

use clap::{Args, Subcommand};
use headroom_core::clock::{Clock, TokioClock};
use headroom_core::telemetry;
use headroom_github::feed::import::{
    DEFAULT_BATCH, ImportOptions, ImportProgress, import_reader, open_input,
};
use headroom_github::feed::{IngestContext, PageCounts, new_run_id};
use headroom_store::EventOrigin;
use headroom_store::bulk::DEFAULT_COMMIT_EVERY;

use crate::config::{GlobalArgs, ProcessEnv};
use crate::outcome::{CliError, CommandResult, Outcome};

/// Import commands.
#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(subcommand)]
    command: ImportCommand,
}

#[derive(Debug, Subcommand)]
enum ImportCommand {
    /// Import GH Archive hour files (`.json.gz`, or `.json`/`.jsonl` with one envelope per
    /// line; `-` reads stdin). The live feed samples GitHub's activity; these files fill the
    /// gaps. A second import of the same file only finds duplicates.
    ///
    /// On an SQLite file, once an import has added as many push events as the table held, it
    /// drops their per-actor and per-repository indexes and builds them again at its end
    /// (faster than keeping them row by row); while they are missing, reads filtered by actor or
    /// repository scan the table. It holds a lock on `<db>-import-lock` meanwhile; if it is
    /// killed, the next open of the database or the next import builds them.
    ///
    /// One import writes a database at a time (SQLite or PostgreSQL): a second one waits for
    /// the first to end, saying so, then finds its events as duplicates.
    Gharchive {
        /// The files to import, in order.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<String>,
        /// Envelopes per batch read and written (part of a commit, see --commit-every).
        #[arg(long, default_value_t = DEFAULT_BATCH as u64, value_parser = clap::value_parser!(u64).range(1..=100_000))]
        batch: u64,
        /// Envelopes per commit (on SQLite and PostgreSQL alike): larger is faster, and a
        /// killed import loses at most this many envelopes' work (the next run redoes it).
        #[arg(long, default_value_t = DEFAULT_COMMIT_EVERY as u64, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
        commit_every: u64,
    },
}

/// Runs `headroom import …`.
pub async fn run(global: &GlobalArgs, args: ImportArgs) -> CommandResult {
    let ImportCommand::Gharchive {
        files,
        batch,
        commit_every,
    } = args.command;
    let settings = global
        .resolve(&ProcessEnv)
        .map_err(|e| CliError::refused(&e))?;
    let store = headroom_store::open(&settings.db)
        .await
        .map_err(|e| CliError::refused(&e))?;
    let clock = TokioClock::system();
    let ctx = IngestContext {
        origin: EventOrigin::Gharchive,
        run_id: new_run_id(),
        ingestion_run_id: None,
    };
    let options = ImportOptions {
        batch: usize::try_from(batch).unwrap_or(DEFAULT_BATCH),
        commit_every: usize::try_from(commit_every).unwrap_or(DEFAULT_COMMIT_EVERY),
        on_wait: Some(say_waiting),
    };
    let terminal = std::io::stderr().is_terminal();
    let started = clock.now();
    tracing::info!(event = telemetry::IMPORT_STARTED, run_id = %ctx.run_id, files = files.len());
    let mut total = PageCounts::default();
    let mut lines = 0u64;
    for file in &files {
        let (reader, size, bytes) = match open_input(file) {
            Ok(opened) => opened,
            Err(e) => {
                store.close().await;
                return Err(CliError::failed(&format!("cannot open {file}: {e}")));
            }
        };
        let mut last_line = 0u64;
        let result = import_reader(store.as_ref(), reader, bytes, &clock, &ctx, options, |p| {
            if terminal {
                draw_bar(file, p, size);
            } else if p.lines - last_line >= 100_000 {
                last_line = p.lines;
                eprintln!(
                    "{file}: {} lines, {} created",
                    p.lines, p.counts.events_created
                );
            }
        })
        .await;
        if terminal {
            eprintln!();
        }
        match result {
            Ok(progress) => {
                total.add(&progress.counts);
                lines += progress.lines;
                outln!(
                    "{file}: {} lines, {} push events created, {} duplicates, {} quarantined, {} other events ignored, {} failed",
                    progress.lines,
                    progress.counts.events_created,
                    progress.counts.duplicates_skipped,
                    progress.counts.events_quarantined,
                    progress.counts.events_ignored,
                    progress.counts.events_failed
                );
            }
            Err(e) => {
                store.close().await;
                return Err(CliError::failed(&format!("importing {file}: {e}")));
            }
        }
    }
    let elapsed = clock.now().duration_since(started).as_secs_f64();
    tracing::info!(event = telemetry::IMPORT_COMPLETED, run_id = %ctx.run_id, lines,
        events_created = total.events_created, duplicates_skipped = total.duplicates_skipped,
        events_quarantined = total.events_quarantined, events_ignored = total.events_ignored,
        events_failed = total.events_failed, duration_s = elapsed);
    outln!("Import run {} completed", ctx.run_id);
    outln!("Lines read:                       {lines}");
    outln!(
        "Push events seen:                 {}",
        total.push_events_seen
    );
    outln!("Push events created:              {}", total.events_created);
    outln!(
        "Duplicates skipped:               {}",
        total.duplicates_skipped
    );
    outln!(
        "Events quarantined:               {}",
        total.events_quarantined
    );
    outln!("Non-push events ignored:          {}", total.events_ignored);
    outln!("Events failed:                    {}", total.events_failed);
    if elapsed > 0.0 {
        #[allow(clippy::cast_precision_loss)]
        let rate = lines as f64 / elapsed;
        outln!("Throughput:                       {rate:.0} events/s");
    }
    store.close().await;
    if total.events_failed > 0 {
        return Ok(Outcome::Unsuccessful);
    }
    Ok(Outcome::Success)
}

/// One import writes a database at a time: a second one says, once, what it waits for.
fn say_waiting(holder: &str) {
    eprintln!("headroom: waiting for another import into this database to finish ({holder})");
}

fn draw_bar(file: &str, p: &ImportProgress, size: Option<u64>) {
    let mut err = std::io::stderr().lock();
    match size {
        Some(size) if size > 0 => {
            #[allow(clippy::cast_precision_loss)]
            let fraction = (p.bytes_read as f64 / size as f64).clamp(0.0, 1.0);
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let filled = (fraction * 30.0).round() as usize;
            let _ = write!(
                err,
                "\r{file} [{}{}] {:>3.0}% {} lines, {} created",
                "#".repeat(filled),
                "-".repeat(30 - filled.min(30)),
                fraction * 100.0,
                p.lines,
                p.counts.events_created
            );
        }
        _ => {
            let _ = write!(
                err,
                "\r{file}: {} lines, {} created",
                p.lines, p.counts.events_created
            );
        }
    }
    let _ = err.flush();
}
