//! Stage 1: who the caller is and which workspace it reads (`viewer`, `organization`). The
//! organization's id keys every row and every watermark; it is kept as the detail of the
//! stage's finished [`LEARNED_SCOPE`] (a once-per-run stage's own checkpoint loses its cursor
//! and detail when the runner marks it done), where the later stages of the run read it.

use async_trait::async_trait;
use headroom_core::route;
use headroom_store::CheckpointStatus;
use headroom_sync::{Stage, StageCtx, StageDecl, StageError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::names;
use super::send::{self, Answer};
use crate::documents;

/// The scope of the stage's checkpoint whose detail holds what it [`Learned`].
pub(crate) const LEARNED_SCOPE: &str = "learned";

/// What the stage learned, as its checkpoint detail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Learned {
    /// The organization's id.
    pub workspace: String,
    /// Its URL key (`acme`).
    pub url_key: Option<String>,
    /// The caller's user id.
    pub viewer: Option<String>,
}

/// Stage 1.
#[derive(Debug)]
pub struct WorkspaceStage {
    decl: StageDecl,
}

impl WorkspaceStage {
    /// The stage.
    pub fn new(decl: StageDecl) -> Self {
        Self { decl }
    }
}

#[async_trait]
impl Stage for WorkspaceStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        if let Some(cp) = ctx.checkpoint(LEARNED_SCOPE).await?
            && cp.status == CheckpointStatus::Done
            && cp.detail.as_deref().is_some_and(|d| parse(d).is_ok())
        {
            return Ok(());
        }
        let doc = &documents::VIEWER;
        let vars = json!({});
        let points = super::page::estimate(doc, &vars).map_err(StageError::Permanent)?;
        let body = match send::query(ctx, doc, route::LINEAR_WORKSPACE, &vars, points).await? {
            Answer::Body(body) => body,
            Answer::TooComplex(message) => return Err(StageError::Permanent(message)),
        };
        let data = send::data(doc, body)?;
        let learned = learned(&data).ok_or_else(|| {
            StageError::Permanent("the answer names no organization id".to_owned())
        })?;
        let detail =
            serde_json::to_string(&learned).map_err(|e| StageError::Permanent(e.to_string()))?;
        ctx.finish_scope(LEARNED_SCOPE, Some(detail)).await?;
        Ok(())
    }
}

/// The workspace and caller of a `HeadroomViewer` answer's `data`.
fn learned(data: &Value) -> Option<Learned> {
    let org = data.get("organization")?;
    let text = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).map(str::to_owned);
    Some(Learned {
        workspace: text(org, "id").filter(|id| !id.is_empty())?,
        url_key: text(org, "urlKey"),
        viewer: data.get("viewer").and_then(|v| text(v, "id")),
    })
}

fn parse(detail: &str) -> Result<Learned, String> {
    serde_json::from_str(detail).map_err(|e| format!("unreadable workspace {detail:?}: {e}"))
}

/// The workspace id this run's `workspace` stage learned.
pub(crate) async fn workspace_of(ctx: &StageCtx<'_>) -> Result<String, StageError> {
    let cp = ctx.checkpoint_of(names::WORKSPACE, LEARNED_SCOPE).await?;
    match cp.and_then(|c| c.detail) {
        Some(detail) => parse(&detail)
            .map(|l| l.workspace)
            .map_err(StageError::Permanent),
        None => Err(StageError::Permanent(format!(
            "stage {:?} has not learned the workspace",
            names::WORKSPACE
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_is_the_organizations_id_and_nothing_else_stands_for_it() {
        let data =
            json!({ "viewer": { "id": "u-1" }, "organization": { "id": "o-1", "urlKey": "acme" } });
        let l = learned(&data).expect("learned");
        assert_eq!(l.workspace, "o-1");
        let back = parse(&serde_json::to_string(&l).expect("text")).expect("parses");
        assert_eq!(back, l);
        assert!(learned(&json!({ "viewer": { "id": "u-1" } })).is_none());
        assert!(learned(&json!({ "organization": { "id": "" } })).is_none());
    }
}
