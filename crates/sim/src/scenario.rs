//! Named scenarios. The first fourteen reproduce, by the same names, the rows of the feed
//! service's fixture scenario matrix; the rest are the simulator's own additions: four of
//! GitHub's partial GraphQL answers and resource limits, then three failures of the provider
//! operations (on GitHub and GitLab alike).

use std::fmt;
use std::str::FromStr;

use crate::error::SimError;

/// A named behaviour of the simulated GitHub. Scenarios change the public events feed, the
/// search answers for the feed's actors and repositories, their detail endpoints, and a few
/// rate-limit states; the generated organization is served the same way in every scenario
/// but the last four, which refuse parts of its GraphQL answers as GitHub does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Scenario {
    /// One page of 8 envelopes; search answers 2 of 3; the missing actor and repository are gone.
    #[default]
    Default,
    /// Three Link-driven pages; page 2 repeats page 1's first event; page 3 is empty.
    Paginated,
    /// Two pages; the second carries no `next` link.
    PaginatedFinalPage,
    /// The first `/events` request answers 500, then the default page.
    TransientFailure,
    /// Every `/events` request answers a 5xx.
    TransientFailureExhausted,
    /// Search batches return every requested actor and repository.
    SearchComplete,
    /// Repository search returns an ID-intact rename (same id, new name); detail redirects.
    SearchRenamedRepository,
    /// Search answers 2 of 3 with `incomplete_results: true`; the missing one exists in detail.
    SearchIncompleteResults,
    /// Search answers 200 with a malformed envelope.
    SearchMalformed,
    /// The first search window of every identity starts exhausted (403, reset within a minute).
    SearchRateLimited,
    /// The repository search misses; its detail URL answers 301 to `/repositories/{id}`.
    RedirectingRepository,
    /// Like `redirecting_repository`, but the 301 points off-host.
    HostileRedirect,
    /// The first request of every identity trips a secondary limit (403, `retry-after: 60`) for 60 s.
    SecondaryRateLimited,
    /// The first core window of every identity starts exhausted: 403 primary with a one-hour reset.
    RateLimited,
    /// Like `secondary_rate_limited`, but without `retry-after` (GitHub often omits it).
    SecondaryWithoutRetryAfter,
    /// Like `rate_limited`, answered with 429 instead of 403 (GitHub uses both).
    RateLimited429,
    /// Like `secondary_rate_limited`, with the old "abuse detection mechanism" wording.
    AbuseDetection,
    /// A generated public feed: one event every 2 s, each surfacing 30 s to 6 h after it was
    /// created, with the 300-event cap.
    LiveFeed,
    /// Tokens lack `read:org`: the organization's `membersWithRole` and `teams` are refused
    /// (FORBIDDEN, with path) while the rest of each answer is served.
    NoReadOrg,
    /// The organization enforces SAML single sign-on and the token is not authorized for it:
    /// the connections of its private repositories are refused (FORBIDDEN, with path).
    SamlEnforced,
    /// Every fourth repository of the organization is listed but gone when asked for
    /// (`repository(owner:, name:)` null, NOT_FOUND with path).
    RepositoriesGone,
    /// A query that may return more nodes than `SimConfig::resource_limit_nodes` is answered
    /// with its fields null and "Resource limits for this query exceeded."; smaller pages
    /// succeed.
    ResourceLimited,
    /// The first mutation of each identity (per provider) is applied, then its answer stalls
    /// on the simulator's clock for `Faults::timeout_after` (60 s): a client with a shorter
    /// timeout never sees it, and finds the change when it looks.
    MutationResponseLost,
    /// The first mutation of each identity (per provider) is refused with 429 and not applied:
    /// GitHub's secondary-limit body with `retry-after: 60`; GitLab's throttle answer
    /// (`Retry later`, `Retry-After`, `RateLimit-ResetTime`).
    Mutation429,
    /// The first read of each identity (per provider) answers an HTML 502 from the gateway,
    /// counted by no limit; then reads are served.
    Read502,
}

impl Scenario {
    /// Every scenario, in documentation order.
    pub const ALL: [Scenario; 25] = [
        Scenario::Default,
        Scenario::Paginated,
        Scenario::PaginatedFinalPage,
        Scenario::TransientFailure,
        Scenario::TransientFailureExhausted,
        Scenario::SearchComplete,
        Scenario::SearchRenamedRepository,
        Scenario::SearchIncompleteResults,
        Scenario::SearchMalformed,
        Scenario::SearchRateLimited,
        Scenario::RedirectingRepository,
        Scenario::HostileRedirect,
        Scenario::SecondaryRateLimited,
        Scenario::RateLimited,
        Scenario::SecondaryWithoutRetryAfter,
        Scenario::RateLimited429,
        Scenario::AbuseDetection,
        Scenario::LiveFeed,
        Scenario::NoReadOrg,
        Scenario::SamlEnforced,
        Scenario::RepositoriesGone,
        Scenario::ResourceLimited,
        Scenario::MutationResponseLost,
        Scenario::Mutation429,
        Scenario::Read502,
    ];

    /// The scenario's name, as used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Default => "default",
            Scenario::Paginated => "paginated",
            Scenario::PaginatedFinalPage => "paginated_final_page",
            Scenario::TransientFailure => "transient_failure",
            Scenario::TransientFailureExhausted => "transient_failure_exhausted",
            Scenario::SearchComplete => "search_complete",
            Scenario::SearchRenamedRepository => "search_renamed_repository",
            Scenario::SearchIncompleteResults => "search_incomplete_results",
            Scenario::SearchMalformed => "search_malformed",
            Scenario::SearchRateLimited => "search_rate_limited",
            Scenario::RedirectingRepository => "redirecting_repository",
            Scenario::HostileRedirect => "hostile_redirect",
            Scenario::SecondaryRateLimited => "secondary_rate_limited",
            Scenario::RateLimited => "rate_limited",
            Scenario::SecondaryWithoutRetryAfter => "secondary_without_retry_after",
            Scenario::RateLimited429 => "rate_limited_429",
            Scenario::AbuseDetection => "abuse_detection",
            Scenario::LiveFeed => "live_feed",
            Scenario::NoReadOrg => "no_read_org",
            Scenario::SamlEnforced => "saml_enforced",
            Scenario::RepositoriesGone => "repositories_gone",
            Scenario::ResourceLimited => "resource_limited",
            Scenario::MutationResponseLost => "mutation_response_lost",
            Scenario::Mutation429 => "mutation_429",
            Scenario::Read502 => "read_502",
        }
    }

    /// One line saying what the scenario serves.
    pub fn description(self) -> &'static str {
        match self {
            Scenario::Default => {
                "one /events page of 8 envelopes (4 valid pushes by 3 actors in 3 repositories, 1 WatchEvent, 3 malformed); search answers 2 of 3; the missing actor and repository are deleted (404)"
            }
            Scenario::Paginated => {
                "a Link-driven walk over 3 /events pages: 11 events, page 2 repeats page 1's first event, page 3 is empty"
            }
            Scenario::PaginatedFinalPage => {
                "two /events pages; the second has no rel=\"next\", so the walk stops there"
            }
            Scenario::TransientFailure => {
                "the first /events request answers 500, the retry gets the default page"
            }
            Scenario::TransientFailureExhausted => {
                "every /events request answers a 5xx (500, 502, 503 in turn): retries run out"
            }
            Scenario::SearchComplete => {
                "search batches return every requested actor and repository; nothing needs a detail fallback"
            }
            Scenario::SearchRenamedRepository => {
                "repository search returns an ID-intact rename (same id, new full_name); its detail URL answers 301"
            }
            Scenario::SearchIncompleteResults => {
                "search answers 2 of 3 with incomplete_results: true; the missing entity exists at its detail URL"
            }
            Scenario::SearchMalformed => {
                "search answers 200 with a malformed envelope (items is not an array, total_count is a string)"
            }
            Scenario::SearchRateLimited => {
                "the first search window of every identity starts exhausted: 403, remaining 0, reset within a minute; core untouched"
            }
            Scenario::RedirectingRepository => {
                "the repository search misses one repository; its detail URL answers 301 to /repositories/{id} on this host"
            }
            Scenario::HostileRedirect => {
                "like redirecting_repository, but the 301's Location points off-host"
            }
            Scenario::SecondaryRateLimited => {
                "each identity's first request trips a secondary limit: 403 with GitHub's wording and retry-after: 60, for 60 s"
            }
            Scenario::RateLimited => {
                "each identity's first core window starts exhausted: 403, remaining 0, reset one window (1 h) later"
            }
            Scenario::SecondaryWithoutRetryAfter => {
                "like secondary_rate_limited, but the 403 carries no retry-after header"
            }
            Scenario::RateLimited429 => {
                "like rate_limited, but primary exhaustion answers 429 instead of 403 (GitHub sends either)"
            }
            Scenario::AbuseDetection => {
                "like secondary_rate_limited, with the old wording \"You have triggered an abuse detection mechanism\""
            }
            Scenario::LiveFeed => {
                "a generated public feed: one event every 2 s, surfacing 30 s to 6 h late; current shapes, non-monotonic ids, deleted and renamed entities, 300-event cap"
            }
            Scenario::NoReadOrg => {
                "tokens lack read:org: GraphQL membersWithRole and teams answer null (propagated to organization) with FORBIDDEN errors and their path; the rest is served"
            }
            Scenario::SamlEnforced => {
                "the organization enforces SAML SSO for this token: GraphQL connections of its private repositories answer null with FORBIDDEN \"Resource protected by organization SAML enforcement…\" and their path"
            }
            Scenario::RepositoriesGone => {
                "every fourth organization repository is listed but GraphQL repository(owner:, name:) answers null with NOT_FOUND and its path"
            }
            Scenario::ResourceLimited => {
                "GraphQL queries that may return more than resource_limit_nodes nodes (3,000) answer 200 with their fields null and \"Resource limits for this query exceeded.\"; smaller pages succeed"
            }
            Scenario::MutationResponseLost => {
                "GitHub and GitLab: each identity's first mutation is applied, then its answer stalls 60 s (faults.timeout_after) on the simulator's clock, past a client's timeout"
            }
            Scenario::Mutation429 => {
                "GitHub and GitLab: each identity's first mutation answers 429 unapplied (GitHub: secondary-limit body, retry-after: 60; GitLab: Retry later, Retry-After, RateLimit-ResetTime)"
            }
            Scenario::Read502 => {
                "GitHub and GitLab: each identity's first read answers an HTML 502 Bad Gateway, counted by no limit; later reads are served"
            }
        }
    }

    /// `name — description` lines for every scenario, for `--help` and documentation.
    pub fn help_text() -> String {
        let mut out = String::new();
        for s in Scenario::ALL {
            out.push_str(&format!("  {:<30} {}\n", s.name(), s.description()));
        }
        out
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Scenario {
    type Err = SimError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scenario::ALL
            .into_iter()
            .find(|sc| sc.name() == s)
            .ok_or_else(|| SimError::UnknownScenario(s.to_owned()))
    }
}
