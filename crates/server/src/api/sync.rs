//! `GET /api/sync/runs` (newest first, keyset paged on the run id behind `before`, with a
//! `Link: rel="next"`) and `GET /api/sync/runs/{id}` (the run, its checkpoints and summary),
//! each run with its progress worked out from the checkpoints: which stage of how many, which
//! scope, which page, rows so far, next wake, why in one sentence — and, when no live process
//! resumes it, why and the command that will.

use std::collections::BTreeMap;

use crate::refusal::ApiPath;
use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use headroom_core::clock::Timestamp;
use headroom_github::org::names;
use headroom_store::{Checkpoint, CheckpointStatus, SyncRun, SyncRunStatus};
use serde::{Deserialize, Serialize};

use crate::ApiError;
use crate::api::DashboardState;
use crate::api::params;
use crate::dashboard::held::{self, Hold};
use crate::status::resume::{self, ResumeFacts, Unresumed};

mod pace;
pub use pace::{NO_ESTIMATE, RunPace, StageRepositories};

/// Runs per page when `limit` is absent.
pub const DEFAULT_LIMIT: u32 = 20;
/// The largest `limit` accepted.
pub const MAX_LIMIT: u32 = 100;

/// The stages of an organization sync, in order.
pub const ORG_STAGES: [&str; 8] = [
    names::ORG,
    names::REPOSITORIES,
    names::PROJECTS,
    names::ISSUE_COMMENTS,
    names::PULL_REQUESTS,
    names::COMMIT_FILES,
    names::WORKFLOW_RUNS,
    names::BRANCHES,
];

/// Where a run stands, from its checkpoints.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct RunProgress {
    /// Stages the run covers.
    pub stages_total: u64,
    /// Of those, done.
    pub stages_done: u64,
    /// The stage being worked on or waiting (none when all are done or none started).
    pub current_stage: Option<String>,
    /// Its place in the order, from 1.
    pub stage_number: Option<u64>,
    /// Scopes (repositories) of the current stage that are done.
    pub scopes_done: u64,
    /// The run's repositories once listed (0 before): the same for every stage, never the
    /// checkpoints created so far.
    pub scopes_total: u64,
    /// Pages the current stage's open scope has committed.
    pub page: u64,
    /// Rows written, every stage together.
    pub rows: u64,
    /// When the run is to be woken.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub next_wake: Option<Timestamp>,
    /// Why its stages wait, other than the governor's holds: the deferred checkpoints'
    /// reasons, each once.
    pub waiting_because: Vec<String>,
    /// The governor's holds its deferred checkpoints recorded, one per bucket (the latest).
    pub holds: Vec<Hold>,
    /// Why it waits, in one sentence (its holds and other reasons, each once; UTC times).
    pub why: Option<String>,
    /// Set when no live process resumes it: why, and the command that will.
    pub unresumed: Option<Unresumed>,
    /// What it spent per bucket, from its summary.
    pub spent: Vec<BucketSpend>,
    /// Fields GitHub refused in answers the run kept, from its summary.
    pub refused: Vec<RefusedField>,
    /// The run's calibration: estimated units beside actual requests and points per route
    /// family, from its summary (empty before its first stage stops).
    pub calibration: Vec<CalibrationRow>,
    /// The stages running, stable totals, elapsed time and the estimated end.
    pub pace: RunPace,
}

/// One route family and dimension of a run's (or a stage's) calibration, as the sync runner
/// stored it: raw numbers side by side, never blended.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default)]
pub struct CalibrationRow {
    /// The route family (docs/ROUTE-FAMILIES.md).
    pub family: String,
    /// Its dimension (`rest_core`, `graphql_cost`, …).
    pub dimension: String,
    /// Estimated units before dispatch (0 without an estimate).
    pub estimated_units: u64,
    /// Requests answered.
    pub actual_requests: u64,
    /// Points spent (GraphQL points as reported; one per REST request).
    pub actual_points: u64,
    /// Actual requests over estimated units, where the two are comparable.
    pub ratio: Option<f64>,
    /// More requests than estimated, or traffic with no estimate.
    pub underestimated: bool,
    /// Whether a request count is comparable with the estimate.
    pub underestimation_assessable: bool,
    /// Why not, when it is not.
    pub underestimation_assessable_reason: Option<String>,
    /// Traffic on a family with no estimate.
    pub unbudgeted_actual: bool,
    /// The stage or run had not finished: a ratio ≤ 1 is not an over-estimate.
    pub incomplete: bool,
}

/// The run's calibration rows and each stage's, from a stored run summary (`calibration.run`
/// and `calibration.stages`); another shape yields nothing.
fn calibration_of(
    summary: Option<&serde_json::Value>,
) -> (Vec<CalibrationRow>, BTreeMap<String, Vec<CalibrationRow>>) {
    let part = |key: &str| {
        summary
            .and_then(|s| s.get("calibration"))
            .and_then(|c| c.get(key))
            .cloned()
    };
    (
        part("run")
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default(),
        part("stages")
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default(),
    )
}

/// What a run spent on one bucket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BucketSpend {
    /// The bucket (`core`, `graphql`, …).
    #[serde(default)]
    pub bucket: String,
    /// Requests answered.
    #[serde(default)]
    pub requests: u64,
    /// Units spent (GraphQL points as reported; one per REST request).
    #[serde(default)]
    pub points: u64,
    /// Waits the run met on it.
    #[serde(default)]
    pub waits: u64,
}

/// A field GitHub refused while answering the rest of a query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RefusedField {
    /// The stage that asked.
    pub stage: String,
    /// Where in the answer (`organization.membersWithRole`).
    pub path: String,
    /// GitHub's error type (`FORBIDDEN`, `NOT_FOUND`, …).
    pub kind: String,
}

/// The per-bucket spend and refused fields of a stored run summary (the sync runner's
/// `RunSummary` JSON: `buckets` by name, `refused` as a list); a summary of another shape
/// yields nothing rather than an error.
fn summary_parts(summary: Option<&serde_json::Value>) -> (Vec<BucketSpend>, Vec<RefusedField>) {
    let Some(summary) = summary else {
        return (Vec::new(), Vec::new());
    };
    let spent = summary
        .get("buckets")
        .and_then(serde_json::Value::as_object)
        .map(|buckets| {
            buckets
                .iter()
                .filter_map(|(name, tally)| {
                    let mut spend: BucketSpend = serde_json::from_value(tally.clone()).ok()?;
                    spend.bucket.clone_from(name);
                    Some(spend)
                })
                .collect()
        })
        .unwrap_or_default();
    let refused = summary
        .get("refused")
        .and_then(|r| serde_json::from_value(r.clone()).ok())
        .unwrap_or_default();
    (spent, refused)
}

/// A run with its progress.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct RunView {
    /// The run as stored.
    #[serde(flatten)]
    pub run: SyncRun,
    /// Where it stands.
    pub progress: RunProgress,
}

/// The stage order of `run`: what it asked for, its kind's stages, or the order the
/// checkpoints name them in.
fn stage_order(run: &SyncRun, checkpoints: &[Checkpoint]) -> Vec<String> {
    if let Some(stages) = &run.requested_stages {
        return stages.clone();
    }
    if run.kind == "org" {
        return ORG_STAGES.iter().map(|s| (*s).to_owned()).collect();
    }
    let declared = match run.kind.as_str() {
        "gitlab" => Some(headroom_gitlab::sync::declarations()),
        "jira" => Some(headroom_jira::sync::declarations()),
        "linear" => Some(headroom_linear::sync::declarations()),
        "launchdarkly" => Some(headroom_launchdarkly::sync::declarations()),
        _ => None,
    };
    if let Some(stages) = declared {
        return stages.iter().map(|d| d.name.to_owned()).collect();
    }
    let mut order: Vec<String> = Vec::new();
    for c in checkpoints {
        if !order.contains(&c.stage) {
            order.push(c.stage.clone());
        }
    }
    order
}

fn of_stage<'a>(
    checkpoints: &'a [Checkpoint],
    stage: &'a str,
) -> impl Iterator<Item = &'a Checkpoint> + 'a {
    checkpoints.iter().filter(move |c| c.stage == stage)
}

/// Works out a run's progress at `now`; pure. Whether anyone resumes it is left to
/// [`resume`] (it needs more than the run).
pub fn progress(run: &SyncRun, checkpoints: &[Checkpoint], now: Timestamp) -> RunProgress {
    let order = stage_order(run, checkpoints);
    let stage_done = |stage: &str| {
        of_stage(checkpoints, stage).next().is_some()
            && of_stage(checkpoints, stage).all(|c| c.status == CheckpointStatus::Done)
    };
    let stages_done = order.iter().filter(|s| stage_done(s)).count() as u64;
    let finished = matches!(run.status, SyncRunStatus::Done | SyncRunStatus::Failed);
    let current = order
        .iter()
        .position(|s| !stage_done(s) && of_stage(checkpoints, s).next().is_some())
        .filter(|_| !finished);
    let pace = pace::pace(run, checkpoints, &order, now);
    let (scopes_done, scopes_total, page) = match current {
        Some(i) => {
            let stage = &order[i];
            let open = of_stage(checkpoints, stage)
                .filter(|c| c.status != CheckpointStatus::Done)
                .max_by_key(|c| c.updated_at);
            let done = pace
                .repositories_done
                .iter()
                .find(|r| &r.stage == stage)
                .map_or(0, |r| r.done);
            (
                done,
                pace.repositories_total.unwrap_or(0),
                open.map(|c| c.pages_done).unwrap_or(0),
            )
        }
        None => (0, 0, 0),
    };
    let (spent, refused) = summary_parts(run.summary.as_ref());
    let reasons = if finished {
        held::Reasons::default()
    } else {
        let details = held::wait_details(run, checkpoints);
        held::reasons(details.iter().map(String::as_str))
    };
    let why = held::run_why(&reasons);
    RunProgress {
        stages_total: order.len() as u64,
        stages_done,
        current_stage: current.map(|i| order[i].clone()),
        stage_number: current.map(|i| i as u64 + 1),
        scopes_done,
        scopes_total,
        page,
        rows: checkpoints.iter().map(|c| c.rows_written).sum(),
        next_wake: run.not_before.filter(|_| !finished),
        why: (!why.is_empty()).then(|| why.plain(now)),
        waiting_because: reasons.other,
        holds: reasons.holds,
        unresumed: None,
        spent,
        refused,
        calibration: calibration_of(run.summary.as_ref()).0,
        pace,
    }
}

/// Reads a run's view.
pub async fn view(
    state: &DashboardState,
    run: SyncRun,
    now: Timestamp,
) -> Result<RunView, ApiError> {
    let checkpoints = state.store.checkpoints(run.id).await?;
    let progress = progress(&run, &checkpoints, now);
    Ok(RunView { run, progress })
}

/// Sync runs read to find one a worker drives now.
const RUNS_SCANNED: u32 = 200;

/// Says, on each run nobody resumes, why and the command that will ([`resume::who_resumes`]).
/// Reads more only when a run is overdue and unclaimed: which run a live worker drives, and
/// how many live processes spend the run's identity. This server knows no process's
/// credential: a process that could take the run would have claimed it by now.
pub async fn resume(
    state: &DashboardState,
    views: &mut [RunView],
    now: Timestamp,
) -> Result<(), ApiError> {
    fn lone(run: &SyncRun, now: Timestamp) -> ResumeFacts<'_> {
        ResumeFacts {
            run,
            now,
            resumers: &[],
            worker_busy_with: None,
            live_on_identity: 0,
        }
    }
    if !views
        .iter()
        .any(|v| resume::who_resumes(&lone(&v.run, now)).is_some())
    {
        return Ok(());
    }
    let runs = state.history.sync_runs_page(None, RUNS_SCANNED).await?;
    let busy = runs
        .iter()
        .find(|r| r.status == SyncRunStatus::Running && resume::claimed(r, now))
        .map(|r| r.id);
    let live = state
        .history
        .latest_quota_readings(now - state.settings.live_window)
        .await?;
    for view in views.iter_mut() {
        let run = &view.run;
        let live_on_identity = live
            .iter()
            .filter(|b| {
                b.latest.reading.host == run.host && b.latest.reading.subject == run.subject
            })
            .map(|b| b.live_processes)
            .max()
            .unwrap_or(0);
        view.progress.unresumed = resume::who_resumes(&ResumeFacts {
            worker_busy_with: busy.filter(|id| *id != run.id),
            live_on_identity,
            ..lone(run, now)
        });
    }
    Ok(())
}

/// The list query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunsQuery {
    /// Runs wanted.
    pub limit: u32,
    /// Runs older than this id.
    pub before: Option<i64>,
}

/// Parses `limit` (1–100) and `before` (a run id).
pub fn parse_runs(raw: Option<&str>) -> Result<RunsQuery, ApiError> {
    let mut query = RunsQuery {
        limit: DEFAULT_LIMIT,
        before: None,
    };
    for (name, value) in params::pairs(raw, &["limit", "before"])? {
        match name.as_str() {
            "limit" => query.limit = params::limit("limit", &value, MAX_LIMIT)?,
            _ => query.before = Some(params::id("before", &value)?),
        }
    }
    Ok(query)
}

/// One page of runs.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct RunsPage {
    /// Newest first.
    pub runs: Vec<RunView>,
    /// The next page's URL, when there may be one.
    pub next: Option<String>,
}

/// Reads a page of runs.
pub async fn page(state: &DashboardState, query: RunsQuery) -> Result<RunsPage, ApiError> {
    let runs = state
        .history
        .sync_runs_page(query.before, query.limit)
        .await?;
    let next = (runs.len() as u64 == u64::from(query.limit))
        .then(|| runs.last().map(|r| r.id))
        .flatten()
        .map(|id| format!("/api/sync/runs?limit={}&before={id}", query.limit));
    let now = state.clock.now();
    let mut views = Vec::with_capacity(runs.len());
    for run in runs {
        views.push(view(state, run, now).await?);
    }
    resume(state, &mut views, now).await?;
    Ok(RunsPage { runs: views, next })
}

/// `GET /api/sync/runs?limit=&before=`.
#[utoipa::path(
    get,
    path = "/api/sync/runs",
    operation_id = "list_sync_runs",
    tag = "sync",
    params(
        ("limit" = Option<u32>, Query, description = "Runs per page, 1 to 100 (20 when absent)"),
        ("before" = Option<i64>, Query, description = "Only runs with a smaller id (the keyset cursor of `next`)"),
    ),
    responses(
        (status = 200, description = "Sync runs, newest first, each with its progress; a `Link: rel=\"next\"` header when more exist", body = RunsPage),
        (status = 400, description = "A parameter was refused (unknown, repeated or malformed)", body = crate::ErrorBody),
        (status = 503, description = "The database did not answer", body = crate::ErrorBody),
    )
)]
pub async fn list(
    State(state): State<DashboardState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let query = parse_runs(raw.as_deref())?;
    let page = page(&state, query).await?;
    let link = page
        .next
        .as_ref()
        .and_then(|next| HeaderValue::from_str(&format!("<{next}>; rel=\"next\"")).ok());
    let mut response = Json(page).into_response();
    if let Some(link) = link {
        response.headers_mut().insert(header::LINK, link);
    }
    Ok(response)
}

/// A run in full.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct RunDetail {
    /// The run and its progress.
    #[serde(flatten)]
    pub view: RunView,
    /// Every checkpoint, by stage then scope.
    pub checkpoints: Vec<Checkpoint>,
    /// Each stage's calibration rows, by stage name (the run's are in `progress`).
    pub stage_calibration: BTreeMap<String, Vec<CalibrationRow>>,
}

/// `GET /api/sync/runs/{id}`.
#[utoipa::path(
    get,
    path = "/api/sync/runs/{id}",
    operation_id = "sync_run",
    tag = "sync",
    params(("id" = i64, Path, description = "The run id")),
    responses(
        (status = 200, description = "The run, its progress and its checkpoints", body = RunDetail),
        (status = 404, description = "No such run", body = crate::ErrorBody),
        (status = 400, description = "A parameter was refused (unknown, repeated or malformed), or the id in the path does not decode", body = crate::ErrorBody),
        (status = 503, description = "The database did not answer", body = crate::ErrorBody),
    )
)]
pub async fn show(
    State(state): State<DashboardState>,
    ApiPath(id): ApiPath<String>,
    RawQuery(raw): RawQuery,
) -> Result<Json<RunDetail>, ApiError> {
    params::pairs(raw.as_deref(), &[])?;
    let id = params::id("id", &id)?;
    let run = state
        .store
        .sync_run(id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no sync run {id}")))?;
    let checkpoints = state.store.checkpoints(id).await?;
    let now = state.clock.now();
    let progress = progress(&run, &checkpoints, now);
    let stage_calibration = calibration_of(run.summary.as_ref()).1;
    let mut views = [RunView { run, progress }];
    resume(&state, &mut views, now).await?;
    let [view] = views;
    Ok(Json(RunDetail {
        view,
        checkpoints,
        stage_calibration,
    }))
}

#[cfg(test)]
pub(crate) mod tests;
