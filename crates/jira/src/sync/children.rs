//! What a page of issues owes, fetched after the page is stored: the page's changelogs in
//! bulk (`POST /changelog/bulkfetch`, token-paged), else each issue's own changelog, and each
//! issue's comments and worklogs (offset-paged, the next page read back from what was
//! served). Each child page is committed with the cursor that no longer owes it.

use headroom_core::route::{self, RouteFamily};
use headroom_http::ApiError;
use headroom_store::Record;
use headroom_sync::{RepoScope, StageCtx, StageError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::issues::IssueCursor;
use super::send;
use crate::rows::{self, Origin};

/// Histories asked a bulk page (Jira's default; at most 10,000).
const BULK_PAGE: u32 = 1_000;

/// A child list of an issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Child {
    /// `GET /issue/{key}/changelog`, where the bulk changelog is not served.
    Changelog,
    /// `GET /issue/{key}/comment`.
    Comments,
    /// `GET /issue/{key}/worklog`.
    Worklogs,
}

/// How a child list is asked and read.
struct ChildList {
    route: RouteFamily,
    endpoint: &'static str,
    /// The path's last segment.
    path: &'static str,
    /// Fixed query parameters, with the page size asked.
    query: &'static str,
    /// The field holding the page's values.
    field: &'static str,
    map: fn(&Value, i64, Origin<'_>) -> Option<Record>,
}

impl Child {
    fn list(self) -> ChildList {
        match self {
            Child::Changelog => ChildList {
                route: route::JIRA_ISSUE_ENRICHMENT,
                endpoint: "GET /rest/api/3/issue/{key}/changelog",
                path: "changelog",
                query: "maxResults=100",
                field: "values",
                map: rows::changelog,
            },
            Child::Comments => ChildList {
                route: route::JIRA_COMMENTS,
                endpoint: "GET /rest/api/3/issue/{key}/comment",
                path: "comment",
                query: "maxResults=100&orderBy=created",
                field: "comments",
                map: rows::comment,
            },
            Child::Worklogs => ChildList {
                route: route::JIRA_WORKLOGS,
                endpoint: "GET /rest/api/3/issue/{key}/worklog",
                path: "worklog",
                query: "maxResults=5000",
                field: "worklogs",
                map: rows::worklog,
            },
        }
    }
}

/// A child page still owed: `child` of the issue `issue` (`key`), from `start`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Owed {
    pub(super) issue: i64,
    pub(super) key: String,
    pub(super) child: Child,
    pub(super) start: u64,
}

/// The bulk changelog owed for a page's issues (id, key), from `token`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Bulk {
    pub(super) issues: Vec<(i64, String)>,
    pub(super) token: Option<String>,
}

/// The path of a child page.
fn child_path(owed: &Owed) -> String {
    let list = owed.child.list();
    format!(
        "/rest/api/3/issue/{}/{}?startAt={}&{}",
        owed.key, list.path, owed.start, list.query
    )
}

/// One page of the bulk changelog `cursor` owes: its rows, with `cursor` moved past it.
/// Where the site does not serve the bulk endpoint (404, 405) or refuses it (403), each issue
/// owes its own changelog instead.
pub(super) async fn bulk_page(
    ctx: &StageCtx<'_>,
    cursor: &mut IssueCursor,
) -> Result<Vec<Record>, StageError> {
    let Some(bulk) = cursor.bulk.clone() else {
        return Ok(Vec::new());
    };
    let ids: Vec<String> = bulk.issues.iter().map(|(id, _)| id.to_string()).collect();
    let mut body = json!({"issueIdsOrKeys": ids, "maxResults": BULK_PAGE});
    if let Some(token) = &bulk.token {
        body["nextPageToken"] = json!(token);
    }
    let request = send::post_read(
        "/rest/api/3/changelog/bulkfetch",
        &body,
        route::JIRA_ISSUE_ENRICHMENT,
        "POST /rest/api/3/changelog/bulkfetch",
    );
    let page: Value = match ctx.send(request).await {
        Ok(response) => response.json()?,
        Err(e) if bulk_unserved(ctx, &e) => {
            cursor.bulk_refused = true;
            cursor.bulk = None;
            cursor
                .owed
                .extend(bulk.issues.into_iter().map(|(issue, key)| Owed {
                    issue,
                    key,
                    child: Child::Changelog,
                    start: 0,
                }));
            return Ok(Vec::new());
        }
        Err(e) => return Err(e.into()),
    };
    let origin = send::origin(ctx);
    let mut records = Vec::new();
    for log in page
        .get("issueChangeLogs")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let Some(issue) = log
            .get("issueId")
            .and_then(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .or_else(|| v.as_i64().map(|n| n.to_string()))
            })
            .and_then(|t| t.parse::<i64>().ok())
        else {
            continue;
        };
        for history in log
            .get("changeHistories")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            records.extend(rows::changelog(history, issue, origin));
        }
    }
    let next = page
        .get("nextPageToken")
        .and_then(Value::as_str)
        .map(str::to_owned);
    cursor.bulk = next.map(|token| Bulk {
        issues: bulk.issues,
        token: Some(token),
    });
    Ok(records)
}

/// Whether the bulk changelog is not there for this caller: not served (404, 405) or refused
/// (403, recorded). Each issue's own changelog is read instead.
fn bulk_unserved(ctx: &StageCtx<'_>, e: &ApiError) -> bool {
    match e {
        ApiError::Gone { status: 404 } | ApiError::Status { status: 405, .. } => true,
        ApiError::Forbidden {
            status: 403,
            message,
        } => {
            ctx.record_refused("/rest/api/3/changelog/bulkfetch", "forbidden", message);
            true
        }
        _ => false,
    }
}

/// Fetches every child page `cursor` owes, side by side (each issue's pages in order), each
/// stored with the cursor that no longer owes it. Returns the cursor with nothing owed, or the
/// first error (after what the others fetched is stored).
pub(super) async fn owed_side_by_side(
    ctx: &StageCtx<'_>,
    project: &RepoScope,
    cursor: IssueCursor,
) -> Result<IssueCursor, StageError> {
    let scope = project.scope();
    let items = cursor.owed.clone();
    // One writer at a time per project: each write carries the whole cursor.
    let shared = tokio::sync::Mutex::new(cursor);
    let result = ctx
        .for_each_request(items, |owed| {
            let (scope, shared) = (&scope, &shared);
            async move { one_owed(ctx, scope, shared, owed).await }
        })
        .await;
    result.map(|()| shared.into_inner())
}

/// The cursor after `owed`'s page: `next` owed from where it left, or nothing more.
pub(super) fn advance(cursor: &IssueCursor, owed: &Owed, next: Option<u64>) -> IssueCursor {
    let mut after = cursor.clone();
    if let Some(i) = after.owed.iter().position(|o| o == owed) {
        match next {
            Some(start) => after.owed[i].start = start,
            None => {
                after.owed.remove(i);
            }
        }
    }
    after
}

/// One issue's child list, page by page from where `owed` says.
async fn one_owed(
    ctx: &StageCtx<'_>,
    scope: &str,
    shared: &tokio::sync::Mutex<IssueCursor>,
    mut owed: Owed,
) -> Result<(), StageError> {
    let list = owed.child.list();
    loop {
        let request = send::get(&child_path(&owed), list.route, list.endpoint);
        let (values, next) = match ctx.send(request).await {
            Ok(response) => send::offset_page(&response.json::<Value>()?, list.field, owed.start),
            // The issue is gone, or hidden from the caller, since it was listed.
            Err(ApiError::Gone { .. }) => (Vec::new(), None),
            Err(ApiError::Forbidden {
                status: 403,
                message,
            }) => {
                ctx.record_refused(&owed.key, list.path, &message);
                (Vec::new(), None)
            }
            Err(e) => return Err(e.into()),
        };
        let origin = send::origin(ctx);
        let records: Vec<Record> = values
            .iter()
            .filter_map(|v| (list.map)(v, owed.issue, origin))
            .collect();
        let mut cursor = shared.lock().await;
        // The shared cursor moves on only once the write stored the page: a failed write must
        // not let a sibling's later write commit a cursor that forgot an unstored answer.
        let after = advance(&cursor, &owed, next);
        ctx.write_page(scope, &records, Some(send::to_text(&after)?), false, None)
            .await?;
        *cursor = after;
        match next {
            Some(start) => owed.start = start,
            None => return Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cursor(owed: Vec<Owed>) -> IssueCursor {
        IssueCursor {
            jql: "project in (\"PA\") ORDER BY updated ASC, id ASC".into(),
            token: None,
            searched: true,
            started_ms: 0,
            mark: "PA".into(),
            sprint_field: None,
            story_points_field: None,
            worklogs: true,
            bulk: None,
            bulk_refused: false,
            owed,
        }
    }

    proptest! {
        /// Whatever order the issues' child pages are stored in (side by side), each stored
        /// page moves only its own list on, and once every list ended nothing is owed.
        #[test]
        fn child_pages_stored_in_any_order_leave_nothing_owed(
            pages in proptest::collection::vec(1u64..4, 1..12),
            picks in proptest::collection::vec(any::<usize>(), 64),
        ) {
            let children = [Child::Comments, Child::Worklogs, Child::Changelog];
            let mut live: Vec<(Owed, u64)> = pages
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let owed = Owed {
                        issue: i as i64,
                        key: format!("PA-{i}"),
                        child: children[i % 3],
                        start: 0,
                    };
                    (owed, *n)
                })
                .collect();
            let mut c = cursor(live.iter().map(|(o, _)| o.clone()).collect());
            let mut picks = picks.into_iter().cycle();
            while !live.is_empty() {
                let at = picks.next().unwrap_or(0) % live.len();
                let (owed, left) = live[at].clone();
                let next = (left > 1).then_some(owed.start + 100);
                let before: Vec<Owed> = c.owed.iter().filter(|o| **o != owed).cloned().collect();
                c = advance(&c, &owed, next);
                let others: Vec<Owed> = c.owed.iter().filter(|o| o.issue != owed.issue).cloned().collect();
                prop_assert_eq!(others, before);
                match next {
                    Some(start) => {
                        live[at].0.start = start;
                        live[at].1 -= 1;
                        prop_assert!(c.owed.contains(&live[at].0));
                    }
                    None => {
                        live.remove(at);
                        prop_assert!(c.owed.iter().all(|o| o.issue != owed.issue));
                    }
                }
            }
            prop_assert!(c.owed.is_empty());
        }
    }

    #[test]
    fn a_child_path_names_the_issue_its_list_and_where_the_page_starts() {
        let owed = Owed {
            issue: 10042,
            key: "PA-42".into(),
            child: Child::Comments,
            start: 100,
        };
        assert_eq!(
            child_path(&owed),
            "/rest/api/3/issue/PA-42/comment?startAt=100&maxResults=100&orderBy=created"
        );
    }
}
