//! `sync plan org NAME`: an estimate of requests, points and quota windows, from a probe of a
//! few GraphQL points.

use headroom_core::governor::GovernorConfig;
use headroom_github::org;
use serde_json::json;

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

pub(super) async fn plan(settings: &Settings, name: &str, json: bool) -> CommandResult {
    let env = env(
        settings,
        GovernorConfig::default().margin,
        super::SyncKind::Org,
    )
    .await?;
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
            "head_commits_per_workflow_run": plan.heads_per_workflow_run,
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
    if !json {
        for line in plan_lines(name, &probe, &plan, probe_cost, core_limit, graphql_limit) {
            outln!("{line}");
        }
        return Ok(Outcome::Success);
    }
    match serde_json::to_string_pretty(&report) {
        Ok(text) => outln!("{text}"),
        Err(e) => return Err(CliError::failed(&e)),
    }
    Ok(Outcome::Success)
}

/// "1 point", "3 points".
fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `sync plan`'s text: what was measured, the estimate, and the per-stage table.
fn plan_lines(
    name: &str,
    probe: &org::plan::PlanProbe,
    plan: &org::plan::Plan,
    probe_cost: u32,
    core_limit: u64,
    graphql_limit: u64,
) -> Vec<String> {
    let mut out = vec![
        format!(
            "plan for org {name} (measured with {})",
            plural(u64::from(probe_cost), "GraphQL point", "GraphQL points")
        ),
        format!(
            "  {} · {} · {} · {} · {}",
            plural(probe.repositories, "repository", "repositories"),
            plural(probe.members, "member", "members"),
            plural(probe.teams, "team", "teams"),
            plural(plan.pull_requests, "pull request", "pull requests"),
            plural(probe.organization_projects, "project", "projects"),
        ),
        format!(
            "  sampled: {:.1} commits per pull request, {:.1} workflow runs per repository (of {}), \
             {:.2} head commits per run",
            plan.commits_per_pull_request,
            plan.workflow_runs_per_repository,
            plural(
                plan.repositories_sampled_for_runs as u64,
                "repository",
                "repositories"
            ),
            plan.heads_per_workflow_run,
        ),
        format!(
            "  estimate: GraphQL {} (limit {graphql_limit} points a window) · REST {} (limit \
             {core_limit} a window) · {}",
            plural(plan.graphql_requests, "request", "requests"),
            plural(plan.rest_requests, "request", "requests"),
            plural(plan.quota_windows, "quota window", "quota windows"),
        ),
        format!(
            "  {:<20} {:<24} {:<13} {:>9}",
            "stage", "route family", "dimension", "estimated"
        ),
    ];
    for f in &plan.by_family {
        out.push(format!(
            "  {:<20} {:<24} {:<13} {:>9}",
            f.stage,
            f.family.name,
            f.family.dimension.as_str(),
            f.units
        ));
    }
    out
}

/// Sends the probe (a few GraphQL points, and a REST request per sampled repository) and
/// runs the model: what `sync plan` prints and `sync org --estimate` stores with its run.
pub(super) async fn measure(env: &Env, name: &str) -> Result<Measured, CliError> {
    let credential = env.settings.credential.as_ref();
    let (probe, probe_cost, runs) = org::plan::probe(&env.client, credential, name)
        .await
        .map_err(|e| CliError::failed(&e))?;
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
    let plan = probe.estimate(&runs, core_limit, graphql_limit);
    Ok(Measured {
        probe,
        plan,
        probe_cost,
        limits: (core_limit, graphql_limit),
    })
}
