//! The Jira and Linear sync tables (`jira_*`, `linear_*`), the same checks on SQLite and
//! PostgreSQL: every record is an idempotent upsert on its identity, identities are per site or
//! workspace, estimates keep their fractions, a watermark never moves back, and the readable
//! views show the instants as text.

#![allow(clippy::expect_used)]

mod common;

use common::Fixture;
use headroom_core::clock::Timestamp;
use headroom_store::{Record, jira, linear};
use serde_json::{Value, json};

headroom_testkit::both_backends!(
    every_jira_and_linear_record_written_twice_is_one_row_with_the_second_values,
    the_same_ids_in_two_tenants_are_two_rows,
    estimates_keep_their_fractions_and_lists_their_order,
    an_older_jira_or_linear_watermark_never_replaces_a_newer_one,
    jira_and_linear_readable_views_show_instants_as_text,
);

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

/// Every `jira_*` and `linear_*` table, with a text column [`version`] fills (`None`: the
/// watermarks, whose value is their instant).
const CHECKED: &[(&str, Option<&str>)] = &[
    ("jira_projects", Some("name")),
    ("jira_issues", Some("summary")),
    ("jira_issue_sprints", None),
    ("jira_changelog", Some("author_account_id")),
    ("jira_comments", Some("author_account_id")),
    ("jira_worklogs", Some("author_account_id")),
    ("jira_boards", Some("name")),
    ("jira_sprints", Some("name")),
    ("jira_watermarks", None),
    ("linear_teams", Some("key")),
    ("linear_users", Some("name")),
    ("linear_team_memberships", Some("team_id")),
    ("linear_workflow_states", Some("team_id")),
    ("linear_labels", Some("team_id")),
    ("linear_projects", Some("name")),
    ("linear_cycles", Some("team_id")),
    ("linear_issues", Some("identifier")),
    ("linear_comments", Some("issue_id")),
    ("linear_attachments", Some("issue_id")),
    ("linear_issue_history", Some("issue_id")),
    ("linear_watermarks", None),
];

/// The fields a record of `table` cannot do without (its identity and lists).
fn required(table: &str) -> Value {
    match table {
        "jira_projects" => json!({"id": 7, "key": "x-key"}),
        "jira_issues" => json!({"id": 7, "key": "x-key", "labels": ["a", "b"]}),
        "jira_issue_sprints" => json!({"issue_id": 7, "sprint_id": 7}),
        "jira_changelog" => json!({"id": 7, "issue_id": 7, "items": [{"field": "status"}]}),
        "jira_comments" => json!({"id": 7, "issue_id": 7}),
        "jira_worklogs" => json!({"id": 7, "issue_id": 7}),
        "jira_boards" => json!({"id": 7}),
        "jira_sprints" => json!({"id": 7}),
        "jira_watermarks" => json!({"scope": "x-scope"}),
        "linear_teams" => json!({"id": "x-id"}),
        "linear_users" => json!({"id": "x-id"}),
        "linear_team_memberships" => json!({"id": "x-id"}),
        "linear_workflow_states" => json!({"id": "x-id"}),
        "linear_labels" => json!({"id": "x-id"}),
        "linear_projects" => json!({"id": "x-id"}),
        "linear_cycles" => json!({"id": "x-id"}),
        "linear_issues" => json!({"id": "x-id", "label_ids": ["a", "b"]}),
        "linear_comments" => json!({"id": "x-id"}),
        "linear_attachments" => json!({"id": "x-id"}),
        "linear_issue_history" => json!({"id": "x-id"}),
        "linear_watermarks" => json!({"family": "x-family"}),
        other => panic!("no fields for {other}"),
    }
}

/// The record of `table` that `v` describes.
fn parse(table: &str, v: Value) -> Record {
    match table {
        "jira_projects" => {
            Record::from(serde_json::from_value::<jira::JiraProject>(v).expect("JiraProject"))
        }
        "jira_issues" => {
            Record::from(serde_json::from_value::<jira::JiraIssue>(v).expect("JiraIssue"))
        }
        "jira_issue_sprints" => Record::from(
            serde_json::from_value::<jira::JiraIssueSprint>(v).expect("JiraIssueSprint"),
        ),
        "jira_changelog" => {
            Record::from(serde_json::from_value::<jira::JiraChangelog>(v).expect("JiraChangelog"))
        }
        "jira_comments" => {
            Record::from(serde_json::from_value::<jira::JiraComment>(v).expect("JiraComment"))
        }
        "jira_worklogs" => {
            Record::from(serde_json::from_value::<jira::JiraWorklog>(v).expect("JiraWorklog"))
        }
        "jira_boards" => {
            Record::from(serde_json::from_value::<jira::JiraBoard>(v).expect("JiraBoard"))
        }
        "jira_sprints" => {
            Record::from(serde_json::from_value::<jira::JiraSprint>(v).expect("JiraSprint"))
        }
        "jira_watermarks" => {
            Record::from(serde_json::from_value::<jira::JiraWatermark>(v).expect("JiraWatermark"))
        }
        "linear_teams" => {
            Record::from(serde_json::from_value::<linear::LinearTeam>(v).expect("LinearTeam"))
        }
        "linear_users" => {
            Record::from(serde_json::from_value::<linear::LinearUser>(v).expect("LinearUser"))
        }
        "linear_team_memberships" => Record::from(
            serde_json::from_value::<linear::LinearTeamMembership>(v)
                .expect("LinearTeamMembership"),
        ),
        "linear_workflow_states" => Record::from(
            serde_json::from_value::<linear::LinearWorkflowState>(v).expect("LinearWorkflowState"),
        ),
        "linear_labels" => {
            Record::from(serde_json::from_value::<linear::LinearLabel>(v).expect("LinearLabel"))
        }
        "linear_projects" => {
            Record::from(serde_json::from_value::<linear::LinearProject>(v).expect("LinearProject"))
        }
        "linear_cycles" => {
            Record::from(serde_json::from_value::<linear::LinearCycle>(v).expect("LinearCycle"))
        }
        "linear_issues" => {
            Record::from(serde_json::from_value::<linear::LinearIssue>(v).expect("LinearIssue"))
        }
        "linear_comments" => {
            Record::from(serde_json::from_value::<linear::LinearComment>(v).expect("LinearComment"))
        }
        "linear_attachments" => Record::from(
            serde_json::from_value::<linear::LinearAttachment>(v).expect("LinearAttachment"),
        ),
        "linear_issue_history" => Record::from(
            serde_json::from_value::<linear::LinearIssueHistory>(v).expect("LinearIssueHistory"),
        ),
        "linear_watermarks" => Record::from(
            serde_json::from_value::<linear::LinearWatermark>(v).expect("LinearWatermark"),
        ),
        other => panic!("no record for {other}"),
    }
}

/// The tenant column of `table`.
fn tenant_column(table: &str) -> &'static str {
    if table.starts_with("jira_") {
        "site"
    } else {
        "workspace"
    }
}

/// The record of `table` in `tenant` written by `version`: the same identity whatever the
/// version, its text column saying `v{version}`, collected at `t(version)`.
fn record(table: &str, tenant: &str, version: i64, extra: Value) -> Record {
    let mut v = required(table);
    let fields = v.as_object_mut().expect("an object");
    fields.insert(tenant_column(table).into(), json!(tenant));
    if let Some((_, Some(column))) = CHECKED.iter().find(|(t, _)| *t == table) {
        fields.insert((*column).into(), json!(format!("v{version}")));
    }
    if !table.ends_with("_watermarks") {
        fields.insert("raw".into(), json!({ "version": version }));
    }
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

fn all(tenant: &str, version: i64) -> Vec<Record> {
    CHECKED
        .iter()
        .map(|(table, _)| record(table, tenant, version, json!({})))
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

async fn every_jira_and_linear_record_written_twice_is_one_row_with_the_second_values(
    fx: &Fixture,
) {
    let first = all("acme.atlassian.net", 1);
    for (record, (table, _)) in first.iter().zip(CHECKED) {
        assert_eq!(record.table(), *table);
    }
    write(fx, &first).await;
    write(fx, &all("acme.atlassian.net", 2)).await;
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
        if let Some(column) = column {
            assert_eq!(
                texts(&db, column, table).await,
                vec![Some("v2".to_owned())],
                "{table}.{column}"
            );
        }
    }
}

async fn the_same_ids_in_two_tenants_are_two_rows(fx: &Fixture) {
    write(fx, &all("acme.atlassian.net", 1)).await;
    write(fx, &all("globex.atlassian.net", 1)).await;
    let db = connect(fx).await;
    for (table, _) in CHECKED {
        assert_eq!(
            fx.store.count_rows(table).await.expect("count"),
            2,
            "{table}"
        );
        assert_eq!(
            texts(&db, tenant_column(table), table).await,
            vec![
                Some("acme.atlassian.net".to_owned()),
                Some("globex.atlassian.net".to_owned())
            ],
            "{table}"
        );
    }
}

async fn estimates_keep_their_fractions_and_lists_their_order(fx: &Fixture) {
    write(
        fx,
        &[
            record(
                "jira_issues",
                "acme.atlassian.net",
                1,
                json!({"story_points": 3.5, "labels": ["ux", "api"]}),
            ),
            record(
                "linear_issues",
                "org-1",
                1,
                json!({"estimate": 0.5, "label_ids": ["l-2", "l-1"], "priority": 2}),
            ),
            record(
                "linear_workflow_states",
                "org-1",
                1,
                json!({"position": 1.25, "state_type": "started"}),
            ),
        ],
    )
    .await;
    let db = connect(fx).await;
    let number = |v: Vec<Option<String>>| -> f64 {
        v[0].as_deref().expect("a value").parse().expect("a number")
    };
    assert_eq!(number(texts(&db, "story_points", "jira_issues").await), 3.5);
    assert_eq!(number(texts(&db, "estimate", "linear_issues").await), 0.5);
    assert_eq!(
        number(texts(&db, "position", "linear_workflow_states").await),
        1.25
    );
    let list = |v: Vec<Option<String>>| -> Value {
        serde_json::from_str(v[0].as_deref().expect("a list")).expect("JSON")
    };
    assert_eq!(
        list(texts(&db, "labels", "jira_issues").await),
        json!(["ux", "api"])
    );
    assert_eq!(
        list(texts(&db, "label_ids", "linear_issues").await),
        json!(["l-2", "l-1"])
    );
}

async fn an_older_jira_or_linear_watermark_never_replaces_a_newer_one(fx: &Fixture) {
    let s = &fx.store;
    let jira_mark = |at: Timestamp| {
        Record::from(jira::JiraWatermark {
            site: "acme.atlassian.net".into(),
            scope: "ENG".into(),
            collected_at: at,
        })
    };
    let linear_mark = |at: Timestamp| {
        Record::from(linear::LinearWatermark {
            workspace: "org-1".into(),
            family: "issues".into(),
            collected_at: at,
        })
    };
    assert_eq!(
        s.jira_watermark("acme.atlassian.net", "ENG")
            .await
            .expect("read"),
        None
    );
    write(fx, &[jira_mark(t(10)), linear_mark(t(10))]).await;
    write(fx, &[jira_mark(t(5)), linear_mark(t(5))]).await;
    assert_eq!(
        s.jira_watermark("acme.atlassian.net", "ENG")
            .await
            .expect("read"),
        Some(t(10))
    );
    assert_eq!(
        s.linear_watermark("org-1", "issues").await.expect("read"),
        Some(t(10))
    );
    write(fx, &[jira_mark(t(30)), linear_mark(t(20))]).await;
    assert_eq!(
        s.jira_watermark("acme.atlassian.net", "ENG")
            .await
            .expect("read"),
        Some(t(30))
    );
    assert_eq!(
        s.linear_watermark("org-1", "issues").await.expect("read"),
        Some(t(20))
    );
    // Another scope or tenant has its own.
    assert_eq!(
        s.jira_watermark("acme.atlassian.net", "OPS")
            .await
            .expect("read"),
        None
    );
    assert_eq!(
        s.linear_watermark("org-2", "issues").await.expect("read"),
        None
    );
}

async fn jira_and_linear_readable_views_show_instants_as_text(fx: &Fixture) {
    write(
        fx,
        &[
            record(
                "jira_sprints",
                "acme.atlassian.net",
                1,
                json!({"start_at": t(0), "end_at": t(86_400), "state": "closed"}),
            ),
            record("linear_cycles", "org-1", 1, json!({"starts_at": t(0)})),
        ],
    )
    .await;
    let db = connect(fx).await;
    assert_eq!(
        texts(&db, "start_at", "jira_sprints_readable").await,
        vec![Some("2027-01-15T08:00:00.000Z".to_owned())]
    );
    assert_eq!(
        texts(&db, "end_at", "jira_sprints_readable").await,
        vec![Some("2027-01-16T08:00:00.000Z".to_owned())]
    );
    assert_eq!(
        texts(&db, "starts_at", "linear_cycles_readable").await,
        vec![Some("2027-01-15T08:00:00.000Z".to_owned())]
    );
}
