//! The quota history on both backends: readings appended by several processes, the latest per
//! identity and bucket with the live processes' in flight summed, a bucket's downsampled
//! history, retention, keyset pages of sync runs, one identity's observations, and the
//! activity mark.

#![allow(clippy::expect_used)]

mod common;

use common::Fixture;
use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_core::quota::QuotaKey;
use headroom_core::signal::{Dimension, LimitReason, Provider};
use headroom_store::quota_history::{BucketKey, QuotaStores};
use headroom_store::{
    NewSyncRun, ObservationKind, QuotaReading, RateLimitObservation, SyncRunStatus,
    open_quota_history,
};

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

fn reading(subject: &str, bucket: &str, process: &str, remaining: u64, at: i64) -> QuotaReading {
    QuotaReading {
        provider: "github".into(),
        host: "api.github.com".into(),
        subject: subject.into(),
        bucket: bucket.into(),
        limit: Some(5000),
        remaining: Some(remaining),
        used: Some(5000 - remaining),
        reset_at: Some(t(3600)),
        in_flight: 2,
        waiting: 1,
        blocked_until: None,
        last_reason: None,
        process_id: process.into(),
        observed_at: t(at),
    }
}

/// A slot's start, lowest and highest remaining, readings and waits.
type Slot = (Timestamp, Option<u64>, Option<u64>, u64, u64);

async fn open(fx: &Fixture) -> QuotaStores {
    open_quota_history(&fx.target).await.expect("open")
}

async fn the_latest_reading_sums_in_flight_over_live_processes(fx: &Fixture) {
    let q = open(fx).await;
    assert!(
        q.history
            .latest_quota_readings(t(0))
            .await
            .expect("latest")
            .is_empty()
    );
    let recorder = &q.recorder;
    // Process "a" reported long ago (stale), "b" and "c" recently; "b" twice.
    recorder
        .record_quota_reading(&reading("alice", "core", "a", 4900, 0))
        .await
        .expect("record");
    recorder
        .record_quota_reading(&reading("alice", "core", "b", 4800, 100))
        .await
        .expect("record");
    recorder
        .record_quota_reading(&reading("alice", "core", "b", 4700, 110))
        .await
        .expect("record");
    let newest = recorder
        .record_quota_reading(&reading("alice", "core", "c", 4650, 120))
        .await
        .expect("record");
    recorder
        .record_quota_reading(&reading("alice", "graphql", "b", 4999, 50))
        .await
        .expect("record");
    recorder
        .record_quota_reading(&reading("bob", "core", "b", 10, 60))
        .await
        .expect("record");

    let latest = q
        .history
        .latest_quota_readings(t(90))
        .await
        .expect("latest");
    let keys: Vec<(&str, &str)> = latest
        .iter()
        .map(|b| {
            (
                b.latest.reading.subject.as_str(),
                b.latest.reading.bucket.as_str(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        vec![("alice", "core"), ("alice", "graphql"), ("bob", "core")]
    );
    let core = &latest[0];
    assert_eq!(core.latest.id, newest);
    assert_eq!(core.latest.reading.remaining, Some(4650));
    assert_eq!(core.latest.reading.reset_at, Some(t(3600)));
    // b's newest (2) + c's (2); a is stale and b's older reading does not count twice.
    assert_eq!(
        (core.in_flight, core.waiting, core.live_processes),
        (4, 2, 2)
    );
    // Nothing live on graphql: its reading stays, its in flight is zero.
    assert_eq!((latest[1].in_flight, latest[1].live_processes), (0, 0));
}

async fn history_is_downsampled_and_pruned(fx: &Fixture) {
    let q = open(fx).await;
    for (i, remaining) in [100u64, 90, 80, 70, 60, 50].iter().enumerate() {
        let mut r = reading("alice", "core", "a", *remaining, i as i64 * 30);
        if i == 3 {
            r.last_reason = Some("REST exhausted".into());
        }
        q.recorder.record_quota_reading(&r).await.expect("record");
    }
    q.recorder
        .record_quota_reading(&reading("alice", "search", "a", 1, 10))
        .await
        .expect("record");
    let key = BucketKey {
        host: "api.github.com",
        subject: "alice",
        bucket: "core",
    };
    let points = q
        .history
        .quota_history(key, t(0), SignedDuration::from_secs(60))
        .await
        .expect("history");
    let summary: Vec<Slot> = points
        .iter()
        .map(|p| (p.at, p.remaining_min, p.remaining_max, p.readings, p.waits))
        .collect();
    assert_eq!(
        summary,
        vec![
            (t(0), Some(90), Some(100), 2, 0),
            (t(60), Some(70), Some(80), 2, 1),
            (t(120), Some(50), Some(60), 2, 0),
        ]
    );
    assert_eq!(points[0].limit, Some(5000));
    let later = q
        .history
        .quota_history(key, t(61), SignedDuration::from_secs(3600))
        .await
        .expect("history");
    // Slots of a minute or more are read from the per-minute summaries: they start at
    // `since`'s minute, so the reading at t(60) counts.
    assert_eq!(later.len(), 1);
    assert_eq!((later[0].at, later[0].readings), (t(60), 4));
    assert_eq!(
        (
            later[0].remaining_min,
            later[0].remaining_max,
            later[0].waits
        ),
        (Some(50), Some(80), 1)
    );
    // Shorter slots read the readings themselves, from `since` exactly.
    let raw = q
        .history
        .quota_history(key, t(61), SignedDuration::from_secs(30))
        .await
        .expect("history");
    assert_eq!(raw.iter().map(|p| p.readings).sum::<u64>(), 3);
    assert_eq!(raw[0].at, t(61));
    assert!(
        q.history
            .quota_history(key, t(0), SignedDuration::ZERO)
            .await
            .is_err()
    );

    assert_eq!(
        q.recorder.prune_quota_readings(t(60)).await.expect("prune"),
        3
    );
    assert_eq!(
        q.store.count_rows("quota_readings").await.expect("count"),
        4
    );
    // The minutes wholly before the bound go with their readings: core's 08:00 and search's.
    assert_eq!(q.store.count_rows("quota_minutes").await.expect("count"), 2);
}

async fn sync_runs_page_newest_first_by_keyset(fx: &Fixture) {
    let q = open(fx).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let run = q
            .store
            .create_sync_run(&NewSyncRun {
                credential: None,
                kind: "org".into(),
                target: format!("org{i}"),
                key: QuotaKey::user("api.github.com", "alice"),
                requested_stages: (i == 0).then(|| vec!["org".to_owned()]),
                created_at: t(i),
            })
            .await
            .expect("create");
        ids.push(run.id);
    }
    let mut hibernating = q.store.sync_run(ids[4]).await.expect("read").expect("run");
    hibernating.status = SyncRunStatus::Hibernating;
    hibernating.not_before = Some(t(900));
    hibernating.summary = Some(serde_json::json!({"stages": {"org": {"rows": 3}}}));
    q.store.save_sync_run(&hibernating).await.expect("save");

    let first = q.history.sync_runs_page(None, 2).await.expect("page");
    assert_eq!(
        first.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![ids[4], ids[3]]
    );
    assert_eq!(
        first[0],
        q.store.sync_run(ids[4]).await.expect("read").expect("run")
    );
    let next = q
        .history
        .sync_runs_page(Some(ids[3]), 10)
        .await
        .expect("page");
    assert_eq!(
        next.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![ids[2], ids[1], ids[0]]
    );
    assert_eq!(
        next[2],
        q.store.sync_run(ids[0]).await.expect("read").expect("run")
    );
}

async fn observations_of_one_identity_and_the_activity_mark(fx: &Fixture) {
    let q = open(fx).await;
    let empty = q.history.activity_mark().await.expect("mark");
    assert_eq!(empty, Default::default());
    let key = |login: &str| QuotaKey::user("api.github.com", login);
    for (login, at) in [("alice", 10), ("alice", 20), ("bob", 15), ("alice", 1)] {
        q.store
            .record_rate_limit_observation(&RateLimitObservation {
                provider: Provider::GitHub,
                key: key(login),
                credential_fingerprint: None,
                sync_run_id: None,
                bucket: Some("core".into()),
                route_family: Some("rest".into()),
                route_family_attribution: None,
                dimension: Some(Dimension::RestCore),
                reason: Some(LimitReason::Secondary),
                retry_after: Some(SignedDuration::from_secs(60)),
                reset_at: None,
                limit: None,
                remaining: None,
                used: None,
                request_id: Some("R1".into()),
                observed_at: t(at),
                event_kind: Some(ObservationKind::Refused),
                wait_reason: None,
            })
            .await
            .expect("record");
    }
    let subject = headroom_store::subject_label(&key("alice").subject);
    let seen = q
        .history
        .observations_of("api.github.com", &subject, t(5), 10)
        .await
        .expect("observations");
    assert_eq!(
        seen.iter().map(|o| o.observed_at).collect::<Vec<_>>(),
        vec![t(20), t(10)]
    );
    assert_eq!(seen[0].retry_after_secs, Some(60));
    assert_eq!(seen[0].reason.as_deref(), Some("secondary"));

    let id = q
        .recorder
        .record_quota_reading(&reading("alice", "core", "a", 5, 30))
        .await
        .expect("record");
    let mark = q.history.activity_mark().await.expect("mark");
    assert_eq!(mark.quota_reading, Some(id));
    assert!(mark.observation.is_some());
    assert_eq!(mark.sync_run_updated, None);
}

headroom_testkit::both_backends!(
    the_latest_reading_sums_in_flight_over_live_processes,
    history_is_downsampled_and_pruned,
    sync_runs_page_newest_first_by_keyset,
    observations_of_one_identity_and_the_activity_mark,
);
