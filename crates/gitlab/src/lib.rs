//! headroom-gitlab: GitLab's side of the Git provider contract
//! ([`headroom_core::provider::GitProvider`]) over REST v4, on GitLab.com or a self-managed
//! instance (`https://HOST/api/v4`).
//!
//! Every request goes through headroom-http's `Client::send`, built for `Provider::GitLab` (its
//! `PRIVATE-TOKEN` header, `GET /user`'s `username` as the quota's owner, `RateLimit-*` read when
//! present). Reads are retried by the exit door; mutations are sent once.
//!
//! It must not talk to the network except through the exit door or read the clock except
//! through `headroom_core::Clock`.

mod errors;
mod ops;
mod recheck;
mod wire;

pub use ops::GitLabOps;
pub mod sync;
