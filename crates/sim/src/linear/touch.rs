//! Test hooks on the seeded workspace: what it holds ([`LinearWorkspaceCounts`], each issue's
//! history length), and changes between two syncs ([`Simulator::linear_touch`]).

use headroom_core::clock::Clock;

use super::model::{History, uuid};
use super::seed::kind;
use crate::sim::{Simulator, lock};

/// What the seeded workspace holds, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinearWorkspaceCounts {
    /// Teams.
    pub teams: usize,
    /// Users.
    pub users: usize,
    /// Team memberships.
    pub memberships: usize,
    /// Workflow states.
    pub states: usize,
    /// Labels (workspace and team).
    pub labels: usize,
    /// Projects.
    pub projects: usize,
    /// Cycles.
    pub cycles: usize,
    /// Issues.
    pub issues: usize,
    /// Comments.
    pub comments: usize,
    /// Attachments.
    pub attachments: usize,
    /// Issue history entries.
    pub history: usize,
}

impl Simulator {
    /// What the seeded Linear workspace holds (all zero when none is seeded).
    pub fn linear_workspace_counts(&self) -> LinearWorkspaceCounts {
        let state = lock(&self.inner.linear);
        let Some(ws) = state.workspace.as_ref() else {
            return LinearWorkspaceCounts::default();
        };
        LinearWorkspaceCounts {
            teams: ws.teams.len(),
            users: ws.users.len(),
            memberships: ws.memberships.len(),
            states: ws.states.len(),
            labels: ws.labels.len(),
            projects: ws.projects.len(),
            cycles: ws.cycles.len(),
            issues: ws.issues.len(),
            comments: ws.comments.len(),
            attachments: ws.attachments.len(),
            history: ws.history.len(),
        }
    }

    /// How many history entries each issue of the seeded Linear workspace has, in issue
    /// order (empty when none is seeded): what a sync must ask beyond an issue's first page.
    pub fn linear_history_lengths(&self) -> Vec<usize> {
        let state = lock(&self.inner.linear);
        state.workspace.as_ref().map_or_else(Vec::new, |ws| {
            ws.issues.iter().map(|i| i.history.len()).collect()
        })
    }

    /// Moves `n` issues' `updatedAt` to now (the least recently updated first), each with a
    /// new history entry (a priority change by the issue's creator); returns their
    /// identifiers (`ENG-12`).
    pub fn linear_touch(&self, n: usize) -> Vec<String> {
        let now = self.inner.clock.now();
        let mut state = lock(&self.inner.linear);
        let Some(ws) = state.workspace.as_mut() else {
            return Vec::new();
        };
        let mut order: Vec<usize> = (0..ws.issues.len()).collect();
        order.sort_by_key(|&i| (ws.issues[i].updated_at, i));
        let mut touched = Vec::new();
        for &i in order.iter().take(n) {
            let history = ws.history.len();
            let issue = &mut ws.issues[i];
            let to = issue.priority % 4 + 1;
            ws.history.push(History {
                id: uuid(ws.seed, kind::HISTORY, 1_000_000_000 + history as u64),
                issue: i,
                actor: Some(issue.creator),
                created_at: now,
                priority: Some((issue.priority, to)),
                ..History::default()
            });
            issue.priority = to;
            issue.updated_at = now;
            issue.history.push(history);
            touched.push(ws.identifier(i));
        }
        touched
    }
}
