//! The served status document, reused for a few seconds: building it counts the coverage and
//! flow windows over every push event of the last day, which on a store of a million events
//! takes a good part of a second — too long for a read, and pointless to repeat for each of
//! several dashboards open at once. So a server keeps the document it built last: a read
//! finds it fresh (under [`REUSE_FOR`] old by the server's clock) and gets it at once; finds it
//! stale and gets it at once while one background build replaces it; finds none (the first
//! read) and waits for the one build that every read arriving meanwhile shares. The
//! document's `captured_at` always says when it was read, so its age is never hidden.

use std::sync::Arc;

use headroom_core::clock::{Clock as _, SignedDuration, Timestamp};
use headroom_core::telemetry;
use headroom_store::Result;
use tokio::sync::Mutex;

use super::StatusDocument;
use crate::AppState;

/// How long a built document is served as it is.
pub const REUSE_FOR: SignedDuration = SignedDuration::from_secs(5);

#[derive(Debug, Default)]
struct Slot {
    document: Option<Arc<StatusDocument>>,
    refreshing: bool,
}

/// One server's last status document (clones share it).
#[derive(Debug, Clone, Default)]
pub struct StatusCache(Arc<Mutex<Slot>>);

/// Whether a document built at `built` is still served as it is at `now`.
pub fn is_fresh(built: Timestamp, now: Timestamp) -> bool {
    now.duration_since(built) < REUSE_FOR && now >= built
}

impl StatusCache {
    /// The document to serve now (see the module comment).
    pub async fn get(&self, state: &AppState) -> Result<Arc<StatusDocument>> {
        let now = state.clock.now();
        let mut slot = self.0.lock().await;
        match slot.document.clone() {
            Some(document) if is_fresh(document.captured_at, now) => Ok(document),
            Some(stale) => {
                if !slot.refreshing {
                    slot.refreshing = true;
                    let (cache, state) = (self.clone(), state.clone());
                    tokio::spawn(async move { cache.refresh(&state).await });
                }
                Ok(stale)
            }
            None => {
                // Held while building: reads arriving meanwhile wait for this one build.
                let document = Arc::new(build(state).await?);
                slot.document = Some(document.clone());
                Ok(document)
            }
        }
    }

    async fn refresh(&self, state: &AppState) {
        let built = build(state).await;
        let mut slot = self.0.lock().await;
        slot.refreshing = false;
        match built {
            Ok(document) => slot.document = Some(Arc::new(document)),
            // The stale document stays; the next read after it tries again.
            Err(e) => tracing::warn!(
                event = telemetry::SERVER_STORE_UNAVAILABLE,
                error = %e
            ),
        }
    }
}

async fn build(state: &AppState) -> Result<StatusDocument> {
    super::build(
        state.report.as_ref(),
        state.feed.as_ref(),
        &state.settings,
        state.clock.now(),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).expect("valid")
    }

    #[test]
    fn a_document_is_reused_for_five_seconds_and_never_from_the_future() {
        assert!(is_fresh(t(0), t(0)));
        assert!(is_fresh(t(0), t(4)));
        assert!(!is_fresh(t(0), t(5)));
        // A clock set back does not make an old document fresh forever.
        assert!(!is_fresh(t(10), t(0)));
    }
}
