//! The GitLab group-sync tables (`gitlab_*`), the same checks on SQLite and PostgreSQL: every
//! record is an idempotent upsert on its identity, identities are per instance, a project's
//! watermark never moves back, and the readable views show the instants as text.

#![allow(clippy::expect_used)]

mod common;

use common::Fixture;
use headroom_core::clock::Timestamp;
use headroom_store::{
    GitlabDeployment, GitlabFamily, GitlabFeatureFlag, GitlabGroup, GitlabIssue, GitlabJob,
    GitlabMergeRequest, GitlabMergeRequestApproval, GitlabMergeRequestCommit, GitlabMilestone,
    GitlabNote, GitlabPipeline, GitlabProject, GitlabRelease, GitlabWatermark, Record,
};
use serde_json::json;

headroom_testkit::both_backends!(
    every_gitlab_record_written_twice_is_one_row_with_the_second_values,
    the_same_ids_on_two_instances_are_two_rows,
    an_older_gitlab_watermark_never_replaces_a_newer_one,
    gitlab_readable_views_show_instants_as_text,
);

const GITLAB: &str = "gitlab.com";
const SELF_MANAGED: &str = "git.example.com";

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

/// Every `gitlab_*` table with the text column [`records`] fills with `v{version}`.
const CHECKED: &[(&str, &str)] = &[
    ("gitlab_groups", "name"),
    ("gitlab_projects", "name"),
    ("gitlab_merge_requests", "title"),
    ("gitlab_merge_request_commits", "title"),
    ("gitlab_merge_request_approvals", "approved_by"),
    ("gitlab_notes", "body"),
    ("gitlab_pipelines", "status"),
    ("gitlab_jobs", "status"),
    ("gitlab_issues", "title"),
    ("gitlab_milestones", "title"),
    ("gitlab_deployments", "status"),
    ("gitlab_releases", "name"),
    ("gitlab_feature_flags", "description"),
    ("gitlab_watermarks", "family"),
];

/// One record of every GitLab type on `instance`, the same identities whatever `version`;
/// every other field says which version wrote it, and all were collected at `t(version)`.
fn records(instance: &str, version: i64) -> Vec<Record> {
    let i = instance.to_owned();
    let v = Some(format!("v{version}"));
    let at = Some(t(version));
    let raw = json!({ "version": version });
    let collected_at = t(version);
    vec![
        Record::GitlabGroup(GitlabGroup {
            instance: i.clone(),
            id: 10,
            parent_id: Some(9),
            full_path: "acme/platform".into(),
            name: v.clone(),
            web_url: None,
            created_at: at,
            raw: raw.clone(),
            collected_at,
        }),
        Record::GitlabProject(GitlabProject {
            instance: i.clone(),
            id: 20,
            namespace_id: Some(10),
            path_with_namespace: "acme/platform/api".into(),
            name: v.clone(),
            default_branch: Some("main".into()),
            visibility: Some("private".into()),
            archived: Some(version > 1),
            web_url: None,
            created_at: at,
            last_activity_at: at,
            raw: raw.clone(),
            collected_at,
        }),
        Record::GitlabMergeRequest(GitlabMergeRequest {
            instance: i.clone(),
            project_id: 20,
            iid: 3,
            id: 300,
            title: v.clone(),
            state: Some("merged".into()),
            draft: Some(false),
            author: Some("alice".into()),
            source_branch: Some("feature".into()),
            target_branch: Some("main".into()),
            sha: Some("a".repeat(40)),
            merge_commit_sha: Some("b".repeat(40)),
            squash_commit_sha: None,
            merged_by: Some("bob".into()),
            created_at: at,
            updated_at: at,
            merged_at: at,
            closed_at: None,
            raw: raw.clone(),
            collected_at,
        }),
        Record::GitlabMergeRequestCommit(GitlabMergeRequestCommit {
            instance: i.clone(),
            project_id: 20,
            merge_request_iid: 3,
            sha: "a".repeat(40),
            title: v.clone(),
            author_name: Some("Alice".into()),
            authored_at: at,
            committed_at: at,
            raw: raw.clone(),
            collected_at,
        }),
        Record::GitlabMergeRequestApproval(GitlabMergeRequestApproval {
            instance: i.clone(),
            project_id: 20,
            merge_request_iid: 3,
            approved: Some(true),
            approvals_required: Some(1),
            approvals_left: Some(0),
            approved_by: vec!["carol".into(), format!("v{version}")],
            raw: raw.clone(),
            collected_at,
        }),
        Record::GitlabNote(GitlabNote {
            instance: i.clone(),
            id: 400,
            project_id: 20,
            noteable_type: "MergeRequest".into(),
            noteable_iid: 3,
            author: Some("carol".into()),
            body: v.clone(),
            system: Some(false),
            created_at: at,
            updated_at: at,
            raw: raw.clone(),
            collected_at,
        }),
        Record::GitlabPipeline(GitlabPipeline {
            instance: i.clone(),
            id: 500,
            project_id: 20,
            iid: Some(5),
            status: v.clone(),
            source: Some("push".into()),
            ref_name: Some("main".into()),
            sha: Some("b".repeat(40)),
            created_at: at,
            updated_at: at,
            raw: raw.clone(),
            collected_at,
        }),
        Record::GitlabJob(GitlabJob {
            instance: i.clone(),
            id: 600,
            project_id: 20,
            pipeline_id: 500,
            name: Some("test".into()),
            stage: Some("test".into()),
            status: v.clone(),
            ref_name: Some("main".into()),
            created_at: at,
            started_at: at,
            finished_at: at,
            duration_ms: Some(1_500 * version),
            raw: raw.clone(),
            collected_at,
        }),
        Record::GitlabIssue(GitlabIssue {
            instance: i.clone(),
            id: 700,
            project_id: 20,
            iid: 7,
            title: v.clone(),
            state: Some("opened".into()),
            author: Some("dave".into()),
            labels: vec!["bug".into()],
            milestone_id: Some(800),
            created_at: at,
            updated_at: at,
            closed_at: None,
            raw: raw.clone(),
            collected_at,
        }),
        Record::GitlabMilestone(GitlabMilestone {
            instance: i.clone(),
            id: 800,
            project_id: None,
            group_id: Some(10),
            iid: Some(1),
            title: v.clone(),
            state: Some("active".into()),
            start_date: Some("2027-01-01".into()),
            due_date: Some("2027-02-01".into()),
            created_at: at,
            updated_at: at,
            raw: raw.clone(),
            collected_at,
        }),
        Record::GitlabDeployment(GitlabDeployment {
            instance: i.clone(),
            id: 900,
            project_id: 20,
            iid: Some(9),
            ref_name: Some("main".into()),
            sha: Some("b".repeat(40)),
            status: v.clone(),
            environment: Some("production".into()),
            created_at: at,
            updated_at: at,
            finished_at: at,
            raw: raw.clone(),
            collected_at,
        }),
        Record::GitlabRelease(GitlabRelease {
            instance: i.clone(),
            project_id: 20,
            tag_name: "v1.0.0".into(),
            name: v.clone(),
            commit_sha: Some("b".repeat(40)),
            created_at: at,
            released_at: at,
            raw: raw.clone(),
            collected_at,
        }),
        Record::GitlabFeatureFlag(GitlabFeatureFlag {
            instance: i.clone(),
            project_id: 20,
            name: "new_checkout".into(),
            active: Some(version > 1),
            version: Some("new_version_flag".into()),
            description: v,
            created_at: at,
            updated_at: at,
            raw,
            collected_at,
        }),
        Record::GitlabWatermark(GitlabWatermark {
            instance: i,
            project_id: 20,
            family: GitlabFamily::MergeRequests,
            collected_at,
        }),
    ]
}

async fn write(fx: &Fixture, records: &[Record]) {
    let mut tx = fx.store.begin().await.expect("begin");
    for record in records {
        tx.upsert(record).await.expect("upsert");
    }
    tx.commit().await.expect("commit");
}

/// A connection of the fixture's own backend, to read the rows back.
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

/// Every value of one column as text (`CAST … AS TEXT`: JSON columns too), sorted. `sql`
/// names only this file's constant tables and columns.
async fn texts(db: &Db, column: &str, table: &str) -> Vec<Option<String>> {
    let sql = format!("SELECT CAST({column} AS TEXT) FROM {table} ORDER BY 1");
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

async fn every_gitlab_record_written_twice_is_one_row_with_the_second_values(fx: &Fixture) {
    let first = records(GITLAB, 1);
    assert_eq!(first.len(), CHECKED.len(), "one record per table");
    for (record, (table, _)) in first.iter().zip(CHECKED) {
        assert_eq!(record.table(), *table);
    }
    write(fx, &first).await;
    write(fx, &records(GITLAB, 2)).await;
    let db = connect(fx).await;
    for (table, column) in CHECKED {
        assert_eq!(
            fx.store.count_rows(table).await.expect("count"),
            1,
            "{table}"
        );
        let millis = t(2).as_millisecond().to_string();
        assert_eq!(
            texts(&db, "collected_at_ms", table).await,
            vec![Some(millis)],
            "{table}"
        );
        let got = texts(&db, column, table).await;
        let got = got[0].as_deref().expect("not null");
        match *column {
            "approved_by" => assert_eq!(
                serde_json::from_str::<serde_json::Value>(got).expect("json"),
                json!(["carol", "v2"])
            ),
            "family" => assert_eq!(got, "merge_requests"),
            _ => assert_eq!(got, "v2", "{table}.{column}"),
        }
    }
    let labels = texts(&db, "labels", "gitlab_issues").await;
    let labels = labels[0].as_deref().expect("labels");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(labels).expect("json"),
        json!(["bug"])
    );
    assert_eq!(
        texts(&db, "duration_ms", "gitlab_jobs").await,
        vec![Some("3000".to_owned())]
    );
}

async fn the_same_ids_on_two_instances_are_two_rows(fx: &Fixture) {
    write(fx, &records(GITLAB, 1)).await;
    write(fx, &records(SELF_MANAGED, 1)).await;
    // Rewriting one instance's rows leaves the other's.
    write(fx, &records(SELF_MANAGED, 2)).await;
    let db = connect(fx).await;
    for (table, _) in CHECKED {
        assert_eq!(
            fx.store.count_rows(table).await.expect("count"),
            2,
            "{table}"
        );
        assert_eq!(
            texts(&db, "instance", table).await,
            vec![Some(SELF_MANAGED.to_owned()), Some(GITLAB.to_owned())],
            "{table}"
        );
        let collected = texts(&db, "collected_at_ms", table).await;
        assert_eq!(
            collected,
            vec![
                Some(t(1).as_millisecond().to_string()),
                Some(t(2).as_millisecond().to_string())
            ],
            "{table}"
        );
    }
}

fn mark(instance: &str, project_id: i64, family: GitlabFamily, at: Timestamp) -> Record {
    Record::GitlabWatermark(GitlabWatermark {
        instance: instance.into(),
        project_id,
        family,
        collected_at: at,
    })
}

async fn an_older_gitlab_watermark_never_replaces_a_newer_one(fx: &Fixture) {
    let s = &fx.store;
    let mrs = GitlabFamily::MergeRequests;
    for family in GitlabFamily::ALL {
        assert_eq!(
            s.gitlab_watermark(GITLAB, 20, family).await.expect("read"),
            None
        );
    }
    write(fx, &[mark(GITLAB, 20, mrs, t(10))]).await;
    assert_eq!(
        s.gitlab_watermark(GITLAB, 20, mrs).await.expect("read"),
        Some(t(10))
    );

    // A late writer of an older collection, alone or in one page after the newer one.
    write(fx, &[mark(GITLAB, 20, mrs, t(5))]).await;
    assert_eq!(
        s.gitlab_watermark(GITLAB, 20, mrs).await.expect("read"),
        Some(t(10))
    );
    write(
        fx,
        &[mark(GITLAB, 20, mrs, t(30)), mark(GITLAB, 20, mrs, t(20))],
    )
    .await;
    assert_eq!(
        s.gitlab_watermark(GITLAB, 20, mrs).await.expect("read"),
        Some(t(30))
    );
    assert_eq!(s.count_rows("gitlab_watermarks").await.expect("count"), 1);

    // Marks are per instance, project and family.
    let issues = GitlabFamily::Issues;
    write(
        fx,
        &[
            mark(GITLAB, 20, issues, t(1)),
            mark(SELF_MANAGED, 20, mrs, t(2)),
        ],
    )
    .await;
    assert_eq!(
        s.gitlab_watermark(GITLAB, 20, issues).await.expect("read"),
        Some(t(1))
    );
    assert_eq!(
        s.gitlab_watermark(SELF_MANAGED, 20, mrs)
            .await
            .expect("read"),
        Some(t(2))
    );
    assert_eq!(
        s.gitlab_watermark(GITLAB, 21, mrs).await.expect("read"),
        None
    );
    assert_eq!(
        s.gitlab_watermark(GITLAB, 20, mrs).await.expect("read"),
        Some(t(30))
    );
}

async fn gitlab_readable_views_show_instants_as_text(fx: &Fixture) {
    write(fx, &records(GITLAB, 1)).await;
    let db = connect(fx).await;
    // t(1) is 2027-01-15T08:00:01.000Z.
    let iso = Some("2027-01-15T08:00:01.000Z".to_owned());
    for (table, _) in CHECKED {
        let view = format!("{table}_readable");
        assert_eq!(
            texts(&db, "collected_at", &view).await,
            vec![iso.clone()],
            "{view}"
        );
    }
    assert_eq!(
        texts(&db, "merged_at", "gitlab_merge_requests_readable").await,
        vec![iso.clone()]
    );
    assert_eq!(
        texts(&db, "closed_at", "gitlab_merge_requests_readable").await,
        vec![None],
        "no instant reads as no text"
    );
    assert_eq!(
        texts(&db, "finished_at", "gitlab_deployments_readable").await,
        vec![iso]
    );
}
