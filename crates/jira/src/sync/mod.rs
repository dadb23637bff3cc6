//! Site sync: the Jira Cloud stages of `headroom sync jira --site URL [PROJECT_KEY…]`, for
//! the headroom-sync runner (the same runner as GitHub's and GitLab's).
//!
//! | # | stage | after | scope |
//! |---|-------|-------|-------|
//! | 1 | `site` — the caller's time zone (`/myself`), the ids of the site's sprint and story-point fields (`/field`) | — | once |
//! | 2 | `projects` — the projects selected (`/project/search`) | 1 | listing (the project source) |
//! | 3 | `issues` — with their changelogs, comments and (when asked) worklogs | 2 | per project |
//! | 4 | `boards` — the agile boards of the projects, and the sprints of each scrum board | 2 | once |
//!
//! What a run collects is its target, a [`Selection`] written as text. Every request spends
//! the identity's one REST bucket (`core`: Jira documents no separate search quota) and the
//! burst bucket of its endpoint and method (`ApiRequest::endpoint`), which Jira limits on its
//! own. Every page is committed with the cursor after it; the children a page of issues owes
//! (its changelogs, comments, worklogs) are kept in the cursor until each child page is stored,
//! so a resume redoes at most one page per request in flight. Between runs, a project's issues
//! are asked `updated >= "yyyy-MM-dd HH:mm"` written in the caller's own zone ([`crate::jql`]),
//! from the instant the project's last finished collection started. Boards and sprints have no
//! such filter and are listed whole every run. A 403 is a permission refusal (Jira's limits
//! answer 429): recorded per scope, never retried, and the other scopes go on.

mod agile;
mod children;
mod issues;
pub mod plan;
mod selection;
mod send;
mod site;

use std::sync::Arc;

use headroom_sync::{Stage, StageDecl};

pub use selection::Selection;

/// Stage names, as checkpoints and `--stages` spell them.
pub mod names {
    /// 1.
    pub const SITE: &str = "site";
    /// 2.
    pub const PROJECTS: &str = "projects";
    /// 3.
    pub const ISSUES: &str = "issues";
    /// 4.
    pub const BOARDS: &str = "boards";
}

/// The declarations: these are the graph. The runner checks them and tests pin them.
pub mod decl {
    use super::names;
    use headroom_sync::{Scope, StageDecl};

    /// Stage `site`.
    pub const SITE: StageDecl = StageDecl {
        name: names::SITE,
        title: "time zone and fields",
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
        depends_on: &[names::SITE],
        after_listing: false,
        scope: Scope::PerRepository,
    };
    /// Stage `issues`.
    pub const ISSUES: StageDecl = StageDecl {
        name: names::ISSUES,
        title: "issues and their children",
        bucket: "core",
        estimated_cost: 1,
        depends_on: &[names::PROJECTS],
        after_listing: true,
        scope: Scope::PerRepository,
    };
    /// Stage `boards`.
    pub const BOARDS: StageDecl = StageDecl {
        name: names::BOARDS,
        title: "boards and sprints",
        bucket: "core",
        estimated_cost: 1,
        depends_on: &[names::PROJECTS],
        after_listing: false,
        scope: Scope::Once,
    };
}

/// The stage whose per-project checkpoints list a run's projects.
pub const SOURCE: &str = names::PROJECTS;

/// The stages, dependencies first, ready for `headroom_sync::Runner::new(stages(),
/// Some(SOURCE), …)` with the run's target a [`Selection::target`].
pub fn stages() -> Vec<Arc<dyn Stage>> {
    vec![
        Arc::new(site::SiteStage::new(decl::SITE)),
        Arc::new(site::ProjectsStage::new(decl::PROJECTS)),
        Arc::new(issues::IssuesStage::new(decl::ISSUES)),
        Arc::new(agile::BoardsStage::new(decl::BOARDS)),
    ]
}

/// The declarations, dependencies first.
pub fn declarations() -> Vec<StageDecl> {
    stages().iter().map(|s| s.decl().clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declarations_form_a_graph_with_the_projects_as_its_source() {
        let decls = declarations();
        let graph = headroom_sync::StageGraph::new(decls.clone(), Some(SOURCE));
        assert!(graph.is_ok(), "{graph:?}");
        assert!(decls.iter().all(|d| d.bucket == "core"));
        let names: Vec<&str> = decls.iter().map(|d| d.name).collect();
        assert_eq!(names, ["site", "projects", "issues", "boards"]);
    }
}
