//! Stage 3: the projects selected, each with its environments: `GET /api/v2/projects` with
//! `expand=environments` (each project embeds its first page of environments), then, for a
//! project with more, `GET /api/v2/projects/{projectKey}/environments` from where the
//! embedded page ended. What the flag and segment stages work on is the detail of the stage's
//! finished [`LISTED_SCOPE`]: every project key with its environment keys.

use async_trait::async_trait;
use headroom_core::route;
use headroom_store::{CheckpointStatus, Record};
use headroom_sync::{Stage, StageCtx, StageDecl, StageError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::identity::account_of;
use super::selection::is_key;
use super::send::{self, Refusal};
use super::{names, refresh};
use crate::rows::{self, Origin};

/// The scope of the stage's checkpoint whose detail holds the [`Listed`] projects.
pub(crate) const LISTED_SCOPE: &str = "listed";
/// Projects asked a page.
pub(crate) const PROJECTS_PAGE: u32 = 20;
/// Environments asked a page.
pub(crate) const ENVIRONMENTS_PAGE: u32 = 20;
const PROJECTS_ROUTE: &str = "GET /api/v2/projects";
const ENVIRONMENTS_ROUTE: &str = "GET /api/v2/projects/{projectKey}/environments";

/// A project and its environments' keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Project {
    /// Its key.
    pub(crate) key: String,
    /// Its environments' keys.
    pub(crate) environments: Vec<String>,
}

/// The projects a run works on, as the stage's [`LISTED_SCOPE`] detail.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Listed {
    /// The projects, in the order listed.
    pub(crate) projects: Vec<Project>,
}

/// Where the stage stands, stored as its cursor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ProjectsCursor {
    /// The next page of projects; `None` once listed.
    pub(crate) next: Option<String>,
    /// The projects listed so far.
    pub(crate) listed: Listed,
    /// Environment pages owed: the project's key and the page's path.
    pub(crate) owed: Vec<(String, String)>,
}

impl Default for ProjectsCursor {
    fn default() -> Self {
        Self {
            next: Some(format!(
                "/api/v2/projects?limit={PROJECTS_PAGE}&expand=environments"
            )),
            listed: Listed::default(),
            owed: Vec::new(),
        }
    }
}

/// Stage 3.
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
        let account = account_of(ctx).await?;
        let selection = super::selection(ctx)?;
        if ctx
            .checkpoint(LISTED_SCOPE)
            .await?
            .is_some_and(|c| c.status == CheckpointStatus::Done)
            || !refresh::wanted(ctx).await?
        {
            return Ok(());
        }
        let stored = ctx.checkpoint("").await?.and_then(|c| c.page_cursor);
        let mut cursor = match stored {
            Some(text) => send::from_text::<ProjectsCursor>(&text)?,
            None => ProjectsCursor::default(),
        };
        loop {
            let records = if let Some((key, path)) = cursor.owed.first().cloned() {
                environments_page(ctx, &account, &mut cursor, &key, &path).await?
            } else if let Some(path) = cursor.next.clone() {
                projects_page(ctx, &account, &selection, &mut cursor, &path).await?
            } else {
                break;
            };
            ctx.write_page("", &records, Some(send::to_text(&cursor)?), false, None)
                .await?;
        }
        for key in &selection.projects {
            if !cursor.listed.projects.iter().any(|p| &p.key == key) {
                ctx.record_refused(
                    key,
                    "not_visible",
                    "no project with this key is visible to the token (no access, or no such key)",
                );
            }
        }
        ctx.finish_scope(LISTED_SCOPE, Some(send::to_text(&cursor.listed)?))
            .await?;
        Ok(())
    }
}

/// A page of projects: their rows and their embedded environments' rows, with `cursor`
/// moved past it and owing the environments that did not fit.
async fn projects_page(
    ctx: &StageCtx<'_>,
    account: &str,
    selection: &super::Selection,
    cursor: &mut ProjectsCursor,
    path: &str,
) -> Result<Vec<Record>, StageError> {
    let path = send::with_param(
        &send::with_limit(path, PROJECTS_PAGE),
        "expand",
        "environments",
    );
    let request = send::get(&path, route::LAUNCHDARKLY_PROJECTS, PROJECTS_ROUTE);
    let body = match send::fetch(ctx, request).await? {
        Ok(body) => body,
        Err(refusal) => {
            note(ctx, "projects", refusal);
            cursor.next = None;
            return Ok(Vec::new());
        }
    };
    let page = send::page(&body);
    cursor.next = page.next;
    let origin = Origin {
        account,
        now: ctx.now(),
    };
    let mut records = Vec::new();
    for project in &page.items {
        let Some(key) = project.get("key").and_then(Value::as_str) else {
            continue;
        };
        if !selection.selects(key) || !is_key(key) {
            continue;
        }
        // The project's row and its embedded environments' rows.
        records.extend(rows::project_rows(project, origin));
        let embedded = project.get("environments").cloned().unwrap_or(Value::Null);
        let envs = send::page(&embedded);
        cursor.listed.projects.push(Project {
            key: key.to_owned(),
            environments: keys(&envs.items),
        });
        if let Some(more) = more_environments(key, &embedded, envs.items.len()) {
            cursor.owed.push((key.to_owned(), more));
        }
    }
    Ok(records)
}

/// The page of `key`'s environments after an embedded page of `embedded_count`, if any: the
/// embedded `_links.next` when it names one, else from `totalCount`.
fn more_environments(key: &str, embedded: &Value, embedded_count: usize) -> Option<String> {
    if let Some(next) = send::page(embedded).next {
        return Some(next);
    }
    let total = embedded.get("totalCount").and_then(Value::as_u64)?;
    (total > embedded_count as u64).then(|| {
        format!(
            "/api/v2/projects/{}/environments?limit={ENVIRONMENTS_PAGE}&offset={embedded_count}",
            send::segment(key)
        )
    })
}

/// The first owed page of `key`'s environments.
async fn environments_page(
    ctx: &StageCtx<'_>,
    account: &str,
    cursor: &mut ProjectsCursor,
    key: &str,
    path: &str,
) -> Result<Vec<Record>, StageError> {
    let request = send::get(
        &send::with_limit(path, ENVIRONMENTS_PAGE),
        route::LAUNCHDARKLY_ENVIRONMENTS,
        ENVIRONMENTS_ROUTE,
    );
    let page = match send::fetch(ctx, request).await? {
        Ok(body) => send::page(&body),
        Err(refusal) => {
            note(ctx, &format!("environments of {key}"), refusal);
            cursor.owed.remove(0);
            return Ok(Vec::new());
        }
    };
    if let Some(project) = cursor.listed.projects.iter_mut().find(|p| p.key == key) {
        for env in keys(&page.items) {
            if !project.environments.contains(&env) {
                project.environments.push(env);
            }
        }
    }
    match page.next {
        Some(next) => cursor.owed[0].1 = next,
        None => {
            cursor.owed.remove(0);
        }
    }
    let origin = Origin {
        account,
        now: ctx.now(),
    };
    Ok(page
        .items
        .iter()
        .flat_map(|e| rows::environment_rows(e, key, origin))
        .collect())
}

/// The keys of listed items that are keys.
fn keys(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .filter_map(|i| i.get("key").and_then(Value::as_str))
        .filter(|k| is_key(k))
        .map(str::to_owned)
        .collect()
}

/// Records a refusal of a list this stage owns (it goes on with what it has).
fn note(ctx: &StageCtx<'_>, what: &str, refusal: Refusal) {
    match refusal {
        Refusal::Forbidden(message) => ctx.record_refused(what, "forbidden", &message),
        Refusal::Gone => ctx.record_refused(what, "not_found", "answered 404"),
    }
}

/// The projects this run's project stage listed.
pub(crate) async fn listed(ctx: &StageCtx<'_>) -> Result<Listed, StageError> {
    let detail = ctx
        .checkpoint_of(names::PROJECTS, LISTED_SCOPE)
        .await?
        .and_then(|c| c.detail);
    match detail {
        Some(text) => send::from_text(&text),
        None => Err(StageError::Permanent(format!(
            "stage {:?} has not listed the projects",
            names::PROJECTS
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn environments_beyond_the_embedded_page_are_owed_from_where_it_ended() {
        let full = json!({"items": [{"key": "a"}, {"key": "b"}], "totalCount": 2});
        assert_eq!(more_environments("p", &full, 2), None);
        let more = json!({"items": [{"key": "a"}], "totalCount": 3});
        assert_eq!(
            more_environments("p", &more, 1).as_deref(),
            Some("/api/v2/projects/p/environments?limit=20&offset=1")
        );
        let linked = json!({"items": [{"key": "a"}], "totalCount": 3,
            "_links": {"next": {"href": "/api/v2/projects/p/environments?limit=1&offset=1"}}});
        assert_eq!(
            more_environments("p", &linked, 1).as_deref(),
            Some("/api/v2/projects/p/environments?limit=1&offset=1")
        );
        assert_eq!(more_environments("p", &Value::Null, 0), None);
    }

    proptest! {
        /// A cursor written is the cursor read back: a resume continues exactly there.
        #[test]
        fn a_projects_cursor_survives_its_checkpoint(
            next in proptest::option::of("/api/v2/projects\\?offset=[0-9]{1,4}"),
            projects in proptest::collection::vec(("[a-z][a-z0-9-]{0,8}", proptest::collection::vec("[a-z]{1,6}", 0..4)), 0..5),
            owed in proptest::collection::vec(("[a-z]{1,6}", "/api/v2/[a-z/]{1,20}"), 0..3),
        ) {
            let c = ProjectsCursor {
                next,
                listed: Listed {
                    projects: projects
                        .into_iter()
                        .map(|(key, environments)| Project { key, environments })
                        .collect(),
                },
                owed,
            };
            let back: ProjectsCursor =
                send::from_text(&send::to_text(&c).expect("text")).expect("reads");
            prop_assert_eq!(back, c);
        }
    }
}
