//! Account sync: the LaunchDarkly stages of `headroom sync launchdarkly [PROJECT_KEY…]`, for
//! the headroom-sync runner (the one GitHub's, GitLab's, Jira's and Linear's syncs run on).
//!
//! | # | stage | after | what | scopes |
//! |---|-------|-------|------|--------|
//! | 1 | `identity` | — | the token's account (`caller-identity`): every row is led by its id | once |
//! | 2 | `audit_log` | 1 | the audit log's new entries, and whether the lists are re-read | once |
//! | 3 | `projects` | 2 | projects with their environments (`expand=environments`, then `projects/{p}/environments` beyond the embedded page) | once |
//! | 4 | `flags` | 3 | each project's flags with their per-environment state | one per project |
//! | 5 | `segments` | 3 | each environment's segments | one per environment |
//! | 6 | `members` | 2 | the account's members | once |
//! | 7 | `code_refs` | 2 | code-reference repositories (one answer) | once |
//!
//! Every request spends the account's global window and its route's window (the method and
//! path template, never a key: `ApiRequest::launchdarkly_route`), and carries the pinned
//! `LD-API-Version` (the exit door's LaunchDarkly dialect). Lists are paged with an explicit
//! `limit` and followed by `_links.next`; every page is committed with the path of the next
//! one in its scope's checkpoint, so a resume asks again at most the page each scope had in
//! flight. A 403 (or a 404 since listing) is recorded per scope and never retried: the other
//! scopes go on. A 401 is the token refused (the runner's credential path); a 429 is a
//! deferral (the governor's); a 5xx is transient for these reads.
//!
//! # The incremental rule
//!
//! LaunchDarkly offers no "changed since" filter on projects, flags, segments or members; its
//! audit log is the one list ordered by time. So the audit log runs first, from the newest
//! entry the last completed run of the account saw — that millisecond asked again and entries
//! told apart by id, since another may have been written in it after that run read — and
//! everything else is re-listed whole only when the audit log shows an entry that run had not
//! seen, on the account's first run, or when the run is asked for `full`. Otherwise those
//! stages end without a request, so a second run with nothing new reads only the identity and
//! the new audit entries. Re-listing whole (rather than fetching what the entries name) keeps
//! one code path and stays cheap: these lists are small next to the quota, and a change the
//! entries describe imperfectly (a deletion, a bulk edit) is still caught. "Completed" means
//! the run ended done over every stage and a selection covering this one's; a run that failed
//! after reading the log does not count, so what it read is read again and acted on.
//!
//! Caveat: a change LaunchDarkly does not audit is not seen until the next audited change or
//! a `full` run — code references pushed by the scanner (`ld-find-code-refs`) above all, and
//! anything else written without an audit entry.

mod audit;
mod identity;
mod lists;
pub mod plan;
mod projects;
mod refresh;
mod selection;
mod send;

use std::sync::Arc;

use headroom_sync::{Stage, StageCtx, StageDecl, StageError};

pub use audit::AuditStage;
pub use identity::{Caller, IdentityStage};
pub use lists::{CodeRefsStage, FlagsStage, MembersStage, SegmentsStage};
pub use projects::ProjectsStage;
pub use selection::Selection;

/// No stage lists per-scope sources for the runner: the per-project and per-environment
/// scopes are kept by the stages themselves (a project key is no repository id).
pub const SOURCE: Option<&'static str> = None;

/// Stage names, as checkpoints and `--stages` spell them.
pub mod names {
    /// 1.
    pub const IDENTITY: &str = "identity";
    /// 2.
    pub const AUDIT_LOG: &str = "audit_log";
    /// 3.
    pub const PROJECTS: &str = "projects";
    /// 4.
    pub const FLAGS: &str = "flags";
    /// 5.
    pub const SEGMENTS: &str = "segments";
    /// 6.
    pub const MEMBERS: &str = "members";
    /// 7.
    pub const CODE_REFS: &str = "code_refs";
}

/// The declarations: these are the graph. The runner checks them and tests pin them. Every
/// stage names the account's global bucket, which every request spends (its route's bucket
/// beside it).
pub mod decl {
    use super::names;
    use headroom_core::signal::LD_GLOBAL;
    use headroom_sync::{Scope, StageDecl};

    const fn once(
        name: &'static str,
        title: &'static str,
        depends_on: &'static [&'static str],
    ) -> StageDecl {
        StageDecl {
            name,
            title,
            bucket: LD_GLOBAL,
            estimated_cost: 1,
            depends_on,
            after_listing: false,
            scope: Scope::Once,
        }
    }

    /// Stage `identity`.
    pub const IDENTITY: StageDecl = once(names::IDENTITY, "the token's account", &[]);
    /// Stage `audit_log`.
    pub const AUDIT_LOG: StageDecl = once(names::AUDIT_LOG, "audit log", &[names::IDENTITY]);
    /// Stage `projects`.
    pub const PROJECTS: StageDecl = once(
        names::PROJECTS,
        "projects and environments",
        &[names::AUDIT_LOG],
    );
    /// Stage `flags`.
    pub const FLAGS: StageDecl = once(names::FLAGS, "flags", &[names::PROJECTS]);
    /// Stage `segments`.
    pub const SEGMENTS: StageDecl = once(names::SEGMENTS, "segments", &[names::PROJECTS]);
    /// Stage `members`.
    pub const MEMBERS: StageDecl = once(names::MEMBERS, "members", &[names::AUDIT_LOG]);
    /// Stage `code_refs`.
    pub const CODE_REFS: StageDecl = once(
        names::CODE_REFS,
        "code-reference repositories",
        &[names::AUDIT_LOG],
    );
}

/// The seven stages, dependencies first, ready for `headroom_sync::Runner::new(stages(),
/// SOURCE, …)` with the run's target a [`Selection::target`].
pub fn stages() -> Vec<Arc<dyn Stage>> {
    vec![
        Arc::new(IdentityStage::new(decl::IDENTITY)),
        Arc::new(AuditStage::new(decl::AUDIT_LOG)),
        Arc::new(ProjectsStage::new(decl::PROJECTS)),
        Arc::new(FlagsStage::new(decl::FLAGS)),
        Arc::new(SegmentsStage::new(decl::SEGMENTS)),
        Arc::new(MembersStage::new(decl::MEMBERS)),
        Arc::new(CodeRefsStage::new(decl::CODE_REFS)),
    ]
}

/// The declarations, dependencies first.
pub fn declarations() -> Vec<StageDecl> {
    stages().iter().map(|s| s.decl().clone()).collect()
}

/// The run's selection, as its target names it.
pub(crate) fn selection(ctx: &StageCtx<'_>) -> Result<Selection, StageError> {
    Selection::parse(ctx.target()).map_err(StageError::Permanent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_sync::StageGraph;

    #[test]
    fn the_stages_form_a_graph_with_the_identity_then_the_audit_log_first() {
        let decls = declarations();
        let graph = StageGraph::new(decls.clone(), SOURCE).expect("a valid graph");
        let names: Vec<&str> = graph.stages().iter().map(|d| d.name).collect();
        assert_eq!(
            names,
            [
                "identity",
                "audit_log",
                "projects",
                "flags",
                "segments",
                "members",
                "code_refs"
            ]
        );
        for d in &decls {
            assert_eq!(d.bucket, headroom_core::signal::LD_GLOBAL, "{}", d.name);
            if d.name != names::IDENTITY {
                // The audit log decides whether anything else is read: every list waits
                // for it.
                assert!(
                    d.name == names::AUDIT_LOG
                        || graph.dependencies_of(d.name).contains(names::AUDIT_LOG),
                    "{}",
                    d.name
                );
            }
        }
    }
}
