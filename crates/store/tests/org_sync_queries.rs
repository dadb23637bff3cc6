//! Queries organization sync adds to the store, the same checks on SQLite and PostgreSQL.

#![allow(clippy::expect_used)]

mod common;

use common::Fixture;
use headroom_core::QuotaKey;
use headroom_core::clock::Timestamp;
use headroom_store::records::{CommitFile, PullRequestCommit, Repository};
use headroom_store::{CheckpointStatus, CheckpointUpdate, NewSyncRun, Record};
use serde_json::json;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

headroom_testkit::both_backends!(commit_shas_without_files_is_the_work_left);

fn repo(github_id: i64) -> Record {
    Record::Repository(Repository {
        github_id,
        node_id: None,
        full_name: format!("acme/r{github_id}"),
        name: None,
        owner_login: None,
        owner_github_id: None,
        organization_id: None,
        description: None,
        visibility: None,
        fork: None,
        archived: None,
        default_branch: None,
        github_created_at: None,
        github_updated_at: None,
        pushed_at: None,
        raw: json!({}),
        collected_at: t(0),
    })
}

fn commit(repo: i64, pr: i64, sha: &str) -> Record {
    Record::PullRequestCommit(PullRequestCommit {
        repository_github_id: repo,
        pull_request_number: pr,
        commit_sha: sha.into(),
        author_login: None,
        message_headline: None,
        committed_at: None,
        additions: None,
        deletions: None,
        changed_files: None,
        raw: json!({}),
        collected_at: t(0),
    })
}

fn file(repo: i64, sha: &str, path: &str) -> Record {
    Record::CommitFile(CommitFile {
        repository_github_id: repo,
        commit_sha: sha.into(),
        path: path.into(),
        previous_path: None,
        status: Some("added".into()),
        additions: Some(1),
        deletions: Some(0),
        changes: Some(1),
        raw: json!({}),
        collected_at: t(0),
    })
}

async fn commit_shas_without_files_is_the_work_left(fx: &Fixture) {
    let s = &fx.store;
    let run = s
        .create_sync_run(&NewSyncRun {
            credential: None,
            kind: "org".into(),
            target: "acme".into(),
            key: QuotaKey::user("api.github.com", "alice"),
            requested_stages: None,
            created_at: t(0),
        })
        .await
        .expect("run");
    let cp = CheckpointUpdate {
        sync_run_id: run.id,
        stage: "pull_requests".into(),
        scope: String::new(),
        status: CheckpointStatus::Running,
        page_cursor: None,
        pages_added: 1,
        rows_added: 0,
        detail: None,
        at: t(1),
    };
    // The same commit in two pull requests counts once; another repository's is not listed.
    let page = vec![
        repo(1),
        repo(2),
        commit(1, 5, "bbb"),
        commit(1, 6, "bbb"),
        commit(1, 6, "aaa"),
        commit(1, 7, "ccc"),
        commit(2, 1, "zzz"),
    ];
    s.write_page(&page, &cp).await.expect("page");
    assert_eq!(
        s.commit_shas_without_files(1).await.expect("query"),
        vec!["aaa", "bbb", "ccc"]
    );
    s.write_page(&[file(1, "bbb", "src/lib.rs")], &cp)
        .await
        .expect("files");
    assert_eq!(
        s.commit_shas_without_files(1).await.expect("query"),
        vec!["aaa", "ccc"]
    );
    assert!(
        s.commit_shas_without_files(404)
            .await
            .expect("query")
            .is_empty()
    );
}
