//! The test hooks on the seeded account: [`Simulator::launchdarkly_counts`] counts what a
//! full collection must hold, table by table, and [`Simulator::launchdarkly_touch`] turns
//! flags on or off between two syncs, each change with its audit entry.

use headroom_core::clock::Clock;

use super::model::{Account, AuditEntry, object_id};
use crate::Simulator;
use crate::sim::lock;

/// What the seeded account holds, as a full collection sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LdAccountCounts {
    /// Projects.
    pub projects: usize,
    /// Environments, over every project.
    pub environments: usize,
    /// Flags, over every project.
    pub flags: usize,
    /// Per-environment flag states: each flag in each environment of its project.
    pub flag_environments: usize,
    /// Segments, over every environment.
    pub segments: usize,
    /// Members (token owners included).
    pub members: usize,
    /// Audit log entries.
    pub audit_entries: usize,
    /// Code-reference repositories.
    pub code_ref_repositories: usize,
}

impl Account {
    fn counts(&self) -> LdAccountCounts {
        let envs = self.projects.iter().flat_map(|p| &p.environments);
        LdAccountCounts {
            projects: self.projects.len(),
            environments: envs.clone().count(),
            flags: self.projects.iter().map(|p| p.flags.len()).sum(),
            flag_environments: self
                .projects
                .iter()
                .flat_map(|p| &p.flags)
                .map(|f| f.states.len())
                .sum(),
            segments: envs.map(|e| e.segments.len()).sum(),
            members: self.members.len(),
            audit_entries: self.audit.len(),
            code_ref_repositories: self.repos.len(),
        }
    }
}

impl Simulator {
    /// What the seeded LaunchDarkly account holds; `None` when none is seeded.
    pub fn launchdarkly_counts(&self) -> Option<LdAccountCounts> {
        lock(&self.inner.launchdarkly)
            .account
            .as_ref()
            .map(Account::counts)
    }
}

impl Simulator {
    /// Toggles the first environment's state of the `n` flags modified longest ago (over every
    /// project), each with an audit entry: the first two dated now, the next two a millisecond
    /// earlier, and so on (pairs share a millisecond, as the seed's ties do, so that any page
    /// of two or more holds a whole millisecond). The new entries' ids, newest first as the
    /// audit log lists them.
    pub fn launchdarkly_touch(&self, n: usize) -> Vec<String> {
        let now = self.inner.clock.now().as_millisecond();
        let mut state = lock(&self.inner.launchdarkly);
        let Some(a) = state.account.as_mut() else {
            return Vec::new();
        };
        let mut flags: Vec<(i64, usize, usize)> = Vec::new();
        for (p, project) in a.projects.iter().enumerate() {
            for (f, flag) in project.flags.iter().enumerate() {
                if let Some(s) = flag.states.first() {
                    flags.push((s.last_modified, p, f));
                }
            }
        }
        flags.sort_unstable();
        let mut added = Vec::new();
        for (i, &(_, p, f)) in flags.iter().take(n).enumerate() {
            let date = now - (i / 2) as i64;
            let project = &mut a.projects[p];
            let env = project.environments[0].key.clone();
            let flag = &mut project.flags[f];
            let s = &mut flag.states[0];
            s.on = !s.on;
            s.last_modified = date;
            s.version += 1;
            flag.version += 1;
            let id = object_id(&format!("ld-audit-touch:{}:{}", a.audit.len(), flag.key));
            added.push(AuditEntry {
                id: id.clone(),
                date,
                kind: "flag",
                name: flag.name.clone(),
                title_verb: if s.on {
                    "turned on the flag"
                } else {
                    "turned off the flag"
                },
                action: "updateOn",
                resource: format!("proj/{}:env/{env}:flag/{}", project.key, flag.key),
                member: 0,
            });
        }
        a.audit.extend(added.iter().cloned());
        a.audit
            .sort_by(|x, y| y.date.cmp(&x.date).then_with(|| y.id.cmp(&x.id)));
        added.sort_by(|x, y| y.date.cmp(&x.date).then_with(|| y.id.cmp(&x.id)));
        added.into_iter().map(|e| e.id).collect()
    }
}
