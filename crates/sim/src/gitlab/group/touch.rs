//! The test hooks on the seeded group: [`Simulator::gitlab_touch`] changes merge requests,
//! issues, pipelines and deployments between two syncs, and
//! [`Simulator::gitlab_group_counts`] counts what a full collection of the group must hold.

use headroom_core::clock::{Clock, Timestamp};

use super::model::{GroupWorld, Job, Kind, Note};
use crate::Simulator;
use crate::sim::lock;

/// What the seeded group (or one of its subgroups, with everything below it) holds, as a
/// full collection sees it. Projects deleted by the `deleted_after_listing` scenario count in
/// `projects` (a listing served them) and in `deleted_projects`, but none of their contents
/// count (every read of them answers 404).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GitlabGroupCounts {
    /// The group and its descendant groups.
    pub groups: usize,
    /// Projects in them.
    pub projects: usize,
    /// Projects of the `deleted_after_listing` scenario (counted in `projects` too).
    pub deleted_projects: usize,
    /// Merge requests.
    pub merge_requests: usize,
    /// Their commits.
    pub merge_request_commits: usize,
    /// Their approval states: one per merge request.
    pub merge_request_approvals: usize,
    /// Their notes, system notes included.
    pub merge_request_notes: usize,
    /// Pipelines.
    pub pipelines: usize,
    /// Their jobs.
    pub jobs: usize,
    /// Issues.
    pub issues: usize,
    /// Their notes, system notes included.
    pub issue_notes: usize,
    /// Milestones of the projects and of the groups.
    pub milestones: usize,
    /// Deployments.
    pub deployments: usize,
    /// Releases.
    pub releases: usize,
    /// Feature flags of projects whose feature flags API is not forbidden.
    pub feature_flags: usize,
    /// Projects whose feature flags API answers 403.
    pub feature_flags_forbidden_projects: usize,
}

/// What [`Simulator::gitlab_touch`] changed: `(project id, iid)` of merge requests and
/// issues, `(project id, id)` of pipelines and deployments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitlabTouched {
    /// Each got `updated_at` = now and a new (non-system) note.
    pub merge_requests: Vec<(u64, u64)>,
    /// Each got `updated_at` = now and a new (non-system) note.
    pub issues: Vec<(u64, u64)>,
    /// Each got `updated_at` = now and a new job.
    pub pipelines: Vec<(u64, u64)>,
    /// Each got `updated_at` = `finished_at` = now.
    pub deployments: Vec<(u64, u64)>,
}

impl GroupWorld {
    /// Indices of the projects under group `path` that reads can reach.
    fn readable_projects(&self, gi: usize) -> Vec<usize> {
        (0..self.projects.len())
            .filter(|&i| self.is_within(self.projects[i].group, gi))
            .filter(|&i| !self.projects[i].deleted && !self.projects[i].deleted_after_listing)
            .collect()
    }

    fn counts(&self, gi: usize) -> GitlabGroupCounts {
        let groups: Vec<usize> = (0..self.groups.len())
            .filter(|&g| self.is_within(g, gi))
            .collect();
        let mut c = GitlabGroupCounts {
            groups: groups.len(),
            milestones: groups
                .iter()
                .map(|&g| self.groups[g].milestones.len())
                .sum(),
            ..GitlabGroupCounts::default()
        };
        for p in self.projects.iter().filter(|p| self.is_within(p.group, gi)) {
            c.projects += 1;
            if p.deleted || p.deleted_after_listing {
                c.deleted_projects += 1;
                continue;
            }
            c.merge_requests += p.merge_requests.len();
            for m in &p.merge_requests {
                c.merge_request_commits += m.commits.len();
                c.merge_request_approvals += 1;
                c.merge_request_notes += m.notes.len();
            }
            c.pipelines += p.pipelines.len();
            c.jobs += p.pipelines.iter().map(|pl| pl.jobs.len()).sum::<usize>();
            c.issues += p.issues.len();
            c.issue_notes += p.issues.iter().map(|i| i.notes.len()).sum::<usize>();
            c.milestones += p.milestones.len();
            c.deployments += p.deployments.len();
            c.releases += p.releases.len();
            if p.flags_forbidden {
                c.feature_flags_forbidden_projects += 1;
            } else {
                c.feature_flags += p.feature_flags.len();
            }
        }
        c
    }

    /// Touches the `n` least recently updated merge requests, issues, pipelines and
    /// deployments of the readable projects under group `gi`.
    fn touch(&mut self, gi: usize, n: usize, now: Timestamp) -> GitlabTouched {
        let projects = self.readable_projects(gi);
        let author = self.members.iter().position(|m| m.has_token).unwrap_or(0);
        let oldest = |items: Vec<(Timestamp, u64, usize, usize)>| {
            let mut items = items;
            items.sort();
            items.truncate(n);
            items
        };
        let mut touched = GitlabTouched::default();
        let mrs = oldest(collect(&projects, |pi| {
            self.projects[pi]
                .merge_requests
                .iter()
                .enumerate()
                .map(move |(k, m)| (m.updated_at, m.id, pi, k))
                .collect()
        }));
        for (_, _, pi, k) in mrs {
            let note = Note {
                id: self.ids.next(Kind::Note),
                body: "Rebased on main; please look again.".to_owned(),
                author,
                system: false,
                created_at: now,
                updated_at: now,
            };
            let p = &mut self.projects[pi];
            let m = &mut p.merge_requests[k];
            m.updated_at = now;
            m.notes.push(note);
            touched.merge_requests.push((p.id, m.iid));
        }
        let issues = oldest(collect(&projects, |pi| {
            self.projects[pi]
                .issues
                .iter()
                .enumerate()
                .map(move |(k, i)| (i.updated_at, i.id, pi, k))
                .collect()
        }));
        for (_, _, pi, k) in issues {
            let note = Note {
                id: self.ids.next(Kind::Note),
                body: "Still seen after the last deploy.".to_owned(),
                author,
                system: false,
                created_at: now,
                updated_at: now,
            };
            let p = &mut self.projects[pi];
            let i = &mut p.issues[k];
            i.updated_at = now;
            i.notes.push(note);
            touched.issues.push((p.id, i.iid));
        }
        let pipelines = oldest(collect(&projects, |pi| {
            self.projects[pi]
                .pipelines
                .iter()
                .enumerate()
                .map(move |(k, pl)| (pl.updated_at, pl.id, pi, k))
                .collect()
        }));
        for (_, _, pi, k) in pipelines {
            let job = Job {
                id: self.ids.next(Kind::Job),
                name: "retry-0".to_owned(),
                stage: "test",
                status: "success",
                created_at: now,
                started_at: now,
                finished_at: now,
            };
            let p = &mut self.projects[pi];
            let pl = &mut p.pipelines[k];
            pl.updated_at = now;
            pl.jobs.push(job);
            touched.pipelines.push((p.id, pl.id));
        }
        let deployments = oldest(collect(&projects, |pi| {
            self.projects[pi]
                .deployments
                .iter()
                .enumerate()
                .map(move |(k, d)| (d.updated_at, d.id, pi, k))
                .collect()
        }));
        for (_, _, pi, k) in deployments {
            let p = &mut self.projects[pi];
            let d = &mut p.deployments[k];
            d.updated_at = now;
            d.finished_at = Some(now);
            d.status = "success";
            touched.deployments.push((p.id, d.id));
        }
        touched
    }
}

fn collect(
    projects: &[usize],
    of: impl Fn(usize) -> Vec<(Timestamp, u64, usize, usize)>,
) -> Vec<(Timestamp, u64, usize, usize)> {
    projects.iter().flat_map(|&pi| of(pi)).collect()
}

impl Simulator {
    /// What the seeded GitLab group `path` (a full path, or a numeric id) holds with
    /// everything below it; `None` when no such group was seeded.
    pub fn gitlab_group_counts(&self, path: &str) -> Option<GitlabGroupCounts> {
        let gl = lock(&self.inner.gitlab);
        let w = gl.group.world.as_ref()?;
        let gi = w.group_index(path)?;
        Some(w.counts(gi))
    }

    /// Changes the group between two syncs: the `n` least recently updated merge requests,
    /// issues, pipelines and deployments under group `path` (each kind separately, fewer if
    /// there are fewer) get `updated_at` = the clock's now, and a new note (merge requests,
    /// issues) or a new job (pipelines). Returns what was touched; `None` when no such group
    /// was seeded.
    pub fn gitlab_touch(&self, path: &str, n: usize) -> Option<GitlabTouched> {
        let now = self.inner.clock.now();
        let mut gl = lock(&self.inner.gitlab);
        let w = gl.group.world.as_mut()?;
        let gi = w.group_index(path)?;
        Some(w.touch(gi, n, now))
    }
}
