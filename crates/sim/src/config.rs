//! The simulator's configuration. `SimConfig::default()` is GitHub's numbers; the `with_*`
//! methods and the public fields adjust it.

use std::collections::BTreeMap;
use std::sync::Arc;

use headroom_core::clock::SignedDuration;

use crate::error::SimError;
use crate::gitlab::group::{GitlabEndpointLimits, GitlabGroupSpec};
use crate::quota::Resource;
use crate::scenario::Scenario;

/// Who a token belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TokenOwner {
    /// A user: every token of one user shares that user's quota.
    User(String),
    /// A GitHub App installation, with its own quota.
    Installation(u64),
}

/// One accepted token and its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenSpec {
    /// The secret, as sent in `Authorization: token …` or `Bearer …`.
    pub token: String,
    /// Its owner.
    pub owner: TokenOwner,
}

impl TokenSpec {
    /// A token owned by a user.
    pub fn user(token: impl Into<String>, login: impl Into<String>) -> Self {
        Self {
            token: token.into(),
            owner: TokenOwner::User(login.into()),
        }
    }

    /// A token of an app installation.
    pub fn installation(token: impl Into<String>, id: u64) -> Self {
        Self {
            token: token.into(),
            owner: TokenOwner::Installation(id),
        }
    }

    /// Parses `TOKEN=LOGIN` or `TOKEN=installation:ID`.
    pub fn parse(s: &str) -> Result<Self, SimError> {
        let invalid = || SimError::InvalidToken(s.to_owned());
        let (token, owner) = s.split_once('=').ok_or_else(invalid)?;
        if token.is_empty() || owner.is_empty() {
            return Err(invalid());
        }
        if let Some(id) = owner.strip_prefix("installation:") {
            let id: u64 = id.parse().map_err(|_| invalid())?;
            return Ok(Self::installation(token, id));
        }
        let valid_login = owner.len() <= 39
            && owner.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !owner.starts_with('-');
        if !valid_login {
            return Err(invalid());
        }
        Ok(Self::user(token, owner))
    }
}

/// Spending of one user's core quota by some other client, at a steady rate.
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalSpend {
    /// Whose quota.
    pub login: String,
    /// Requests per minute.
    pub per_minute: f64,
}

impl ExternalSpend {
    /// Parses `LOGIN:PER_MINUTE`.
    pub fn parse(s: &str) -> Result<Self, SimError> {
        let invalid = || SimError::InvalidExternalSpend(s.to_owned());
        let (login, rate) = s.split_once(':').ok_or_else(invalid)?;
        let per_minute: f64 = rate.parse().map_err(|_| invalid())?;
        if login.is_empty() || !per_minute.is_finite() || per_minute < 0.0 {
            return Err(invalid());
        }
        Ok(Self {
            login: login.to_owned(),
            per_minute,
        })
    }
}

/// Random faults and latency, drawn from a generator seeded with the simulator's seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Faults {
    /// Fixed latency added to every request.
    pub latency: SignedDuration,
    /// Extra latency drawn uniformly from `0..=latency_jitter`.
    pub latency_jitter: SignedDuration,
    /// The fixed latency of a bucket's requests in place of `latency` (GitHub answers a page
    /// of GraphQL with its nested connections far slower than a REST page); jitter is added
    /// as for any other request.
    pub bucket_latency: BTreeMap<Resource, SignedDuration>,
    /// Probability (0–1) that a request answers 502/503/500 instead of its result.
    pub error_rate: f64,
    /// Probability (0–1) that a request hangs for `timeout_after` and then answers 504.
    pub timeout_rate: f64,
    /// How long a timed-out request hangs.
    pub timeout_after: SignedDuration,
    /// Probability (0–1) that a served answer's body is cut off halfway and the connection
    /// closed (over HTTP only; see [`crate::body_faults`]).
    pub cut_rate: f64,
    /// Probability (0–1) that a served answer's body stalls halfway for `stall_for`.
    pub stall_rate: f64,
    /// How long a stalled body waits before its second half.
    pub stall_for: SignedDuration,
    /// GraphQL queries that may return more nodes than this answer 502, as GitHub does when
    /// a query runs past its time limit; `None` never.
    pub graphql_timeout_above_nodes: Option<u64>,
    /// At most this many such 502s are answered; then the origin has recovered.
    pub graphql_timeouts: u32,
}

impl Default for Faults {
    fn default() -> Self {
        Self {
            latency: SignedDuration::ZERO,
            latency_jitter: SignedDuration::ZERO,
            bucket_latency: BTreeMap::new(),
            error_rate: 0.0,
            timeout_rate: 0.0,
            timeout_after: SignedDuration::from_secs(60),
            cut_rate: 0.0,
            stall_rate: 0.0,
            stall_for: SignedDuration::from_secs(2),
            graphql_timeout_above_nodes: None,
            graphql_timeouts: 0,
        }
    }
}

/// The simulator's configuration. Defaults are GitHub's published numbers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SimConfig {
    /// Which named behaviour to play.
    pub scenario: Scenario,
    /// The generated organization's login.
    pub org: String,
    /// How many repositories it has.
    pub repos: usize,
    /// The first this many repositories each get an issue with 150 comments, a pull request
    /// with 130 commits, and a project with 120 items: connections deeper than one page.
    pub deep_repos: usize,
    /// How much each generated repository holds.
    pub density: Density,
    /// Seed of every random choice (data and faults).
    pub seed: u64,
    /// Accepted tokens.
    pub tokens: Vec<TokenSpec>,
    /// Core requests per window for an authenticated user (5,000).
    pub core_limit: u64,
    /// Core requests per window for an app installation (5,000).
    pub installation_core_limit: u64,
    /// Core requests per window for an unauthenticated IP (60).
    pub unauthenticated_core_limit: u64,
    /// Search requests per minute, authenticated (30).
    pub search_limit: u64,
    /// Search requests per minute, unauthenticated (10).
    pub unauthenticated_search_limit: u64,
    /// Code search requests per minute (10).
    pub code_search_limit: u64,
    /// GraphQL points per window (5,000).
    pub graphql_limit: u64,
    /// Length of the primary (core and GraphQL) window (1 h).
    pub window: SignedDuration,
    /// Length of the search windows (1 min).
    pub search_window: SignedDuration,
    /// Concurrent requests per identity, REST and GraphQL together (100).
    pub concurrency_limit: u32,
    /// REST points per minute per identity (900; GET/HEAD/OPTIONS 1, other methods 5).
    pub rest_points_per_minute: u64,
    /// GraphQL points per minute per identity (2,000; a query 1, a mutation 5).
    pub graphql_points_per_minute: u64,
    /// Content-creating requests per minute (80).
    pub content_creation_per_minute: u64,
    /// Content-creating requests per hour (500).
    pub content_creation_per_hour: u64,
    /// Whether secondary-limit responses carry `retry-after` (scenarios may override).
    pub secondary_retry_after: bool,
    /// Send `retry-after` as an HTTP-date instead of delta-seconds (RFC 9110 allows both).
    pub retry_after_as_http_date: bool,
    /// `/events`' `X-Poll-Interval` (60 s).
    pub poll_interval_secs: u64,
    /// At most this many events reachable through `/events` (300).
    pub feed_cap: usize,
    /// Spending of a user's quota from elsewhere.
    pub external_spend: Vec<ExternalSpend>,
    /// `GET /rate_limit` reports a full quota with reset now + 1 h.
    pub lying_rate_limit: bool,
    /// Primary rate limits, as on github.com (the default). `false` plays GitHub Enterprise
    /// Server's default, rate limiting off: no response carries `x-ratelimit-*` headers, no
    /// bucket is ever exhausted, GraphQL's `rateLimit` answers null and `GET /rate_limit`
    /// answers 404 "Rate limiting is not enabled.". The secondary limits (concurrency, points
    /// per minute, content creation) still apply.
    pub rate_limiting: bool,
    /// Random faults and latency.
    pub faults: Faults,
    /// Base URL written into bodies and headers when the request URI is origin-form and has
    /// no Host header.
    pub public_base_url: String,
    /// Events to serve as the public feed instead of the scenario's (newest first), e.g. a
    /// corpus file.
    pub feed_events: Option<Arc<Vec<serde_json::Value>>>,
    /// Replay `feed_events` over this span from the simulator's start, in the order they were
    /// created (see [`crate::replay`]); none: serve them all at once, as given.
    pub feed_replay: Option<SignedDuration>,
    /// How many request log entries to keep in memory (the oldest are dropped).
    pub log_capacity: usize,
    /// Where to append one JSON line per request, if anywhere.
    pub log_file: Option<std::path::PathBuf>,
    /// The `live_feed` scenario's actor and repository pools: sizes and how often an entity
    /// is gone or renamed (the enrichment benchmark sizes them up and tunes the rates).
    pub feed_pool: FeedPool,
    /// In the `resource_limited` scenario, GraphQL queries that may return more nodes than
    /// this (by GitHub's node count) exceed GitHub's resource limits (3,000).
    pub resource_limit_nodes: u64,
    /// GitLab: authenticated API requests per user per fixed minute before the throttle
    /// answers 429 (2,000, the simulator's stand-in for GitLab.com's).
    pub gitlab_requests_per_minute: u64,
    /// GitLab: the length of its fixed windows in seconds (60, GitLab's minute). Shorter
    /// windows let a test cross many of them in seconds; every GitLab limit counts per window.
    pub gitlab_window_secs: i64,
    /// GitLab: play a self-managed instance, whose limits ship off: no throttle and no
    /// `RateLimit-*` header on any response. The application limit still applies.
    pub gitlab_self_managed: bool,
    /// GitLab: project creations per user per fixed minute before the application limit
    /// answers 429 while the throttle's headers still show room (10, the simulator's choice,
    /// small enough for a test to reach; 0 turns it off).
    pub gitlab_project_creations_per_minute: u64,
    /// GitLab: a seeded group (subgroups, projects and their merge requests, pipelines,
    /// issues, …) served read-only under `/api/v4`; none by default.
    pub gitlab_group: Option<GitlabGroupSpec>,
    /// GitLab: the per-endpoint limits that refuse without `RateLimit-*` headers. `None`:
    /// GitLab.com's numbers, or none on a self-managed instance.
    pub gitlab_endpoint_limits: Option<GitlabEndpointLimits>,
    /// Jira: a seeded Jira Cloud site under `/rest/api/3` and `/rest/agile/1.0`; none by default.
    pub jira_site: Option<crate::jira::JiraSiteSpec>,
    /// Linear: a seeded workspace (teams, users, issues with comments, attachments and
    /// history, …) served at `POST /linear/graphql`, with its limits; none by default.
    pub linear_workspace: Option<crate::linear::LinearWorkspaceSpec>,
    /// LaunchDarkly: a seeded account (projects, environments, flags, segments, members, the
    /// audit log, code-reference repositories) under `/api/v2`, with its windows; none by default.
    pub launchdarkly_account: Option<crate::launchdarkly::LdAccountSpec>,
}

/// Sizes and miss rates of the generated feed's entity pools. Every `n`th entity (`n` > 0)
/// is deleted or renamed; 0 means never.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedPool {
    /// Accounts.
    pub users: u64,
    /// Repositories.
    pub repos: u64,
    /// Every this-many accounts, one is deleted (search misses, detail answers 404).
    pub deleted_user_every: u64,
    /// Every this-many repositories, one is deleted.
    pub deleted_repo_every: u64,
    /// Every this-many repositories, one was renamed after its events (search by the old
    /// name misses; the detail URL redirects).
    pub renamed_repo_every: u64,
}

impl Default for FeedPool {
    fn default() -> Self {
        Self {
            users: 150,
            repos: 250,
            deleted_user_every: 19,
            deleted_repo_every: 17,
            renamed_repo_every: 13,
        }
    }
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            scenario: Scenario::Default,
            org: "acme".to_owned(),
            repos: 12,
            deep_repos: 0,
            density: Density::REFERENCE,
            seed: 1,
            tokens: Vec::new(),
            core_limit: 5_000,
            installation_core_limit: 5_000,
            unauthenticated_core_limit: 60,
            search_limit: 30,
            unauthenticated_search_limit: 10,
            code_search_limit: 10,
            graphql_limit: 5_000,
            window: SignedDuration::from_secs(3_600),
            search_window: SignedDuration::from_secs(60),
            concurrency_limit: 100,
            rest_points_per_minute: 900,
            graphql_points_per_minute: 2_000,
            content_creation_per_minute: 80,
            content_creation_per_hour: 500,
            secondary_retry_after: true,
            retry_after_as_http_date: false,
            poll_interval_secs: 60,
            feed_cap: 300,
            external_spend: Vec::new(),
            lying_rate_limit: false,
            rate_limiting: true,
            faults: Faults::default(),
            public_base_url: "https://api.github.com".to_owned(),
            feed_events: None,
            feed_replay: None,
            log_capacity: 100_000,
            log_file: None,
            feed_pool: FeedPool::default(),
            resource_limit_nodes: 3_000,
            gitlab_requests_per_minute: 2_000,
            gitlab_window_secs: 60,
            gitlab_self_managed: false,
            gitlab_project_creations_per_minute: 10,
            gitlab_group: None,
            gitlab_endpoint_limits: None,
            jira_site: None,
            linear_workspace: None,
            launchdarkly_account: None,
        }
    }
}

impl SimConfig {
    /// Plays `scenario`.
    pub fn with_scenario(mut self, scenario: Scenario) -> Self {
        self.scenario = scenario;
        self
    }

    /// Generates organization `org` with `repos` repositories.
    pub fn with_org(mut self, org: impl Into<String>, repos: usize) -> Self {
        self.org = org.into();
        self.repos = repos;
        self
    }

    /// Seeds every random choice.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Accepts a token.
    pub fn with_token(mut self, token: TokenSpec) -> Self {
        self.tokens.push(token);
        self
    }

    /// Shortens (or lengthens) the primary window; limits stay as given.
    pub fn with_window(mut self, window: SignedDuration) -> Self {
        self.window = window;
        if self.search_window > window {
            self.search_window = window;
        }
        self
    }

    /// Turns primary rate limiting off, as GitHub Enterprise Server ships
    /// ([`SimConfig::rate_limiting`]).
    pub fn without_rate_limiting(mut self) -> Self {
        self.rate_limiting = false;
        self
    }

    /// Plays a self-managed GitLab ([`SimConfig::gitlab_self_managed`]).
    pub fn with_gitlab_self_managed(mut self) -> Self {
        self.gitlab_self_managed = true;
        self
    }

    /// Seeds a GitLab group ([`SimConfig::gitlab_group`]).
    pub fn with_gitlab_group(mut self, spec: GitlabGroupSpec) -> Self {
        self.gitlab_group = Some(spec);
        self
    }

    /// Seeds a Linear workspace ([`SimConfig::linear_workspace`]).
    pub fn with_linear_workspace(mut self, spec: crate::linear::LinearWorkspaceSpec) -> Self {
        self.linear_workspace = Some(spec);
        self
    }

    /// Seeds a LaunchDarkly account ([`SimConfig::launchdarkly_account`]).
    pub fn with_launchdarkly_account(mut self, spec: crate::launchdarkly::LdAccountSpec) -> Self {
        self.launchdarkly_account = Some(spec);
        self
    }

    /// Seeds a Jira site ([`SimConfig::jira_site`]).
    pub fn with_jira_site(mut self, spec: crate::jira::JiraSiteSpec) -> Self {
        self.jira_site = Some(spec);
        self
    }

    /// The per-endpoint limits in force ([`SimConfig::gitlab_endpoint_limits`]).
    pub fn gitlab_endpoint_limits_in_force(&self) -> GitlabEndpointLimits {
        match self.gitlab_endpoint_limits {
            Some(l) => l,
            None if self.gitlab_self_managed => GitlabEndpointLimits::OFF,
            None => GitlabEndpointLimits::GITLAB_COM,
        }
    }

    /// Adds an external spender.
    pub fn with_external_spend(mut self, spend: ExternalSpend) -> Self {
        self.external_spend.push(spend);
        self
    }

    /// Checks values that cannot work.
    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |m: &str| Err(SimError::InvalidConfig(m.to_owned()));
        if self.window <= SignedDuration::ZERO || self.search_window <= SignedDuration::ZERO {
            return bad("windows must be longer than zero");
        }
        if self.core_limit == 0 || self.search_limit == 0 || self.graphql_limit == 0 {
            return bad("limits must be at least 1");
        }
        if self.gitlab_requests_per_minute == 0 {
            return bad("the GitLab request limit must be at least 1 a minute");
        }
        if let Some(problem) = self
            .gitlab_group
            .as_ref()
            .and_then(GitlabGroupSpec::problem)
        {
            return bad(problem);
        }
        if let Some(problem) = self.linear_workspace.as_ref().and_then(|s| s.problem()) {
            return bad(problem);
        }
        if let Some(problem) = self.launchdarkly_account.as_ref().and_then(|s| s.problem()) {
            return bad(problem);
        }
        if let Some(problem) = self.jira_site.as_ref().and_then(|s| s.problem()) {
            return bad(&problem);
        }
        if self.concurrency_limit == 0 {
            return bad("the concurrency limit must be at least 1");
        }
        if self.org.is_empty()
            || !self
                .org
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            return bad("the organization name must be letters, digits and hyphens");
        }
        let f = &self.faults;
        for p in [f.error_rate, f.timeout_rate, f.cut_rate, f.stall_rate] {
            if !(0.0..=1.0).contains(&p) {
                return bad("fault rates are probabilities between 0 and 1");
            }
        }
        if self.faults.latency < SignedDuration::ZERO
            || self.faults.stall_for < SignedDuration::ZERO
            || self.faults.latency_jitter < SignedDuration::ZERO
            || self
                .faults
                .bucket_latency
                .values()
                .any(|l| *l < SignedDuration::ZERO)
        {
            return bad("latency cannot be negative");
        }
        Ok(())
    }
}

/// How much a generated repository holds: each count is drawn uniformly from 0 to its maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Density {
    /// Issues (not pull requests).
    pub max_issues: u64,
    /// Pull requests.
    pub max_pulls: u64,
    /// Comments per issue.
    pub max_comments: u64,
    /// Branches besides the default and the pull requests' heads.
    pub max_stale_branches: u64,
    /// Workflow runs.
    pub max_runs: u64,
}

impl Density {
    /// The default: a full sync of a 125-repository organization costs about what the
    /// reference measured (≈7,000 REST requests, ≈2,100 GraphQL points); docs/SIMULATOR.md
    /// has the arithmetic.
    pub const REFERENCE: Density = Density {
        max_issues: 400,
        max_pulls: 5,
        max_comments: 2,
        max_stale_branches: 500,
        max_runs: 90,
    };
    /// Small repositories whose every connection fits one page of 50 (tests that count
    /// requests page by page).
    pub const SPARSE: Density = Density {
        max_issues: 11,
        max_pulls: 7,
        max_comments: 5,
        max_stale_branches: 0,
        max_runs: 6,
    };
}
