//! Stage 3: one project's issues through `POST /rest/api/3/search/jql` (`nextPageToken`,
//! oldest change first, the fields asked for), with what each issue owes: its changelog (the
//! bulk changelog for a page's issues, one issue at a time where the bulk endpoint is not
//! served), its comments and, when the selection asks, its worklogs ([`children`]). What a
//! project's collection has left is its cursor: the JQL fixed when it opened, the next page's
//! token, and every child page owed for the pages stored. The watermark, the instant the
//! project's collection started, is written with its last page.

use async_trait::async_trait;
use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_core::route;
use headroom_http::ApiError;
use headroom_store::jira::JiraWatermark;
use headroom_store::{CheckpointStatus, Record};
use headroom_sync::{RepoScope, Stage, StageCtx, StageDecl, StageError};
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Selection;
use super::children::{self, Bulk, Child, Owed};
use super::send;
use crate::jql;
use crate::rows::{self, CustomFields};

/// Issues asked a page: the most Jira serves when fields are asked (it may serve fewer).
const SEARCH_PAGE: u32 = 100;

/// The fields a search asks for besides the site's sprint and story-point fields: what the
/// rows read.
const FIELDS: [&str; 15] = [
    "summary",
    "status",
    "issuetype",
    "priority",
    "assignee",
    "reporter",
    "project",
    "parent",
    "labels",
    "duedate",
    "timeoriginalestimate",
    "timespent",
    "created",
    "updated",
    "resolutiondate",
];

/// No time zone is further than this from UTC: a watermark written in UTC this much earlier
/// is read by Jira no later than the watermark, whatever the caller's unknown zone.
const WIDEST_OFFSET: SignedDuration = SignedDuration::from_hours(14);

/// Where one project of the issue stage stands, stored as its checkpoint cursor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct IssueCursor {
    /// The search, fixed when the project's collection opened (a resume asks the same).
    pub(super) jql: String,
    /// The next page's token; `None` before the first page.
    #[serde(default)]
    pub(super) token: Option<String>,
    /// Every page of the search is stored.
    #[serde(default)]
    pub(super) searched: bool,
    /// When this project's collection started: its watermark once finished.
    pub(super) started_ms: i64,
    /// The watermark's scope: the project's key, with the narrowing JQL when there is one.
    pub(super) mark: String,
    /// The site's sprint and story-point fields.
    #[serde(default)]
    pub(super) sprint_field: Option<String>,
    #[serde(default)]
    pub(super) story_points_field: Option<String>,
    /// Collect worklogs.
    #[serde(default)]
    pub(super) worklogs: bool,
    /// The bulk changelog owed for the last page's issues.
    #[serde(default)]
    pub(super) bulk: Option<Bulk>,
    /// The site refused the bulk changelog: changelogs are read one issue at a time.
    #[serde(default)]
    pub(super) bulk_refused: bool,
    /// Child pages owed by the pages stored.
    #[serde(default)]
    pub(super) owed: Vec<Owed>,
}

impl IssueCursor {
    fn custom_fields(&self) -> CustomFields {
        CustomFields {
            sprint: self.sprint_field.clone(),
            story_points: self.story_points_field.clone(),
        }
    }

    /// After a page listing `issues` (id, key): the search's next token, and what each issue
    /// owes.
    pub(super) fn after_page(&mut self, issues: &[(i64, String)], next: Option<String>) {
        self.searched = next.is_none();
        self.token = next;
        let mut owed = Vec::new();
        for (id, key) in issues {
            let mut children = vec![Child::Comments];
            if self.worklogs {
                children.push(Child::Worklogs);
            }
            if self.bulk_refused {
                children.push(Child::Changelog);
            }
            owed.extend(children.into_iter().map(|child| Owed {
                issue: *id,
                key: key.clone(),
                child,
                start: 0,
            }));
        }
        self.owed = owed;
        self.bulk = (!self.bulk_refused && !issues.is_empty()).then(|| Bulk {
            issues: issues.to_vec(),
            token: None,
        });
    }
}

/// Stage 3.
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

#[async_trait]
impl Stage for IssuesStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        let selection = Selection::parse(ctx.target()).map_err(StageError::Permanent)?;
        let projects = ctx.repositories().await?;
        let selection = &selection;
        ctx.for_each_repository(projects, |project| async move {
            one_project(ctx, selection, &project).await
        })
        .await
    }
}

/// What a search page found.
enum Searched {
    /// Rows to store with the advanced cursor.
    Rows(Vec<Record>),
    /// The project refused the search (403, 404, or a 400 naming it): finished with this.
    Refused(String),
}

async fn one_project(
    ctx: &StageCtx<'_>,
    selection: &Selection,
    project: &RepoScope,
) -> Result<(), StageError> {
    let scope = project.scope();
    let stored = match ctx.checkpoint(&scope).await? {
        Some(cp) if cp.status == CheckpointStatus::Done => return Ok(()),
        Some(cp) => cp.page_cursor,
        None => None,
    };
    let mut cursor = match send::from_text::<IssueCursor>(stored.as_deref())? {
        Some(cursor) => cursor,
        None => open(ctx, selection, project).await?,
    };
    loop {
        if cursor.bulk.is_some() {
            let records = children::bulk_page(ctx, &mut cursor).await?;
            ctx.write_page(&scope, &records, Some(send::to_text(&cursor)?), false, None)
                .await?;
            continue;
        }
        if !cursor.owed.is_empty() {
            cursor = children::owed_side_by_side(ctx, project, cursor).await?;
            continue;
        }
        if cursor.searched {
            let mark = Timestamp::from_millisecond(cursor.started_ms)
                .map(|collected_at| {
                    Record::from(JiraWatermark {
                        site: ctx.api_host().to_owned(),
                        scope: cursor.mark.clone(),
                        collected_at,
                    })
                })
                .ok();
            let marks: Vec<Record> = mark.into_iter().collect();
            ctx.write_page(&scope, &marks, None, true, None).await?;
            return Ok(());
        }
        match search_page(ctx, project, &mut cursor).await? {
            Searched::Rows(records) => {
                ctx.write_page(&scope, &records, Some(send::to_text(&cursor)?), false, None)
                    .await?;
            }
            Searched::Refused(detail) => {
                ctx.finish_scope(&scope, Some(detail)).await?;
                return Ok(());
            }
        }
    }
}

/// The watermark's scope of `key` under `selection`: a narrower JQL collects less, so its
/// watermark is its own.
pub(super) fn mark_scope(key: &str, selection: &Selection) -> String {
    match selection.narrower() {
        Some(jql) => format!("{key} AND ({jql})"),
        None => key.to_owned(),
    }
}

/// A fresh cursor: the JQL of what changed since the project's watermark (everything when it
/// has none), written in the caller's zone.
async fn open(
    ctx: &StageCtx<'_>,
    selection: &Selection,
    project: &RepoScope,
) -> Result<IssueCursor, StageError> {
    let facts = send::site_facts(ctx).await?;
    let mark = mark_scope(&project.full_name, selection);
    let since = ctx.store().jira_watermark(ctx.api_host(), &mark).await?;
    let zone = facts
        .time_zone
        .as_deref()
        .and_then(|z| TimeZone::get(z).ok());
    let since = since.map(|at| match zone {
        Some(zone) => (at, zone),
        None => (at - WIDEST_OFFSET, TimeZone::UTC),
    });
    let key = project.full_name.as_str();
    let jql = jql::issues_matching(
        &[key],
        selection.narrower(),
        since.as_ref().map(|(at, zone)| (*at, zone)),
    )
    .map_err(|e| StageError::Permanent(format!("project {key}: {e}")))?;
    let custom = facts.custom_fields();
    Ok(IssueCursor {
        jql,
        token: None,
        searched: false,
        started_ms: ctx.now().as_millisecond(),
        mark,
        sprint_field: custom.sprint,
        story_points_field: custom.story_points,
        worklogs: selection.worklogs,
        bulk: None,
        bulk_refused: false,
        owed: Vec::new(),
    })
}

/// The body of a search page.
pub(super) fn search_body(cursor: &IssueCursor) -> Value {
    let mut fields: Vec<&str> = FIELDS.to_vec();
    fields.extend(cursor.sprint_field.as_deref());
    fields.extend(cursor.story_points_field.as_deref());
    let mut body = json!({"jql": cursor.jql, "fields": fields, "maxResults": SEARCH_PAGE});
    if let Some(token) = &cursor.token {
        body["nextPageToken"] = json!(token);
    }
    body
}

/// The next page of the search: its rows, with `cursor` moved past it and owing its issues'
/// children.
async fn search_page(
    ctx: &StageCtx<'_>,
    project: &RepoScope,
    cursor: &mut IssueCursor,
) -> Result<Searched, StageError> {
    let key = &project.full_name;
    let request = send::post_read(
        "/rest/api/3/search/jql",
        &search_body(cursor),
        route::JIRA_JQL,
        "POST /rest/api/3/search/jql",
    )
    // An app pays a point per issue returned, besides the request's.
    .app_points(1 + SEARCH_PAGE);
    let page: Value = match ctx.send(request).await {
        Ok(response) => response.json()?,
        Err(ApiError::Forbidden {
            status: 403,
            message,
        }) => {
            ctx.record_refused(key, "forbidden", &message);
            return Ok(Searched::Refused(format!("refused (403): {message}")));
        }
        Err(ApiError::Gone { status }) => {
            ctx.record_refused(key, "not_found", "the project's issues answered 404");
            return Ok(Searched::Refused(format!("project answered {status}")));
        }
        // The project is no longer visible since it was listed: Jira says it does not exist.
        Err(ApiError::Status {
            status: 400,
            message,
        }) if message.contains("'project'") => {
            ctx.record_refused(key, "not_visible", &message);
            return Ok(Searched::Refused(format!("refused (400): {message}")));
        }
        Err(e) => return Err(e.into()),
    };
    let items = page
        .get("issues")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let origin = send::origin(ctx);
    let custom = cursor.custom_fields();
    let records: Vec<Record> = items
        .iter()
        .flat_map(|v| rows::issue(v, &custom, origin))
        .collect();
    let issues: Vec<(i64, String)> = items
        .iter()
        .filter_map(|v| {
            let id = v.get("id").and_then(Value::as_str)?.parse().ok()?;
            Some((id, v.get("key").and_then(Value::as_str)?.to_owned()))
        })
        .collect();
    let last = items.is_empty() || page.get("isLast").and_then(Value::as_bool) == Some(true);
    let next = page
        .get("nextPageToken")
        .and_then(Value::as_str)
        .filter(|_| !last)
        .map(str::to_owned);
    cursor.after_page(&issues, next);
    Ok(Searched::Rows(records))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cursor(worklogs: bool, bulk_refused: bool) -> IssueCursor {
        IssueCursor {
            jql: "project in (\"PA\") ORDER BY updated ASC, id ASC".into(),
            token: None,
            searched: false,
            started_ms: 1_800_000_000_000,
            mark: "PA".into(),
            sprint_field: Some("customfield_10020".into()),
            story_points_field: None,
            worklogs,
            bulk: None,
            bulk_refused,
            owed: Vec::new(),
        }
    }

    #[test]
    fn a_search_asks_for_the_fields_the_rows_read_and_the_sites_sprint_field() {
        let mut c = cursor(false, false);
        let body = search_body(&c);
        let fields = body["fields"].as_array().expect("fields");
        assert!(fields.iter().any(|f| f == "customfield_10020"));
        assert!(fields.iter().any(|f| f == "updated"));
        assert!(body.get("nextPageToken").is_none());
        c.token = Some("t2".into());
        assert_eq!(search_body(&c)["nextPageToken"], "t2");
    }

    #[test]
    fn a_narrower_jql_keeps_its_own_watermark() {
        let plain = Selection::default();
        let narrow = Selection {
            jql: Some("status = Done".into()),
            ..Selection::default()
        };
        assert_eq!(mark_scope("PA", &plain), "PA");
        assert_eq!(mark_scope("PA", &narrow), "PA AND (status = Done)");
    }

    proptest! {
        /// After any page, every issue owes its comments, its worklogs exactly when asked, and
        /// its changelog once (in the bulk, or alone where the bulk is refused); the search
        /// is finished exactly when no token follows; and the cursor survives its checkpoint.
        #[test]
        fn a_page_owes_each_issues_children_once_and_the_cursor_survives(
            ids in proptest::collection::btree_set(1i64..1_000_000, 0..30),
            worklogs in any::<bool>(),
            bulk_refused in any::<bool>(),
            next in proptest::option::of("[A-Za-z0-9_-]{1,20}"),
        ) {
            let issues: Vec<(i64, String)> =
                ids.iter().map(|id| (*id, format!("PA-{id}"))).collect();
            let mut c = cursor(worklogs, bulk_refused);
            c.after_page(&issues, next.clone());
            prop_assert_eq!(c.searched, next.is_none());
            prop_assert_eq!(&c.token, &next);
            for (id, _) in &issues {
                let owed = |child| c.owed.iter().filter(|o| o.issue == *id && o.child == child).count();
                prop_assert_eq!(owed(Child::Comments), 1);
                prop_assert_eq!(owed(Child::Worklogs), usize::from(worklogs));
                let in_bulk = c.bulk.as_ref().map_or(0, |b| b.issues.iter().filter(|(i, _)| i == id).count());
                prop_assert_eq!(owed(Child::Changelog) + in_bulk, 1);
            }
            prop_assert!(c.owed.iter().all(|o| o.start == 0));
            let back: IssueCursor = serde_json::from_str(&send::to_text(&c).expect("text")).expect("reads");
            prop_assert_eq!(back, c);
        }
    }
}
