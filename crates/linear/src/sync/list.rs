//! Stages 2–8, 10 and 11: one top-level connection each (`teams`, `issueLabels`, …), paged
//! by Relay cursor ordered by `updatedAt`, every page committed with the cursor after it, and
//! between runs asked only for what changed since the family's watermark, which the last
//! page's write records.

use async_trait::async_trait;
use headroom_core::RouteFamily;
use headroom_core::clock::Timestamp;
use headroom_core::route;
use headroom_store::linear::LinearWatermark;
use headroom_store::{CheckpointStatus, Record};
use headroom_sync::{Stage, StageCtx, StageDecl, StageError};

use super::page::{self, ListCursor, PageSize};
use super::workspace::workspace_of;
use super::{CLOCK_SKEW, Selection, selection, send};
use crate::documents::{self, Document};
use crate::rows::{self, Origin};

/// One top-level connection a stage pages.
#[derive(Debug)]
pub struct Family {
    /// The document.
    pub doc: &'static Document,
    /// The connection's field under `data`.
    pub root: &'static str,
    /// The route family its requests are counted in.
    pub route: RouteFamily,
    /// Linear filters it by team, and a `--team` selection narrows it.
    pub by_team: bool,
}

pub(crate) const TEAMS: Family = Family {
    doc: &documents::TEAMS,
    root: "teams",
    route: route::LINEAR_TEAMS,
    by_team: false,
};
pub(crate) const USERS: Family = Family {
    doc: &documents::USERS,
    root: "users",
    route: route::LINEAR_USERS,
    by_team: false,
};
pub(crate) const TEAM_MEMBERSHIPS: Family = Family {
    doc: &documents::TEAM_MEMBERSHIPS,
    root: "teamMemberships",
    route: route::LINEAR_TEAM_MEMBERS,
    by_team: false,
};
pub(crate) const WORKFLOW_STATES: Family = Family {
    doc: &documents::WORKFLOW_STATES,
    root: "workflowStates",
    route: route::LINEAR_METADATA,
    by_team: true,
};
pub(crate) const LABELS: Family = Family {
    doc: &documents::LABELS,
    root: "issueLabels",
    route: route::LINEAR_METADATA,
    by_team: false,
};
pub(crate) const PROJECTS: Family = Family {
    doc: &documents::PROJECTS,
    root: "projects",
    route: route::LINEAR_PROJECTS,
    by_team: false,
};
pub(crate) const CYCLES: Family = Family {
    doc: &documents::CYCLES,
    root: "cycles",
    route: route::LINEAR_CYCLES,
    by_team: true,
};
pub(crate) const COMMENTS: Family = Family {
    doc: &documents::COMMENTS,
    root: "comments",
    route: route::LINEAR_COMMENTS,
    by_team: false,
};
pub(crate) const ATTACHMENTS: Family = Family {
    doc: &documents::ATTACHMENTS,
    root: "attachments",
    route: route::LINEAR_ATTACHMENTS,
    by_team: false,
};

/// A stage paging one [`Family`].
#[derive(Debug)]
pub struct ListStage {
    decl: StageDecl,
    family: &'static Family,
}

impl ListStage {
    /// The stage `decl`, collecting `family`.
    pub(crate) fn new(decl: StageDecl, family: &'static Family) -> Self {
        Self { decl, family }
    }
}

/// A stage's stored cursor, as its checkpoint has it.
pub(crate) enum Opened<T> {
    /// The stage finished in this run.
    Done,
    /// Where it stopped.
    Stored(T),
    /// Not started.
    Fresh,
}

/// The stage's checkpoint in this run.
pub(crate) async fn stored<T: for<'de> serde::Deserialize<'de>>(
    ctx: &StageCtx<'_>,
) -> Result<Opened<T>, StageError> {
    Ok(match ctx.checkpoint("").await? {
        Some(cp) if cp.status == CheckpointStatus::Done => Opened::Done,
        Some(cp) => match cp.page_cursor {
            Some(text) => Opened::Stored(page::from_text(&text).map_err(StageError::Permanent)?),
            None => Opened::Fresh,
        },
        None => Opened::Fresh,
    })
}

/// A fresh cursor asking only for what changed since the watermark of `doc`'s entity (for a
/// selection, its own or the whole workspace's, the later).
pub(crate) async fn fresh(
    ctx: &StageCtx<'_>,
    doc: &Document,
    workspace: &str,
    sel: &Selection,
    by_team: bool,
) -> Result<ListCursor, StageError> {
    let since = if doc.incremental {
        since(ctx, doc.entity, workspace, sel, by_team).await?
    } else {
        None
    };
    Ok(ListCursor {
        after: None,
        size: PageSize::default(),
        started_ms: ctx.now().as_millisecond(),
        since: since.map(|at| (at - CLOCK_SKEW).to_string()),
    })
}

/// The latest watermark standing for this collection.
async fn since(
    ctx: &StageCtx<'_>,
    entity: &str,
    workspace: &str,
    sel: &Selection,
    by_team: bool,
) -> Result<Option<Timestamp>, StageError> {
    let store = ctx.store();
    let own = page::family(entity, &sel.teams, by_team);
    let mut at = store.linear_watermark(workspace, &own).await?;
    if own != entity {
        // A whole-workspace collection covers every team.
        let whole = store.linear_watermark(workspace, entity).await?;
        at = at.max(whole);
    }
    Ok(at)
}

/// The watermark record a finished collection writes (none for a family without a filter).
pub(crate) fn mark(
    doc: &Document,
    workspace: &str,
    sel: &Selection,
    by_team: bool,
    cursor: &ListCursor,
) -> Vec<Record> {
    let Ok(started) = Timestamp::from_millisecond(cursor.started_ms) else {
        return Vec::new();
    };
    if !doc.incremental {
        return Vec::new();
    }
    vec![Record::from(LinearWatermark {
        workspace: workspace.to_owned(),
        family: page::family(doc.entity, &sel.teams, by_team),
        collected_at: started,
    })]
}

/// The rows of a page's nodes: a node without an id is skipped, never stored half.
pub(crate) fn records(
    entity: &str,
    nodes: &[serde_json::Value],
    issue: Option<&str>,
    o: Origin<'_>,
) -> Vec<Record> {
    nodes
        .iter()
        .filter_map(|n| rows::row(entity, n, issue, o))
        .collect()
}

#[async_trait]
impl Stage for ListStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        let f = self.family;
        let workspace = workspace_of(ctx).await?;
        let sel = selection(ctx)?;
        let mut cursor = match stored::<ListCursor>(ctx).await? {
            Opened::Done => return Ok(()),
            Opened::Stored(cursor) => cursor,
            Opened::Fresh => fresh(ctx, f.doc, &workspace, &sel, f.by_team).await?,
        };
        let filter = page::filter(cursor.since.as_deref(), &sel.teams, f.by_team);
        loop {
            let after = cursor.after.clone();
            let body = send::page(ctx, f.doc, f.route, &mut cursor.size, |n| {
                page::list_variables(f.doc, n, after.as_deref(), &filter)
            })
            .await?;
            let data = send::data(f.doc, body)?;
            let conn = data.get(f.root).unwrap_or(&serde_json::Value::Null);
            let (nodes, next) = page::connection(conn)
                .map_err(|e| StageError::Permanent(format!("{}: {e}", f.doc.name)))?;
            let origin = Origin {
                workspace: &workspace,
                now: ctx.now(),
            };
            let mut rows = records(f.doc.entity, &nodes, None, origin);
            match next {
                Some(after) => {
                    cursor.after = Some(after);
                    let text = page::to_text(&cursor).map_err(StageError::Permanent)?;
                    ctx.write_page("", &rows, Some(text), false, None).await?;
                }
                None => {
                    rows.extend(mark(f.doc, &workspace, &sel, f.by_team, &cursor));
                    ctx.write_page("", &rows, None, true, None).await?;
                    return Ok(());
                }
            }
        }
    }
}
