//! Sending the plan's probe through the exit door, every request counted in
//! `launchdarkly_sync_plan` and spending the account's global window and its route's window
//! (the same route templates the stages spend): the projects with their embedded environments,
//! `limit=1` pages read for their `totalCount` (flags of a few projects, segments of a few
//! environments, members), and the audit log's first pages, read as stage `audit_log` reads
//! them (its own paging step), since the log counts nothing.

use std::collections::BTreeSet;

use headroom_core::clock::SignedDuration;
use headroom_core::{Subject, route};
use headroom_http::{ApiError, Client, Credential};
use headroom_store::{Store, StoreError};
use serde_json::Value;

use super::super::audit::{self, AuditCursor};
use super::super::selection::is_key;
use super::super::{Selection, send};
use super::{
    AUDIT_PAGE, AUDIT_PROBE_PAGES, FLAG_SAMPLE, LdProbe, PROJECTS_PAGE, ProjectProbe,
    SEGMENT_SAMPLE,
};

/// Route templates, as the stages spend them.
const PROJECTS_ROUTE: &str = "GET /api/v2/projects";
const ENVIRONMENTS_ROUTE: &str = "GET /api/v2/projects/{projectKey}/environments";
const FLAGS_ROUTE: &str = "GET /api/v2/flags/{projectKey}";
const SEGMENTS_ROUTE: &str = "GET /api/v2/segments/{projectKey}/{environmentKey}";
const MEMBERS_ROUTE: &str = "GET /api/v2/members";
const AUDIT_ROUTE: &str = "GET /api/v2/auditlog";

/// Why the probe could not be taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// A request failed (its own words: exit hints read them).
    #[error(transparent)]
    Api(#[from] ApiError),
    /// The store could not say where the audit log was left.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// LaunchDarkly answered something the probe cannot read.
    #[error("{0}")]
    Answer(String),
}

/// The probe's requests, counted.
struct Sender<'a> {
    client: &'a Client,
    credential: Option<&'a Credential>,
    requests: u64,
}

/// The longest governor wait the probe takes in place: a LaunchDarkly window and a little.
/// A request to a route not read in this window waits for the next window's start (the
/// governor's `learned::blind_wait`); anything longer is the command's error.
const PLAN_WAIT: SignedDuration = SignedDuration::from_secs(11);

impl Sender<'_> {
    /// GETs `path` (of route `template`): the answer's JSON.
    async fn get(&mut self, path: &str, template: &'static str) -> Result<Value, PlanError> {
        loop {
            let request = send::get(path, route::LAUNCHDARKLY_SYNC_PLAN, template)
                .credential(self.credential);
            match self.client.send(request).await {
                Ok(response) => {
                    self.requests += 1;
                    return Ok(response.json::<Value>()?);
                }
                // Decided before sending: nothing was spent.
                Err(ApiError::RateLimited { until, reason, .. })
                    if reason.wait_reason().is_some()
                        && until.duration_since(self.client.governor().clock().now())
                            <= PLAN_WAIT =>
                {
                    self.client.sleep_until(until).await;
                }
                Err(e) => {
                    self.requests += 1;
                    return Err(e.into());
                }
            }
        }
    }

    /// The `totalCount` of a `limit=1` page of `path`; `None` when the token may not read it
    /// (the stage records such a scope refused and goes on).
    async fn count(
        &mut self,
        path: &str,
        template: &'static str,
    ) -> Result<Option<u64>, PlanError> {
        let body = match self.get(&send::with_limit(path, 1), template).await {
            Ok(body) => body,
            Err(PlanError::Api(ApiError::Forbidden { .. } | ApiError::Gone { .. })) => {
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        match body.get("totalCount").and_then(Value::as_u64) {
            Some(n) => Ok(Some(n)),
            None => Err(PlanError::Answer(format!("{path}: no totalCount"))),
        }
    }
}

/// Probes the account for `selection` with `credential`, the audit log from its start (as
/// the first run of an empty store reads it).
pub async fn probe(
    client: &Client,
    credential: Option<&Credential>,
    selection: &Selection,
) -> Result<LdProbe, PlanError> {
    let s = Sender {
        client,
        credential,
        requests: 0,
    };
    collect(s, selection, None).await
}

/// As [`probe`], the audit log from the newest entry `store` holds of the token's account,
/// as stage `audit_log` starts a run that has no completed run before it. After a completed
/// run the stage starts from that run's newest entry, the newest stored unless a run failed
/// since. The account is the credential's quota identity (`Client::identity`: recorded, or
/// learned once with `caller-identity`, as every command learns it).
pub async fn probe_from_store(
    client: &Client,
    credential: Option<&Credential>,
    selection: &Selection,
    store: &dyn Store,
) -> Result<LdProbe, PlanError> {
    let key = client.identity(credential).await?;
    let Subject::Account(account) = &key.subject else {
        return Err(PlanError::Answer(format!(
            "the token's quota belongs to {}, not to a LaunchDarkly account",
            key.subject
        )));
    };
    let stored = store.ld_audit_watermark(account).await?;
    let s = Sender {
        client,
        credential,
        requests: 0,
    };
    collect(s, selection, audit::after(None, stored)).await
}

/// `k` (at most `n`) indices spread evenly over `0..n`, none twice.
pub fn sample_indices(n: usize, k: usize) -> Vec<usize> {
    let k = k.min(n);
    (0..k).map(|i| (2 * i + 1) * n / (2 * k)).collect()
}

/// Everything but the identity, the audit log from `after` (exclusive).
async fn collect(
    mut s: Sender<'_>,
    selection: &Selection,
    after: Option<i64>,
) -> Result<LdProbe, PlanError> {
    let mut probe = LdProbe {
        audit_after: after,
        ..LdProbe::default()
    };
    let environments = projects(&mut s, selection, &mut probe).await?;
    for i in sample_indices(probe.projects.len(), FLAG_SAMPLE) {
        let p = &mut probe.projects[i];
        let path = format!("/api/v2/flags/{}", send::segment(&p.key));
        p.flags = s.count(&path, FLAGS_ROUTE).await?;
    }
    for i in sample_indices(environments.len(), SEGMENT_SAMPLE) {
        let (project, env) = &environments[i];
        let path = format!(
            "/api/v2/segments/{}/{}",
            send::segment(project),
            send::segment(env)
        );
        if let Some(n) = s.count(&path, SEGMENTS_ROUTE).await? {
            probe.segment_samples.push(n);
        }
    }
    probe.members = s
        .count("/api/v2/members", MEMBERS_ROUTE)
        .await?
        .ok_or_else(|| PlanError::Answer("the members list is refused".to_owned()))?;
    audit_log(&mut s, &mut probe).await?;
    probe.requests = s.requests;
    Ok(probe)
}

/// Pages the projects as stage `projects` does (`expand=environments`), keeping the selected
/// ones with their environment counts; returns the (project, environment) keys embedded.
async fn projects(
    s: &mut Sender<'_>,
    selection: &Selection,
    probe: &mut LdProbe,
) -> Result<Vec<(String, String)>, PlanError> {
    let mut pairs = Vec::new();
    let mut next = Some(format!(
        "/api/v2/projects?limit={PROJECTS_PAGE}&expand=environments"
    ));
    while let Some(path) = next {
        let path = send::with_param(
            &send::with_limit(&path, PROJECTS_PAGE),
            "expand",
            "environments",
        );
        let page = send::page(&s.get(&path, PROJECTS_ROUTE).await?);
        next = page.next;
        for project in &page.items {
            probe.visible_projects += 1;
            let Some(key) = project.get("key").and_then(Value::as_str) else {
                continue;
            };
            if !selection.selects(key) || !is_key(key) {
                continue;
            }
            let embedded = project.get("environments").cloned().unwrap_or(Value::Null);
            let envs = send::page(&embedded);
            let shown = envs.items.len() as u64;
            let total = match embedded.get("totalCount").and_then(Value::as_u64) {
                Some(n) => n,
                None if envs.next.is_none() => shown,
                None => {
                    let path = format!("/api/v2/projects/{}/environments", send::segment(key));
                    s.count(&path, ENVIRONMENTS_ROUTE).await?.unwrap_or(shown)
                }
            };
            for env in envs.items.iter().filter_map(|e| e.get("key")?.as_str()) {
                if is_key(env) {
                    pairs.push((key.to_owned(), env.to_owned()));
                }
            }
            probe.projects.push(ProjectProbe {
                key: key.to_owned(),
                environments: total.max(shown),
                embedded_environments: shown,
                flags: None,
            });
        }
    }
    Ok(pairs)
}

/// Reads up to [`AUDIT_PROBE_PAGES`] pages of the audit log with the stage's own step; the
/// entries are known when the log ended within them.
async fn audit_log(s: &mut Sender<'_>, probe: &mut LdProbe) -> Result<(), PlanError> {
    let mut cursor = AuditCursor {
        after: probe.audit_after,
        before: None,
        boundary: Vec::new(),
        previous: None,
        forced: None,
        high: None,
        changed: false,
        read: false,
    };
    let mut seen = BTreeSet::new();
    while !cursor.read && probe.audit_pages < AUDIT_PROBE_PAGES {
        let mut path = format!("/api/v2/auditlog?limit={AUDIT_PAGE}");
        if let Some(after) = cursor.after {
            path.push_str(&format!("&after={after}"));
        }
        if let Some(before) = cursor.before {
            path.push_str(&format!("&before={before}"));
        }
        let page = send::page(&s.get(&path, AUDIT_ROUTE).await?);
        probe.audit_pages += 1;
        seen.extend(
            page.items
                .iter()
                .filter_map(|e| e.get("_id")?.as_str().map(str::to_owned)),
        );
        // The stage's step decides the next page (and the end) exactly as the sync will.
        audit::step(&mut cursor, &page.items, page.next.is_some());
    }
    probe.audit_entries = cursor.read.then_some(seen.len() as u64);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The sample takes `k` indices (fewer only when there are fewer), each in range,
        /// none twice.
        #[test]
        fn a_sample_spreads_over_every_index_once(n in 0usize..500, k in 0usize..30) {
            let picked = sample_indices(n, k);
            prop_assert_eq!(picked.len(), k.min(n));
            prop_assert!(picked.iter().all(|&i| i < n));
            prop_assert!(picked.windows(2).all(|w| w[0] < w[1]));
        }
    }
}
