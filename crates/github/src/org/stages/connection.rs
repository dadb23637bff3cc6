//! What the per-repository stages share: the paging of a GraphQL connection under
//! `repository(owner, name)` for every repository of the run (checkpointed cursors, nested
//! follow-ups, watermarks), the aliased change probes that finish unchanged repositories
//! without a query of their own, and REST paging.

// What every stage file takes from here (a glob: each uses its own part).
pub(super) use async_trait::async_trait;
pub(super) use headroom_core::clock::{SignedDuration, Timestamp};
pub(super) use headroom_core::{RouteFamily, route};
pub(super) use headroom_http::{ApiError, ApiRequest, ApiResponse};
pub(super) use headroom_store::{CheckpointStatus, Record, Watermark};
pub(super) use headroom_sync::{RepoScope, Stage, StageCtx, StageDecl, StageError};
pub(super) use serde::{Deserialize, Serialize};
pub(super) use serde_json::{Value, json};

pub(super) use super::super::gql::{self, PageSize, next_cursor, nodes};
pub(super) use super::super::rows;

/// Pages of GraphQL connections: at most 100 (GitHub's cap), at least 5.
pub(super) const MAX_PAGE: u32 = 50;
pub(super) const MIN_PAGE: u32 = 5;
/// Follow-up pages of a nested connection: one parent each, so GitHub's cap.
pub(super) const NESTED_PAGE: u32 = 100;
/// REST page size.
pub(super) const PER_PAGE: u32 = 100;

/// The sentinel cursor of a listing that is complete.
pub(super) const LISTED: &str = headroom_sync::LISTED_CURSOR;
/// The sentinel cursor of a once-per-run stage whose last page is stored.
pub(super) const END: &str = "end";

pub(super) async fn organization_id(ctx: &StageCtx<'_>) -> Result<i64, StageError> {
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

pub(super) fn repo_vars(repo: &RepoScope, first: u32, after: Option<&str>) -> Value {
    let (owner, name) = repo
        .owner_and_name()
        .unwrap_or((repo.full_name.as_str(), ""));
    json!({ "owner": owner, "name": name, "first": first, "after": after })
}

/// Where one repository of a per-repository stage stands: `None` when it is done.
pub(super) async fn repo_cursor(
    ctx: &StageCtx<'_>,
    scope: &str,
) -> Result<Option<Option<String>>, StageError> {
    Ok(match ctx.checkpoint(scope).await? {
        Some(cp) if cp.status == CheckpointStatus::Done => None,
        Some(cp) => Some(cp.page_cursor),
        None => Some(None),
    })
}

pub(super) type MapNode =
    fn(&Value, &RepoScope, i64, headroom_core::clock::Timestamp) -> Vec<Record>;
pub(super) type MapChild =
    fn(&Value, &Value, &RepoScope, headroom_core::clock::Timestamp) -> Option<Record>;

/// How a per-repository stage asks only for what changed since its last collection.
#[derive(Debug, Clone, Copy)]
pub(super) enum Incremental {
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
pub(super) const CLOCK_SKEW: SignedDuration = SignedDuration::from_secs(60);

/// A connection inside every node of the outer one (comments of an issue, commits of a pull
/// request, items of a project). The outer query asks for its first page; parents with more
/// are followed one by one with `query` (variables `owner`, `name`, `number`, `first`,
/// `after`), which answers `repository.<parent>(number:) { id number <field> }`.
pub(super) struct Nested {
    /// The family its follow-ups are counted under (a pull request's further commits are
    /// `commits`, not `pull_requests`).
    pub(super) route: RouteFamily,
    pub(super) field: &'static str,
    pub(super) parent: &'static str,
    pub(super) query: &'static str,
    /// One child node, given its parent (whose `id` and `number` the queries select).
    pub(super) map: MapChild,
}

/// A GraphQL connection under `repository(owner, name)`, collected page by page for every
/// repository of the run.
pub(super) struct RepoConnection {
    pub(super) route: RouteFamily,
    pub(super) query: &'static str,
    pub(super) connection: &'static str,
    /// Written when a repository is finished.
    pub(super) watermark: Option<Watermark>,
    pub(super) incremental: Incremental,
    pub(super) map: MapNode,
    pub(super) nested: Option<Nested>,
}

/// Where one repository of a per-repository stage stands, stored as its checkpoint cursor.
/// A cursor that is not JSON is an outer cursor from before nested connections were
/// followed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct ScopeCursor {
    /// The outer connection continues after this cursor (`None`: from its start).
    #[serde(default)]
    pub(super) after: Option<String>,
    /// The outer connection is exhausted; only nested follow-ups remain.
    #[serde(default)]
    pub(super) outer_done: bool,
    /// Parents (by number) whose nested connection continues after the cursor given.
    #[serde(default)]
    pub(super) more: Vec<(i64, String)>,
    /// When this repository's collection started: its watermark once finished.
    #[serde(default)]
    pub(super) started_ms: Option<i64>,
    /// The `since` in force for this collection (kept so a resume asks the same).
    #[serde(default)]
    pub(super) since: Option<String>,
    /// A nested connection was refused (a partial answer): no watermark when finished.
    #[serde(default)]
    pub(super) incomplete: bool,
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

pub(super) fn millis(at: Timestamp) -> i64 {
    at.as_millisecond()
}

/// The `since` of a repository's collection: its watermark minus the clock allowance, or
/// `None` (everything) when it was never collected or the stage is not incremental.
pub(super) async fn since_of(
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

pub(super) fn older_than(node: &Value, since: &str) -> bool {
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
pub(super) const RUN_SETTLING: SignedDuration = SignedDuration::from_hours(6);

/// Repositories asked about in one probe query.
pub(super) const PROBE_BATCH: usize = 25;

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
pub(super) async fn finish_unchanged(
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

pub(super) async fn collect_per_repository(
    ctx: &StageCtx<'_>,
    size: &PageSize,
    nested_size: &PageSize,
    spec: &RepoConnection,
) -> Result<(), StageError> {
    let org_id = organization_id(ctx).await?;
    let repos = ctx.repositories().await?;
    finish_unchanged(ctx, size, spec, &repos).await?;
    let sizes = (size, nested_size);
    ctx.for_each_repository(repos, |repo| async move {
        collect_repository(ctx, sizes, spec, org_id, &repo).await
    })
    .await
}

/// One repository's connection, page by page from its stored cursor: the outer connection,
/// then the follow-up pages of each parent's nested connection, until both are done.
async fn collect_repository(
    ctx: &StageCtx<'_>,
    (size, nested_size): (&PageSize, &PageSize),
    spec: &RepoConnection,
    org_id: i64,
    repo: &RepoScope,
) -> Result<(), StageError> {
    let scope = repo.scope();
    let Some(stored) = repo_cursor(ctx, &scope).await? else {
        return Ok(());
    };
    let mut cur = ScopeCursor::parse(stored)?;
    if cur.started_ms.is_none() {
        cur.started_ms = Some(millis(ctx.now()));
        cur.since = since_of(ctx, repo, spec.incremental).await?;
    }
    let started = cur
        .started_ms
        .and_then(|ms| Timestamp::from_millisecond(ms).ok())
        .unwrap_or_else(|| ctx.now());
    loop {
        let records = if let (Some(nested), Some((number, after))) =
            (&spec.nested, cur.more.first().cloned())
        {
            let follow_up = (nested, number, after);
            nested_page(ctx, nested_size, follow_up, repo, &mut cur).await?
        } else if cur.outer_done {
            cur.more.clear();
            Some(Vec::new())
        } else {
            outer_page(ctx, size, spec, org_id, repo, &mut cur).await?
        };
        // The repository is gone or its connection refused: its scope is finished.
        let Some(records) = records else {
            return Ok(());
        };
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
            return Ok(());
        }
    }
}

/// A follow-up: the next page of one parent's nested connection. `None` when the repository
/// is gone (its scope finished).
async fn nested_page(
    ctx: &StageCtx<'_>,
    nested_size: &PageSize,
    (nested, number, after): (&Nested, i64, String),
    repo: &RepoScope,
    cur: &mut ScopeCursor,
) -> Result<Option<Vec<Record>>, StageError> {
    let data = gql::query(ctx, nested_size, nested.route, nested.query, |first| {
        let mut vars = repo_vars(repo, first, Some(&after));
        vars["number"] = json!(number);
        vars
    })
    .await?;
    let Some(repository) = data.get("repository").filter(|r| !r.is_null()) else {
        ctx.finish_scope(&repo.scope(), Some("repository not found".into()))
            .await?;
        return Ok(None);
    };
    let now = ctx.now();
    let Some(parent) = repository.get(nested.parent).filter(|p| !p.is_null()) else {
        // Gone since its first page: nothing more to collect for it.
        cur.more.remove(0);
        return Ok(Some(Vec::new()));
    };
    let connection = parent.get(nested.field).unwrap_or(&Value::Null);
    // Refused: what was stored stays, but this collection is not whole.
    cur.incomplete |= connection.is_null();
    let records = nodes(connection)
        .iter()
        .filter_map(|c| (nested.map)(c, parent, repo, now))
        .collect();
    match next_cursor(connection) {
        Some(next) => cur.more[0].1 = next,
        None => {
            cur.more.remove(0);
        }
    }
    Ok(Some(records))
}

/// The next page of the outer connection, and the nested connections its nodes still owe.
/// `None` when the repository is gone or the connection refused (its scope finished).
async fn outer_page(
    ctx: &StageCtx<'_>,
    size: &PageSize,
    spec: &RepoConnection,
    org_id: i64,
    repo: &RepoScope,
    cur: &mut ScopeCursor,
) -> Result<Option<Vec<Record>>, StageError> {
    let scope = repo.scope();
    let data = gql::query(ctx, size, spec.route, spec.query, |first| {
        let mut vars = repo_vars(repo, first, cur.after.as_deref());
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
        return Ok(None);
    };
    let Some(connection) = repository.get(spec.connection).filter(|c| !c.is_null()) else {
        // Refused (recorded on the run; GitHub's connections are never null otherwise): done
        // for this run, with no watermark, so a run with access collects everything since
        // the last whole collection.
        ctx.finish_scope(&scope, Some(format!("{} refused", spec.connection)))
            .await?;
        return Ok(None);
    };
    let now = ctx.now();
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
    let records = page
        .iter()
        .flat_map(|n| (spec.map)(n, repo, org_id, now))
        .collect();
    if let Some(nested) = &spec.nested {
        for node in &page {
            let inner = node.get(nested.field).unwrap_or(&Value::Null);
            cur.incomplete |= inner.is_null();
            if let (Some(number), Some(after)) = (rows::int(node, "number"), next_cursor(inner)) {
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
    Ok(Some(records))
}

pub(super) async fn rest_get(
    ctx: &StageCtx<'_>,
    route: RouteFamily,
    path: &str,
) -> Result<ApiResponse, ApiError> {
    ctx.send(ApiRequest::get(path).route(route)).await
}

/// Every page of a REST list (following `Link: rel="next"`), the items under `field`.
pub(super) async fn rest_list(
    ctx: &StageCtx<'_>,
    route: RouteFamily,
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
