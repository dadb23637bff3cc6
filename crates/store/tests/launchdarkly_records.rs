//! The LaunchDarkly sync tables (`ld_*`), the same checks on SQLite and PostgreSQL: every
//! record is an idempotent upsert on its identity (stored once: a second write of the same key
//! replaces it), identities are per account, lists keep their order and flags their booleans,
//! the audit watermark is the newest stored entry's date per account, and the readable views
//! show the instants as text.

#![allow(clippy::expect_used)]

mod common;

use common::Fixture;
use headroom_core::clock::Timestamp;
use headroom_store::launchdarkly as ld;
use headroom_store::{Record, TABLES};
use serde_json::{Value, json};

headroom_testkit::both_backends!(
    every_launchdarkly_record_written_twice_is_one_row_with_the_second_values,
    the_same_keys_in_two_accounts_are_two_rows,
    launchdarkly_lists_keep_their_order_and_flags_their_booleans,
    the_audit_watermark_is_the_newest_stored_entrys_date_per_account,
    launchdarkly_readable_views_show_instants_as_text,
    a_page_written_at_once_is_stored_as_written_one_by_one,
);

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

/// Every `ld_*` table, with a text column [`record`] fills with the version.
const CHECKED: &[(&str, &str)] = &[
    ("ld_projects", "name"),
    ("ld_environments", "name"),
    ("ld_flags", "name"),
    ("ld_flag_environments", "environment_name"),
    ("ld_segments", "name"),
    ("ld_members", "role"),
    ("ld_audit_entries", "name"),
    ("ld_code_ref_repositories", "default_branch"),
];

/// The fields a record of `table` cannot do without (its identity and lists).
fn required(table: &str) -> Value {
    match table {
        "ld_projects" => json!({"key": "default", "tags": ["ops", "api"]}),
        "ld_environments" => json!({"project_key": "default", "key": "production", "tags": []}),
        "ld_flags" => json!({"project_key": "default", "key": "new-checkout", "tags": ["beta"]}),
        "ld_flag_environments" => json!({"project_key": "default", "flag_key": "new-checkout",
                                         "environment_key": "production"}),
        "ld_segments" => json!({"project_key": "default", "environment_key": "production",
                                "key": "beta-users", "tags": []}),
        "ld_members" => json!({"id": "507f1f77bcf86cd799439011", "custom_roles": []}),
        "ld_audit_entries" => json!({"id": "1234a56b7c89d012345e678f", "date": t(0),
                                     "target_resources": [], "accesses": []}),
        "ld_code_ref_repositories" => json!({"name": "LaunchDarkly-Docs"}),
        other => panic!("no fields for {other}"),
    }
}

/// The record of `table` that `v` describes.
fn parse(table: &str, v: Value) -> Record {
    fn read<T: serde::de::DeserializeOwned>(v: Value) -> T {
        serde_json::from_value(v).expect("a record")
    }
    match table {
        "ld_projects" => Record::from(read::<ld::LdProject>(v)),
        "ld_environments" => Record::from(read::<ld::LdEnvironment>(v)),
        "ld_flags" => Record::from(read::<ld::LdFlag>(v)),
        "ld_flag_environments" => Record::from(read::<ld::LdFlagEnvironment>(v)),
        "ld_segments" => Record::from(read::<ld::LdSegment>(v)),
        "ld_members" => Record::from(read::<ld::LdMember>(v)),
        "ld_audit_entries" => Record::from(read::<ld::LdAuditEntry>(v)),
        "ld_code_ref_repositories" => Record::from(read::<ld::LdCodeRefRepository>(v)),
        other => panic!("no record for {other}"),
    }
}

/// The record of `table` in `account` written by `version`: the same identity whatever the
/// version, its text column saying `v{version}`, collected at `t(version)`.
fn record(table: &str, account: &str, version: i64, extra: Value) -> Record {
    let mut v = required(table);
    let fields = v.as_object_mut().expect("an object");
    fields.insert("account".into(), json!(account));
    if let Some((_, column)) = CHECKED.iter().find(|(t, _)| *t == table) {
        fields.insert((*column).into(), json!(format!("v{version}")));
    }
    fields.insert("raw".into(), json!({ "version": version }));
    fields.insert("collected_at".into(), json!(t(version)));
    if let Value::Object(more) = extra {
        fields.extend(more);
    }
    parse(table, v)
}

async fn write(fx: &Fixture, records: &[Record]) {
    let mut tx = fx.store.begin().await.expect("begin");
    for record in records {
        tx.upsert(record).await.expect("upsert");
    }
    tx.commit().await.expect("commit");
}

fn all(account: &str, version: i64) -> Vec<Record> {
    CHECKED
        .iter()
        .map(|(table, _)| record(table, account, version, json!({})))
        .collect()
}

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

/// `SELECT CAST(expr AS TEXT) FROM table`, sorted.
async fn texts(db: &Db, expr: &str, table: &str) -> Vec<Option<String>> {
    let sql = format!("SELECT CAST({expr} AS TEXT) FROM {table} ORDER BY 1");
    let mut out: Vec<Option<String>> = match db {
        Db::Sqlite(pool) => sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_all(pool)
            .await
            .expect("select"),
        Db::Postgres(pool) => sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_all(pool)
            .await
            .expect("select"),
    };
    out.sort();
    out
}

async fn every_launchdarkly_record_written_twice_is_one_row_with_the_second_values(fx: &Fixture) {
    let ld_tables: Vec<&str> = TABLES
        .iter()
        .copied()
        .filter(|t| t.starts_with("ld_"))
        .collect();
    let checked: Vec<&str> = CHECKED.iter().map(|(t, _)| *t).collect();
    assert_eq!(ld_tables, checked, "every ld_* table is checked here");
    let first = all("acct-1", 1);
    for (record, (table, _)) in first.iter().zip(CHECKED) {
        assert_eq!(record.table(), *table);
    }
    write(fx, &first).await;
    write(fx, &all("acct-1", 2)).await;
    let db = connect(fx).await;
    for (table, column) in CHECKED {
        assert_eq!(
            fx.store.count_rows(table).await.expect("count"),
            1,
            "{table}"
        );
        assert_eq!(
            texts(&db, "collected_at_ms", table).await,
            vec![Some(t(2).as_millisecond().to_string())],
            "{table}"
        );
        assert_eq!(
            texts(&db, column, table).await,
            vec![Some("v2".to_owned())],
            "{table}.{column}"
        );
    }
}

async fn the_same_keys_in_two_accounts_are_two_rows(fx: &Fixture) {
    write(fx, &all("acct-1", 1)).await;
    write(fx, &all("acct-2", 1)).await;
    let db = connect(fx).await;
    for (table, _) in CHECKED {
        assert_eq!(
            fx.store.count_rows(table).await.expect("count"),
            2,
            "{table}"
        );
        assert_eq!(
            texts(&db, "account", table).await,
            vec![Some("acct-1".to_owned()), Some("acct-2".to_owned())],
            "{table}"
        );
    }
}

async fn launchdarkly_lists_keep_their_order_and_flags_their_booleans(fx: &Fixture) {
    let accesses = json!([{"action": "updateOn", "resource": "proj/default:env/production:flag/new-checkout"}]);
    write(
        fx,
        &[
            record(
                "ld_flags",
                "acct-1",
                1,
                json!({"tags": ["zeta", "alpha"], "temporary": true, "archived": false}),
            ),
            record(
                "ld_flag_environments",
                "acct-1",
                1,
                json!({"is_on": true, "rules_count": 3, "off_variation": 1}),
            ),
            record(
                "ld_audit_entries",
                "acct-1",
                1,
                json!({"target_resources": ["proj/b", "proj/a"], "accesses": accesses}),
            ),
        ],
    )
    .await;
    let db = connect(fx).await;
    let list = |v: Vec<Option<String>>| -> Value {
        serde_json::from_str(v[0].as_deref().expect("a list")).expect("JSON")
    };
    assert_eq!(
        list(texts(&db, "tags", "ld_flags").await),
        json!(["zeta", "alpha"])
    );
    assert_eq!(
        list(texts(&db, "target_resources", "ld_audit_entries").await),
        json!(["proj/b", "proj/a"])
    );
    assert_eq!(
        list(texts(&db, "accesses", "ld_audit_entries").await),
        accesses
    );
    let truth = |v: Vec<Option<String>>| -> bool {
        match v[0].as_deref().expect("a value") {
            "1" | "true" => true,
            "0" | "false" => false,
            other => panic!("not a boolean: {other}"),
        }
    };
    assert!(truth(texts(&db, "temporary", "ld_flags").await));
    assert!(!truth(texts(&db, "archived", "ld_flags").await));
    assert!(truth(texts(&db, "is_on", "ld_flag_environments").await));
    assert_eq!(
        texts(&db, "rules_count", "ld_flag_environments").await,
        vec![Some("3".to_owned())]
    );
}

fn entry(account: &str, id: &str, date: Timestamp) -> Record {
    record(
        "ld_audit_entries",
        account,
        1,
        json!({"id": id, "date": date}),
    )
}

async fn the_audit_watermark_is_the_newest_stored_entrys_date_per_account(fx: &Fixture) {
    let s = &fx.store;
    assert_eq!(s.ld_audit_watermark("acct-1").await.expect("read"), None);
    // Entries arrive newest first within a page, but pages may land in any order.
    write(
        fx,
        &[entry("acct-1", "e2", t(20)), entry("acct-1", "e1", t(10))],
    )
    .await;
    write(fx, &[entry("acct-1", "e3", t(30))]).await;
    write(fx, &[entry("acct-2", "e9", t(90))]).await;
    assert_eq!(
        s.ld_audit_watermark("acct-1").await.expect("read"),
        Some(t(30).as_millisecond())
    );
    assert_eq!(
        s.ld_audit_watermark("acct-2").await.expect("read"),
        Some(t(90).as_millisecond())
    );
    // Reading the newest millisecond again (the overlap) stores nothing twice.
    write(fx, &[entry("acct-1", "e3", t(30))]).await;
    assert_eq!(s.count_rows("ld_audit_entries").await.expect("count"), 4);
    assert_eq!(
        s.ld_audit_watermark("acct-1").await.expect("read"),
        Some(t(30).as_millisecond())
    );
    assert_eq!(s.ld_audit_watermark("acct-3").await.expect("read"), None);
}

async fn launchdarkly_readable_views_show_instants_as_text(fx: &Fixture) {
    write(
        fx,
        &[
            record("ld_audit_entries", "acct-1", 1, json!({"date": t(0)})),
            record(
                "ld_flags",
                "acct-1",
                1,
                json!({"created_at": t(86_400), "archived_at": null}),
            ),
        ],
    )
    .await;
    let db = connect(fx).await;
    assert_eq!(
        texts(&db, "date_at", "ld_audit_entries_readable").await,
        vec![Some("2027-01-15T08:00:00.000Z".to_owned())]
    );
    assert_eq!(
        texts(&db, "created_at", "ld_flags_readable").await,
        vec![Some("2027-01-16T08:00:00.000Z".to_owned())]
    );
    assert_eq!(
        texts(&db, "archived_at", "ld_flags_readable").await,
        vec![None],
        "no instant reads as no text"
    );
}

/// `upsert_all` writes a page in multi-row statements: more rows than one statement carries,
/// two shapes interleaved, and identities written twice (PostgreSQL refuses one statement
/// touching a row twice) end as the same rows as upserts one by one.
async fn a_page_written_at_once_is_stored_as_written_one_by_one(fx: &Fixture) {
    let page = |account: &str| -> Vec<Record> {
        let mut out = Vec::new();
        for i in 0..230 {
            let key = format!("f{i}");
            out.push(record("ld_flags", account, 1, json!({ "key": key })));
            if i % 40 == 0 {
                let flag = json!({ "flag_key": key });
                out.push(record("ld_flag_environments", account, 1, flag));
            }
        }
        // The same identities again, later in the page: the last write is what stays.
        out.push(record("ld_flags", account, 3, json!({"key": "f7"})));
        out.push(record("ld_flags", account, 2, json!({"key": "f8"})));
        out.push(record("ld_flags", account, 4, json!({"key": "f7"})));
        out
    };
    let mut tx = fx.store.begin().await.expect("begin");
    tx.upsert_all(&page("at-once")).await.expect("upsert_all");
    tx.commit().await.expect("commit");
    write(fx, &page("one-by-one")).await;
    let db = connect(fx).await;
    let rows = |expr: &'static str, table: &'static str, account: &'static str| {
        let from = format!("{table} WHERE account = '{account}'");
        let db = &db;
        async move { texts(db, expr, &from).await }
    };
    for (expr, table, count) in [
        ("key || '=' || name", "ld_flags", 230),
        (
            "flag_key || '=' || environment_name",
            "ld_flag_environments",
            6,
        ),
    ] {
        let at_once = rows(expr, table, "at-once").await;
        assert_eq!(at_once.len(), count, "{table}");
        assert_eq!(at_once, rows(expr, table, "one-by-one").await, "{table}");
    }
    let flags = rows("key || '=' || name", "ld_flags", "at-once").await;
    assert!(flags.contains(&Some("f7=v4".to_owned())), "{flags:?}");
    assert!(flags.contains(&Some("f8=v2".to_owned())), "{flags:?}");
}
