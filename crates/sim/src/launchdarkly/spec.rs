//! What the seeded LaunchDarkly account holds ([`LdAccountSpec`]) and the limits it plays
//! ([`LdLimits`]): the configuration side of the account, kept apart from the data it seeds.

use std::collections::BTreeMap;

use headroom_core::clock::SignedDuration;

/// LaunchDarkly's limits: an account-global fixed window and one fixed window per route
/// (method and path template), both of `window` length. LaunchDarkly publishes no numbers
/// (clients program against the headers); the defaults are the simulator's choice.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LdLimits {
    /// The length of every window (10 s, as LaunchDarkly documents); windows are aligned to
    /// multiples of it on the simulator's clock.
    pub window: SignedDuration,
    /// Requests per window of the whole account, every token and route together (100).
    pub global_per_window: u64,
    /// Requests per window of one route, unless overridden (25).
    pub route_per_window: u64,
    /// Per-route limits by route template, e.g. `"GET /api/v2/flags/{projectKey}"` → 5.
    pub route_overrides: BTreeMap<String, u64>,
    /// Whether a 429 carries `Retry-After` (whole seconds to the reset, rounded up); the
    /// documents promise it for IP-based limits only, so a client must do without.
    pub retry_after: bool,
}

impl Default for LdLimits {
    fn default() -> Self {
        Self {
            window: SignedDuration::from_secs(10),
            global_per_window: 100,
            route_per_window: 25,
            route_overrides: BTreeMap::new(),
            retry_after: true,
        }
    }
}

impl LdLimits {
    /// Windows of this length.
    pub fn with_window(mut self, window: SignedDuration) -> Self {
        self.window = window;
        self
    }

    /// The account's requests per window.
    pub fn with_global(mut self, per_window: u64) -> Self {
        self.global_per_window = per_window;
        self
    }

    /// Every route's requests per window (unless overridden).
    pub fn with_route_default(mut self, per_window: u64) -> Self {
        self.route_per_window = per_window;
        self
    }

    /// One route's requests per window; `route` is a template such as
    /// `"GET /api/v2/flags/{projectKey}"` (see [`crate::launchdarkly::ROUTES`]).
    pub fn with_route(mut self, route: impl Into<String>, per_window: u64) -> Self {
        self.route_overrides.insert(route.into(), per_window);
        self
    }

    /// Whether 429s carry `Retry-After`.
    pub fn with_retry_after(mut self, send: bool) -> Self {
        self.retry_after = send;
        self
    }

    /// The limit of a route's window.
    pub fn route_limit(&self, route: &str) -> u64 {
        self.route_overrides
            .get(route)
            .copied()
            .unwrap_or(self.route_per_window)
    }
}

/// The seeded LaunchDarkly account. Every count is exact. Generation is deterministic from
/// [`crate::SimConfig::seed`]; every seeded time lies in the past of the clock at seeding.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LdAccountSpec {
    /// The account's name (`acme`); its id is derived from it.
    pub name: String,
    /// Projects (keys `proj-0`, `proj-1`, …; the first is `default`).
    pub projects: usize,
    /// Environments per project (`production`, `test`, then `env-2`, …).
    pub environments_per_project: usize,
    /// Flags per project.
    pub flags_per_project: usize,
    /// Segments per environment.
    pub segments_per_environment: usize,
    /// Members besides the token owners (every user token's owner is a member too).
    pub members: usize,
    /// Audit log entries.
    pub audit_entries: usize,
    /// Code-reference repositories.
    pub code_ref_repositories: usize,
    /// How far back creation times reach, in days before the clock at seeding.
    pub history_days: u32,
    /// Every this-many audit entries share their predecessor's millisecond (0: never), so
    /// that paging by `before` meets ties.
    pub audit_tie_every: usize,
    /// The limits in force.
    pub limits: LdLimits,
}

impl LdAccountSpec {
    /// An account `name` with 2 projects of 2 environments and 30 flags, 3 segments per
    /// environment, 5 members, 45 audit entries and 3 code-reference repositories.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            projects: 2,
            environments_per_project: 2,
            flags_per_project: 30,
            segments_per_environment: 3,
            members: 5,
            audit_entries: 45,
            code_ref_repositories: 3,
            history_days: 90,
            audit_tie_every: 7,
            limits: LdLimits::default(),
        }
    }

    /// `projects` projects of `environments` environments each.
    pub fn with_projects(mut self, projects: usize, environments: usize) -> Self {
        self.projects = projects;
        self.environments_per_project = environments;
        self
    }

    /// Flags per project.
    pub fn with_flags(mut self, n: usize) -> Self {
        self.flags_per_project = n;
        self
    }

    /// Segments per environment.
    pub fn with_segments(mut self, n: usize) -> Self {
        self.segments_per_environment = n;
        self
    }

    /// Members besides the token owners.
    pub fn with_members(mut self, n: usize) -> Self {
        self.members = n;
        self
    }

    /// Audit log entries.
    pub fn with_audit_entries(mut self, n: usize) -> Self {
        self.audit_entries = n;
        self
    }

    /// Code-reference repositories.
    pub fn with_code_ref_repositories(mut self, n: usize) -> Self {
        self.code_ref_repositories = n;
        self
    }

    /// How far back creation times reach, in days.
    pub fn with_history_days(mut self, days: u32) -> Self {
        self.history_days = days;
        self
    }

    /// The limits in force.
    pub fn with_limits(mut self, limits: LdLimits) -> Self {
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
            return Some("the LaunchDarkly account name must be letters, digits and '-'");
        }
        if self.history_days == 0 {
            return Some("the LaunchDarkly account's history must reach back at least a day");
        }
        let l = &self.limits;
        if l.window <= SignedDuration::ZERO || l.window.subsec_nanos() % 1_000_000 != 0 {
            return Some("LaunchDarkly windows must be longer than zero, in whole milliseconds");
        }
        if l.global_per_window == 0
            || l.route_per_window == 0
            || l.route_overrides.values().any(|&n| n == 0)
        {
            return Some("LaunchDarkly limits must be at least 1 a window");
        }
        None
    }
}
