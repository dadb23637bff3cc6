//! `headroom demo [--db PATH]`: the whole feed flow offline. The simulator runs in-process
//! with the `default` scenario; a fresh SQLite database in a temporary folder (unless `--db`)
//! receives one ingest, one enrichment run, and — after GitHub's 60 s poll floor has passed in
//! simulated time — a forced replay that absorbs the same page as duplicates.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use headroom_core::Governor;
use headroom_core::clock::{Clock, SignedDuration, TokioClock};
use headroom_core::governor::GovernorConfig;
use headroom_github::feed::enrich::{EnrichOptions, EnrichSettings, Enricher};
use headroom_github::feed::new_run_id;
use headroom_github::feed::poll::{PollOutcome, PollSettings, Poller};
use headroom_http::transport::SimTransport;
use headroom_http::{Client, ClientParts, UrlPolicy};
use headroom_sim::{Scenario, SimConfig, Simulator};
use headroom_store::feed_state::open_feed;
use headroom_store::{FeedEntity, Store};

use crate::ingest_cmd::{print_outcome, print_summary};
use crate::outcome::{CliError, CommandResult, Outcome};

/// The simulated API's address (in-process: nothing listens on it).
const SIM_API: &str = "http://127.0.0.1:7000";

/// `headroom demo`. The global `--db PATH` keeps the database there instead of a temporary
/// folder (it must not exist yet, so the figures are the fresh-database ones).
#[derive(Debug, Args)]
pub struct DemoArgs {}

async fn activity(store: &dyn Store) -> Vec<Option<FeedEntity>> {
    let mut out = Vec::new();
    for (id, _) in headroom_sim::world::fixture::ACTORS {
        out.push(
            store
                .actor(i64::try_from(id).unwrap_or(0))
                .await
                .ok()
                .flatten(),
        );
    }
    for (id, _, _) in headroom_sim::world::fixture::REPOS {
        out.push(
            store
                .repository(i64::try_from(id).unwrap_or(0))
                .await
                .ok()
                .flatten(),
        );
    }
    out
}

/// Runs `headroom demo`.
pub async fn run(global: &crate::config::GlobalArgs, _args: DemoArgs) -> CommandResult {
    // `--db` keeps the demo's database for a look afterwards; in memory, nothing would be kept.
    if let Some(db) = global
        .db
        .as_deref()
        .filter(|db| crate::config::in_memory(db))
    {
        return Err(CliError::refused(&format!(
            "--db {db}: an in-memory database keeps nothing after the demo; leave --db out \
             for a throwaway database file"
        )));
    }
    let (db, temp_dir) = match global.db.clone().map(PathBuf::from) {
        Some(path) => {
            if path.exists() {
                return Err(CliError::refused(&format!(
                    "--db {}: the file exists; the demo's figures are those of a fresh database",
                    path.display()
                )));
            }
            (path, None)
        }
        None => {
            let dir = std::env::temp_dir().join(format!("headroom-demo-{}", new_run_id()));
            if let Err(e) = std::fs::create_dir_all(&dir) {
                return Err(CliError::failed(&format!(
                    "cannot create {}: {e}",
                    dir.display()
                )));
            }
            (dir.join("headroom.db"), Some(dir))
        }
    };
    let result = demo(&db).await;
    if let Some(dir) = temp_dir {
        let _ = std::fs::remove_dir_all(dir);
    } else {
        outln!();
        outln!("Database kept at {}", db.display());
    }
    result
}

async fn demo(db: &std::path::Path) -> CommandResult {
    let clock = TokioClock::system();
    let mut config = SimConfig::default().with_scenario(Scenario::Default);
    config.public_base_url = SIM_API.to_owned();
    let sim = Simulator::new(config, clock).map_err(|e| CliError::failed(&e))?;
    // The feed service sends one request at a time (the reference's request gate).
    let governor_config = GovernorConfig {
        ceiling: 1,
        ..GovernorConfig::default()
    };
    let governor =
        Governor::in_memory(governor_config, Arc::new(clock)).map_err(|e| CliError::failed(&e))?;
    let policy = UrlPolicy::for_api_url(SIM_API).map_err(|e| CliError::failed(&e))?;
    let parts = ClientParts::new(
        policy,
        governor,
        Arc::new(SimTransport::new(sim.clone())),
        clock,
    );
    let client = Client::new(parts);
    let Some(db_str) = db.to_str() else {
        return Err(CliError::refused(&"--db: the path is not UTF-8"));
    };
    let (store, state) = open_feed(db_str).await.map_err(|e| CliError::failed(&e))?;
    let poller = Poller {
        store: store.clone(),
        state: state.clone(),
        client,
        credential: None,
        clock,
        settings: PollSettings::default(),
    };
    outln!(
        "headroom demo: the simulator's `default` scenario, in-process; database {}",
        db.display()
    );
    outln!();
    outln!("== 1. headroom ingest");
    let first = poller.poll_once(false).await;
    match print_outcome(&first) {
        Ok(Outcome::Success) => {}
        stopped => return stopped,
    }
    outln!();
    print_summary(&poller).await;

    outln!();
    outln!("== 2. headroom enrich --limit 6   (search pacing off, as the reference's walkthrough)");
    let mut settings = EnrichSettings::default();
    settings.search.pacing = SignedDuration::ZERO;
    let enricher = Enricher::new(poller.clone(), settings);
    let report = match enricher
        .run(EnrichOptions {
            limit: Some(6),
            ..EnrichOptions::default()
        })
        .await
    {
        Ok(r) => r,
        Err(e) => return Err(CliError::failed(&e)),
    };
    crate::enrich_cmd::print_report(&report);
    outln!();
    crate::enrich_cmd::print_enrichment_state(&state).await;

    outln!();
    outln!("== 3. replay: headroom ingest --force, after the 60 s poll floor (simulated time)");
    let before = activity(store.as_ref()).await;
    let later = TokioClock::anchored_at(clock.now() + SignedDuration::from_secs(61));
    let replayer = Poller {
        clock: later,
        ..poller.clone()
    };
    let replay = replayer.poll_once(true).await;
    let replayed = print_outcome(&replay);
    let after = activity(store.as_ref()).await;
    let unchanged = before == after;
    outln!(
        "Entity activity unchanged:        {}",
        if unchanged { "yes" } else { "NO" }
    );
    outln!();
    print_summary(&replayer).await;
    let requests = sim.request_log();
    let count = |prefix: &str| {
        requests
            .iter()
            .filter(|r| r.path.starts_with(prefix))
            .count()
    };
    outln!();
    outln!(
        "Requests the simulator saw:       {} ({} /events, {} search, {} detail)",
        requests.len(),
        count("/events"),
        count("/search/"),
        count("/users/") + count("/repos/") + count("/repositories/")
    );
    store.close().await;
    let replay_ok = matches!(replay, Ok(PollOutcome::Completed { ref counts, .. }) if counts.duplicates_skipped == 4 && counts.events_created == 0);
    match replayed {
        // The replay is the demo's check: any trouble with it is a failed demo (exit 1).
        Err(e) => Err(e.into_failure()),
        Ok(Outcome::Success) if unchanged && replay_ok => Ok(Outcome::Success),
        Ok(_) => Ok(Outcome::Unsuccessful),
    }
}
