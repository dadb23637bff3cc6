//! The runner on both stores: a run interrupted in the middle of stage 4 and resumed, then a
//! second run of the same organization, on SQLite and on PostgreSQL. The resumed run finishes;
//! the second run finds nothing new (the same rows, no duplicates) and fetches no commit's
//! files again.

#![allow(clippy::expect_used, clippy::unwrap_used)]

#[path = "../../store/tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::Fixture;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::GovernorConfig;
use headroom_core::{Governor, QuotaKey, Subject};
use headroom_github::org::{self, names};
use headroom_http::sinks::{CredentialRegistry, MemoryCredentials};
use headroom_http::transport::SimTransport;
use headroom_http::{Client, ClientParts, Credential, UrlPolicy};
use headroom_sim::{SimConfig, Simulator, TokenSpec};
use headroom_store::{NewSyncRun, Store};
use headroom_sync::{ProgressEvent, ProgressSink, RunOutcome, Runner, RunnerConfig};
use tokio::sync::Notify;

const API: &str = "http://127.0.0.1:7000";
const TOKEN: &str = "ghp_backendstoken0000000000000000000001";

struct StopAt(Arc<Notify>);

impl ProgressSink for StopAt {
    fn event(&self, event: &ProgressEvent) {
        if let ProgressEvent::Page { stage, .. } = event
            && stage == names::ISSUE_COMMENTS
        {
            self.0.notify_one();
        }
    }
}

async fn counts(store: &dyn Store) -> BTreeMap<&'static str, u64> {
    let mut out = BTreeMap::new();
    for t in [
        "organizations",
        "organization_members",
        "teams",
        "repositories",
        "issues",
        "issue_comments",
        "pull_requests",
        "pull_request_commits",
        "commit_files",
        "workflow_runs",
        "workflow_jobs",
        "check_runs",
        "branches",
    ] {
        out.insert(t, store.count_rows(t).await.expect("count"));
    }
    out
}

async fn resumed_then_repeated(fx: &Fixture) {
    let clock = TokioClock::anchored_at(Timestamp::from_second(1_800_000_000).expect("valid"));
    let mut config = SimConfig::default()
        .with_org("acme", 6)
        .with_token(TokenSpec::user(TOKEN, "alice"))
        .with_seed(11);
    config.public_base_url = API.to_owned();
    let sim = Simulator::new(config, clock).expect("simulator");
    let governor =
        Governor::in_memory(GovernorConfig::default(), Arc::new(clock)).expect("governor");
    let credentials = Arc::new(MemoryCredentials::default());
    credentials
        .record(
            "127.0.0.1",
            Credential::new(TOKEN).fingerprint(),
            &Subject::User("alice".into()),
        )
        .await;
    let mut parts = ClientParts::new(
        UrlPolicy::for_api_url(API).expect("loopback"),
        governor,
        Arc::new(SimTransport::new(sim.clone())),
        clock,
    );
    parts.credentials = credentials;
    let client = Client::new(parts);
    let runner = |progress: Arc<dyn ProgressSink>| {
        Runner::new(
            org::stages(),
            Some(org::REPOSITORY_SOURCE),
            fx.store.clone(),
            client.clone(),
            Some(Credential::new(TOKEN)),
            clock,
            RunnerConfig {
                inline_wait: SignedDuration::from_secs(90),
                ..RunnerConfig::default()
            },
        )
        .expect("graph")
        .with_progress(progress)
    };
    let new_run = || async {
        fx.store
            .create_sync_run(&NewSyncRun {
                credential: None,
                kind: "org".into(),
                target: "acme".into(),
                key: QuotaKey::user("127.0.0.1", "alice"),
                requested_stages: None,
                created_at: clock.now(),
            })
            .await
            .expect("run")
            .id
    };

    let first = new_run().await;
    let stop = Arc::new(Notify::new());
    let interrupted = runner(Arc::new(StopAt(stop.clone())));
    tokio::select! {
        outcome = interrupted.run(first) => panic!("ended before stage 4: {outcome:?}"),
        () = stop.notified() => {}
    }
    drop(interrupted);
    let outcome = runner(Arc::new(headroom_sync::NoProgress))
        .run(first)
        .await
        .expect("resume");
    assert!(matches!(outcome, RunOutcome::Done { .. }), "{outcome:?}");
    let after_first = counts(fx.store.as_ref()).await;
    assert_eq!(after_first["repositories"], 6);
    assert!(after_first["commit_files"] > 0);

    let log_before = sim.request_log().len();
    let second = new_run().await;
    let outcome = runner(Arc::new(headroom_sync::NoProgress))
        .run(second)
        .await
        .expect("second run");
    assert!(matches!(outcome, RunOutcome::Done { .. }), "{outcome:?}");
    assert_eq!(
        counts(fx.store.as_ref()).await,
        after_first,
        "no duplicates"
    );
    let files_again = sim.request_log()[log_before..]
        .iter()
        .filter(|e| {
            let segs: Vec<&str> = e.path.split('/').collect();
            matches!(segs.as_slice(), ["", "repos", _, _, "commits", _])
        })
        .count();
    assert_eq!(files_again, 0, "commit files are fetched once");
    assert_eq!(sim.count_status(403), 0);
}

headroom_testkit::both_backends!(resumed_then_repeated);
