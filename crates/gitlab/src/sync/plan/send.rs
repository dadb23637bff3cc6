//! Sending the plan's probe: one-object pages whose `x-total` counts the group's descendant
//! groups and projects, then each list of a few projects spread over the first page of
//! projects. Shared by `sync plan gitlab` and `sync gitlab --estimate`.

use headroom_core::provider::names::InvalidName;
use headroom_core::provider::path::segment;
use headroom_core::route;
use headroom_http::{ApiError, ApiRequest, ApiResponse, Client, Credential};
use serde_json::Value;

use super::{GroupProbe, ProjectSample, SAMPLE};

/// Why the probe could not be taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// A request failed (its own words: exit hints read them).
    #[error(transparent)]
    Api(#[from] ApiError),
    /// A name that cannot be a path segment.
    #[error(transparent)]
    Name(#[from] InvalidName),
}

/// `x-total` of an answer; `None` when GitLab left it out (past 10,000 objects).
fn total(response: &ApiResponse) -> Option<u64> {
    response
        .headers
        .get("x-total")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
}

/// Indices of `n` items spread evenly over `len`.
fn spread(len: usize, n: usize) -> Vec<usize> {
    if len <= n {
        return (0..len).collect();
    }
    (0..n).map(|i| i * len / n).collect()
}

/// Probes group `group` (a full path or an id) with `credential`.
pub async fn probe(
    client: &Client,
    credential: Option<&Credential>,
    group: &str,
) -> Result<GroupProbe, ProbeError> {
    let get = |path: String| {
        ApiRequest::get(path)
            .credential(credential)
            .route(route::GITLAB_SYNC_PLAN)
    };
    let base = format!("/groups/{}", segment(group)?);
    let mut requests = 0;
    let subgroups = client
        .send(get(format!("{base}/descendant_groups?per_page=1")))
        .await?;
    requests += 1;
    let listed = client
        .send(get(format!(
            "{base}/projects?include_subgroups=true&with_shared=false&order_by=id&sort=asc\
             &per_page=100"
        )))
        .await?;
    requests += 1;
    let first_page: Vec<Value> = listed.json().unwrap_or_default();
    let ids: Vec<i64> = first_page
        .iter()
        .filter_map(|p| p.get("id").and_then(Value::as_i64))
        .collect();
    let mut samples = Vec::new();
    for i in spread(ids.len(), SAMPLE) {
        let (sample, sent) = sample_project(client, credential, ids[i]).await?;
        requests += sent;
        samples.push(sample);
    }
    Ok(GroupProbe {
        // Past 10,000 GitLab does not count: what is known is a lower bound.
        subgroups: total(&subgroups).unwrap_or(10_001),
        projects: total(&listed).unwrap_or(ids.len() as u64),
        samples,
        requests,
    })
}

/// Counts one project's lists, each with the filters its stage sends; a list refused with
/// 403 (feature flags off, a role too low) or 404 is not counted. Returns the sample and the
/// requests sent.
async fn sample_project(
    client: &Client,
    credential: Option<&Credential>,
    project: i64,
) -> Result<(ProjectSample, u64), ProbeError> {
    let lists = [
        "merge_requests?state=all",
        "pipelines?",
        "issues?scope=all",
        "milestones?",
        "deployments?",
        "releases?",
        "feature_flags?",
    ];
    let mut counts = Vec::new();
    for list in lists {
        let sep = if list.ends_with('?') { "" } else { "&" };
        let request = ApiRequest::get(format!("/projects/{project}/{list}{sep}per_page=1"))
            .credential(credential)
            .route(route::GITLAB_SYNC_PLAN);
        counts.push(match client.send(request).await {
            Ok(response) => total(&response),
            Err(ApiError::Forbidden { .. } | ApiError::Gone { .. }) => None,
            Err(e) => return Err(e.into()),
        });
    }
    let sample = ProjectSample {
        merge_requests: counts[0],
        pipelines: counts[1],
        issues: counts[2],
        milestones: counts[3],
        deployments: counts[4],
        releases: counts[5],
        feature_flags: counts[6],
    };
    Ok((sample, lists.len() as u64))
}

#[cfg(test)]
mod tests {
    use super::spread;

    #[test]
    fn a_sample_spreads_over_the_list_and_takes_all_of_a_short_one() {
        assert_eq!(spread(3, 5), vec![0, 1, 2]);
        assert_eq!(spread(10, 5), vec![0, 2, 4, 6, 8]);
        assert_eq!(spread(0, 5), Vec::<usize>::new());
    }
}
