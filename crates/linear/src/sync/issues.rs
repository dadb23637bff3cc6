//! Stage 9: issues, each with its history (`issue.history`, paged per issue, no filter). A
//! page of issues carries each issue's first [`documents::NESTED_HISTORY`] entries, stored
//! with it: Linear's request budget (2,500 an hour for an API key) would run out long before
//! its complexity if every issue cost a request of its own. Only an issue whose nested
//! history has a next page owes the rest, from the nested page's cursor: the issues owed are
//! kept in the cursor committed with the page, and each history page is committed with the
//! cursor that no longer owes it, so a kill redoes at most the pages in flight. The owed
//! histories are read side by side; the last page stored writes the watermark and finishes
//! the stage.

use async_trait::async_trait;
use headroom_core::route;
use headroom_store::Record;
use headroom_sync::{Stage, StageCtx, StageDecl, StageError};
use serde_json::{Value, json};

use super::list::{self, Opened};
use super::page::{self, IssuesCursor, ListCursor, OwedHistory, PageSize};
use super::workspace::workspace_of;
use super::{Selection, selection, send};
use crate::documents;
use crate::rows::Origin;

/// Issues are narrowed by `--team`.
const BY_TEAM: bool = true;

/// Stage 9.
#[derive(Debug)]
pub struct IssuesStage {
    decl: StageDecl,
}

impl IssuesStage {
    /// The stage.
    pub fn new(decl: StageDecl) -> Self {
        Self { decl }
    }
}

/// What every write of the stage needs.
struct Run<'a> {
    workspace: &'a str,
    sel: &'a Selection,
}

impl Run<'_> {
    /// Commits `rows` with `cursor`, or, when nothing is left, with the watermark and `done`.
    async fn write(
        &self,
        ctx: &StageCtx<'_>,
        mut rows: Vec<Record>,
        cursor: &IssuesCursor,
    ) -> Result<(), StageError> {
        if cursor.finished() {
            let doc = &documents::ISSUES;
            rows.extend(list::mark(
                doc,
                self.workspace,
                self.sel,
                BY_TEAM,
                &cursor.list,
            ));
            ctx.write_page("", &rows, None, true, None).await?;
        } else {
            let text = page::to_text(cursor).map_err(StageError::Permanent)?;
            ctx.write_page("", &rows, Some(text), false, None).await?;
        }
        Ok(())
    }
}

#[async_trait]
impl Stage for IssuesStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        let workspace = workspace_of(ctx).await?;
        let sel = selection(ctx)?;
        let run = Run {
            workspace: &workspace,
            sel: &sel,
        };
        let mut cursor = match list::stored::<IssuesCursor>(ctx).await? {
            Opened::Done => return Ok(()),
            Opened::Stored(cursor) => cursor,
            Opened::Fresh => IssuesCursor {
                list: list::fresh(ctx, &documents::ISSUES, &workspace, &sel, BY_TEAM).await?,
                listed: false,
                owed: Vec::new(),
                history_size: PageSize::default(),
            },
        };
        let filter = page::filter(cursor.list.since.as_deref(), &sel.teams, BY_TEAM);
        while !cursor.finished() {
            if !cursor.owed.is_empty() {
                cursor = histories(ctx, &run, cursor).await?;
                continue;
            }
            let (rows, owed, next) = issue_page(ctx, &run, &mut cursor.list, &filter).await?;
            cursor = cursor.after_issue_page(owed, next);
            run.write(ctx, rows, &cursor).await?;
        }
        Ok(())
    }
}

/// The next page of issues: its rows (the issues and their nested history), the history its
/// issues still owe, and the cursor of the page after.
async fn issue_page(
    ctx: &StageCtx<'_>,
    run: &Run<'_>,
    list: &mut ListCursor,
    filter: &Value,
) -> Result<(Vec<Record>, Vec<OwedHistory>, Option<String>), StageError> {
    let doc = &documents::ISSUES;
    let after = list.after.clone();
    let body = send::page(ctx, doc, route::LINEAR_ISSUES, &mut list.size, |n| {
        page::list_variables(doc, n, after.as_deref(), filter)
    })
    .await?;
    let data = send::data(doc, body)?;
    let conn = data.get("issues").unwrap_or(&Value::Null);
    let failed = |e: String| StageError::Permanent(format!("{}: {e}", doc.name));
    let (mut nodes, next) = page::connection(conn).map_err(failed)?;
    let origin = Origin {
        workspace: run.workspace,
        now: ctx.now(),
    };
    let mut entries = Vec::new();
    let mut owed = Vec::new();
    for node in &mut nodes {
        // Only an issue stored (one with an id) carries or owes its history.
        if node.get("id").and_then(Value::as_str).is_none() {
            continue;
        }
        let (nested, more) = page::nested_history(node).map_err(failed)?;
        let issue = node.get("id").and_then(Value::as_str).unwrap_or_default();
        let history = &documents::ISSUE_HISTORY;
        entries.extend(list::records(history.entity, &nested, Some(issue), origin));
        owed.extend(more);
    }
    let mut rows = list::records(doc.entity, &nodes, None, origin);
    rows.extend(entries);
    Ok((rows, owed, next))
}

/// Reads every history page `cursor` owes, side by side (each issue's pages in order), each
/// stored with the cursor that no longer owes it. Returns the cursor owing nothing, or the
/// first error (after what the others read is stored).
async fn histories(
    ctx: &StageCtx<'_>,
    run: &Run<'_>,
    cursor: IssuesCursor,
) -> Result<IssuesCursor, StageError> {
    let items = cursor.owed.clone();
    // One writer at a time: each write carries the whole cursor.
    let shared = tokio::sync::Mutex::new(cursor);
    let result = ctx
        .for_each_request(items, |owed| {
            let shared = &shared;
            async move { one_history(ctx, run, shared, owed).await }
        })
        .await;
    result.map(|()| shared.into_inner())
}

/// One issue's history, page by page from where `owed` says.
async fn one_history(
    ctx: &StageCtx<'_>,
    run: &Run<'_>,
    shared: &tokio::sync::Mutex<IssuesCursor>,
    mut owed: OwedHistory,
) -> Result<(), StageError> {
    let doc = &documents::ISSUE_HISTORY;
    loop {
        let mut size = shared.lock().await.history_size;
        let vars = |n: u32| json!({ "issue": owed.issue, "first": n, "after": owed.after });
        let body = send::page(ctx, doc, route::LINEAR_HISTORY, &mut size, vars).await?;
        let (nodes, next) = history(body)?;
        let origin = Origin {
            workspace: run.workspace,
            now: ctx.now(),
        };
        let rows = list::records(doc.entity, &nodes, Some(&owed.issue), origin);
        let mut cursor = shared.lock().await;
        // The shared cursor moves on only once the write stored the page: a failed write
        // must not let a sibling's later write commit a cursor that forgot this answer.
        let mut after = cursor.clone().after_history_page(&owed, next.clone());
        after.history_size = size;
        run.write(ctx, rows, &after).await?;
        *cursor = after;
        match next {
            Some(a) => owed.after = Some(a),
            None => return Ok(()),
        }
    }
}

/// A history page's entries and the cursor of the page after. An issue gone since it was
/// listed (`issue` null, "Entity not found") owes nothing more.
fn history(body: Value) -> Result<(Vec<Value>, Option<String>), StageError> {
    let doc = &documents::ISSUE_HISTORY;
    let issue = body.get("data").and_then(|d| d.get("issue"));
    if issue.is_none_or(Value::is_null) && gone(&body) {
        return Ok((Vec::new(), None));
    }
    let data = send::data(doc, body)?;
    let conn = data
        .get("issue")
        .and_then(|i| i.get("history"))
        .unwrap_or(&Value::Null);
    page::connection(conn).map_err(|e| StageError::Permanent(format!("{}: {e}", doc.name)))
}

/// Every error of the answer says the entity is not found.
fn gone(body: &Value) -> bool {
    body.get("errors")
        .and_then(Value::as_array)
        .is_some_and(|errors| {
            !errors.is_empty()
                && errors.iter().all(|e| {
                    e.get("message")
                        .and_then(Value::as_str)
                        .is_some_and(|m| m.starts_with("Entity not found"))
                })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issue_gone_since_it_was_listed_owes_no_history_but_other_errors_fail() {
        let gone = json!({ "data": { "issue": null }, "errors": [{ "message": "Entity not found: Issue" }] });
        assert_eq!(history(gone).expect("gone is nothing owed"), (vec![], None));
        let refused = json!({ "data": { "issue": null }, "errors": [{ "message": "Forbidden" }] });
        assert!(
            matches!(history(refused), Err(StageError::Permanent(m)) if m.contains("Forbidden"))
        );
        let page = json!({ "data": { "issue": { "history": {
            "nodes": [{ "id": "h" }], "pageInfo": { "hasNextPage": true, "endCursor": "c" } } } } });
        assert_eq!(
            history(page).expect("a page"),
            (vec![json!({ "id": "h" })], Some("c".to_owned()))
        );
    }
}
