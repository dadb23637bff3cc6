//! The public events feed: envelope validation and quarantine, page ingestion, GH Archive
//! import.

pub mod array;
pub mod canonical;
pub mod enrich;
pub mod gzip;
pub mod import;
pub mod page;
pub mod poll;
pub mod reconcile;
pub mod service;
pub mod shape;
pub mod validate;

pub use self::page::{IngestContext, PageCounts, ingest_page};

/// What can go wrong while ingesting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FeedError {
    /// The store failed (the transaction of the batch was not committed).
    #[error("storage failed: {0}")]
    Store(#[from] headroom_store::StoreError),
    /// The input could not be read.
    #[error("cannot read the input: {0}")]
    Read(#[source] std::io::Error),
    /// The input failed partway: everything read before the error is stored (kept at the
    /// next commit), the rest of the input was not read.
    #[error(
        "the input failed after {lines} lines ({stored} of them stored as push events or \
         quarantine; duplicates and other event types need no row); the rest was not read: {source}"
    )]
    ReadPartway {
        /// Non-blank lines read and handed to the store.
        lines: u64,
        /// Push events created and envelopes quarantined among them.
        stored: u64,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
}

/// A fresh run id (UUID version 4 form), from std's randomly seeded hasher: no clock, no
/// extra dependency.
pub fn new_run_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut halves = [0u64; 2];
    for (i, half) in halves.iter_mut().enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        h.write_u32(std::process::id());
        *half = h.finish();
    }
    let hi = (halves[0] & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_4000;
    let lo = (halves[1] & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}
