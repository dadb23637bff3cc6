//! headroom-sim: a model of GitHub good enough to be wrong in the same ways GitHub is, with
//! GitLab's REST v4 for the provider operations under `/api/v4` on the same port ([`gitlab`]).
//! A seeded Jira Cloud site answers under `/rest/api/3` and `/rest/agile/1.0` ([`jira`]), and a
//! seeded Linear workspace at `POST /linear/graphql` ([`linear`]), and a seeded LaunchDarkly
//! account under `/api/v2` ([`launchdarkly`]).
//!
//! It owns one request handler ([`Simulator::handle`]) that runs in-process on the shared
//! clock (deterministic tests under a paused tokio clock) or behind an HTTP(S) server on
//! loopback ([`serve`]) for the demo, benchmarks and third-party clients.
//!
//! What it must not do: use anything of headroom-core but the clock, or anything of the
//! project's HTTP client. The rules of GitHub's quotas, headers and bodies are implemented
//! here a second time, on purpose, so that a misunderstanding cannot hide on both sides.

pub mod body_faults;
pub mod config;
pub mod error;
pub mod feed;
pub mod flight;
pub mod gitlab;
pub mod graphql;
pub mod jira;
pub mod launchdarkly;
pub mod linear;
pub mod quota;
pub mod render;
pub mod replay;
pub mod rest;
pub mod scenario;
pub mod server;
pub mod sim;
pub mod world;

pub use config::{Density, ExternalSpend, Faults, FeedPool, SimConfig, TokenOwner, TokenSpec};
pub use error::SimError;
pub use gitlab::group::{GitlabEndpointLimits, GitlabGroupCounts, GitlabGroupSpec, GitlabTouched};
pub use jira::{JiraLimits, JiraSiteCounts, JiraSiteSpec};
pub use launchdarkly::{LdAccountCounts, LdAccountSpec, LdLimits};
pub use linear::{LinearLimits, LinearWorkspaceCounts, LinearWorkspaceSpec};
pub use quota::{Reading, Resource, Subject};
pub use scenario::Scenario;
pub use server::{GeneratedCert, TlsConfig, serve};
pub use sim::{GraphqlQuery, LogEntry, Simulator, token_fingerprint};

/// A future the simulator hands out, boxed so that its state machine is compiled once, in this
/// crate. Release builds do not share generic code between crates: an `async fn` awaited
/// elsewhere had every crate that called it compile the whole simulator's handlers again
/// (a fresh release build spent about 130 s of `headroom-http`'s codegen on them).
pub type SimFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;
