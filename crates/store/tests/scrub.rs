//! `Store::scrub_diagnostics`: rows stored before a redaction pattern existed (planted here
//! with raw SQL, past the store's own masking) are found by a dry run without a change, masked
//! by an applied run, and an applied run leaves nothing for the next, on both backends.

#![allow(clippy::expect_used)]

mod common;

use common::Fixture;
use headroom_core::QuotaKey;
use headroom_core::clock::Timestamp;
use headroom_store::{Backend, CheckpointStatus, CheckpointUpdate, NewSyncRun};

const PASSWORD: &str = "hunter2hunter2";
const TOKEN: &str = "sekritsekrit123";

headroom_testkit::both_backends!(old_rows_holding_credentials_are_found_then_masked_once);

/// Runs `sql` on the fixture's database behind the store's back.
async fn raw(fx: &Fixture, sql: &str) {
    match fx.store.backend() {
        Backend::Sqlite => {
            let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", fx.target))
                .await
                .expect("open the file");
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
                .execute(&pool)
                .await
                .expect("raw SQL");
            pool.close().await;
        }
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&fx.target).await.expect("connect");
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
                .execute(&pool)
                .await
                .expect("raw SQL");
            pool.close().await;
        }
    }
}

async fn old_rows_holding_credentials_are_found_then_masked_once(fx: &Fixture) {
    let at = Timestamp::from_second(1_800_000_000).expect("valid");
    let run = fx
        .store
        .create_sync_run(&NewSyncRun {
            kind: "org".into(),
            target: "acme".into(),
            key: QuotaKey::user("api.github.com", "alice"),
            requested_stages: None,
            credential: None,
            created_at: at,
        })
        .await
        .expect("create a run");
    fx.store
        .set_checkpoint(&CheckpointUpdate {
            sync_run_id: run.id,
            stage: "repositories".into(),
            scope: String::new(),
            status: CheckpointStatus::Blocked,
            page_cursor: None,
            pages_added: 0,
            rows_added: 0,
            detail: Some("refused".into()),
            at,
        })
        .await
        .expect("a checkpoint");
    let json_cast = match fx.store.backend() {
        Backend::Sqlite => "",
        Backend::Postgres => "::jsonb",
    };
    raw(
        fx,
        &format!(
            "UPDATE sync_runs SET failure_reason = 'connect https://alice:{PASSWORD}@db.example/x failed', \
             summary_json = '{{\"detail\":\"Authorization: Bearer {TOKEN}\",\"pages\":3}}'{json_cast} \
             WHERE id = {id}; \
             UPDATE sync_checkpoints SET detail = 'GET /x?private_token={TOKEN} answered 401' \
             WHERE sync_run_id = {id};",
            id = run.id
        ),
    )
    .await;

    let dry = fx.store.scrub_diagnostics(false).await.expect("a dry run");
    assert!(!dry.applied);
    assert_eq!(dry.rows_with_secrets(), 3, "{dry:?}");
    assert_eq!(dry.rows_masked(), 0);
    let stored = fx
        .store
        .sync_run(run.id)
        .await
        .expect("read")
        .expect("the run");
    assert!(
        stored
            .failure_reason
            .as_deref()
            .is_some_and(|r| r.contains(PASSWORD)),
        "a dry run changed nothing"
    );

    let applied = fx
        .store
        .scrub_diagnostics(true)
        .await
        .expect("an applied run");
    assert_eq!(applied.rows_masked(), 3, "{applied:?}");
    let stored = fx
        .store
        .sync_run(run.id)
        .await
        .expect("read")
        .expect("the run");
    assert_eq!(
        stored.failure_reason.as_deref(),
        Some("connect https://[REDACTED]@db.example/x failed")
    );
    assert_eq!(
        stored.summary,
        Some(serde_json::json!({"detail": "Authorization: [REDACTED]", "pages": 3}))
    );
    let checkpoints = fx.store.checkpoints(run.id).await.expect("checkpoints");
    assert_eq!(
        checkpoints[0].detail.as_deref(),
        Some("GET /x?private_token=[REDACTED] answered 401")
    );

    let again = fx
        .store
        .scrub_diagnostics(true)
        .await
        .expect("a second run");
    assert_eq!(again.rows_with_secrets(), 0, "{again:?}");
    assert!(again.columns.iter().map(|c| c.rows_read).sum::<u64>() >= 3);
}
