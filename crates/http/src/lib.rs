//! headroom-http: the exit door. Every request to a provider goes through [`Client::send`].
//!
//! Owns the URL policy (the SSRF boundary), the wiring of the governor around each round
//! trip, the transports (live reqwest+rustls, and the simulator's in-process handler behind
//! the `sim` feature), response classification, retries of reads, conditional requests,
//! pagination helpers, GraphQL cost estimation, usage records and credential identity.
//!
//! It must not let a request bypass the policy or the governor, retry a mutation, follow a
//! redirect without re-validating it, or let a token reach an error, a log line or a record.

pub mod client;
pub mod credential;
pub mod error;
pub mod graphql;
pub mod ops;
pub mod paginate;
pub mod policy;
pub mod request;
pub mod sinks;
pub mod transport;

pub use client::{Client, ClientConfig, ClientParts};
pub use credential::{AuthScheme, Credential};
pub use error::{ApiError, CERTIFICATE_NOT_TRUSTED, RateLimitReason, TOKEN_REFUSED};
pub use policy::{PolicyError, UrlPolicy};
pub use request::{ApiRequest, ApiResponse, ENDPOINT_PREFIX};
pub use transport::{LiveConfig, LiveTransport, Transport, TransportError};
