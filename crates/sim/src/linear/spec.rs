//! What the seeded Linear workspace holds ([`LinearWorkspaceSpec`]) and the limits it plays
//! ([`LinearLimits`]): the configuration side, kept apart from the data it seeds.

use headroom_core::clock::SignedDuration;

/// Linear's documented limits, per user. Every number is configurable so that a test or a
/// benchmark can reach a budget in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinearLimits {
    /// Requests per period for a personal API key (2,500 an hour).
    pub api_key_requests: u64,
    /// Complexity points per period for a personal API key (3,000,000 an hour).
    pub api_key_complexity: u64,
    /// Requests per period for an OAuth token (5,000 an hour).
    pub oauth_requests: u64,
    /// Complexity points per period for an OAuth token (2,000,000 an hour).
    pub oauth_complexity: u64,
    /// The period the buckets refill over, continuously (an hour).
    pub period: SignedDuration,
    /// A single document above this complexity is refused, whatever the budget (10,000).
    pub max_query_complexity: u64,
}

impl Default for LinearLimits {
    fn default() -> Self {
        Self {
            api_key_requests: 2_500,
            api_key_complexity: 3_000_000,
            oauth_requests: 5_000,
            oauth_complexity: 2_000_000,
            period: SignedDuration::from_secs(3_600),
            max_query_complexity: 10_000,
        }
    }
}

/// The seeded Linear workspace. Counts of teams, users, issues, cycles, projects and labels are
/// exact; an issue's comments, attachments and history entries are drawn from 0 (history: 1)
/// to their maximum. Generation is deterministic from [`crate::SimConfig::seed`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LinearWorkspaceSpec {
    /// The workspace's URL key (`acme`).
    pub name: String,
    /// Teams.
    pub teams: usize,
    /// Users besides the token owners (who are always members of every team).
    pub users: usize,
    /// Issues per team.
    pub issues_per_team: usize,
    /// Comments per issue: 0 to this many.
    pub max_comments: usize,
    /// Attachments per issue: 0 to this many.
    pub max_attachments: usize,
    /// History entries per issue: 1 to this many.
    pub max_history: usize,
    /// Cycles per team (two weeks each, the last one current).
    pub cycles_per_team: usize,
    /// Projects of the workspace, each led by one or two teams.
    pub projects: usize,
    /// Labels per team, besides the workspace labels.
    pub labels_per_team: usize,
    /// Workspace labels (no team).
    pub workspace_labels: usize,
    /// How far back creation times reach, in days before the clock at seeding.
    pub history_days: u32,
    /// The limits in force.
    pub limits: LinearLimits,
}

impl LinearWorkspaceSpec {
    /// A workspace `name` with 2 teams, 4 users, 20 issues per team and Linear's limits.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            teams: 2,
            users: 4,
            issues_per_team: 20,
            max_comments: 3,
            max_attachments: 2,
            max_history: 4,
            cycles_per_team: 3,
            projects: 3,
            labels_per_team: 2,
            workspace_labels: 3,
            history_days: 180,
            limits: LinearLimits::default(),
        }
    }

    /// `n` teams.
    pub fn with_teams(mut self, n: usize) -> Self {
        self.teams = n;
        self
    }

    /// `n` issues in every team.
    pub fn with_issues_per_team(mut self, n: usize) -> Self {
        self.issues_per_team = n;
        self
    }

    /// Other limits.
    pub fn with_limits(mut self, limits: LinearLimits) -> Self {
        self.limits = limits;
        self
    }

    /// What cannot be seeded, if anything.
    pub(crate) fn problem(&self) -> Option<&'static str> {
        let valid = !self.name.is_empty()
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !valid {
            return Some("the Linear workspace name must be letters, digits and '-'");
        }
        if self.teams == 0 || self.teams > 26 * 26 {
            return Some("a Linear workspace needs 1 to 676 teams");
        }
        if self.max_history == 0 {
            return Some("every Linear issue has at least one history entry");
        }
        if self.history_days == 0 {
            return Some("the Linear workspace's history must reach back at least a day");
        }
        let l = &self.limits;
        if l.api_key_requests == 0
            || l.api_key_complexity == 0
            || l.oauth_requests == 0
            || l.oauth_complexity == 0
            || l.max_query_complexity == 0
            || l.period <= SignedDuration::ZERO
        {
            return Some("Linear's limits must be at least 1 over a period longer than zero");
        }
        None
    }
}
