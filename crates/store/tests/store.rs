//! The store's behaviour, the same checks on SQLite and on PostgreSQL.

#![allow(clippy::expect_used)]

mod common;

use common::Fixture;
use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_core::signal::{Dimension, LimitReason, Provider};
use headroom_core::{QuotaKey, Subject};
use headroom_store::records::{Issue, Organization, Project, PullRequestCommit, Repository};
use headroom_store::{
    ANONYMOUS_FINGERPRINT, ActorRef, Backend, CheckpointStatus, CheckpointUpdate, CredentialSeen,
    EventOrigin, NewSyncRun, ObservationKind, PushEventWrite, QuarantinedEvent,
    RateLimitObservation, Record, RepositoryRef, StoreError, StoredEtag, SubjectKind,
    SyncRunStatus, TABLES, UsageRecord, Watermark,
};
use serde_json::json;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

fn alice() -> QuotaKey {
    QuotaKey::user("api.github.com", "alice")
}

headroom_testkit::both_backends!(
    schema_has_every_table_and_reopens,
    credentials_are_fingerprints_with_owners,
    etags_are_kept_per_credential_and_url,
    usage_adds_up_per_window_family_and_dimension,
    rate_limit_observations_list_newest_first,
    refusals_are_read_back_for_cooldowns,
    sync_runs_hibernate_and_wake,
    checkpoints_replace_status_and_add_counts,
    a_page_and_its_cursor_commit_together,
    a_failing_page_commits_nothing,
    a_dropped_transaction_commits_nothing,
    unique_violations_are_conflicts,
    watermarks_only_move_forward,
    org_repositories_share_the_feed_table,
    push_events_are_stored_once_with_activity_only_when_new,
    a_bad_event_does_not_discard_its_neighbours,
    quarantine_counts_occurrences_and_keeps_the_first_classification,
    the_store_offers_the_governor_state_that_fits_it,
    a_sync_run_is_claimed_by_one_worker_at_a_time,
    a_page_of_push_events_is_written_as_one_by_one,
    a_page_with_a_bad_event_falls_back_to_one_by_one,
    projects_are_identified_by_node_id_alone,
);

async fn schema_has_every_table_and_reopens(fx: &Fixture) {
    let mut expected: Vec<String> = TABLES.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(fx.store.table_names().await.expect("tables"), expected);
    for table in TABLES {
        assert_eq!(
            fx.store.count_rows(table).await.expect("count"),
            0,
            "{table}"
        );
    }
    assert!(matches!(
        fx.store.count_rows("sqlite_master; DROP TABLE etags").await,
        Err(StoreError::Invalid { .. })
    ));
    // Opening again runs the migrations again: a no-op.
    let again = headroom_store::open(&fx.target).await.expect("reopen");
    assert_eq!(again.backend(), fx.store.backend());
    assert_eq!(
        again.table_names().await.expect("tables").len(),
        TABLES.len()
    );
    again.close().await;
}

fn seen(fingerprint: &str, owner: &str, at: Timestamp) -> CredentialSeen {
    CredentialSeen {
        host: "api.github.com".into(),
        fingerprint: fingerprint.into(),
        subject_kind: SubjectKind::User,
        owner_login: owner.into(),
        seen_at: at,
    }
}

async fn credentials_are_fingerprints_with_owners(fx: &Fixture) {
    let s = &fx.store;
    let first = s
        .upsert_credential(&seen("0123456789abcdef", "alice", t(0)))
        .await
        .expect("insert");
    assert_eq!(
        (
            first.first_seen_at,
            first.last_seen_at,
            first.owner_login.as_str()
        ),
        (t(0), t(0), "alice")
    );
    // Seen again, later: one row, last_seen moves, first_seen stays.
    let again = s
        .upsert_credential(&seen("0123456789abcdef", "alice", t(60)))
        .await
        .expect("upsert");
    assert_eq!(again.id, first.id);
    assert_eq!((again.first_seen_at, again.last_seen_at), (t(0), t(60)));
    // A late, older sighting does not move last_seen backwards.
    let late = s
        .upsert_credential(&seen("0123456789abcdef", "alice", t(30)))
        .await
        .expect("upsert");
    assert_eq!(late.last_seen_at, t(60));

    s.upsert_credential(&seen("fedcba9876543210", "alice", t(10)))
        .await
        .expect("second token of alice");
    s.upsert_credential(&seen("aaaaaaaaaaaaaaaa", "bob", t(10)))
        .await
        .expect("bob");
    let mut other_host = seen("0123456789abcdef", "alice", t(10));
    other_host.host = "ghe.example.com".into();
    s.upsert_credential(&other_host).await.expect("GHE");

    let of_alice = s
        .credentials_of("api.github.com", SubjectKind::User, "alice")
        .await
        .expect("list");
    let fingerprints: Vec<&str> = of_alice.iter().map(|c| c.fingerprint.as_str()).collect();
    assert_eq!(fingerprints, ["0123456789abcdef", "fedcba9876543210"]);
    assert_eq!(
        s.count_credentials_sharing("api.github.com", SubjectKind::User, "alice")
            .await
            .expect("count"),
        2
    );
    assert_eq!(
        s.count_credentials_sharing("api.github.com", SubjectKind::User, "carol")
            .await
            .expect("count"),
        0
    );
    let found = s
        .credential("api.github.com", "fedcba9876543210")
        .await
        .expect("lookup")
        .expect("present");
    assert_eq!(
        found.subject().expect("subject"),
        Subject::User("alice".into())
    );
    assert_eq!(
        s.credential("api.github.com", "0000000000000000")
            .await
            .expect("lookup"),
        None
    );

    // A token passed by mistake is refused, and never lands in a row.
    let token = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
    let err = s
        .upsert_credential(&seen(token, "alice", t(0)))
        .await
        .expect_err("a token is not a fingerprint");
    assert!(
        matches!(
            err,
            StoreError::Invalid {
                field: "fingerprint",
                ..
            }
        ),
        "{err}"
    );
    assert!(!err.to_string().contains(token));
    assert_eq!(s.count_rows("credentials").await.expect("count"), 4);
}

async fn etags_are_kept_per_credential_and_url(fx: &Fixture) {
    let s = &fx.store;
    let url = "https://api.github.com/events?per_page=100";
    assert_eq!(s.etag("0123456789abcdef", url).await.expect("get"), None);
    let mut tag = StoredEtag {
        credential_fingerprint: "0123456789abcdef".into(),
        url: url.into(),
        etag: "W/\"one\"".into(),
        last_modified: Some("Mon, 30 Nov 2026 10:00:00 GMT".into()),
        stored_at: t(0),
    };
    s.put_etag(&tag).await.expect("put");
    let got = s
        .etag("0123456789abcdef", url)
        .await
        .expect("get")
        .expect("present");
    assert_eq!(got, tag);
    tag.etag = "W/\"two\"".into();
    tag.stored_at = t(5);
    s.put_etag(&tag).await.expect("replace");
    assert_eq!(
        s.etag("0123456789abcdef", url)
            .await
            .expect("get")
            .expect("present")
            .etag,
        "W/\"two\""
    );
    // Another credential (or none) has its own validators.
    assert_eq!(s.etag(ANONYMOUS_FINGERPRINT, url).await.expect("get"), None);
    let anonymous = StoredEtag {
        credential_fingerprint: ANONYMOUS_FINGERPRINT.into(),
        etag: "\"anon\"".into(),
        ..tag.clone()
    };
    s.put_etag(&anonymous).await.expect("put anonymous");
    assert_eq!(
        s.etag(ANONYMOUS_FINGERPRINT, url)
            .await
            .expect("get")
            .expect("present")
            .etag,
        "\"anon\""
    );
    assert_eq!(s.count_rows("etags").await.expect("count"), 2);

    // A URL carrying a token is stored redacted, and still found by the same URL.
    let leaky = "https://api.github.com/repos/a/b?access_token=ghp_abcdefghijklmnop1234";
    let leaky_tag = StoredEtag {
        url: leaky.into(),
        ..tag.clone()
    };
    s.put_etag(&leaky_tag).await.expect("put");
    let got = s
        .etag("0123456789abcdef", leaky)
        .await
        .expect("get")
        .expect("present");
    assert!(!got.url.contains("ghp_"), "{}", got.url);
}

fn usage(family: &str, dimension: Dimension, units: u64, at: Timestamp) -> UsageRecord {
    UsageRecord {
        key: alice(),
        route_family: family.into(),
        dimension,
        requests: 1,
        units,
        at,
        window: SignedDuration::from_hours(1),
    }
}

async fn usage_adds_up_per_window_family_and_dimension(fx: &Fixture) {
    let s = &fx.store;
    // Windows are floored to the hour (1_800_000_000 is a whole hour).
    let record = usage("events", Dimension::RestCore, 1, t(3700));
    assert_eq!(record.window_start().expect("window"), t(3600));
    let zero = UsageRecord {
        window: SignedDuration::ZERO,
        ..record
    };
    assert!(matches!(
        s.record_usage(&zero).await,
        Err(StoreError::Invalid {
            field: "window",
            ..
        })
    ));
    for at in [t(10), t(20), t(30)] {
        s.record_usage(&usage("events", Dimension::RestCore, 1, at))
            .await
            .expect("record");
    }
    s.record_usage(&usage("org_sync", Dimension::GraphqlCost, 7, t(40)))
        .await
        .expect("record");
    s.record_usage(&usage("org_sync", Dimension::GraphqlCost, 3, t(7200)))
        .await
        .expect("record, a later window");
    let mut bob = usage("events", Dimension::RestCore, 1, t(10));
    bob.key = QuotaKey::user("api.github.com", "bob");
    s.record_usage(&bob).await.expect("record bob");
    // Three hourly rows for alice (events, org_sync, org_sync later) and one for bob.
    assert_eq!(s.count_rows("usage_records").await.expect("count"), 4);

    let totals = s
        .usage_totals(&alice(), t(-3600), t(10_000))
        .await
        .expect("totals");
    let summary: Vec<(&str, &str, u64, u64)> = totals
        .iter()
        .map(|u| {
            (
                u.route_family.as_str(),
                u.dimension.as_str(),
                u.requests,
                u.units,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("events", "rest_core", 3, 3),
            ("org_sync", "graphql_cost", 2, 10)
        ]
    );
    assert_eq!(totals[0].last_recorded_at, t(30));
    // Only windows starting in the range count.
    let early = s
        .usage_totals(&alice(), t(-3600), t(3600))
        .await
        .expect("totals");
    assert_eq!(early.iter().map(|u| u.requests).sum::<u64>(), 4);
}

fn observation(host: &str, reason: Option<LimitReason>, at: Timestamp) -> RateLimitObservation {
    RateLimitObservation {
        provider: Provider::GitHub,
        key: QuotaKey::user(host, "alice"),
        credential_fingerprint: Some("0123456789abcdef".into()),
        sync_run_id: None,
        bucket: Some("core".into()),
        route_family: Some("events".into()),
        route_family_attribution: None,
        dimension: Some(Dimension::RestCore),
        reason,
        retry_after: reason.map(|_| SignedDuration::from_secs(60)),
        reset_at: Some(t(3600)),
        limit: Some(5000),
        remaining: Some(0),
        used: Some(5000),
        request_id: Some("ABCD:1234".into()),
        observed_at: at,
        event_kind: reason.map(|_| ObservationKind::Refused),
        wait_reason: None,
    }
}

/// Cooldown gating reads back one identity's refusals on its host since a cut, oldest first,
/// typed: not other identities' or hosts', not deferrals or hibernations.
async fn refusals_are_read_back_for_cooldowns(fx: &Fixture) {
    let s = &fx.store;
    let refused = observation("api.github.com", Some(LimitReason::Secondary), t(10));
    s.record_rate_limit_observation(&refused)
        .await
        .expect("insert");
    let mut primary = observation("api.github.com", Some(LimitReason::Primary), t(20));
    primary.route_family = None;
    primary.route_family_attribution = Some("ambiguous_dimension".into());
    s.record_rate_limit_observation(&primary)
        .await
        .expect("insert");
    // Not refusals of alice on api.github.com, or too old: none of these is read.
    let mut deferred = observation("api.github.com", Some(LimitReason::Secondary), t(30));
    deferred.event_kind = Some(ObservationKind::Deferred);
    let mut bob = observation("api.github.com", Some(LimitReason::Secondary), t(30));
    bob.key = QuotaKey::user("api.github.com", "bob");
    for other in [
        deferred,
        bob,
        observation("ghe.example.com", Some(LimitReason::Secondary), t(30)),
        observation("api.github.com", Some(LimitReason::Secondary), t(-500)),
    ] {
        s.record_rate_limit_observation(&other)
            .await
            .expect("insert");
    }

    let (refusals, skipped) = s.recent_refusals(&alice(), t(0)).await.expect("read");
    assert_eq!(skipped, 0);
    assert_eq!(refusals.len(), 2, "{refusals:?}");
    let first = &refusals[0];
    assert_eq!(first.provider, Provider::GitHub);
    assert_eq!(first.key, alice());
    assert_eq!(first.route_family.as_deref(), Some("events"));
    assert_eq!(first.dimension, Some(Dimension::RestCore));
    assert_eq!(first.reason, LimitReason::Secondary);
    assert_eq!(first.retry_after, Some(SignedDuration::from_secs(60)));
    assert_eq!(first.reset_at, Some(t(3600)));
    assert_eq!(first.observed_at, t(10));
    // A secondary limit cools down for its retry-after, a primary one until its reset.
    assert_eq!(first.ends_at(), t(70));
    assert_eq!(refusals[1].route_family, None);
    assert_eq!(refusals[1].ends_at(), t(3600));
}

async fn rate_limit_observations_list_newest_first(fx: &Fixture) {
    let s = &fx.store;
    let a = s
        .record_rate_limit_observation(&observation("api.github.com", None, t(0)))
        .await
        .expect("insert");
    let b = s
        .record_rate_limit_observation(&observation(
            "api.github.com",
            Some(LimitReason::Secondary),
            t(10),
        ))
        .await
        .expect("insert");
    let c = s
        .record_rate_limit_observation(&observation(
            "api.github.com",
            Some(LimitReason::Primary),
            t(20),
        ))
        .await
        .expect("insert");
    s.record_rate_limit_observation(&observation("ghe.example.com", None, t(15)))
        .await
        .expect("insert");

    let recent = s
        .recent_rate_limit_observations("api.github.com", t(5), 10)
        .await
        .expect("list");
    assert_eq!(recent.iter().map(|o| o.id).collect::<Vec<_>>(), [c, b]);
    let newest = &recent[0];
    assert_eq!(newest.reason.as_deref(), Some("primary"));
    assert_eq!(newest.provider, "github");
    assert_eq!(newest.subject, "user:alice");
    assert_eq!(newest.dimension.as_deref(), Some("rest_core"));
    assert_eq!(newest.retry_after_secs, Some(60));
    assert_eq!(
        (newest.limit, newest.remaining, newest.used),
        (Some(5000), Some(0), Some(5000))
    );
    assert_eq!(newest.reset_at, Some(t(3600)));
    assert_eq!(newest.observed_at, t(20));
    assert_eq!(newest.event_kind.as_deref(), Some("refused"));
    assert_eq!(newest.wait_reason, None);
    let limited = s
        .recent_rate_limit_observations("api.github.com", t(-100), 2)
        .await
        .expect("list");
    assert_eq!(limited.len(), 2);
    assert!(!limited.iter().any(|o| o.id == a));

    // Retention: what is older than the cut goes, on every host; the rest stays.
    assert_eq!(
        s.prune_rate_limit_observations(t(15)).await.expect("prune"),
        2
    );
    let kept = s
        .recent_rate_limit_observations("api.github.com", t(-100), 10)
        .await
        .expect("list");
    assert_eq!(kept.iter().map(|o| o.id).collect::<Vec<_>>(), [c]);
    let other = s
        .recent_rate_limit_observations("ghe.example.com", t(-100), 10)
        .await
        .expect("list");
    assert_eq!(other.len(), 1);
}

async fn sync_runs_hibernate_and_wake(fx: &Fixture) {
    let s = &fx.store;
    let mut run = s
        .create_sync_run(&NewSyncRun {
            credential: None,
            kind: "org".into(),
            target: "acme".into(),
            key: alice(),
            requested_stages: Some(vec!["members".into(), "issues".into()]),
            created_at: t(0),
        })
        .await
        .expect("create");
    assert_eq!(run.status, SyncRunStatus::Pending);
    assert_eq!(
        run.requested_stages.as_deref(),
        Some(&["members".to_owned(), "issues".to_owned()][..])
    );
    assert_eq!(s.sync_run(run.id).await.expect("get").as_ref(), Some(&run));
    assert_eq!(s.due_sync_runs(t(0), 10).await.expect("due").len(), 1);

    // A running run is due only once its holder's claim has lapsed (a dead worker's run).
    run.status = SyncRunStatus::Running;
    s.save_sync_run(&run).await.expect("save");
    assert!(
        s.claim_sync_run(run.id, "w1", t(0), t(120))
            .await
            .expect("claim")
    );
    assert!(s.due_sync_runs(t(119), 10).await.expect("due").is_empty());
    assert_eq!(s.due_sync_runs(t(120), 10).await.expect("due").len(), 1);
    s.release_sync_run(run.id, "w1").await.expect("release");
    assert_eq!(s.due_sync_runs(t(1), 10).await.expect("due").len(), 1);

    run.status = SyncRunStatus::Hibernating;
    run.started_at = Some(t(1));
    run.not_before = Some(t(3600));
    run.deferral_count = 1;
    run.first_deferred_at = Some(t(100));
    run.total_wait = SignedDuration::from_secs(3500);
    run.summary = Some(json!({"stages_done": 3, "requests": {"core": 120}}));
    run.updated_at = t(100);
    s.save_sync_run(&run).await.expect("save");
    assert_eq!(s.sync_run(run.id).await.expect("get"), Some(run.clone()));
    assert!(s.due_sync_runs(t(3599), 10).await.expect("due").is_empty());
    let due = s.due_sync_runs(t(3600), 10).await.expect("due");
    assert_eq!(due.iter().map(|r| r.id).collect::<Vec<_>>(), [run.id]);

    run.status = SyncRunStatus::Failed;
    run.failure_reason = Some("deferral budget exhausted: 10 deferrals".into());
    run.finished_at = Some(t(4000));
    s.save_sync_run(&run).await.expect("save");
    assert!(s.due_sync_runs(t(5000), 10).await.expect("due").is_empty());
    assert_eq!(s.sync_run(run.id).await.expect("get"), Some(run.clone()));

    let mut ghost = run.clone();
    ghost.id += 1000;
    assert!(matches!(
        s.save_sync_run(&ghost).await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(s.sync_run(ghost.id).await.expect("get"), None);
}

fn checkpoint(
    run: i64,
    stage: &str,
    scope: &str,
    status: CheckpointStatus,
    cursor: Option<&str>,
    rows: u64,
) -> CheckpointUpdate {
    CheckpointUpdate {
        sync_run_id: run,
        stage: stage.into(),
        scope: scope.into(),
        status,
        page_cursor: cursor.map(str::to_owned),
        pages_added: u64::from(rows > 0),
        rows_added: rows,
        detail: None,
        at: t(rows as i64),
    }
}

async fn new_run(fx: &Fixture) -> i64 {
    fx.store
        .create_sync_run(&NewSyncRun {
            credential: None,
            kind: "org".into(),
            target: "acme".into(),
            key: alice(),
            requested_stages: None,
            created_at: t(0),
        })
        .await
        .expect("create run")
        .id
}

async fn checkpoints_replace_status_and_add_counts(fx: &Fixture) {
    let s = &fx.store;
    let run = new_run(fx).await;
    s.set_checkpoint(&checkpoint(
        run,
        "members",
        "",
        CheckpointStatus::Running,
        Some("c1"),
        100,
    ))
    .await
    .expect("set");
    s.set_checkpoint(&checkpoint(
        run,
        "members",
        "",
        CheckpointStatus::Running,
        Some("c2"),
        100,
    ))
    .await
    .expect("set");
    s.set_checkpoint(&checkpoint(
        run,
        "members",
        "",
        CheckpointStatus::Done,
        None,
        20,
    ))
    .await
    .expect("set");
    let mut blocked = checkpoint(
        run,
        "issues",
        "acme/api",
        CheckpointStatus::Blocked,
        None,
        0,
    );
    blocked.detail = Some("repositories failed".into());
    s.set_checkpoint(&blocked).await.expect("set");

    let members = s
        .checkpoint(run, "members", "")
        .await
        .expect("get")
        .expect("present");
    assert_eq!(members.status, CheckpointStatus::Done);
    assert_eq!(members.page_cursor, None);
    assert_eq!((members.pages_done, members.rows_written), (3, 220));
    let all = s.checkpoints(run).await.expect("list");
    let keys: Vec<(&str, &str, CheckpointStatus)> = all
        .iter()
        .map(|c| (c.stage.as_str(), c.scope.as_str(), c.status))
        .collect();
    assert_eq!(
        keys,
        [
            ("issues", "acme/api", CheckpointStatus::Blocked),
            ("members", "", CheckpointStatus::Done)
        ]
    );
    assert_eq!(all[0].detail.as_deref(), Some("repositories failed"));
    assert_eq!(s.checkpoint(run, "teams", "").await.expect("get"), None);
    // A checkpoint needs its run.
    assert!(matches!(
        s.set_checkpoint(&checkpoint(
            run + 99,
            "members",
            "",
            CheckpointStatus::Running,
            None,
            0
        ))
        .await,
        Err(StoreError::MissingReference(_))
    ));
}

fn org(login: &str, node: &str) -> Record {
    Record::Organization(Organization {
        login: login.into(),
        github_id: Some(9000),
        node_id: Some(node.into()),
        name: Some("Acme Inc".into()),
        description: None,
        url: Some(format!("https://github.com/{login}")),
        github_created_at: Some(t(-86_400)),
        github_updated_at: None,
        raw: json!({"login": login, "id": node}),
        collected_at: t(0),
    })
}

fn repo(github_id: i64, full_name: &str, organization_id: Option<i64>) -> Record {
    Record::Repository(Repository {
        github_id,
        node_id: Some(format!("R_{github_id}")),
        full_name: full_name.into(),
        name: full_name.split('/').nth(1).map(str::to_owned),
        owner_login: Some("acme".into()),
        owner_github_id: Some(9000),
        organization_id,
        description: None,
        visibility: Some("PUBLIC".into()),
        fork: Some(false),
        archived: Some(false),
        default_branch: Some("main".into()),
        github_created_at: Some(t(-1000)),
        github_updated_at: Some(t(-10)),
        pushed_at: None,
        raw: json!({"databaseId": github_id, "nameWithOwner": full_name}),
        collected_at: t(0),
    })
}

fn issue(repository_github_id: i64, number: i64) -> Record {
    Record::Issue(Issue {
        repository_github_id,
        node_id: format!("I_{repository_github_id}_{number}"),
        github_id: Some(repository_github_id * 1000 + number),
        number,
        title: format!("Issue {number}"),
        state: "OPEN".into(),
        author_login: Some("alice".into()),
        comments_count: Some(0),
        github_created_at: Some(t(number)),
        github_updated_at: Some(t(number + 1)),
        closed_at: None,
        raw: json!({"number": number, "title": format!("Issue {number}"), "labels": ["bug"]}),
        collected_at: t(50),
    })
}

async fn a_page_and_its_cursor_commit_together(fx: &Fixture) {
    let s = &fx.store;
    let run = new_run(fx).await;
    let mut tx = s.begin().await.expect("begin");
    let org_id = tx
        .upsert(&org("acme", "O_1"))
        .await
        .expect("org")
        .expect("organizations have an id");
    tx.upsert(&repo(101, "acme/api", Some(org_id)))
        .await
        .expect("repo");
    tx.set_checkpoint(&checkpoint(run, "org", "", CheckpointStatus::Done, None, 2))
        .await
        .expect("checkpoint");
    tx.commit().await.expect("commit");
    assert_eq!(
        s.organization_id("acme").await.expect("lookup"),
        Some(org_id)
    );

    let page: Vec<Record> = (1..=3).map(|n| issue(101, n)).collect();
    let cursor = checkpoint(
        run,
        "issues",
        "acme/api",
        CheckpointStatus::Running,
        Some("Y3Vyc29yOjM="),
        3,
    );
    let written = s.write_page(&page, &cursor).await.expect("page");
    assert_eq!(written.rows, 3);
    assert_eq!(s.count_rows("issues").await.expect("count"), 3);
    let cp = s
        .checkpoint(run, "issues", "acme/api")
        .await
        .expect("get")
        .expect("present");
    assert_eq!(cp.page_cursor.as_deref(), Some("Y3Vyc29yOjM="));
    assert_eq!((cp.pages_done, cp.rows_written), (1, 3));

    // The same rows again (a page redone after a crash) change nothing but what changed.
    let mut edited = page.clone();
    if let Record::Issue(i) = &mut edited[0] {
        i.title = "Issue 1, renamed".into();
        i.state = "CLOSED".into();
    }
    s.write_page(
        &edited,
        &checkpoint(run, "issues", "acme/api", CheckpointStatus::Done, None, 0),
    )
    .await
    .expect("page again");
    assert_eq!(s.count_rows("issues").await.expect("count"), 3);
    let cp = s
        .checkpoint(run, "issues", "acme/api")
        .await
        .expect("get")
        .expect("present");
    assert_eq!((cp.status, cp.page_cursor), (CheckpointStatus::Done, None));

    // Rows without a surrogate id return none.
    let mut tx = s.begin().await.expect("begin");
    let none = tx
        .upsert(&Record::PullRequestCommit(PullRequestCommit {
            repository_github_id: 101,
            pull_request_number: 7,
            commit_sha: "a".repeat(40),
            author_login: None,
            message_headline: Some("Fix".into()),
            committed_at: Some(t(3)),
            additions: Some(1),
            deletions: Some(0),
            changed_files: Some(1),
            raw: json!({}),
            collected_at: t(4),
        }))
        .await
        .expect("commit row");
    assert_eq!(none, None);
    tx.commit().await.expect("commit");
    assert_eq!(
        s.count_rows("pull_request_commits").await.expect("count"),
        1
    );
}

async fn a_failing_page_commits_nothing(fx: &Fixture) {
    let s = &fx.store;
    let run = new_run(fx).await;
    s.write_page(
        &[repo(101, "acme/api", None)],
        &checkpoint(
            run,
            "repositories",
            "",
            CheckpointStatus::Running,
            Some("p1"),
            1,
        ),
    )
    .await
    .expect("first page");
    // The third issue names a repository that was never stored: the whole page, and the
    // cursor after it, are refused.
    let page = vec![issue(101, 1), issue(101, 2), issue(999, 3)];
    let err = s
        .write_page(
            &page,
            &checkpoint(
                run,
                "repositories",
                "",
                CheckpointStatus::Running,
                Some("p2"),
                3,
            ),
        )
        .await
        .expect_err("a missing repository");
    assert!(matches!(err, StoreError::MissingReference(_)), "{err}");
    assert_eq!(s.count_rows("issues").await.expect("count"), 0);
    let cp = s
        .checkpoint(run, "repositories", "")
        .await
        .expect("get")
        .expect("present");
    assert_eq!(cp.page_cursor.as_deref(), Some("p1"));
    assert_eq!(cp.rows_written, 1);
}

async fn a_dropped_transaction_commits_nothing(fx: &Fixture) {
    let s = &fx.store;
    let run = new_run(fx).await;
    {
        let mut tx = s.begin().await.expect("begin");
        tx.upsert(&org("acme", "O_1")).await.expect("org");
        tx.set_checkpoint(&checkpoint(run, "org", "", CheckpointStatus::Done, None, 1))
            .await
            .expect("checkpoint");
        // Dropped: as if the process died before committing.
    }
    let mut tx = s.begin().await.expect("begin");
    tx.upsert(&org("other", "O_2")).await.expect("org");
    tx.rollback().await.expect("rollback");
    assert_eq!(s.count_rows("organizations").await.expect("count"), 0);
    assert_eq!(s.checkpoints(run).await.expect("list"), vec![]);
}

async fn unique_violations_are_conflicts(fx: &Fixture) {
    let s = &fx.store;
    let mut tx = s.begin().await.expect("begin");
    tx.upsert(&org("acme", "O_1")).await.expect("org");
    tx.commit().await.expect("commit");
    // Another login with the same GraphQL id collides with the first row.
    let mut tx = s.begin().await.expect("begin");
    let err = tx
        .upsert(&org("acme-renamed", "O_1"))
        .await
        .expect_err("duplicate node id");
    assert!(err.is_conflict(), "{err}");
    drop(tx);
    assert_eq!(s.count_rows("organizations").await.expect("count"), 1);
}

async fn watermarks_only_move_forward(fx: &Fixture) {
    let s = &fx.store;
    let run = new_run(fx).await;
    s.write_page(
        &[repo(101, "acme/api", None)],
        &checkpoint(run, "repositories", "", CheckpointStatus::Done, None, 1),
    )
    .await
    .expect("repo");
    for mark in Watermark::ALL {
        assert_eq!(s.watermark(101, mark).await.expect("read"), None);
    }
    let mut tx = s.begin().await.expect("begin");
    tx.set_watermark(101, Watermark::Issues, t(100))
        .await
        .expect("set");
    tx.set_watermark(101, Watermark::Issues, t(50))
        .await
        .expect("an older mark is ignored");
    tx.set_watermark(101, Watermark::Branches, t(70))
        .await
        .expect("set");
    tx.commit().await.expect("commit");
    assert_eq!(
        s.watermark(101, Watermark::Issues).await.expect("read"),
        Some(t(100))
    );
    assert_eq!(
        s.watermark(101, Watermark::Branches).await.expect("read"),
        Some(t(70))
    );
    assert_eq!(
        s.watermark(101, Watermark::PullRequests)
            .await
            .expect("read"),
        None
    );
    let mut tx = s.begin().await.expect("begin");
    assert!(matches!(
        tx.set_watermark(555, Watermark::Issues, t(1)).await,
        Err(StoreError::NotFound(_))
    ));
    drop(tx);
    assert!(matches!(
        s.watermark(555, Watermark::Issues).await,
        Err(StoreError::NotFound(_))
    ));
}

async fn org_repositories_share_the_feed_table(fx: &Fixture) {
    let s = &fx.store;
    let run = new_run(fx).await;
    let page = vec![repo(101, "acme/api", None)];
    s.write_page(
        &page,
        &checkpoint(run, "repositories", "", CheckpointStatus::Running, None, 1),
    )
    .await
    .expect("repo");
    // A rename seen by a later sync updates the row in place.
    s.write_page(
        &[repo(101, "acme/api-v2", None)],
        &checkpoint(run, "repositories", "", CheckpointStatus::Done, None, 1),
    )
    .await
    .expect("renamed");
    assert_eq!(s.count_rows("repositories").await.expect("count"), 1);
    let mut tx = s.begin().await.expect("begin");
    tx.set_watermark(101, Watermark::Issues, t(5))
        .await
        .expect("watermark");
    tx.commit().await.expect("commit");
    // Upserting the repository again keeps its watermark.
    s.write_page(
        &page,
        &checkpoint(run, "repositories", "", CheckpointStatus::Done, None, 1),
    )
    .await
    .expect("again");
    assert_eq!(
        s.watermark(101, Watermark::Issues).await.expect("read"),
        Some(t(5))
    );
}

#[tokio::test]
async fn an_unreachable_postgres_error_never_shows_the_password() {
    let err = headroom_store::open("postgres://headroom:s3cr3t-pass@127.0.0.1:1/headroom")
        .await
        .expect_err("nothing listens on port 1");
    let message = err.to_string();
    assert!(matches!(err, StoreError::Open { .. }), "{message}");
    assert!(!message.contains("s3cr3t-pass"), "{message}");
    assert!(message.contains("127.0.0.1"), "{message}");
}

#[tokio::test]
async fn sqlite_creates_a_missing_file_in_wal_mode_with_foreign_keys() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("fresh.db");
    let url = format!("sqlite://{}", path.display());
    let store = headroom_store::SqliteStore::open(&url).await.expect("open");
    assert!(path.exists());
    assert_eq!(store.backend(), Backend::Sqlite);
    let pool = store.pool();
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(pool)
        .await
        .expect("pragma");
    assert_eq!(mode, "wal");
    let fk: i64 = sqlx::query_scalar("PRAGMA foreign_keys")
        .fetch_one(pool)
        .await
        .expect("pragma");
    assert_eq!(fk, 1);
    let busy: i64 = sqlx::query_scalar("PRAGMA busy_timeout")
        .fetch_one(pool)
        .await
        .expect("pragma");
    assert!(busy >= 1000, "busy timeout {busy} ms");
    use headroom_store::StoreRead as _;
    store.close().await;
}

#[tokio::test]
async fn sqlite_rejects_an_empty_path() {
    assert!(matches!(
        headroom_store::open("sqlite://").await,
        Err(StoreError::Open { .. })
    ));
}

fn push(
    id: &str,
    actor: (i64, &str),
    repo: (i64, &str),
    occurred: Timestamp,
    received: Timestamp,
) -> PushEventWrite {
    PushEventWrite {
        github_event_id: id.into(),
        github_push_id: Some(1000 + occurred.as_second() % 1000),
        actor: ActorRef {
            github_id: actor.0,
            login: actor.1.into(),
            display_login: Some(actor.1.into()),
            url: Some(format!("https://api.github.com/users/{}", actor.1)),
            avatar_url: None,
        },
        repository: RepositoryRef {
            github_id: repo.0,
            full_name: repo.1.into(),
            url: Some(format!("https://api.github.com/repos/{}", repo.1)),
        },
        git_ref: "refs/heads/main".into(),
        head_sha: "a".repeat(40),
        before_sha: Some("b".repeat(64)),
        commit_count: None,
        distinct_commit_count: None,
        occurred_at: occurred,
        received_at: received,
        ingestion_run_id: None,
        origin: EventOrigin::Feed,
        raw: json!({"id": id, "type": "PushEvent", "payload": {"ref": "refs/heads/main"}}),
    }
}

async fn push_events_are_stored_once_with_activity_only_when_new(fx: &Fixture) {
    let s = &fx.store;
    let mut tx = s.begin().await.expect("begin");
    assert!(
        tx.write_push_event(&push(
            "1",
            (7, "octocat"),
            (70, "octo/hello"),
            t(100),
            t(200)
        ))
        .await
        .expect("first")
    );
    assert!(
        tx.write_push_event(&push(
            "2",
            (7, "octocat"),
            (71, "octo/world"),
            t(150),
            t(200)
        ))
        .await
        .expect("second")
    );
    tx.commit().await.expect("commit");
    let actor = s.actor(7).await.expect("read").expect("present");
    assert_eq!(
        (
            actor.name.as_str(),
            actor.enrichment_status.as_str(),
            actor.enrichment_stage.as_str()
        ),
        ("octocat", "pending", "batch_pending")
    );
    assert_eq!(
        (
            actor.first_seen_at,
            actor.last_seen_at,
            actor.latest_event_at
        ),
        (Some(t(200)), Some(t(200)), Some(t(150)))
    );
    let repo = s.repository(70).await.expect("read").expect("present");
    assert_eq!(
        (repo.name.as_str(), repo.latest_event_at),
        ("octo/hello", Some(t(100)))
    );

    // The same event again, later, under a renamed login: no new row, no new activity, the
    // identity refreshed.
    let mut tx = s.begin().await.expect("begin");
    assert!(
        !tx.write_push_event(&push(
            "1",
            (7, "octocat-renamed"),
            (70, "octo/hello"),
            t(100),
            t(900)
        ))
        .await
        .expect("replay")
    );
    tx.commit().await.expect("commit");
    assert_eq!(s.count_rows("push_events").await.expect("count"), 2);
    let actor = s.actor(7).await.expect("read").expect("present");
    assert_eq!(actor.name, "octocat-renamed");
    assert_eq!(
        (actor.last_seen_at, actor.latest_event_at),
        (Some(t(200)), Some(t(150)))
    );

    let stored = s.push_event("1").await.expect("read").expect("present");
    assert_eq!(
        (
            stored.github_actor_id,
            stored.github_repository_id,
            stored.actor_login.as_str()
        ),
        (7, 70, "octocat")
    );
    assert_eq!(stored.head_sha.len(), 40);
    assert_eq!(stored.before_sha.as_deref().map(str::len), Some(64));
    assert_eq!(stored.occurred_at, t(100));
    assert_eq!(stored.raw["payload"]["ref"], "refs/heads/main");
    assert_eq!(s.push_event("404").await.expect("read"), None);
    assert_eq!(s.actor(404).await.expect("read"), None);
}

async fn a_bad_event_does_not_discard_its_neighbours(fx: &Fixture) {
    let s = &fx.store;
    let mut bad = push("2", (8, "mallory"), (80, "mal/ware"), t(2), t(10));
    bad.ingestion_run_id = Some(12345); // no such run: the insert fails on its foreign key
    let mut tx = s.begin().await.expect("begin");
    assert!(
        tx.write_push_event(&push("1", (7, "octocat"), (70, "octo/hello"), t(1), t(10)))
            .await
            .expect("first")
    );
    let err = tx.write_push_event(&bad).await.expect_err("a missing run");
    assert!(matches!(err, StoreError::MissingReference(_)), "{err}");
    assert!(
        tx.write_push_event(&push("3", (7, "octocat"), (70, "octo/hello"), t(3), t(10)))
            .await
            .expect("third, after the failure")
    );
    tx.commit().await.expect("commit");
    assert_eq!(s.count_rows("push_events").await.expect("count"), 2);
    assert_eq!(s.push_event("2").await.expect("read"), None);
    // The failed event's stubs went with its savepoint.
    assert_eq!(s.actor(8).await.expect("read"), None);
    assert_eq!(s.repository(80).await.expect("read"), None);
    assert_eq!(
        s.actor(7)
            .await
            .expect("read")
            .expect("present")
            .latest_event_at,
        Some(t(3))
    );
}

async fn quarantine_counts_occurrences_and_keeps_the_first_classification(fx: &Fixture) {
    let s = &fx.store;
    let fingerprint = "a8ad67ca97a4c48049f5fa447d5d88ae10c58c514e0129546e18b5ff22368020";
    let event = QuarantinedEvent {
        payload_fingerprint: fingerprint.into(),
        github_event_id: Some("58000000006".into()),
        event_type: Some("PushEvent".into()),
        error_code: "invalid_field_format".into(),
        error_message:
            "payload.head is \"not-a-valid-object-name\", not 40 or 64 hexadecimal characters"
                .into(),
        origin: EventOrigin::Feed,
        received_at: t(0),
        raw: Some(json!({"id": "58000000006", "payload": {"head": "not-a-valid-object-name"}})),
        raw_text: None,
    };
    let first = s.quarantine_event(&event).await.expect("quarantine");
    assert_eq!(first.occurrence_count, 1);
    let again = s
        .quarantine_event(&QuarantinedEvent {
            error_code: "something_else".into(),
            received_at: t(60),
            ..event.clone()
        })
        .await
        .expect("again");
    assert_eq!(
        (
            again.occurrence_count,
            again.error_code.as_str(),
            again.first_received_at,
            again.last_received_at
        ),
        (2, "invalid_field_format", t(0), t(60))
    );
    let not_json = QuarantinedEvent {
        payload_fingerprint: "b".repeat(64),
        github_event_id: None,
        event_type: None,
        error_code: "invalid_json".into(),
        error_message: "expected value at line 1 column 1".into(),
        origin: EventOrigin::Gharchive,
        received_at: t(5),
        raw: None,
        raw_text: Some("{not json".into()),
    };
    assert_eq!(
        s.quarantine_event(&not_json)
            .await
            .expect("text")
            .occurrence_count,
        1
    );
    assert_eq!(s.count_rows("quarantined_events").await.expect("count"), 2);
}

#[tokio::test]
async fn sqlite_opens_in_memory_and_by_url_with_parameters() {
    let memory = headroom_store::open("sqlite::memory:")
        .await
        .expect("memory");
    assert_eq!(
        memory.table_names().await.expect("tables").len(),
        TABLES.len()
    );
    memory.close().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("params.db");
    let url = format!("sqlite://{}?mode=rwc", path.display());
    let store = headroom_store::open(&url).await.expect("open");
    assert_eq!(store.backend(), Backend::Sqlite);
    store.close().await;
    assert!(path.exists());
}

async fn the_store_offers_the_governor_state_that_fits_it(fx: &Fixture) {
    use headroom_core::governor::{Acquire, GovernorConfig};
    use headroom_core::{Bucket, RequestKind};
    let state = fx
        .store
        .quota_state(
            GovernorConfig::default(),
            headroom_store::SharedGovernorOptions::default(),
        )
        .expect("valid");
    let debug = format!("{state:?}");
    match fx.store.backend() {
        // A file on SQLite: shared with every process that opens it.
        Backend::Sqlite => assert!(
            debug.starts_with("SharedQuotaState") && debug.contains("sqlite"),
            "{debug}"
        ),
        Backend::Postgres => assert!(
            debug.starts_with("SharedQuotaState") && debug.contains("postgres"),
            "{debug}"
        ),
    }
    let outcome = state
        .acquire(&alice(), &Bucket::core(), 1, RequestKind::REST_READ, t(0))
        .await
        .expect("backend");
    assert!(matches!(outcome, Acquire::Grant(_)));
    assert!(
        fx.store
            .quota_state(
                GovernorConfig {
                    ceiling: 0,
                    ..GovernorConfig::default()
                },
                headroom_store::SharedGovernorOptions::default()
            )
            .is_err()
    );
}

async fn a_sync_run_is_claimed_by_one_worker_at_a_time(fx: &Fixture) {
    let s = &fx.store;
    let id = new_run(fx).await;
    assert!(
        s.claim_sync_run(id, "worker-a", t(0), t(60))
            .await
            .expect("claim")
    );
    assert!(
        !s.claim_sync_run(id, "worker-b", t(30), t(90))
            .await
            .expect("held")
    );
    // The holder renews.
    assert!(
        s.claim_sync_run(id, "worker-a", t(50), t(110))
            .await
            .expect("renew")
    );
    let run = s.sync_run(id).await.expect("get").expect("present");
    assert_eq!(
        (run.claimed_by.as_deref(), run.claim_expires_at),
        (Some("worker-a"), Some(t(110)))
    );
    // Saving the run's fields leaves the claim alone.
    s.save_sync_run(&run).await.expect("save");
    // worker-a dies; once its claim lapses another worker takes over.
    assert!(
        !s.claim_sync_run(id, "worker-b", t(109), t(200))
            .await
            .expect("held")
    );
    assert!(
        s.claim_sync_run(id, "worker-b", t(110), t(200))
            .await
            .expect("lapsed")
    );
    // Only the holder can give it back.
    s.release_sync_run(id, "worker-a")
        .await
        .expect("not a holder: no-op");
    assert!(
        !s.claim_sync_run(id, "worker-c", t(120), t(300))
            .await
            .expect("held")
    );
    s.release_sync_run(id, "worker-b").await.expect("release");
    assert!(
        s.claim_sync_run(id, "worker-c", t(120), t(300))
            .await
            .expect("free")
    );
    // A finished run is never claimed.
    let mut run = s.sync_run(id).await.expect("get").expect("present");
    run.status = SyncRunStatus::Done;
    s.save_sync_run(&run).await.expect("save");
    assert!(
        !s.claim_sync_run(id, "worker-c", t(400), t(500))
            .await
            .expect("done")
    );
    assert!(
        !s.claim_sync_run(id + 1, "worker-c", t(400), t(500))
            .await
            .expect("unknown")
    );
}

async fn a_page_of_push_events_is_written_as_one_by_one(fx: &Fixture) {
    let s = &fx.store;
    // One event stored beforehand: seen again in the page, it is a duplicate.
    let mut tx = s.begin().await.expect("begin");
    assert!(
        tx.write_push_event(&push("1", (7, "octocat"), (70, "octo/hello"), t(10), t(20)))
            .await
            .expect("single")
    );
    tx.commit().await.expect("commit");

    let page = vec![
        push("1", (7, "octocat"), (70, "octo/hello"), t(10), t(100)),
        push("2", (7, "octocat"), (71, "octo/world"), t(40), t(100)),
        push("3", (8, "hubot"), (71, "octo/world"), t(30), t(100)),
        push("3", (8, "hubot"), (71, "octo/world"), t(30), t(100)),
        push("4", (9, "monalisa"), (72, "mona/lisa"), t(50), t(101)),
        push("5", (8, "hubot-renamed"), (71, "octo/world"), t(20), t(102)),
    ];
    let mut tx = s.begin().await.expect("begin");
    let outcome: Vec<bool> = tx
        .write_push_events(&page)
        .await
        .expect("page")
        .into_iter()
        .map(|r| r.expect("no event fails"))
        .collect();
    tx.commit().await.expect("commit");
    assert_eq!(outcome, [false, true, true, false, true, true]);
    assert_eq!(s.count_rows("push_events").await.expect("count"), 5);
    assert_eq!(s.count_rows("actors").await.expect("count"), 3);
    assert_eq!(s.count_rows("repositories").await.expect("count"), 3);

    // Activity moved only for new events: octocat's repo 70 saw only a duplicate.
    let hello = s.repository(70).await.expect("read").expect("present");
    assert_eq!(
        (
            hello.first_seen_at,
            hello.last_seen_at,
            hello.latest_event_at
        ),
        (Some(t(20)), Some(t(20)), Some(t(10)))
    );
    let octocat = s.actor(7).await.expect("read").expect("present");
    assert_eq!(
        (
            octocat.first_seen_at,
            octocat.last_seen_at,
            octocat.latest_event_at
        ),
        (Some(t(20)), Some(t(100)), Some(t(40)))
    );
    // The last event naming an entity sets its identity, as one by one.
    let hubot = s.actor(8).await.expect("read").expect("present");
    assert_eq!(hubot.name, "hubot-renamed");
    assert_eq!(
        (
            hubot.first_seen_at,
            hubot.last_seen_at,
            hubot.latest_event_at
        ),
        (Some(t(100)), Some(t(102)), Some(t(30)))
    );
    assert_eq!(
        s.repository(72)
            .await
            .expect("read")
            .expect("present")
            .enrichment_stage
            .as_str(),
        "batch_pending"
    );

    // The same page again: all duplicates, nothing moves.
    let mut tx = s.begin().await.expect("begin");
    let again = tx.write_push_events(&page).await.expect("page");
    tx.commit().await.expect("commit");
    assert!(again.iter().all(|r| matches!(r, Ok(false))));
    assert_eq!(s.actor(7).await.expect("read").expect("present"), octocat);
    assert_eq!(s.count_rows("push_events").await.expect("count"), 5);
}

async fn a_page_with_a_bad_event_falls_back_to_one_by_one(fx: &Fixture) {
    let s = &fx.store;
    let mut bad = push("2", (8, "mallory"), (80, "mal/ware"), t(2), t(10));
    bad.ingestion_run_id = Some(12345);
    let page = vec![
        push("1", (7, "octocat"), (70, "octo/hello"), t(1), t(10)),
        bad,
        push("3", (7, "octocat"), (70, "octo/hello"), t(3), t(10)),
    ];
    let mut tx = s.begin().await.expect("begin");
    let outcome = tx.write_push_events(&page).await.expect("page");
    tx.commit().await.expect("commit");
    assert!(matches!(outcome[0], Ok(true)));
    assert!(
        matches!(outcome[1], Err(StoreError::MissingReference(_))),
        "{:?}",
        outcome[1]
    );
    assert!(matches!(outcome[2], Ok(true)));
    assert_eq!(s.count_rows("push_events").await.expect("count"), 2);
    assert_eq!(s.actor(8).await.expect("read"), None);
    assert_eq!(
        s.actor(7)
            .await
            .expect("read")
            .expect("present")
            .latest_event_at,
        Some(t(3))
    );
}

async fn projects_are_identified_by_node_id_alone(fx: &Fixture) {
    let s = &fx.store;
    let run = new_run(fx).await;
    let mut tx = s.begin().await.expect("begin");
    let org_id = tx
        .upsert(&org("acme", "O_1"))
        .await
        .expect("org")
        .expect("id");
    tx.commit().await.expect("commit");
    // The organization's project 1 and a user's project 1 linked to one of its repositories.
    let project = |node: &str, title: &str| {
        Record::Project(Project {
            organization_id: org_id,
            node_id: node.into(),
            number: 1,
            title: title.into(),
            closed: false,
            url: None,
            items_count: Some(3),
            github_created_at: None,
            github_updated_at: None,
            raw: json!({"id": node}),
            collected_at: t(0),
        })
    };
    s.write_page(
        &[
            project("PVT_org", "Roadmap"),
            project("PVT_user", "Alice's board"),
        ],
        &checkpoint(run, "projects", "", CheckpointStatus::Done, None, 2),
    )
    .await
    .expect("both projects");
    assert_eq!(s.count_rows("projects").await.expect("count"), 2);
}

/// A task cancelled between BEGIN and COMMIT can hand its connection back to the pool still
/// inside the transaction; the server must end such a session rather than let its row locks
/// block every later claim. The setting is the store's own, on every pooled session.
#[tokio::test]
async fn postgres_sessions_end_when_left_idle_in_a_transaction() {
    let Some(admin) = common::admin_url("postgres_sessions_end_when_left_idle_in_a_transaction")
    else {
        return;
    };
    let db = common::PgDatabase::create(&admin).await;
    let store = headroom_store::PgStore::connect(&db.url())
        .await
        .expect("connect");
    let mut seen = Vec::new();
    for _ in 0..3 {
        let value: String = sqlx::query_scalar("SHOW idle_in_transaction_session_timeout")
            .fetch_one(store.pool())
            .await
            .expect("show");
        seen.push(value);
    }
    assert_eq!(
        seen,
        vec![headroom_store::IDLE_IN_TRANSACTION_TIMEOUT; 3],
        "every session carries the timeout"
    );
    store.pool().close().await;
}
