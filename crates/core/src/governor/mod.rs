//! The quota governor: one per quota identity, deciding every request before it is sent.
//!
//! A caller asks [`Governor::acquire`] for a key, a bucket, an estimated cost and a request
//! kind. It gets a [`Permit`] (send now; dropping the permit frees its in-flight slot,
//! whatever happened to the request) or a [`Wait`] (do not send before `until`, with the
//! reason in words). After the response, [`Governor::observe`] feeds what the headers said
//! back in: the origin is the truth.
//!
//! The rule itself lives in [`rule`] as pure functions; the state lives behind [`QuotaState`],
//! implemented in memory here ([`MemoryQuotaState`]) and by other backends elsewhere.

pub mod endpoint;
pub mod learned;
pub mod limiter;
mod memory;
pub mod multi;
pub mod rule;
mod wait;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use self::endpoint::{ENDPOINT_PREFIX, PaceLog};
pub use self::limiter::PointsLimit;
pub use self::memory::MemoryQuotaState;
pub use self::rule::{BucketState, Decision, IdentityState, LimitReporting};
pub use self::wait::WaitReason;
use crate::clock::{Clock, SharedClock, SignedDuration, Timestamp};
use crate::quota::{AppLimit, Bucket, QuotaKey, RequestKind};
use crate::signal::RateLimitSignal;

/// A boxed future, so that [`QuotaState`] stays object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Every number the governor uses. Defaults are GitHub's published limits; a deployment (or a
/// simulator with a shortened window) states its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GovernorConfig {
    /// The identity's total in-flight allowance across buckets, and the safety multiple kept
    /// in reserve by the grant rule. Below GitHub's 100 concurrent requests.
    pub ceiling: u32,
    /// Added to a reset before trying again, to absorb clock skew.
    pub margin: SignedDuration,
    /// When the in-flight ceiling is reached: how soon to look again.
    pub busy_retry: SignedDuration,
    /// The first wait after a secondary limit without `retry-after`.
    pub secondary_base: SignedDuration,
    /// The longest such wait.
    pub secondary_cap: SignedDuration,
    /// REST points per period (None disables the limiter).
    pub rest_points: Option<PointsLimit>,
    /// GraphQL points per period (None disables the limiter).
    pub graphql_points: Option<PointsLimit>,
    /// Points a read spends (REST GET/HEAD/OPTIONS, GraphQL query).
    pub read_points: u32,
    /// Points a mutation spends (REST POST/PATCH/PUT/DELETE, GraphQL mutation).
    pub mutation_points: u32,
    /// Content-creation limits; a content-creating request spends one unit of each.
    pub content_creation: Vec<PointsLimit>,
    /// Provider application limits; a request naming one ([`RequestKind::app_limit`]) spends
    /// one unit of its rate. Defaults are GitLab's documented per-user defaults.
    #[serde(default = "default_app_limits")]
    pub app_limits: Vec<AppLimitRate>,
    /// The local pace of every endpoint burst bucket ([`endpoint`]), each counted on its own;
    /// `None` leaves them unpaced. Jira's: [`PointsLimit::paced_per_second`] of its steady rate.
    #[serde(default)]
    pub endpoint_rate: Option<PointsLimit>,
}

/// The rate of one application limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppLimitRate {
    /// Which.
    pub limit: AppLimit,
    /// Its rate.
    pub rate: PointsLimit,
}

/// GitLab's documented defaults, per user: `GET /projects/:id` 400 a minute, `POST /projects`
/// 200 a day, merge request creation 150 a minute; and GitLab.com's Groups API limits, which
/// answer 429 without a header to budget by: `GET /groups/:id` 400 and `GET /groups/:id/projects`
/// 600 a minute [gl-com-rl]. A self-managed instance may set them
/// lower, higher or off; its 429 is then recorded as a refusal like any other.
pub fn default_app_limits() -> Vec<AppLimitRate> {
    vec![
        AppLimitRate {
            limit: AppLimit::GitlabProjectRead,
            rate: PointsLimit::per_minute(400),
        },
        AppLimitRate {
            limit: AppLimit::GitlabProjectCreate,
            rate: PointsLimit {
                points: 200,
                period: SignedDuration::from_hours(24),
            },
        },
        AppLimitRate {
            limit: AppLimit::GitlabMergeRequestCreate,
            rate: PointsLimit::per_minute(150),
        },
        AppLimitRate {
            limit: AppLimit::GitlabGroupRead,
            rate: PointsLimit::per_minute(400),
        },
        AppLimitRate {
            limit: AppLimit::GitlabGroupProjects,
            rate: PointsLimit::per_minute(600),
        },
    ]
}

impl Default for GovernorConfig {
    fn default() -> Self {
        Self {
            ceiling: 10,
            margin: SignedDuration::from_secs(60),
            busy_retry: SignedDuration::from_millis(250),
            secondary_base: SignedDuration::from_secs(60),
            secondary_cap: SignedDuration::from_hours(1),
            rest_points: Some(PointsLimit::per_minute(900)),
            graphql_points: Some(PointsLimit::per_minute(2000)),
            read_points: 1,
            mutation_points: 5,
            content_creation: vec![PointsLimit::per_minute(80), PointsLimit::per_hour(500)],
            app_limits: default_app_limits(),
            endpoint_rate: None,
        }
    }
}

impl GovernorConfig {
    /// The defaults for `provider`. GitHub's secondary limits (900 REST and 2,000 GraphQL
    /// points a minute, 80 content creations a minute and 500 an hour) are GitHub's alone:
    /// held to them, a GitLab sync ran at under half of GitLab.com's 2,000 requests a minute
    /// (the gitlab_makespan benchmark). Other providers keep their application limits and
    /// their headers' word. Jira's endpoints are paced at its documented steady burst rate,
    /// 100 requests a second per endpoint and method for GET and POST [jr-rl] (PUT and DELETE
    /// allow 50; headroom sends neither to Jira). LaunchDarkly's learned buckets cap what is in
    /// flight below the ceiling, often at one request (a window's first): a request held there
    /// tries again after [`LEARNED_BUSY_RETRY`], not after a quarter of a second, which next to
    /// its ten-second windows and a round trip of a tenth of that cost a round trip or two
    /// each time (the launchdarkly_makespan benchmark).
    pub fn for_provider(provider: crate::signal::Provider) -> Self {
        let github = Self::default();
        match provider {
            crate::signal::Provider::GitHub => github,
            crate::signal::Provider::LaunchDarkly => Self {
                busy_retry: LEARNED_BUSY_RETRY,
                ..Self::for_provider(crate::signal::Provider::GitLab)
            },
            crate::signal::Provider::Jira => Self {
                endpoint_rate: PointsLimit::paced_per_second(JIRA_BURST_PER_SEC),
                ..Self::for_provider(crate::signal::Provider::GitLab)
            },
            _ => Self {
                rest_points: None,
                graphql_points: None,
                content_creation: Vec::new(),
                ..github
            },
        }
    }
}

/// How soon a request held by a learned bucket's in-flight cap tries again (see
/// [`GovernorConfig::for_provider`]).
pub const LEARNED_BUSY_RETRY: SignedDuration = SignedDuration::from_millis(20);

/// Jira's documented steady burst rate for GET and POST, per site, endpoint and method.
pub const JIRA_BURST_PER_SEC: u32 = 100;

/// Configuration that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A setting is out of range.
    #[error("governor setting `{setting}` is invalid: {problem}")]
    Invalid {
        /// The setting's name.
        setting: &'static str,
        /// What is wrong with it.
        problem: String,
    },
}

impl GovernorConfig {
    /// Checks the configuration; the message names the setting.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |setting, problem: &str| {
            Err(ConfigError::Invalid {
                setting,
                problem: problem.to_owned(),
            })
        };
        if self.ceiling == 0 {
            return invalid("ceiling", "must be at least 1");
        }
        if self.margin.is_negative() {
            return invalid("margin", "must not be negative");
        }
        if !self.busy_retry.is_positive() {
            return invalid("busy_retry", "must be positive");
        }
        if !self.secondary_base.is_positive() {
            return invalid("secondary_base", "must be positive");
        }
        if self.secondary_cap < self.secondary_base {
            return invalid("secondary_cap", "must be at least secondary_base");
        }
        let limits = self
            .rest_points
            .iter()
            .map(|l| ("rest_points", l))
            .chain(self.graphql_points.iter().map(|l| ("graphql_points", l)))
            .chain(
                self.content_creation
                    .iter()
                    .map(|l| ("content_creation", l)),
            )
            .chain(self.app_limits.iter().map(|a| ("app_limits", &a.rate)))
            .chain(self.endpoint_rate.iter().map(|l| ("endpoint_rate", l)));
        for (setting, limit) in limits {
            if limit.points == 0 || !limit.period.is_positive() {
                return invalid(setting, "needs positive points and a positive period");
            }
        }
        Ok(())
    }
}

/// Releases what a permit or ticket holds. Implemented by each state backend.
pub trait SlotRelease: Send + Sync {
    /// Frees one in-flight slot of `bucket` for `key`. Synchronous (it runs from `Drop`): a
    /// backend with a database frees the slot on a task of its own, a moment later.
    fn release_in_flight(&self, key: &QuotaKey, bucket: &Bucket, slot: usize);
    /// Frees one in-flight slot and resolves once the state holds it freed. The default is
    /// [`Self::release_in_flight`], for backends whose release is done when it returns.
    fn release_in_flight_settled(
        &self,
        key: &QuotaKey,
        bucket: &Bucket,
        slot: usize,
    ) -> BoxFuture<'static, ()> {
        self.release_in_flight(key, bucket, slot);
        Box::pin(std::future::ready(()))
    }
    /// One fewer caller waiting on `bucket`.
    fn release_waiting(&self, key: &QuotaKey, bucket: &Bucket, slot: usize);
}

/// Permission to send one request. Dropping it frees the in-flight slot — after success,
/// failure, cancellation or a panic alike.
pub struct Permit {
    key: QuotaKey,
    bucket: Bucket,
    kind: RequestKind,
    cost: u32,
    granted_at: Timestamp,
    slot: usize,
    /// The other buckets of a grant over several ([`multi`]), with their reserved costs.
    also: Vec<(Bucket, u32)>,
    release: Option<Arc<dyn SlotRelease>>,
}

impl fmt::Debug for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("key", &self.key)
            .field("bucket", &self.bucket)
            .field("cost", &self.cost)
            .field("also", &self.also)
            .field("granted_at", &self.granted_at)
            .finish_non_exhaustive()
    }
}

impl Permit {
    /// Built by a state backend when it grants.
    pub fn new(
        key: QuotaKey,
        bucket: Bucket,
        kind: RequestKind,
        cost: u32,
        granted_at: Timestamp,
        slot: usize,
        release: Arc<dyn SlotRelease>,
    ) -> Self {
        Self {
            key,
            bucket,
            kind,
            cost,
            granted_at,
            slot,
            also: Vec::new(),
            release: Some(release),
        }
    }
    /// The identity.
    pub fn key(&self) -> &QuotaKey {
        &self.key
    }
    /// The bucket the grant was made against.
    pub fn bucket(&self) -> &Bucket {
        &self.bucket
    }
    /// The request's kind.
    pub fn kind(&self) -> RequestKind {
        self.kind
    }
    /// The cost reserved.
    pub fn cost(&self) -> u32 {
        self.cost
    }
    /// When it was granted.
    pub fn granted_at(&self) -> Timestamp {
        self.granted_at
    }
    /// The backend's slot index for the bucket.
    pub fn slot(&self) -> usize {
        self.slot
    }

    /// Frees the in-flight slot and waits until the state holds it freed, so that what
    /// follows — the next grant, a sync pass weighing the buckets' headroom, the reading
    /// handed over as a run goes quiet, the process exiting — counts this request as
    /// finished. Dropping a permit frees the slot too, but a shared backend does that on a
    /// task of its own: until it lands, every process counts the request as still in flight
    /// (a run near the end of its window would stop a request early, and a process exiting
    /// meanwhile would leave the lease to expire).
    pub async fn release(mut self) {
        if let Some(release) = self.release.take() {
            release
                .release_in_flight_settled(&self.key, &self.bucket, self.slot)
                .await;
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(release) = self.release.take() {
            release.release_in_flight(&self.key, &self.bucket, self.slot);
        }
    }
}

/// Held by a caller that waits in-process, so the dashboard can count waiters.
pub struct WaitTicket {
    key: QuotaKey,
    bucket: Bucket,
    slot: usize,
    release: Option<Arc<dyn SlotRelease>>,
}

impl WaitTicket {
    /// Built by a state backend.
    pub fn new(key: QuotaKey, bucket: Bucket, slot: usize, release: Arc<dyn SlotRelease>) -> Self {
        Self {
            key,
            bucket,
            slot,
            release: Some(release),
        }
    }
}

impl fmt::Debug for WaitTicket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitTicket")
            .field("key", &self.key)
            .field("bucket", &self.bucket)
            .finish_non_exhaustive()
    }
}

impl Drop for WaitTicket {
    fn drop(&mut self) {
        if let Some(release) = self.release.take() {
            release.release_waiting(&self.key, &self.bucket, self.slot);
        }
    }
}

/// A refusal: do not send before `until`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wait {
    /// The earliest instant worth trying again.
    pub until: Timestamp,
    /// Why.
    pub reason: WaitReason,
}

impl fmt::Display for Wait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; try again at {}", self.reason, self.until)
    }
}

/// The outcome of an acquire.
#[derive(Debug)]
pub enum Acquire {
    /// Send now.
    Grant(Permit),
    /// Do not send yet.
    Wait(Wait),
}

/// The grant rule's answer without reserving anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Headroom {
    /// A request of that cost would be granted now.
    Open,
    /// It would have to wait.
    Closed(Wait),
}

impl Headroom {
    /// Whether a request would be granted now.
    pub fn is_open(&self) -> bool {
        matches!(self, Headroom::Open)
    }
}

/// One bucket, as a status page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketSnapshot {
    /// The raw state.
    #[serde(flatten)]
    pub state: BucketState,
    /// Whether the reading describes the current window.
    pub known: bool,
    /// Whether the bucket's answers report its limit at all (not on an Enterprise Server
    /// with rate limiting off).
    #[serde(default)]
    pub limits: LimitReporting,
}

/// One identity, as a status page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdentitySnapshot {
    /// The identity.
    pub key: QuotaKey,
    /// Requests in flight across buckets.
    pub in_flight: u32,
    /// The in-flight ceiling.
    pub ceiling: u32,
    /// Every bucket seen, in first-seen order.
    pub buckets: Vec<BucketSnapshot>,
    /// REST points counted in the current minute.
    pub rest_points_used: u64,
    /// GraphQL points counted in the current minute.
    pub graphql_points_used: u64,
}

/// A state backend failed (a database error, for backends that have one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GovernorError {
    /// The backend could not be reached or answered an error.
    #[error("quota state backend failed: {0}")]
    Backend(String),
    /// A request over several buckets named none ([`Governor::acquire_all`]).
    #[error("a request must spend at least one bucket")]
    NoBucket,
}

/// Where governor state lives. Every implementation applies the pure rule of [`rule`] to the
/// state of one identity atomically (a mutex in memory, a row lock in a database).
pub trait QuotaState: Send + Sync + fmt::Debug {
    /// The configuration this backend applies.
    fn config(&self) -> &GovernorConfig;

    /// Applies the grant rule and, on a grant, reserves an in-flight slot.
    fn acquire<'a>(
        &'a self,
        key: &'a QuotaKey,
        bucket: &'a Bucket,
        estimated_cost: u32,
        kind: RequestKind,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<Acquire, GovernorError>>;

    /// Applies [`multi::grant_all`] to every bucket of `asks` at once: all grant, each taking
    /// an in-flight slot and the identity one, or nothing changes. The permit frees them all.
    fn acquire_all<'a>(
        &'a self,
        key: &'a QuotaKey,
        asks: &'a [(Bucket, u32)],
        kind: RequestKind,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<Acquire, GovernorError>>;

    /// Feeds back what a response said. The signal's resource, when present, names the
    /// bucket to update (GitHub may answer for another resource than the one estimated).
    fn observe<'a>(
        &'a self,
        permit: &'a Permit,
        signal: &'a RateLimitSignal,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<(), GovernorError>>;

    /// Counts one request of `kind` already sent at `now` outside the rule's view (see
    /// [`rule::charge`]): its points are spent whatever the windows hold.
    fn charge<'a>(
        &'a self,
        key: &'a QuotaKey,
        kind: RequestKind,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<(), GovernorError>>;

    /// [`Self::charge`], and the reading that request's answer carried applied to `bucket`
    /// (or the signal's resource) as [`Self::observe`] would: for a request sent before its
    /// identity was known, whose answer is the owner's freshest reading.
    fn charge_observed<'a>(
        &'a self,
        key: &'a QuotaKey,
        kind: RequestKind,
        bucket: &'a Bucket,
        signal: &'a RateLimitSignal,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<(), GovernorError>>;

    /// The grant rule without reserving.
    fn headroom<'a>(
        &'a self,
        key: &'a QuotaKey,
        bucket: &'a Bucket,
        estimated_cost: u32,
        kind: RequestKind,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<Headroom, GovernorError>>;

    /// Everything known about one identity.
    fn snapshot<'a>(
        &'a self,
        key: &'a QuotaKey,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<IdentitySnapshot, GovernorError>>;

    /// Every identity this backend knows.
    fn identities(&self) -> BoxFuture<'_, Result<Vec<QuotaKey>, GovernorError>>;

    /// Registers an in-process waiter on `bucket`, counted until the ticket is dropped.
    fn wait_ticket(&self, key: &QuotaKey, bucket: &Bucket) -> WaitTicket;

    /// Resolves once every slot freed so far (by a dropped permit too) is freed in the state.
    /// The default suits backends whose release is done when it returns.
    fn settled(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// The governor: a state backend and a clock.
#[derive(Debug, Clone)]
pub struct Governor {
    state: Arc<dyn QuotaState>,
    clock: SharedClock,
}

impl Governor {
    /// A governor over `state`, reading time from `clock`.
    pub fn new(state: Arc<dyn QuotaState>, clock: SharedClock) -> Self {
        Self { state, clock }
    }

    /// An in-memory governor.
    pub fn in_memory(config: GovernorConfig, clock: SharedClock) -> Result<Self, ConfigError> {
        Ok(Self::new(Arc::new(MemoryQuotaState::new(config)?), clock))
    }

    /// The configuration in force.
    pub fn config(&self) -> &GovernorConfig {
        self.state.config()
    }

    /// The clock.
    pub fn clock(&self) -> &SharedClock {
        &self.clock
    }

    /// Asks to send one request.
    pub async fn acquire(
        &self,
        key: &QuotaKey,
        bucket: &Bucket,
        estimated_cost: u32,
        kind: RequestKind,
    ) -> Result<Acquire, GovernorError> {
        self.state
            .acquire(key, bucket, estimated_cost, kind, self.clock.now())
            .await
    }

    /// Feeds back what a response said: to the bucket it names, else to the endpoint a limit
    /// on one endpoint closes ([`endpoint::reacting_bucket`]), else to the permit's bucket.
    pub async fn observe(
        &self,
        permit: &Permit,
        signal: &RateLimitSignal,
    ) -> Result<(), GovernorError> {
        let now = self.clock.now();
        match endpoint::reacting_bucket(signal, permit.bucket(), permit.also()) {
            Some(bucket) => {
                let routed = RateLimitSignal {
                    resource: Some(bucket),
                    ..signal.clone()
                };
                self.state.observe(permit, &routed, now).await
            }
            None => self.state.observe(permit, signal, now).await,
        }
    }

    /// Counts one request already sent outside the governor's view.
    pub async fn charge(&self, key: &QuotaKey, kind: RequestKind) -> Result<(), GovernorError> {
        self.state.charge(key, kind, self.clock.now()).await
    }

    /// Counts one request already sent outside the governor's view and applies the reading
    /// its answer carried ([`QuotaState::charge_observed`]).
    pub async fn charge_observed(
        &self,
        key: &QuotaKey,
        kind: RequestKind,
        bucket: &Bucket,
        signal: &RateLimitSignal,
    ) -> Result<(), GovernorError> {
        self.state
            .charge_observed(key, kind, bucket, signal, self.clock.now())
            .await
    }

    /// The grant rule without reserving.
    pub async fn headroom(
        &self,
        key: &QuotaKey,
        bucket: &Bucket,
        estimated_cost: u32,
        kind: RequestKind,
    ) -> Result<Headroom, GovernorError> {
        self.state
            .headroom(key, bucket, estimated_cost, kind, self.clock.now())
            .await
    }

    /// Everything known about one identity.
    pub async fn snapshot(&self, key: &QuotaKey) -> Result<IdentitySnapshot, GovernorError> {
        self.state.snapshot(key, self.clock.now()).await
    }

    /// Every identity known.
    pub async fn identities(&self) -> Result<Vec<QuotaKey>, GovernorError> {
        self.state.identities().await
    }

    /// Registers an in-process waiter.
    pub fn wait_ticket(&self, key: &QuotaKey, bucket: &Bucket) -> WaitTicket {
        self.state.wait_ticket(key, bucket)
    }

    /// Waits until every in-flight slot freed so far is freed in the state: before the last
    /// reading of a burst is handed over, and before a process exits.
    pub async fn settled(&self) {
        self.state.settled().await;
    }
}
