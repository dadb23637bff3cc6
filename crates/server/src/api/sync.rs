//! `GET /api/sync/runs` (newest first, keyset paged on the run id behind `before`, with a
//! `Link: rel="next"`) and `GET /api/sync/runs/{id}` (the run, its checkpoints and summary),
//! each run with its progress worked out from the checkpoints: which stage of how many, which
//! scope, which page, rows so far, next wake and why.

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
    /// Scopes of the current stage seen so far.
    pub scopes_total: u64,
    /// Pages the current stage's open scope has committed.
    pub page: u64,
    /// Rows written, every stage together.
    pub rows: u64,
    /// When the run is to be woken.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub next_wake: Option<Timestamp>,
    /// Why its stages wait (the deferred checkpoints' reasons, each once).
    pub waiting_because: Vec<String>,
    /// What it spent per bucket, from its summary.
    pub spent: Vec<BucketSpend>,
    /// Fields GitHub refused in answers the run kept, from its summary.
    pub refused: Vec<RefusedField>,
    /// The run's calibration: estimated units beside actual requests and points per route
    /// family, from its summary (empty before its first stage stops).
    pub calibration: Vec<CalibrationRow>,
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

/// The stage order of `run`: what it asked for, the organization stages, or the order the
/// checkpoints name them in.
fn stage_order(run: &SyncRun, checkpoints: &[Checkpoint]) -> Vec<String> {
    if let Some(stages) = &run.requested_stages {
        return stages.clone();
    }
    if run.kind == "org" {
        return ORG_STAGES.iter().map(|s| (*s).to_owned()).collect();
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

/// Works out a run's progress; pure.
pub fn progress(run: &SyncRun, checkpoints: &[Checkpoint]) -> RunProgress {
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
    let (scopes_done, scopes_total, page) = match current {
        Some(i) => {
            let stage = &order[i];
            let scoped: Vec<&Checkpoint> = of_stage(checkpoints, stage)
                .filter(|c| !c.scope.is_empty())
                .collect();
            let open = of_stage(checkpoints, stage)
                .filter(|c| c.status != CheckpointStatus::Done)
                .max_by_key(|c| c.updated_at);
            (
                scoped
                    .iter()
                    .filter(|c| c.status == CheckpointStatus::Done)
                    .count() as u64,
                scoped.len() as u64,
                open.map(|c| c.pages_done).unwrap_or(0),
            )
        }
        None => (0, 0, 0),
    };
    let (spent, refused) = summary_parts(run.summary.as_ref());
    let mut waiting_because: Vec<String> = Vec::new();
    if !finished {
        for c in checkpoints {
            if c.status == CheckpointStatus::Deferred
                && let Some(detail) = &c.detail
                && !waiting_because.contains(detail)
            {
                waiting_because.push(detail.clone());
            }
        }
    }
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
        waiting_because,
        spent,
        refused,
        calibration: calibration_of(run.summary.as_ref()).0,
    }
}

/// Reads a run's view.
pub async fn view(state: &DashboardState, run: SyncRun) -> Result<RunView, ApiError> {
    let checkpoints = state.store.checkpoints(run.id).await?;
    let progress = progress(&run, &checkpoints);
    Ok(RunView { run, progress })
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
    let mut views = Vec::with_capacity(runs.len());
    for run in runs {
        views.push(view(state, run).await?);
    }
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
    let progress = progress(&run, &checkpoints);
    let stage_calibration = calibration_of(run.summary.as_ref()).1;
    Ok(Json(RunDetail {
        view: RunView { run, progress },
        checkpoints,
        stage_calibration,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_gives_its_calibration_rows_for_the_run_and_each_stage() {
        let row = serde_json::json!({
            "family": "check_runs", "dimension": "rest_core", "estimated_units": 2,
            "actual_requests": 5, "actual_points": 5, "ratio": 2.5, "underestimated": true,
            "underestimation_assessable": true, "underestimation_assessable_reason": null,
            "unbudgeted_actual": false, "incomplete": false
        });
        let summary = serde_json::json!({
            "calibration": { "run": [row.clone()], "stages": { "workflow_runs": [row] } }
        });
        let (run, stages) = calibration_of(Some(&summary));
        assert_eq!(run.len(), 1);
        assert_eq!(
            (run[0].family.as_str(), run[0].actual_requests, run[0].ratio),
            ("check_runs", 5, Some(2.5))
        );
        assert_eq!(stages.get("workflow_runs"), Some(&run));
        // A summary from before calibration, or of another shape: nothing, never an error.
        assert_eq!(
            calibration_of(Some(&serde_json::json!({"buckets": {}}))).0,
            vec![]
        );
        assert!(calibration_of(None).1.is_empty());
    }

    #[test]
    fn a_summary_gives_its_spend_per_bucket_and_its_refused_fields() {
        let summary = serde_json::json!({
            "buckets": {
                "core": {"requests": 112, "points": 112, "min_remaining": 0, "waits": 2},
                "graphql": {"requests": 9, "points": 340, "min_remaining": 4660, "waits": 0}
            },
            "refused": [{"stage": "org", "path": "organization.membersWithRole",
                         "kind": "FORBIDDEN", "message": "Resource not accessible"}]
        });
        let (spent, refused) = summary_parts(Some(&summary));
        assert_eq!(spent.len(), 2);
        assert_eq!(
            (spent[0].bucket.as_str(), spent[0].requests, spent[0].waits),
            ("core", 112, 2)
        );
        assert_eq!(
            (spent[1].bucket.as_str(), spent[1].points),
            ("graphql", 340)
        );
        assert_eq!(refused[0].path, "organization.membersWithRole");
        // A summary of another shape yields nothing, never an error.
        assert_eq!(
            summary_parts(Some(&serde_json::json!([1, 2]))),
            (vec![], vec![])
        );
        assert_eq!(summary_parts(None), (vec![], vec![]));
    }
    use headroom_core::clock::SignedDuration;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).expect("valid")
    }

    pub(crate) fn run(status: SyncRunStatus) -> SyncRun {
        SyncRun {
            id: 7,
            kind: "org".into(),
            target: "acme".into(),
            host: "api.github.com".into(),
            subject: "user:alice".into(),
            status,
            requested_stages: None,
            not_before: Some(t(900)),
            deferral_count: 1,
            first_deferred_at: None,
            total_wait: SignedDuration::ZERO,
            failure_reason: None,
            summary: None,
            claimed_by: None,
            claim_expires_at: None,
            created_at: t(0),
            started_at: Some(t(0)),
            finished_at: None,
            updated_at: t(10),
            credential: Default::default(),
        }
    }

    fn checkpoint(stage: &str, scope: &str, status: CheckpointStatus, pages: u64) -> Checkpoint {
        Checkpoint {
            sync_run_id: 7,
            stage: stage.into(),
            scope: scope.into(),
            status,
            page_cursor: None,
            pages_done: pages,
            rows_written: pages * 10,
            detail: (status == CheckpointStatus::Deferred)
                .then(|| "REST exhausted until 14:32".to_owned()),
            updated_at: t(pages as i64),
        }
    }

    #[test]
    fn progress_names_the_stage_the_scope_and_the_page() {
        let checkpoints = vec![
            checkpoint("org", "", CheckpointStatus::Done, 1),
            checkpoint("repositories", "", CheckpointStatus::Done, 2),
            checkpoint("projects", "", CheckpointStatus::Done, 1),
            checkpoint("issue_comments", "", CheckpointStatus::Done, 1),
            checkpoint("pull_requests", "acme/a", CheckpointStatus::Done, 3),
            checkpoint("pull_requests", "acme/b", CheckpointStatus::Deferred, 12),
            checkpoint("pull_requests", "acme/c", CheckpointStatus::Pending, 0),
        ];
        let p = progress(&run(SyncRunStatus::Hibernating), &checkpoints);
        assert_eq!((p.stages_total, p.stages_done), (8, 4));
        assert_eq!(p.current_stage.as_deref(), Some("pull_requests"));
        assert_eq!(p.stage_number, Some(5));
        assert_eq!((p.scopes_done, p.scopes_total, p.page), (1, 3, 12));
        assert_eq!(p.rows, 200);
        assert_eq!(p.next_wake, Some(t(900)));
        assert_eq!(p.waiting_because, vec!["REST exhausted until 14:32"]);

        let done = progress(&run(SyncRunStatus::Done), &checkpoints);
        assert_eq!((done.current_stage, done.next_wake), (None, None));
        assert!(done.waiting_because.is_empty());
    }

    #[test]
    fn the_runs_query_is_strict() {
        assert_eq!(
            parse_runs(Some("limit=5&before=9")).ok(),
            Some(RunsQuery {
                limit: 5,
                before: Some(9)
            })
        );
        assert!(parse_runs(Some("limit=0")).is_err());
        assert!(parse_runs(Some("before=-1")).is_err());
        assert!(parse_runs(Some("cursor=x")).is_err());
    }
}
