//! The test hooks on the seeded site: [`Simulator::jira_site_counts`] counts what a full
//! collection must hold, and [`Simulator::jira_touch`] changes issues between two syncs.

use headroom_core::clock::Clock;

use super::model::{History, Site};
use super::render::STATUSES;
use super::seed::status_change;
use crate::Simulator;
use crate::sim::lock;

/// What the seeded site holds, as a full collection by a token owner sees it: projects it
/// cannot browse, and everything in them, are left out (counted in `restricted_projects`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JiraSiteCounts {
    /// Projects a token owner may browse.
    pub projects: usize,
    /// Projects nobody holding a token may browse.
    pub restricted_projects: usize,
    /// Issues of the browsable projects.
    pub issues: usize,
    /// Their comments.
    pub comments: usize,
    /// Their changelog entries.
    pub changelog_entries: usize,
    /// Their worklogs.
    pub worklogs: usize,
    /// Boards of the browsable projects, scrum and kanban.
    pub boards: usize,
    /// Sprints of those boards.
    pub sprints: usize,
    /// Issues in a sprint (each holds one): the rows of their sprint memberships.
    pub sprint_memberships: usize,
    /// Issues with a story-point estimate.
    pub estimated_issues: usize,
}

impl Site {
    fn counts(&self) -> JiraSiteCounts {
        let open = |p: usize| !self.projects[p].restricted;
        let issues: Vec<_> = self.issues.iter().filter(|i| open(i.project)).collect();
        JiraSiteCounts {
            projects: (0..self.projects.len()).filter(|&p| open(p)).count(),
            restricted_projects: self.projects.iter().filter(|p| p.restricted).count(),
            issues: issues.len(),
            comments: issues.iter().map(|i| i.comments.len()).sum(),
            changelog_entries: issues.iter().map(|i| i.changelog.len()).sum(),
            worklogs: issues.iter().map(|i| i.worklogs.len()).sum(),
            boards: self.boards.iter().filter(|b| open(b.project)).count(),
            sprints: self
                .sprints
                .iter()
                .filter(|s| open(self.boards[s.board].project))
                .count(),
            sprint_memberships: issues.iter().filter(|i| i.sprint.is_some()).count(),
            estimated_issues: issues.iter().filter(|i| i.story_points.is_some()).count(),
        }
    }
}

impl Simulator {
    /// What the seeded Jira site holds; `None` when none is seeded.
    pub fn jira_site_counts(&self) -> Option<JiraSiteCounts> {
        lock(&self.inner.jira).site.as_ref().map(Site::counts)
    }

    /// Moves the `n` browsable issues updated longest ago (ties by id) to their next status
    /// now: each gets `updated` = now and a changelog entry by its reporter, so successive
    /// touches reach different issues. Their keys, oldest first.
    pub fn jira_touch(&self, n: usize) -> Vec<String> {
        let now = self.inner.clock.now();
        let mut state = lock(&self.inner.jira);
        let Some(site) = state.site.as_mut() else {
            return Vec::new();
        };
        let mut open: Vec<usize> = (0..site.issues.len())
            .filter(|&i| !site.projects[site.issues[i].project].restricted)
            .collect();
        open.sort_by_key(|&i| (site.issues[i].updated, site.issues[i].id));
        let mut keys = Vec::new();
        for &i in open.iter().take(n) {
            site.next_history_id += 1;
            let id = 10_000 + site.next_history_id;
            let issue = &mut site.issues[i];
            let to = (issue.status + 1) % STATUSES.len();
            issue.changelog.push(History {
                id,
                author: issue.reporter,
                created: now,
                items: vec![status_change(issue.status, to)],
            });
            issue.status = to;
            issue.resolved = (STATUSES[to].2 == "done").then_some(now);
            issue.updated = now;
            keys.push(issue.key.clone());
        }
        keys
    }
}
