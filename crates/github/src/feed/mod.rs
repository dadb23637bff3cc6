//! The public events feed: envelope validation and quarantine, page ingestion, GH Archive
//! import.

pub mod canonical;
pub mod import;
pub mod page;
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
}
