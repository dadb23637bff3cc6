//! `sync plan gitlab GROUP`: an estimate of a group sync's requests per stage and route family,
//! and of the throttle windows they need, from one-object pages whose `x-total` counts them.

use headroom_core::governor::GovernorConfig;
use headroom_gitlab::sync::plan::{self, GroupPlan, GroupProbe};
use serde_json::json;

use super::{Env, SyncKind, env};
use crate::config::Settings;
use crate::outcome::{CliError, CommandResult, Outcome};

/// What the probe measured, the model's estimate, and the throttle's limit a window.
pub(super) struct Measured {
    pub(super) probe: GroupProbe,
    pub(super) plan: GroupPlan,
    pub(super) limit: Option<u64>,
}

pub(super) async fn plan(settings: &Settings, group: &str, json: bool) -> CommandResult {
    let env = env(settings, GovernorConfig::default().margin, SyncKind::Gitlab).await?;
    let Measured { probe, plan, limit } = measure(&env, group).await?;
    if json {
        let report = json!({
            "group": group,
            "measured": {
                "subgroups": probe.subgroups, "projects": probe.projects,
                "sampled_projects": probe.samples.len(), "probe_requests": probe.requests,
            },
            "estimate": {
                "requests": plan.requests, "limit": limit, "quota_windows": plan.quota_windows,
            },
            "by_family": plan.by_family.iter().map(|f| json!({
                "stage": f.stage, "family": f.family.name,
                "dimension": f.family.dimension.as_str(), "units": f.units,
            })).collect::<Vec<_>>(),
        });
        let text = serde_json::to_string_pretty(&report).map_err(|e| CliError::failed(&e))?;
        outln!("{text}");
        return Ok(Outcome::Success);
    }
    outln!(
        "plan for group {group} (measured with {} requests)",
        probe.requests
    );
    outln!(
        "  {} subgroups · {} projects · {} sampled",
        probe.subgroups,
        probe.projects,
        probe.samples.len()
    );
    let windows = match (plan.quota_windows, limit) {
        (Some(w), Some(l)) => format!(
            "{} of {l} requests",
            headroom_core::words::counted(w, "quota window", "quota windows")
        ),
        _ => "no throttle reported (windows unknown)".to_owned(),
    };
    outln!("  estimate: {} requests · {windows}", plan.requests);
    outln!(
        "  {:<16} {:<32} {:>9}",
        "stage",
        "route family",
        "estimated"
    );
    for f in &plan.by_family {
        outln!("  {:<16} {:<32} {:>9}", f.stage, f.family.name, f.units);
    }
    Ok(Outcome::Success)
}

/// Sends the probe and runs the model: what `sync plan gitlab` prints and `sync gitlab
/// --estimate` keeps with its run.
pub(super) async fn measure(env: &Env, group: &str) -> Result<Measured, CliError> {
    let credential = env.settings.credential.as_ref();
    let probe = plan::probe(&env.client, credential, group)
        .await
        .map_err(|e| CliError::failed(&e))?;
    let key = env
        .client
        .identity(credential)
        .await
        .map_err(|e| CliError::failed(&e))?;
    // The throttle's limit as GitLab's headers told it during the probe.
    let limit = env
        .client
        .governor()
        .snapshot(&key)
        .await
        .ok()
        .and_then(|s| {
            s.buckets
                .iter()
                .find(|b| b.state.bucket.as_str() == "core")
                .and_then(|b| b.state.limit)
        });
    let plan = plan::estimate(&probe, limit);
    Ok(Measured { probe, plan, limit })
}
