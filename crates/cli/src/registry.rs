//! The store behind the exit door's sinks: credential owners, ETags and usage records are
//! written to the database, so the next run knows whose quota a token spends without asking.
//!
//! These are diagnostics and caches: a failed write is logged and the request goes on (a
//! broken cache must never turn into a failed collection).

use std::sync::Arc;

use headroom_core::Subject;
use headroom_core::clock::{Clock, SignedDuration, TokioClock};
use headroom_core::governor::BoxFuture;
use headroom_core::telemetry;
use headroom_http::sinks::{CredentialRegistry, EtagStore, UsageRecord, UsageSink};
use headroom_store::{CredentialSeen, Store, StoredEtag, SubjectKind};

use crate::config::ConfigError;

/// An open database, seen through the exit door's sinks.
#[derive(Debug, Clone)]
pub struct Opened {
    /// The exit door's sinks (which also hand out the store).
    pub sinks: Arc<StoreSinks>,
}

/// Opens the configured database (creating an SQLite file when needed).
pub async fn open(db: &str) -> Result<Opened, ConfigError> {
    let store = headroom_store::open(db).await.map_err(|e| ConfigError {
        setting: "--db".into(),
        problem: e.to_string(),
    })?;
    Ok(Opened {
        sinks: Arc::new(StoreSinks {
            store,
            clock: TokioClock::system(),
        }),
    })
}

/// The store, seen as the exit door's sinks.
#[derive(Debug)]
pub struct StoreSinks {
    store: Arc<dyn Store>,
    clock: TokioClock,
}

fn subject_of(kind: SubjectKind, owner: &str) -> Subject {
    match kind {
        SubjectKind::User => Subject::User(owner.into()),
        SubjectKind::Installation => Subject::Installation(owner.parse().unwrap_or(0)),
        SubjectKind::Ip => Subject::Ip(owner.into()),
    }
}

impl StoreSinks {
    /// The store itself.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }
}

impl CredentialRegistry for StoreSinks {
    fn lookup<'a>(&'a self, host: &'a str, fingerprint: &'a str) -> BoxFuture<'a, Option<Subject>> {
        Box::pin(async move {
            match self.store.credential(host, fingerprint).await {
                Ok(found) => found.map(|c| subject_of(c.subject_kind, &c.owner_login)),
                Err(e) => {
                    tracing::warn!(event = telemetry::STORE_READ_FAILED, error = %e, "Could not read a stored credential.");
                    None
                }
            }
        })
    }

    fn record<'a>(
        &'a self,
        host: &'a str,
        fingerprint: &'a str,
        subject: &'a Subject,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let (subject_kind, owner_login) = SubjectKind::of(subject);
            let seen = CredentialSeen {
                host: host.to_owned(),
                fingerprint: fingerprint.to_owned(),
                subject_kind,
                owner_login,
                seen_at: self.clock.now(),
            };
            if let Err(e) = self.store.upsert_credential(&seen).await {
                tracing::warn!(event = telemetry::STORE_WRITE_FAILED, error = %e, "Could not record a credential's owner.");
            }
        })
    }

    fn sharing<'a>(&'a self, host: &'a str, subject: &'a Subject) -> BoxFuture<'a, Vec<String>> {
        Box::pin(async move {
            let (kind, owner) = SubjectKind::of(subject);
            match self.store.credentials_of(host, kind, &owner).await {
                Ok(credentials) => credentials.into_iter().map(|c| c.fingerprint).collect(),
                Err(e) => {
                    tracing::warn!(event = telemetry::STORE_READ_FAILED, error = %e, "Could not list credentials.");
                    Vec::new()
                }
            }
        })
    }
}

impl EtagStore for StoreSinks {
    fn get<'a>(&'a self, fingerprint: &'a str, url: &'a str) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            match self.store.etag(fingerprint, url).await {
                Ok(found) => found.map(|e| e.etag),
                Err(e) => {
                    tracing::warn!(event = telemetry::STORE_READ_FAILED, error = %e, "Could not read an ETag.");
                    None
                }
            }
        })
    }

    fn put<'a>(&'a self, fingerprint: &'a str, url: &'a str, etag: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let stored = StoredEtag {
                credential_fingerprint: fingerprint.to_owned(),
                url: url.to_owned(),
                etag: etag.to_owned(),
                last_modified: None,
                stored_at: self.clock.now(),
            };
            if let Err(e) = self.store.put_etag(&stored).await {
                tracing::warn!(event = telemetry::STORE_WRITE_FAILED, error = %e, "Could not store an ETag.");
            }
        })
    }
}

impl UsageSink for StoreSinks {
    fn record(&self, record: UsageRecord) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let stored = headroom_store::UsageRecord {
                key: record.key,
                route_family: record.route_family,
                dimension: record.dimension,
                requests: 1,
                units: record
                    .actual_cost
                    .unwrap_or(u64::from(record.estimated_cost.max(1))),
                at: record.at,
                window: SignedDuration::from_hours(1),
            };
            if let Err(e) = self.store.record_usage(&stored).await {
                tracing::warn!(event = telemetry::STORE_WRITE_FAILED, error = %e, "Could not record usage.");
            }
        })
    }
}
