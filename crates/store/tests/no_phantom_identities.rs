//! Issue 36, item 3, on both backends: readings an older version recorded under a credential's
//! provisional key (`user:credential:FINGERPRINT`, before its owner was known) never list a
//! second identity beside the owner's once the credential's owner is stored; a credential
//! whose owner was never learned still shows what was read under it.

#![allow(clippy::expect_used)]

mod common;

use common::Fixture;
use headroom_core::clock::Timestamp;
use headroom_store::{CredentialSeen, QuotaReading, SubjectKind, open_quota_history};

const FINGERPRINT: &str = "628b0c1d2e3f4a5b";
const UNKNOWN: &str = "99aa88bb77cc66dd";

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

fn reading(subject: &str, remaining: u64, at: i64) -> QuotaReading {
    QuotaReading {
        provider: "github".into(),
        host: "127.0.0.1".into(),
        subject: subject.into(),
        bucket: "core".into(),
        limit: Some(400),
        remaining: Some(remaining),
        used: Some(400 - remaining),
        reset_at: Some(t(3600)),
        in_flight: 0,
        waiting: 0,
        blocked_until: None,
        last_reason: None,
        process_id: "p1".into(),
        observed_at: t(at),
    }
}

async fn a_credential_keyed_identity_never_lists_beside_its_stored_owner(fx: &Fixture) {
    let q = open_quota_history(&fx.target).await.expect("open");
    let phantom = format!("user:credential:{FINGERPRINT}");
    let unowned = format!("user:credential:{UNKNOWN}");
    for r in [
        reading(&phantom, 399, 0),
        reading("user:alice", 398, 1),
        reading(&unowned, 390, 2),
    ] {
        q.recorder.record_quota_reading(&r).await.expect("record");
    }
    fx.store
        .upsert_credential(&CredentialSeen {
            host: "127.0.0.1".into(),
            fingerprint: FINGERPRINT.into(),
            subject_kind: SubjectKind::User,
            owner_login: "alice".into(),
            seen_at: t(1),
        })
        .await
        .expect("owner stored");
    // The same fingerprint's owner on another host says nothing about this host's rows.
    fx.store
        .upsert_credential(&CredentialSeen {
            host: "ghe.example.com".into(),
            fingerprint: UNKNOWN.into(),
            subject_kind: SubjectKind::User,
            owner_login: "bob".into(),
            seen_at: t(1),
        })
        .await
        .expect("another host's credential");

    let latest = q.history.latest_quota_readings(t(0)).await.expect("latest");
    let subjects: Vec<&str> = latest
        .iter()
        .map(|b| b.latest.reading.subject.as_str())
        .collect();
    assert_eq!(subjects, vec!["user:alice", unowned.as_str()]);
}

headroom_testkit::both_backends!(a_credential_keyed_identity_never_lists_beside_its_stored_owner);
