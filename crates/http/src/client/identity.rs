//! Whose quota a request spends: the owner recorded for its credential, discovered on first
//! use with the provider's "who am I" (`GET /user`, Linear's `viewer`, LaunchDarkly's
//! `caller-identity`, Jira's `myself`: see `whoami`), or the outbound IP without one.
//!
//! The discovery itself goes out under a provisional key (the credential's fingerprint): no
//! one knows the owner yet. Nothing is reported under that key (see `report`): once the
//! owner is known, the response's reading is fed to the owner's governor state and the
//! discovery's usage and rate-limit events are handed over as the owner's, so no
//! credential-keyed identity is ever recorded beside its owner's.

use headroom_core::QuotaKey;
use headroom_core::Subject;
use headroom_core::governor::Acquire;
use headroom_core::signal::RateLimitSignal;
use headroom_core::telemetry;

use super::{Client, whoami};
use crate::credential::Credential;
use crate::error::ApiError;
use crate::request::ApiRequest;

/// The subject prefix of a provisional key: a login never contains a colon, so no owner's key
/// can look like one.
const PROVISIONAL_PREFIX: &str = "credential:";

/// Whether `key` is a credential's provisional key (its owner still unknown).
pub(super) fn is_provisional(key: &QuotaKey) -> bool {
    matches!(&key.subject, Subject::User(login) if login.starts_with(PROVISIONAL_PREFIX))
}

impl Client {
    /// The quota identity of `credential` on this API: its recorded owner, discovered with
    /// the provider's "who am I" on first use; with no credential, the outbound IP.
    pub async fn identity(&self, credential: Option<&Credential>) -> Result<QuotaKey, ApiError> {
        let Some(credential) = credential else {
            return Ok(self.outbound_key());
        };
        if let Some(key) = self.recorded_owner(credential).await {
            return Ok(key);
        }
        let host = self.policy().host().to_owned();
        if let Some(subject) =
            whoami::known_owner(self.provider(), credential.scheme(), self.policy().base())
        {
            self.parts()
                .credentials
                .record(&host, credential.fingerprint(), &subject)
                .await;
            return Ok(self.key_of(subject));
        }
        let provisional = self.key_of(Subject::User(
            format!("{PROVISIONAL_PREFIX}{}", credential.fingerprint()).into(),
        ));
        let request = whoami::probe(self.provider())?
            .credential(Some(credential))
            .route(headroom_core::route::IDENTITY);
        let (subject, signal) = match self.discover(&provisional, credential, &request).await {
            Ok(found) => found,
            Err(e) => {
                // No owner to give them to: what the attempt reported stays the credential's.
                self.settle_provisional(&provisional, None).await;
                return Err(e);
            }
        };
        self.parts()
            .credentials
            .record(&host, credential.fingerprint(), &subject)
            .await;
        let owner = self.key_of(subject.clone());
        self.count_discovery(&owner, &request, signal.as_ref())
            .await;
        self.settle_provisional(&provisional, Some(&owner)).await;
        tracing::info!(
            event = telemetry::IDENTITY_DISCOVERED,
            host = %host,
            fingerprint = credential.fingerprint(),
            subject = %subject,
            "Learned whose quota a credential spends."
        );
        Ok(owner)
    }

    /// The quota identity of `credential` when knowing it sends nothing: the outbound IP
    /// without a credential, else the owner recorded for it. `None` when only asking the provider
    /// can tell (see [`Client::identity`]).
    pub async fn known_identity(&self, credential: Option<&Credential>) -> Option<QuotaKey> {
        match credential {
            None => Some(self.outbound_key()),
            Some(credential) => self.recorded_owner(credential).await,
        }
    }

    /// The unauthenticated quota: the outbound IP's.
    fn outbound_key(&self) -> QuotaKey {
        let ip = self.parts().config.unauthenticated_subject.as_str();
        self.key_of(Subject::Ip(ip.into()))
    }

    /// The owner recorded for `credential` on this host, if one is.
    async fn recorded_owner(&self, credential: &Credential) -> Option<QuotaKey> {
        let subject = self
            .parts()
            .credentials
            .lookup(self.policy().host(), credential.fingerprint())
            .await?;
        Some(self.key_of(subject))
    }

    /// `subject`'s quota on this door's provider and host: another provider's API on the same
    /// host is another quota.
    fn key_of(&self, subject: Subject) -> QuotaKey {
        QuotaKey::new(self.provider(), self.policy().host(), subject)
    }

    /// The "who am I" under the provisional key: the owner, and the response's reading when
    /// one came back.
    async fn discover(
        &self,
        provisional: &QuotaKey,
        credential: &Credential,
        request: &ApiRequest,
    ) -> Result<(Subject, Option<RateLimitSignal>), ApiError> {
        match self.send_as(provisional, request.clone()).await {
            Ok(response) => {
                let body = response.json::<serde_json::Value>()?;
                let owner = whoami::owner(
                    self.provider(),
                    credential.scheme(),
                    self.policy().host(),
                    &body,
                )
                .map_err(ApiError::Identity)?;
                Ok((owner, Some(response.signal)))
            }
            // An installation token cannot read /user; its quota is the installation's. Without
            // an installation id in hand, the token's fingerprint stands in for it.
            Err(ApiError::Forbidden { .. }) if credential.is_installation_token() => {
                let id = u64::from_str_radix(credential.fingerprint(), 16).unwrap_or(0);
                Ok((Subject::Installation(id), None))
            }
            Err(e) => Err(e),
        }
    }

    /// Counts the discovery's request against the owner: its points in the owner's local
    /// windows (or the owner's first minute can go one request over GitHub's secondary limit)
    /// and its reading in the owner's bucket — the headers are the provider's word on the
    /// owner's quota. Through a grant when the rule allows one, else (at the ceiling, or
    /// already closed: the request has been sent all the same) as a charge.
    async fn count_discovery(
        &self,
        owner: &QuotaKey,
        request: &ApiRequest,
        signal: Option<&RateLimitSignal>,
    ) {
        let governor = &self.parts().governor;
        if let Some(signal) = signal {
            let bucket = signal
                .resource
                .clone()
                .unwrap_or_else(|| request.bucket.clone());
            let acquired = governor
                .acquire(owner, &bucket, request.estimated_cost, request.kind)
                .await;
            if let Ok(Acquire::Grant(permit)) = acquired {
                let mut observed = governor.observe(&permit, signal).await;
                // The answer's word on its other buckets (Linear's complexity) is the owner's too.
                for other in &signal.others {
                    if observed.is_ok() {
                        observed = governor.observe(&permit, other).await;
                    }
                }
                permit.release().await;
                match observed {
                    Ok(()) => self.report_reading(owner).await,
                    Err(e) => tracing::warn!(event = telemetry::GOVERNOR_CHARGE_FAILED,
                        error = %e, "Could not feed a credential's first reading to its owner's quota."),
                }
                return;
            }
        }
        // No slot for it now (the owner is at its reserve or ceiling): the request went out
        // all the same, so count it, and its answer is still the owner's freshest reading.
        let charged = match signal {
            Some(signal) => {
                governor
                    .charge_observed(owner, request.kind, &request.bucket, signal)
                    .await
            }
            None => governor.charge(owner, request.kind).await,
        };
        match charged {
            Ok(()) if signal.is_some() => self.report_reading(owner).await,
            Ok(()) => {}
            Err(e) => tracing::warn!(event = telemetry::GOVERNOR_CHARGE_FAILED, error = %e,
                "Could not count a credential's first request against its owner's quota."),
        }
    }
}
