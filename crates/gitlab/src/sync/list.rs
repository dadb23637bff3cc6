//! Stages 3–9: one list per project (`GET /projects/:id/<list>`), offset-paged or, where
//! GitLab offers it (issues), keyset-paged ([`paging`]), with the children each listed object
//! owes (a merge request's commits, approvals and notes; a pipeline's jobs; an issue's notes).
//! What a project's collection has left is its cursor: the next page of the list (for keyset,
//! GitLab's link to it) and every child page still owed for the pages already stored. Each
//! page, of the list or of a child, is committed with the cursor that no longer owes it.

use async_trait::async_trait;
use headroom_core::RouteFamily;
use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_core::route;
use headroom_http::ApiError;
use headroom_store::{CheckpointStatus, GitlabFamily, GitlabWatermark, Record};
use headroom_sync::{RepoScope, Stage, StageCtx, StageDecl, StageError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::rows::{self, Origin};

mod paging;

use paging::{Advance, fetch_list, fetch_object, fetch_page, page_path};

/// GitLab's largest page.
pub(super) const PER_PAGE: u32 = 100;

/// Allowance for the difference between this machine's clock and GitLab's: `updated_after`
/// is the watermark minus this.
const CLOCK_SKEW: SignedDuration = SignedDuration::from_secs(60);

/// One object of a page, as a row of the project `project`.
type MapItem = fn(&Value, i64, Origin<'_>) -> Option<Record>;
/// One object of a child page, given the project and the parent's key.
type MapChild = fn(&Value, i64, i64, Origin<'_>) -> Option<Record>;

/// What one listed object owes: a list (or a single object) under it.
#[derive(Debug)]
pub(crate) struct Child {
    route: RouteFamily,
    /// `/projects/:id/<parent_path>/<key>/<path>`.
    parent_path: &'static str,
    path: &'static str,
    /// The parent's field naming it in `parent_path` (`iid` or `id`).
    parent_key: &'static str,
    /// An offset-paged list; otherwise one object.
    paged: bool,
    map: MapChild,
}

/// One per-project list and the children of its objects.
#[derive(Debug)]
pub(crate) struct Family {
    route: RouteFamily,
    /// `/projects/:id/<path>`.
    path: &'static str,
    /// Fixed query parameters (with the offset pages' order).
    query: &'static [(&'static str, &'static str)],
    /// Keyset paging's `(order_by, sort)`, where GitLab offers keyset on the list.
    keyset: Option<(&'static str, &'static str)>,
    /// Lists asked `updated_after` the project's watermark, which finishing writes.
    watermark: Option<GitlabFamily>,
    map: MapItem,
    children: &'static [Child],
    /// A 403 means a feature is off or the role too low: recorded, not a failure.
    forbidden_is_refusal: bool,
}

/// Newest changes first: an object updated while the list is paged moves to the front and
/// pushes the rest back a place (read twice, stored once), never forward past the page being
/// read (which would skip one).
const CHANGED_FIRST: &[(&str, &str)] = &[("order_by", "updated_at"), ("sort", "desc")];

/// Keyset pages oldest change first: an object updated while the list is paged moves behind
/// the cursor's key and is served again (stored once); newest first would move an object not
/// yet read ahead of the cursor, skipping it until the next run.
const KEYSET_CHANGED_LAST: (&str, &str) = ("updated_at", "asc");

pub(crate) const MERGE_REQUESTS: Family = Family {
    route: route::GITLAB_MERGE_REQUESTS,
    path: "merge_requests",
    query: &[
        ("state", "all"),
        ("order_by", "updated_at"),
        ("sort", "desc"),
    ],
    keyset: None,
    watermark: Some(GitlabFamily::MergeRequests),
    map: rows::merge_request,
    children: &[
        Child {
            route: route::GITLAB_MERGE_REQUEST_COMMITS,
            parent_path: "merge_requests",
            path: "commits",
            parent_key: "iid",
            paged: true,
            map: rows::merge_request_commit,
        },
        Child {
            route: route::GITLAB_MERGE_REQUEST_APPROVALS,
            parent_path: "merge_requests",
            path: "approvals",
            parent_key: "iid",
            paged: false,
            map: |v, project, iid, o| Some(rows::approvals(v, project, iid, o)),
        },
        Child {
            route: route::GITLAB_MERGE_REQUEST_NOTES,
            parent_path: "merge_requests",
            path: "notes",
            parent_key: "iid",
            paged: true,
            map: |v, project, iid, o| rows::note(v, project, "MergeRequest", iid, o),
        },
    ],
    forbidden_is_refusal: false,
};

pub(crate) const PIPELINES: Family = Family {
    route: route::GITLAB_PIPELINES,
    path: "pipelines",
    query: CHANGED_FIRST,
    keyset: None,
    watermark: Some(GitlabFamily::Pipelines),
    map: rows::pipeline,
    children: &[Child {
        route: route::GITLAB_JOBS,
        parent_path: "pipelines",
        path: "jobs",
        parent_key: "id",
        paged: true,
        map: rows::job,
    }],
    forbidden_is_refusal: false,
};

pub(crate) const ISSUES: Family = Family {
    route: route::GITLAB_ISSUES,
    path: "issues",
    query: &[
        ("scope", "all"),
        ("order_by", "updated_at"),
        ("sort", "desc"),
    ],
    keyset: Some(KEYSET_CHANGED_LAST),
    watermark: Some(GitlabFamily::Issues),
    map: rows::issue,
    children: &[Child {
        route: route::GITLAB_ISSUE_NOTES,
        parent_path: "issues",
        path: "notes",
        parent_key: "iid",
        paged: true,
        map: |v, project, iid, o| rows::note(v, project, "Issue", iid, o),
    }],
    forbidden_is_refusal: false,
};

pub(crate) const MILESTONES: Family = Family {
    route: route::GITLAB_MILESTONES,
    path: "milestones",
    query: &[],
    keyset: None,
    watermark: None,
    map: |v, _, o| rows::milestone(v, o),
    children: &[],
    forbidden_is_refusal: false,
};

pub(crate) const DEPLOYMENTS: Family = Family {
    route: route::GITLAB_DEPLOYMENTS,
    path: "deployments",
    query: CHANGED_FIRST,
    keyset: None,
    watermark: Some(GitlabFamily::Deployments),
    map: rows::deployment,
    children: &[],
    forbidden_is_refusal: false,
};

pub(crate) const RELEASES: Family = Family {
    route: route::GITLAB_RELEASES,
    path: "releases",
    query: &[],
    keyset: None,
    watermark: None,
    map: rows::release,
    children: &[],
    forbidden_is_refusal: false,
};

pub(crate) const FEATURE_FLAGS: Family = Family {
    route: route::GITLAB_FEATURE_FLAGS,
    path: "feature_flags",
    query: &[],
    keyset: None,
    watermark: None,
    map: rows::feature_flag,
    children: &[],
    forbidden_is_refusal: true,
};

/// A child page still owed: of `family.children[child]` under the parent `parent`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Owed {
    parent: i64,
    child: u8,
    page: u32,
}

/// Where one project of a list stage stands, stored as its checkpoint cursor.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct ListCursor {
    /// The next page of the list; `None` once it is exhausted.
    page: Option<u32>,
    /// Child pages owed by the pages stored.
    #[serde(default)]
    owed: Vec<Owed>,
    /// When this project's collection started: its watermark once finished.
    started_ms: Option<i64>,
    /// The `updated_after` in force (kept so a resume asks the same).
    #[serde(default)]
    since: Option<String>,
    /// Paged by keyset, `page` counting keyset pages; `false` in cursors stored before
    /// keyset paging, which resume by offset.
    #[serde(default)]
    keyset: bool,
    /// Keyset: GitLab's `rel="next"` link to page `page` (none before the first page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    link: Option<String>,
}

/// A per-project list stage.
#[derive(Debug)]
pub struct ProjectListStage {
    decl: StageDecl,
    family: &'static Family,
}

impl ProjectListStage {
    /// The stage `decl`, collecting `family`.
    pub(crate) fn new(decl: StageDecl, family: &'static Family) -> Self {
        Self { decl, family }
    }
}

#[async_trait]
impl Stage for ProjectListStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        let projects = ctx.repositories().await?;
        ctx.for_each_repository(projects, |project| async move {
            one_project(ctx, self.family, &project).await
        })
        .await
    }
}

fn to_text(cursor: &ListCursor) -> Result<String, StageError> {
    serde_json::to_string(cursor).map_err(|e| StageError::Permanent(e.to_string()))
}

fn millis(t: Timestamp) -> i64 {
    t.as_millisecond()
}

/// What the list's first request found.
enum Listed {
    /// Rows to store with the advanced cursor.
    Rows(Vec<Record>),
    /// The project answered 404/410, or refused with 403 where that means a feature is
    /// off: the scope is finished with this fact.
    Finished(String),
}

async fn one_project(
    ctx: &StageCtx<'_>,
    family: &'static Family,
    project: &RepoScope,
) -> Result<(), StageError> {
    let scope = project.scope();
    let stored = match ctx.checkpoint(&scope).await? {
        Some(cp) if cp.status == CheckpointStatus::Done => return Ok(()),
        Some(cp) => cp.page_cursor,
        None => None,
    };
    let mut cursor = open_cursor(ctx, family, project, stored).await?;
    let origin_host = ctx.api_host().to_owned();
    loop {
        if !cursor.owed.is_empty() {
            cursor = owed_side_by_side(ctx, family, project, cursor).await?;
            continue;
        }
        let Some(page) = cursor.page else {
            let mark = finishing_mark(family, project, &origin_host, &cursor);
            ctx.write_page(&scope, &mark, None, true, None).await?;
            return Ok(());
        };
        let records = match list_page(ctx, family, project, &mut cursor, page).await? {
            Listed::Finished(detail) => {
                ctx.finish_scope(&scope, Some(detail)).await?;
                return Ok(());
            }
            Listed::Rows(records) => records,
        };
        ctx.write_page(&scope, &records, Some(to_text(&cursor)?), false, None)
            .await?;
    }
}

/// The watermark row a finished project writes, when its family has one.
fn finishing_mark(
    family: &Family,
    project: &RepoScope,
    instance: &str,
    cursor: &ListCursor,
) -> Vec<Record> {
    let (Some(mark), Some(started)) = (
        family.watermark,
        cursor
            .started_ms
            .and_then(|ms| Timestamp::from_millisecond(ms).ok()),
    ) else {
        return Vec::new();
    };
    vec![Record::GitlabWatermark(GitlabWatermark {
        instance: instance.to_owned(),
        project_id: project.github_id,
        family: mark,
        collected_at: started,
    })]
}

/// Page `page` of the list: its rows, with `cursor` moved past it and owing the children
/// its objects owe. A GitLab that does not page the list by keyset gives no rows and a cursor
/// that pages it by offset from page 1.
async fn list_page(
    ctx: &StageCtx<'_>,
    family: &Family,
    project: &RepoScope,
    cursor: &mut ListCursor,
    page: u32,
) -> Result<Listed, StageError> {
    let target = paging::list_target(family, project.github_id, cursor, page);
    let items = match fetch_list(ctx, family.route, &target).await {
        Ok((items, response)) => match paging::advance(cursor, page, &response)? {
            Advance::Next => items,
            Advance::Ignored => {
                cursor.owed.clear();
                return Ok(Listed::Rows(Vec::new()));
            }
        },
        Err(e) if paging::keyset_refused(cursor, &e) => {
            paging::to_offset(cursor);
            cursor.owed.clear();
            return Ok(Listed::Rows(Vec::new()));
        }
        Err(ApiError::Gone { status }) => {
            return Ok(Listed::Finished(format!("project answered {status}")));
        }
        Err(ApiError::Forbidden { status, message })
            if family.forbidden_is_refusal && status == 403 =>
        {
            ctx.record_refused(&project.full_name, "forbidden", &message);
            return Ok(Listed::Finished(format!(
                "refused ({status}): the feature is off or the role too low"
            )));
        }
        Err(e) => return Err(e.into()),
    };
    let origin = Origin {
        instance: ctx.api_host(),
        now: ctx.now(),
    };
    let records: Vec<Record> = items
        .iter()
        .filter_map(|v| (family.map)(v, project.github_id, origin))
        .collect();
    let mut owed = Vec::new();
    for item in &items {
        for (i, child) in family.children.iter().enumerate() {
            if let Some(parent) = item.get(child.parent_key).and_then(Value::as_i64) {
                owed.push(Owed {
                    parent,
                    child: u8::try_from(i).unwrap_or(u8::MAX),
                    page: 1,
                });
            }
        }
    }
    cursor.owed = owed;
    Ok(Listed::Rows(records))
}

/// The stored cursor, or a fresh one from page 1 that asks only for what changed since the
/// project's watermark.
async fn open_cursor(
    ctx: &StageCtx<'_>,
    family: &Family,
    project: &RepoScope,
    stored: Option<String>,
) -> Result<ListCursor, StageError> {
    if let Some(text) = stored {
        return serde_json::from_str(&text)
            .map_err(|e| StageError::Permanent(format!("unreadable cursor {text:?}: {e}")));
    }
    let since = match family.watermark {
        Some(mark) => ctx
            .store()
            .gitlab_watermark(ctx.api_host(), project.github_id, mark)
            .await?
            .map(|at| (at - CLOCK_SKEW).to_string()),
        None => None,
    };
    Ok(ListCursor {
        page: Some(1),
        owed: Vec::new(),
        started_ms: Some(millis(ctx.now())),
        since,
        keyset: family.keyset.is_some(),
        link: None,
    })
}

/// Fetches every child page `cursor` owes, side by side (each parent's pages in order), each
/// stored with the cursor that no longer owes it. Returns the cursor with nothing owed, or the
/// first error (after what the others fetched is stored).
async fn owed_side_by_side(
    ctx: &StageCtx<'_>,
    family: &Family,
    project: &RepoScope,
    cursor: ListCursor,
) -> Result<ListCursor, StageError> {
    let scope = project.scope();
    let items = cursor.owed.clone();
    // One writer at a time per project: each write carries the whole cursor.
    let shared = tokio::sync::Mutex::new(cursor);
    let result = ctx
        .for_each_request(items, |owed| {
            let (scope, shared) = (&scope, &shared);
            async move { one_owed(ctx, family, project, scope, shared, owed).await }
        })
        .await;
    result.map(|()| shared.into_inner())
}

/// One parent's child list, page by page from where `owed` says.
async fn one_owed(
    ctx: &StageCtx<'_>,
    family: &Family,
    project: &RepoScope,
    scope: &str,
    shared: &tokio::sync::Mutex<ListCursor>,
    mut owed: Owed,
) -> Result<(), StageError> {
    let Some(child) = family.children.get(usize::from(owed.child)) else {
        return Err(StageError::Permanent(format!(
            "cursor owes child {} of {}, which has {}",
            owed.child,
            family.path,
            family.children.len()
        )));
    };
    loop {
        let path = format!(
            "/projects/{}/{}/{}/{}",
            project.github_id, child.parent_path, owed.parent, child.path
        );
        let fetched = if child.paged {
            fetch_page(ctx, child.route, page_path(&path, &[], None, owed.page)).await
        } else {
            fetch_object(ctx, child.route, &path).await
        };
        let (items, next) = match fetched {
            Ok(page) => page,
            // The parent is gone since it was listed: nothing more is owed for it.
            Err(ApiError::Gone { .. }) => (Vec::new(), None),
            Err(e) => return Err(e.into()),
        };
        let origin = Origin {
            instance: ctx.api_host(),
            now: ctx.now(),
        };
        let records: Vec<Record> = items
            .iter()
            .filter_map(|v| (child.map)(v, project.github_id, owed.parent, origin))
            .collect();
        let mut cursor = shared.lock().await;
        // The shared cursor moves on only once the write stored the page: a failed write must
        // not let a sibling's later write commit a cursor that forgot an unstored answer.
        let mut after = cursor.clone();
        let at = after.owed.iter().position(|o| *o == owed);
        match (at, next) {
            (Some(i), Some(page)) => after.owed[i].page = page,
            (Some(i), None) => {
                after.owed.remove(i);
            }
            (None, _) => {}
        }
        ctx.write_page(scope, &records, Some(to_text(&after)?), false, None)
            .await?;
        *cursor = after;
        match next {
            Some(page) => owed.page = page,
            None => return Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_page_path_carries_the_filter_the_page_and_gitlabs_largest_page() {
        let path = page_path(
            "/projects/7/merge_requests",
            MERGE_REQUESTS.query,
            Some("2026-01-02T03:04:05Z"),
            3,
        );
        assert_eq!(
            path,
            "/projects/7/merge_requests?state=all&order_by=updated_at&sort=desc\
             &updated_after=2026-01-02T03%3A04%3A05Z&per_page=100&page=3"
        );
    }

    #[test]
    fn every_child_names_a_key_its_parent_list_has() {
        for family in [&MERGE_REQUESTS, &PIPELINES, &ISSUES] {
            for child in family.children {
                assert!(matches!(child.parent_key, "iid" | "id"));
                assert_eq!(child.parent_path, family.path);
            }
        }
    }

    proptest! {
        /// A cursor written is the cursor read back: a resume continues exactly there.
        #[test]
        fn a_cursor_survives_its_checkpoint(
            page in proptest::option::of(1u32..10_000),
            owed in proptest::collection::vec((any::<i64>(), 0u8..3, 1u32..500), 0..20),
            started in proptest::option::of(0i64..4_000_000_000_000),
            keyset in any::<bool>(),
            link in proptest::option::of("[a-z0-9=&?/:.]{1,40}"),
        ) {
            let cursor = ListCursor {
                page,
                owed: owed.into_iter().map(|(parent, child, page)| Owed { parent, child, page }).collect(),
                started_ms: started,
                since: started.map(|ms| ms.to_string()),
                keyset,
                link,
            };
            let text = to_text(&cursor).expect("serializes");
            let back: ListCursor = serde_json::from_str(&text).expect("parses");
            prop_assert_eq!(back.page, cursor.page);
            prop_assert_eq!(back.owed, cursor.owed);
            prop_assert_eq!(back.started_ms, cursor.started_ms);
            prop_assert_eq!(back.since, cursor.since);
            prop_assert_eq!(back.keyset, cursor.keyset);
            prop_assert_eq!(back.link, cursor.link);
        }
    }
}
