//! Organization sync: the eight GitHub stages of `headroom sync org NAME`, for the
//! headroom-sync runner.
//!
//! | # | stage | bucket | after | scope |
//! |---|-------|--------|-------|-------|
//! | 1 | `org` — organization, members, teams | GraphQL | — | once |
//! | 2 | `repositories` — repositories and their issues | GraphQL | 1 | listing, then per repository |
//! | 3 | `projects` — projects (v2), their views and items | GraphQL | 2 | per repository, then the organization's unlinked ones |
//! | 4 | `issue_comments` | GraphQL | 2 | per repository |
//! | 5 | `pull_requests` — with their commits | GraphQL | 2 | per repository |
//! | 6 | `commit_files` | REST | 5 | per repository |
//! | 7 | `workflow_runs` — runs, jobs, check runs | REST | 2 | per repository |
//! | 8 | `branches` | GraphQL | 2 | per repository |
//!
//! Every page of rows is committed with the cursor after it. Connections nested in a page's
//! nodes (an issue's comments, a pull request's commits, a project's items) come with their
//! first 100; the rest are followed one parent at a time, the parents still owed kept in the
//! cursor, so a resume redoes at most one page. Within a run, checkpoints are the cut;
//! between runs, per-repository watermarks (`*_collected_at_ms`, the instant a repository's
//! collection started) are: issues and comments ask `filterBy.since`, pull requests come
//! newest-updated first and stop at the watermark, workflow runs stop at the first run
//! created before it, commit files are only fetched for commits that have none, and one
//! aliased probe per 25 repositories finishes those with nothing new without a query of
//! their own. Projects and branches have no "changed since" on GitHub and are read whole.
//! GraphQL page sizes halve when GitHub answers 502/504 or times out and grow back after
//! successes.

mod gql;
pub mod plan;
mod rows;
mod stages;

use std::sync::Arc;

pub use gql::{Answer, PageSize, Refusal, count_at, nodes, read_answer};
pub use stages::{
    BranchesStage, CommitFilesStage, IssueCommentsStage, OrgStage, ProjectsStage,
    PullRequestsStage, RepositoriesStage, WorkflowRunsStage,
};

/// The REST object parsers of stages 6 and 7, for tests that feed them GitHub's own examples.
#[doc(hidden)]
pub mod rest_rows {
    pub use super::rows::{check_run, commit_file, workflow_job, workflow_run};
}

use headroom_sync::{Stage, StageDecl};

/// Stage names, as checkpoints and `--stages` spell them.
pub mod names {
    /// 1.
    pub const ORG: &str = "org";
    /// 2.
    pub const REPOSITORIES: &str = "repositories";
    /// 3.
    pub const PROJECTS: &str = "projects";
    /// 4.
    pub const ISSUE_COMMENTS: &str = "issue_comments";
    /// 5.
    pub const PULL_REQUESTS: &str = "pull_requests";
    /// 6.
    pub const COMMIT_FILES: &str = "commit_files";
    /// 7.
    pub const WORKFLOW_RUNS: &str = "workflow_runs";
    /// 8.
    pub const BRANCHES: &str = "branches";
}

/// The declarations: these are the graph. The runner checks them and tests pin them.
pub mod decl {
    use super::names;
    use headroom_sync::{Scope, StageDecl};

    /// Stage `org`.
    pub const ORG: StageDecl = StageDecl {
        name: names::ORG,
        title: "organization, members, teams",
        bucket: "graphql",
        estimated_cost: 1,
        depends_on: &[],
        after_listing: false,
        scope: Scope::Once,
    };

    /// Stage `repositories`.
    pub const REPOSITORIES: StageDecl = StageDecl {
        name: names::REPOSITORIES,
        title: "repositories and issues",
        bucket: "graphql",
        estimated_cost: 1,
        // The listing stores the organization itself: it goes beside stage `org`, whose
        // three pages one after another would otherwise delay every other stage.
        depends_on: &[],
        after_listing: false,
        scope: Scope::PerRepository,
    };

    /// Stage `projects`.
    pub const PROJECTS: StageDecl = StageDecl {
        name: names::PROJECTS,
        title: "projects and their items",
        bucket: "graphql",
        estimated_cost: 1,
        depends_on: &[names::REPOSITORIES],
        after_listing: true,
        scope: Scope::PerRepository,
    };

    /// Stage `issue_comments`.
    pub const ISSUE_COMMENTS: StageDecl = StageDecl {
        name: names::ISSUE_COMMENTS,
        title: "issue comments",
        bucket: "graphql",
        estimated_cost: 1,
        depends_on: &[names::REPOSITORIES],
        after_listing: true,
        scope: Scope::PerRepository,
    };

    /// Stage `pull_requests`.
    pub const PULL_REQUESTS: StageDecl = StageDecl {
        name: names::PULL_REQUESTS,
        title: "pull requests",
        bucket: "graphql",
        estimated_cost: 1,
        depends_on: &[names::REPOSITORIES],
        after_listing: true,
        scope: Scope::PerRepository,
    };

    /// Stage `commit_files`.
    pub const COMMIT_FILES: StageDecl = StageDecl {
        name: names::COMMIT_FILES,
        title: "commit files",
        bucket: "core",
        estimated_cost: 1,
        depends_on: &[names::PULL_REQUESTS],
        after_listing: false,
        scope: Scope::PerRepository,
    };

    /// Stage `workflow_runs`.
    pub const WORKFLOW_RUNS: StageDecl = StageDecl {
        name: names::WORKFLOW_RUNS,
        title: "workflow runs, jobs, check runs",
        bucket: "core",
        estimated_cost: 1,
        depends_on: &[names::REPOSITORIES],
        after_listing: true,
        scope: Scope::PerRepository,
    };

    /// Stage `branches`.
    pub const BRANCHES: StageDecl = StageDecl {
        name: names::BRANCHES,
        title: "branches",
        bucket: "graphql",
        estimated_cost: 1,
        depends_on: &[names::REPOSITORIES],
        after_listing: true,
        scope: Scope::PerRepository,
    };
}

/// The eight declarations, dependencies first.
pub fn declarations() -> Vec<StageDecl> {
    vec![
        decl::ORG,
        decl::REPOSITORIES,
        decl::PROJECTS,
        decl::ISSUE_COMMENTS,
        decl::PULL_REQUESTS,
        decl::COMMIT_FILES,
        decl::WORKFLOW_RUNS,
        decl::BRANCHES,
    ]
}

/// Every GraphQL document headroom-github can send, each named `stage.what` (the plan's is
/// `plan`): every query of the stages, the aliased probes for 1 to 25 repositories of each
/// connection that has them, and [`plan::PLAN_QUERY`]. Page sizes are variables, so one
/// document stands for every size. The feed sends no GraphQL (its enrichment is REST search
/// and detail), so it has none here. Tests validate each against GitHub's published schema.
pub fn graphql_documents() -> Vec<(String, String)> {
    let mut out = stages::documents();
    out.push(("plan".to_owned(), plan::PLAN_QUERY.to_owned()));
    out
}

/// The stage whose per-repository checkpoints list a run's repositories.
pub const REPOSITORY_SOURCE: &str = names::REPOSITORIES;

/// The eight stages, ready for `headroom_sync::Runner::new(stages, Some(REPOSITORY_SOURCE), …)`.
pub fn stages() -> Vec<Arc<dyn Stage>> {
    vec![
        Arc::new(OrgStage::new(decl::ORG)),
        Arc::new(RepositoriesStage::new(decl::REPOSITORIES)),
        Arc::new(ProjectsStage::new(decl::PROJECTS)),
        Arc::new(IssueCommentsStage::new(decl::ISSUE_COMMENTS)),
        Arc::new(PullRequestsStage::new(decl::PULL_REQUESTS)),
        Arc::new(CommitFilesStage::new(decl::COMMIT_FILES)),
        Arc::new(WorkflowRunsStage::new(decl::WORKFLOW_RUNS)),
        Arc::new(BranchesStage::new(decl::BRANCHES)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_sync::StageGraph;

    #[test]
    fn the_declared_graph_is_the_issue_s() {
        let graph =
            StageGraph::new(declarations(), Some(REPOSITORY_SOURCE)).expect("a valid graph");
        let deps = |n: &str| -> Vec<&str> { graph.get(n).expect("declared").depends_on.to_vec() };
        assert_eq!(deps(names::ORG), Vec::<&str>::new());
        assert_eq!(deps(names::REPOSITORIES), Vec::<&str>::new());
        for n in [
            names::PROJECTS,
            names::ISSUE_COMMENTS,
            names::PULL_REQUESTS,
            names::WORKFLOW_RUNS,
            names::BRANCHES,
        ] {
            assert_eq!(deps(n), vec![names::REPOSITORIES], "{n}");
        }
        assert_eq!(deps(names::COMMIT_FILES), vec![names::PULL_REQUESTS]);
        // The run's critical path: only pull requests are waited for whole (the others wait
        // for the listing alone, or for nothing).
        let awaited: Vec<&str> = graph
            .stages()
            .iter()
            .map(|s| s.name)
            .filter(|n| graph.is_awaited(n))
            .collect();
        assert_eq!(awaited, vec![names::PULL_REQUESTS]);
        let rest: Vec<&str> = graph
            .stages()
            .iter()
            .filter(|s| s.bucket == "core")
            .map(|s| s.name)
            .collect();
        assert_eq!(rest, vec![names::COMMIT_FILES, names::WORKFLOW_RUNS]);
        // The stages built are the stages declared, in order.
        let built: Vec<&str> = stages().iter().map(|s| s.decl().name).collect();
        let declared: Vec<&str> = graph.stages().iter().map(|s| s.name).collect();
        assert_eq!(built, declared);
    }
}
