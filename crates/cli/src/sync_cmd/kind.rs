//! What a sync run collects: a GitHub organization (`sync org`) or a GitLab group
//! (`sync gitlab`). The kind names the provider whose door the run goes through, its stage
//! graph, and the words a person reads.

use std::sync::Arc;

use headroom_core::signal::Provider;
use headroom_sync::{Stage, StageDecl};

/// A run's kind, as `sync_runs.kind` stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncKind {
    /// A GitHub organization.
    Org,
    /// A GitLab group and its subgroups.
    Gitlab,
}

impl SyncKind {
    /// Every kind.
    pub const ALL: [SyncKind; 2] = [SyncKind::Org, SyncKind::Gitlab];

    /// The stored name, which is also the `sync` subcommand's.
    pub fn as_str(self) -> &'static str {
        match self {
            SyncKind::Org => "org",
            SyncKind::Gitlab => "gitlab",
        }
    }

    /// The kind a stored name names.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// What a person calls its target.
    pub fn noun(self) -> &'static str {
        match self {
            SyncKind::Org => "org",
            SyncKind::Gitlab => "group",
        }
    }

    /// What its scopes are called, briefly (`sync status`'s progress per stage).
    pub fn scopes(self) -> &'static str {
        match self {
            SyncKind::Org => "repos",
            SyncKind::Gitlab => "projects",
        }
    }

    /// Its first stage, which works on the target itself rather than per scope.
    pub fn root(self) -> &'static str {
        match self {
            SyncKind::Org => "org",
            SyncKind::Gitlab => "group",
        }
    }

    /// Whose API it talks to.
    pub fn provider(self) -> Provider {
        match self {
            SyncKind::Org => Provider::GitHub,
            SyncKind::Gitlab => Provider::GitLab,
        }
    }

    /// Its stages, ready for the runner.
    pub fn stages(self) -> Vec<Arc<dyn Stage>> {
        match self {
            SyncKind::Org => headroom_github::org::stages(),
            SyncKind::Gitlab => headroom_gitlab::sync::stages(),
        }
    }

    /// Its stage declarations, dependencies first.
    pub fn declarations(self) -> Vec<StageDecl> {
        match self {
            SyncKind::Org => headroom_github::org::declarations(),
            SyncKind::Gitlab => headroom_gitlab::sync::declarations(),
        }
    }

    /// The stage whose per-scope checkpoints list the run's repositories or projects.
    pub fn source(self) -> &'static str {
        match self {
            SyncKind::Org => headroom_github::org::REPOSITORY_SOURCE,
            SyncKind::Gitlab => headroom_gitlab::sync::PROJECT_SOURCE,
        }
    }
}

/// The kind whose graph declares every one of `stages` (a run's summary names its stages, not
/// its kind); GitHub's when several or none do.
pub fn declaring<'a>(stages: impl IntoIterator<Item = &'a str> + Clone) -> SyncKind {
    SyncKind::ALL
        .into_iter()
        .find(|kind| {
            let declared = kind.declarations();
            stages
                .clone()
                .into_iter()
                .all(|s| declared.iter().any(|d| d.name == s))
        })
        .unwrap_or(SyncKind::Org)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_of_gitlab_stages_is_read_with_gitlabs_titles() {
        assert_eq!(declaring(["group", "projects"]), SyncKind::Gitlab);
        assert_eq!(declaring(["org", "repositories"]), SyncKind::Org);
        assert_eq!(declaring(["projects"]), SyncKind::Org);
        assert_eq!(declaring(["nothing"]), SyncKind::Org);
    }

    #[test]
    fn every_kind_is_found_by_its_stored_name() {
        for kind in SyncKind::ALL {
            assert_eq!(SyncKind::named(kind.as_str()), Some(kind));
        }
    }
}
