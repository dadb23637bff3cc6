//! What the seeded Jira site holds ([`JiraSiteSpec`]) and the limits it enforces
//! ([`JiraLimits`]): the configuration side of the site, kept apart from the data it seeds.

/// The seeded Jira Cloud site. Every count is exact. Generation is deterministic from
/// [`JiraSiteSpec::seed`]; every seeded time lies in the past of the clock at seeding.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JiraSiteSpec {
    /// The site's name (`acme` for `acme.atlassian.net`).
    pub name: String,
    /// Projects (keys `P0`, `P1`, … spelled as letters: `PA`, `PB`, …).
    pub projects: usize,
    /// Issues per project.
    pub issues_per_project: usize,
    /// Comments per issue.
    pub comments_per_issue: usize,
    /// Changelog entries (histories) per issue.
    pub changelog_per_issue: usize,
    /// Worklogs per issue.
    pub worklogs_per_issue: usize,
    /// Boards per project: the first is scrum, then kanban and scrum in turn.
    pub boards_per_project: usize,
    /// Sprints per scrum board: closed ones, then one active, then one future.
    pub sprints_per_board: usize,
    /// The seed of every random choice of the site's data.
    pub seed: u64,
    /// Every user's time zone (an IANA name), which JQL dates are read in and `/myself`
    /// reports; Jira's default is the site's, here `UTC`.
    pub time_zone: String,
    /// How far back creation times reach, in days before the clock at seeding.
    pub history_days: u32,
    /// The last this many projects are browsable by nobody holding a token: project search
    /// and JQL leave them out, their issues answer 404, their boards are not listed.
    pub restricted_projects: usize,
    /// Users (logins) without Jira Software access: the agile API answers them 403.
    pub agile_unlicensed: Vec<String>,
    /// The limits in force.
    pub limits: JiraLimits,
    /// The id of Jira Software's sprint field (`schema.custom`
    /// `com.pyxis.greenhopper.jira:gh-sprint`); Jira Cloud's usual `customfield_10020`. Sites
    /// differ: `GET /field` names it, and issues carry their sprints under it.
    pub sprint_field: String,
    /// The id of the numeric `Story Points` field, as `GET /field` lists it and issues carry
    /// their estimate under it (`customfield_10016` unless told).
    pub story_points_field: String,
}

/// Jira's limits: per-site, per-endpoint, per-method burst buckets for every request, and
/// an OAuth app's hourly points. The numbers are the simulator's guesses at Atlassian's
/// transcribed defaults (100 requests a second, a buffer above it, 65,000 points an hour).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct JiraLimits {
    /// Steady requests per second of each endpoint and method (GET and POST 100); 0 turns
    /// the burst limit off.
    pub burst_per_sec: u64,
    /// The bucket's buffer: requests it takes at once above an empty second.
    pub burst_buffer: u64,
    /// `GET /issue/{key}/changelog`'s own steady rate (200).
    pub changelog_burst_per_sec: u64,
    /// The OAuth app's points per UTC hour (65,000); 0 turns the quota off.
    pub app_points_per_hour: u64,
    /// `X-RateLimit-Reset` without seconds (`2026-03-26T16:01Z`), as field logs show.
    pub reset_without_seconds: bool,
    /// The most issues a search page holds when fields besides `id` and `key` are asked.
    pub search_max_results: usize,
}

impl Default for JiraLimits {
    fn default() -> Self {
        JiraLimits {
            burst_per_sec: 100,
            burst_buffer: 100,
            changelog_burst_per_sec: 200,
            app_points_per_hour: 65_000,
            reset_without_seconds: false,
            search_max_results: 100,
        }
    }
}

impl JiraSiteSpec {
    /// A site `name` with 3 projects of 20 issues, 3 comments, 3 changelog entries and 2
    /// worklogs each, 2 boards per project and 4 sprints per scrum board, in UTC.
    pub fn new(name: impl Into<String>) -> Self {
        JiraSiteSpec {
            name: name.into(),
            projects: 3,
            issues_per_project: 20,
            comments_per_issue: 3,
            changelog_per_issue: 3,
            worklogs_per_issue: 2,
            boards_per_project: 2,
            sprints_per_board: 4,
            seed: 1,
            time_zone: "UTC".to_owned(),
            history_days: 120,
            restricted_projects: 0,
            agile_unlicensed: Vec::new(),
            limits: JiraLimits::default(),
            sprint_field: "customfield_10020".to_owned(),
            story_points_field: "customfield_10016".to_owned(),
        }
    }

    /// The ids of the site's sprint and story-point fields (`customfield_NNNNN`).
    pub fn with_custom_fields(
        mut self,
        sprint: impl Into<String>,
        story_points: impl Into<String>,
    ) -> Self {
        self.sprint_field = sprint.into();
        self.story_points_field = story_points.into();
        self
    }

    /// `projects` projects of `issues` issues each.
    pub fn with_size(mut self, projects: usize, issues: usize) -> Self {
        self.projects = projects;
        self.issues_per_project = issues;
        self
    }

    /// Comments, changelog entries and worklogs per issue.
    pub fn with_children(mut self, comments: usize, changelog: usize, worklogs: usize) -> Self {
        self.comments_per_issue = comments;
        self.changelog_per_issue = changelog;
        self.worklogs_per_issue = worklogs;
        self
    }

    /// Boards per project and sprints per scrum board.
    pub fn with_boards(mut self, boards: usize, sprints: usize) -> Self {
        self.boards_per_project = boards;
        self.sprints_per_board = sprints;
        self
    }

    /// The users' time zone (an IANA name).
    pub fn with_time_zone(mut self, tz: impl Into<String>) -> Self {
        self.time_zone = tz.into();
        self
    }

    /// The seed of the site's data.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The limits in force.
    pub fn with_limits(mut self, limits: JiraLimits) -> Self {
        self.limits = limits;
        self
    }

    /// What cannot be seeded, if anything.
    pub(crate) fn problem(&self) -> Option<String> {
        let valid = !self.name.is_empty()
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !valid {
            return Some("the Jira site name must be letters, digits and hyphens".into());
        }
        if self.projects > 26 * 27 {
            return Some("a Jira site holds at most 702 projects here".into());
        }
        if self.history_days == 0 {
            return Some("the Jira site's history must reach back at least a day".into());
        }
        if jiff::tz::TimeZone::get(&self.time_zone).is_err() {
            return Some(format!("unknown time zone {:?}", self.time_zone));
        }
        let custom = |id: &str| {
            id.strip_prefix("customfield_")
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        };
        if !custom(&self.sprint_field) || !custom(&self.story_points_field) {
            return Some("a Jira custom field id is `customfield_` and digits".into());
        }
        if self.sprint_field == self.story_points_field {
            return Some("the sprint and story-point fields must differ".into());
        }
        if self.limits.search_max_results == 0 {
            return Some("a Jira search page must hold at least one issue".into());
        }
        None
    }
}
