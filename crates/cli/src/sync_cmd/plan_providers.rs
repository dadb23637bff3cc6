//! `sync plan jira`, `sync plan linear` and `sync plan launchdarkly`: an estimate of a site's,
//! a workspace's or an account's sync per stage and route family, from a probe of the counts
//! each provider gives away cheaply (a project search's `total` and Jira's approximate issue
//! count; Linear's `issueCount` per team; LaunchDarkly's `totalCount`s and the audit log's new
//! pages), and the budgets it needs: Jira's per-endpoint bursts, Linear's requests and
//! complexity, LaunchDarkly's route windows.

use headroom_core::RouteFamily;
use headroom_core::governor::GovernorConfig;
use headroom_core::signal::{LINEAR_COMPLEXITY, LINEAR_REQUESTS};
use serde_json::json;

use super::{Env, SyncKind, env};
use crate::config::Settings;
use crate::outcome::{CliError, CommandResult, Outcome};

/// One stage's estimate on one route family.
pub(super) struct Row {
    pub(super) stage: &'static str,
    pub(super) family: RouteFamily,
    /// Requests.
    pub(super) requests: u64,
    /// Linear's complexity points (`None` on Jira, which counts requests).
    pub(super) points: Option<u64>,
}

/// What the probe measured, in words, and the model's estimate.
pub(super) struct Measured {
    /// `("projects", 3)`: what the probe counted, for the summary line.
    pub(super) counted: Vec<(&'static str, u64)>,
    pub(super) probe_requests: u64,
    pub(super) rows: Vec<Row>,
    pub(super) requests: u64,
    pub(super) points: Option<u64>,
    /// How the budget bounds the work, in words.
    pub(super) budget: String,
    /// What the estimate assumes, in sentences (LaunchDarkly's audit log has no count).
    pub(super) notes: Vec<String>,
}

impl Measured {
    /// The estimate in the units calibration holds it to: requests for Jira's REST families,
    /// complexity points for Linear's.
    pub(super) fn units(row: &Row) -> u64 {
        row.points.unwrap_or(row.requests)
    }
}

pub(super) async fn plan(
    settings: &Settings,
    kind: SyncKind,
    target: &str,
    json: bool,
) -> CommandResult {
    let env = env(settings, GovernorConfig::default().margin, kind).await?;
    let m = measure(&env, target).await?;
    if json {
        let report = json!({
            "provider": kind.as_str(),
            "target": target,
            "measured": m.counted.iter().map(|(k, v)| ((*k).to_owned(), json!(v)))
                .collect::<serde_json::Map<_, _>>(),
            "probe_requests": m.probe_requests,
            "estimate": { "requests": m.requests, "points": m.points, "budget": m.budget },
            "notes": m.notes,
            "by_family": m.rows.iter().map(|r| json!({
                "stage": r.stage, "family": r.family.name,
                "dimension": r.family.dimension.as_str(), "requests": r.requests,
                "points": r.points,
            })).collect::<Vec<_>>(),
        });
        let text = serde_json::to_string_pretty(&report).map_err(|e| CliError::failed(&e))?;
        outln!("{text}");
        return Ok(Outcome::Success);
    }
    outln!(
        "plan for {} {target} (measured with {} requests)",
        kind.root(),
        m.probe_requests
    );
    let counted: Vec<String> = m.counted.iter().map(|(k, v)| format!("{v} {k}")).collect();
    outln!("  {}", counted.join(" · "));
    match m.points {
        Some(points) => outln!(
            "  estimate: {} requests · {points} complexity points · {}",
            m.requests,
            m.budget
        ),
        None => outln!("  estimate: {} requests · {}", m.requests, m.budget),
    }
    for note in &m.notes {
        outln!("  note: {note}");
    }
    outln!(
        "  {:<18} {:<24} {:>9} {:>9}",
        "stage",
        "route family",
        "requests",
        "points"
    );
    for r in &m.rows {
        let points = r.points.map_or_else(|| "-".to_owned(), |p| p.to_string());
        outln!(
            "  {:<18} {:<24} {:>9} {:>9}",
            r.stage,
            r.family.name,
            r.requests,
            points
        );
    }
    Ok(Outcome::Success)
}

/// Sends the probe and runs the model: what `sync plan` prints and `--estimate` keeps.
pub(super) async fn measure(env: &Env, target: &str) -> Result<Measured, CliError> {
    match env.kind {
        SyncKind::Jira => jira(env, target).await,
        SyncKind::Linear => linear(env, target).await,
        SyncKind::LaunchDarkly => launchdarkly(env, target).await,
        other => Err(CliError::refused(&format!(
            "sync plan measures {} runs with its own command",
            other.as_str()
        ))),
    }
}

async fn jira(env: &Env, target: &str) -> Result<Measured, CliError> {
    use headroom_jira::sync::plan;
    let selection =
        headroom_jira::sync::Selection::parse(target).map_err(|e| CliError::refused(&e))?;
    let credential = env.settings.credential.as_ref();
    let probe = plan::probe(&env.client, credential, &selection)
        .await
        .map_err(|e| CliError::failed(&e))?;
    let estimate = plan::estimate(&probe);
    let rows: Vec<Row> = estimate
        .by_family
        .iter()
        .map(|f| Row {
            stage: f.stage,
            family: f.family,
            requests: f.units,
            points: None,
        })
        .collect();
    // Each endpoint is paced on its own, so the busiest one bounds the run.
    let rate = u64::from(env.settings.providers.jira_burst_per_sec.max(1));
    let busiest = rows.iter().map(|r| r.requests).max().unwrap_or(0);
    Ok(Measured {
        counted: vec![
            ("projects", probe.projects),
            ("issues", probe.issues),
            ("boards", probe.boards),
        ],
        probe_requests: probe.requests,
        requests: estimate.requests,
        points: None,
        budget: format!(
            "at {rate} requests a second per endpoint, at least {} s for the busiest family \
             ({busiest} requests)",
            busiest.div_ceil(rate)
        ),
        rows,
        notes: Vec::new(),
    })
}

async fn linear(env: &Env, target: &str) -> Result<Measured, CliError> {
    use headroom_linear::sync::plan;
    let selection =
        headroom_linear::sync::Selection::parse(target).map_err(|e| CliError::refused(&e))?;
    let credential = env.settings.credential.as_ref();
    let probe = plan::probe(&env.client, credential, &selection)
        .await
        .map_err(|e| CliError::failed(&e))?;
    let estimate = plan::estimate(&probe);
    // The buckets' sizes, as Linear's headers told them during the probe.
    let key = env
        .client
        .identity(credential)
        .await
        .map_err(|e| CliError::failed(&e))?;
    let snapshot = env.client.governor().snapshot(&key).await.ok();
    let limit = |name: &str| {
        snapshot.as_ref().and_then(|s| {
            s.buckets
                .iter()
                .find(|b| b.state.bucket.as_str() == name)
                .and_then(|b| b.state.limit)
        })
    };
    let (requests_limit, points_limit) = (limit(LINEAR_REQUESTS), limit(LINEAR_COMPLEXITY));
    let (request_periods, point_periods) = estimate.periods(requests_limit, points_limit);
    let period = |n: Option<u64>, limit: Option<u64>, what: &str| match (n, limit) {
        (Some(n), Some(l)) => format!(
            "{} of {l} {what}",
            headroom_core::words::counted(n, "bucket", "buckets")
        ),
        _ => format!("{what} bucket not reported"),
    };
    Ok(Measured {
        counted: vec![
            ("teams", probe.teams),
            ("issues", probe.issues),
            ("users", probe.users),
            ("projects", probe.projects),
        ],
        probe_requests: probe.requests,
        requests: estimate.requests,
        points: Some(estimate.points),
        budget: format!(
            "{}; {}",
            period(request_periods, requests_limit, "requests"),
            period(point_periods, points_limit, "points")
        ),
        rows: estimate
            .by_family
            .iter()
            .map(|f| Row {
                stage: f.stage,
                family: f.family,
                requests: f.units,
                points: Some(f.points),
            })
            .collect(),
        notes: Vec::new(),
    })
}

async fn launchdarkly(env: &Env, target: &str) -> Result<Measured, CliError> {
    use headroom_launchdarkly::sync::plan;
    let selection =
        headroom_launchdarkly::sync::Selection::parse(target).map_err(|e| CliError::refused(&e))?;
    let credential = env.settings.credential.as_ref();
    // From the newest stored audit entry, where the next run's audit log starts.
    let probe = plan::probe_from_store(&env.client, credential, &selection, env.store.as_ref())
        .await
        .map_err(|e| CliError::failed(&e))?;
    let estimate = plan::estimate(&probe);
    // Each route has its own window: the busiest route bounds the run, in windows of a limit
    // LaunchDarkly does not publish (the governor learns it from the readings).
    let busiest = estimate
        .by_family
        .iter()
        .max_by_key(|f| f.units)
        .map(|f| (f.family.name, f.units));
    Ok(Measured {
        counted: vec![
            ("projects", probe.visible_projects),
            ("environments", probe.environments()),
            ("flags", probe.counted_flags()),
            ("members", probe.members),
        ],
        probe_requests: probe.requests,
        requests: estimate.requests,
        points: None,
        budget: match busiest {
            Some((family, units)) => format!(
                "the busiest route family is {family} ({units} requests), paced by its \
                 route's ten-second windows"
            ),
            None => "nothing to ask".to_owned(),
        },
        rows: estimate
            .by_family
            .iter()
            .map(|f| Row {
                stage: f.stage,
                family: f.family,
                requests: f.units,
                points: None,
            })
            .collect(),
        notes: estimate.notes,
    })
}
