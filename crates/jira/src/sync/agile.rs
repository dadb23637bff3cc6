//! Stage 4: the agile boards of the selected projects (`GET /rest/agile/1.0/board`) and the
//! sprints of each scrum board (`GET /rest/agile/1.0/board/{id}/sprint`), once per run. Both
//! lists are capped at 50 a page whatever is asked, so pages follow `startAt` plus what was
//! served and `isLast`. Neither has a filter by change: both are listed whole every run. A
//! board that takes no sprints (kanban) answers 400: it has none. A caller without Jira
//! Software access gets 403: recorded, and the stage is done with what it has.

use async_trait::async_trait;
use headroom_core::route;
use headroom_http::ApiError;
use headroom_store::Record;
use headroom_sync::{Stage, StageCtx, StageDecl, StageError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Selection;
use super::send;
use crate::rows;

/// What the agile API serves a page at most.
const AGILE_PAGE: u64 = 50;

/// Where the `boards` stage stands, stored as its cursor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct BoardsCursor {
    /// The next page of boards; `None` once listed.
    pub(super) boards: Option<u64>,
    /// Scrum boards whose sprints are still to read, with the next page's `startAt` of each.
    pub(super) sprints: Vec<(i64, u64)>,
    /// The agile API refused the caller: nothing more is asked.
    pub(super) refused: bool,
}

impl Default for BoardsCursor {
    fn default() -> Self {
        Self {
            boards: Some(0),
            sprints: Vec::new(),
            refused: false,
        }
    }
}

impl BoardsCursor {
    fn done(&self) -> bool {
        self.refused || (self.boards.is_none() && self.sprints.is_empty())
    }
}

/// Stage 4.
#[derive(Debug)]
pub struct BoardsStage {
    decl: StageDecl,
}

impl BoardsStage {
    /// The stage.
    pub fn new(decl: StageDecl) -> Self {
        Self { decl }
    }
}

#[async_trait]
impl Stage for BoardsStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        let selection = Selection::parse(ctx.target()).map_err(StageError::Permanent)?;
        let stored = ctx.checkpoint("").await?.and_then(|c| c.page_cursor);
        let mut cursor: BoardsCursor = send::from_text(stored.as_deref())?.unwrap_or_default();
        // Boards of the projects collected; every board when every project is.
        let projects: Option<Vec<i64>> = if selection.projects.is_empty() {
            None
        } else {
            Some(
                ctx.repositories()
                    .await?
                    .iter()
                    .map(|p| p.github_id)
                    .collect(),
            )
        };
        while !cursor.done() {
            let records = step(ctx, projects.as_deref(), &mut cursor).await?;
            ctx.write_page("", &records, Some(send::to_text(&cursor)?), false, None)
                .await?;
        }
        Ok(())
    }
}

/// One request of the stage: its rows, with `cursor` moved past it.
async fn step(
    ctx: &StageCtx<'_>,
    projects: Option<&[i64]>,
    cursor: &mut BoardsCursor,
) -> Result<Vec<Record>, StageError> {
    if let Some(start) = cursor.boards {
        let path = format!("/rest/agile/1.0/board?startAt={start}&maxResults={AGILE_PAGE}");
        let request = send::get(&path, route::JIRA_AGILE, "GET /rest/agile/1.0/board");
        let body: Value = match ctx.send(request).await {
            Ok(response) => response.json()?,
            Err(ApiError::Forbidden {
                status: 403,
                message,
            }) => {
                ctx.record_refused("/rest/agile/1.0/board", "forbidden", &message);
                cursor.refused = true;
                return Ok(Vec::new());
            }
            Err(e) => return Err(e.into()),
        };
        let (values, next) = send::offset_page(&body, "values", start);
        let kept: Vec<&Value> = values
            .iter()
            .filter(|b| {
                let project = b
                    .get("location")
                    .and_then(|l| l.get("projectId"))
                    .and_then(Value::as_i64);
                projects.is_none_or(|ids| project.is_some_and(|p| ids.contains(&p)))
            })
            .collect();
        for board in &kept {
            let scrum = board.get("type").and_then(Value::as_str) == Some("scrum");
            if let (true, Some(id)) = (scrum, board.get("id").and_then(Value::as_i64)) {
                cursor.sprints.push((id, 0));
            }
        }
        cursor.boards = next;
        let origin = send::origin(ctx);
        return Ok(kept.iter().filter_map(|b| rows::board(b, origin)).collect());
    }
    let Some(&(board, start)) = cursor.sprints.first() else {
        return Ok(Vec::new());
    };
    let path =
        format!("/rest/agile/1.0/board/{board}/sprint?startAt={start}&maxResults={AGILE_PAGE}");
    let request = send::get(
        &path,
        route::JIRA_AGILE,
        "GET /rest/agile/1.0/board/{boardId}/sprint",
    );
    let (values, next) = match ctx.send(request).await {
        Ok(response) => send::offset_page(&response.json::<Value>()?, "values", start),
        // A board without sprints (kanban) answers 400; a board gone since it was listed 404.
        Err(ApiError::Status { status: 400, .. } | ApiError::Gone { .. }) => (Vec::new(), None),
        Err(ApiError::Forbidden {
            status: 403,
            message,
        }) => {
            ctx.record_refused(&format!("board {board}"), "forbidden", &message);
            (Vec::new(), None)
        }
        Err(e) => return Err(e.into()),
    };
    match next {
        Some(next) => cursor.sprints[0].1 = next,
        None => {
            cursor.sprints.remove(0);
        }
    }
    let origin = send::origin(ctx);
    Ok(values
        .iter()
        .filter_map(|s| rows::sprint(s, origin))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A cursor written is the cursor read back: a resume continues exactly there.
        #[test]
        fn a_boards_cursor_survives_its_checkpoint(
            boards in proptest::option::of(0u64..10_000),
            sprints in proptest::collection::vec((1i64..100_000, 0u64..500), 0..10),
            refused in any::<bool>(),
        ) {
            let c = BoardsCursor { boards, sprints, refused };
            let back: BoardsCursor =
                serde_json::from_str(&send::to_text(&c).expect("text")).expect("reads");
            prop_assert_eq!(&back, &c);
        }
    }
}
