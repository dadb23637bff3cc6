//! A run's pace, from the run and its checkpoints (pure): the stages running (all of them,
//! not "stage 2 of 8" while six run), repository totals that do not move (the repository
//! list once the `repositories` stage has it, never the checkpoints created so far), the time
//! since it started and how much of it hibernating, and its end estimated from its plan
//! (`--estimate`) and what it spent so far ([`headroom_core::eta`]).

use headroom_core::Dimension;
use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_store::{Checkpoint, CheckpointStatus, SyncRun, SyncRunStatus};

use headroom_core::eta::{self, Eta, EtaFacts, Units};
use serde::Serialize;
use serde_json::Value;

/// The stage whose scopes list a run's repositories (a GitLab group's or a Jira site's
/// projects); none (`""`) for a Linear workspace or a LaunchDarkly account, whose stages keep
/// their own scopes.
fn source_of(run: &SyncRun) -> &'static str {
    match run.kind.as_str() {
        "gitlab" => headroom_gitlab::sync::PROJECT_SOURCE,
        "jira" => headroom_jira::sync::SOURCE,
        "linear" => headroom_linear::sync::SOURCE.unwrap_or(""),
        "launchdarkly" => headroom_launchdarkly::sync::SOURCE.unwrap_or(""),
        _ => headroom_github::org::REPOSITORY_SOURCE,
    }
}

/// What "no estimate" says, and how to get one.
pub const NO_ESTIMATE: &str = "no estimate — run with --estimate";

/// How a run is getting on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct RunPace {
    /// Every stage started and not done (while the run is not finished), in the run's order.
    pub stages_running: Vec<String>,
    /// The run's repositories, once its `repositories` stage has listed them all; a total
    /// that never changes afterwards (`None` before).
    pub repositories_total: Option<u64>,
    /// Per stage running over repositories: repositories done (never more than the total).
    pub repositories_done: Vec<StageRepositories>,
    /// Since the run started (to its end once finished), in milliseconds.
    pub elapsed_ms: i64,
    /// Of that, hibernating (no process holding it), in milliseconds.
    pub hibernating_ms: i64,
    /// The estimated end: `finished`, `no_estimate`, `measuring` (nothing spent yet to take
    /// a rate from) or `estimated`.
    pub eta: String,
    /// When it should end (with `estimated`).
    #[schema(value_type = Option<String>, format = DateTime)]
    pub ends_at: Option<Timestamp>,
    /// REST requests the plan says are left.
    pub rest_left: Option<u64>,
    /// GraphQL points the plan says are left.
    pub graphql_left: Option<u64>,
}

/// Repositories one stage has done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct StageRepositories {
    /// The stage.
    pub stage: String,
    /// Repositories it has finished.
    pub done: u64,
}

/// Repository scopes of one stage's checkpoints (the projects stage's organization scope is
/// not a repository).
fn repository_scopes<'a>(
    checkpoints: &'a [Checkpoint],
    stage: &'a str,
) -> impl Iterator<Item = &'a Checkpoint> + 'a {
    checkpoints
        .iter()
        .filter(move |c| c.stage == stage && is_repository(&c.scope))
}

/// A repository's scope, as the runner writes it: `owner/name#id` (a Jira project's is
/// `KEY#id`).
fn is_repository(scope: &str) -> bool {
    scope
        .rsplit_once('#')
        .is_some_and(|(name, id)| !name.is_empty() && id.parse::<u64>().is_ok())
}

fn stage_done(checkpoints: &[Checkpoint], stage: &str) -> bool {
    let mut of = checkpoints.iter().filter(|c| c.stage == stage).peekable();
    of.peek().is_some() && of.all(|c| c.status == CheckpointStatus::Done)
}

/// The run's repository count, once known: the repository list's checkpoints when its stage
/// is done, else the most any finished stage covered (a run without the list stage).
fn repositories_total(checkpoints: &[Checkpoint], source: &str) -> Option<u64> {
    if checkpoints.iter().any(|c| c.stage == source) {
        return stage_done(checkpoints, source)
            .then(|| repository_scopes(checkpoints, source).count() as u64);
    }
    let mut stages: Vec<&str> = checkpoints.iter().map(|c| c.stage.as_str()).collect();
    stages.dedup();
    stages
        .into_iter()
        .filter(|s| stage_done(checkpoints, s))
        .map(|s| repository_scopes(checkpoints, s).count() as u64)
        .filter(|n| *n > 0)
        .max()
}

/// Units per dimension in a summary's `estimates` (stage → rows of `{dimension, units}`).
fn estimated(summary: &Value) -> Option<Units> {
    let stages = summary.get("estimates")?.as_object()?;
    let mut units = Units::default();
    let mut any = false;
    for rows in stages.values() {
        for row in rows.as_array().map_or(&[][..], Vec::as_slice) {
            let n = row.get("units").and_then(Value::as_u64).unwrap_or(0);
            match row.get("dimension").and_then(Value::as_str) {
                Some(d) if d == Dimension::RestCore.as_str() => units.rest += n,
                Some(d) if d == Dimension::GraphqlCost.as_str() => units.graphql += n,
                _ => continue,
            }
            any = true;
        }
    }
    any.then_some(units)
}

/// What the summary's buckets say was spent: core requests, GraphQL points.
fn spent(summary: &Value) -> Units {
    let bucket = |name: &str, field: &str| {
        summary
            .get("buckets")
            .and_then(|b| b.get(name))
            .and_then(|b| b.get(field))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Units {
        rest: bucket("core", "requests"),
        graphql: bucket("graphql", "points"),
    }
}

fn ms(summary: Option<&Value>, key: &str) -> i64 {
    summary
        .and_then(|s| s.get(key))
        .and_then(Value::as_i64)
        .unwrap_or(0)
        .max(0)
}

/// The pace of `run` at `now`, its stages in `order`.
pub fn pace(
    run: &SyncRun,
    checkpoints: &[Checkpoint],
    order: &[String],
    now: Timestamp,
) -> RunPace {
    let finished = matches!(run.status, SyncRunStatus::Done | SyncRunStatus::Failed);
    let stages_running: Vec<String> = if finished {
        Vec::new()
    } else {
        order
            .iter()
            .filter(|s| checkpoints.iter().any(|c| &c.stage == *s))
            .filter(|s| !stage_done(checkpoints, s))
            .cloned()
            .collect()
    };
    let source = source_of(run);
    let repositories_total = repositories_total(checkpoints, source);
    let repositories_done = stages_running
        .iter()
        .filter(|s| s.as_str() != source || repositories_total.is_some())
        .filter_map(|s| {
            let done = repository_scopes(checkpoints, s)
                .filter(|c| c.status == CheckpointStatus::Done)
                .count() as u64;
            let any = repository_scopes(checkpoints, s).next().is_some();
            any.then(|| StageRepositories {
                stage: s.clone(),
                done: repositories_total.map_or(done, |t| done.min(t)),
            })
        })
        .collect();
    let started = run.started_at.unwrap_or(run.created_at);
    let end = if finished {
        run.finished_at.unwrap_or(run.updated_at)
    } else {
        now
    };
    let elapsed_ms = (end.duration_since(started).as_millis().max(0)).min(i64::MAX as i128) as i64;
    let summary = run.summary.as_ref();
    let mut hibernating_ms = ms(summary, "hibernating_ms");
    // The hibernation under way is not in the total yet.
    if !finished
        && let Some(since) = summary
            .and_then(|s| s.get("hibernating_since"))
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<Timestamp>().ok())
    {
        hibernating_ms += now
            .duration_since(since)
            .as_millis()
            .clamp(0, i64::MAX as i128 / 2) as i64;
    }
    let hibernating_ms = hibernating_ms.min(elapsed_ms);
    let facts = EtaFacts {
        finished,
        estimated: summary.and_then(estimated),
        spent: summary.map(spent).unwrap_or_default(),
        working: SignedDuration::from_millis(elapsed_ms - hibernating_ms),
        rest_quota: None,
        graphql_quota: None,
    };
    let (eta, ends_at, left) = match eta::eta(&facts) {
        Eta::Finished => ("finished", None, None),
        Eta::NoEstimate => ("no_estimate", None, None),
        Eta::Remaining { left, within, .. } => match within {
            Some(d) => ("estimated", Some(now + d), Some(left)),
            None => ("measuring", None, Some(left)),
        },
    };
    RunPace {
        stages_running,
        repositories_total,
        repositories_done,
        elapsed_ms,
        hibernating_ms,
        eta: eta.to_owned(),
        ends_at,
        rest_left: left.map(|l| l.rest),
        graphql_left: left.map(|l| l.graphql),
    }
}
