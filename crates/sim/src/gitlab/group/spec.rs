//! What the seeded GitLab group holds ([`GitlabGroupSpec`]) and the limits GitLab.com enforces
//! per endpoint without headers ([`GitlabEndpointLimits`]): the configuration side of the
//! group, kept apart from the data it seeds.

/// The seeded GitLab group: its shape and how much each project holds. Every count is exact;
/// only the children of an item (commits, notes, jobs) are drawn, from 1 to their maximum.
/// Generation is deterministic from [`crate::SimConfig::seed`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GitlabGroupSpec {
    /// The top group's path (`acme`).
    pub path: String,
    /// Subgroups, spread over `depth` levels below the top group.
    pub subgroups: usize,
    /// How deep subgroups nest (1: children of the top group only).
    pub depth: usize,
    /// Projects in every group, the top group and each subgroup alike.
    pub projects_per_group: usize,
    /// Merge requests per project.
    pub merge_requests_per_project: usize,
    /// Issues per project.
    pub issues_per_project: usize,
    /// Pipelines per project.
    pub pipelines_per_project: usize,
    /// Deployments per project.
    pub deployments_per_project: usize,
    /// Milestones per project.
    pub milestones_per_project: usize,
    /// Releases per project.
    pub releases_per_project: usize,
    /// Feature flags per project.
    pub feature_flags_per_project: usize,
    /// Milestones of every group (top and subgroups).
    pub group_milestones: usize,
    /// Commits per merge request: 1 to this many.
    pub max_commits_per_merge_request: usize,
    /// Notes per merge request and per issue: 1 to this many, some of them system notes.
    pub max_notes: usize,
    /// Jobs per pipeline: 1 to this many.
    pub max_jobs_per_pipeline: usize,
    /// How far back creation times reach, in days before the sim's clock at seeding.
    pub history_days: u32,
    /// Scenario: feature flags answer `403 Forbidden` on every this-many-th project (the
    /// first, then every n-th); 0 never, 1 on every project.
    pub feature_flags_forbidden_every: usize,
    /// Scenario: this many projects (spread over the group) are deleted right after a
    /// `GET /groups/:id/projects` page listed them; from then on the project and its
    /// sub-resources answer `404 Project Not Found` and listings leave it out.
    pub deleted_after_listing: usize,
    /// Scenario: every this-many-th page a group listing serves (counting every listing of
    /// the group and its projects) is served, counted and logged, but its answer leaves only
    /// after [`crate::Faults::timeout_after`]: a client with a shorter timeout gives up on a
    /// page GitLab already sent. 0 never.
    pub stall_page_every: usize,
    /// The largest offset (`page` × `per_page`) GitLab serves on a list that also offers
    /// keyset pagination (project issues); past it the answer is 405. 0 lifts the limit.
    /// GitLab's default is 50,000 (self-managed instances may change it).
    pub max_offset: usize,
}

/// GitLab's default maximum offset on lists that also offer keyset pagination.
pub const MAX_OFFSET: usize = 50_000;

impl GitlabGroupSpec {
    /// A group `path` with 3 subgroups two levels deep, 4 projects per group and
    /// [`Self::with_items`]`(20)`.
    pub fn new(path: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            subgroups: 3,
            depth: 2,
            projects_per_group: 4,
            merge_requests_per_project: 0,
            issues_per_project: 0,
            pipelines_per_project: 0,
            deployments_per_project: 0,
            milestones_per_project: 3,
            releases_per_project: 2,
            feature_flags_per_project: 3,
            group_milestones: 2,
            max_commits_per_merge_request: 4,
            max_notes: 4,
            max_jobs_per_pipeline: 4,
            history_days: 365,
            feature_flags_forbidden_every: 0,
            deleted_after_listing: 0,
            stall_page_every: 0,
            max_offset: MAX_OFFSET,
        }
        .with_items(20)
    }

    /// `items` merge requests, issues and pipelines per project, and half as many
    /// deployments.
    pub fn with_items(mut self, items: usize) -> Self {
        self.merge_requests_per_project = items;
        self.issues_per_project = items;
        self.pipelines_per_project = items;
        self.deployments_per_project = items / 2;
        self
    }

    /// `subgroups` subgroups nested up to `depth` levels.
    pub fn with_subgroups(mut self, subgroups: usize, depth: usize) -> Self {
        self.subgroups = subgroups;
        self.depth = depth;
        self
    }

    /// `n` projects in every group.
    pub fn with_projects_per_group(mut self, n: usize) -> Self {
        self.projects_per_group = n;
        self
    }

    /// What cannot be seeded, if anything.
    pub(crate) fn problem(&self) -> Option<&'static str> {
        let valid = |p: &str| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                && !p.starts_with(['-', '_', '.'])
        };
        if !valid(&self.path) {
            return Some("the GitLab group path must be letters, digits, '-', '_' and '.'");
        }
        if self.depth == 0 {
            return Some("GitLab subgroups nest at least one level deep");
        }
        if self.max_commits_per_merge_request == 0
            || self.max_notes == 0
            || self.max_jobs_per_pipeline == 0
        {
            return Some("commits, notes and jobs per item must be at least 1");
        }
        if self.history_days == 0 {
            return Some("the GitLab group's history must reach back at least a day");
        }
        None
    }
}

/// GitLab.com's per-endpoint limits (per user, per fixed minute), which refuse with 429 and
/// `Retry-After` but send no `RateLimit-*` header. 0 turns one off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GitlabEndpointLimits {
    /// `GET /groups/:id` (400).
    pub group_per_minute: u64,
    /// `GET /projects/:id` (400).
    pub project_per_minute: u64,
    /// `GET /groups/:id/projects` (600).
    pub group_projects_per_minute: u64,
}

impl GitlabEndpointLimits {
    /// GitLab.com's numbers.
    pub const GITLAB_COM: GitlabEndpointLimits = GitlabEndpointLimits {
        group_per_minute: 400,
        project_per_minute: 400,
        group_projects_per_minute: 600,
    };
    /// None (a self-managed instance's default).
    pub const OFF: GitlabEndpointLimits = GitlabEndpointLimits {
        group_per_minute: 0,
        project_per_minute: 0,
        group_projects_per_minute: 0,
    };
}
