//! The `headroom` binary: command-line definition and glue. The work lives in the library
//! crates; this file parses arguments, wires the pieces together and maps outcomes to exit
//! codes in one place ([`outcome`]: 0 ran or deferred, 1 the attempt failed, 2 refused to run).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc rather than the system allocator: an import allocates every envelope's values on
/// the parser thread and frees them on the writer's, which glibc's malloc serializes on its
/// arena locks (the replay of an import is parser-bound; docs/PERFORMANCE.md has its figures).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// First: its `outln!` is in scope for every module declared after it.
#[macro_use]
mod output;
mod config;
mod config_cmd;
mod demo_cmd;
mod enrich_cmd;
mod import_cmd;
mod ingest_cmd;
mod logging;
mod maintenance_cmd;
mod op_cmd;
mod outcome;
mod quota_cmd;
#[cfg(test)]
mod reference;
mod registry;
mod retention;
mod run_cmd;
mod serve;
mod serve_cmd;
mod signals;
mod sim_cmd;
mod status_cmd;
mod sync_cmd;
mod wiring;

/// Collect engineering data (GitHub, GitLab, Jira, Linear) without fighting the provider's quota.
///
/// One quota governor per quota identity decides every request before it is sent; the
/// provider's response headers are the truth; work that must wait is deferred, never slept on.
#[derive(Debug, Parser)]
#[command(name = "headroom", version, about, long_about)]
struct Cli {
    #[command(flatten)]
    global: config::GlobalArgs,

    #[command(subcommand)]
    command: Option<Command>,
}

// Parsed once per process: boxing the simulator's many flags would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// Show whose quota the configured credential spends and what is left of it.
    Quota(quota_cmd::QuotaArgs),
    /// The offline demo: ingest, enrich and replay against the in-process simulator.
    Demo(demo_cmd::DemoArgs),
    /// Enrich the actors and repositories accepted events reference (search batches, then
    /// detail fallbacks), inside both ledgers.
    Enrich(enrich_cmd::EnrichArgs),
    /// The service until stopped: the events feed, the quota dashboard and API on --listen,
    /// and the sync worker.
    ///
    /// Each tick (--tick-secs) polls the public events feed when it is due and enriches what
    /// it found; a reconciler rebuilds pending work after a crash. Beside it, the quota
    /// dashboard (/) and the read-only HTTP API are served on --listen (default
    /// http://127.0.0.1:3000; --no-listen for none), and the sync worker resumes
    /// `headroom sync org` runs: hibernated ones when their wake time comes, pending ones,
    /// and those a dead process left (--no-sync when `headroom sync worker` runs elsewhere).
    /// Stops on SIGINT or SIGTERM.
    Run(run_cmd::RunArgs),
    /// The quota dashboard and the read-only HTTP API over a database, opened read-only: no
    /// workers, no provider requests, no writes.
    Serve(serve_cmd::ServeArgs),
    /// The feed's persisted state (schedule, ledgers, enrichment), read only.
    Status(status_cmd::StatusArgs),
    /// One polling cycle of the public events feed, if due; then the persisted state.
    Ingest(ingest_cmd::IngestArgs),
    /// Backfill PushEvents from GH Archive files (`import gharchive FILE...`).
    Import(import_cmd::ImportArgs),
    /// Serve a simulated GitHub API on loopback (the demo, benchmarks, other clients).
    Sim(Box<sim_cmd::SimArgs>),
    /// Git provider operations on GitHub or GitLab, each mutation sent once.
    #[command(subcommand_required = true)]
    Op(op_cmd::OpArgs),
    /// Collections (a GitHub organization, a GitLab group, a Jira site, a Linear workspace): a
    /// graph of stages chosen by quota headroom, resumed exactly.
    #[command(subcommand_required = true)]
    Sync(sync_cmd::SyncArgs),
    /// Upkeep of a database: `scrub` masks credentials in diagnostics stored before a
    /// redaction pattern existed.
    #[command(subcommand_required = true)]
    Maintenance(maintenance_cmd::MaintenanceArgs),
    /// The settings as resolved: each one's value and where it came from.
    #[command(subcommand_required = true)]
    Config(config_cmd::ConfigArgs),
}

impl Command {
    /// The command's name when it writes rows meant to outlive the process (an in-memory
    /// database is refused for it); `quota` only caches, `config` opens nothing, and the
    /// read-only commands refuse an in-memory database as new and empty.
    fn keeps_rows(&self) -> Option<&'static str> {
        match self {
            Command::Import(_) => Some("import"),
            Command::Ingest(_) => Some("ingest"),
            Command::Enrich(_) => Some("enrich"),
            Command::Run(_) => Some("run"),
            Command::Sync(_) => Some("sync"),
            Command::Op(_) => Some("op"),
            Command::Demo(_) => Some("demo"),
            Command::Maintenance(_) => Some("maintenance"),
            Command::Quota(_)
            | Command::Serve(_)
            | Command::Status(_)
            | Command::Sim(_)
            | Command::Config(_) => None,
        }
    }
}

fn main() -> ExitCode {
    use clap::{CommandFactory as _, FromArgMatches as _};
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let Some(command) = cli.command else {
        // No subcommand yet: show what exists rather than doing nothing silently.
        let mut cmd = Cli::command();
        return if cmd.print_help().is_err() {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        };
    };
    let from_env =
        |id: &str| matches.value_source(id) == Some(clap::parser::ValueSource::EnvVariable);
    let mut global = cli.global;
    global.env_sourced = config::EnvSourced {
        db: from_env("db"),
        api_url: from_env("api_url"),
        config: from_env("config"),
    };
    global.keeps_rows = command.keeps_rows();
    let global = &global;
    let (program, result) = match command {
        // The simulator builds a runtime of its own and speaks under its own name.
        Command::Sim(args) => ("headroom sim", sim_cmd::run(*args)),
        Command::Quota(args) => ("headroom", with_runtime(quota_cmd::run(global, args))),
        Command::Sync(args) => ("headroom", with_runtime(sync_cmd::run(global, args))),
        Command::Import(args) => ("headroom", with_runtime(import_cmd::run(global, args))),
        Command::Ingest(args) => ("headroom", with_runtime(ingest_cmd::run(global, args))),
        Command::Enrich(args) => ("headroom", with_runtime(enrich_cmd::run(global, args))),
        Command::Run(args) => ("headroom", with_runtime(run_cmd::run(global, args))),
        Command::Serve(args) => ("headroom", with_runtime(serve_cmd::run(global, args))),
        Command::Status(args) => ("headroom", with_runtime(status_cmd::run(global, args))),
        Command::Demo(args) => ("headroom", with_runtime(demo_cmd::run(global, args))),
        Command::Op(args) => ("headroom", with_runtime(op_cmd::run(global, args))),
        Command::Maintenance(args) => {
            ("headroom", with_runtime(maintenance_cmd::run(global, args)))
        }
        Command::Config(args) => ("headroom", config_cmd::run(global, args)),
    };
    // A 401 or a refused certificate says how to fix it (`op` has said it for GitLab already).
    let result = result.map_err(|e| {
        e.with_hints(outcome::TokenFor::GitHub, || {
            let settings = global.resolve(&config::ProcessEnv).ok()?;
            outcome::token_source(&settings)
        })
    });
    outcome::exit_code(program, result)
}

/// Runs an async subcommand on a multi-threaded runtime, with JSON logs on stderr.
fn with_runtime(
    work: impl std::future::Future<Output = outcome::CommandResult>,
) -> outcome::CommandResult {
    init_logging();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| outcome::CliError::Failed(format!("cannot start the async runtime: {e}")))?
        .block_on(work)
}

/// One JSON object per line on stderr ([`logging`]); `RUST_LOG` filters (default: warnings
/// and errors).
fn init_logging() {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(logging::JsonLines::new(std::io::stderr))
        .try_init();
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// docs/CLI.md is the clap definitions rendered: regenerate it when they change.
    #[test]
    fn cli_reference_matches_the_definitions() {
        let rendered = crate::reference::render(&mut crate::Cli::command());
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/CLI.md");
        if std::env::var_os("HEADROOM_WRITE_CLI_DOCS").is_some() {
            std::fs::write(&path, &rendered).unwrap_or_else(|e| panic!("{e}"));
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == rendered,
            "docs/CLI.md is stale: run `HEADROOM_WRITE_CLI_DOCS=1 cargo test -p headroom --bin headroom cli_reference`"
        );
    }
}
