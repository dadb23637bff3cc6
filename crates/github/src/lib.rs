//! headroom-github: what headroom knows about GitHub beyond rate limits.
//!
//! Owns the public events feed (polling, envelope validation and quarantine, ingestion,
//! enrichment of actors and repositories), the organization-sync stages, and GitHub's side of
//! the Git provider contract (`ops`). Every request goes
//! through headroom-http's `Client::send`; every fact is written through headroom-store.
//!
//! It must not talk to the network except through the exit door, read the clock except
//! through `headroom_core::Clock`, or sleep through a quota window.

pub mod feed;
pub mod ops;
pub mod org;
