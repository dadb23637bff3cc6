//! Stages 1 and 2: the site's facts (once per run), then the projects selected, whose
//! per-project checkpoints are the list the issue stage works on.

use async_trait::async_trait;
use headroom_core::route;
use headroom_store::{CheckpointStatus, Record};
use headroom_sync::{LISTED_CURSOR, RepoScope, Stage, StageCtx, StageDecl, StageError};
use serde_json::Value;

use super::Selection;
use super::send::{self, FACTS_SCOPE, SiteFacts};
use crate::rows::{self, CustomFields};

/// Projects asked a page (Jira's largest for project search).
const PROJECTS_PER_PAGE: u64 = 100;

/// Stage 1: the caller's time zone (`GET /myself`), in which Jira reads JQL dates, and the
/// ids of the site's sprint and story-point fields (`GET /field`), recorded as the detail of
/// the stage's [`FACTS_SCOPE`].
#[derive(Debug)]
pub struct SiteStage {
    decl: StageDecl,
}

impl SiteStage {
    /// The stage.
    pub fn new(decl: StageDecl) -> Self {
        Self { decl }
    }
}

#[async_trait]
impl Stage for SiteStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        Selection::parse(ctx.target()).map_err(StageError::Permanent)?;
        let known = ctx
            .checkpoint(FACTS_SCOPE)
            .await?
            .is_some_and(|c| c.status == CheckpointStatus::Done);
        if known {
            return Ok(());
        }
        let request = send::get(
            "/rest/api/3/myself",
            route::JIRA_METADATA,
            "GET /rest/api/3/myself",
        );
        let me: Value = ctx.send(request).await?.json()?;
        // The custom fields' ids differ per site: learned, never assumed.
        let request = send::get(
            "/rest/api/3/field",
            route::JIRA_METADATA,
            "GET /rest/api/3/field",
        );
        let list: Value = ctx.send(request).await?.json()?;
        let custom = CustomFields::from_field_list(&list);
        let facts = SiteFacts {
            time_zone: me
                .get("timeZone")
                .and_then(Value::as_str)
                .map(str::to_owned),
            sprint_field: custom.sprint,
            story_points_field: custom.story_points,
        };
        ctx.finish_scope(FACTS_SCOPE, Some(send::to_text(&facts)?))
            .await?;
        Ok(())
    }
}

/// Stage 2: the projects the credential can browse (`GET /project/search`), those the
/// selection names when it names any. Each becomes a scope of the issue stage; a project
/// named but not listed (restricted, or no such key) is recorded as refused.
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
        let selection = Selection::parse(ctx.target()).map_err(StageError::Permanent)?;
        let mut cursor = ctx.checkpoint("").await?.and_then(|c| c.page_cursor);
        while cursor.as_deref() != Some(LISTED_CURSOR) {
            let start: u64 = match cursor.as_deref() {
                None => 0,
                Some(text) => text
                    .parse()
                    .map_err(|_| StageError::Permanent(format!("unreadable cursor {text:?}")))?,
            };
            let path = format!(
                "/rest/api/3/project/search?startAt={start}&maxResults={PROJECTS_PER_PAGE}\
                 &orderBy=key"
            );
            let request = send::get(
                &path,
                route::JIRA_METADATA,
                "GET /rest/api/3/project/search",
            )
            .app_points(1 + u32::try_from(PROJECTS_PER_PAGE).unwrap_or(u32::MAX));
            let body: Value = ctx.send(request).await?.json()?;
            let (values, next) = send::offset_page(&body, "values", start);
            let origin = send::origin(ctx);
            let records: Vec<Record> = values
                .iter()
                .filter(|p| {
                    p.get("key")
                        .and_then(Value::as_str)
                        .is_some_and(|k| selection.selects(k))
                })
                .filter_map(|p| rows::project(p, origin))
                .collect();
            let scopes: Vec<RepoScope> = records
                .iter()
                .filter_map(|r| match r {
                    Record::Jira(headroom_store::jira::JiraRecord::Project(p)) => Some(RepoScope {
                        github_id: p.id,
                        full_name: p.key.clone(),
                    }),
                    _ => None,
                })
                .collect();
            let next = next.map_or_else(|| LISTED_CURSOR.to_owned(), |n| n.to_string());
            ctx.write_listing_page(&records, next.clone(), &scopes)
                .await?;
            cursor = Some(next);
        }
        let listed = ctx.repositories().await?;
        for key in &selection.projects {
            if !listed.iter().any(|p| p.full_name.eq_ignore_ascii_case(key)) {
                ctx.record_refused(
                    key,
                    "not_visible",
                    "no project with this key is visible to the credential (restricted, or \
                     no such key)",
                );
            }
        }
        // A project's own row came with the listing: nothing more is asked per project.
        for project in listed {
            let scope = project.scope();
            let done = ctx
                .checkpoint(&scope)
                .await?
                .is_some_and(|c| c.status == CheckpointStatus::Done);
            if !done {
                ctx.finish_scope(&scope, None).await?;
            }
        }
        Ok(())
    }
}
