//! Group sync: the GitLab stages of `headroom sync gitlab GROUP`, for the headroom-sync runner
//! (the same runner as GitHub's organization sync).
//!
//! | # | stage | after | scope |
//! |---|-------|-------|-------|
//! | 1 | `group` — the group, its subgroups and their milestones | — | once |
//! | 2 | `projects` — the projects of the group and its subgroups | 1 | listing (the project source) |
//! | 3 | `merge_requests` — with their commits, approvals and notes | 2 | per project |
//! | 4 | `pipelines` — with their jobs | 2 | per project |
//! | 5 | `issues` — with their notes | 2 | per project |
//! | 6 | `milestones` | 2 | per project |
//! | 7 | `deployments` | 2 | per project |
//! | 8 | `releases` | 2 | per project |
//! | 9 | `feature_flags` | 2 | per project |
//!
//! Every request spends the user's one REST throttle (bucket `core`). Every page is committed
//! with the cursor after it; the children a page of merge requests, pipelines or issues owes
//! are kept in the cursor until each child page is stored, so a resume redoes at most one page
//! per request in flight. Between runs, merge requests, pipelines, issues and deployments ask
//! `updated_after` the instant the project's last finished collection started (minus a clock
//! allowance); milestones, releases and feature flags have no such filter GitLab documents
//! and are listed whole. Offset pages are followed by `x-next-page`, never by totals, which
//! GitLab omits past 10,000 results. Issues are keyset-paged (GitLab refuses offset pages past
//! its maximum offset on them), by offset where GitLab refuses or ignores keyset.

mod group;
mod list;
pub mod plan;
pub mod rows;

use std::sync::Arc;

use headroom_sync::{Stage, StageDecl};

pub use group::{GroupStage, ProjectsStage};
pub use list::ProjectListStage;

/// Stage names, as checkpoints and `--stages` spell them.
pub mod names {
    /// 1.
    pub const GROUP: &str = "group";
    /// 2.
    pub const PROJECTS: &str = "projects";
    /// 3.
    pub const MERGE_REQUESTS: &str = "merge_requests";
    /// 4.
    pub const PIPELINES: &str = "pipelines";
    /// 5.
    pub const ISSUES: &str = "issues";
    /// 6.
    pub const MILESTONES: &str = "milestones";
    /// 7.
    pub const DEPLOYMENTS: &str = "deployments";
    /// 8.
    pub const RELEASES: &str = "releases";
    /// 9.
    pub const FEATURE_FLAGS: &str = "feature_flags";
}

/// The declarations: these are the graph. The runner checks them and tests pin them.
pub mod decl {
    use super::names;
    use headroom_sync::{Scope, StageDecl};

    const fn per_project(name: &'static str, title: &'static str) -> StageDecl {
        StageDecl {
            name,
            title,
            bucket: "core",
            estimated_cost: 1,
            depends_on: &[names::PROJECTS],
            after_listing: true,
            scope: Scope::PerRepository,
        }
    }

    /// Stage `group`.
    pub const GROUP: StageDecl = StageDecl {
        name: names::GROUP,
        title: "group, subgroups, group milestones",
        bucket: "core",
        estimated_cost: 1,
        depends_on: &[],
        after_listing: false,
        scope: Scope::Once,
    };
    /// Stage `projects`.
    pub const PROJECTS: StageDecl = StageDecl {
        name: names::PROJECTS,
        title: "projects",
        bucket: "core",
        estimated_cost: 1,
        depends_on: &[names::GROUP],
        after_listing: false,
        scope: Scope::PerRepository,
    };
    /// Stage `merge_requests`.
    pub const MERGE_REQUESTS: StageDecl = per_project(
        names::MERGE_REQUESTS,
        "merge requests, commits, approvals, notes",
    );
    /// Stage `pipelines`.
    pub const PIPELINES: StageDecl = per_project(names::PIPELINES, "pipelines and jobs");
    /// Stage `issues`.
    pub const ISSUES: StageDecl = per_project(names::ISSUES, "issues and notes");
    /// Stage `milestones`.
    pub const MILESTONES: StageDecl = per_project(names::MILESTONES, "milestones");
    /// Stage `deployments`.
    pub const DEPLOYMENTS: StageDecl = per_project(names::DEPLOYMENTS, "deployments");
    /// Stage `releases`.
    pub const RELEASES: StageDecl = per_project(names::RELEASES, "releases");
    /// Stage `feature_flags`.
    pub const FEATURE_FLAGS: StageDecl = per_project(names::FEATURE_FLAGS, "feature flags");
}

/// The nine declarations, dependencies first.
pub fn declarations() -> Vec<StageDecl> {
    stages().iter().map(|s| s.decl().clone()).collect()
}

/// The stage whose per-project checkpoints list a run's projects.
pub const PROJECT_SOURCE: &str = names::PROJECTS;

/// The nine stages, ready for `headroom_sync::Runner::new(stages, Some(PROJECT_SOURCE), …)`.
pub fn stages() -> Vec<Arc<dyn Stage>> {
    vec![
        Arc::new(GroupStage::new(decl::GROUP)),
        Arc::new(ProjectsStage::new(decl::PROJECTS)),
        Arc::new(ProjectListStage::new(
            decl::MERGE_REQUESTS,
            &list::MERGE_REQUESTS,
        )),
        Arc::new(ProjectListStage::new(decl::PIPELINES, &list::PIPELINES)),
        Arc::new(ProjectListStage::new(decl::ISSUES, &list::ISSUES)),
        Arc::new(ProjectListStage::new(decl::MILESTONES, &list::MILESTONES)),
        Arc::new(ProjectListStage::new(decl::DEPLOYMENTS, &list::DEPLOYMENTS)),
        Arc::new(ProjectListStage::new(decl::RELEASES, &list::RELEASES)),
        Arc::new(ProjectListStage::new(
            decl::FEATURE_FLAGS,
            &list::FEATURE_FLAGS,
        )),
    ]
}
