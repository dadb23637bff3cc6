//! Stage 1: whose account the token reads (`GET /api/v2/caller-identity`). The account id
//! leads every row of the run; it is kept as the detail of the stage's finished
//! [`LEARNED_SCOPE`] (a once-per-run stage's own checkpoint loses its detail when the runner
//! marks it done), where the later stages read it.

use async_trait::async_trait;
use headroom_core::route;
use headroom_store::CheckpointStatus;
use headroom_sync::{Stage, StageCtx, StageDecl, StageError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::names;
use super::send;

/// The scope of a stage's checkpoint whose detail holds what it learned.
pub(crate) const LEARNED_SCOPE: &str = "learned";

/// The route template of the caller's identity.
const ROUTE: &str = "GET /api/v2/caller-identity";

/// What the stage learned, as its checkpoint detail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caller {
    /// The account's id (`accountId`): every row's first key.
    pub account: String,
    /// The member behind a personal token (`memberId`); none for a service token.
    #[serde(default)]
    pub member: Option<String>,
    /// `tokenKind` (`auth`, `service`, …) as LaunchDarkly names it.
    #[serde(default)]
    pub token_kind: Option<String>,
}

/// Stage 1.
#[derive(Debug)]
pub struct IdentityStage {
    decl: StageDecl,
}

impl IdentityStage {
    /// The stage.
    pub fn new(decl: StageDecl) -> Self {
        Self { decl }
    }
}

#[async_trait]
impl Stage for IdentityStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        super::selection(ctx)?;
        if let Some(cp) = ctx.checkpoint(LEARNED_SCOPE).await?
            && cp.status == CheckpointStatus::Done
            && cp
                .detail
                .as_deref()
                .is_some_and(|d| send::from_text::<Caller>(d).is_ok())
        {
            return Ok(());
        }
        let request = send::get(
            "/api/v2/caller-identity",
            route::LAUNCHDARKLY_IDENTITY,
            ROUTE,
        );
        let body: Value = ctx.send(request).await?.json()?;
        let caller = caller(&body).ok_or_else(|| {
            StageError::Permanent("caller-identity named no accountId".to_owned())
        })?;
        ctx.finish_scope(LEARNED_SCOPE, Some(send::to_text(&caller)?))
            .await?;
        Ok(())
    }
}

/// The caller a `CallerIdentityRep` names; `None` without an account id.
fn caller(body: &Value) -> Option<Caller> {
    let text = |f: &str| {
        body.get(f)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    Some(Caller {
        account: text("accountId")?,
        member: text("memberId"),
        token_kind: text("tokenKind"),
    })
}

/// The account this run's identity stage learned.
pub(crate) async fn account_of(ctx: &StageCtx<'_>) -> Result<String, StageError> {
    let cp = ctx.checkpoint_of(names::IDENTITY, LEARNED_SCOPE).await?;
    match cp.and_then(|c| c.detail) {
        Some(detail) => Ok(send::from_text::<Caller>(&detail)?.account),
        None => Err(StageError::Permanent(format!(
            "stage {:?} has not learned the account",
            names::IDENTITY
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_account_is_the_callers_account_id_and_nothing_else_stands_for_it() {
        let body = json!({"accountId": "acc-1", "memberId": "m-1", "tokenKind": "auth",
                          "serviceToken": false});
        let c = caller(&body).expect("an account");
        assert_eq!(c.account, "acc-1");
        assert_eq!(c.member.as_deref(), Some("m-1"));
        let back: Caller = send::from_text(&send::to_text(&c).expect("text")).expect("reads");
        assert_eq!(back, c);
        assert_eq!(caller(&json!({"memberId": "m-1"})), None);
        assert_eq!(caller(&json!({"accountId": ""})), None);
    }
}
