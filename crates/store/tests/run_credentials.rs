//! Which credential a sync run is bound to, and which one a feed ingestion run spent: stamped
//! at creation, adopted once, rebound only from the credential the rebind expected, the same
//! on SQLite and PostgreSQL.

#![allow(clippy::expect_used)]

mod common;

use common::Fixture;
use headroom_core::QuotaKey;
use headroom_core::clock::Timestamp;
use headroom_store::{BindingChange, CredentialBinding, CredentialUsed, NewSyncRun, StoreError};

const OLD: &str = "0123456789abcdef";
const NEW: &str = "fedcba9876543210";

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

fn new_run(credential: Option<CredentialUsed>) -> NewSyncRun {
    NewSyncRun {
        kind: "org".into(),
        target: "acme".into(),
        key: QuotaKey::user("api.github.com", "alice"),
        requested_stages: None,
        credential,
        created_at: t(0),
    }
}

fn alice(fingerprint: Option<&str>) -> CredentialUsed {
    CredentialUsed {
        fingerprint: fingerprint.map(str::to_owned),
        owner: "user:alice".into(),
    }
}

headroom_testkit::both_backends!(
    a_run_is_stamped_when_created_and_rebound_only_from_its_credential,
    an_unbound_run_is_adopted_once,
    a_run_refuses_a_credential_of_another_owner_or_a_token,
    an_ingestion_run_records_its_credential,
);

async fn a_run_is_stamped_when_created_and_rebound_only_from_its_credential(fx: &Fixture) {
    let run = fx
        .store
        .create_sync_run(&new_run(Some(alice(Some(OLD)))))
        .await
        .expect("create");
    assert_eq!(
        run.credential,
        CredentialBinding {
            fingerprint: Some(OLD.into()),
            owner: Some("user:alice".into()),
            ..CredentialBinding::default()
        }
    );
    // A rebind that expects another credential than the run's changes nothing.
    let stale = BindingChange::Rebind {
        from: Some(NEW.into()),
        to: Some(OLD.into()),
        at: t(5),
    };
    assert!(
        !fx.store
            .bind_sync_run_credential(run.id, &stale)
            .await
            .expect("stale rebind")
    );
    let rebind = BindingChange::Rebind {
        from: Some(OLD.into()),
        to: Some(NEW.into()),
        at: t(10),
    };
    assert!(
        fx.store
            .bind_sync_run_credential(run.id, &rebind)
            .await
            .expect("rebind")
    );
    // Adoption is only for a run with no binding.
    assert!(
        !fx.store
            .bind_sync_run_credential(run.id, &BindingChange::Adopt(alice(Some(OLD))))
            .await
            .expect("adopt a bound run")
    );
    let mut stored = fx.store.sync_run(run.id).await.expect("read").expect("run");
    assert_eq!(
        stored.credential,
        CredentialBinding {
            fingerprint: Some(NEW.into()),
            owner: Some("user:alice".into()),
            rebound_from: Some(OLD.into()),
            rebound_at: Some(t(10)),
            rebind_count: 1,
        }
    );
    // Saving the run's mutable fields leaves its binding alone.
    stored.credential = CredentialBinding::default();
    stored.updated_at = t(20);
    fx.store.save_sync_run(&stored).await.expect("save");
    let again = fx.store.sync_run(run.id).await.expect("read").expect("run");
    assert_eq!(again.credential.fingerprint.as_deref(), Some(NEW));
    assert_eq!(again.credential.rebind_count, 1);
}

async fn an_unbound_run_is_adopted_once(fx: &Fixture) {
    let run = fx
        .store
        .create_sync_run(&new_run(None))
        .await
        .expect("create");
    assert_eq!(run.credential, CredentialBinding::default());
    let adopt = BindingChange::Adopt(alice(Some(OLD)));
    assert!(
        fx.store
            .bind_sync_run_credential(run.id, &adopt)
            .await
            .expect("adopt")
    );
    let second = BindingChange::Adopt(alice(Some(NEW)));
    assert!(
        !fx.store
            .bind_sync_run_credential(run.id, &second)
            .await
            .expect("second adoption")
    );
    let stored = fx.store.sync_run(run.id).await.expect("read").expect("run");
    assert_eq!(stored.credential.fingerprint.as_deref(), Some(OLD));
    assert_eq!(stored.credential.owner.as_deref(), Some("user:alice"));
    assert_eq!(stored.credential.rebind_count, 0);

    // An unauthenticated run is bound too: no fingerprint, its IP as owner.
    let anonymous = fx
        .store
        .create_sync_run(&NewSyncRun {
            key: QuotaKey::ip("api.github.com", "203.0.113.9"),
            ..new_run(Some(CredentialUsed {
                fingerprint: None,
                owner: "ip:203.0.113.9".into(),
            }))
        })
        .await
        .expect("create unauthenticated");
    assert_eq!(anonymous.credential.fingerprint, None);
    assert_eq!(
        anonymous.credential.owner.as_deref(),
        Some("ip:203.0.113.9")
    );
}

async fn a_run_refuses_a_credential_of_another_owner_or_a_token(fx: &Fixture) {
    let bob = CredentialUsed {
        fingerprint: Some(OLD.into()),
        owner: "user:bob".into(),
    };
    match fx.store.create_sync_run(&new_run(Some(bob))).await {
        Err(StoreError::Invalid { field, problem }) => {
            assert_eq!(field, "credential");
            assert!(problem.contains("user:bob"), "{problem}");
        }
        other => panic!("another owner's credential was accepted: {other:?}"),
    }
    let token = alice(Some("ghp_0123456789abcdefghij"));
    assert!(matches!(
        fx.store.create_sync_run(&new_run(Some(token))).await,
        Err(StoreError::Invalid { .. })
    ));
    assert!(
        fx.store
            .due_sync_runs(t(100), 10)
            .await
            .expect("due")
            .is_empty(),
        "a refused run was created anyway"
    );
}

async fn an_ingestion_run_records_its_credential(fx: &Fixture) {
    let (store, state) = headroom_store::feed_state::open_feed(&fx.target)
        .await
        .expect("feed state");
    let source = state
        .ensure_event_source("github_public_events", "/events", t(0))
        .await
        .expect("source");
    let used = alice(Some(OLD));
    let id = state
        .start_ingestion_run("run-1", Some(source.id), "feed", Some(&used), t(1))
        .await
        .expect("start");
    let anonymous = CredentialUsed {
        fingerprint: None,
        owner: "ip:203.0.113.9".into(),
    };
    let other = state
        .start_ingestion_run("run-2", Some(source.id), "feed", Some(&anonymous), t(2))
        .await
        .expect("start unauthenticated");
    store.close().await;
    let rows = credential_columns(fx).await;
    assert_eq!(
        rows,
        vec![
            (id, Some(OLD.to_owned()), Some("user:alice".to_owned())),
            (other, None, Some("ip:203.0.113.9".to_owned())),
        ]
    );
}

/// `(id, credential_fingerprint, credential_owner)` of every ingestion run, read by hand: the
/// store has no query for them (they are for people reading the database).
async fn credential_columns(fx: &Fixture) -> Vec<(i64, Option<String>, Option<String>)> {
    const SQL: &str = "SELECT id, credential_fingerprint, credential_owner FROM ingestion_runs \
        ORDER BY id";
    if fx.target.starts_with("postgres") {
        let pool = sqlx::PgPool::connect(&fx.target).await.expect("connect");
        sqlx::query_as(SQL).fetch_all(&pool).await.expect("rows")
    } else {
        let url = format!("sqlite://{}", fx.target);
        let pool = sqlx::SqlitePool::connect(&url).await.expect("connect");
        sqlx::query_as(SQL).fetch_all(&pool).await.expect("rows")
    }
}
