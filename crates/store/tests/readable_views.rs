//! The database reads well by hand: every table with instants has a `<table>_readable` view
//! carrying each `*_at_ms` column again as ISO 8601 UTC text (docs/SCHEMA.md), on both backends.
//! A migration that gives a table an instant its view lacks fails here.

#![allow(clippy::expect_used)]

mod common;

#[path = "common/push.rs"]
mod push;

use common::Fixture;
use headroom_core::clock::Timestamp;
use headroom_store::EventOrigin;

/// A connection of the fixture's own backend, for catalog queries the store does not offer.
enum Db {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

async fn connect(fx: &Fixture) -> Db {
    if fx.target.starts_with("postgres") {
        Db::Postgres(sqlx::PgPool::connect(&fx.target).await.expect("connect"))
    } else {
        let url = format!("sqlite://{}", fx.target);
        Db::Sqlite(sqlx::SqlitePool::connect(&url).await.expect("connect"))
    }
}

/// The columns of `table` (or view), in order.
async fn columns(db: &Db, table: &str) -> Vec<String> {
    match db {
        Db::Sqlite(pool) => {
            sqlx::query_scalar("SELECT name FROM pragma_table_info(?) ORDER BY cid")
                .bind(table)
                .fetch_all(pool)
                .await
                .expect("columns")
        }
        Db::Postgres(pool) => sqlx::query_scalar(
            "SELECT CAST(column_name AS TEXT) FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position",
        )
        .bind(table)
        .fetch_all(pool)
        .await
        .expect("columns"),
    }
}

async fn text(db: &Db, sql: &'static str) -> Option<String> {
    match db {
        Db::Sqlite(pool) => sqlx::query_scalar(sql).fetch_one(pool).await,
        Db::Postgres(pool) => sqlx::query_scalar(sql).fetch_one(pool).await,
    }
    .expect("query")
}

async fn every_instant_has_its_readable_twin(fx: &Fixture) {
    let db = connect(fx).await;
    let mut views = 0;
    let mut viewed = Vec::new();
    for table in fx.store.table_names().await.expect("tables") {
        let cols = columns(&db, &table).await;
        let instants: Vec<&String> = cols.iter().filter(|c| c.ends_with("_at_ms")).collect();
        if instants.is_empty() {
            continue;
        }
        views += 1;
        viewed.push(table.clone());
        let view = columns(&db, &format!("{table}_readable")).await;
        for c in &cols {
            assert!(view.contains(c), "{table}_readable lacks {c}");
        }
        for c in instants {
            let readable = &c[..c.len() - 3];
            assert!(
                view.iter().any(|v| v == readable),
                "{table}_readable lacks {readable}"
            );
        }
    }
    assert!(views >= 20, "views for the tables with instants: {views}");
    // LaunchDarkly's tables keep every instant (`collected_at_ms` at least): each has its view.
    for table in headroom_store::TABLES
        .iter()
        .filter(|t| t.starts_with("ld_"))
    {
        assert!(viewed.iter().any(|v| v == table), "{table} has no instants");
    }

    // The text is the instant: an event at 2023-01-05T00:37:10.000Z (1672879030000 ms).
    let occurred = Timestamp::from_millisecond(1_672_879_030_000).expect("valid");
    let event = push::push_event(1, 7, 70, occurred, occurred, EventOrigin::Feed);
    let mut tx = fx.store.begin().await.expect("begin");
    assert!(tx.write_push_event(&event).await.expect("write"));
    tx.commit().await.expect("commit");
    assert_eq!(
        text(&db, "SELECT occurred_at FROM push_events_readable").await,
        Some("2023-01-05T00:37:10.000Z".to_owned())
    );
    assert_eq!(
        text(&db, "SELECT next_retry_at FROM actors_readable").await,
        None,
        "no instant reads as no text"
    );
}

headroom_testkit::both_backends!(every_instant_has_its_readable_twin);
