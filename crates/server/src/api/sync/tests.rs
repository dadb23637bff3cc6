//! Where a run stands and how it is getting on, tested on hand-made runs and checkpoints.

use super::*;

#[test]
fn a_summary_gives_its_calibration_rows_for_the_run_and_each_stage() {
    let row = serde_json::json!({
        "family": "check_runs", "dimension": "rest_core", "estimated_units": 2,
        "actual_requests": 5, "actual_points": 5, "ratio": 2.5, "underestimated": true,
        "underestimation_assessable": true, "underestimation_assessable_reason": null,
        "unbudgeted_actual": false, "incomplete": false
    });
    let summary = serde_json::json!({
        "calibration": { "run": [row.clone()], "stages": { "workflow_runs": [row] } }
    });
    let (run, stages) = calibration_of(Some(&summary));
    assert_eq!(run.len(), 1);
    assert_eq!(
        (run[0].family.as_str(), run[0].actual_requests, run[0].ratio),
        ("check_runs", 5, Some(2.5))
    );
    assert_eq!(stages.get("workflow_runs"), Some(&run));
    // A summary from before calibration, or of another shape: nothing, never an error.
    assert_eq!(
        calibration_of(Some(&serde_json::json!({"buckets": {}}))).0,
        vec![]
    );
    assert!(calibration_of(None).1.is_empty());
}

#[test]
fn a_summary_gives_its_spend_per_bucket_and_its_refused_fields() {
    let summary = serde_json::json!({
        "buckets": {
            "core": {"requests": 112, "points": 112, "min_remaining": 0, "waits": 2},
            "graphql": {"requests": 9, "points": 340, "min_remaining": 4660, "waits": 0}
        },
        "refused": [{"stage": "org", "path": "organization.membersWithRole",
                     "kind": "FORBIDDEN", "message": "Resource not accessible"}]
    });
    let (spent, refused) = summary_parts(Some(&summary));
    assert_eq!(spent.len(), 2);
    assert_eq!(
        (spent[0].bucket.as_str(), spent[0].requests, spent[0].waits),
        ("core", 112, 2)
    );
    assert_eq!(
        (spent[1].bucket.as_str(), spent[1].points),
        ("graphql", 340)
    );
    assert_eq!(refused[0].path, "organization.membersWithRole");
    // A summary of another shape yields nothing, never an error.
    assert_eq!(
        summary_parts(Some(&serde_json::json!([1, 2]))),
        (vec![], vec![])
    );
    assert_eq!(summary_parts(None), (vec![], vec![]));
}
use headroom_core::clock::SignedDuration;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

pub(crate) fn run(status: SyncRunStatus) -> SyncRun {
    SyncRun {
        id: 7,
        kind: "org".into(),
        target: "acme".into(),
        host: "api.github.com".into(),
        subject: "user:alice".into(),
        status,
        requested_stages: None,
        not_before: Some(t(900)),
        deferral_count: 1,
        first_deferred_at: None,
        total_wait: SignedDuration::ZERO,
        failure_reason: None,
        summary: None,
        claimed_by: None,
        claim_expires_at: None,
        created_at: t(0),
        started_at: Some(t(0)),
        finished_at: None,
        updated_at: t(10),
        credential: Default::default(),
    }
}

pub(crate) fn checkpoint(
    stage: &str,
    scope: &str,
    status: CheckpointStatus,
    pages: u64,
) -> Checkpoint {
    Checkpoint {
        sync_run_id: 7,
        stage: stage.into(),
        scope: scope.into(),
        status,
        page_cursor: None,
        pages_done: pages,
        rows_written: pages * 10,
        detail: (status == CheckpointStatus::Deferred)
            .then(|| "REST exhausted until 14:32".to_owned()),
        updated_at: t(pages as i64),
    }
}

#[test]
fn a_gitlab_run_is_placed_among_the_group_stages() {
    let mut gitlab = run(SyncRunStatus::Running);
    gitlab.kind = "gitlab".into();
    let checkpoints = vec![
        checkpoint("group", "", CheckpointStatus::Done, 2),
        checkpoint("projects", "", CheckpointStatus::Done, 1),
        checkpoint("projects", "acme/a#1", CheckpointStatus::Done, 0),
        checkpoint("projects", "acme/sub/b#2", CheckpointStatus::Done, 0),
        checkpoint("merge_requests", "acme/a#1", CheckpointStatus::Done, 3),
        checkpoint(
            "merge_requests",
            "acme/sub/b#2",
            CheckpointStatus::Running,
            1,
        ),
    ];
    let p = progress(&gitlab, &checkpoints, t(20));
    assert_eq!(p.stages_total, 9);
    assert_eq!(p.stages_done, 2);
    assert_eq!(p.current_stage.as_deref(), Some("merge_requests"));
    assert_eq!(p.stage_number, Some(3));
    let pace = pace::pace(
        &gitlab,
        &checkpoints,
        &stage_order(&gitlab, &checkpoints),
        t(20),
    );
    let mrs = pace
        .repositories_done
        .iter()
        .find(|s| s.stage == "merge_requests")
        .expect("the running stage's projects");
    assert_eq!(mrs.done, 1);
}

/// A Jira run counts its site's stages and its projects; a Linear run, whose stages all run
/// once, counts its workspace's stages and no repositories.
#[test]
fn jira_and_linear_runs_are_placed_among_their_own_stages() {
    let mut jira = run(SyncRunStatus::Running);
    jira.kind = "jira".into();
    let checkpoints = vec![
        checkpoint("site", "", CheckpointStatus::Done, 0),
        checkpoint("projects", "", CheckpointStatus::Done, 1),
        checkpoint("projects", "PA#10000", CheckpointStatus::Done, 0),
        checkpoint("projects", "PB#10001", CheckpointStatus::Done, 0),
        checkpoint("issues", "PA#10000", CheckpointStatus::Running, 2),
    ];
    let p = progress(&jira, &checkpoints, t(20));
    assert_eq!(
        p.stages_total,
        headroom_jira::sync::declarations().len() as u64
    );
    assert_eq!(p.stages_done, 2);
    assert_eq!(p.current_stage.as_deref(), Some("issues"));
    let pace = pace::pace(
        &jira,
        &checkpoints,
        &stage_order(&jira, &checkpoints),
        t(20),
    );
    assert_eq!(pace.repositories_total, Some(2));

    let mut linear = run(SyncRunStatus::Running);
    linear.kind = "linear".into();
    let checkpoints = vec![
        checkpoint("workspace", "", CheckpointStatus::Done, 0),
        checkpoint("teams", "", CheckpointStatus::Running, 1),
    ];
    let p = progress(&linear, &checkpoints, t(20));
    assert_eq!(
        p.stages_total,
        headroom_linear::sync::declarations().len() as u64
    );
    assert_eq!(p.current_stage.as_deref(), Some("teams"));
    let pace = pace::pace(
        &linear,
        &checkpoints,
        &stage_order(&linear, &checkpoints),
        t(20),
    );
    assert_eq!(pace.repositories_total, None);
}

/// Four repositories listed (their `repositories` checkpoints done), then `stage` with
/// checkpoints for the first `created` of them: a done, b deferred, the rest pending.
pub(crate) fn listed_then(stage: &str, created: usize) -> Vec<Checkpoint> {
    let mut out = vec![
        checkpoint("org", "", CheckpointStatus::Done, 1),
        checkpoint("repositories", "", CheckpointStatus::Done, 2),
    ];
    let repos = ["acme/a#1", "acme/b#2", "acme/c#3", "acme/d#4"];
    for r in repos {
        out.push(checkpoint("repositories", r, CheckpointStatus::Done, 1));
    }
    for (i, r) in repos.iter().take(created).enumerate() {
        let status = match i {
            0 => CheckpointStatus::Done,
            1 => CheckpointStatus::Deferred,
            _ => CheckpointStatus::Pending,
        };
        out.push(checkpoint(stage, r, status, [3, 12, 0, 0][i]));
    }
    out
}

#[test]
fn progress_names_the_stage_the_scope_and_the_page() {
    let mut checkpoints = listed_then("pull_requests", 3);
    checkpoints.push(checkpoint("projects", "", CheckpointStatus::Done, 1));
    checkpoints.push(checkpoint("issue_comments", "", CheckpointStatus::Done, 1));
    let p = progress(&run(SyncRunStatus::Hibernating), &checkpoints, t(0));
    assert_eq!((p.stages_total, p.stages_done), (8, 4));
    assert_eq!(p.current_stage.as_deref(), Some("pull_requests"));
    assert_eq!(p.stage_number, Some(5));
    assert_eq!((p.scopes_done, p.scopes_total, p.page), (1, 4, 12));
    assert_eq!(p.rows, 240);
    assert_eq!(p.next_wake, Some(t(900)));
    assert_eq!(p.waiting_because, vec!["REST exhausted until 14:32"]);

    let done = progress(&run(SyncRunStatus::Done), &checkpoints, t(0));
    assert_eq!((done.current_stage, done.next_wake), (None, None));
    assert!(done.waiting_because.is_empty());
    assert!(done.pace.stages_running.is_empty());
}

#[test]
fn repository_totals_do_not_change_as_checkpoints_appear() {
    let run = run(SyncRunStatus::Running);
    let totals: Vec<(u64, Option<u64>)> = (2..=4)
        .map(|created| {
            let p = progress(&run, &listed_then("workflow_runs", created), t(0));
            (p.scopes_total, p.pace.repositories_total)
        })
        .collect();
    // The run's four repositories, however many checkpoints the stage has made so far.
    assert_eq!(totals, vec![(4, Some(4)); 3]);
    // Before the list is complete, no total is claimed.
    let mut listing = listed_then("workflow_runs", 2);
    listing[3].status = CheckpointStatus::Pending;
    let p = progress(&run, &listing, t(0));
    assert_eq!((p.scopes_total, p.pace.repositories_total), (0, None));
}

#[test]
fn stages_running_are_all_named_not_stage_2_of_8() {
    let mut checkpoints = listed_then("pull_requests", 2);
    checkpoints.push(checkpoint(
        "projects",
        "acme/a#1",
        CheckpointStatus::Pending,
        1,
    ));
    checkpoints.push(checkpoint(
        "workflow_runs",
        "acme/c#3",
        CheckpointStatus::Pending,
        1,
    ));
    checkpoints.push(checkpoint(
        "branches",
        "acme/d#4",
        CheckpointStatus::Done,
        1,
    ));
    let p = progress(&run(SyncRunStatus::Running), &checkpoints, t(0));
    assert_eq!(
        p.pace.stages_running,
        ["projects", "pull_requests", "workflow_runs"]
    );
    assert_eq!(p.stages_done, 3, "org, repositories and branches");
    let repos: Vec<(&str, u64)> = p
        .pace
        .repositories_done
        .iter()
        .map(|r| (r.stage.as_str(), r.done))
        .collect();
    assert_eq!(
        repos,
        [("projects", 0), ("pull_requests", 1), ("workflow_runs", 0)]
    );
}

#[test]
fn a_run_without_an_estimate_says_so_instead_of_an_end() {
    let checkpoints = listed_then("workflow_runs", 2);
    let mut without = run(SyncRunStatus::Running);
    without.summary = Some(serde_json::json!({
        "buckets": { "core": { "requests": 100, "points": 100 } },
        "hibernating_ms": 60_000,
    }));
    let p = progress(&without, &checkpoints, t(600));
    assert_eq!((p.pace.eta.as_str(), p.pace.ends_at), ("no_estimate", None));
    assert_eq!(
        (p.pace.elapsed_ms, p.pace.hibernating_ms),
        (600_000, 60_000)
    );

    // With the plan's 400 requests, 100 spent in 540 s of work: 300 more take 1,620 s.
    let mut with = without.clone();
    with.summary = Some(serde_json::json!({
        "buckets": { "core": { "requests": 100, "points": 100 } },
        "hibernating_ms": 60_000,
        "estimates": { "workflow_runs": [
            { "family": "workflow_jobs", "dimension": "rest_core", "units": 400 } ] },
    }));
    let p = progress(&with, &checkpoints, t(600));
    assert_eq!(p.pace.eta, "estimated");
    assert_eq!(p.pace.rest_left, Some(300));
    assert_eq!(p.pace.ends_at, Some(t(600 + 1_620)));
    let finished = progress(
        &SyncRun {
            status: SyncRunStatus::Done,
            ..with
        },
        &checkpoints,
        t(600),
    );
    assert_eq!(
        (finished.pace.eta.as_str(), finished.pace.ends_at),
        ("finished", None)
    );
}

#[test]
fn the_runs_query_is_strict() {
    assert_eq!(
        parse_runs(Some("limit=5&before=9")).ok(),
        Some(RunsQuery {
            limit: 5,
            before: Some(9)
        })
    );
    assert!(parse_runs(Some("limit=0")).is_err());
    assert!(parse_runs(Some("before=-1")).is_err());
    assert!(parse_runs(Some("cursor=x")).is_err());
}
