//! Issue 36, item 8, on both backends: what headroom spent is kept per identity, bucket,
//! provider window (named by its reset), route family and sync run, so "who spends it" has an
//! answer; the first window with counted spend is known, and retention prunes the rows.

#![allow(clippy::expect_used)]

mod common;

use common::Fixture;
use headroom_core::clock::Timestamp;
use headroom_store::open_quota_history;
use headroom_store::quota_history::spend::{SpendRecord, SpendTotal};

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

fn spend(
    subject: &str,
    bucket: &str,
    family: &str,
    run: Option<i64>,
    reset: i64,
    units: u64,
    at: i64,
) -> SpendRecord {
    SpendRecord {
        host: "api.github.com".into(),
        subject: subject.into(),
        bucket: bucket.into(),
        route_family: family.into(),
        sync_run_id: run,
        reset_at: t(reset),
        requests: 1,
        units,
        at: t(at),
    }
}

fn key(total: &SpendTotal) -> (&str, &str, &str, Option<i64>, Timestamp, u64, u64) {
    (
        total.subject.as_str(),
        total.bucket.as_str(),
        total.route_family.as_str(),
        total.sync_run_id,
        total.reset_at,
        total.requests,
        total.units,
    )
}

async fn spend_is_kept_per_identity_window_family_and_sync_run(fx: &Fixture) {
    let q = open_quota_history(&fx.target).await.expect("open");
    let r = &q.recorder;
    let writes = [
        // An earlier window: the feed only.
        spend("user:alice", "core", "feed_poll", None, 3600, 1, 100),
        // This window: run 7 twice on one family and once on another, run 8, the feed, a
        // probe, an authorized 304 (no units), GraphQL points.
        spend("user:alice", "core", "issues", Some(7), 7200, 1, 3700),
        spend("user:alice", "core", "issues", Some(7), 7200, 1, 3800),
        spend(
            "user:alice",
            "core",
            "workflow_runs",
            Some(7),
            7200,
            1,
            3900,
        ),
        spend("user:alice", "core", "issues", Some(8), 7200, 1, 4000),
        spend("user:alice", "core", "feed_poll", None, 7200, 1, 4100),
        spend("user:alice", "core", "feed_poll", None, 7200, 0, 4150),
        spend("user:alice", "core", "quota_probe", None, 7200, 1, 4200),
        spend("user:alice", "graphql", "issues", Some(7), 7200, 40, 4300),
        spend("user:bob", "core", "feed_poll", None, 7200, 1, 4400),
    ];
    for w in &writes {
        r.record_spend(w).await.expect("record");
    }
    assert!(
        r.record_spend(&spend("user:alice", "core", "issues", Some(-1), 7200, 1, 1))
            .await
            .is_err(),
        "a run id below 1 is refused (0 stands for none)"
    );

    let totals = q.history.spend_totals(t(7200), t(7201)).await.expect("sum");
    let got: Vec<_> = totals.iter().map(key).collect();
    assert_eq!(
        got,
        vec![
            ("user:alice", "core", "feed_poll", None, t(7200), 2, 1),
            ("user:alice", "core", "issues", Some(7), t(7200), 2, 2),
            ("user:alice", "core", "issues", Some(8), t(7200), 1, 1),
            ("user:alice", "core", "quota_probe", None, t(7200), 1, 1),
            (
                "user:alice",
                "core",
                "workflow_runs",
                Some(7),
                t(7200),
                1,
                1
            ),
            ("user:alice", "graphql", "issues", Some(7), t(7200), 1, 40),
            ("user:bob", "core", "feed_poll", None, t(7200), 1, 1),
        ]
    );
    let feed = &totals[0];
    assert_eq!(
        (feed.first_recorded_at, feed.last_recorded_at),
        (t(4100), t(4150))
    );
    // The earlier window is another window.
    let all = q.history.spend_totals(t(0), t(10_000)).await.expect("sum");
    assert_eq!(all.len(), totals.len() + 1);

    let starts = q.history.spend_starts().await.expect("starts");
    let got: Vec<_> = starts
        .iter()
        .map(|s| {
            (
                s.subject.as_str(),
                s.bucket.as_str(),
                s.first_reset_at,
                s.first_recorded_at,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("user:alice", "core", t(3600), t(100)),
            ("user:alice", "graphql", t(7200), t(4300)),
            ("user:bob", "core", t(7200), t(4400)),
        ]
    );

    // Retention: rows last written before the instant go.
    assert_eq!(r.prune_spend(t(3700)).await.expect("prune"), 1);
    assert_eq!(
        q.history.spend_totals(t(0), t(10_000)).await.expect("sum"),
        all[1..].to_vec()
    );
}

headroom_testkit::both_backends!(spend_is_kept_per_identity_window_family_and_sync_run);
