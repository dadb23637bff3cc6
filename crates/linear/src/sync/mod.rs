//! Workspace sync: the Linear stages of `headroom sync linear [--team KEY…]`, for the
//! headroom-sync runner (the one GitHub's and GitLab's syncs run on).
//!
//! | # | stage | after | what |
//! |---|-------|-------|------|
//! | 1 | `workspace` | — | the caller and its organization: the workspace id every row carries |
//! | 2 | `teams` | 1 | teams |
//! | 3 | `users` | 1 | users |
//! | 4 | `team_memberships` | 1 | team memberships (no filter: re-listed every run) |
//! | 5 | `workflow_states` | 1 | workflow states (narrowed by team) |
//! | 6 | `labels` | 1 | issue labels, the workspace's and every team's |
//! | 7 | `projects` | 1 | projects |
//! | 8 | `cycles` | 1 | cycles (narrowed by team) |
//! | 9 | `issues` | 1 | issues (narrowed by team), each with its history |
//! | 10 | `comments` | 1 | comments |
//! | 11 | `attachments` | 1 | attachments |
//!
//! Every stage runs once per run (its scope is the workspace) and spends the identity's two
//! buckets per request: one request, and the document's complexity, estimated before sending
//! ([`crate::complexity`]) so the governor grants both or sends nothing; the decls name the
//! complexity bucket, the one a page's size moves. Every page is committed with the cursor
//! after it; an issue page owes its issues' history (`issue.history`, the only place it lives,
//! with no filter), kept in the cursor until each history page is stored, so a kill resumes
//! exactly. Connections are ordered by `updatedAt` and, between runs, asked only for what
//! changed since the family's last finished collection started (less [`CLOCK_SKEW`]): the
//! watermark, written with the stage's last page. A run narrowed to some teams records its
//! own watermark (`issues:ENG,OPS`) and may start from a whole-workspace one.
//!
//! Narrowing (`--team`): Linear filters workflow states, cycles and issues by team
//! (`team: { key: { in } }`). Labels are listed whole: workspace labels have no team and are
//! used by every team's issues. Attachments have no team filter in Linear's schema; comments
//! have one only through their issue (`issue: { team }`), which the simulator does not
//! serve, so both are listed whole too.

mod issues;
mod list;
pub mod page;
pub mod plan;
mod send;
mod workspace;

use std::sync::Arc;

use headroom_core::clock::SignedDuration;
use headroom_core::signal::LINEAR_COMPLEXITY;
use headroom_sync::{Scope, Stage, StageCtx, StageDecl, StageError};
use serde_json::json;

use crate::documents::{self, Document};

pub use issues::IssuesStage;
pub use list::ListStage;
pub use workspace::WorkspaceStage;

/// Allowance for the difference between this machine's clock and Linear's: `updatedAt` is
/// asked after the watermark less this.
pub const CLOCK_SKEW: SignedDuration = SignedDuration::from_secs(60);

/// No stage lists per-scope sources: every stage's scope is the workspace.
pub const SOURCE: Option<&'static str> = None;

/// Stage names, as checkpoints and `--stages` spell them.
pub mod names {
    /// 1.
    pub const WORKSPACE: &str = "workspace";
    /// 2.
    pub const TEAMS: &str = "teams";
    /// 3.
    pub const USERS: &str = "users";
    /// 4.
    pub const TEAM_MEMBERSHIPS: &str = "team_memberships";
    /// 5.
    pub const WORKFLOW_STATES: &str = "workflow_states";
    /// 6.
    pub const LABELS: &str = "labels";
    /// 7.
    pub const PROJECTS: &str = "projects";
    /// 8.
    pub const CYCLES: &str = "cycles";
    /// 9.
    pub const ISSUES: &str = "issues";
    /// 10.
    pub const COMMENTS: &str = "comments";
    /// 11.
    pub const ATTACHMENTS: &str = "attachments";
}

/// The teams a run collects: their keys (`ENG`); none means every team.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Team keys, as given.
    pub teams: Vec<String>,
}

/// How a run over every team is named.
const ALL_TEAMS: &str = "all teams";

impl Selection {
    /// The run's target: `all teams`, or the keys (`ENG,OPS`).
    pub fn target(&self) -> String {
        if self.teams.is_empty() {
            ALL_TEAMS.to_owned()
        } else {
            self.teams.join(",")
        }
    }

    /// Reads a target written by [`Selection::target`] (or keys a person typed, separated by
    /// commas). A key is letters, digits and `_`.
    pub fn parse(target: &str) -> Result<Self, String> {
        let target = target.trim();
        if target.is_empty() || target == ALL_TEAMS {
            return Ok(Self::default());
        }
        let mut teams: Vec<String> = Vec::new();
        for key in target.split(',').map(str::trim) {
            let valid = !key.is_empty()
                && key.len() <= 32
                && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(format!(
                    "{key:?} is not a Linear team key (letters, digits and _)"
                ));
            }
            if !teams.iter().any(|t| t == key) {
                teams.push(key.to_owned());
            }
        }
        Ok(Self { teams })
    }
}

/// The run's selection, as its target names it.
pub(crate) fn selection(ctx: &StageCtx<'_>) -> Result<Selection, StageError> {
    Selection::parse(ctx.target()).map_err(StageError::Permanent)
}

/// A decl of a stage after `workspace`, its cost a page of `doc` at the default size.
fn decl(name: &'static str, title: &'static str, doc: &Document) -> StageDecl {
    let vars = json!({ "first": page::DEFAULT_FIRST, "after": null, "filter": null, "issue": "" });
    let cost = page::estimate(doc, &vars).unwrap_or(u64::from(u32::MAX));
    StageDecl {
        name,
        title,
        bucket: LINEAR_COMPLEXITY,
        estimated_cost: u32::try_from(cost).unwrap_or(u32::MAX),
        depends_on: if name == names::WORKSPACE {
            &[]
        } else {
            &[names::WORKSPACE]
        },
        after_listing: false,
        scope: Scope::Once,
    }
}

/// The eleven stages, dependencies first, ready for `headroom_sync::Runner::new(stages,
/// SOURCE, …)` with the run's target a [`Selection::target`].
pub fn stages() -> Vec<Arc<dyn Stage>> {
    use names as n;
    let list = |name, title, family: &'static list::Family| -> Arc<dyn Stage> {
        Arc::new(ListStage::new(decl(name, title, family.doc), family))
    };
    vec![
        Arc::new(WorkspaceStage::new(decl(
            n::WORKSPACE,
            "the caller and its workspace",
            &documents::VIEWER,
        ))),
        list(n::TEAMS, "teams", &list::TEAMS),
        list(n::USERS, "users", &list::USERS),
        list(
            n::TEAM_MEMBERSHIPS,
            "team memberships",
            &list::TEAM_MEMBERSHIPS,
        ),
        list(
            n::WORKFLOW_STATES,
            "workflow states",
            &list::WORKFLOW_STATES,
        ),
        list(n::LABELS, "labels", &list::LABELS),
        list(n::PROJECTS, "projects", &list::PROJECTS),
        list(n::CYCLES, "cycles", &list::CYCLES),
        Arc::new(IssuesStage::new(decl(
            n::ISSUES,
            "issues and their history",
            &documents::ISSUES,
        ))),
        list(n::COMMENTS, "comments", &list::COMMENTS),
        list(n::ATTACHMENTS, "attachments", &list::ATTACHMENTS),
    ]
}

/// The declarations: these are the graph. The runner checks them and tests pin them.
pub fn declarations() -> Vec<StageDecl> {
    stages().iter().map(|s| s.decl().clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_sync::StageGraph;
    use proptest::prelude::*;

    #[test]
    fn the_stages_form_a_graph_with_the_workspace_first() {
        let decls = declarations();
        let graph = StageGraph::new(decls.clone(), SOURCE).expect("a valid graph");
        assert_eq!(graph.stages().len(), 11);
        assert_eq!(decls[0].name, names::WORKSPACE);
        for d in &decls {
            assert_eq!(d.bucket, LINEAR_COMPLEXITY);
            assert!(d.estimated_cost > 0, "{}", d.name);
            assert!(
                u64::from(d.estimated_cost) <= crate::complexity::MAX_PER_QUERY,
                "{}",
                d.name
            );
        }
    }

    #[test]
    fn a_selection_reads_what_it_writes_and_refuses_what_is_no_key() {
        assert_eq!(Selection::parse("all teams"), Ok(Selection::default()));
        assert_eq!(Selection::default().target(), "all teams");
        let sel = Selection::parse(" ENG, OPS ,ENG").expect("keys");
        assert_eq!(sel.teams, ["ENG", "OPS"]);
        assert_eq!(sel.target(), "ENG,OPS");
        assert!(Selection::parse("ENG,,OPS").is_err());
        assert!(Selection::parse("a b").is_err());
    }

    proptest! {
        #[test]
        fn any_selection_survives_its_target(keys in proptest::collection::vec("[A-Z0-9_]{1,8}", 0..6)) {
            let sel = Selection::parse(&keys.join(",")).expect("valid keys");
            prop_assert_eq!(Selection::parse(&sel.target()), Ok(sel));
        }
    }
}
