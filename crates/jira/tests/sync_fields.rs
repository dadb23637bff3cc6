//! The site's custom fields are learned, not assumed: a site whose sprint field is not Jira
//! Cloud's usual `customfield_10020` keeps every issue's sprint membership, and the
//! story-point estimate is read from the field the site names.

#![allow(clippy::expect_used)]

mod common;

use common::{Rig, requests};
use headroom_jira::sync::Selection;
use headroom_sim::JiraSiteSpec;

#[tokio::test]
async fn a_site_whose_sprint_field_has_another_id_keeps_every_sprint_membership() {
    let spec = JiraSiteSpec::new("acme")
        .with_size(2, 25)
        .with_children(1, 1, 0)
        .with_boards(1, 3)
        .with_custom_fields("customfield_10111", "customfield_10222");
    let rig = Rig::new(spec).await;
    rig.collect(&Selection::default()).await;
    let counts = rig.sim.jira_site_counts().expect("a seeded site");
    assert!(counts.sprint_memberships > 0, "{counts:?}");
    assert_eq!(
        rig.count("jira_issue_sprints").await,
        counts.sprint_memberships as u64
    );
    // The estimate is typed in its column, from the field the site named.
    let estimated = rig
        .column("SELECT key FROM jira_issues WHERE story_points IS NOT NULL")
        .await;
    assert!(counts.estimated_issues > 0, "{counts:?}");
    assert_eq!(estimated.len(), counts.estimated_issues);
    // The fields were asked once per run, with the site's other facts.
    assert_eq!(requests(&rig.log(), "GET", "/rest/api/3/field").len(), 1);
}
