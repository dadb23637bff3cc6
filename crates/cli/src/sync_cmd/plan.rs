//! `sync plan org NAME`: an estimate of requests, points and quota windows, from a probe of a
//! few GraphQL points.

use headroom_core::governor::GovernorConfig;
use headroom_github::org;
use headroom_github::org::count_at as count;
use headroom_http::ApiRequest;
use serde_json::{Value, json};

use super::{Env, env};
use crate::config::Settings;
use crate::outcome::{CliError, CommandResult, Outcome};

/// What the probe measured and what the model makes of it.
pub(super) struct Measured {
    pub(super) probe: org::plan::PlanProbe,
    pub(super) plan: org::plan::Plan,
    pub(super) probe_cost: u32,
    pub(super) limits: (u64, u64),
}

pub(super) async fn plan(settings: &Settings, name: &str) -> CommandResult {
    let env = env(settings, GovernorConfig::default().margin).await?;
    let Measured {
        probe,
        plan,
        probe_cost,
        limits: (core_limit, graphql_limit),
    } = measure(&env, name).await?;
    let report = json!({
        "organization": name,
        "measured": {
            "repositories": probe.repositories, "members": probe.members, "teams": probe.teams,
            "pull_requests": plan.pull_requests, "sampled_repositories": probe.sampled_repositories,
            "organization_projects": probe.organization_projects, "unlinked_projects": probe.unlinked_projects,
            "probe_points": probe_cost,
        },
        "sampled": {
            "commits_per_pull_request": plan.commits_per_pull_request,
            "pull_requests_sampled": probe.sampled_pulls,
            "workflow_runs_per_repository": plan.workflow_runs_per_repository,
            "repositories_sampled_for_runs": plan.repositories_sampled_for_runs,
        },
        "estimate": {
            "graphql": { "requests": plan.graphql_requests, "points": plan.graphql_requests, "limit": graphql_limit },
            "core": { "requests": plan.rest_requests, "limit": core_limit },
            "quota_windows": plan.quota_windows,
        },
        // The same estimate per stage and route family: what `sync org --estimate` keeps
        // with its run and its calibration holds the actuals against.
        "by_family": plan.by_family.iter().map(|f| json!({
            "stage": f.stage, "family": f.family.name,
            "dimension": f.family.dimension.as_str(), "units": f.units,
        })).collect::<Vec<_>>(),
    });
    match serde_json::to_string_pretty(&report) {
        Ok(text) => outln!("{text}"),
        Err(e) => return Err(CliError::failed(&e)),
    }
    Ok(Outcome::Success)
}

/// Sends the probe (a few GraphQL points, and a REST request per sampled repository) and
/// runs the model: what `sync plan` prints and `sync org --estimate` stores with its run.
pub(super) async fn measure(env: &Env, name: &str) -> Result<Measured, CliError> {
    let credential = env.settings.credential.as_ref();
    let request = match ApiRequest::graphql(org::plan::PLAN_QUERY, &json!({ "login": name })) {
        Ok(r) => r
            .credential(credential)
            .route(headroom_core::route::SYNC_PLAN_GRAPHQL),
        Err(e) => return Err(CliError::failed(&e)),
    };
    let probe_cost = request.estimated_cost;
    let body: Value = env
        .client
        .send(request)
        .await
        .and_then(|r| r.json())
        .map_err(|e| CliError::failed(&e))?;
    let probe = org::plan::PlanProbe::read(&body, name).map_err(|e| CliError::failed(&e))?;
    // Workflow runs of the first few repositories (`total_count` of a one-item page).
    let mut run_counts = Vec::new();
    for repo in probe.run_sample() {
        let request = ApiRequest::get(format!("/repos/{name}/{repo}/actions/runs?per_page=1"))
            .credential(credential)
            .route(headroom_core::route::SYNC_PLAN_REST);
        match env
            .client
            .send(request)
            .await
            .and_then(|r| r.json::<Value>())
        {
            Ok(body) => run_counts.push(count(&body, &["total_count"])),
            Err(e) => return Err(CliError::failed(&e)),
        }
    }
    let key = env
        .client
        .identity(credential)
        .await
        .map_err(|e| CliError::failed(&e))?;
    let snapshot = env.client.governor().snapshot(&key).await.ok();
    let limit_of = |bucket: &str, default: u64| {
        snapshot
            .as_ref()
            .and_then(|s| s.buckets.iter().find(|b| b.state.bucket.as_str() == bucket))
            .and_then(|b| b.state.limit)
            .unwrap_or(default)
    };
    let (core_limit, graphql_limit) = (limit_of("core", 5_000), limit_of("graphql", 5_000));
    let plan = probe.estimate(&run_counts, core_limit, graphql_limit);
    Ok(Measured {
        probe,
        plan,
        probe_cost,
        limits: (core_limit, graphql_limit),
    })
}
