//! Quotas: identities, primary buckets with fixed windows, secondary limiters.
//!
//! This is the simulator's own reading of GitHub's rules; it shares nothing with the client's
//! governor on purpose.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use headroom_core::clock::{SignedDuration, Timestamp};

use crate::config::SimConfig;
use crate::scenario::Scenario;

/// Whose quota a request spends.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Subject {
    /// An authenticated user (any of their tokens).
    User {
        /// Login.
        login: String,
        /// GitHub user id.
        id: u64,
    },
    /// A GitHub App installation.
    Installation {
        /// Installation id.
        id: u64,
    },
    /// An unauthenticated client, by IP.
    Ip(IpAddr),
}

impl Subject {
    /// A stable key for maps.
    pub fn key(&self) -> String {
        match self {
            Subject::User { login, .. } => format!("user:{}", login.to_ascii_lowercase()),
            Subject::Installation { id } => format!("installation:{id}"),
            Subject::Ip(ip) => format!("ip:{ip}"),
        }
    }

    /// What the request log calls this identity: the login, `installation:ID`, or the IP.
    pub fn log_name(&self) -> String {
        match self {
            Subject::User { login, .. } => login.clone(),
            Subject::Installation { id } => format!("installation:{id}"),
            Subject::Ip(ip) => ip.to_string(),
        }
    }

    /// Whether the request carried a valid credential.
    pub fn is_authenticated(&self) -> bool {
        !matches!(self, Subject::Ip(_))
    }

    /// GitHub's primary-exhaustion message for this identity.
    pub fn exceeded_message(&self, already: bool) -> String {
        let verb = if already {
            "already exceeded"
        } else {
            "exceeded"
        };
        match self {
            Subject::User { id, .. } => format!("API rate limit {verb} for user ID {id}."),
            Subject::Installation { id } => {
                format!("API rate limit {verb} for installation ID {id}.")
            }
            Subject::Ip(ip) => format!(
                "API rate limit {verb} for {ip}. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)"
            ),
        }
    }
}

/// A primary rate-limit bucket, named as in `x-ratelimit-resource`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    /// REST.
    Core,
    /// `/search/*` except code.
    Search,
    /// `/search/code`.
    CodeSearch,
    /// `/graphql`, in points.
    Graphql,
}

impl Resource {
    /// Every bucket.
    pub const ALL: [Resource; 4] = [
        Resource::Core,
        Resource::Search,
        Resource::CodeSearch,
        Resource::Graphql,
    ];

    /// The bucket GitHub names `name`, if any.
    pub fn from_name(name: &str) -> Option<Resource> {
        Resource::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The name GitHub uses.
    pub fn name(self) -> &'static str {
        match self {
            Resource::Core => "core",
            Resource::Search => "search",
            Resource::CodeSearch => "code_search",
            Resource::Graphql => "graphql",
        }
    }
}

/// The state of one bucket, as reported in headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// Bucket.
    pub resource: Resource,
    /// Limit per window.
    pub limit: u64,
    /// Remaining in this window.
    pub remaining: u64,
    /// Used in this window.
    pub used: u64,
    /// When the window resets.
    pub reset: Timestamp,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    reset: Timestamp,
    used: u64,
}

#[derive(Debug, Clone, Copy)]
struct Counter {
    reset: Timestamp,
    count: u64,
}

impl Counter {
    fn roll(slot: &mut Option<Counter>, now: Timestamp, len: SignedDuration) -> &mut Counter {
        let expired = slot.is_none_or(|c| now >= c.reset);
        if expired {
            *slot = Some(Counter {
                reset: floor_second(now) + len,
                count: 0,
            });
        }
        slot.as_mut().expect("just ensured")
    }
}

#[derive(Debug)]
struct External {
    per_minute: f64,
    last: Timestamp,
    carry: f64,
}

/// Why a secondary limit answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecondaryKind {
    /// Too many concurrent requests.
    Concurrency,
    /// REST points per minute.
    RestPoints,
    /// GraphQL points per minute.
    GraphqlPoints,
    /// Content creation per minute or hour.
    ContentCreation,
    /// A scenario's scripted block.
    Scripted,
    /// A scenario's scripted block, in the old "abuse detection" wording.
    Abuse,
}

/// A secondary-limit verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecondaryHit {
    /// Which limit.
    pub kind: SecondaryKind,
    /// Seconds until it lifts, when the response should say so.
    pub retry_after: Option<u64>,
}

#[derive(Debug, Default)]
struct SubjectSecondary {
    in_flight: u32,
    rest_points: Option<Counter>,
    graphql_points: Option<Counter>,
    content_minute: Option<Counter>,
    content_hour: Option<Counter>,
    scripted_until: Option<Timestamp>,
    scripted_tripped: bool,
}

/// All quota state of a simulator.
#[derive(Debug, Default)]
pub struct Quotas {
    windows: HashMap<(String, Resource), Window>,
    first_window_seen: HashSet<(String, Resource)>,
    external: HashMap<String, External>,
    secondary: HashMap<String, SubjectSecondary>,
}

/// Truncates to whole seconds, so that `x-ratelimit-reset` is exact.
pub fn floor_second(t: Timestamp) -> Timestamp {
    Timestamp::from_second(t.as_second()).unwrap_or(t)
}

impl Quotas {
    /// Fresh state; external spenders start spending at `now`.
    pub fn new(config: &SimConfig, now: Timestamp) -> Self {
        let mut q = Quotas::default();
        for e in &config.external_spend {
            q.external.insert(
                e.login.to_ascii_lowercase(),
                External {
                    per_minute: e.per_minute,
                    last: now,
                    carry: 0.0,
                },
            );
        }
        q
    }

    /// The limit of a bucket for an identity.
    pub fn limit(config: &SimConfig, subject: &Subject, resource: Resource) -> u64 {
        match (subject, resource) {
            (Subject::User { .. }, Resource::Core) => config.core_limit,
            (Subject::Installation { .. }, Resource::Core) => config.installation_core_limit,
            (Subject::Ip(_), Resource::Core) => config.unauthenticated_core_limit,
            (Subject::Ip(_), Resource::Search) => config.unauthenticated_search_limit,
            (_, Resource::Search) => config.search_limit,
            (_, Resource::CodeSearch) => config.code_search_limit,
            (_, Resource::Graphql) => config.graphql_limit,
        }
    }

    fn window_len(config: &SimConfig, resource: Resource) -> SignedDuration {
        match resource {
            Resource::Core | Resource::Graphql => config.window,
            Resource::Search | Resource::CodeSearch => config.search_window,
        }
    }

    /// The current window of a bucket, opening a new one when none is running. Applies the
    /// external spender and the scenarios' pre-exhausted first windows.
    fn window(
        &mut self,
        config: &SimConfig,
        now: Timestamp,
        subject: &Subject,
        resource: Resource,
    ) -> Window {
        let key = (subject.key(), resource);
        let limit = Self::limit(config, subject, resource);
        let len = Self::window_len(config, resource);
        let external = match (subject, resource) {
            (Subject::User { login, .. }, Resource::Core) => {
                self.external.get_mut(&login.to_ascii_lowercase())
            }
            _ => None,
        };
        if let Some(ext) = external {
            // The other client's requests happen at a steady rate; its first request after a
            // reset opens the next window, so windows follow each other back to back.
            let mut window = self.windows.get(&key).copied();
            loop {
                let w = match window {
                    Some(w) if ext.last < w.reset => w,
                    Some(w) => Window {
                        reset: floor_second(w.reset) + len,
                        used: 0,
                    },
                    None => Window {
                        reset: floor_second(ext.last) + len,
                        used: 0,
                    },
                };
                let until = if now < w.reset { now } else { w.reset };
                let secs = until.duration_since(ext.last).as_secs_f64().max(0.0);
                ext.carry += ext.per_minute * secs / 60.0;
                let whole = ext.carry.floor();
                ext.carry -= whole;
                // Safe: `whole` is finite and non-negative.
                let spent = whole as u64;
                let w = Window {
                    reset: w.reset,
                    used: (w.used + spent).min(limit),
                };
                ext.last = until;
                window = Some(w);
                if now < w.reset {
                    break;
                }
            }
            let w = window.expect("the loop always sets a window");
            self.windows.insert(key, w);
            return w;
        }
        match self.windows.get(&key) {
            Some(w) if now < w.reset => *w,
            _ => {
                let first = self.first_window_seen.insert(key.clone());
                let pre_exhausted = first
                    && matches!(
                        (config.scenario, resource),
                        (
                            Scenario::RateLimited | Scenario::RateLimited429,
                            Resource::Core
                        ) | (Scenario::SearchRateLimited, Resource::Search)
                    );
                let w = Window {
                    reset: floor_second(now) + len,
                    used: if pre_exhausted { limit } else { 0 },
                };
                self.windows.insert(key, w);
                w
            }
        }
    }

    fn reading(config: &SimConfig, subject: &Subject, resource: Resource, w: Window) -> Reading {
        let limit = Self::limit(config, subject, resource);
        Reading {
            resource,
            limit,
            remaining: limit.saturating_sub(w.used),
            used: w.used,
            reset: w.reset,
        }
    }

    /// The bucket's state without spending (opens a window if none is running, as any request
    /// does).
    pub fn peek(
        &mut self,
        config: &SimConfig,
        now: Timestamp,
        subject: &Subject,
        resource: Resource,
    ) -> Reading {
        let w = self.window(config, now, subject, resource);
        Self::reading(config, subject, resource, w)
    }

    /// The bucket's state for `/rate_limit`: never opens a window.
    pub fn report(
        &mut self,
        config: &SimConfig,
        now: Timestamp,
        subject: &Subject,
        resource: Resource,
    ) -> Reading {
        let key = (subject.key(), resource);
        let running = self.windows.get(&key).is_some_and(|w| now < w.reset);
        let has_external = matches!((subject, resource), (Subject::User { login, .. }, Resource::Core)
            if self.external.contains_key(&login.to_ascii_lowercase()));
        if running || has_external {
            return self.peek(config, now, subject, resource);
        }
        let limit = Self::limit(config, subject, resource);
        Reading {
            resource,
            limit,
            remaining: limit,
            used: 0,
            reset: floor_second(now) + Self::window_len(config, resource),
        }
    }

    /// Spends `cost` if the bucket has it. `Err` carries the unchanged (exhausted) reading:
    /// rejected requests do not consume.
    pub fn try_spend(
        &mut self,
        config: &SimConfig,
        now: Timestamp,
        subject: &Subject,
        resource: Resource,
        cost: u64,
    ) -> Result<Reading, Reading> {
        let w = self.window(config, now, subject, resource);
        let limit = Self::limit(config, subject, resource);
        // A request is admitted while anything remains; GraphQL needs the whole cost.
        let fits = match resource {
            Resource::Graphql => w.used + cost <= limit,
            _ => w.used < limit,
        };
        if !fits {
            return Err(Self::reading(config, subject, resource, w));
        }
        let w = Window {
            reset: w.reset,
            used: (w.used + cost).min(limit),
        };
        self.windows.insert((subject.key(), resource), w);
        Ok(Self::reading(config, subject, resource, w))
    }

    /// Gives back what a request spent (used for requests that turn out not to count, such as
    /// an authorized 304).
    pub fn refund(&mut self, subject: &Subject, resource: Resource, cost: u64) {
        if let Some(w) = self.windows.get_mut(&(subject.key(), resource)) {
            w.used = w.used.saturating_sub(cost);
        }
    }

    /// Registers a request in flight; returns how many were in flight before it.
    pub fn enter(&mut self, subject: &Subject) -> u32 {
        let s = self.secondary.entry(subject.key()).or_default();
        let before = s.in_flight;
        s.in_flight += 1;
        before
    }

    /// Ends a request in flight.
    pub fn leave(&mut self, subject: &Subject) {
        if let Some(s) = self.secondary.get_mut(&subject.key()) {
            s.in_flight = s.in_flight.saturating_sub(1);
        }
    }

    /// Applies the secondary limits to a request about to run. `points` is 1 for reads and 5
    /// for writes; `graphql` selects the GraphQL limiter; `creates_content` counts against the
    /// content-creation limits. `in_flight_before` is what [`Quotas::enter`] returned.
    #[allow(clippy::too_many_arguments)]
    pub fn secondary(
        &mut self,
        config: &SimConfig,
        now: Timestamp,
        subject: &Subject,
        in_flight_before: u32,
        graphql: bool,
        points: u64,
        creates_content: bool,
    ) -> Result<(), SecondaryHit> {
        let retry = |secs: u64| config.secondary_retry_after.then_some(secs.max(1));
        let scripted_retry = match config.scenario {
            Scenario::SecondaryRateLimited | Scenario::AbuseDetection => Some(Some(60)),
            Scenario::SecondaryWithoutRetryAfter => Some(None),
            _ => None,
        };
        let s = self.secondary.entry(subject.key()).or_default();
        if let Some(retry_after) = scripted_retry {
            if !s.scripted_tripped {
                s.scripted_tripped = true;
                s.scripted_until = Some(now + SignedDuration::from_secs(60));
            }
            if let Some(until) = s.scripted_until
                && now < until
            {
                let left = until.duration_since(now).as_secs_f64().ceil();
                // Safe: a positive number of seconds below one minute.
                let left = left as u64;
                let kind = if config.scenario == Scenario::AbuseDetection {
                    SecondaryKind::Abuse
                } else {
                    SecondaryKind::Scripted
                };
                return Err(SecondaryHit {
                    kind,
                    retry_after: retry_after.map(|_| left.max(1)),
                });
            }
        }
        if in_flight_before >= config.concurrency_limit {
            return Err(SecondaryHit {
                kind: SecondaryKind::Concurrency,
                retry_after: retry(1),
            });
        }
        let minute = SignedDuration::from_secs(60);
        let (limiter, limit, kind) = if graphql {
            (
                &mut s.graphql_points,
                config.graphql_points_per_minute,
                SecondaryKind::GraphqlPoints,
            )
        } else {
            (
                &mut s.rest_points,
                config.rest_points_per_minute,
                SecondaryKind::RestPoints,
            )
        };
        let c = Counter::roll(limiter, now, minute);
        if c.count + points > limit {
            let secs = c.reset.duration_since(now).as_secs_f64().ceil() as u64;
            return Err(SecondaryHit {
                kind,
                retry_after: retry(secs),
            });
        }
        if creates_content {
            let per_minute = config.content_creation_per_minute;
            let per_hour = config.content_creation_per_hour;
            let m = *Counter::roll(&mut s.content_minute, now, minute);
            let h = *Counter::roll(&mut s.content_hour, now, SignedDuration::from_secs(3600));
            if m.count >= per_minute || h.count >= per_hour {
                let until = if m.count >= per_minute {
                    m.reset
                } else {
                    h.reset
                };
                let secs = until.duration_since(now).as_secs_f64().ceil() as u64;
                return Err(SecondaryHit {
                    kind: SecondaryKind::ContentCreation,
                    retry_after: retry(secs),
                });
            }
            if let Some(m) = s.content_minute.as_mut() {
                m.count += 1;
            }
            if let Some(h) = s.content_hour.as_mut() {
                h.count += 1;
            }
        }
        let c = Counter::roll(
            if graphql {
                &mut s.graphql_points
            } else {
                &mut s.rest_points
            },
            now,
            minute,
        );
        c.count += points;
        Ok(())
    }
}
