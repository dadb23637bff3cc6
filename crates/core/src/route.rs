//! The catalogue of route families: every endpoint group headroom sends requests to, with
//! the budget dimension it spends and what it is for, declared here and nowhere else.
//!
//! A request names its family with a [`RouteFamily`] constant (`ApiRequest::route` takes
//! nothing else), so a family the catalogue does not list cannot be sent. Usage records,
//! `/metrics` and sync calibration keep the family's [`RouteFamily::name`];
//! docs/ROUTE-FAMILIES.md is generated from [`CATALOGUE`] and a test keeps the two equal.

use std::fmt;

use crate::signal::{Dimension, Provider};

/// One endpoint group: which provider, its stable name, the dimension it spends, and its
/// meaning (one line, for the docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RouteFamily {
    /// The provider whose API it calls; `None` for requests any provider's client sends.
    pub provider: Option<Provider>,
    /// The stable snake_case name usage records and metrics carry.
    pub name: &'static str,
    /// The budget dimension its requests spend.
    pub dimension: Dimension,
    /// What it is, in one line.
    pub meaning: &'static str,
}

impl RouteFamily {
    /// The provider's name as the docs spell it (`any` for provider-neutral families).
    pub fn provider_name(&self) -> &'static str {
        match self.provider {
            None => "any",
            Some(Provider::GitHub) => "github",
            Some(Provider::GitLab) => "gitlab",
            Some(Provider::Jira) => "jira",
            Some(Provider::Linear) => "linear",
            Some(Provider::LaunchDarkly) => "launchdarkly",
        }
    }

    /// The catalogued family of this name, if any.
    pub fn named(name: &str) -> Option<RouteFamily> {
        CATALOGUE.iter().copied().find(|f| f.name == name)
    }
}

impl fmt::Display for RouteFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name)
    }
}

const fn family(
    provider: Option<Provider>,
    name: &'static str,
    dimension: Dimension,
    meaning: &'static str,
) -> RouteFamily {
    RouteFamily {
        provider,
        name,
        dimension,
        meaning,
    }
}

const GH: Option<Provider> = Some(Provider::GitHub);

/// A REST request its caller did not classify (the default of `ApiRequest::get`).
pub const REST: RouteFamily = family(
    None,
    "rest",
    Dimension::RestCore,
    "A REST request its caller did not classify (the request builder's default).",
);
/// A GraphQL request its caller did not classify (the default of `ApiRequest::graphql`).
pub const GRAPHQL: RouteFamily = family(
    None,
    "graphql",
    Dimension::GraphqlCost,
    "A GraphQL request its caller did not classify (the request builder's default).",
);
/// Who a credential is (`GET /user` and its equivalents), to key its quota.
pub const IDENTITY: RouteFamily = family(
    None,
    "identity",
    Dimension::RestCore,
    "Who a credential is (GitHub `GET /user`), to key its quota identity.",
);
/// GitHub provider operations (`headroom_github::ops`).
pub const GITHUB_OPS: RouteFamily = family(
    GH,
    "github_ops",
    Dimension::RestCore,
    "A GitHub provider operation (issues, comments, labels, pull requests, …).",
);
/// GitLab provider operations (`headroom_gitlab::ops`).
pub const GITLAB_OPS: RouteFamily = family(
    Some(Provider::GitLab),
    "gitlab_ops",
    Dimension::RestCore,
    "A GitLab provider operation (issues, notes, merge requests, …).",
);
/// The feed poller's event pages.
pub const FEED_POLL: RouteFamily = family(
    GH,
    "feed_poll",
    Dimension::RestCore,
    "The feed poller's pages of organization and repository events.",
);
/// The feed's search enrichment.
pub const ENRICH_SEARCH: RouteFamily = family(
    GH,
    "enrich_search",
    Dimension::Search,
    "Feed enrichment through the search API (its own, smaller bucket).",
);
/// The feed's detail enrichment.
pub const ENRICH_DETAIL: RouteFamily = family(
    GH,
    "enrich_detail",
    Dimension::RestCore,
    "Feed enrichment by fetching one issue or pull request.",
);
/// `headroom sync plan`'s probe.
pub const SYNC_PLAN_GRAPHQL: RouteFamily = family(
    GH,
    "sync_plan",
    Dimension::GraphqlCost,
    "`headroom sync plan`'s counting query (a few GraphQL points).",
);
/// `headroom sync plan`'s workflow-run sample.
pub const SYNC_PLAN_REST: RouteFamily = family(
    GH,
    "sync_plan_runs",
    Dimension::RestCore,
    "`headroom sync plan`'s sample of workflow-run counts (one REST request per sampled repository).",
);
/// `headroom quota probe`.
pub const QUOTA_PROBE: RouteFamily = family(
    None,
    "quota_probe",
    Dimension::RestCore,
    "`headroom quota` reading a bucket's state from the provider (GitHub `GET /rate_limit`).",
);
/// Org sync: the organization, its members and teams.
pub const ORGANIZATION: RouteFamily = family(
    GH,
    "organization",
    Dimension::GraphqlCost,
    "Org sync: the organization, its members and teams.",
);
/// Org sync: the repository listing.
pub const REPOSITORIES: RouteFamily = family(
    GH,
    "repositories",
    Dimension::GraphqlCost,
    "Org sync: the organization's repositories.",
);
/// Org sync: issues.
pub const ISSUES: RouteFamily = family(
    GH,
    "issues",
    Dimension::GraphqlCost,
    "Org sync: each repository's issues.",
);
/// Org sync: issue comments.
pub const ISSUE_COMMENTS: RouteFamily = family(
    GH,
    "issue_comments",
    Dimension::GraphqlCost,
    "Org sync: issue comments, by pages of issues and one issue at a time past the first 100.",
);
/// Org sync: pull requests.
pub const PULL_REQUESTS: RouteFamily = family(
    GH,
    "pull_requests",
    Dimension::GraphqlCost,
    "Org sync: pull requests, with the first 100 commits of each.",
);
/// Org sync: commits past a pull request's first 100.
pub const COMMITS: RouteFamily = family(
    GH,
    "commits",
    Dimension::GraphqlCost,
    "Org sync: a pull request's commits past its first 100, one pull request at a time.",
);
/// Org sync: commit files (REST).
pub const COMMIT_FILES: RouteFamily = family(
    GH,
    "commit_files",
    Dimension::RestCore,
    "Org sync: the files of one commit (`GET /repos/{o}/{r}/commits/{sha}`).",
);
/// Org sync: workflow runs (REST).
pub const WORKFLOW_RUNS: RouteFamily = family(
    GH,
    "workflow_runs",
    Dimension::RestCore,
    "Org sync: pages of a repository's workflow runs.",
);
/// Org sync: workflow jobs (REST).
pub const WORKFLOW_JOBS: RouteFamily = family(
    GH,
    "workflow_jobs",
    Dimension::RestCore,
    "Org sync: the jobs of one workflow run.",
);
/// Org sync: check runs (REST).
pub const CHECK_RUNS: RouteFamily = family(
    GH,
    "check_runs",
    Dimension::RestCore,
    "Org sync: the check runs of one head commit.",
);
/// Org sync: branches.
pub const BRANCHES: RouteFamily = family(
    GH,
    "branches",
    Dimension::GraphqlCost,
    "Org sync: each repository's branches.",
);
/// Org sync: projects (v2), their views and items.
pub const PROJECTS: RouteFamily = family(
    GH,
    "projects",
    Dimension::GraphqlCost,
    "Org sync: projects (v2), their views and items.",
);

const GL: Option<Provider> = Some(Provider::GitLab);

/// the group and its subgroups.
pub const GITLAB_GROUPS: RouteFamily = family(
    GL,
    "gitlab_groups",
    Dimension::RestCore,
    "GitLab sync: the group and its subgroups (`GET /groups/:id`, `…/descendant_groups`).",
);
/// the projects of the group and its subgroups.
pub const GITLAB_PROJECTS: RouteFamily = family(
    GL,
    "gitlab_projects",
    Dimension::RestCore,
    "GitLab sync: the projects of the group and its subgroups (`GET /groups/:id/projects`).",
);
/// pages of a project's merge requests, changed ones first.
pub const GITLAB_MERGE_REQUESTS: RouteFamily = family(
    GL,
    "gitlab_merge_requests",
    Dimension::RestCore,
    "GitLab sync: pages of a project's merge requests, changed ones first.",
);
/// the commits of one merge request.
pub const GITLAB_MERGE_REQUEST_COMMITS: RouteFamily = family(
    GL,
    "gitlab_merge_request_commits",
    Dimension::RestCore,
    "GitLab sync: the commits of one merge request.",
);
/// the approval state of one merge request.
pub const GITLAB_MERGE_REQUEST_APPROVALS: RouteFamily = family(
    GL,
    "gitlab_merge_request_approvals",
    Dimension::RestCore,
    "GitLab sync: the approval state of one merge request.",
);
/// the notes of one merge request.
pub const GITLAB_MERGE_REQUEST_NOTES: RouteFamily = family(
    GL,
    "gitlab_merge_request_notes",
    Dimension::RestCore,
    "GitLab sync: the notes of one merge request.",
);
/// pages of a project's pipelines, changed ones first.
pub const GITLAB_PIPELINES: RouteFamily = family(
    GL,
    "gitlab_pipelines",
    Dimension::RestCore,
    "GitLab sync: pages of a project's pipelines, changed ones first.",
);
/// the jobs of one pipeline.
pub const GITLAB_JOBS: RouteFamily = family(
    GL,
    "gitlab_jobs",
    Dimension::RestCore,
    "GitLab sync: the jobs of one pipeline.",
);
/// pages of a project's issues, changed ones first.
pub const GITLAB_ISSUES: RouteFamily = family(
    GL,
    "gitlab_issues",
    Dimension::RestCore,
    "GitLab sync: pages of a project's issues, changed ones first.",
);
/// the notes of one issue.
pub const GITLAB_ISSUE_NOTES: RouteFamily = family(
    GL,
    "gitlab_issue_notes",
    Dimension::RestCore,
    "GitLab sync: the notes of one issue.",
);
/// the milestones of a project or a group.
pub const GITLAB_MILESTONES: RouteFamily = family(
    GL,
    "gitlab_milestones",
    Dimension::RestCore,
    "GitLab sync: the milestones of a project or a group.",
);
/// pages of a project's deployments, changed ones first.
pub const GITLAB_DEPLOYMENTS: RouteFamily = family(
    GL,
    "gitlab_deployments",
    Dimension::RestCore,
    "GitLab sync: pages of a project's deployments, changed ones first.",
);
/// a project's releases.
pub const GITLAB_RELEASES: RouteFamily = family(
    GL,
    "gitlab_releases",
    Dimension::RestCore,
    "GitLab sync: a project's releases.",
);
/// a project's feature flags.
pub const GITLAB_FEATURE_FLAGS: RouteFamily = family(
    GL,
    "gitlab_feature_flags",
    Dimension::RestCore,
    "GitLab sync: a project's feature flags (a 403 means the feature is off or the role too low).",
);

/// `sync plan gitlab` and `sync gitlab --estimate`: the probe's counting requests.
pub const GITLAB_SYNC_PLAN: RouteFamily = family(
    GL,
    "gitlab_sync_plan",
    Dimension::RestCore,
    "`headroom sync plan gitlab`: one-item pages whose `x-total` counts the group's lists.",
);

const JR: Option<Provider> = Some(Provider::Jira);

/// the caller, the site's fields and its projects.
pub const JIRA_METADATA: RouteFamily = family(
    JR,
    "jira_metadata",
    Dimension::RestCore,
    "Jira sync: the caller (`/myself`), the site's fields and its projects (`/project/search`).",
);
/// an OAuth app's sites, to find one's cloudId.
pub const JIRA_GATEWAY: RouteFamily = family(
    JR,
    "jira_gateway",
    Dimension::RestCore,
    "Jira through Atlassian's gateway: the sites an OAuth token reaches \
     (`/oauth/token/accessible-resources`), for the named site's cloudId.",
);
/// pages of issues through JQL.
pub const JIRA_JQL: RouteFamily = family(
    JR,
    "jira_jql",
    Dimension::Search,
    "Jira sync: pages of a project's issues (`POST /search/jql`, `nextPageToken`), changed ones first.",
);
/// the changelogs of issues.
pub const JIRA_ISSUE_ENRICHMENT: RouteFamily = family(
    JR,
    "jira_issue_enrichment",
    Dimension::RestCore,
    "Jira sync: issues' changelogs (`POST /changelog/bulkfetch`, else `GET /issue/{key}/changelog`).",
);
/// the comments of one issue.
pub const JIRA_COMMENTS: RouteFamily = family(
    JR,
    "jira_comments",
    Dimension::RestCore,
    "Jira sync: the comments of one issue (`GET /issue/{key}/comment`).",
);
/// the worklogs of one issue.
pub const JIRA_WORKLOGS: RouteFamily = family(
    JR,
    "jira_worklogs",
    Dimension::RestCore,
    "Jira sync: the worklogs of one issue (`GET /issue/{key}/worklog`), when worklogs are asked for.",
);
/// boards and sprints (Jira Software).
pub const JIRA_AGILE: RouteFamily = family(
    JR,
    "jira_agile",
    Dimension::RestCore,
    "Jira sync: boards and their sprints (`/rest/agile/1.0`, 50 a page whatever is asked).",
);

/// `sync plan jira` and `sync jira --estimate`: the probe's counting requests.
pub const JIRA_SYNC_PLAN: RouteFamily = family(
    JR,
    "jira_sync_plan",
    Dimension::RestCore,
    "`headroom sync plan jira`: project and approximate issue counts, and a few sampled issues.",
);

const LN: Option<Provider> = Some(Provider::Linear);

/// A Linear GraphQL family: its requests spend the requests and complexity buckets.
const fn linear(name: &'static str, meaning: &'static str) -> RouteFamily {
    family(LN, name, Dimension::GraphqlCost, meaning)
}

/// the workspace (the caller's organization).
pub const LINEAR_WORKSPACE: RouteFamily = linear(
    "linear_workspace",
    "Linear sync: the caller and its workspace (`viewer`, `organization`).",
);
/// teams.
pub const LINEAR_TEAMS: RouteFamily = linear("linear_teams", "Linear sync: pages of teams.");
/// team memberships.
pub const LINEAR_TEAM_MEMBERS: RouteFamily = linear(
    "linear_team_members",
    "Linear sync: pages of team memberships (no filter: re-listed every run).",
);
/// users.
pub const LINEAR_USERS: RouteFamily = linear(
    "linear_users",
    "Linear sync: pages of the workspace's users.",
);
/// workflow states and labels.
pub const LINEAR_METADATA: RouteFamily = linear(
    "linear_metadata",
    "Linear sync: pages of workflow states and issue labels.",
);
/// projects.
pub const LINEAR_PROJECTS: RouteFamily =
    linear("linear_projects", "Linear sync: pages of projects.");
/// cycles.
pub const LINEAR_CYCLES: RouteFamily = linear("linear_cycles", "Linear sync: pages of cycles.");
/// issues.
pub const LINEAR_ISSUES: RouteFamily = linear(
    "linear_issues",
    "Linear sync: pages of issues, oldest change first.",
);
/// comments.
pub const LINEAR_COMMENTS: RouteFamily =
    linear("linear_comments", "Linear sync: pages of comments.");
/// attachments.
pub const LINEAR_ATTACHMENTS: RouteFamily =
    linear("linear_attachments", "Linear sync: pages of attachments.");
/// one issue's history.
pub const LINEAR_HISTORY: RouteFamily = linear(
    "linear_history",
    "Linear sync: pages of one issue's history (`issue.history`, the only place it lives).",
);

/// `sync plan linear` and `sync linear --estimate`: the probe's documents.
pub const LINEAR_SYNC_PLAN: RouteFamily = linear(
    "linear_sync_plan",
    "`headroom sync plan linear`: each team's issue count, the small lists, a sampled page.",
);

const LD: Option<Provider> = Some(Provider::LaunchDarkly);

/// A LaunchDarkly REST family: its requests spend the account's global window and their
/// route's own window.
const fn launchdarkly(name: &'static str, meaning: &'static str) -> RouteFamily {
    family(LD, name, Dimension::RestCore, meaning)
}

/// the caller's account.
pub const LAUNCHDARKLY_IDENTITY: RouteFamily = launchdarkly(
    "launchdarkly_identity",
    "LaunchDarkly sync: the caller's account (`GET /api/v2/caller-identity`), which keys every row.",
);
/// projects with their environments.
pub const LAUNCHDARKLY_PROJECTS: RouteFamily = launchdarkly(
    "launchdarkly_projects",
    "LaunchDarkly sync: pages of projects with their first environments (`expand=environments`).",
);
/// a project's environments beyond those embedded.
pub const LAUNCHDARKLY_ENVIRONMENTS: RouteFamily = launchdarkly(
    "launchdarkly_environments",
    "LaunchDarkly sync: a project's environments beyond the page embedded in its project.",
);
/// a project's flags.
pub const LAUNCHDARKLY_FLAGS: RouteFamily = launchdarkly(
    "launchdarkly_flags",
    "LaunchDarkly sync: pages of a project's flags with their per-environment state.",
);
/// an environment's segments.
pub const LAUNCHDARKLY_SEGMENTS: RouteFamily = launchdarkly(
    "launchdarkly_segments",
    "LaunchDarkly sync: pages of an environment's segments.",
);
/// the account's members.
pub const LAUNCHDARKLY_MEMBERS: RouteFamily = launchdarkly(
    "launchdarkly_members",
    "LaunchDarkly sync: pages of the account's members.",
);
/// the audit log.
pub const LAUNCHDARKLY_AUDIT_LOG: RouteFamily = launchdarkly(
    "launchdarkly_audit_log",
    "LaunchDarkly sync: audit log entries, newest first, 20 a page, from the last stored one.",
);
/// code-reference repositories.
pub const LAUNCHDARKLY_CODE_REFS: RouteFamily = launchdarkly(
    "launchdarkly_code_refs",
    "LaunchDarkly sync: code-reference repositories (one answer, no paging).",
);
/// `sync plan launchdarkly`: the probe's counting requests.
pub const LAUNCHDARKLY_SYNC_PLAN: RouteFamily = launchdarkly(
    "launchdarkly_sync_plan",
    "`headroom sync plan launchdarkly`: the projects with their environments, a few counts (`limit=1`), the audit log's first pages.",
);

/// Every family, in the order the docs list them.
pub const CATALOGUE: &[RouteFamily] = &[
    REST,
    GRAPHQL,
    IDENTITY,
    QUOTA_PROBE,
    GITHUB_OPS,
    FEED_POLL,
    ENRICH_SEARCH,
    ENRICH_DETAIL,
    SYNC_PLAN_GRAPHQL,
    SYNC_PLAN_REST,
    ORGANIZATION,
    REPOSITORIES,
    ISSUES,
    ISSUE_COMMENTS,
    PULL_REQUESTS,
    COMMITS,
    COMMIT_FILES,
    WORKFLOW_RUNS,
    WORKFLOW_JOBS,
    CHECK_RUNS,
    BRANCHES,
    PROJECTS,
    GITLAB_OPS,
    GITLAB_GROUPS,
    GITLAB_PROJECTS,
    GITLAB_MERGE_REQUESTS,
    GITLAB_MERGE_REQUEST_COMMITS,
    GITLAB_MERGE_REQUEST_APPROVALS,
    GITLAB_MERGE_REQUEST_NOTES,
    GITLAB_PIPELINES,
    GITLAB_JOBS,
    GITLAB_ISSUES,
    GITLAB_ISSUE_NOTES,
    GITLAB_MILESTONES,
    GITLAB_DEPLOYMENTS,
    GITLAB_RELEASES,
    GITLAB_FEATURE_FLAGS,
    GITLAB_SYNC_PLAN,
    JIRA_METADATA,
    JIRA_GATEWAY,
    JIRA_JQL,
    JIRA_ISSUE_ENRICHMENT,
    JIRA_COMMENTS,
    JIRA_WORKLOGS,
    JIRA_AGILE,
    JIRA_SYNC_PLAN,
    LINEAR_WORKSPACE,
    LINEAR_TEAMS,
    LINEAR_TEAM_MEMBERS,
    LINEAR_USERS,
    LINEAR_METADATA,
    LINEAR_PROJECTS,
    LINEAR_CYCLES,
    LINEAR_ISSUES,
    LINEAR_COMMENTS,
    LINEAR_ATTACHMENTS,
    LINEAR_HISTORY,
    LINEAR_SYNC_PLAN,
    LAUNCHDARKLY_IDENTITY,
    LAUNCHDARKLY_PROJECTS,
    LAUNCHDARKLY_ENVIRONMENTS,
    LAUNCHDARKLY_FLAGS,
    LAUNCHDARKLY_SEGMENTS,
    LAUNCHDARKLY_MEMBERS,
    LAUNCHDARKLY_AUDIT_LOG,
    LAUNCHDARKLY_CODE_REFS,
    LAUNCHDARKLY_SYNC_PLAN,
];

/// docs/ROUTE-FAMILIES.md, as the catalogue says it.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Route families\n\n\
         Generated from `headroom_core::route::CATALOGUE` (regenerate with\n\
         `HEADROOM_WRITE_ROUTE_DOCS=1 cargo test -p headroom --test route_families`).\n\n\
         Every request headroom sends names one of these families; usage records, `/metrics`\n\
         (`route_family` label) and sync calibration carry the name. The dimension is the budget\n\
         the family's requests spend.\n\n\
         | family | provider | dimension | meaning |\n\
         |--------|----------|-----------|---------|\n",
    );
    for f in CATALOGUE {
        out.push_str(&format!(
            "| `{}` | {} | `{}` | {} |\n",
            f.name,
            f.provider_name(),
            f.dimension.as_str(),
            f.meaning.replace('|', "\\|")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_snake_case_and_meanings_are_one_line() {
        let mut seen = HashSet::new();
        for f in CATALOGUE {
            assert!(seen.insert(f.name), "{} listed twice", f.name);
            assert!(
                f.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{} is not snake_case",
                f.name
            );
            assert!(!f.meaning.is_empty() && !f.meaning.contains('\n'));
            assert_eq!(RouteFamily::named(f.name), Some(*f));
        }
        assert_eq!(RouteFamily::named("sync_issues"), None);
    }

    #[test]
    fn the_markdown_has_one_row_per_family() {
        let md = markdown();
        for f in CATALOGUE {
            assert!(md.contains(&format!("| `{}` |", f.name)), "{}", f.name);
        }
        assert_eq!(
            md.lines().filter(|l| l.starts_with("| `")).count(),
            CATALOGUE.len()
        );
    }
}
