//! The eight stages. Each one continues from its checkpoints: a done scope is skipped, a
//! running one continues from its cursor, so a resumed stage redoes at most the page that
//! was in flight when it stopped.

use async_trait::async_trait;
use headroom_core::Dimension;
use headroom_core::clock::{SignedDuration, Timestamp};
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
/// Follow-up pages of a nested connection: one parent each, so GitHub's cap.
const NESTED_PAGE: u32 = 100;
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
type MapChild = fn(&Value, &Value, &RepoScope, headroom_core::clock::Timestamp) -> Option<Record>;

/// How a per-repository stage asks only for what changed since its last collection.
#[derive(Debug, Clone, Copy)]
enum Incremental {
    /// Everything, every time.
    Full,
    /// The connection takes `filterBy: { since: $since }`.
    Since(Watermark),
    /// The connection is ordered by `updatedAt`, newest first: paging stops at the first
    /// page that reaches a node older than the watermark.
    NewestFirst(Watermark),
}

/// Allowance for the difference between this machine's clock and GitHub's: `since` is the
/// watermark minus this.
const CLOCK_SKEW: SignedDuration = SignedDuration::from_secs(60);

/// A connection inside every node of the outer one (comments of an issue, commits of a pull
/// request, items of a project). The outer query asks for its first page; parents with more
/// are followed one by one with `query` (variables `owner`, `name`, `number`, `first`,
/// `after`), which answers `repository.<parent>(number:) { id number <field> }`.
struct Nested {
    field: &'static str,
    parent: &'static str,
    query: &'static str,
    /// One child node, given its parent (whose `id` and `number` the queries select).
    map: MapChild,
}

/// A GraphQL connection under `repository(owner, name)`, collected page by page for every
/// repository of the run.
struct RepoConnection {
    route: &'static str,
    query: &'static str,
    connection: &'static str,
    /// Written when a repository is finished.
    watermark: Option<Watermark>,
    incremental: Incremental,
    map: MapNode,
    nested: Option<Nested>,
}

/// Where one repository of a per-repository stage stands, stored as its checkpoint cursor.
/// A cursor that is not JSON is an outer cursor from before nested connections were
/// followed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct ScopeCursor {
    /// The outer connection continues after this cursor (`None`: from its start).
    #[serde(default)]
    after: Option<String>,
    /// The outer connection is exhausted; only nested follow-ups remain.
    #[serde(default)]
    outer_done: bool,
    /// Parents (by number) whose nested connection continues after the cursor given.
    #[serde(default)]
    more: Vec<(i64, String)>,
    /// When this repository's collection started: its watermark once finished.
    #[serde(default)]
    started_ms: Option<i64>,
    /// The `since` in force for this collection (kept so a resume asks the same).
    #[serde(default)]
    since: Option<String>,
    /// A nested connection was refused (a partial answer): no watermark when finished.
    #[serde(default)]
    incomplete: bool,
}

impl ScopeCursor {
    fn parse(stored: Option<String>) -> Result<Self, StageError> {
        match stored {
            None => Ok(Self::default()),
            Some(text) if text.starts_with('{') => serde_json::from_str(&text)
                .map_err(|e| StageError::Permanent(format!("unreadable cursor {text:?}: {e}"))),
            Some(text) => Ok(Self {
                after: Some(text),
                ..Self::default()
            }),
        }
    }

    fn text(&self) -> Result<String, StageError> {
        serde_json::to_string(self).map_err(|e| StageError::Permanent(e.to_string()))
    }
}

fn millis(at: Timestamp) -> i64 {
    at.as_millisecond()
}

/// The `since` of a repository's collection: its watermark minus the clock allowance, or
/// `None` (everything) when it was never collected or the stage is not incremental.
async fn since_of(
    ctx: &StageCtx<'_>,
    repo: &RepoScope,
    incremental: Incremental,
) -> Result<Option<String>, StageError> {
    let mark = match incremental {
        Incremental::Full => return Ok(None),
        Incremental::Since(w) | Incremental::NewestFirst(w) => w,
    };
    Ok(ctx
        .store()
        .watermark(repo.github_id, mark)
        .await?
        .map(|at| (at - CLOCK_SKEW).to_string()))
}

fn older_than(node: &Value, since: &str) -> bool {
    let (Some(updated), Ok(since)) = (
        node.get("updatedAt")
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<Timestamp>().ok()),
        since.parse::<Timestamp>(),
    ) else {
        return false;
    };
    updated < since
}

/// Workflow runs are judged by when they were created, but a run still going at the last
/// sync changes afterwards: runs created this long before the watermark (GitHub-hosted jobs
/// stop after 6 hours) are read again.
const RUN_SETTLING: SignedDuration = SignedDuration::from_hours(6);

/// Repositories asked about in one probe query.
const PROBE_BATCH: usize = 25;

/// The aliased probe of up to [`PROBE_BATCH`] repositories, `(owner, name, since)` each:
/// one `r{k}: repository(…)` per entry asking `connection` for its first node changed since
/// `since` — through `filterBy: { since }`, or newest-updated first (`orderBy`) for a
/// connection that has no `since`, where the caller compares `updatedAt` itself. Returns the
/// document and its variables. A pure function, so the schema test checks what is sent.
pub(crate) fn probe_query(
    connection: &str,
    newest_first: bool,
    batch: &[(&str, &str, &str)],
) -> (String, Value) {
    let mut declared = Vec::new();
    let mut fields = Vec::new();
    let mut vars = serde_json::Map::new();
    for (k, (owner, name, since)) in batch.iter().enumerate() {
        let args = if newest_first {
            declared.push(format!("$o{k}: String!, $n{k}: String!"));
            "orderBy: { field: UPDATED_AT, direction: DESC }".to_owned()
        } else {
            declared.push(format!("$o{k}: String!, $n{k}: String!, $s{k}: DateTime"));
            vars.insert(format!("s{k}"), json!(since));
            format!("filterBy: {{ since: $s{k} }}")
        };
        fields.push(format!(
            "r{k}: repository(owner: $o{k}, name: $n{k}) {{ {connection}(first: 1, {args}) {{ totalCount nodes {{ updatedAt }} }} }}"
        ));
        vars.insert(format!("o{k}"), json!(owner));
        vars.insert(format!("n{k}"), json!(name));
    }
    let query = format!(
        "query({}) {{\n  {}\n  rateLimit {{ limit cost remaining used resetAt }}\n}}",
        declared.join(", "),
        fields.join("\n  ")
    );
    (query, Value::Object(vars))
}

/// Before an incremental stage walks its repositories: asks, for up to [`PROBE_BATCH`]
/// repositories per query (one alias each), whether anything changed since each one's
/// watermark, and finishes the unchanged ones without a query of their own. A repository
/// never collected, or one already started in this run, is left to the walk.
async fn finish_unchanged(
    ctx: &StageCtx<'_>,
    size: &PageSize,
    spec: &RepoConnection,
    repos: &[RepoScope],
) -> Result<(), StageError> {
    let newest_first = match spec.incremental {
        Incremental::Full => return Ok(()),
        Incremental::Since(_) => false,
        Incremental::NewestFirst(_) => true,
    };
    let mut candidates = Vec::new();
    for repo in repos {
        // Listed (pending) is untouched; anything else this run already decided on.
        let untouched = match ctx.checkpoint(&repo.scope()).await? {
            None => true,
            Some(cp) => cp.status == CheckpointStatus::Pending && cp.page_cursor.is_none(),
        };
        if !untouched {
            continue;
        }
        if let Some(since) = since_of(ctx, repo, spec.incremental).await?
            && repo.owner_and_name().is_some()
        {
            candidates.push((repo, since));
        }
    }
    for batch in candidates.chunks(PROBE_BATCH) {
        let asked: Vec<(&str, &str, &str)> = batch
            .iter()
            .map(|(repo, since)| {
                let (owner, name) = repo.owner_and_name().unwrap_or_default();
                (owner, name, since.as_str())
            })
            .collect();
        let (query, vars) = probe_query(spec.connection, newest_first, &asked);
        let started = ctx.now();
        let data = gql::query(ctx, size, spec.route, &query, |_| vars.clone()).await?;
        for (k, (repo, since)) in batch.iter().enumerate() {
            let Some(connection) = data
                .get(format!("r{k}"))
                .filter(|r| !r.is_null())
                .and_then(|r| r.get(spec.connection))
                // Refused (GitHub's connections are never null otherwise): not evidence of
                // "unchanged"; the walk meets the refusal and records it.
                .filter(|c| !c.is_null())
            else {
                continue;
            };
            let changed = if newest_first {
                nodes(connection).iter().any(|n| !older_than(n, since))
            } else {
                connection.get("totalCount").and_then(Value::as_i64) != Some(0)
            };
            if !changed {
                ctx.write_page_marked(
                    &repo.scope(),
                    &[],
                    None,
                    true,
                    spec.watermark.map(|w| (repo.github_id, w, started)),
                )
                .await?;
            }
        }
    }
    Ok(())
}

async fn collect_per_repository(
    ctx: &StageCtx<'_>,
    size: &PageSize,
    nested_size: &PageSize,
    spec: &RepoConnection,
) -> Result<(), StageError> {
    let org_id = organization_id(ctx).await?;
    let repos = ctx.repositories().await?;
    finish_unchanged(ctx, size, spec, &repos).await?;
    for repo in repos {
        let scope = repo.scope();
        let Some(stored) = repo_cursor(ctx, &scope).await? else {
            continue;
        };
        let mut cur = ScopeCursor::parse(stored)?;
        if cur.started_ms.is_none() {
            cur.started_ms = Some(millis(ctx.now()));
            cur.since = since_of(ctx, &repo, spec.incremental).await?;
        }
        let started = cur
            .started_ms
            .and_then(|ms| Timestamp::from_millisecond(ms).ok())
            .unwrap_or_else(|| ctx.now());
        loop {
            let now;
            let records: Vec<Record>;
            if let (Some(nested), Some((number, after))) = (&spec.nested, cur.more.first().cloned())
            {
                // A follow-up: the next page of one parent's nested connection.
                let data = gql::query(ctx, nested_size, spec.route, nested.query, |first| {
                    let mut vars = repo_vars(&repo, first, Some(&after));
                    vars["number"] = json!(number);
                    vars
                })
                .await?;
                let Some(repository) = data.get("repository").filter(|r| !r.is_null()) else {
                    ctx.finish_scope(&scope, Some("repository not found".into()))
                        .await?;
                    break;
                };
                now = ctx.now();
                match repository.get(nested.parent).filter(|p| !p.is_null()) {
                    // Gone since its first page: nothing more to collect for it.
                    None => {
                        cur.more.remove(0);
                        records = Vec::new();
                    }
                    Some(parent) => {
                        let connection = parent.get(nested.field).unwrap_or(&Value::Null);
                        // Refused: what was stored stays, but this collection is not whole.
                        cur.incomplete |= connection.is_null();
                        records = nodes(connection)
                            .iter()
                            .filter_map(|c| (nested.map)(c, parent, &repo, now))
                            .collect();
                        match next_cursor(connection) {
                            Some(next) => cur.more[0].1 = next,
                            None => {
                                cur.more.remove(0);
                            }
                        }
                    }
                }
            } else if cur.outer_done {
                records = Vec::new();
                cur.more.clear();
            } else {
                let data = gql::query(ctx, size, spec.route, spec.query, |first| {
                    let mut vars = repo_vars(&repo, first, cur.after.as_deref());
                    if !matches!(spec.incremental, Incremental::Full) {
                        vars["since"] = json!(cur.since);
                    }
                    vars
                })
                .await?;
                let Some(repository) = data.get("repository").filter(|r| !r.is_null()) else {
                    // Gone since it was listed: a fact, recorded; nothing to collect.
                    ctx.finish_scope(&scope, Some("repository not found".into()))
                        .await?;
                    break;
                };
                let Some(connection) = repository.get(spec.connection).filter(|c| !c.is_null())
                else {
                    // Refused (recorded on the run; GitHub's connections are never null
                    // otherwise): done for this run, with no watermark, so a run with access
                    // collects everything since the last whole collection.
                    ctx.finish_scope(&scope, Some(format!("{} refused", spec.connection)))
                        .await?;
                    break;
                };
                now = ctx.now();
                let all = nodes(connection);
                // Newest first: nodes older than `since` were stored by an earlier sync.
                let newest_first_since = match spec.incremental {
                    Incremental::NewestFirst(_) => cur.since.as_deref(),
                    _ => None,
                };
                let page: Vec<&Value> = all
                    .iter()
                    .filter(|n| newest_first_since.is_none_or(|since| !older_than(n, since)))
                    .collect();
                records = page
                    .iter()
                    .flat_map(|n| (spec.map)(n, &repo, org_id, now))
                    .collect();
                if let Some(nested) = &spec.nested {
                    for node in &page {
                        let inner = node.get(nested.field).unwrap_or(&Value::Null);
                        cur.incomplete |= inner.is_null();
                        if let (Some(number), Some(after)) =
                            (rows::int(node, "number"), next_cursor(inner))
                        {
                            cur.more.push((number, after));
                        }
                    }
                }
                let mut next = next_cursor(connection);
                if page.len() < all.len() {
                    // Newest first and past `since`: the rest was collected before.
                    next = None;
                }
                cur.outer_done = next.is_none();
                cur.after = next;
            }
            let finished = cur.outer_done && cur.more.is_empty();
            // A collection that met a refused nested connection is finished without its
            // watermark: the next run asks again from the last whole one.
            let watermark = spec
                .watermark
                .filter(|_| finished && !cur.incomplete)
                .map(|w| (repo.github_id, w, started));
            let cursor = if finished { None } else { Some(cur.text()?) };
            ctx.write_page_marked(&scope, &records, cursor, finished, watermark)
                .await?;
            if finished {
                break;
            }
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

/// `owner` is the `RepositoryOwner` interface, which has no `databaseId` of its own: it is
/// asked of each type that can own a repository (GitHub refuses the whole query otherwise).
const REPOS_QUERY: &str = "query($login: String!, $first: Int!, $after: String) {
  organization(login: $login) {
    repositories(first: $first, after: $after) {
      nodes {
        id databaseId name nameWithOwner isPrivate description url createdAt updatedAt
        owner { login ... on Organization { databaseId } ... on User { databaseId } }
        defaultBranchRef { name }
      }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

/// Issues oldest-updated first, since the watermark: an issue updated while the pages are
/// read moves behind the cursor, where a later page (or the next run) finds it.
const ISSUES_QUERY: &str = "query($owner: String!, $name: String!, $first: Int!, $after: String, $since: DateTime) {
  repository(owner: $owner, name: $name) {
    issues(first: $first, after: $after, filterBy: { since: $since }, orderBy: { field: UPDATED_AT, direction: ASC }) {
      nodes { id databaseId number title state createdAt updatedAt author { login } }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

/// Stage 2's second half: each repository's issues.
const ISSUES_CONNECTION: RepoConnection = RepoConnection {
    route: "sync_issues",
    query: ISSUES_QUERY,
    connection: "issues",
    watermark: Some(Watermark::Issues),
    incremental: Incremental::Since(Watermark::Issues),
    map: |n, repo, _, now| rows::issue(n, repo.github_id, now).into_iter().collect(),
    nested: None,
};

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
        collect_per_repository(ctx, &self.size, &self.size, &ISSUES_CONNECTION).await
    }
}

// ---------------------------------------------------------------------------- 3. projects

/// The fields of a project item, the same in every query that reads items.
macro_rules! project_item_fields {
    () => {
        "id databaseId type content { __typename \
         ... on Issue { id number title } \
         ... on PullRequest { id number title } \
         ... on DraftIssue { id title } }"
    };
}

const PROJECTS_QUERY: &str = concat!(
    "query($owner: String!, $name: String!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    projectsV2(first: $first, after: $after) {
      nodes {
        id number title closed createdAt
        views(first: 20) { nodes { id name number layout } }
        items(first: 100) {
          totalCount
          nodes { ",
    project_item_fields!(),
    " }
          pageInfo { hasNextPage endCursor }
        }
      }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}",
);

const PROJECT_ITEMS_QUERY: &str = concat!(
    "query($owner: String!, $name: String!, $number: Int!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    projectV2(number: $number) {
      id number
      items(first: $first, after: $after) {
        nodes { ",
    project_item_fields!(),
    " }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}",
);

macro_rules! connection_stage {
    ($(#[$doc:meta])* $name:ident, $spec:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name {
            decl: StageDecl,
            size: PageSize,
            nested: PageSize,
        }

        impl $name {
            /// The stage.
            pub fn new(decl: StageDecl) -> Self {
                Self {
                    decl,
                    size: PageSize::new(MIN_PAGE, MAX_PAGE),
                    nested: PageSize::new(MIN_PAGE, NESTED_PAGE),
                }
            }

            /// The page size its next outer query asks for (shrinks on timeouts, grows back).
            pub fn page_size(&self) -> u32 {
                self.size.get()
            }
        }

        #[async_trait]
        impl Stage for $name {
            fn decl(&self) -> &StageDecl {
                &self.decl
            }

            async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
                collect_per_repository(ctx, &self.size, &self.nested, &$spec).await
            }
        }
    };
}

fn project_with_items(node: &Value, org: i64, now: headroom_core::clock::Timestamp) -> Vec<Record> {
    let Some(project) = rows::project(node, org, now) else {
        return Vec::new();
    };
    let items = node.get("items").unwrap_or(&Value::Null);
    let mut out = vec![project];
    out.extend(
        nodes(items)
            .iter()
            .filter_map(|i| rows::project_item(i, node, now)),
    );
    out
}

/// The organization's projects, listed with only what tells whether a repository links them.
const ORG_PROJECTS_QUERY: &str = "query($login: String!, $first: Int!, $after: String) {
  organization(login: $login) {
    projectsV2(first: $first, after: $after) {
      nodes { number repositories(first: 1) { totalCount } }
      pageInfo { hasNextPage endCursor }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

/// One organization project with its views and a page of its items.
const ORG_PROJECT_QUERY: &str = concat!(
    "query($login: String!, $number: Int!, $first: Int!, $after: String) {
  organization(login: $login) {
    projectV2(number: $number) {
      id number title closed createdAt
      views(first: 20) { nodes { id name number layout } }
      items(first: $first, after: $after) {
        totalCount
        nodes { ",
    project_item_fields!(),
    " }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}",
);

/// The scope of the projects stage that covers the organization's own listing.
pub const ORG_PROJECTS_SCOPE: &str = "organization";

/// Where the organization's listing of projects stands, stored as its scope's cursor.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct OrgProjectsCursor {
    /// The listing page to ask for next (`Some("")` for the first); `None` once listed.
    next: Option<String>,
    /// Projects linked to no repository, listed but not yet collected (by number).
    pending: Vec<i64>,
    /// Where the first pending project's items continue.
    items_after: Option<String>,
}

/// Projects linked to no repository are listed only under their organization: the
/// per-repository pass cannot see them. This pass lists the organization's projects (one
/// cheap page per 50) and collects, with views and every item, those no repository links.
async fn collect_unlinked_projects(ctx: &StageCtx<'_>, size: &PageSize) -> Result<(), StageError> {
    let Some(stored) = repo_cursor(ctx, ORG_PROJECTS_SCOPE).await? else {
        return Ok(());
    };
    let mut cursor: OrgProjectsCursor = match stored {
        Some(text) => serde_json::from_str(&text)
            .map_err(|e| StageError::Permanent(format!("unreadable cursor {text:?}: {e}")))?,
        None => OrgProjectsCursor {
            next: Some(String::new()),
            ..OrgProjectsCursor::default()
        },
    };
    let login = ctx.target().to_owned();
    let org_id = organization_id(ctx).await?;
    loop {
        let records = if let Some(number) = cursor.pending.first().copied() {
            let after = cursor.items_after.clone();
            let data = gql::query(ctx, size, "sync_projects", ORG_PROJECT_QUERY, |_| {
                json!({ "login": login, "number": number, "first": NESTED_PAGE, "after": after })
            })
            .await?;
            let project = data
                .get("organization")
                .and_then(|o| o.get("projectV2"))
                .filter(|p| !p.is_null());
            let items = project.and_then(|p| p.get("items")).unwrap_or(&Value::Null);
            let now = ctx.now();
            let records = match project {
                Some(p) if cursor.items_after.is_none() => project_with_items(p, org_id, now),
                Some(p) => nodes(items)
                    .iter()
                    .filter_map(|i| rows::project_item(i, p, now))
                    .collect(),
                // Deleted since it was listed: nothing to store.
                None => Vec::new(),
            };
            cursor.items_after = next_cursor(items);
            if cursor.items_after.is_none() {
                cursor.pending.remove(0);
            }
            records
        } else if let Some(after) = cursor.next.clone() {
            let after = (!after.is_empty()).then_some(after);
            let data = gql::query(
                ctx,
                size,
                "sync_projects",
                ORG_PROJECTS_QUERY,
                |first| json!({ "login": login, "first": first, "after": after }),
            )
            .await?;
            let listing = data
                .get("organization")
                .and_then(|o| o.get("projectsV2"))
                .unwrap_or(&Value::Null);
            cursor.pending.extend(
                nodes(listing)
                    .iter()
                    .filter(|p| gql::count_at(p, &["repositories", "totalCount"]) == 0)
                    .filter_map(|p| rows::int(p, "number")),
            );
            cursor.next = next_cursor(listing);
            Vec::new()
        } else {
            ctx.finish_scope(ORG_PROJECTS_SCOPE, None).await?;
            return Ok(());
        };
        let text =
            serde_json::to_string(&cursor).map_err(|e| StageError::Permanent(e.to_string()))?;
        ctx.write_page(ORG_PROJECTS_SCOPE, &records, Some(text), false, None)
            .await?;
    }
}

/// Stage 3: Projects (v2) linked to every repository, with their views (the boards, in the
/// project's raw JSON) and every item (its own table, followed past 100); then the
/// organization's projects that no repository links.
#[derive(Debug)]
pub struct ProjectsStage {
    decl: StageDecl,
    size: PageSize,
    nested: PageSize,
}

impl ProjectsStage {
    /// The stage.
    pub fn new(decl: StageDecl) -> Self {
        Self {
            decl,
            size: PageSize::new(MIN_PAGE, MAX_PAGE),
            nested: PageSize::new(MIN_PAGE, NESTED_PAGE),
        }
    }
}

#[async_trait]
impl Stage for ProjectsStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        collect_per_repository(ctx, &self.size, &self.nested, &REPOSITORY_PROJECTS).await?;
        collect_unlinked_projects(ctx, &self.size).await
    }
}

const REPOSITORY_PROJECTS: RepoConnection = RepoConnection {
    route: "sync_projects",
    query: PROJECTS_QUERY,
    connection: "projectsV2",
    watermark: None,
    incremental: Incremental::Full,
    map: |n, _, org, now| project_with_items(n, org, now),
    nested: Some(Nested {
        field: "items",
        parent: "projectV2",
        query: PROJECT_ITEMS_QUERY,
        map: |c, parent, _, now| rows::project_item(c, parent, now),
    }),
};

// ---------------------------------------------------------------------- 4. issue comments

/// Issues updated since the watermark (a new comment updates its issue), each with its
/// first 100 comments; issues with more are followed with `COMMENTS_MORE_QUERY`.
const COMMENTS_QUERY: &str =
    "query($owner: String!, $name: String!, $first: Int!, $after: String, $since: DateTime) {
  repository(owner: $owner, name: $name) {
    issues(first: $first, after: $after, filterBy: { since: $since }, orderBy: { field: UPDATED_AT, direction: ASC }) {
      nodes {
        id number
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

const COMMENTS_MORE_QUERY: &str =
    "query($owner: String!, $name: String!, $number: Int!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    issue(number: $number) {
      id number
      comments(first: $first, after: $after) {
        nodes { id databaseId createdAt author { login } body }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
  rateLimit { limit cost remaining used resetAt }
}";

fn comment_of(
    comment: &Value,
    issue: &Value,
    repo: &RepoScope,
    now: headroom_core::clock::Timestamp,
) -> Option<Record> {
    rows::issue_comment(comment, repo.github_id, rows::int(issue, "number")?, now)
}

const ISSUE_COMMENTS_CONNECTION: RepoConnection = RepoConnection {
    route: "sync_issue_comments",
    query: COMMENTS_QUERY,
    connection: "issues",
    watermark: Some(Watermark::IssueComments),
    incremental: Incremental::Since(Watermark::IssueComments),
    map: |n, repo, _, now| {
        nodes(n.get("comments").unwrap_or(&Value::Null))
            .iter()
            .filter_map(|c| comment_of(c, n, repo, now))
            .collect()
    },
    nested: Some(Nested {
        field: "comments",
        parent: "issue",
        query: COMMENTS_MORE_QUERY,
        map: comment_of,
    }),
};

connection_stage!(
    /// Stage 4: Comments of every issue: the first 100 with each page of issues, the rest
    /// by follow-up queries per issue.
    IssueCommentsStage,
    ISSUE_COMMENTS_CONNECTION
);

// ----------------------------------------------------------------------- 5. pull requests

/// Pull requests newest-updated first (GitHub offers no `since` here: paging stops at the
/// watermark), each with its first 100 commits; the rest by `COMMITS_MORE_QUERY`.
const PULLS_QUERY: &str = "query($owner: String!, $name: String!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequests(first: $first, after: $after, orderBy: { field: UPDATED_AT, direction: DESC }) {
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

const COMMITS_MORE_QUERY: &str =
    "query($owner: String!, $name: String!, $number: Int!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      id number
      commits(first: $first, after: $after) {
        nodes { commit { oid message committedDate additions deletions changedFilesIfAvailable } }
        pageInfo { hasNextPage endCursor }
      }
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
    out.extend(
        nodes(pr.get("commits").unwrap_or(&Value::Null))
            .iter()
            .filter_map(|c| commit_of(c, pr, repo, now)),
    );
    out
}

fn commit_of(
    commit: &Value,
    pr: &Value,
    repo: &RepoScope,
    now: headroom_core::clock::Timestamp,
) -> Option<Record> {
    rows::pull_request_commit(commit, repo.github_id, rows::int(pr, "number")?, now)
}

const PULL_REQUESTS_CONNECTION: RepoConnection = RepoConnection {
    route: "sync_pull_requests",
    query: PULLS_QUERY,
    connection: "pullRequests",
    watermark: Some(Watermark::PullRequests),
    incremental: Incremental::NewestFirst(Watermark::PullRequests),
    map: |n, repo, _, now| pull_with_commits(n, repo, now),
    nested: Some(Nested {
        field: "commits",
        parent: "pullRequest",
        query: COMMITS_MORE_QUERY,
        map: commit_of,
    }),
};

connection_stage!(
    /// Stage 5: Pull requests with every commit.
    PullRequestsStage,
    PULL_REQUESTS_CONNECTION
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
                started_ms: Some(millis(ctx.now())),
                since: ctx
                    .store()
                    .watermark(repo.github_id, Watermark::WorkflowRuns)
                    .await?
                    .map(|at| (at - CLOCK_SKEW - RUN_SETTLING).to_string()),
                ..RunsCursor::default()
            },
        };
        let started = cursor
            .started_ms
            .and_then(|ms| Timestamp::from_millisecond(ms).ok())
            .unwrap_or_else(|| ctx.now());
        let full = &repo.full_name;
        // The first page of runs is asked for with the ETag of the last collection of this
        // repository that finished: unchanged, GitHub answers 304, which an authorized request
        // does not pay for. The new ETag is remembered only when this repository is finished
        // (a collection stopped midway asks again in full next time).
        let mut validator: Option<(ApiRequest, ApiResponse)> = None;
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
                let plain = ApiRequest::get(&path).route("sync_workflow_runs", Dimension::RestCore);
                let request = if page == 1 {
                    plain.clone().conditional()
                } else {
                    plain.clone()
                };
                let sent = match ctx.send(request.clone()).await {
                    // Nothing new since the last complete collection of this repository.
                    Ok(r) if r.not_modified() && cursor.since.is_some() => {
                        cursor.page = None;
                        continue;
                    }
                    // An ETag without a collection to stand on (never remembered that way,
                    // but a 304 must not pass for data): ask in full.
                    Ok(r) if r.not_modified() => ctx.send(plain).await,
                    other => other,
                };
                let response = match sent {
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
                let all_runs = body
                    .get("workflow_runs")
                    .and_then(Value::as_array)
                    .map_or(&[][..], Vec::as_slice);
                // Newest first: runs created before `since` were collected by an earlier sync,
                // and so was everything after them.
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
                let has_next =
                    headroom_http::paginate::next_page(&response.headers, &response.url).is_some();
                cursor.page = (has_next && !reached_known).then_some(page + 1);
                if request.conditional {
                    validator = Some((request, response));
                }
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

const BRANCHES_CONNECTION: RepoConnection = RepoConnection {
    route: "sync_branches",
    query: BRANCHES_QUERY,
    connection: "refs",
    watermark: Some(Watermark::Branches),
    incremental: Incremental::Full,
    map: |n, repo, _, now| rows::branch(n, repo.github_id, now).into_iter().collect(),
    nested: None,
};

connection_stage!(
    /// Stage 8: Branches of every repository.
    BranchesStage,
    BRANCHES_CONNECTION
);

// ------------------------------------------------------------------------ every document

/// The per-repository connections of the stages, by stage: what the walk and the probes
/// build their documents from.
const CONNECTIONS: [(&str, &RepoConnection); 5] = [
    (super::names::REPOSITORIES, &ISSUES_CONNECTION),
    (super::names::PROJECTS, &REPOSITORY_PROJECTS),
    (super::names::ISSUE_COMMENTS, &ISSUE_COMMENTS_CONNECTION),
    (super::names::PULL_REQUESTS, &PULL_REQUESTS_CONNECTION),
    (super::names::BRANCHES, &BRANCHES_CONNECTION),
];

/// Every GraphQL document the stages can send, each with a name that says which stage sends
/// it and why: the fixed queries, and the probes of every batch size from 1 to
/// [`PROBE_BATCH`] of every connection that has them, built by [`probe_query`] as the stage
/// builds them. Page sizes are variables, so one document covers every page size.
pub(crate) fn documents() -> Vec<(String, String)> {
    use super::names;
    let mut out: Vec<(String, String)> = [
        (format!("{}.organization", names::ORG), ORG_QUERY),
        (format!("{}.membersWithRole", names::ORG), MEMBERS_QUERY),
        (format!("{}.teams", names::ORG), TEAMS_QUERY),
        (format!("{}.repositories", names::REPOSITORIES), REPOS_QUERY),
        (
            format!("{}.organization.projectsV2", names::PROJECTS),
            ORG_PROJECTS_QUERY,
        ),
        (
            format!("{}.organization.projectV2", names::PROJECTS),
            ORG_PROJECT_QUERY,
        ),
    ]
    .into_iter()
    .map(|(name, doc)| (name, doc.to_owned()))
    .collect();
    for (stage, spec) in CONNECTIONS {
        out.push((
            format!("{stage}.repository.{}", spec.connection),
            spec.query.to_owned(),
        ));
        if let Some(nested) = &spec.nested {
            out.push((
                format!("{stage}.repository.{}.{}", nested.parent, nested.field),
                nested.query.to_owned(),
            ));
        }
        let newest_first = match spec.incremental {
            Incremental::Full => continue,
            Incremental::Since(_) => false,
            Incremental::NewestFirst(_) => true,
        };
        for size in 1..=PROBE_BATCH {
            let names: Vec<String> = (0..size).map(|k| format!("repo{k}")).collect();
            let batch: Vec<(&str, &str, &str)> = names
                .iter()
                .map(|n| ("acme", n.as_str(), "2027-01-15T08:00:00Z"))
                .collect();
            let (query, _) = probe_query(spec.connection, newest_first, &batch);
            out.push((format!("{stage}.probe.{}.{size}", spec.connection), query));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cursor_text() -> impl Strategy<Value = String> {
        "[A-Za-z0-9+/=:{}\"]{1,24}"
    }

    proptest! {
        /// Whatever a repository's collection owes, its cursor reads back the same — the
        /// resume continues exactly where the committed page left it.
        #[test]
        fn a_scope_cursor_reads_back_what_was_written(
            after in proptest::option::of(cursor_text()),
            outer_done: bool,
            more in proptest::collection::vec((1i64..100_000, cursor_text()), 0..5),
            started_ms in proptest::option::of(0i64..4_000_000_000_000),
            since in proptest::option::of(Just("2027-01-15T08:00:00Z".to_owned())),
            incomplete: bool,
        ) {
            let cur = ScopeCursor { after, outer_done, more, started_ms, since, incomplete };
            let back = ScopeCursor::parse(Some(cur.text().expect("serializable"))).expect("readable");
            prop_assert_eq!(back.after, cur.after);
            prop_assert_eq!(back.outer_done, cur.outer_done);
            prop_assert_eq!(back.more, cur.more);
            prop_assert_eq!(back.started_ms, cur.started_ms);
            prop_assert_eq!(back.since, cur.since);
            prop_assert_eq!(back.incomplete, cur.incomplete);
        }

        /// A cursor stored before nested connections were followed (GitHub's opaque cursor,
        /// never JSON) continues the outer connection after it.
        #[test]
        fn an_older_plain_cursor_is_the_outer_cursor(text in "[A-Za-z0-9+/=]{1,40}") {
            let cur = ScopeCursor::parse(Some(text.clone())).expect("readable");
            prop_assert_eq!(cur.after, Some(text));
            prop_assert!(!cur.outer_done && cur.more.is_empty() && cur.started_ms.is_none());
        }

        /// Newest-first paging stops only at nodes updated strictly before `since`; a node
        /// without a readable `updatedAt` is never taken for old.
        #[test]
        fn only_nodes_updated_before_since_are_old(offset in -100_000i64..100_000) {
            let since: Timestamp = "2027-01-15T08:00:00Z".parse().expect("valid");
            let updated = since + SignedDuration::from_secs(offset);
            let node = json!({ "updatedAt": updated.to_string() });
            prop_assert_eq!(older_than(&node, &since.to_string()), offset < 0);
            let bare = json!({ "number": 1 });
            prop_assert!(!older_than(&bare, &since.to_string()));
        }
    }
}
