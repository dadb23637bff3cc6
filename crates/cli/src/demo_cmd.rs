//! `headroom demo [--db PATH]`: the whole feed flow offline. The simulator runs in-process
//! with the `default` scenario; a fresh SQLite database in a temporary folder (unless `--db`)
//! receives one ingest, one enrichment run, and — after GitHub's 60 s poll floor has passed in
//! simulated time — a forced replay that absorbs the same page as duplicates.

use std::path::PathBuf;
use std::process::ExitCode;
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
pub async fn run(global: &crate::config::GlobalArgs, _args: DemoArgs) -> ExitCode {
    let (db, temp_dir) = match global.db.clone().map(PathBuf::from) {
        Some(path) => {
            if path.exists() {
                return crate::refuse(&format!(
                    "--db {}: the file exists; the demo's figures are those of a fresh database",
                    path.display()
                ));
            }
            (path, None)
        }
        None => {
            let dir = std::env::temp_dir().join(format!("headroom-demo-{}", new_run_id()));
            if let Err(e) = std::fs::create_dir_all(&dir) {
                return crate::failed(&format!("cannot create {}: {e}", dir.display()));
            }
            (dir.join("headroom.db"), Some(dir))
        }
    };
    let code = demo(&db).await;
    if let Some(dir) = temp_dir {
        let _ = std::fs::remove_dir_all(dir);
    } else {
        outln!();
        outln!("Database kept at {}", db.display());
    }
    code
}

async fn demo(db: &std::path::Path) -> ExitCode {
    let clock = TokioClock::system();
    let mut config = SimConfig::default().with_scenario(Scenario::Default);
    config.public_base_url = SIM_API.to_owned();
    let sim = match Simulator::new(config, clock) {
        Ok(s) => s,
        Err(e) => return crate::failed(&e),
    };
    // The feed service sends one request at a time (the reference's request gate).
    let governor_config = GovernorConfig {
        ceiling: 1,
        ..GovernorConfig::default()
    };
    let governor = match Governor::in_memory(governor_config, Arc::new(clock)) {
        Ok(g) => g,
        Err(e) => return crate::failed(&e),
    };
    let policy = match UrlPolicy::for_api_url(SIM_API) {
        Ok(p) => p,
        Err(e) => return crate::failed(&e),
    };
    let parts = ClientParts::new(
        policy,
        governor,
        Arc::new(SimTransport::new(sim.clone())),
        clock,
    );
    let client = Client::new(parts);
    let Some(db_str) = db.to_str() else {
        return crate::refuse(&"--db: the path is not UTF-8");
    };
    let (store, state) = match open_feed(db_str).await {
        Ok(s) => s,
        Err(e) => return crate::failed(&e),
    };
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
    let code = print_outcome(&first);
    if code != ExitCode::SUCCESS {
        return code;
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
        Err(e) => return crate::failed(&e),
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
    let code = print_outcome(&replay);
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
    if code != ExitCode::SUCCESS || !unchanged || !replay_ok {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
