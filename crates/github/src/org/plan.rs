//! `headroom sync plan org NAME`: the probe query and the cost model, as pure functions.
//!
//! One GraphQL query of a few points reads the organization's counts and a sample of its
//! first 100 repositories ([`PLAN_QUERY`], read by [`PlanProbe::read`]); the caller then asks
//! the workflow-run counts of a few sampled repositories over REST ([`PlanProbe::run_sample`])
//! and [`PlanProbe::estimate`] extrapolates requests, points and quota windows. Sending and
//! printing are the binary's; the arithmetic lives here, beside the stages it models.

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
    projectsV2(first: 100) { totalCount nodes { repositories(first: 1) { totalCount } } }
  }
  rateLimit { limit cost remaining used resetAt }
}";

/// Assumed where nothing cheap can measure it (an organization whose sampled pull requests or
/// repositories have nothing to count); stated in the output.
pub const COMMITS_PER_PULL: u64 = 3;
/// Assumed workflow runs per repository when no repository could be sampled.
pub const RUNS_PER_REPOSITORY: u64 = 3;
/// Repositories whose workflow-run count the plan reads (one REST request each).
pub const RUN_SAMPLE: usize = 3;
/// The org stages' REST page size.
const REST_PAGE: u64 = 100;
/// The org stages' GraphQL page size (see `stages::MAX_PAGE`).
const GRAPHQL_PAGE: u64 = 50;

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

/// The estimate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Pull requests, extrapolated to every repository.
    pub pull_requests: u64,
    /// Mean commits per pull request, measured or assumed.
    pub commits_per_pull_request: u64,
    /// Mean workflow runs per repository, measured or assumed.
    pub workflow_runs_per_repository: u64,
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

impl PlanProbe {
    /// Reads the answer to [`PLAN_QUERY`] (the whole response body) for organization `login`.
    pub fn read(body: &Value, login: &str) -> Result<PlanProbe, PlanError> {
        let data = body.get("data").filter(|d| !d.is_null());
        let org = data
            .and_then(|d| d.get("organization"))
            .filter(|o| !o.is_null());
        let Some(org) = org else {
            let messages: Vec<&str> = body
                .get("errors")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .filter_map(|e| e.get("message").and_then(Value::as_str))
                .collect();
            // Refused whole, or the organization's fields refused (a token without
            // `read:org`): GitHub's words. Only a plain NOT_FOUND means there is none.
            let all_not_found = body
                .get("errors")
                .and_then(Value::as_array)
                .is_none_or(|e| {
                    e.iter()
                        .all(|e| e.get("type").and_then(Value::as_str) == Some("NOT_FOUND"))
                });
            return Err(
                if !messages.is_empty() && (data.is_none() || !all_not_found) {
                    PlanError::Refused(headroom_core::redact(&messages.join("; ")))
                } else {
                    PlanError::NotFound(login.to_owned())
                },
            );
        };
        let organization_projects = count(org, &["projectsV2", "totalCount"]);
        // Projects that no repository links are fetched one by one: count them among the
        // first 100 listed and extrapolate.
        let listed = org.get("projectsV2").map_or(&[][..], nodes);
        let unlinked_listed = listed
            .iter()
            .filter(|p| count(p, &["repositories", "totalCount"]) == 0)
            .count() as u64;
        let unlinked_projects =
            (unlinked_listed * organization_projects).div_ceil(listed.len().max(1) as u64);
        let sample = org.get("repositories").map_or(&[][..], nodes);
        let mut probe = PlanProbe {
            members: count(org, &["membersWithRole", "totalCount"]),
            teams: count(org, &["teams", "totalCount"]),
            repositories: count(org, &["repositories", "totalCount"]),
            organization_projects,
            unlinked_projects,
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

    /// The repositories whose workflow-run count the plan asks for (`total_count` of
    /// `GET /repos/{org}/{name}/actions/runs?per_page=1`).
    pub fn run_sample(&self) -> &[String] {
        &self.sample[..self.sample.len().min(RUN_SAMPLE)]
    }

    /// The estimate, given the run counts of [`Self::run_sample`]'s repositories and the
    /// limits of the core and GraphQL buckets.
    pub fn estimate(&self, run_counts: &[u64], core_limit: u64, graphql_limit: u64) -> Plan {
        let commits_per_pull = if self.sampled_pulls == 0 {
            COMMITS_PER_PULL
        } else {
            self.sampled_commits.div_ceil(self.sampled_pulls)
        };
        let runs_per_repository = if run_counts.is_empty() {
            RUNS_PER_REPOSITORY
        } else {
            run_counts
                .iter()
                .sum::<u64>()
                .div_ceil(run_counts.len() as u64)
        };
        // Extrapolate from the sample (the first 100 repositories) to all of them.
        let repos = self.repositories;
        let n = self.sampled_repositories.max(1);
        let scale = |x: u64| (x * repos).div_ceil(n);
        let commits = scale(self.pulls) * commits_per_pull;
        let runs = repos * runs_per_repository;
        let family = |stage, family, units| FamilyEstimate {
            stage,
            family,
            units,
        };
        let by_family = vec![
            family(
                names::ORG,
                route::ORGANIZATION,
                1 + pages(self.members) + pages(self.teams),
            ),
            family(names::REPOSITORIES, route::REPOSITORIES, pages(repos)),
            family(names::REPOSITORIES, route::ISSUES, scale(self.issue_pages)),
            // Issue comments come in pages of issues.
            family(
                names::ISSUE_COMMENTS,
                route::ISSUE_COMMENTS,
                scale(self.issue_pages),
            ),
            // Projects through their repositories, then the organization's listing and the
            // unlinked ones.
            family(
                names::PROJECTS,
                route::PROJECTS,
                repos + pages(self.organization_projects) + self.unlinked_projects,
            ),
            family(
                names::PULL_REQUESTS,
                route::PULL_REQUESTS,
                scale(self.pull_pages),
            ),
            family(names::BRANCHES, route::BRANCHES, scale(self.branch_pages)),
            family(names::COMMIT_FILES, route::COMMIT_FILES, commits),
            // Runs: their listing pages per repository, then jobs per run and check runs per
            // head commit (counted as one per run: an upper bound when runs share a commit).
            family(
                names::WORKFLOW_RUNS,
                route::WORKFLOW_RUNS,
                repos * runs_per_repository.div_ceil(REST_PAGE).max(1),
            ),
            family(names::WORKFLOW_RUNS, route::WORKFLOW_JOBS, runs),
            family(names::WORKFLOW_RUNS, route::CHECK_RUNS, runs),
        ];
        let in_dimension = |d| {
            by_family
                .iter()
                .filter(|f| f.family.dimension == d)
                .map(|f| f.units)
                .sum::<u64>()
        };
        let graphql_requests = in_dimension(headroom_core::Dimension::GraphqlCost);
        let rest_requests = in_dimension(headroom_core::Dimension::RestCore);
        // Every GraphQL page of these stages costs one point (GitHub's rule: nested
        // connections of 50 × 100 round to 1).
        let quota_windows = rest_requests
            .div_ceil(core_limit.max(1))
            .max(graphql_requests.div_ceil(graphql_limit.max(1)));
        Plan {
            pull_requests: scale(self.pulls),
            commits_per_pull_request: commits_per_pull,
            workflow_runs_per_repository: runs_per_repository,
            repositories_sampled_for_runs: run_counts.len(),
            graphql_requests,
            rest_requests,
            quota_windows,
            by_family,
        }
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
                { "repositories": { "totalCount": 0 } }, { "repositories": { "totalCount": 1 } } ] }
        } } })
    }

    #[test]
    fn the_probe_reads_counts_and_the_sample() {
        let p = PlanProbe::read(&body(), "acme").expect("readable");
        assert_eq!((p.members, p.teams, p.repositories), (120, 3, 4));
        assert_eq!((p.organization_projects, p.unlinked_projects), (4, 2));
        assert_eq!(p.sample, vec!["a", "b"]);
        // a: 3 + 1 + 1 pages; b: 1 + 1 + 2.
        assert_eq!((p.issue_pages, p.pull_pages, p.branch_pages), (4, 2, 3));
        assert_eq!((p.pulls, p.sampled_pulls, p.sampled_commits), (2, 2, 5));
        assert_eq!(p.run_sample(), ["a", "b"]);
    }

    #[test]
    fn the_estimate_extrapolates_the_sample() {
        let p = PlanProbe::read(&body(), "acme").expect("readable");
        let plan = p.estimate(&[10, 20], 5_000, 5_000);
        assert_eq!(plan.commits_per_pull_request, 3); // ceil(5 / 2)
        assert_eq!(plan.workflow_runs_per_repository, 15);
        assert_eq!(plan.pull_requests, 4); // 2 × 4 / 2
        // 1 + 3 (members) + 1 + 1 + 8 × 2 + 4 + 1 + 2 + 4 + 6.
        assert_eq!(plan.graphql_requests, 39);
        // 4 × 3 commits + 4 listing pages + 60 runs × 2.
        assert_eq!(plan.rest_requests, 136);
        assert_eq!(plan.quota_windows, 1);
        let assumed = p.estimate(&[], 100, 5_000);
        assert_eq!(assumed.workflow_runs_per_repository, RUNS_PER_REPOSITORY);
        assert_eq!(assumed.quota_windows, 1);
    }

    #[test]
    fn the_estimate_per_family_belongs_to_declared_stages_and_sums_to_the_totals() {
        let plan = PlanProbe::read(&body(), "acme")
            .expect("readable")
            .estimate(&[10, 20], 5_000, 5_000);
        let stages: Vec<&str> = super::super::declarations()
            .iter()
            .map(|d| d.name)
            .collect();
        for f in &plan.by_family {
            assert!(stages.contains(&f.stage), "{}", f.stage);
            assert!(route::CATALOGUE.contains(&f.family), "{}", f.family);
        }
        let units = |family| {
            plan.by_family
                .iter()
                .find(|f| f.family == family)
                .map(|f| (f.stage, f.units))
        };
        // 4 repositories × 15 runs, a job listing and a check-run listing each.
        assert_eq!(
            units(route::WORKFLOW_JOBS),
            Some((names::WORKFLOW_RUNS, 60))
        );
        assert_eq!(units(route::CHECK_RUNS), Some((names::WORKFLOW_RUNS, 60)));
        assert_eq!(units(route::ORGANIZATION), Some((names::ORG, 5)));
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
