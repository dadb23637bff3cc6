//! GitLab.com's per-endpoint limits on `GET /groups/:id`, `GET /projects/:id` and
//! `GET /groups/:id/projects`: per user, per fixed minute, counted apart from the
//! authenticated API throttle. A refusal is 429 with `Retry-After` and GitLab's
//! application-limit body, and carries no `RateLimit-*` header ("On GitLab.com, 429s from the
//! Projects, Groups and Users APIs carry no informational headers"), while the throttle's
//! headers on other answers still show room.

use std::collections::HashMap;

use headroom_core::clock::Timestamp;
use http::Method;

use super::spec::GitlabEndpointLimits;
use crate::sim::Reply;

/// An endpoint with its own limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Endpoint {
    Group,
    Project,
    GroupProjects,
}

/// Which limited endpoint a request is, if any. `path` is the raw path (percent-encoded), so
/// an encoded `group%2Fsub` stays one segment.
pub(crate) fn endpoint_of(method: &Method, path: &str) -> Option<Endpoint> {
    if *method != Method::GET {
        return None;
    }
    let rest = path.strip_prefix("/api/v4/")?;
    let seg: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
    match seg.as_slice() {
        ["groups", _] => Some(Endpoint::Group),
        ["groups", _, "projects"] => Some(Endpoint::GroupProjects),
        ["projects", _] => Some(Endpoint::Project),
        _ => None,
    }
}

/// Per (user, endpoint) fixed-minute counters.
#[derive(Debug, Default)]
pub(crate) struct EndpointWindows {
    counts: HashMap<(String, Endpoint), (i64, u64)>,
}

impl EndpointWindows {
    /// Counts one request; the refusal when it goes over the endpoint's limit.
    pub(crate) fn check(
        &mut self,
        limits: &GitlabEndpointLimits,
        endpoint: Endpoint,
        user: &str,
        now: Timestamp,
        period: i64,
    ) -> Option<Reply> {
        let period = period.max(1);
        let limit = match endpoint {
            Endpoint::Group => limits.group_per_minute,
            Endpoint::Project => limits.project_per_minute,
            Endpoint::GroupProjects => limits.group_projects_per_minute,
        };
        if limit == 0 {
            return None;
        }
        let secs = now.as_second();
        let start = secs.div_euclid(period) * period;
        let entry = self
            .counts
            .entry((user.to_ascii_lowercase(), endpoint))
            .or_insert((start, 0));
        if entry.0 != start {
            *entry = (start, 0);
        }
        entry.1 += 1;
        if entry.1 <= limit {
            return None;
        }
        let retry_after = (start + period - secs).max(1);
        Some(
            super::super::quota::application_limited()
                .header("retry-after", &retry_after.to_string()),
        )
    }
}
