//! Stage 7, `workflow_runs` (REST): runs, their jobs, and check runs.

use super::connection::*;

// ----------------------------------------------------------------------- 7. workflow runs

/// Where one repository of the workflow-runs stage stands, stored as its cursor.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct RunsCursor {
    /// The next page of runs, if any.
    page: Option<u32>,
    /// Runs of the stored pages whose jobs are still to fetch.
    jobs: Vec<i64>,
    /// Head commits whose check runs are still to fetch.
    shas: Vec<String>,
    /// When this repository's collection started: its watermark once finished.
    #[serde(default)]
    started_ms: Option<i64>,
    /// Runs created before this were collected by an earlier sync (runs come newest first).
    #[serde(default)]
    since: Option<String>,
}

/// Stage 7: Workflow runs, their jobs, and the check runs of their head commits (REST). Each
/// repository's cursor holds the next page of runs and the jobs and check runs still owed
/// for the pages already stored.
#[derive(Debug)]
pub struct WorkflowRunsStage {
    decl: StageDecl,
}

impl WorkflowRunsStage {
    /// The stage.
    pub fn new(decl: StageDecl) -> Self {
        Self { decl }
    }
}

/// What one step of a repository's collection produced.
enum RunsStep {
    /// Rows to store with the advanced cursor.
    Rows(Vec<Record>),
    /// The cursor moved without rows (runs unchanged since the last collection).
    Skip,
    /// The repository is gone: its scope is already finished.
    Gone,
    /// Nothing is owed: the repository is finished.
    Finished,
}

impl WorkflowRunsStage {
    async fn one_repository(&self, ctx: &StageCtx<'_>, repo: &RepoScope) -> Result<(), StageError> {
        let scope = repo.scope();
        let Some(stored) = repo_cursor(ctx, &scope).await? else {
            return Ok(());
        };
        let mut cursor = open_cursor(ctx, repo, stored).await?;
        let started = cursor
            .started_ms
            .and_then(|ms| Timestamp::from_millisecond(ms).ok())
            .unwrap_or_else(|| ctx.now());
        // The first page of runs is asked for with the ETag of the last collection of this
        // repository that finished: unchanged, GitHub answers 304, which an authorized request
        // does not pay for. The new ETag is remembered only when this repository is finished
        // (a collection stopped midway asks again in full next time).
        let mut validator: Option<(ApiRequest, ApiResponse)> = None;
        loop {
            let now = ctx.now();
            let step = if !cursor.jobs.is_empty() || !cursor.shas.is_empty() {
                cursor = owed_side_by_side(ctx, repo, cursor).await?;
                continue;
            } else if let Some(page) = cursor.page {
                runs_page(ctx, repo, &mut cursor, page, &mut validator, now).await?
            } else {
                RunsStep::Finished
            };
            let records = match step {
                RunsStep::Rows(records) => records,
                RunsStep::Skip => continue,
                RunsStep::Gone => return Ok(()),
                RunsStep::Finished => {
                    ctx.write_page_marked(
                        &scope,
                        &[],
                        None,
                        true,
                        Some((repo.github_id, Watermark::WorkflowRuns, started)),
                    )
                    .await?;
                    if let Some((request, response)) = validator {
                        ctx.remember_etag(request, &response).await;
                    }
                    return Ok(());
                }
            };
            let text =
                serde_json::to_string(&cursor).map_err(|e| StageError::Permanent(e.to_string()))?;
            ctx.write_page(&scope, &records, Some(text), false, None)
                .await?;
        }
    }
}

/// A request the stored pages owe: a run's jobs, or a head commit's check runs.
enum Owed {
    Jobs(i64),
    Checks(String),
}

/// Fetches everything `cursor` owes side by side (they follow no cursor of their own), each
/// answer stored with the cursor that no longer owes it, so a stop loses only the requests in
/// flight. Returns the cursor with nothing owed, or the first error (after what the others
/// fetched is stored).
async fn owed_side_by_side(
    ctx: &StageCtx<'_>,
    repo: &RepoScope,
    cursor: RunsCursor,
) -> Result<RunsCursor, StageError> {
    let owed: Vec<Owed> = cursor
        .jobs
        .iter()
        .copied()
        .map(Owed::Jobs)
        .chain(cursor.shas.iter().cloned().map(Owed::Checks))
        .collect();
    let scope = repo.scope();
    // One writer at a time per repository: each write carries the whole cursor.
    let shared = tokio::sync::Mutex::new(cursor);
    let result = ctx
        .for_each_request(owed, |item| {
            let (scope, shared) = (&scope, &shared);
            async move {
                let now = ctx.now();
                let rows = match &item {
                    Owed::Jobs(run) => jobs_of(ctx, repo, *run, now).await?,
                    Owed::Checks(sha) => checks_of(ctx, repo, sha, now).await?,
                };
                let mut cursor = shared.lock().await;
                // The shared cursor stops owing this item only once the write stored it: a
                // failed write (the database restarting) must not let a sibling's later
                // write commit a cursor that forgot an answer nobody stored.
                let mut next = cursor.clone();
                match item {
                    Owed::Jobs(run) => next.jobs.retain(|j| *j != run),
                    Owed::Checks(sha) => next.shas.retain(|s| *s != sha),
                }
                let text = serde_json::to_string(&next)
                    .map_err(|e| StageError::Permanent(e.to_string()))?;
                ctx.write_page(scope, &rows, Some(text), false, None)
                    .await?;
                *cursor = next;
                Ok(())
            }
        })
        .await;
    result.map(|()| shared.into_inner())
}

/// The stored cursor, or a fresh one that starts at page 1 and stops at the runs an earlier
/// sync collected.
async fn open_cursor(
    ctx: &StageCtx<'_>,
    repo: &RepoScope,
    stored: Option<String>,
) -> Result<RunsCursor, StageError> {
    Ok(match stored {
        Some(text) => serde_json::from_str(&text)
            .map_err(|e| StageError::Permanent(format!("unreadable cursor {text:?}: {e}")))?,
        None => RunsCursor {
            page: Some(1),
            started_ms: Some(millis(ctx.now())),
            since: ctx
                .store()
                .watermark(repo.github_id, Watermark::WorkflowRuns)
                .await?
                .map(|at| (at - CLOCK_SKEW - RUN_SETTLING).to_string()),
            ..RunsCursor::default()
        },
    })
}

/// The jobs of one run (none when the run is gone).
async fn jobs_of(
    ctx: &StageCtx<'_>,
    repo: &RepoScope,
    run: i64,
    now: Timestamp,
) -> Result<Vec<Record>, StageError> {
    let full = &repo.full_name;
    let jobs = rest_list(
        ctx,
        route::WORKFLOW_JOBS,
        &format!("/repos/{full}/actions/runs/{run}/jobs?per_page={PER_PAGE}"),
        "jobs",
    )
    .await;
    let jobs = match jobs {
        Err(ApiError::Gone { .. }) => Vec::new(),
        other => other?,
    };
    Ok(jobs
        .iter()
        .filter_map(|j| rows::workflow_job(j, repo.github_id, run, now))
        .collect())
}

/// The check runs of one head commit (none when the commit is gone or unprocessable).
async fn checks_of(
    ctx: &StageCtx<'_>,
    repo: &RepoScope,
    sha: &str,
    now: Timestamp,
) -> Result<Vec<Record>, StageError> {
    let full = &repo.full_name;
    let checks = rest_list(
        ctx,
        route::CHECK_RUNS,
        &format!("/repos/{full}/commits/{sha}/check-runs?per_page={PER_PAGE}"),
        "check_runs",
    )
    .await;
    let checks = match checks {
        Err(ApiError::Gone { .. } | ApiError::Status { status: 422, .. }) => Vec::new(),
        other => other?,
    };
    Ok(checks
        .iter()
        .filter_map(|c| rows::check_run(c, repo.github_id, now))
        .collect())
}

/// One page of runs: the new runs stored, their jobs and head commits owed in the cursor.
async fn runs_page(
    ctx: &StageCtx<'_>,
    repo: &RepoScope,
    cursor: &mut RunsCursor,
    page: u32,
    validator: &mut Option<(ApiRequest, ApiResponse)>,
    now: Timestamp,
) -> Result<RunsStep, StageError> {
    let full = &repo.full_name;
    let path = format!("/repos/{full}/actions/runs?per_page={PER_PAGE}&page={page}");
    let plain = ApiRequest::get(&path).route(route::WORKFLOW_RUNS);
    let request = if page == 1 {
        plain.clone().conditional()
    } else {
        plain.clone()
    };
    let sent = match ctx.send(request.clone()).await {
        // Nothing new since the last complete collection of this repository.
        Ok(r) if r.not_modified() && cursor.since.is_some() => {
            cursor.page = None;
            return Ok(RunsStep::Skip);
        }
        // An ETag without a collection to stand on (never remembered that way, but a 304
        // must not pass for data): ask in full.
        Ok(r) if r.not_modified() => ctx.send(plain).await,
        other => other,
    };
    let response = match sent {
        Ok(r) => r,
        Err(ApiError::Gone { status }) => {
            ctx.finish_scope(&repo.scope(), Some(format!("repository answered {status}")))
                .await?;
            return Ok(RunsStep::Gone);
        }
        Err(e) => return Err(e.into()),
    };
    let body: Value = response
        .json()
        .map_err(|e| StageError::Transient(e.to_string()))?;
    let all_runs = body
        .get("workflow_runs")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    // Newest first: runs created before `since` were collected by an earlier sync, and so
    // was everything after them.
    let since: Option<Timestamp> = cursor.since.as_deref().and_then(|t| t.parse().ok());
    let is_new = |r: &Value| {
        since.is_none_or(|since| {
            rows::text(r, "created_at")
                .and_then(|t| t.parse::<Timestamp>().ok())
                .is_none_or(|created| created >= since)
        })
    };
    let runs: Vec<Value> = all_runs.iter().filter(|r| is_new(r)).cloned().collect();
    let reached_known = runs.len() < all_runs.len();
    cursor.jobs = runs.iter().filter_map(|r| rows::int(r, "id")).collect();
    cursor.shas = Vec::new();
    for sha in runs.iter().filter_map(|r| rows::text(r, "head_sha")) {
        if !cursor.shas.contains(&sha) {
            cursor.shas.push(sha);
        }
    }
    let has_next = headroom_http::paginate::next_page(&response.headers, &response.url).is_some();
    cursor.page = (has_next && !reached_known).then_some(page + 1);
    if request.conditional {
        *validator = Some((request, response));
    }
    Ok(RunsStep::Rows(
        runs.iter()
            .filter_map(|r| rows::workflow_run(r, repo.github_id, now))
            .collect(),
    ))
}

#[async_trait]
impl Stage for WorkflowRunsStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        let repositories = ctx.repositories().await?;
        ctx.for_each_repository(repositories, |repo| async move {
            self.one_repository(ctx, &repo).await
        })
        .await
    }
}
