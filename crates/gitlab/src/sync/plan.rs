//! `headroom sync plan gitlab GROUP`: what a group sync will ask, estimated before it starts.
//!
//! The probe ([`send::probe`]) reads counts GitLab gives away with any page: `x-total` of the
//! group's descendant groups and projects, and of each list of a few sampled projects (one
//! request of one item each). [`estimate`] turns them into requests per stage and route family,
//! the units `sync gitlab --estimate` keeps with its run for the calibration to hold the actuals
//! against, and into quota windows. The model is the stages' own arithmetic: a list costs a
//! page per 100 objects (at least one), and each merge request, pipeline and issue costs one
//! request per child list (commits, approvals and notes; jobs; notes), assuming a child list
//! fits in one page. Means are exact; only each family's total is rounded up.

mod send;
pub use send::{ProbeError, probe};

use headroom_core::{RouteFamily, route};

use super::names;

/// Objects per page, as the stages ask.
const PAGE: u64 = 100;

/// Projects whose lists the probe counts.
pub const SAMPLE: usize = 5;

/// What one sampled project's lists hold (`None`: GitLab did not say — a list past 10,000
/// objects, or one refused, such as feature flags off).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectSample {
    /// Merge requests (all states).
    pub merge_requests: Option<u64>,
    /// Pipelines.
    pub pipelines: Option<u64>,
    /// Issues.
    pub issues: Option<u64>,
    /// Milestones.
    pub milestones: Option<u64>,
    /// Deployments.
    pub deployments: Option<u64>,
    /// Releases.
    pub releases: Option<u64>,
    /// Feature flags.
    pub feature_flags: Option<u64>,
}

/// What the probe measured of the group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupProbe {
    /// Descendant groups (subgroups at every depth).
    pub subgroups: u64,
    /// Projects of the group and its subgroups.
    pub projects: u64,
    /// The sampled projects' counts.
    pub samples: Vec<ProjectSample>,
    /// Requests the probe itself sent.
    pub requests: u64,
}

/// One stage's estimate on one route family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyUnits {
    /// The stage.
    pub stage: &'static str,
    /// The route family.
    pub family: RouteFamily,
    /// Requests.
    pub units: u64,
}

/// The estimate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupPlan {
    /// Per stage and family, in the graph's order.
    pub by_family: Vec<FamilyUnits>,
    /// Every request of the sync.
    pub requests: u64,
    /// Windows of the user's throttle the requests need (`None`: the limit is unknown, as on
    /// a self-managed instance without throttle headers).
    pub quota_windows: Option<u64>,
}

/// Pages of a list of `n` objects: at least one (an empty list is one request).
fn pages(n: u64) -> u64 {
    n.div_ceil(PAGE).max(1)
}

/// Per project, over the samples: the mean of the objects of a list (over the samples that
/// told it; 0 when none did) and the mean of its pages (a list GitLab did not count, or
/// refused, still costs its one request).
fn mean(samples: &[ProjectSample], of: impl Fn(&ProjectSample) -> Option<u64>) -> (f64, f64) {
    if samples.is_empty() {
        return (0.0, 1.0);
    }
    let told: Vec<u64> = samples.iter().filter_map(&of).collect();
    let objects = if told.is_empty() {
        0.0
    } else {
        told.iter().sum::<u64>() as f64 / told.len() as f64
    };
    let list_pages =
        samples.iter().map(|p| of(p).map_or(1, pages)).sum::<u64>() as f64 / samples.len() as f64;
    (objects, list_pages)
}

/// `mean × projects`, rounded up: the only rounding of a family's total.
fn scaled(mean: f64, projects: u64) -> u64 {
    // Counts are far inside f64's exact integers.
    (mean * projects as f64).ceil() as u64
}

/// The estimate for `probe`, with `per_window` usable requests a window when known.
pub fn estimate(probe: &GroupProbe, per_window: Option<u64>) -> GroupPlan {
    let projects = probe.projects;
    let s = &probe.samples;
    let mut by_family = vec![
        FamilyUnits {
            stage: names::GROUP,
            family: route::GITLAB_GROUPS,
            units: 1 + pages(probe.subgroups),
        },
        FamilyUnits {
            stage: names::GROUP,
            family: route::GITLAB_MILESTONES,
            // One page of milestones per group (a group's milestones rarely pass 100).
            units: 1 + probe.subgroups,
        },
        FamilyUnits {
            stage: names::PROJECTS,
            family: route::GITLAB_PROJECTS,
            units: pages(projects),
        },
    ];
    let mut per_project =
        |stage, family, of: fn(&ProjectSample) -> Option<u64>, children: &[RouteFamily]| {
            let (objects, list_pages) = mean(s, of);
            by_family.push(FamilyUnits {
                stage,
                family,
                units: scaled(list_pages, projects),
            });
            for child in children {
                by_family.push(FamilyUnits {
                    stage,
                    family: *child,
                    units: scaled(objects, projects),
                });
            }
        };
    per_project(
        names::MERGE_REQUESTS,
        route::GITLAB_MERGE_REQUESTS,
        |p| p.merge_requests,
        &[
            route::GITLAB_MERGE_REQUEST_COMMITS,
            route::GITLAB_MERGE_REQUEST_APPROVALS,
            route::GITLAB_MERGE_REQUEST_NOTES,
        ],
    );
    per_project(
        names::PIPELINES,
        route::GITLAB_PIPELINES,
        |p| p.pipelines,
        &[route::GITLAB_JOBS],
    );
    per_project(
        names::ISSUES,
        route::GITLAB_ISSUES,
        |p| p.issues,
        &[route::GITLAB_ISSUE_NOTES],
    );
    per_project(
        names::MILESTONES,
        route::GITLAB_MILESTONES,
        |p| p.milestones,
        &[],
    );
    per_project(
        names::DEPLOYMENTS,
        route::GITLAB_DEPLOYMENTS,
        |p| p.deployments,
        &[],
    );
    per_project(names::RELEASES, route::GITLAB_RELEASES, |p| p.releases, &[]);
    per_project(
        names::FEATURE_FLAGS,
        route::GITLAB_FEATURE_FLAGS,
        |p| p.feature_flags,
        &[],
    );
    let requests: u64 = by_family.iter().map(|f| f.units).sum();
    let quota_windows = per_window
        .filter(|&w| w > 0)
        .map(|w| requests.div_ceil(w).max(1));
    GroupPlan {
        by_family,
        requests,
        quota_windows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample(n: u64) -> ProjectSample {
        ProjectSample {
            merge_requests: Some(n),
            pipelines: Some(n),
            issues: Some(n),
            milestones: Some(2),
            deployments: Some(n / 2),
            releases: Some(1),
            feature_flags: Some(3),
        }
    }

    #[test]
    fn a_group_sampled_whole_is_estimated_exactly() {
        // Two projects, both sampled, one of 250 merge requests: 3 pages + 250 × 3 children.
        let probe = GroupProbe {
            subgroups: 1,
            projects: 2,
            samples: vec![sample(250), sample(10)],
            requests: 0,
        };
        let plan = estimate(&probe, Some(100));
        let units = |stage: &str, family: RouteFamily| {
            plan.by_family
                .iter()
                .find(|f| f.stage == stage && f.family == family)
                .map(|f| f.units)
        };
        assert_eq!(
            units("merge_requests", route::GITLAB_MERGE_REQUESTS),
            Some(4)
        );
        assert_eq!(
            units("merge_requests", route::GITLAB_MERGE_REQUEST_NOTES),
            Some(260)
        );
        assert_eq!(units("pipelines", route::GITLAB_JOBS), Some(260));
        assert_eq!(units("group", route::GITLAB_GROUPS), Some(2));
        assert_eq!(units("group", route::GITLAB_MILESTONES), Some(2));
        assert_eq!(units("projects", route::GITLAB_PROJECTS), Some(1));
        assert_eq!(plan.quota_windows, Some(plan.requests.div_ceil(100)));
    }

    proptest! {
        /// More projects never cost fewer requests, and the windows cover the requests.
        #[test]
        fn more_projects_never_cost_less(
            counts in proptest::collection::vec(0u64..2_000, 1..6),
            projects in 1u64..500,
            extra in 1u64..500,
            per_window in 1u64..5_000,
        ) {
            let samples: Vec<ProjectSample> = counts.iter().map(|&n| sample(n)).collect();
            let small = GroupProbe { subgroups: 0, projects, samples: samples.clone(), requests: 0 };
            let large = GroupProbe { projects: projects + extra, ..small.clone() };
            let a = estimate(&small, Some(per_window));
            let b = estimate(&large, Some(per_window));
            prop_assert!(b.requests >= a.requests);
            let windows = a.quota_windows.unwrap_or(0);
            prop_assert!(windows * per_window >= a.requests);
            prop_assert_eq!(a.requests, a.by_family.iter().map(|f| f.units).sum::<u64>());
        }
    }
}
