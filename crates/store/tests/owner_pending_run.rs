//! A sync run created while its credential's owner could not be learned (issue 36, item 4:
//! the quota spent, `GET /user` held back): bound to the credential with its owner pending,
//! it takes the owner — as its binding and as its subject — when that credential resumes it,
//! once, and never from another credential; the same on SQLite and PostgreSQL.

#![allow(clippy::expect_used)]

mod common;

use common::Fixture;
use headroom_core::clock::Timestamp;
use headroom_core::{QuotaKey, Subject};
use headroom_store::{BindingChange, CredentialUsed, NewSyncRun};

const MINE: &str = "0123456789abcdef";
const OTHER: &str = "fedcba9876543210";

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

headroom_testkit::both_backends!(an_owner_pending_run_takes_its_owner_as_its_subject_once,);

async fn an_owner_pending_run_takes_its_owner_as_its_subject_once(fx: &Fixture) {
    let login = CredentialUsed::pending_login(MINE);
    let label = format!("user:{login}");
    let run = fx
        .store
        .create_sync_run(&NewSyncRun {
            kind: "org".into(),
            target: "acme".into(),
            key: QuotaKey::new(
                headroom_core::Provider::GitHub,
                "api.github.com",
                Subject::User(login.into()),
            ),
            requested_stages: None,
            credential: Some(CredentialUsed {
                fingerprint: Some(MINE.into()),
                owner: label.clone(),
            }),
            created_at: t(0),
        })
        .await
        .expect("create");
    assert_eq!(run.subject, label);
    assert_eq!(run.credential.owner_pending(), Some(MINE));

    // Another credential's adoption changes nothing.
    let other = BindingChange::Adopt(CredentialUsed {
        fingerprint: Some(OTHER.into()),
        owner: "user:alice".into(),
    });
    assert!(
        !fx.store
            .bind_sync_run_credential(run.id, &other)
            .await
            .expect("adopt by another credential")
    );
    let mine = BindingChange::Adopt(CredentialUsed {
        fingerprint: Some(MINE.into()),
        owner: "user:alice".into(),
    });
    assert!(
        fx.store
            .bind_sync_run_credential(run.id, &mine)
            .await
            .expect("adopt")
    );
    let stored = fx.store.sync_run(run.id).await.expect("read").expect("run");
    assert_eq!(stored.subject, "user:alice");
    assert_eq!(stored.credential.owner.as_deref(), Some("user:alice"));
    assert_eq!(stored.credential.fingerprint.as_deref(), Some(MINE));
    assert_eq!(stored.credential.owner_pending(), None);
    assert_eq!(stored.credential.rebind_count, 0);
    // Once: the owner is known now, and stays.
    let bob = BindingChange::Adopt(CredentialUsed {
        fingerprint: Some(MINE.into()),
        owner: "user:bob".into(),
    });
    assert!(
        !fx.store
            .bind_sync_run_credential(run.id, &bob)
            .await
            .expect("a second adoption")
    );
    let key = QuotaKey::user("api.github.com", "alice");
    let found = fx
        .store
        .unfinished_sync_run("org", "acme", &key)
        .await
        .expect("unfinished");
    assert_eq!(found.map(|r| r.id), Some(run.id), "it is alice's run now");
}
