//! `headroom sync plan jira`: what a site sync will ask, estimated before it starts.
//!
//! The probe ([`probe::probe`]) reads what Jira counts cheaply: the projects (`total` of
//! `/project/search`), the issues of the selected projects and of a few of them one by one
//! (`POST /search/approximate-count`), the comments of a few issues (the `comment` field of
//! one small search page carries each issue's `total`), the changelog and worklogs of a few
//! of those (`total` of a one-item page), the boards (listed: the agile API gives no total)
//! and the sprints of a few scrum boards. [`estimate`] turns them into requests per stage and
//! route family, with the stages' own arithmetic: projects 100 a page; issues 100 a search
//! page per project (at least one page); a bulk changelog request per page of issues and per
//! 1,000 histories of the page; one comment request per issue and per 100 comments, one
//! worklog request per issue and per 5,000 worklogs (when worklogs are asked); boards 50 a
//! page and, per scrum board of the selected projects, its sprints 50 a page. The estimate is
//! of a first (whole) collection: a later run asks only what changed. Means are exact; only
//! each family's total is rounded up, so the model is exact where the data is uniform.

mod probe;
pub use probe::{ProbeError, probe};

use headroom_core::{RouteFamily, route};

use super::names;

/// Projects a `/project/search` page holds, as stage `projects` asks.
pub const PROJECT_PAGE: u64 = 100;
/// Issues a search page holds, as stage `issues` asks (Jira's most when fields are asked).
pub const SEARCH_PAGE: u64 = 100;
/// Histories a bulk changelog page holds, as stage `issues` asks.
pub const BULK_PAGE: u64 = 1_000;
/// Comments a comment page holds, as stage `issues` asks.
pub const COMMENT_PAGE: u64 = 100;
/// Worklogs a worklog page holds, as stage `issues` asks.
pub const WORKLOG_PAGE: u64 = 5_000;
/// What the agile API serves a page, whatever is asked.
pub const AGILE_PAGE: u64 = 50;
/// Requests of stage `site`: the caller (`/myself`) and the site's fields (`/field`).
pub const SITE_REQUESTS: u64 = 2;

/// Projects whose issues the probe counts one by one (all of them when there are no more).
pub const PROJECT_SAMPLE: usize = 20;
/// Issues whose comments the probe counts.
pub const ISSUE_SAMPLE: usize = 5;
/// Of those, issues whose changelog (and worklogs) the probe counts.
pub const CHILD_SAMPLE: usize = 3;
/// Scrum boards whose sprints the probe counts.
pub const BOARD_SAMPLE: usize = 3;

/// What one sampled issue holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IssueSample {
    /// Comments (`total`).
    pub comments: u64,
    /// Changelog histories (`None`: not sampled).
    pub changelog: Option<u64>,
    /// Worklogs (`None`: not sampled, or worklogs are not collected).
    pub worklogs: Option<u64>,
}

/// What the probe measured of the site and the selection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JiraProbe {
    /// Projects the credential can browse: stage `projects` lists them all.
    pub visible_projects: u64,
    /// Of those, the projects selected: the scopes of stage `issues`.
    pub projects: u64,
    /// Issues of the selected projects (under `--jql` when given).
    pub issues: u64,
    /// Issues of each sampled project (every selected project when there are few).
    pub project_issues: Vec<u64>,
    /// The sampled issues' children.
    pub issue_samples: Vec<IssueSample>,
    /// Boards the credential sees: stage `boards` lists them all.
    pub boards: u64,
    /// Scrum boards of the selected projects: each costs its sprint pages.
    pub scrum_boards: u64,
    /// Sprints of each sampled scrum board.
    pub sprint_samples: Vec<u64>,
    /// The agile API refused the caller (403): stage `boards` sends one request and stops.
    pub agile_refused: bool,
    /// Worklogs are collected.
    pub worklogs: bool,
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
pub struct JiraPlan {
    /// Per stage and family, in the graph's order.
    pub by_family: Vec<FamilyUnits>,
    /// Every request of the sync.
    pub requests: u64,
}

/// Pages of a list of `n` items at `page` a page: at least one (an empty list is asked once).
pub fn pages(n: u64, page: u64) -> u64 {
    n.div_ceil(page.max(1)).max(1)
}

/// The mean of `of` over `items`; `empty` when there are none.
fn mean<T>(items: &[T], of: impl Fn(&T) -> Option<f64>, empty: f64) -> f64 {
    let told: Vec<f64> = items.iter().filter_map(of).collect();
    if told.is_empty() {
        return empty;
    }
    told.iter().sum::<f64>() / told.len() as f64
}

/// `mean × n`, rounded up: the only rounding of a family's total.
fn scaled(mean: f64, n: u64) -> u64 {
    // Counts are far inside f64's exact integers.
    (mean * n as f64).ceil() as u64
}

/// Search pages and bulk changelog requests of one project of `n` issues whose issues hold
/// `histories` changelog histories each, on average.
fn project_requests(n: u64, histories: f64) -> (u64, f64) {
    let searches = pages(n, SEARCH_PAGE);
    let mut bulk = 0.0;
    let mut left = n;
    while left > 0 {
        let on_page = left.min(SEARCH_PAGE);
        // A page's bulk is asked once, then once per further 1,000 histories.
        bulk += (on_page as f64 * histories / BULK_PAGE as f64)
            .ceil()
            .max(1.0);
        left -= on_page;
    }
    (searches, bulk)
}

/// The estimate for `probe`.
pub fn estimate(probe: &JiraProbe) -> JiraPlan {
    let s = &probe.issue_samples;
    let histories = mean(s, |i| i.changelog.map(|n| n as f64), 0.0);
    // Per project, over the sampled projects: search pages and bulk changelog requests.
    let per_project: Vec<(u64, f64)> = probe
        .project_issues
        .iter()
        .map(|&n| project_requests(n, histories))
        .collect();
    let searches = mean(&per_project, |p| Some(p.0 as f64), 1.0);
    let bulk = mean(&per_project, |p| Some(p.1), 0.0);
    let comment_pages = mean(s, |i| Some(pages(i.comments, COMMENT_PAGE) as f64), 1.0);
    let mut by_family = vec![
        FamilyUnits {
            stage: names::SITE,
            family: route::JIRA_METADATA,
            units: SITE_REQUESTS,
        },
        FamilyUnits {
            stage: names::PROJECTS,
            family: route::JIRA_METADATA,
            units: pages(probe.visible_projects, PROJECT_PAGE),
        },
        FamilyUnits {
            stage: names::ISSUES,
            family: route::JIRA_JQL,
            units: scaled(searches, probe.projects),
        },
        FamilyUnits {
            stage: names::ISSUES,
            family: route::JIRA_ISSUE_ENRICHMENT,
            units: scaled(bulk, probe.projects),
        },
        FamilyUnits {
            stage: names::ISSUES,
            family: route::JIRA_COMMENTS,
            units: scaled(comment_pages, probe.issues),
        },
    ];
    if probe.worklogs {
        let worklog_pages = mean(
            s,
            |i| i.worklogs.map(|n| pages(n, WORKLOG_PAGE) as f64),
            1.0,
        );
        by_family.push(FamilyUnits {
            stage: names::ISSUES,
            family: route::JIRA_WORKLOGS,
            units: scaled(worklog_pages, probe.issues),
        });
    }
    let agile = if probe.agile_refused {
        1
    } else {
        let sprint_pages = mean(
            &probe.sprint_samples,
            |&n| Some(pages(n, AGILE_PAGE) as f64),
            1.0,
        );
        pages(probe.boards, AGILE_PAGE) + scaled(sprint_pages, probe.scrum_boards)
    };
    by_family.push(FamilyUnits {
        stage: names::BOARDS,
        family: route::JIRA_AGILE,
        units: agile,
    });
    let requests = by_family.iter().map(|f| f.units).sum();
    JiraPlan {
        by_family,
        requests,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn units(plan: &JiraPlan, family: RouteFamily) -> u64 {
        plan.by_family
            .iter()
            .filter(|f| f.family == family)
            .map(|f| f.units)
            .sum()
    }

    fn uniform(projects: u64, issues: u64, comments: u64, changelog: u64) -> JiraProbe {
        JiraProbe {
            visible_projects: projects + 1,
            projects,
            issues: projects * issues,
            project_issues: vec![issues; projects as usize],
            issue_samples: vec![
                IssueSample {
                    comments,
                    changelog: Some(changelog),
                    worklogs: Some(2),
                };
                3
            ],
            boards: 52,
            scrum_boards: 3,
            sprint_samples: vec![51, 51],
            agile_refused: false,
            worklogs: true,
            requests: 0,
        }
    }

    #[test]
    fn a_uniform_site_is_estimated_as_the_stages_count_their_pages() {
        // 3 projects of 250 issues, 120 comments and 9 histories each: a project is searched
        // in 3 pages (100, 100, 50), whose bulk changelogs hold 900, 900 and 450 histories.
        let plan = estimate(&uniform(3, 250, 120, 9));
        assert_eq!(units(&plan, route::JIRA_METADATA), SITE_REQUESTS + 1);
        assert_eq!(units(&plan, route::JIRA_JQL), 9);
        assert_eq!(units(&plan, route::JIRA_ISSUE_ENRICHMENT), 9);
        // 120 comments: two pages of 100 per issue.
        assert_eq!(units(&plan, route::JIRA_COMMENTS), 750 * 2);
        assert_eq!(units(&plan, route::JIRA_WORKLOGS), 750);
        // Boards: 2 pages of 50; 3 scrum boards of 51 sprints: 2 pages each.
        assert_eq!(units(&plan, route::JIRA_AGILE), 2 + 6);
        // 12 histories an issue: a page of 100 issues holds 1,200, two bulk requests.
        let plan = estimate(&uniform(1, 100, 0, 12));
        assert_eq!(units(&plan, route::JIRA_ISSUE_ENRICHMENT), 2);
        assert_eq!(units(&plan, route::JIRA_COMMENTS), 100);
    }

    #[test]
    fn an_empty_selection_still_asks_each_list_once() {
        let probe = JiraProbe {
            projects: 2,
            project_issues: vec![0, 0],
            ..JiraProbe::default()
        };
        let plan = estimate(&probe);
        assert_eq!(units(&plan, route::JIRA_METADATA), SITE_REQUESTS + 1);
        assert_eq!(units(&plan, route::JIRA_JQL), 2, "a search per project");
        assert_eq!(
            units(&plan, route::JIRA_ISSUE_ENRICHMENT),
            0,
            "no page, no bulk"
        );
        assert_eq!(units(&plan, route::JIRA_COMMENTS), 0);
        assert_eq!(units(&plan, route::JIRA_WORKLOGS), 0, "not asked");
        assert_eq!(units(&plan, route::JIRA_AGILE), 1, "one page of boards");
        let refused = JiraProbe {
            agile_refused: true,
            boards: 500,
            scrum_boards: 9,
            ..probe
        };
        assert_eq!(units(&estimate(&refused), route::JIRA_AGILE), 1);
    }

    proptest! {
        /// The estimate is the sum of its families; more issues, comments or projects never
        /// cost fewer requests; and where every project is sampled and the data is uniform,
        /// the search pages are exactly the stage's.
        #[test]
        fn more_work_never_costs_less_and_uniform_sites_are_exact(
            projects in 1u64..40,
            issues in 0u64..1_000,
            more in 1u64..300,
            comments in 0u64..400,
            changelog in 0u64..30,
        ) {
            let small = uniform(projects, issues, comments, changelog);
            let plan = estimate(&small);
            prop_assert_eq!(plan.requests, plan.by_family.iter().map(|f| f.units).sum::<u64>());
            prop_assert_eq!(units(&plan, route::JIRA_JQL), projects * pages(issues, SEARCH_PAGE));
            prop_assert_eq!(
                units(&plan, route::JIRA_COMMENTS),
                projects * issues * pages(comments, COMMENT_PAGE)
            );
            let larger = uniform(projects, issues + more, comments + more, changelog);
            prop_assert!(estimate(&larger).requests >= plan.requests);
            let wider = uniform(projects + more, issues, comments, changelog);
            prop_assert!(estimate(&wider).requests >= plan.requests);
        }
    }
}
