//! `headroom sync plan org NAME`: the probe query and the cost model, as pure functions.
//!
//! One GraphQL query of a few points reads the organization's counts and a sample of its
//! first 100 repositories ([`PLAN_QUERY`], read by [`PlanProbe::read`]); the caller then reads
//! the first page of workflow runs of repositories spread over that sample
//! ([`PlanProbe::run_sample`], each read by [`RunSample::read`]) and [`PlanProbe::estimate`]
//! extrapolates requests, points and quota windows. The model uses exact means and rounds
//! only each family's total: a rounded-up mean multiplied by thousands is an overestimate.
//! Sending the probe is [`send`]'s; the arithmetic lives here, beside the stages it models.

mod send;
pub use send::{ProbeError, probe};

use headroom_core::{RouteFamily, route};
use serde_json::Value;

use super::gql::count_at as count;
use super::gql::nodes;
use super::names;

/// The probe: counts of every connection a sync walks, and a sample to measure depth on.
pub const PLAN_QUERY: &str = "query($login: String!) {
  organization(login: $login) {
    membersWithRole(first: 1) { totalCount }
    teams(first: 1) { totalCount }
    repositories(first: 100) {
      totalCount
      nodes {
        name
        issues(first: 1) { totalCount }
        pullRequests(first: 10) { totalCount nodes { commits(first: 1) { totalCount } } }
        refs(refPrefix: \"refs/heads/\", first: 1) { totalCount }
      }
    }
    projectsV2(first: 100) {
      totalCount
      nodes { repositories(first: 1) { totalCount } items(first: 1) { totalCount } }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

/// Assumed where nothing cheap can measure it (an organization whose sampled pull requests or
/// repositories have nothing to count); stated in the output.
pub const COMMITS_PER_PULL: u64 = 3;
/// Assumed workflow runs per repository when no repository could be sampled.
pub const RUNS_PER_REPOSITORY: u64 = 3;
/// Repositories whose first page of workflow runs the plan reads (one REST request each),
/// spread evenly over the sampled list. Run counts vary most between repositories and jobs
/// are most of a sync's REST requests: a sample of 3 misjudged a 40-repository organization
/// by 3×, while 32 requests are under 1 % of what a 125-repository sync spends.
pub const RUN_SAMPLE: usize = 32;
/// The org stages' REST page size.
const REST_PAGE: u64 = 100;
/// The org stages' GraphQL page size (see `stages::MAX_PAGE`).
const GRAPHQL_PAGE: u64 = 50;
/// Items a project's first page carries (`items(first: 100)`); the rest come 100 a page.
const ITEMS_PAGE: u64 = 100;

/// Why the probe's answer cannot be planned on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// GitHub refused the query as a whole (no `data`): its messages, redacted.
    #[error("GitHub refused the plan query: {0}")]
    Refused(String),
    /// `organization` is null.
    #[error("organization {0} not found")]
    NotFound(String),
}

/// What the probe measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanProbe {
    /// Members (`membersWithRole.totalCount`).
    pub members: u64,
    /// Teams.
    pub teams: u64,
    /// Repositories.
    pub repositories: u64,
    /// The organization's projects (v2).
    pub organization_projects: u64,
    /// Of those, the ones no repository links, extrapolated from the first 100 listed.
    pub unlinked_projects: u64,
    /// Projects listed by the probe (the first 100).
    pub listed_projects: u64,
    /// Follow-up item pages the listed projects cost through the repositories linking them:
    /// each linking repository's pass reads the project with its first 100 items, then the
    /// rest 100 a page.
    pub listed_linked_followups: u64,
    /// Requests the listed projects that no repository links cost (each read on its own,
    /// then its items past the first 100).
    pub listed_unlinked_requests: u64,
    /// Names of the sampled repositories (the first 100), in order.
    pub sample: Vec<String>,
    /// Sampled repositories (nodes, named or not).
    pub sampled_repositories: u64,
    /// Pages of 50 the sample's issues, pull requests and branches need.
    pub issue_pages: u64,
    /// See `issue_pages`.
    pub pull_pages: u64,
    /// See `issue_pages`.
    pub branch_pages: u64,
    /// Pull requests in the sample.
    pub pulls: u64,
    /// Pull requests whose commits were counted (the first 10 of each sampled repository).
    pub sampled_pulls: u64,
    /// Their commits.
    pub sampled_commits: u64,
}

/// One sampled repository's workflow runs, from the first page of
/// `GET /repos/{org}/{name}/actions/runs?per_page=100`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunSample {
    /// `total_count`: the repository's runs.
    pub total: u64,
    /// Runs on the page read.
    pub page_runs: u64,
    /// Distinct `head_sha` among them: the stage reads check runs once per head commit of a
    /// page of runs, not once per run.
    pub distinct_heads: u64,
}

impl RunSample {
    /// Reads a page of `GET …/actions/runs`.
    pub fn read(body: &Value) -> RunSample {
        let runs = body
            .get("workflow_runs")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let mut heads: Vec<&str> = runs
            .iter()
            .filter_map(|r| r.get("head_sha").and_then(Value::as_str))
            .collect();
        heads.sort_unstable();
        heads.dedup();
        RunSample {
            total: count(body, &["total_count"]),
            page_runs: runs.len() as u64,
            distinct_heads: heads.len() as u64,
        }
    }
}

/// The estimate.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Pull requests, extrapolated to every repository.
    pub pull_requests: u64,
    /// Mean commits per pull request, measured or assumed.
    pub commits_per_pull_request: f64,
    /// Mean workflow runs per repository, measured or assumed.
    pub workflow_runs_per_repository: f64,
    /// Distinct head commits per workflow run (1 when runs never share a commit).
    pub heads_per_workflow_run: f64,
    /// Repositories whose runs were counted.
    pub repositories_sampled_for_runs: usize,
    /// GraphQL requests; each page of these stages costs one point.
    pub graphql_requests: u64,
    /// REST (core) requests.
    pub rest_requests: u64,
    /// Quota windows needed with the limits given.
    pub quota_windows: u64,
    /// The same requests per stage and route family (each family's units in its dimension:
    /// requests for REST, points for GraphQL, one per page here), what a run's calibration
    /// holds the actuals against.
    pub by_family: Vec<FamilyEstimate>,
}

/// One stage's estimate on one route family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FamilyEstimate {
    /// The stage (`names::*`).
    pub stage: &'static str,
    /// The family it sends.
    pub family: RouteFamily,
    /// Estimated units.
    pub units: u64,
}

fn pages(n: u64) -> u64 {
    n.div_ceil(GRAPHQL_PAGE).max(1)
}

/// Item pages after a project's first: its items past the first 100, 100 a page.
fn item_followups(items: u64) -> u64 {
    items.saturating_sub(ITEMS_PAGE).div_ceil(ITEMS_PAGE)
}

/// `part / whole`, or `fallback` when there is no whole.
fn mean(part: u64, whole: u64, fallback: f64) -> f64 {
    if whole == 0 {
        fallback
    } else {
        part as f64 / whole as f64
    }
}

/// A total from a model: rounded once, never negative.
fn units(x: f64) -> u64 {
    if x.is_finite() && x > 0.0 {
        x.round() as u64
    } else {
        0
    }
}

impl PlanProbe {
    /// Reads the answer to [`PLAN_QUERY`] (the whole response body) for organization `login`.
    pub fn read(body: &Value, login: &str) -> Result<PlanProbe, PlanError> {
        let data = body.get("data").filter(|d| !d.is_null());
        let org = data
            .and_then(|d| d.get("organization"))
            .filter(|o| !o.is_null());
        let Some(org) = org else {
            return Err(refusal(body, data.is_none(), login));
        };
        let organization_projects = count(org, &["projectsV2", "totalCount"]);
        // Projects that no repository links are fetched one by one; projects linked to
        // repositories are read once per linking repository. Count both among the first 100
        // listed and extrapolate.
        let listed = org.get("projectsV2").map_or(&[][..], nodes);
        let (mut unlinked_listed, mut linked_followups, mut unlinked_requests) = (0, 0, 0);
        for p in listed {
            let links = count(p, &["repositories", "totalCount"]);
            let followups = item_followups(count(p, &["items", "totalCount"]));
            if links == 0 {
                unlinked_listed += 1;
                unlinked_requests += 1 + followups;
            } else {
                linked_followups += links * followups;
            }
        }
        let unlinked_projects =
            (unlinked_listed * organization_projects).div_ceil(listed.len().max(1) as u64);
        let sample = org.get("repositories").map_or(&[][..], nodes);
        let mut probe = PlanProbe {
            members: count(org, &["membersWithRole", "totalCount"]),
            teams: count(org, &["teams", "totalCount"]),
            repositories: count(org, &["repositories", "totalCount"]),
            organization_projects,
            unlinked_projects,
            listed_projects: listed.len() as u64,
            listed_linked_followups: linked_followups,
            listed_unlinked_requests: unlinked_requests,
            sample: Vec::new(),
            sampled_repositories: sample.len() as u64,
            issue_pages: 0,
            pull_pages: 0,
            branch_pages: 0,
            pulls: 0,
            sampled_pulls: 0,
            sampled_commits: 0,
        };
        for r in sample {
            if let Some(name) = r.get("name").and_then(Value::as_str) {
                probe.sample.push(name.to_owned());
            }
            probe.issue_pages += pages(count(r, &["issues", "totalCount"]));
            probe.pull_pages += pages(count(r, &["pullRequests", "totalCount"]));
            probe.branch_pages += pages(count(r, &["refs", "totalCount"]));
            probe.pulls += count(r, &["pullRequests", "totalCount"]);
            // Commits of the first pull requests of each sampled repository: the measured
            // mean.
            for pr in r.get("pullRequests").map_or(&[][..], nodes) {
                probe.sampled_pulls += 1;
                probe.sampled_commits += count(pr, &["commits", "totalCount"]);
            }
        }
        Ok(probe)
    }

    /// The repositories whose first page of workflow runs the plan reads
    /// (`GET /repos/{org}/{name}/actions/runs?per_page=100`): up to [`RUN_SAMPLE`], spread
    /// evenly over the sample, not its first few (the listing's order is not random).
    pub fn run_sample(&self) -> Vec<&str> {
        let n = self.sample.len();
        let k = n.min(RUN_SAMPLE);
        (0..k).map(|i| self.sample[i * n / k].as_str()).collect()
    }

    /// The estimate, given the run samples of [`Self::run_sample`]'s repositories and the
    /// limits of the core and GraphQL buckets.
    pub fn estimate(&self, runs: &[RunSample], core_limit: u64, graphql_limit: u64) -> Plan {
        let commits_per_pull = mean(
            self.sampled_commits,
            self.sampled_pulls,
            COMMITS_PER_PULL as f64,
        );
        let runs_per_repository = mean(
            runs.iter().map(|r| r.total).sum(),
            runs.len() as u64,
            RUNS_PER_REPOSITORY as f64,
        );
        let heads_per_run = mean(
            runs.iter().map(|r| r.distinct_heads).sum(),
            runs.iter().map(|r| r.page_runs).sum(),
            1.0,
        );
        // Listing pages of runs per repository, from the sampled counts themselves.
        let run_pages_per_repository = mean(
            runs.iter()
                .map(|r| r.total.div_ceil(REST_PAGE).max(1))
                .sum(),
            runs.len() as u64,
            1.0,
        );
        // Extrapolate from the sample (the first 100 repositories) to all of them.
        let repos = self.repositories as f64;
        let scale = self.repositories as f64 / self.sampled_repositories.max(1) as f64;
        let project_scale = self.organization_projects as f64 / self.listed_projects.max(1) as f64;
        let pulls = self.pulls as f64 * scale;
        let runs_total = repos * runs_per_repository;
        let family = |stage, family, estimate: f64| FamilyEstimate {
            stage,
            family,
            units: units(estimate),
        };
        let by_family = vec![
            FamilyEstimate {
                stage: names::ORG,
                family: route::ORGANIZATION,
                units: 1 + pages(self.members) + pages(self.teams),
            },
            FamilyEstimate {
                stage: names::REPOSITORIES,
                family: route::REPOSITORIES,
                units: pages(self.repositories),
            },
            family(
                names::REPOSITORIES,
                route::ISSUES,
                self.issue_pages as f64 * scale,
            ),
            // Issue comments come in pages of issues.
            family(
                names::ISSUE_COMMENTS,
                route::ISSUE_COMMENTS,
                self.issue_pages as f64 * scale,
            ),
            // Projects through their repositories (a page each, then the items of linked
            // projects past their first 100), then the organization's listing and the
            // unlinked ones.
            family(
                names::PROJECTS,
                route::PROJECTS,
                repos
                    + self.listed_linked_followups as f64 * project_scale
                    + pages(self.organization_projects) as f64
                    + self.listed_unlinked_requests as f64 * project_scale,
            ),
            family(
                names::PULL_REQUESTS,
                route::PULL_REQUESTS,
                self.pull_pages as f64 * scale,
            ),
            family(
                names::BRANCHES,
                route::BRANCHES,
                self.branch_pages as f64 * scale,
            ),
            family(
                names::COMMIT_FILES,
                route::COMMIT_FILES,
                pulls * commits_per_pull,
            ),
            // Runs: their listing pages per repository, then jobs per run and check runs per
            // distinct head commit of a page of runs.
            family(
                names::WORKFLOW_RUNS,
                route::WORKFLOW_RUNS,
                repos * run_pages_per_repository,
            ),
            family(names::WORKFLOW_RUNS, route::WORKFLOW_JOBS, runs_total),
            family(
                names::WORKFLOW_RUNS,
                route::CHECK_RUNS,
                runs_total * heads_per_run,
            ),
        ];
        let (graphql_requests, rest_requests, quota_windows) =
            totals(&by_family, core_limit, graphql_limit);
        Plan {
            pull_requests: units(pulls),
            commits_per_pull_request: commits_per_pull,
            workflow_runs_per_repository: runs_per_repository,
            heads_per_workflow_run: heads_per_run,
            repositories_sampled_for_runs: runs.len(),
            graphql_requests,
            rest_requests,
            quota_windows,
            by_family,
        }
    }
}

/// GraphQL requests, REST requests and the quota windows they need with the limits given.
/// Every GraphQL page of these stages costs one point (GitHub's rule: nested connections of
/// 50 × 100 round to 1).
fn totals(by_family: &[FamilyEstimate], core_limit: u64, graphql_limit: u64) -> (u64, u64, u64) {
    let in_dimension = |d| {
        by_family
            .iter()
            .filter(|f| f.family.dimension == d)
            .map(|f| f.units)
            .sum::<u64>()
    };
    let graphql = in_dimension(headroom_core::Dimension::GraphqlCost);
    let rest = in_dimension(headroom_core::Dimension::RestCore);
    let windows = rest
        .div_ceil(core_limit.max(1))
        .max(graphql.div_ceil(graphql_limit.max(1)));
    (graphql, rest, windows)
}

/// Why an answer without an organization cannot be planned on.
fn refusal(body: &Value, no_data: bool, login: &str) -> PlanError {
    let errors = body
        .get("errors")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let messages: Vec<&str> = errors
        .iter()
        .filter_map(|e| e.get("message").and_then(Value::as_str))
        .collect();
    // Refused whole, or the organization's fields refused (a token without `read:org`):
    // GitHub's words. Only a plain NOT_FOUND means there is none.
    let all_not_found = errors
        .iter()
        .all(|e| e.get("type").and_then(Value::as_str) == Some("NOT_FOUND"));
    if !messages.is_empty() && (no_data || !all_not_found) {
        PlanError::Refused(headroom_core::redact(&messages.join("; ")))
    } else {
        PlanError::NotFound(login.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body() -> Value {
        json!({ "data": { "organization": {
            "membersWithRole": { "totalCount": 120 },
            "teams": { "totalCount": 3 },
            "repositories": { "totalCount": 4, "nodes": [
                { "name": "a", "issues": { "totalCount": 120 },
                  "pullRequests": { "totalCount": 2, "nodes": [
                      { "commits": { "totalCount": 4 } }, { "commits": { "totalCount": 1 } } ] },
                  "refs": { "totalCount": 1 } },
                { "name": "b", "issues": { "totalCount": 0 },
                  "pullRequests": { "totalCount": 0, "nodes": [] },
                  "refs": { "totalCount": 51 } }
            ] },
            "projectsV2": { "totalCount": 4, "nodes": [
                { "repositories": { "totalCount": 0 }, "items": { "totalCount": 250 } },
                { "repositories": { "totalCount": 1 }, "items": { "totalCount": 150 } } ] }
        } } })
    }

    /// Two sampled repositories: 10 runs on 5 head commits, 20 runs on 5.
    fn runs() -> [RunSample; 2] {
        [
            RunSample {
                total: 10,
                page_runs: 10,
                distinct_heads: 5,
            },
            RunSample {
                total: 20,
                page_runs: 20,
                distinct_heads: 5,
            },
        ]
    }

    fn units_of(plan: &Plan, family: RouteFamily) -> Option<(&'static str, u64)> {
        plan.by_family
            .iter()
            .find(|f| f.family == family)
            .map(|f| (f.stage, f.units))
    }

    #[test]
    fn the_probe_reads_counts_and_the_sample() {
        let p = PlanProbe::read(&body(), "acme").expect("readable");
        assert_eq!((p.members, p.teams, p.repositories), (120, 3, 4));
        assert_eq!((p.organization_projects, p.unlinked_projects), (4, 2));
        // The unlinked project: itself, then 150 items past its first 100 (2 pages); the
        // linked one: 50 items past the first 100, through its one repository.
        assert_eq!(
            (
                p.listed_projects,
                p.listed_linked_followups,
                p.listed_unlinked_requests
            ),
            (2, 1, 3)
        );
        assert_eq!(p.sample, vec!["a", "b"]);
        // a: 3 + 1 + 1 pages; b: 1 + 1 + 2.
        assert_eq!((p.issue_pages, p.pull_pages, p.branch_pages), (4, 2, 3));
        assert_eq!((p.pulls, p.sampled_pulls, p.sampled_commits), (2, 2, 5));
        assert_eq!(p.run_sample(), ["a", "b"]);
    }

    #[test]
    fn the_estimate_extrapolates_the_sample() {
        let p = PlanProbe::read(&body(), "acme").expect("readable");
        let plan = p.estimate(&runs(), 50, 5_000);
        assert_eq!(plan.commits_per_pull_request, 2.5);
        assert_eq!(plan.workflow_runs_per_repository, 15.0);
        assert_eq!(plan.pull_requests, 4); // 2 × 4 / 2
        // 5 (org) + 1 + 8 issues + 8 comments + 13 projects + 4 pulls + 6 branches.
        assert_eq!(plan.graphql_requests, 45);
        // 4 × 2.5 commits + 4 listing pages + 60 runs' jobs + 20 head commits' checks.
        assert_eq!(plan.rest_requests, 94);
        assert_eq!(plan.quota_windows, 2);
        let assumed = p.estimate(&[], 100, 5_000);
        assert_eq!(
            assumed.workflow_runs_per_repository,
            RUNS_PER_REPOSITORY as f64
        );
        assert_eq!(assumed.quota_windows, 1);
    }

    #[test]
    fn check_runs_are_estimated_per_distinct_head_commit_not_per_run() {
        let plan = PlanProbe::read(&body(), "acme")
            .expect("readable")
            .estimate(&runs(), 5_000, 5_000);
        // 60 runs, a third of them on a head commit not seen before on their page.
        assert_eq!(
            units_of(&plan, route::WORKFLOW_JOBS),
            Some((names::WORKFLOW_RUNS, 60))
        );
        assert_eq!(
            units_of(&plan, route::CHECK_RUNS),
            Some((names::WORKFLOW_RUNS, 20))
        );
        // A page of runs is read whole, so the heads can be counted.
        let page = json!({ "total_count": 250, "workflow_runs": [
            { "head_sha": "a" }, { "head_sha": "b" }, { "head_sha": "a" }, { "head_sha": "a" } ] });
        assert_eq!(
            RunSample::read(&page),
            RunSample {
                total: 250,
                page_runs: 4,
                distinct_heads: 2
            }
        );
    }

    #[test]
    fn means_are_exact_not_rounded_up_before_they_are_multiplied() {
        let plan = PlanProbe::read(&body(), "acme")
            .expect("readable")
            .estimate(&runs(), 5_000, 5_000);
        // 4 pull requests × 2.5 commits, not × ceil(2.5).
        assert_eq!(
            units_of(&plan, route::COMMIT_FILES),
            Some((names::COMMIT_FILES, 10))
        );
    }

    #[test]
    fn project_items_past_a_page_are_estimated() {
        let plan = PlanProbe::read(&body(), "acme")
            .expect("readable")
            .estimate(&runs(), 5_000, 5_000);
        // A page per repository (4), the linked projects' follow-up item pages (1, × 2 for
        // the projects not listed), the listing (1), and the unlinked ones with their items
        // (3, × 2).
        assert_eq!(
            units_of(&plan, route::PROJECTS),
            Some((names::PROJECTS, 13))
        );
    }

    #[test]
    fn the_run_sample_is_spread_over_the_repositories_not_the_first_three() {
        let mut p = PlanProbe::read(&body(), "acme").expect("readable");
        p.sample = (0..100).map(|i| format!("r{i}")).collect();
        let sample = p.run_sample();
        assert_eq!(sample.len(), RUN_SAMPLE);
        assert_eq!(sample[0], "r0");
        // The last quarter of the list is sampled as much as the first.
        let late = sample
            .iter()
            .filter(|n| n[1..].parse::<usize>().is_ok_and(|i| i >= 75))
            .count();
        assert!(late >= RUN_SAMPLE / 4, "{sample:?}");
        let mut distinct = sample.clone();
        distinct.dedup();
        assert_eq!(distinct.len(), sample.len(), "{sample:?}");
    }

    #[test]
    fn the_estimate_per_family_belongs_to_declared_stages_and_sums_to_the_totals() {
        let plan = PlanProbe::read(&body(), "acme")
            .expect("readable")
            .estimate(&runs(), 5_000, 5_000);
        let stages: Vec<&str> = super::super::declarations()
            .iter()
            .map(|d| d.name)
            .collect();
        for f in &plan.by_family {
            assert!(stages.contains(&f.stage), "{}", f.stage);
            assert!(route::CATALOGUE.contains(&f.family), "{}", f.family);
        }
        assert_eq!(units_of(&plan, route::ORGANIZATION), Some((names::ORG, 5)));
        let rest: u64 = plan
            .by_family
            .iter()
            .filter(|f| f.family.dimension == headroom_core::Dimension::RestCore)
            .map(|f| f.units)
            .sum();
        assert_eq!(rest, plan.rest_requests);
    }

    #[test]
    fn a_missing_organization_and_a_refused_query_are_told_apart() {
        let gone = json!({ "data": { "organization": null },
            "errors": [{ "type": "NOT_FOUND", "message": "Could not resolve" }] });
        assert_eq!(
            PlanProbe::read(&gone, "nope"),
            Err(PlanError::NotFound("nope".into()))
        );
        let refused =
            json!({ "errors": [{ "message": "Field 'x' doesn't exist on type 'Organization'" }] });
        assert!(matches!(
            PlanProbe::read(&refused, "acme"),
            Err(PlanError::Refused(m)) if m.contains("doesn't exist")
        ));
    }
}
