//! Every provider's quota owner is stored as itself, on both databases: a LaunchDarkly
//! account, a Jira site and an OAuth app join the user, the installation and the IP (migration
//! 0019), so a credential's owner read back is the owner the provider counts.

#![allow(clippy::expect_used)]

mod common;

use common::Fixture;
use headroom_core::Subject;
use headroom_core::clock::Timestamp;
use headroom_store::{CredentialSeen, SubjectKind};

headroom_testkit::both_backends!(
    every_providers_owner_is_stored_and_read_back_as_itself,
    an_unknown_owner_kind_is_refused_by_the_schema,
);

fn at() -> Timestamp {
    Timestamp::from_second(1_800_000_000).expect("valid")
}

async fn every_providers_owner_is_stored_and_read_back_as_itself(fx: &Fixture) {
    let s = &fx.store;
    let owners = [
        (
            "app.launchdarkly.com",
            "1111111111111111",
            Subject::Account("acct-1".into()),
        ),
        (
            "acme.atlassian.net",
            "2222222222222222",
            Subject::Site("acme.atlassian.net".into()),
        ),
        (
            "api.atlassian.com",
            "3333333333333333",
            Subject::App("client-9".into()),
        ),
        (
            "api.linear.app",
            "4444444444444444",
            Subject::User("8f1c-user".into()),
        ),
    ];
    for (host, fingerprint, subject) in &owners {
        let (kind, id) = SubjectKind::of(subject);
        s.upsert_credential(&CredentialSeen {
            host: (*host).into(),
            fingerprint: (*fingerprint).into(),
            subject_kind: kind,
            owner_login: id.clone(),
            seen_at: at(),
        })
        .await
        .expect("stored");
        let back = s
            .credential(host, fingerprint)
            .await
            .expect("lookup")
            .expect("present");
        assert_eq!(&back.subject().expect("a known kind"), subject);
        assert_eq!(
            s.count_credentials_sharing(host, kind, &id)
                .await
                .expect("count"),
            1
        );
    }
    // The rebuilt table keeps its readable view.
    assert_eq!(s.count_rows("credentials").await.expect("count"), 4);
}

async fn an_unknown_owner_kind_is_refused_by_the_schema(fx: &Fixture) {
    let insert = "INSERT INTO credentials (host, fingerprint, subject_kind, owner_login, \
                  first_seen_at_ms, last_seen_at_ms) VALUES ('h', '5555555555555555', $1, 'x', 0, 0)";
    let attempt = |kind: &'static str| async move {
        if fx.target.starts_with("postgres") {
            let pool = sqlx::PgPool::connect(&fx.target).await.expect("connect");
            let done = sqlx::query(insert)
                .bind(kind)
                .execute(&pool)
                .await
                .map(|_| ());
            pool.close().await;
            done
        } else {
            let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", fx.target))
                .await
                .expect("connect");
            let done = sqlx::query(insert)
                .bind(kind)
                .execute(&pool)
                .await
                .map(|_| ());
            pool.close().await;
            done
        }
    };
    assert!(
        attempt("token").await.is_err(),
        "the CHECK still guards the kinds"
    );
    attempt("account")
        .await
        .expect("a LaunchDarkly account is a kind");
}
