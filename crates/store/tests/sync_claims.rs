//! Claims of sync runs whose holder was killed (issue 34, item 9): a claim under the
//! [`ProcessMark`] of a process of this machine that no longer runs is free at once, for the
//! next claimer and for a worker looking for due runs; a live holder's claim, one from another
//! machine and one under a holder string that is no mark keep their TTL. The same on SQLite and
//! PostgreSQL.

#![allow(clippy::expect_used)]

mod common;

use common::Fixture;
use headroom_core::QuotaKey;
use headroom_core::clock::Timestamp;
use headroom_store::{NewSyncRun, ProcessMark, SyncRunStatus};

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

/// A run already running, claimed by `holder` from t(0) to t(120).
async fn running_claimed_by(fx: &Fixture, holder: &str) -> i64 {
    let mut run = fx
        .store
        .create_sync_run(&NewSyncRun {
            kind: "org".into(),
            target: "acme".into(),
            key: QuotaKey::user("api.github.com", "alice"),
            requested_stages: None,
            credential: None,
            created_at: t(0),
        })
        .await
        .expect("create");
    run.status = SyncRunStatus::Running;
    fx.store.save_sync_run(&run).await.expect("save");
    assert!(
        fx.store
            .claim_sync_run(run.id, holder, t(0), t(120))
            .await
            .expect("claim")
    );
    run.id
}

/// The mark of a process of this machine that has exited: a child, run and waited for.
fn dead_mark() -> ProcessMark {
    let me = ProcessMark::current().expect("Linux has /proc");
    let mut child = std::process::Command::new("true").spawn().expect("spawn");
    let pid = child.id();
    child.wait().expect("wait");
    ProcessMark { pid, ..me }
}

headroom_testkit::both_backends!(
    a_claim_of_a_killed_holder_is_free_at_once_and_others_keep_their_ttl,
);

async fn a_claim_of_a_killed_holder_is_free_at_once_and_others_keep_their_ttl(fx: &Fixture) {
    let s = &fx.store;
    let dead = dead_mark().to_string();
    let id = running_claimed_by(fx, &dead).await;
    // Due for a worker at once, long before the claim's end …
    let due = s.due_sync_runs(t(1), 10).await.expect("due");
    assert_eq!(due.iter().map(|r| r.id).collect::<Vec<_>>(), vec![id]);
    // … and claimed by the next process at once.
    let me = ProcessMark::current().expect("Linux has /proc").to_string();
    assert!(
        s.claim_sync_run(id, &me, t(1), t(121))
            .await
            .expect("claim")
    );
    let run = s.sync_run(id).await.expect("read").expect("the run");
    assert_eq!(run.claimed_by.as_deref(), Some(me.as_str()));
    assert_eq!(run.claim_expires_at, Some(t(121)));
    // A live holder (this process) keeps it: not due, not claimable by another.
    assert!(s.due_sync_runs(t(2), 10).await.expect("due").is_empty());
    assert!(
        !s.claim_sync_run(id, "worker-2", t(2), t(122))
            .await
            .expect("claim")
    );

    // Another machine's holder, and a holder that is no mark: their TTL holds.
    let elsewhere = ProcessMark {
        boot: "another-boot".to_owned(),
        ..dead_mark()
    }
    .to_string();
    for holder in [elsewhere.as_str(), "headroom:4242"] {
        let id = running_claimed_by(fx, holder).await;
        let due = s.due_sync_runs(t(1), 10).await.expect("due");
        assert!(due.iter().all(|r| r.id != id), "{holder}");
        assert!(
            !s.claim_sync_run(id, &me, t(1), t(121))
                .await
                .expect("claim"),
            "{holder}"
        );
        assert!(
            s.claim_sync_run(id, &me, t(120), t(240))
                .await
                .expect("claim"),
            "{holder}"
        );
    }
}
