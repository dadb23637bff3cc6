//! The provider-operation scenarios (`read_502`, `mutation_429`, `mutation_response_lost`):
//! which request each picks (the first read, or the first mutation, of each identity on each
//! provider), the gateway's 502 both providers answer, GitHub's 429, and the stall that loses
//! a mutation's answer; and the draw of a served answer's body fault on the wire.

use bytes::Bytes;
use http::header::HeaderValue;
use http::{HeaderMap, StatusCode};
use serde_json::json;

use headroom_core::clock::Timestamp;

use rand::Rng;

use super::{Reply, Simulator, lock};
use crate::body_faults::BodyFault;
use crate::quota::{Reading, Resource, Subject};
use crate::scenario::Scenario;

/// What the active scenario does to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProviderFault {
    /// Answer the gateway's 502 instead of serving the read.
    Read502,
    /// Refuse the mutation with 429, unapplied.
    Mutation429,
    /// Apply the mutation, then stall its answer.
    ResponseLost,
}

/// Which API a request reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Provider {
    GitHub,
    GitLab,
}

impl Simulator {
    /// Whether a served answer's body is cut or stalled on the wire (seeded; nothing is drawn
    /// while both rates are zero, so other faults' sequences do not move).
    pub(super) fn draw_body_fault(&self) -> Option<BodyFault> {
        let f = &self.inner.config.faults;
        if f.cut_rate <= 0.0 && f.stall_rate <= 0.0 {
            return None;
        }
        let mut rng = lock(&self.inner.fault_rng);
        if f.cut_rate > 0.0 && rng.random_bool(f.cut_rate) {
            return Some(BodyFault::Cut);
        }
        (f.stall_rate > 0.0 && rng.random_bool(f.stall_rate))
            .then_some(BodyFault::Stall(f.stall_for))
    }

    /// The fault the active scenario applies to this request of `identity`: only to the first
    /// request of the kind the scenario picks, per provider and identity.
    pub(crate) fn provider_fault(
        &self,
        provider: Provider,
        identity: &str,
        mutation: bool,
    ) -> Option<ProviderFault> {
        let fault = match (self.inner.config.scenario, mutation) {
            (Scenario::Read502, false) => ProviderFault::Read502,
            (Scenario::Mutation429, true) => ProviderFault::Mutation429,
            (Scenario::MutationResponseLost, true) => ProviderFault::ResponseLost,
            _ => return None,
        };
        let first = lock(&self.inner.scenario_state)
            .provider_firsts
            .insert((provider, identity.to_owned()));
        first.then_some(fault)
    }

    /// GitHub's answer for a request the fault refuses before serving it, with the reading
    /// it reports (none for the gateway's 502, which no limit saw).
    pub(super) fn github_fault_answer(
        &self,
        fault: Option<ProviderFault>,
        subject: &Subject,
        resource: Resource,
        now: Timestamp,
        request_id: &str,
    ) -> Option<(Reply, Option<Reading>)> {
        match fault? {
            ProviderFault::Read502 => Some((bad_gateway(), None)),
            ProviderFault::Mutation429 => {
                let inner = &self.inner;
                let reading = lock(&inner.quotas).peek(&inner.config, now, subject, resource);
                Some((github_429(request_id), Some(reading)))
            }
            ProviderFault::ResponseLost => None,
        }
    }

    /// Stalls a lost answer on the simulator's clock, past any sensible client timeout.
    pub(crate) async fn lose_response(&self) {
        self.inner
            .clock
            .sleep(self.inner.config.faults.timeout_after)
            .await;
    }
}

/// The gateway's 502, as both GitHub's and GitLab's front ends answer it: HTML.
pub(crate) fn bad_gateway() -> Reply {
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/html"),
    );
    Reply {
        status: StatusCode::BAD_GATEWAY,
        headers,
        body: Bytes::from_static(b"<html><body><h1>502 Bad Gateway</h1></body></html>"),
        etag: false,
    }
}

/// GitHub's 429 for a refused mutation: the secondary-limit wording, `retry-after: 60`.
fn github_429(request_id: &str) -> Reply {
    Reply::json(
        StatusCode::TOO_MANY_REQUESTS,
        &json!({
            "message": format!("You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID {request_id}."),
            "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
        }),
    )
    .header("retry-after", "60")
}
