//! What a sync run collects: a GitHub organization (`sync org`), a GitLab group
//! (`sync gitlab`), a Jira site (`sync jira`), a Linear workspace (`sync linear`) or a
//! LaunchDarkly account (`sync launchdarkly`). The kind names the provider whose door the run
//! goes through, its stage graph, and the words a person reads.

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
    /// A Jira Cloud site's projects.
    Jira,
    /// A Linear workspace.
    Linear,
    /// A LaunchDarkly account's projects.
    LaunchDarkly,
}

impl SyncKind {
    /// Every kind.
    pub const ALL: [SyncKind; 5] = [
        SyncKind::Org,
        SyncKind::Gitlab,
        SyncKind::Jira,
        SyncKind::Linear,
        SyncKind::LaunchDarkly,
    ];

    /// The kinds that go through another door than GitHub's, each with its own credential.
    pub const OTHERS: [SyncKind; 4] = [
        SyncKind::Gitlab,
        SyncKind::Jira,
        SyncKind::Linear,
        SyncKind::LaunchDarkly,
    ];

    /// The stored name, which is also the `sync` subcommand's.
    pub fn as_str(self) -> &'static str {
        match self {
            SyncKind::Org => "org",
            SyncKind::Gitlab => "gitlab",
            SyncKind::Jira => "jira",
            SyncKind::Linear => "linear",
            SyncKind::LaunchDarkly => "launchdarkly",
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
            SyncKind::Jira => "selection",
            SyncKind::Linear | SyncKind::LaunchDarkly => "selection",
        }
    }

    /// What its scopes are called, briefly (`sync status`'s progress per stage).
    pub fn scopes(self) -> &'static str {
        match self {
            SyncKind::Org => "repos",
            SyncKind::Gitlab | SyncKind::Jira => "projects",
            SyncKind::Linear | SyncKind::LaunchDarkly => "scopes",
        }
    }

    /// Its first stage, which works on the target itself rather than per scope.
    pub fn root(self) -> &'static str {
        match self {
            SyncKind::Org => "org",
            SyncKind::Gitlab => "group",
            SyncKind::Jira => "site",
            SyncKind::Linear => "workspace",
            SyncKind::LaunchDarkly => headroom_launchdarkly::sync::names::IDENTITY,
        }
    }

    /// Whose API it talks to.
    pub fn provider(self) -> Provider {
        match self {
            SyncKind::Org => Provider::GitHub,
            SyncKind::Gitlab => Provider::GitLab,
            SyncKind::Jira => Provider::Jira,
            SyncKind::Linear => Provider::Linear,
            SyncKind::LaunchDarkly => Provider::LaunchDarkly,
        }
    }

    /// The command that runs it on `target` (as its runs store it), for the hints that say
    /// how to go on: `headroom sync org acme`, `headroom sync jira --site URL PA PB`.
    pub fn invocation(self, target: &str) -> String {
        match self {
            SyncKind::Org | SyncKind::Gitlab => format!("headroom sync {} {target}", self.as_str()),
            SyncKind::Jira => {
                let mut out = "headroom sync jira --site URL".to_owned();
                if let Ok(s) = headroom_jira::sync::Selection::parse(target) {
                    for key in &s.projects {
                        out.push(' ');
                        out.push_str(key);
                    }
                    if let Some(jql) = &s.jql {
                        out.push_str(&format!(" --jql '{}'", jql.replace('\'', "'\\''")));
                    }
                    if s.worklogs {
                        out.push_str(" --worklogs");
                    }
                }
                out
            }
            SyncKind::Linear => {
                let mut out = "headroom sync linear".to_owned();
                if let Ok(s) = headroom_linear::sync::Selection::parse(target) {
                    for team in &s.teams {
                        out.push_str(&format!(" --team {team}"));
                    }
                }
                out
            }
            SyncKind::LaunchDarkly => {
                let mut out = "headroom sync launchdarkly".to_owned();
                if let Ok(s) = headroom_launchdarkly::sync::Selection::parse(target) {
                    for key in &s.projects {
                        out.push(' ');
                        out.push_str(key);
                    }
                    if s.full {
                        out.push_str(" --full");
                    }
                }
                out
            }
        }
    }

    /// Whose token it spends, for the hint after a refusal.
    pub fn token_for(self) -> crate::outcome::TokenFor {
        use crate::outcome::TokenFor;
        match self {
            SyncKind::Org => TokenFor::GitHub,
            SyncKind::Gitlab => TokenFor::GitLab,
            SyncKind::Jira => TokenFor::Jira,
            SyncKind::Linear => TokenFor::Linear,
            SyncKind::LaunchDarkly => TokenFor::LaunchDarkly,
        }
    }

    /// Its stages, ready for the runner.
    pub fn stages(self) -> Vec<Arc<dyn Stage>> {
        match self {
            SyncKind::Org => headroom_github::org::stages(),
            SyncKind::Gitlab => headroom_gitlab::sync::stages(),
            SyncKind::Jira => headroom_jira::sync::stages(),
            SyncKind::Linear => headroom_linear::sync::stages(),
            SyncKind::LaunchDarkly => headroom_launchdarkly::sync::stages(),
        }
    }

    /// Its stage declarations, dependencies first.
    pub fn declarations(self) -> Vec<StageDecl> {
        match self {
            SyncKind::Org => headroom_github::org::declarations(),
            SyncKind::Gitlab => headroom_gitlab::sync::declarations(),
            SyncKind::Jira => headroom_jira::sync::declarations(),
            SyncKind::Linear => headroom_linear::sync::declarations(),
            SyncKind::LaunchDarkly => headroom_launchdarkly::sync::declarations(),
        }
    }

    /// The stage whose per-scope checkpoints list the run's repositories or projects
    /// (`None`: every stage runs once per run).
    pub fn source(self) -> Option<&'static str> {
        match self {
            SyncKind::Org => Some(headroom_github::org::REPOSITORY_SOURCE),
            SyncKind::Gitlab => Some(headroom_gitlab::sync::PROJECT_SOURCE),
            SyncKind::Jira => Some(headroom_jira::sync::SOURCE),
            SyncKind::Linear => headroom_linear::sync::SOURCE,
            SyncKind::LaunchDarkly => headroom_launchdarkly::sync::SOURCE,
        }
    }

    /// Whether `table` holds its provider's rows, as `sync status` counts them (watermarks
    /// left out). GitHub's tables carry no prefix: `sync status` names them.
    pub fn owns_table(self, table: &str) -> bool {
        let prefix = match self {
            SyncKind::Org => return false,
            SyncKind::Gitlab => "gitlab_",
            SyncKind::Jira => "jira_",
            SyncKind::Linear => "linear_",
            SyncKind::LaunchDarkly => "ld_",
        };
        table.starts_with(prefix) && !table.ends_with("_watermarks")
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
    fn the_resume_hint_repeats_a_runs_selection() {
        let jira = headroom_jira::sync::Selection {
            projects: vec!["PA".into(), "PB".into()],
            jql: Some("status = 'Done'".into()),
            worklogs: true,
        };
        assert_eq!(
            SyncKind::Jira.invocation(&jira.target()),
            r"headroom sync jira --site URL PA PB --jql 'status = '\''Done'\''' --worklogs"
        );
        let linear = headroom_linear::sync::Selection {
            teams: vec!["ENG".into(), "OPS".into()],
        };
        assert_eq!(
            SyncKind::Linear.invocation(&linear.target()),
            "headroom sync linear --team ENG --team OPS"
        );
        assert_eq!(
            SyncKind::Gitlab.invocation("top/sub"),
            "headroom sync gitlab top/sub"
        );
    }

    #[test]
    fn every_kind_is_found_by_its_stored_name() {
        for kind in SyncKind::ALL {
            assert_eq!(SyncKind::named(kind.as_str()), Some(kind));
        }
    }
}
