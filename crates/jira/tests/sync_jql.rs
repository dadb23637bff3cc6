//! `sync jira --jql`, in process: the user's JQL reaches the site whole inside the project
//! and watermark bounds (`project in (…) AND (JQL) AND updated >= …`), the run collects
//! exactly the issues it selects, its watermark is its own (a later run without it collects
//! everything), and a JQL the site refuses fails the run once, with Jira's message.

#![allow(clippy::expect_used)]

mod common;

use std::collections::BTreeSet;

use common::{Rig, requests};
use headroom_jira::sync::Selection;
use headroom_sim::JiraSiteSpec;
use headroom_sync::RunOutcome;

fn site() -> JiraSiteSpec {
    JiraSiteSpec::new("acme")
        .with_size(2, 30)
        .with_children(1, 1, 0)
        .with_boards(1, 2)
}

fn narrowed(jql: &str) -> Selection {
    Selection {
        jql: Some(jql.to_owned()),
        ..Selection::default()
    }
}

async fn keys(rig: &Rig, sql: &str) -> BTreeSet<String> {
    rig.column(sql).await.into_iter().collect()
}

async fn scopes(rig: &Rig) -> BTreeSet<String> {
    keys(rig, "SELECT scope FROM jira_watermarks").await
}

#[tokio::test]
async fn a_run_narrowed_by_jql_collects_exactly_the_matching_issues_under_its_own_watermark() {
    let rig = Rig::new(site()).await;
    rig.collect(&narrowed("status = Done")).await;
    let narrow = keys(&rig, "SELECT key FROM jira_issues").await;
    let narrow_marks = scopes(&rig).await;
    assert!(!narrow.is_empty());
    assert_eq!(
        narrow_marks,
        BTreeSet::from([
            "PA AND (status = Done)".into(),
            "PB AND (status = Done)".into()
        ])
    );
    // Without the JQL the next run collects every issue: the narrowed watermark was not
    // taken for the project's own.
    rig.collect(&Selection::default()).await;
    let counts = rig.sim.jira_site_counts().expect("a seeded site");
    assert_eq!(rig.count("jira_issues").await, counts.issues as u64);
    let done = keys(&rig, "SELECT key FROM jira_issues WHERE status = 'Done'").await;
    assert_eq!(narrow, done, "exactly the issues whose status is Done");
    assert!(done.len() < counts.issues);
    let all_marks = scopes(&rig).await;
    let plain: BTreeSet<String> = all_marks.difference(&narrow_marks).cloned().collect();
    assert_eq!(plain, BTreeSet::from(["PA".into(), "PB".into()]));
}

#[tokio::test]
async fn a_jql_with_or_parentheses_and_not_reaches_the_site_whole_and_narrows_nothing_else() {
    let jql = "status = Done OR (labels = backend AND NOT issuetype = Bug)";
    let rig = Rig::new(site()).await;
    rig.collect(&narrowed(jql)).await;
    let narrow = keys(&rig, "SELECT key FROM jira_issues").await;
    rig.collect(&Selection::default()).await;
    // Each issue's labels are a JSON list in the typed row.
    let want = keys(
        &rig,
        "SELECT key FROM jira_issues WHERE status = 'Done' \
         OR (labels LIKE '%\"backend\"%' AND issue_type <> 'Bug')",
    )
    .await;
    assert!(!want.is_empty() && want.len() < rig.count("jira_issues").await as usize);
    assert_eq!(narrow, want, "{jql}");
}

#[tokio::test]
async fn a_jql_the_site_refuses_fails_the_run_once_with_jiras_message() {
    let rig = Rig::new(site()).await;
    let id = rig.start(&narrowed("resolution = Fixed")).await;
    let outcome = rig.runner.run(id).await.expect("the run");
    let RunOutcome::Failed { reason, .. } = outcome else {
        panic!("the run did not fail: {outcome:?}");
    };
    assert!(
        reason.contains("Field 'resolution' does not exist"),
        "{reason}"
    );
    assert_eq!(rig.count("jira_issues").await, 0);
    // A 400 is not retried: at most one search per project (they run side by side).
    let searches = requests(&rig.log(), "POST", "/rest/api/3/search/jql").len();
    assert!((1..=2).contains(&searches), "{searches} searches");
}
