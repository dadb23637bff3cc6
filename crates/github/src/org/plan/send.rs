//! Sending the plan's probe: the GraphQL query of a few points, then one REST request per
//! repository of the run sample. Shared by `sync plan`, `sync org --estimate` and the tests
//! that hold the plan against a full sync, so all three measure the same way.

use headroom_core::provider::names::InvalidName;
use headroom_core::provider::path::segment;
use headroom_core::route;
use headroom_http::{ApiError, ApiRequest, Client, Credential};
use serde_json::{Value, json};

use super::{PLAN_QUERY, PlanError, PlanProbe, RunSample};

/// Why the probe could not be taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// A request failed (its own words: exit hints read them).
    #[error(transparent)]
    Api(#[from] ApiError),
    /// The answer cannot be planned on.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A name that cannot be a path segment.
    #[error(transparent)]
    Name(#[from] InvalidName),
}

/// Sends [`PLAN_QUERY`] for organization `login`, then reads the first page of workflow runs
/// of each repository of [`PlanProbe::run_sample`]. Returns the probe, the query's estimated
/// cost in points, and the run samples in the sample's order.
pub async fn probe(
    client: &Client,
    credential: Option<&Credential>,
    login: &str,
) -> Result<(PlanProbe, u32, Vec<RunSample>), ProbeError> {
    let request = ApiRequest::graphql(PLAN_QUERY, &json!({ "login": login }))?
        .credential(credential)
        .route(route::SYNC_PLAN_GRAPHQL);
    let cost = request.estimated_cost;
    let body: Value = client.send(request).await?.json()?;
    let probe = PlanProbe::read(&body, login)?;
    let owner = segment(login)?;
    let mut runs = Vec::new();
    for repo in probe.run_sample() {
        // A full page: its head commits tell how many check-run requests a page of runs
        // costs (one per distinct head), its `total_count` how many runs there are.
        let path = format!(
            "/repos/{owner}/{}/actions/runs?per_page=100",
            segment(repo)?
        );
        let request = ApiRequest::get(path)
            .credential(credential)
            .route(route::SYNC_PLAN_REST);
        let body: Value = client.send(request).await?.json()?;
        runs.push(RunSample::read(&body));
    }
    Ok((probe, cost, runs))
}
