//! Quota identities, buckets and the kinds of request the governor meters.
//!
//! A quota belongs to an identity — the token's owner, an app installation, or (with no
//! token) the outbound IP — on one provider's API host. Buckets are named by the provider's
//! own resource string (`core`, `graphql`, `search`, `code_search`, …), so a resource GitHub
//! adds tomorrow needs no code change.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::signal::Provider;

/// Who a quota belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", content = "id", rename_all = "snake_case")]
pub enum Subject {
    /// A user, by login. Every token of that user shares this quota.
    User(Arc<str>),
    /// A GitHub App installation, by installation id.
    Installation(u64),
    /// Unauthenticated requests, keyed by the outbound IP address.
    Ip(Arc<str>),
    /// An account, by id: every token of a LaunchDarkly account, personal or service, spends
    /// the account's global and per-route windows.
    Account(Arc<str>),
    /// A site, by host: API-token traffic of every user of a Jira site shares the site's
    /// per-endpoint burst buckets.
    Site(Arc<str>),
    /// An OAuth app, by client id: Jira's points belong to the app, across every site that
    /// installed it.
    App(Arc<str>),
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::User(login) => write!(f, "user {login}"),
            Subject::Installation(id) => write!(f, "installation {id}"),
            Subject::Ip(ip) => write!(f, "ip {ip}"),
            Subject::Account(id) => write!(f, "account {id}"),
            Subject::Site(host) => write!(f, "site {host}"),
            Subject::App(id) => write!(f, "app {id}"),
        }
    }
}

/// One quota identity of one provider on one API host: the unit the governor keeps state for.
///
/// The provider is part of it because one host can serve two providers' APIs (a simulator
/// does, a self-managed deployment may): GitHub's limits on `alice` never hold GitLab's
/// `alice` on the same host back, nor the other way round.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct QuotaKey {
    /// The API host, e.g. `api.github.com`.
    pub host: Arc<str>,
    /// The owner of the quota.
    pub subject: Subject,
    /// Whose API the host serves; GitHub when a key stored before the field existed is read.
    #[serde(default = "github", skip_serializing_if = "is_github")]
    pub provider: Provider,
}

fn github() -> Provider {
    Provider::GitHub
}

fn is_github(provider: &Provider) -> bool {
    *provider == Provider::GitHub
}

impl QuotaKey {
    /// The quota of `subject` on `host` of `provider`.
    pub fn new(provider: Provider, host: &str, subject: Subject) -> Self {
        Self {
            host: host.into(),
            subject,
            provider,
        }
    }

    /// The quota of user `login` on GitHub's `host`.
    pub fn user(host: &str, login: &str) -> Self {
        Self::new(Provider::GitHub, host, Subject::User(login.into()))
    }

    /// The quota of an app installation on GitHub's `host`.
    pub fn installation(host: &str, id: u64) -> Self {
        Self::new(Provider::GitHub, host, Subject::Installation(id))
    }

    /// The unauthenticated quota of an outbound IP on GitHub's `host`.
    pub fn ip(host: &str, ip: &str) -> Self {
        Self::new(Provider::GitHub, host, Subject::Ip(ip.into()))
    }

    /// The same identity on another provider's API.
    #[must_use]
    pub fn of_provider(mut self, provider: Provider) -> Self {
        self.provider = provider;
        self
    }
}

impl fmt::Display for QuotaKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} on {}", self.subject, self.host)?;
        // GitHub's keys read as they always have.
        if self.provider != Provider::GitHub {
            write!(f, " ({:?})", self.provider)?;
        }
        Ok(())
    }
}

/// A rate-limit bucket, named by the provider's resource string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Bucket(Arc<str>);

impl Bucket {
    /// GitHub's REST `core` resource.
    pub fn core() -> Self {
        Self::new("core")
    }
    /// GitHub's `graphql` resource.
    pub fn graphql() -> Self {
        Self::new("graphql")
    }
    /// GitHub's `search` resource.
    pub fn search() -> Self {
        Self::new("search")
    }
    /// GitHub's `code_search` resource.
    pub fn code_search() -> Self {
        Self::new("code_search")
    }
    /// Any resource by name, as the provider spells it.
    pub fn new(name: &str) -> Self {
        Self(Arc::from(name))
    }
    /// The resource name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Bucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Bucket {
    fn from(name: &str) -> Self {
        Self::new(name)
    }
}

/// Which API surface a request uses; it decides which local points limiter applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Surface {
    /// REST endpoints.
    Rest,
    /// The GraphQL endpoint.
    GraphQl,
}

/// A provider's application limit: a per-user rate on one kind of request that its
/// rate-limit headers do not show (so a 429 can come while they still show room). The
/// governor counts each locally ([`crate::governor::GovernorConfig::app_limits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AppLimit {
    /// GitLab's `GET /projects/:id`.
    GitlabProjectRead,
    /// GitLab's `POST /projects`.
    GitlabProjectCreate,
    /// GitLab's merge request creation.
    GitlabMergeRequestCreate,
    /// GitLab.com's `GET /groups/:id`.
    GitlabGroupRead,
    /// GitLab.com's `GET /groups/:id/projects`.
    GitlabGroupProjects,
}

impl AppLimit {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            AppLimit::GitlabProjectRead => "gitlab_project_read",
            AppLimit::GitlabProjectCreate => "gitlab_project_create",
            AppLimit::GitlabMergeRequestCreate => "gitlab_merge_request_create",
            AppLimit::GitlabGroupRead => "gitlab_group_read",
            AppLimit::GitlabGroupProjects => "gitlab_group_projects",
        }
    }
}

/// What a request is, as far as rate limits and retries care.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RequestKind {
    /// REST or GraphQL.
    pub surface: Surface,
    /// A mutation (POST/PATCH/PUT/DELETE, or a GraphQL mutation). Mutations cost 5 secondary
    /// points instead of 1 and are never retried automatically.
    pub mutation: bool,
    /// Creates user-visible content (issue, comment, pull request, commit…): subject to the
    /// content-creation limits.
    pub creates_content: bool,
    /// The provider application limit the request spends, if any.
    #[serde(default)]
    pub app_limit: Option<AppLimit>,
}

impl RequestKind {
    /// A REST read (GET, HEAD, OPTIONS).
    pub const REST_READ: Self = Self {
        surface: Surface::Rest,
        mutation: false,
        creates_content: false,
        app_limit: None,
    };
    /// A REST mutation that creates no content (e.g. protecting a branch).
    pub const REST_MUTATION: Self = Self {
        surface: Surface::Rest,
        mutation: true,
        creates_content: false,
        app_limit: None,
    };
    /// A REST mutation that creates content (repository, branch, commit, pull request…).
    pub const REST_CREATE: Self = Self {
        surface: Surface::Rest,
        mutation: true,
        creates_content: true,
        app_limit: None,
    };
    /// A GraphQL query.
    pub const GRAPHQL_QUERY: Self = Self {
        surface: Surface::GraphQl,
        mutation: false,
        creates_content: false,
        app_limit: None,
    };
    /// A GraphQL mutation.
    pub const GRAPHQL_MUTATION: Self = Self {
        surface: Surface::GraphQl,
        mutation: true,
        creates_content: false,
        app_limit: None,
    };

    /// The kind of a REST request with this HTTP method (content creation must be stated by
    /// the caller: the method alone does not tell).
    pub fn rest(method: &http::Method) -> Self {
        let read = matches!(
            *method,
            http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
        );
        if read {
            Self::REST_READ
        } else {
            Self::REST_MUTATION
        }
    }

    /// The same kind, spending `limit` too.
    pub const fn with_app_limit(mut self, limit: AppLimit) -> Self {
        self.app_limit = Some(limit);
        self
    }

    /// Whether this request may be retried automatically.
    pub fn is_read(&self) -> bool {
        !self.mutation
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_one_user_are_equal_whatever_the_token() {
        assert_eq!(
            QuotaKey::user("api.github.com", "alice"),
            QuotaKey::user("api.github.com", "alice")
        );
        assert_ne!(
            QuotaKey::user("api.github.com", "alice"),
            QuotaKey::user("ghe.example.com", "alice")
        );
        assert_ne!(
            QuotaKey::user("api.github.com", "1"),
            QuotaKey::installation("api.github.com", 1)
        );
    }

    #[test]
    fn rest_methods_map_to_reads_and_mutations() {
        assert!(RequestKind::rest(&http::Method::GET).is_read());
        assert!(RequestKind::rest(&http::Method::HEAD).is_read());
        assert!(RequestKind::rest(&http::Method::OPTIONS).is_read());
        for m in [
            http::Method::POST,
            http::Method::PATCH,
            http::Method::PUT,
            http::Method::DELETE,
        ] {
            assert!(!RequestKind::rest(&m).is_read(), "{m}");
        }
    }

    #[test]
    fn display_names_the_identity() {
        assert_eq!(
            QuotaKey::user("api.github.com", "alice").to_string(),
            "user alice on api.github.com"
        );
        assert_eq!(Bucket::code_search().to_string(), "code_search");
    }
}
