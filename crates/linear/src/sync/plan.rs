//! `headroom sync plan linear`: what a workspace sync will ask, in requests and complexity
//! points per stage and route family, estimated before it starts.
//!
//! Linear's connections carry no totals, but `Team.issueCount` counts a team's issues. The
//! probe ([`probe::probe`]) reads the teams with their counts, the first page of each small
//! list (users, memberships, workflow states, labels, projects, cycles: ids only, as the stages
//! ask them, paged on with the stages' own documents when a list has more), and a sample of
//! [`ISSUE_SAMPLE`] issues, picked by number spread over each team's issues, with the size of
//! their history, comments and attachments.
//! [`estimate`] turns them into each stage's requests with the stages' own arithmetic — every
//! list a page of [`page::DEFAULT_FIRST`] (at least one page), an issue's history nested in its
//! page up to [`documents::NESTED_HISTORY`] entries and the rest in pages of its own, comments
//! and attachments listed across the whole workspace — and each request's complexity as the
//! stages estimate it before sending ([`page::fitted`]). The estimate is of a first (whole)
//! collection; a later run asks only what changed. The sampled means are exact only where the
//! data is uniform; each family's total is rounded up once.

mod probe;
pub use probe::{
    DOCUMENTS, NESTED, PLAN_LISTS, PLAN_SAMPLE, PLAN_TEAMS, ProbeError, probe, sample_numbers,
};

use headroom_core::{RouteFamily, route};
use serde_json::json;

use super::{list, names, page};
use crate::documents::{self, Document};

/// Issues whose children the probe counts.
pub const ISSUE_SAMPLE: u32 = 20;

/// What one sampled issue holds (a count at the probe's nested page size is a lower bound).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IssueSample {
    /// History entries.
    pub history: u64,
    /// Comments.
    pub comments: u64,
    /// Attachments.
    pub attachments: u64,
}

/// What the probe measured of the workspace and the selection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinearProbe {
    /// Teams (stage `teams` lists them all).
    pub teams: u64,
    /// Issues of the selected teams (every team's without `--team`), archived ones included.
    pub issues: u64,
    /// Issues of every team: comments and attachments are listed across the workspace.
    pub workspace_issues: u64,
    /// Users.
    pub users: u64,
    /// Team memberships.
    pub memberships: u64,
    /// Workflow states of the selected teams.
    pub workflow_states: u64,
    /// Issue labels.
    pub labels: u64,
    /// Projects.
    pub projects: u64,
    /// Cycles of the selected teams.
    pub cycles: u64,
    /// The sampled issues.
    pub samples: Vec<IssueSample>,
    /// Requests the probe itself sent.
    pub requests: u64,
    /// Complexity points the probe itself was estimated at.
    pub points: u64,
}

/// One stage's estimate on one route family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyUnits {
    /// The stage.
    pub stage: &'static str,
    /// The route family.
    pub family: RouteFamily,
    /// Requests (Linear's request bucket).
    pub units: u64,
    /// Complexity points, as the stages estimate each request before sending (Linear's
    /// complexity bucket).
    pub points: u64,
}

/// The estimate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinearPlan {
    /// Per stage and family, in the graph's order.
    pub by_family: Vec<FamilyUnits>,
    /// Every request of the sync.
    pub requests: u64,
    /// Every complexity point of the sync.
    pub points: u64,
}

impl LinearPlan {
    /// How many times each bucket's whole capacity the work needs — `requests_limit` requests
    /// and `points_limit` points a period (Linear's leaky buckets refill that much a period):
    /// (request periods, complexity periods), each at least 1; `None` for an unknown limit.
    pub fn periods(
        &self,
        requests_limit: Option<u64>,
        points_limit: Option<u64>,
    ) -> (Option<u64>, Option<u64>) {
        let of =
            |n: u64, limit: Option<u64>| limit.filter(|&l| l > 0).map(|l| n.div_ceil(l).max(1));
        (
            of(self.requests, requests_limit),
            of(self.points, points_limit),
        )
    }
}

/// Pages of a list of `n` rows: at least one (an empty list is asked once).
pub fn pages(n: u64) -> u64 {
    n.div_ceil(u64::from(page::DEFAULT_FIRST)).max(1)
}

/// History pages an issue of `entries` entries asks besides its nested page.
pub fn history_pages(entries: u64) -> u64 {
    entries
        .saturating_sub(u64::from(documents::NESTED_HISTORY))
        .div_ceil(u64::from(page::DEFAULT_FIRST))
}

/// The points a page of `doc` is estimated at, as its stage sends it (the default page,
/// fitted under Linear's maximum).
pub fn page_points(doc: &Document) -> u64 {
    let vars = |n: u32| json!({ "first": n, "after": null, "filter": null, "issue": "" });
    let viewer = doc.name == documents::VIEWER.name;
    let estimate = if viewer {
        page::estimate(doc, &json!({}))
    } else {
        page::fitted(doc, page::PageSize::default(), vars).map(|(_, _, points)| points)
    };
    // Every document a stage sends is estimable (the crate's tests hold them).
    estimate.unwrap_or(0)
}

/// The mean of `of` over the samples (0 when there are none).
fn mean(samples: &[IssueSample], of: impl Fn(&IssueSample) -> u64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    samples.iter().map(of).sum::<u64>() as f64 / samples.len() as f64
}

/// `mean × n`, rounded up: the only rounding of a family's total.
fn scaled(mean: f64, n: u64) -> u64 {
    // Counts are far inside f64's exact integers.
    (mean * n as f64).ceil() as u64
}

/// The estimate for `probe`.
pub fn estimate(probe: &LinearProbe) -> LinearPlan {
    let mut by_family = Vec::new();
    let mut push = |stage, family, doc: &Document, units: u64| {
        by_family.push(FamilyUnits {
            stage,
            family,
            units,
            points: units * page_points(doc),
        });
    };
    push(
        names::WORKSPACE,
        route::LINEAR_WORKSPACE,
        &documents::VIEWER,
        1,
    );
    let lists: [(&'static str, &list::Family, u64); 6] = [
        (names::TEAMS, &list::TEAMS, probe.teams),
        (names::USERS, &list::USERS, probe.users),
        (
            names::TEAM_MEMBERSHIPS,
            &list::TEAM_MEMBERSHIPS,
            probe.memberships,
        ),
        (
            names::WORKFLOW_STATES,
            &list::WORKFLOW_STATES,
            probe.workflow_states,
        ),
        (names::LABELS, &list::LABELS, probe.labels),
        (names::PROJECTS, &list::PROJECTS, probe.projects),
    ];
    for (stage, family, n) in lists {
        push(stage, family.route, family.doc, pages(n));
    }
    push(
        names::CYCLES,
        list::CYCLES.route,
        list::CYCLES.doc,
        pages(probe.cycles),
    );
    let s = &probe.samples;
    push(
        names::ISSUES,
        route::LINEAR_ISSUES,
        &documents::ISSUES,
        pages(probe.issues),
    );
    let history = scaled(mean(s, |i| history_pages(i.history)), probe.issues);
    if history > 0 {
        push(
            names::ISSUES,
            route::LINEAR_HISTORY,
            &documents::ISSUE_HISTORY,
            history,
        );
    }
    let comments = scaled(mean(s, |i| i.comments), probe.workspace_issues);
    push(
        names::COMMENTS,
        list::COMMENTS.route,
        list::COMMENTS.doc,
        pages(comments),
    );
    let attachments = scaled(mean(s, |i| i.attachments), probe.workspace_issues);
    push(
        names::ATTACHMENTS,
        list::ATTACHMENTS.route,
        list::ATTACHMENTS.doc,
        pages(attachments),
    );
    let requests = by_family.iter().map(|f| f.units).sum();
    let points = by_family.iter().map(|f| f.points).sum();
    LinearPlan {
        by_family,
        requests,
        points,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn family(plan: &LinearPlan, family: RouteFamily) -> (u64, u64) {
        plan.by_family
            .iter()
            .filter(|f| f.family == family)
            .fold((0, 0), |(u, p), f| (u + f.units, p + f.points))
    }

    fn probe(issues: u64, history: u64, comments: u64) -> LinearProbe {
        LinearProbe {
            teams: 3,
            issues,
            workspace_issues: issues,
            users: 120,
            memberships: 50,
            workflow_states: 18,
            labels: 0,
            projects: 7,
            cycles: 51,
            samples: vec![
                IssueSample {
                    history,
                    comments,
                    attachments: 1,
                };
                4
            ],
            requests: 0,
            points: 0,
        }
    }

    #[test]
    fn a_uniform_workspace_is_estimated_as_the_stages_page_it() {
        let plan = estimate(&probe(120, 4, 2));
        let issue_page = page_points(&documents::ISSUES);
        assert_eq!(family(&plan, route::LINEAR_ISSUES), (3, 3 * issue_page));
        // Four entries fit the nested page: no history request.
        assert_eq!(family(&plan, route::LINEAR_HISTORY), (0, 0));
        assert_eq!(family(&plan, route::LINEAR_USERS).0, 3);
        // Memberships (50) fill one page; states (18) and labels (none) one page each.
        assert_eq!(family(&plan, route::LINEAR_TEAM_MEMBERS).0, 1);
        assert_eq!(family(&plan, route::LINEAR_METADATA).0, 2);
        assert_eq!(family(&plan, route::LINEAR_CYCLES).0, 2);
        // 240 comments: 5 pages; 120 attachments: 3.
        assert_eq!(family(&plan, route::LINEAR_COMMENTS).0, 5);
        assert_eq!(family(&plan, route::LINEAR_ATTACHMENTS).0, 3);
        assert_eq!(family(&plan, route::LINEAR_WORKSPACE).0, 1);
        // 75 entries: 65 past the nested 10, two pages of 50 each.
        let long = estimate(&probe(120, 75, 2));
        let history_page = page_points(&documents::ISSUE_HISTORY);
        assert_eq!(
            family(&long, route::LINEAR_HISTORY),
            (240, 240 * history_page)
        );
        assert_eq!(history_pages(10), 0);
        assert_eq!(history_pages(11), 1);
        assert_eq!(history_pages(60), 1);
        assert_eq!(history_pages(61), 2);
    }

    #[test]
    fn the_work_is_counted_in_periods_of_each_bucket() {
        let plan = estimate(&probe(1_000, 30, 5));
        let (requests, points) = plan.periods(Some(2_500), Some(10_000));
        assert_eq!(requests, Some(plan.requests.div_ceil(2_500).max(1)));
        assert_eq!(points, Some(plan.points.div_ceil(10_000)));
        assert!(points > Some(1), "{plan:?}");
        assert_eq!(plan.periods(None, Some(0)), (None, None));
    }

    proptest! {
        /// The totals are the sums of the families; every page is priced as its stage prices
        /// it; more issues or longer histories never cost less.
        #[test]
        fn more_work_never_costs_less_and_each_page_is_priced_as_sent(
            issues in 0u64..5_000,
            more in 1u64..500,
            history in 1u64..200,
            comments in 0u64..20,
        ) {
            let plan = estimate(&probe(issues, history, comments));
            prop_assert_eq!(plan.requests, plan.by_family.iter().map(|f| f.units).sum::<u64>());
            prop_assert_eq!(plan.points, plan.by_family.iter().map(|f| f.points).sum::<u64>());
            prop_assert_eq!(family(&plan, route::LINEAR_ISSUES).0, pages(issues));
            prop_assert_eq!(family(&plan, route::LINEAR_HISTORY).0, issues * history_pages(history));
            for f in &plan.by_family {
                prop_assert!(f.units >= 1 || f.family == route::LINEAR_HISTORY);
                prop_assert!(f.points >= f.units);
            }
            let larger = estimate(&probe(issues + more, history + more, comments));
            prop_assert!(larger.requests >= plan.requests);
            prop_assert!(larger.points >= plan.points);
        }
    }
}
