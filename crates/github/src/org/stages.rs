//! The eight stages. Each one continues from its checkpoints: a done scope is skipped, a
//! running one continues from its cursor, so a resumed stage redoes at most the page that
//! was in flight when it stopped.

use async_trait::async_trait;
use headroom_core::Dimension;
use headroom_http::{ApiError, ApiRequest, ApiResponse};
use headroom_store::{CheckpointStatus, Record, Watermark};
use headroom_sync::{RepoScope, Stage, StageCtx, StageDecl, StageError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::gql::{self, PageSize, next_cursor, nodes};
use super::rows;

/// Pages of GraphQL connections: at most 100 (GitHub's cap), at least 5.
const MAX_PAGE: u32 = 50;
const MIN_PAGE: u32 = 5;
/// REST page size.
const PER_PAGE: u32 = 100;

/// The sentinel cursor of a listing that is complete.
const LISTED: &str = "listed";
/// The sentinel cursor of a once-per-run stage whose last page is stored.
const END: &str = "end";

async fn organization_id(ctx: &StageCtx<'_>) -> Result<i64, StageError> {
    ctx.store()
        .organization_id(ctx.target())
        .await?
        .ok_or_else(|| {
            StageError::Permanent(format!(
                "organization {} is not stored (stage org has not run)",
                ctx.target()
            ))
        })
}

fn repo_vars(repo: &RepoScope, first: u32, after: Option<&str>) -> Value {
    let (owner, name) = repo
        .owner_and_name()
        .unwrap_or((repo.full_name.as_str(), ""));
    json!({ "owner": owner, "name": name, "first": first, "after": after })
}

/// Where one repository of a per-repository stage stands: `None` when it is done.
async fn repo_cursor(
    ctx: &StageCtx<'_>,
    scope: &str,
) -> Result<Option<Option<String>>, StageError> {
    Ok(match ctx.checkpoint(scope).await? {
        Some(cp) if cp.status == CheckpointStatus::Done => None,
        Some(cp) => Some(cp.page_cursor),
        None => Some(None),
    })
}

type MapNode = fn(&Value, &RepoScope, i64, headroom_core::clock::Timestamp) -> Vec<Record>;

/// A GraphQL connection under `repository(owner, name)`, collected page by page for every
/// repository of the run.
struct RepoConnection {
    route: &'static str,
    query: &'static str,
    connection: &'static str,
    watermark: Option<Watermark>,
    map: MapNode,
    /// Rows that collide with another entity's unique key are skipped (and logged) instead
    /// of failing the stage.
    row_conflicts_skippable: bool,
}

async fn collect_per_repository(
    ctx: &StageCtx<'_>,
    size: &PageSize,
    spec: &RepoConnection,
) -> Result<(), StageError> {
    let org_id = organization_id(ctx).await?;
    for repo in ctx.repositories().await? {
        let scope = repo.scope();
        let Some(mut cursor) = repo_cursor(ctx, &scope).await? else {
            continue;
        };
        loop {
            let data = gql::query(ctx, size, spec.route, spec.query, |first| {
                repo_vars(&repo, first, cursor.as_deref())
            })
            .await?;
            let Some(repository) = data.get("repository").filter(|r| !r.is_null()) else {
                // Gone since it was listed: a fact, recorded; nothing to collect.
                ctx.finish_scope(&scope, Some("repository not found".into()))
                    .await?;
                break;
            };
            let connection = repository.get(spec.connection).unwrap_or(&Value::Null);
            let now = ctx.now();
            let records: Vec<Record> = nodes(connection)
                .iter()
                .flat_map(|n| (spec.map)(n, &repo, org_id, now))
                .collect();
            let next = next_cursor(connection);
            let finished = next.is_none();
            let watermark = spec.watermark.map(|w| (repo.github_id, w));
            match ctx
                .write_page(&scope, &records, next.clone(), finished, watermark)
                .await
            {
                Ok(_) => {}
                Err(headroom_store::StoreError::Conflict(why)) if spec.row_conflicts_skippable => {
                    // A row that collides with another entity's unique key (e.g. a project
                    // number the organization already uses): keep the rows that fit, record
                    // the ones that do not, and move on. Upserts make the redo harmless.
                    let mut skipped = 0usize;
                    for record in &records {
                        let mut tx = ctx.store().begin().await?;
                        match tx.upsert(record).await {
                            Ok(_) => tx.commit().await?,
                            Err(headroom_store::StoreError::Conflict(_)) => {
                                tx.rollback().await?;
                                skipped += 1;
                            }
                            Err(e) => return Err(e.into()),
                        }
                    }
                    tracing::warn!(repository = %repo.full_name, skipped, %why, "rows skipped on a unique conflict");
                    ctx.write_page(&scope, &[], next.clone(), finished, watermark)
                        .await?;
                }
                Err(e) => return Err(e.into()),
            }
            if finished {
                break;
            }
            cursor = next;
        }
    }
    Ok(())
}

async fn rest_get(
    ctx: &StageCtx<'_>,
    route: &'static str,
    path: &str,
) -> Result<ApiResponse, ApiError> {
    ctx.send(ApiRequest::get(path).route(route, Dimension::RestCore))
        .await
}

/// Every page of a REST list (following `Link: rel="next"`), the items under `field`.
async fn rest_list(
    ctx: &StageCtx<'_>,
    route: &'static str,
    path: &str,
    field: &str,
) -> Result<Vec<Value>, ApiError> {
    let mut items = Vec::new();
    let mut target = path.to_owned();
    // A hard cap: 100 pages of 100.
    for _ in 0..100 {
        let response = rest_get(ctx, route, &target).await?;
        let body: Value = response.json()?;
        if let Some(list) = body.get(field).and_then(Value::as_array) {
            items.extend(list.iter().cloned());
        }
        match headroom_http::paginate::next_page(&response.headers, &response.url) {
            Some(next) => target = next.to_string(),
            None => break,
        }
    }
    Ok(items)
}

// ---------------------------------------------------------------------------------- 1. org

const ORG_QUERY: &str = "query($login: String!) {
  organization(login: $login) { id databaseId login name }
  rateLimit { limit cost remaining used resetAt }
}";

const MEMBERS_QUERY: &str = "query($login: String!, $first: Int!, $after: String) {
  organization(login: $login) {
    membersWithRole(first: $first, after: $after) {
      edges { role node { id databaseId login name } }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

const TEAMS_QUERY: &str = "query($login: String!, $first: Int!, $after: String) {
  organization(login: $login) {
    teams(first: $first, after: $after) {
      nodes { id databaseId name slug description members(first: 1) { totalCount } }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

/// Stage 1: The organization, its members (with roles) and its teams. Once per run; its cursor
/// walks `members:<after>` then `teams:<after>` then `end`.
#[derive(Debug)]
pub struct OrgStage {
    decl: StageDecl,
    size: PageSize,
}

impl OrgStage {
    /// The stage.
    pub fn new(decl: StageDecl) -> Self {
        Self {
            decl,
            size: PageSize::new(MIN_PAGE, MAX_PAGE),
        }
    }
}

#[async_trait]
impl Stage for OrgStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        let login = ctx.target().to_owned();
        let mut cursor = ctx.checkpoint("").await?.and_then(|c| c.page_cursor);
        loop {
            match cursor.as_deref() {
                None => {
                    let data = gql::query(
                        ctx,
                        &self.size,
                        "sync_org",
                        ORG_QUERY,
                        |_| json!({ "login": login }),
                    )
                    .await?;
                    let org = data
                        .get("organization")
                        .filter(|o| !o.is_null())
                        .ok_or_else(|| {
                            StageError::Permanent(format!("organization {login} not found"))
                        })?;
                    let next = "members:".to_owned();
                    ctx.write_page(
                        "",
                        &[rows::organization(org, &login, ctx.now())],
                        Some(next.clone()),
                        false,
                        None,
                    )
                    .await?;
                    cursor = Some(next);
                }
                Some(c) if c.starts_with("members:") || c.starts_with("teams:") => {
                    let (phase, after) = c.split_once(':').unwrap_or((c, ""));
                    let after = (!after.is_empty()).then(|| after.to_owned());
                    let members = phase == "members";
                    let (query, field) = if members {
                        (MEMBERS_QUERY, "membersWithRole")
                    } else {
                        (TEAMS_QUERY, "teams")
                    };
                    let data = gql::query(
                        ctx,
                        &self.size,
                        "sync_org",
                        query,
                        |first| json!({ "login": login, "first": first, "after": after }),
                    )
                    .await?;
                    let connection = data
                        .get("organization")
                        .and_then(|o| o.get(field))
                        .unwrap_or(&Value::Null);
                    let org_id = organization_id(ctx).await?;
                    let now = ctx.now();
                    let records: Vec<Record> = if members {
                        connection
                            .get("edges")
                            .and_then(Value::as_array)
                            .map_or(&[][..], Vec::as_slice)
                            .iter()
                            .filter_map(|e| rows::member(e, org_id, now))
                            .collect()
                    } else {
                        nodes(connection)
                            .iter()
                            .filter_map(|n| rows::team(n, org_id, now))
                            .collect()
                    };
                    let next = match (next_cursor(connection), members) {
                        (Some(after), _) => format!("{phase}:{after}"),
                        (None, true) => "teams:".to_owned(),
                        (None, false) => END.to_owned(),
                    };
                    ctx.write_page("", &records, Some(next.clone()), false, None)
                        .await?;
                    cursor = Some(next);
                }
                Some(_) => return Ok(()),
            }
        }
    }
}

// ------------------------------------------------------------------------ 2. repositories

const REPOS_QUERY: &str = "query($login: String!, $first: Int!, $after: String) {
  organization(login: $login) {
    repositories(first: $first, after: $after) {
      nodes {
        id databaseId name nameWithOwner owner { login databaseId } isPrivate description
        url createdAt updatedAt defaultBranchRef { name }
      }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

const ISSUES_QUERY: &str = "query($owner: String!, $name: String!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    issues(first: $first, after: $after) {
      nodes { id databaseId number title state createdAt updatedAt author { login } }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

/// Stage 2: The organization's repositories, then each repository's issues. Its per-repository
/// checkpoints are the list of repositories every later stage works on.
#[derive(Debug)]
pub struct RepositoriesStage {
    decl: StageDecl,
    size: PageSize,
}

impl RepositoriesStage {
    /// The stage.
    pub fn new(decl: StageDecl) -> Self {
        Self {
            decl,
            size: PageSize::new(MIN_PAGE, MAX_PAGE),
        }
    }
}

#[async_trait]
impl Stage for RepositoriesStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        let login = ctx.target().to_owned();
        let org_id = organization_id(ctx).await?;
        let mut cursor = ctx.checkpoint("").await?.and_then(|c| c.page_cursor);
        while cursor.as_deref() != Some(LISTED) {
            let data = gql::query(
                ctx,
                &self.size,
                "sync_repositories",
                REPOS_QUERY,
                |first| json!({ "login": login, "first": first, "after": cursor }),
            )
            .await?;
            let connection = data
                .get("organization")
                .filter(|o| !o.is_null())
                .ok_or_else(|| StageError::Permanent(format!("organization {login} not found")))?
                .get("repositories")
                .unwrap_or(&Value::Null);
            let now = ctx.now();
            let records: Vec<Record> = nodes(connection)
                .iter()
                .filter_map(|n| rows::repository(n, org_id, now))
                .collect();
            let scopes: Vec<RepoScope> = records
                .iter()
                .filter_map(|r| match r {
                    Record::Repository(r) => Some(RepoScope {
                        github_id: r.github_id,
                        full_name: r.full_name.clone(),
                    }),
                    _ => None,
                })
                .collect();
            let next = next_cursor(connection).unwrap_or_else(|| LISTED.to_owned());
            ctx.write_listing_page(&records, next.clone(), &scopes)
                .await?;
            cursor = Some(next);
        }
        collect_per_repository(
            ctx,
            &self.size,
            &RepoConnection {
                route: "sync_issues",
                query: ISSUES_QUERY,
                connection: "issues",
                watermark: Some(Watermark::Issues),
                map: |n, repo, _, now| rows::issue(n, repo.github_id, now).into_iter().collect(),
                row_conflicts_skippable: false,
            },
        )
        .await
    }
}

// ---------------------------------------------------------------------------- 3. projects

const PROJECTS_QUERY: &str =
    "query($owner: String!, $name: String!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    projectsV2(first: $first, after: $after) {
      nodes { id number title closed createdAt }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

macro_rules! connection_stage {
    ($(#[$doc:meta])* $name:ident, $spec:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name {
            decl: StageDecl,
            size: PageSize,
        }

        impl $name {
            /// The stage.
            pub fn new(decl: StageDecl) -> Self {
                Self {
                    decl,
                    size: PageSize::new(MIN_PAGE, MAX_PAGE),
                }
            }
        }

        #[async_trait]
        impl Stage for $name {
            fn decl(&self) -> &StageDecl {
                &self.decl
            }

            async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
                collect_per_repository(ctx, &self.size, &$spec).await
            }
        }
    };
}

connection_stage!(
    /// Stage 3: Projects (v2) of every repository.
    ProjectsStage,
    RepoConnection {
        route: "sync_projects",
        query: PROJECTS_QUERY,
        connection: "projectsV2",
        watermark: None,
        map: |n, _, org, now| rows::project(n, org, now).into_iter().collect(),
        row_conflicts_skippable: true,
    }
);

// ---------------------------------------------------------------------- 4. issue comments

const COMMENTS_QUERY: &str =
    "query($owner: String!, $name: String!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    issues(first: $first, after: $after) {
      nodes {
        number
        comments(first: 100) {
          nodes { id databaseId createdAt author { login } body }
          pageInfo { hasNextPage endCursor }
        }
      }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

fn comments_of(
    issue: &Value,
    repo: &RepoScope,
    now: headroom_core::clock::Timestamp,
) -> Vec<Record> {
    let Some(number) = rows::int(issue, "number") else {
        return Vec::new();
    };
    let comments = issue.get("comments").unwrap_or(&Value::Null);
    if next_cursor(comments).is_some() {
        tracing::warn!(
            repository = %repo.full_name,
            issue = number,
            "more than 100 comments on one issue: only the first 100 are collected"
        );
    }
    nodes(comments)
        .iter()
        .filter_map(|c| rows::issue_comment(c, repo.github_id, number, now))
        .collect()
}

connection_stage!(
    /// Stage 4: Comments of every issue (the first 100 of each issue, in pages of issues).
    IssueCommentsStage,
    RepoConnection {
        route: "sync_issue_comments",
        query: COMMENTS_QUERY,
        connection: "issues",
        watermark: Some(Watermark::IssueComments),
        map: |n, repo, _, now| comments_of(n, repo, now),
        row_conflicts_skippable: false,
    }
);

// ----------------------------------------------------------------------- 5. pull requests

const PULLS_QUERY: &str = "query($owner: String!, $name: String!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequests(first: $first, after: $after) {
      nodes {
        id databaseId number title state merged mergedAt headRefName baseRefName headRefOid
        createdAt updatedAt author { login }
        commits(first: 100) {
          nodes { commit { oid message committedDate additions deletions changedFilesIfAvailable } }
          pageInfo { hasNextPage endCursor }
        }
      }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

fn pull_with_commits(
    pr: &Value,
    repo: &RepoScope,
    now: headroom_core::clock::Timestamp,
) -> Vec<Record> {
    let mut out: Vec<Record> = rows::pull_request(pr, repo.github_id, now)
        .into_iter()
        .collect();
    let Some(number) = rows::int(pr, "number") else {
        return out;
    };
    let commits = pr.get("commits").unwrap_or(&Value::Null);
    if next_cursor(commits).is_some() {
        tracing::warn!(
            repository = %repo.full_name,
            pull_request = number,
            "more than 100 commits in one pull request: only the first 100 are collected"
        );
    }
    out.extend(
        nodes(commits)
            .iter()
            .filter_map(|c| rows::pull_request_commit(c, repo.github_id, number, now)),
    );
    out
}

connection_stage!(
    /// Stage 5: Pull requests with their commits (up to 100 per pull request).
    PullRequestsStage,
    RepoConnection {
        route: "sync_pull_requests",
        query: PULLS_QUERY,
        connection: "pullRequests",
        watermark: Some(Watermark::PullRequests),
        map: |n, repo, _, now| pull_with_commits(n, repo, now),
        row_conflicts_skippable: false,
    }
);

// ----------------------------------------------------------------------- 6. commit files

/// Stage 6: Files of every pull-request commit that has none stored yet (REST, one request per
/// commit). Commits are immutable: a commit with files is never fetched again, which makes
/// the stage both resumable and incremental.
#[derive(Debug)]
pub struct CommitFilesStage {
    decl: StageDecl,
}

impl CommitFilesStage {
    /// The stage.
    pub fn new(decl: StageDecl) -> Self {
        Self { decl }
    }
}

#[async_trait]
impl Stage for CommitFilesStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        for repo in ctx.repositories().await? {
            let scope = repo.scope();
            if repo_cursor(ctx, &scope).await?.is_none() {
                continue;
            }
            let mut gone = None;
            for sha in ctx
                .store()
                .commit_shas_without_files(repo.github_id)
                .await?
            {
                let path = format!("/repos/{}/commits/{sha}", repo.full_name);
                match rest_get(ctx, "sync_commit_files", &path).await {
                    Ok(response) => {
                        let body: Value = response
                            .json()
                            .map_err(|e| StageError::Transient(e.to_string()))?;
                        let now = ctx.now();
                        let records: Vec<Record> = body
                            .get("files")
                            .and_then(Value::as_array)
                            .map_or(&[][..], Vec::as_slice)
                            .iter()
                            .filter_map(|f| rows::commit_file(f, repo.github_id, &sha, now))
                            .collect();
                        ctx.write_page(&scope, &records, Some(sha.clone()), false, None)
                            .await?;
                    }
                    // The repository is gone: a fact, recorded on its scope.
                    Err(ApiError::Gone { status }) => {
                        gone = Some(format!("repository answered {status}"));
                        break;
                    }
                    // This commit cannot be read (422: unknown to GitHub); the others can.
                    Err(ApiError::Status { status, message }) => {
                        tracing::warn!(repository = %repo.full_name, %sha, status, %message, "commit skipped");
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            ctx.finish_scope(&scope, gone).await?;
        }
        Ok(())
    }
}

// ----------------------------------------------------------------------- 7. workflow runs

/// Where one repository of the workflow-runs stage stands, stored as its cursor.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct RunsCursor {
    /// The next page of runs, if any.
    page: Option<u32>,
    /// Runs of the stored pages whose jobs are still to fetch.
    jobs: Vec<i64>,
    /// Head commits whose check runs are still to fetch.
    shas: Vec<String>,
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

impl WorkflowRunsStage {
    async fn one_repository(&self, ctx: &StageCtx<'_>, repo: &RepoScope) -> Result<(), StageError> {
        let scope = repo.scope();
        let Some(stored) = repo_cursor(ctx, &scope).await? else {
            return Ok(());
        };
        let mut cursor: RunsCursor = match stored {
            Some(text) => serde_json::from_str(&text)
                .map_err(|e| StageError::Permanent(format!("unreadable cursor {text:?}: {e}")))?,
            None => RunsCursor {
                page: Some(1),
                ..RunsCursor::default()
            },
        };
        let full = &repo.full_name;
        loop {
            let now = ctx.now();
            let (records, finished) = if let Some(run) = cursor.jobs.first().copied() {
                let jobs = rest_list(
                    ctx,
                    "sync_workflow_jobs",
                    &format!("/repos/{full}/actions/runs/{run}/jobs?per_page={PER_PAGE}"),
                    "jobs",
                )
                .await;
                let jobs = match jobs {
                    Err(ApiError::Gone { .. }) => Vec::new(),
                    other => other?,
                };
                cursor.jobs.remove(0);
                (
                    jobs.iter()
                        .filter_map(|j| rows::workflow_job(j, repo.github_id, run, now))
                        .collect::<Vec<_>>(),
                    false,
                )
            } else if let Some(sha) = cursor.shas.first().cloned() {
                let checks = rest_list(
                    ctx,
                    "sync_check_runs",
                    &format!("/repos/{full}/commits/{sha}/check-runs?per_page={PER_PAGE}"),
                    "check_runs",
                )
                .await;
                let checks = match checks {
                    Err(ApiError::Gone { .. } | ApiError::Status { status: 422, .. }) => Vec::new(),
                    other => other?,
                };
                cursor.shas.remove(0);
                (
                    checks
                        .iter()
                        .filter_map(|c| rows::check_run(c, repo.github_id, now))
                        .collect(),
                    false,
                )
            } else if let Some(page) = cursor.page {
                let path = format!("/repos/{full}/actions/runs?per_page={PER_PAGE}&page={page}");
                let response = match rest_get(ctx, "sync_workflow_runs", &path).await {
                    Ok(r) => r,
                    Err(ApiError::Gone { status }) => {
                        ctx.finish_scope(&scope, Some(format!("repository answered {status}")))
                            .await?;
                        return Ok(());
                    }
                    Err(e) => return Err(e.into()),
                };
                let body: Value = response
                    .json()
                    .map_err(|e| StageError::Transient(e.to_string()))?;
                let runs = body
                    .get("workflow_runs")
                    .and_then(Value::as_array)
                    .map_or(&[][..], Vec::as_slice);
                cursor.jobs = runs.iter().filter_map(|r| rows::int(r, "id")).collect();
                cursor.shas = Vec::new();
                for sha in runs.iter().filter_map(|r| rows::text(r, "head_sha")) {
                    if !cursor.shas.contains(&sha) {
                        cursor.shas.push(sha);
                    }
                }
                let has_next =
                    headroom_http::paginate::next_page(&response.headers, &response.url).is_some();
                cursor.page = has_next.then_some(page + 1);
                (
                    runs.iter()
                        .filter_map(|r| rows::workflow_run(r, repo.github_id, now))
                        .collect(),
                    false,
                )
            } else {
                (Vec::new(), true)
            };
            if finished {
                ctx.write_page(
                    &scope,
                    &[],
                    None,
                    true,
                    Some((repo.github_id, Watermark::WorkflowRuns)),
                )
                .await?;
                return Ok(());
            }
            let text =
                serde_json::to_string(&cursor).map_err(|e| StageError::Permanent(e.to_string()))?;
            ctx.write_page(&scope, &records, Some(text), false, None)
                .await?;
        }
    }
}

#[async_trait]
impl Stage for WorkflowRunsStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        for repo in ctx.repositories().await? {
            self.one_repository(ctx, &repo).await?;
        }
        Ok(())
    }
}

// ----------------------------------------------------------------------------- 8. branches

const BRANCHES_QUERY: &str =
    "query($owner: String!, $name: String!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    refs(refPrefix: \"refs/heads/\", first: $first, after: $after) {
      nodes { name target { oid } }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

connection_stage!(
    /// Stage 8: Branches of every repository.
    BranchesStage,
    RepoConnection {
        route: "sync_branches",
        query: BRANCHES_QUERY,
        connection: "refs",
        watermark: Some(Watermark::Branches),
        map: |n, repo, _, now| rows::branch(n, repo.github_id, now).into_iter().collect(),
        row_conflicts_skippable: false,
    }
);
