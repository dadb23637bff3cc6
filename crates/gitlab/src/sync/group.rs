//! Stages 1 and 2: the group, its subgroups and their milestones (once per run), then the
//! projects of the group and its subgroups, whose per-project checkpoints are the list every
//! later stage works on.

use async_trait::async_trait;
use headroom_core::provider::path::segment;
use headroom_core::{AppLimit, route};
use headroom_http::{ApiError, ApiRequest};
use headroom_store::Record;
use headroom_sync::{LISTED_CURSOR, RepoScope, Stage, StageCtx, StageDecl, StageError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::list::PER_PAGE;
use super::rows::{self, Origin};

/// Where the `group` stage stands, stored as its cursor.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct GroupCursor {
    /// The top group's id, once read.
    top: Option<i64>,
    /// The next page of descendant groups; `None` once listed.
    descendants: Option<u32>,
    /// Groups whose milestones are still to read, with the next page of each (top first).
    milestones: Vec<(i64, u32)>,
    /// Every page is stored.
    done: bool,
}

/// Stage 1: the group (`GET /groups/:id`, by path or id), its descendant groups, and the
/// milestones of each.
#[derive(Debug)]
pub struct GroupStage {
    decl: StageDecl,
}

impl GroupStage {
    /// The stage.
    pub fn new(decl: StageDecl) -> Self {
        Self { decl }
    }
}

/// `/groups/<target>`, the target (a path such as `top/sub`, or an id) as one segment.
fn group_path(target: &str) -> Result<String, StageError> {
    segment(target)
        .map(|s| format!("/groups/{s}"))
        .map_err(|e| StageError::Permanent(format!("group {target:?}: {e}")))
}

fn paged(path: &str, extra: &str, page: u32) -> String {
    format!("{path}?{extra}per_page={PER_PAGE}&page={page}")
}

fn to_text<T: Serialize>(cursor: &T) -> Result<String, StageError> {
    serde_json::to_string(cursor).map_err(|e| StageError::Permanent(e.to_string()))
}

/// One page of a list and the page after it.
async fn list(
    ctx: &StageCtx<'_>,
    route: headroom_core::RouteFamily,
    path: String,
) -> Result<(Vec<Value>, Option<u32>), StageError> {
    let mut request = ApiRequest::get(&path).route(route);
    // GitLab.com limits this endpoint on its own, and its 429 carries no header to budget by.
    if route == route::GITLAB_PROJECTS {
        request = request.app_limit(AppLimit::GitlabGroupProjects);
    }
    let response = ctx.send(request).await?;
    let items = match response.json::<Value>()? {
        Value::Array(items) => items,
        _ => {
            return Err(StageError::Permanent(format!(
                "{path}: expected a list (HTTP {})",
                response.status
            )));
        }
    };
    let next = headroom_http::paginate::gitlab::next_offset_page(&response.headers, &response.url)
        .map_err(|stop| StageError::Permanent(format!("{path}: paging stopped ({stop:?})")))?;
    Ok((items, next))
}

#[async_trait]
impl Stage for GroupStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        let stored = ctx.checkpoint("").await?.and_then(|c| c.page_cursor);
        let mut cursor: GroupCursor = match stored {
            Some(text) => serde_json::from_str(&text)
                .map_err(|e| StageError::Permanent(format!("unreadable cursor {text:?}: {e}")))?,
            None => GroupCursor::default(),
        };
        while !cursor.done {
            let (records, next) = step(ctx, cursor).await?;
            ctx.write_page("", &records, Some(to_text(&next)?), false, None)
                .await?;
            cursor = next;
        }
        Ok(())
    }
}

/// One request of the group stage: its rows and the cursor after it.
async fn step(
    ctx: &StageCtx<'_>,
    mut cursor: GroupCursor,
) -> Result<(Vec<Record>, GroupCursor), StageError> {
    let origin = Origin {
        instance: ctx.api_host(),
        now: ctx.now(),
    };
    let Some(top) = cursor.top else {
        let target = ctx.target().to_owned();
        let response = match ctx
            .send(
                ApiRequest::get(group_path(&target)?)
                    .route(route::GITLAB_GROUPS)
                    .app_limit(AppLimit::GitlabGroupRead),
            )
            .await
        {
            Err(ApiError::Gone { status }) => {
                return Err(StageError::Permanent(format!(
                    "group {target} not found ({status}): check its path, and that the token's \
                     user can see it"
                )));
            }
            other => other?,
        };
        let body: Value = response.json()?;
        let (Some(record), Some(id)) = (
            rows::group(&body, origin),
            body.get("id").and_then(Value::as_i64),
        ) else {
            return Err(StageError::Permanent(format!(
                "group {target}: the answer has no id or full_path"
            )));
        };
        cursor.top = Some(id);
        cursor.descendants = Some(1);
        cursor.milestones = vec![(id, 1)];
        return Ok((vec![record], cursor));
    };
    if let Some(page) = cursor.descendants {
        let path = paged(&format!("/groups/{top}/descendant_groups"), "", page);
        let (items, next) = list(ctx, route::GITLAB_GROUPS, path).await?;
        let records: Vec<Record> = items
            .iter()
            .filter_map(|v| rows::group(v, origin))
            .collect();
        for record in &records {
            if let Record::GitlabGroup(g) = record {
                cursor.milestones.push((g.id, 1));
            }
        }
        cursor.descendants = next;
        return Ok((records, cursor));
    }
    if let Some(&(group, page)) = cursor.milestones.first() {
        let path = paged(&format!("/groups/{group}/milestones"), "", page);
        let (items, next) = list(ctx, route::GITLAB_MILESTONES, path).await?;
        let records = items
            .iter()
            .filter_map(|v| rows::milestone(v, origin))
            .collect();
        match next {
            Some(next) => cursor.milestones[0].1 = next,
            None => {
                cursor.milestones.remove(0);
            }
        }
        return Ok((records, cursor));
    }
    cursor.done = true;
    Ok((Vec::new(), cursor))
}

/// Stage 2: the projects of the group and its subgroups, listed by id (shared projects of
/// other groups left out). Each becomes a scope of the per-project stages.
#[derive(Debug)]
pub struct ProjectsStage {
    decl: StageDecl,
}

impl ProjectsStage {
    /// The stage.
    pub fn new(decl: StageDecl) -> Self {
        Self { decl }
    }
}

#[async_trait]
impl Stage for ProjectsStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        // By the path (or id) the run names: stage 1's cursor, which knew the id, is cleared
        // once it is done.
        let group = group_path(ctx.target())?;
        let mut cursor = ctx.checkpoint("").await?.and_then(|c| c.page_cursor);
        while cursor.as_deref() != Some(LISTED_CURSOR) {
            let page: u32 = match cursor.as_deref() {
                None => 1,
                Some(text) => text
                    .parse()
                    .map_err(|_| StageError::Permanent(format!("unreadable cursor {text:?}")))?,
            };
            let path = paged(
                &format!("{group}/projects"),
                "include_subgroups=true&with_shared=false&order_by=id&sort=asc&",
                page,
            );
            let (items, next) = list(ctx, route::GITLAB_PROJECTS, path).await?;
            let origin = Origin {
                instance: ctx.api_host(),
                now: ctx.now(),
            };
            let records: Vec<Record> = items
                .iter()
                .filter_map(|v| rows::project(v, origin))
                .collect();
            let scopes: Vec<RepoScope> = records
                .iter()
                .filter_map(|r| match r {
                    Record::GitlabProject(p) => Some(RepoScope {
                        github_id: p.id,
                        full_name: p.path_with_namespace.clone(),
                    }),
                    _ => None,
                })
                .collect();
            let next = next.map_or_else(|| LISTED_CURSOR.to_owned(), |p| p.to_string());
            ctx.write_listing_page(&records, next.clone(), &scopes)
                .await?;
            cursor = Some(next);
        }
        // A project's own row came with the listing: nothing more is asked per project.
        for project in ctx.repositories().await? {
            let scope = project.scope();
            let done = ctx
                .checkpoint(&scope)
                .await?
                .is_some_and(|c| c.status == headroom_store::CheckpointStatus::Done);
            if !done {
                ctx.finish_scope(&scope, None).await?;
            }
        }
        Ok(())
    }
}
