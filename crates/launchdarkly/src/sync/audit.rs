//! Stage 2: the audit log (`GET /api/v2/auditlog`), newest first, 20 entries a page (its
//! most), from the last completed run's newest entry — overlapping that millisecond, since
//! another entry may have been written in it after that run read — or, without one, from the
//! newest entry stored. Entries are stored by id, so an entry read twice is one row.
//!
//! Pages move `before` (epoch ms, exclusive) to one past the oldest entry of the page just
//! stored: entries sharing that millisecond are asked again rather than lost, should a page
//! end inside one, and those already stored are told apart by id. The log goes on while a page
//! links a `next` one or is full (whether LaunchDarkly links the next page of the log is not
//! documented; `before` is), so neither a server that ends a page early to keep a millisecond
//! whole nor one that sends no link loses an entry. The stage then records its [`Decision`]
//! for the list stages.

use async_trait::async_trait;
use headroom_core::route;
use headroom_store::CheckpointStatus;
use headroom_sync::{Stage, StageCtx, StageDecl, StageError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::identity::{LEARNED_SCOPE, account_of};
use super::refresh::{self, Decision, HighWater, Previous};
use super::send::{self, Refusal};
use crate::rows::{self, Origin};

/// Entries asked a page: the most the audit log serves.
pub(crate) const AUDIT_PAGE: u32 = 20;
/// The route template.
const ROUTE: &str = "GET /api/v2/auditlog";

/// Where the audit stage stands, stored as its cursor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct AuditCursor {
    /// Entries after this epoch millisecond (exclusive), fixed when the stage opened.
    pub(crate) after: Option<i64>,
    /// The next page's `before` (exclusive); `None` for the first page.
    pub(crate) before: Option<i64>,
    /// Ids stored at `before - 1`, which the next page repeats.
    pub(crate) boundary: Vec<String>,
    /// The last completed run of the account, if any.
    pub(crate) previous: Option<Previous>,
    /// Why the lists are re-read whatever the log says (a first run, `full`).
    pub(crate) forced: Option<String>,
    /// The newest entries seen in this run.
    pub(crate) high: Option<HighWater>,
    /// An entry the last completed run had not seen was read.
    pub(crate) changed: bool,
    /// Every page is stored.
    pub(crate) read: bool,
}

/// Stage 2.
#[derive(Debug)]
pub struct AuditStage {
    decl: StageDecl,
}

impl AuditStage {
    /// The stage.
    pub fn new(decl: StageDecl) -> Self {
        Self { decl }
    }
}

#[async_trait]
impl Stage for AuditStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        let account = account_of(ctx).await?;
        if ctx
            .checkpoint(LEARNED_SCOPE)
            .await?
            .is_some_and(|c| c.status == CheckpointStatus::Done)
        {
            return Ok(());
        }
        let mut cursor = match ctx.checkpoint("").await?.and_then(|c| c.page_cursor) {
            Some(text) => send::from_text::<AuditCursor>(&text)?,
            None => open(ctx, &account).await?,
        };
        while !cursor.read {
            let path = path_of(&cursor);
            let request = send::get(&path, route::LAUNCHDARKLY_AUDIT_LOG, ROUTE);
            let records = match send::fetch(ctx, request).await? {
                Ok(body) => {
                    let page = send::page(&body);
                    let items = page.items;
                    if let Some(warning) = step(&mut cursor, &items, page.next.is_some()) {
                        ctx.record_refused("audit log", "same_millisecond", &warning);
                    }
                    let origin = Origin {
                        account: &account,
                        now: ctx.now(),
                    };
                    items
                        .iter()
                        .flat_map(|e| rows::audit_rows(e, origin))
                        .collect()
                }
                Err(refusal) => {
                    refused(ctx, &mut cursor, refusal);
                    Vec::new()
                }
            };
            ctx.write_page("", &records, Some(send::to_text(&cursor)?), false, None)
                .await?;
        }
        let decision = decide(&account, &cursor);
        ctx.finish_scope(LEARNED_SCOPE, Some(send::to_text(&decision)?))
            .await?;
        Ok(())
    }
}

/// A fresh cursor: from the last completed run's newest entry, else from the newest stored.
async fn open(ctx: &StageCtx<'_>, account: &str) -> Result<AuditCursor, StageError> {
    let selection = super::selection(ctx)?;
    let previous = refresh::last_completed(ctx, account, &selection).await?;
    let forced = if selection.full {
        Some("the run was asked to re-read everything (full)".to_owned())
    } else if previous.is_none() {
        Some("no run of this account completed before".to_owned())
    } else {
        None
    };
    let stored = if previous.is_some() {
        None
    } else {
        ctx.store().ld_audit_watermark(account).await?
    };
    Ok(AuditCursor {
        after: after(previous.as_ref(), stored),
        before: None,
        boundary: Vec::new(),
        high: previous.as_ref().and_then(|p| p.high.clone()),
        previous,
        forced,
        changed: false,
        read: false,
    })
}

/// The log's `after` (exclusive): one millisecond before the last completed run's newest
/// entry — that millisecond asked again, since another entry may have been written in it
/// after that run read — or, without such a run, before the newest entry `stored`.
pub(crate) fn after(previous: Option<&Previous>, stored: Option<i64>) -> Option<i64> {
    let from = match previous {
        Some(p) => p.high.as_ref().map(|h| h.ms),
        None => stored,
    };
    from.map(|ms| ms - 1)
}

/// The next page's path.
fn path_of(cursor: &AuditCursor) -> String {
    let mut path = format!("/api/v2/auditlog?limit={AUDIT_PAGE}");
    if let Some(after) = cursor.after {
        path.push_str(&format!("&after={after}"));
    }
    if let Some(before) = cursor.before {
        path.push_str(&format!("&before={before}"));
    }
    path
}

/// Takes in a page's `items` (`linked`: it links a next page), moving `cursor` past them;
/// returns a warning when entries had to be passed over.
pub(crate) fn step(cursor: &mut AuditCursor, items: &[Value], linked: bool) -> Option<String> {
    let entries: Vec<(i64, String)> = items.iter().filter_map(entry).collect();
    let repeated =
        |ms: i64, id: &String| Some(ms + 1) == cursor.before && cursor.boundary.contains(id);
    let any_fresh = entries.iter().any(|(ms, id)| !repeated(*ms, id));
    for (ms, id) in &entries {
        let seen_before = cursor
            .previous
            .as_ref()
            .and_then(|p| p.high.as_ref())
            .is_some_and(|h| h.covers(*ms, id));
        cursor.changed |= !seen_before;
        cursor
            .high
            .get_or_insert_with(HighWater::default)
            .saw(*ms, id);
    }
    let full = items.len() >= AUDIT_PAGE as usize;
    let oldest = entries.iter().map(|(ms, _)| *ms).min();
    let Some(oldest) = oldest.filter(|_| linked || full) else {
        cursor.read = true;
        return None;
    };
    let at_oldest = entries
        .iter()
        .filter(|(ms, _)| *ms == oldest)
        .map(|(_, id)| id.clone());
    if any_fresh {
        // Ask the oldest millisecond again: entries of it may not have fit this page.
        if cursor.before != Some(oldest + 1) {
            cursor.boundary.clear();
        }
        cursor.boundary.extend(at_oldest);
        cursor.boundary.sort();
        cursor.boundary.dedup();
        cursor.before = Some(oldest + 1);
        None
    } else {
        // Nothing new: past that millisecond. When the page was full of it, the rest of it
        // cannot be reached by time: say so.
        cursor.boundary.clear();
        cursor.before = Some(oldest);
        full.then(|| format!("more than {AUDIT_PAGE} entries share the millisecond {oldest}"))
    }
}

/// The id and date of an entry (`_id`, `date` in epoch ms).
fn entry(item: &Value) -> Option<(i64, String)> {
    let id = item.get("_id").and_then(Value::as_str)?;
    let ms = item.get("date").and_then(Value::as_i64)?;
    Some((ms, id.to_owned()))
}

/// The audit log refused the token: what changed cannot be told, so the lists are re-read.
fn refused(ctx: &StageCtx<'_>, cursor: &mut AuditCursor, refusal: Refusal) {
    let why = match refusal {
        Refusal::Forbidden(message) => {
            ctx.record_refused("audit log", "forbidden", &message);
            "the audit log is refused (403)"
        }
        Refusal::Gone => "the audit log answered 404",
    };
    cursor.forced.get_or_insert_with(|| why.to_owned());
    cursor.read = true;
}

/// What the list stages do, from a read cursor.
pub(crate) fn decide(account: &str, cursor: &AuditCursor) -> Decision {
    let (refresh, reason) = match (&cursor.forced, cursor.changed, &cursor.previous) {
        (Some(why), _, _) => (true, why.clone()),
        (None, true, Some(p)) => (
            true,
            format!("the audit log shows changes since run {}", p.run),
        ),
        (None, _, p) => (
            false,
            format!(
                "the audit log shows no change since run {}",
                p.as_ref().map_or(0, |p| p.run)
            ),
        ),
    };
    Decision {
        account: account.to_owned(),
        high: cursor.high.clone(),
        refresh,
        reason,
    }
}

#[cfg(test)]
mod tests;
