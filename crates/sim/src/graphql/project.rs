//! Projects (v2): `ProjectV2`, its views, items and their contents.

use super::*;

/// `ProjectV2`, as linked to one repository (its items' contents live there), or to none
/// (`repo_id` 0: an organization's project whose items are drafts).
#[derive(Clone, Debug)]
pub struct ProjectV2 {
    pub(super) rec: ProjectRec,
    pub(super) repo_id: u64,
}

/// The organization's projects: every repository's, then those linked to none, by number.
pub(super) fn org_projects(w: &mut World) -> Vec<ProjectV2> {
    let ids: Vec<u64> = w.org_repos().iter().map(|r| r.id).collect();
    let mut all: Vec<ProjectV2> = Vec::new();
    for id in ids {
        all.extend(
            w.content(id)
                .projects
                .iter()
                .cloned()
                .map(|rec| ProjectV2 { rec, repo_id: id }),
        );
    }
    all.extend(
        w.unlinked_org_projects()
            .into_iter()
            .map(|rec| ProjectV2 { rec, repo_id: 0 }),
    );
    all.sort_by_key(|p| p.rec.number);
    all
}

/// A page of a `projectsV2` connection.
pub(super) fn projects_page(
    all: &[ProjectV2],
    first: Option<i32>,
    after: Option<String>,
    last: Option<i32>,
    before: Option<String>,
) -> async_graphql::Result<ProjectV2Connection> {
    Ok(ProjectV2Connection::from_page(paginate(
        all,
        "projectsV2",
        first,
        after,
        last,
        before,
    )?))
}

#[Object]
impl ProjectV2 {
    async fn id(&self) -> ID {
        gid("ProjectV2", self.rec.id)
    }
    async fn database_id(&self) -> Option<i64> {
        Some(self.rec.id as i64)
    }
    async fn number(&self) -> i64 {
        self.rec.number as i64
    }
    async fn title(&self) -> &str {
        &self.rec.title
    }
    async fn closed(&self) -> bool {
        self.rec.closed
    }
    async fn created_at(&self) -> DateTime {
        DateTime::at(self.rec.created_at)
    }
    /// Items on the board.
    async fn items(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<ProjectV2ItemConnection> {
        let repo_id = self.repo_id;
        let items = self.rec.items.clone();
        let all: Vec<ProjectV2Item> = with_world(ctx, |w| {
            let c = w.content(repo_id);
            items
                .into_iter()
                .map(|item| {
                    let content = match &item.content {
                        ProjectItemContent::Issue(n) => c
                            .issues
                            .iter()
                            .find(|i| i.number == *n)
                            .map(|i| match i.pull {
                                Some(p) => ProjectV2ItemContent::PullRequest(PullRequest {
                                    issue: i.clone(),
                                    pull: c.pulls[p].clone(),
                                    repo_id,
                                }),
                                None => ProjectV2ItemContent::Issue(Issue(i.clone())),
                            }),
                        ProjectItemContent::Draft(title) => {
                            Some(ProjectV2ItemContent::DraftIssue(DraftIssue {
                                id: gid("DraftIssue", item.id),
                                title: title.clone(),
                            }))
                        }
                    };
                    ProjectV2Item { rec: item, content }
                })
                .collect()
        })?;
        Ok(ProjectV2ItemConnection::from_page(paginate(
            &all, "items", first, after, last, before,
        )?))
    }
    /// The repositories it is linked to: the one it belongs to, or none.
    async fn repositories(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<RepositoryConnection> {
        let repo_id = self.repo_id;
        let all: Vec<Repository> = with_world(ctx, |w| {
            w.repo_by_id(repo_id)
                .filter(|r| !r.deleted)
                .cloned()
                .map(Repository)
                .into_iter()
                .collect()
        })?;
        Ok(RepositoryConnection::from_page(paginate(
            &all,
            "repositories",
            first,
            after,
            last,
            before,
        )?))
    }
    /// The project's views: a board and a table.
    async fn views(
        &self,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<ProjectV2ViewConnection> {
        let all: Vec<ProjectV2View> = [
            ("Board", ProjectV2ViewLayout::BoardLayout),
            ("Table", ProjectV2ViewLayout::TableLayout),
        ]
        .into_iter()
        .enumerate()
        .map(|(k, (name, layout))| ProjectV2View {
            id: gid("ProjectV2View", self.rec.id * 10 + k as u64),
            name: name.to_owned(),
            number: k as i64 + 1,
            layout,
        })
        .collect();
        Ok(ProjectV2ViewConnection::from_page(paginate(
            &all, "views", first, after, last, before,
        )?))
    }
}

/// `ProjectV2ViewLayout`.
#[derive(Enum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum ProjectV2ViewLayout {
    /// Columns of cards.
    BoardLayout,
    /// Rows.
    TableLayout,
}

/// `ProjectV2View`.
#[derive(SimpleObject, Clone, Debug)]
pub struct ProjectV2View {
    pub(super) id: ID,
    pub(super) name: String,
    pub(super) number: i64,
    pub(super) layout: ProjectV2ViewLayout,
}

/// `DraftIssue`.
#[derive(SimpleObject, Clone, Debug)]
pub struct DraftIssue {
    pub(super) id: ID,
    pub(super) title: String,
}

/// `ProjectV2ItemContent`.
#[derive(Union, Clone, Debug)]
pub enum ProjectV2ItemContent {
    /// An issue.
    Issue(Issue),
    /// A pull request.
    PullRequest(PullRequest),
    /// A draft.
    DraftIssue(DraftIssue),
}

/// `ProjectV2ItemType`.
#[derive(Enum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum ProjectV2ItemType {
    /// An issue.
    Issue,
    /// A pull request.
    PullRequest,
    /// A draft.
    DraftIssue,
}

/// `ProjectV2Item`.
#[derive(Clone, Debug)]
pub struct ProjectV2Item {
    pub(super) rec: ProjectItemRec,
    pub(super) content: Option<ProjectV2ItemContent>,
}

#[Object]
impl ProjectV2Item {
    async fn id(&self) -> ID {
        gid("ProjectV2Item", self.rec.id)
    }
    async fn database_id(&self) -> Option<i64> {
        Some(self.rec.id as i64)
    }
    #[graphql(name = "type")]
    async fn item_type(&self) -> ProjectV2ItemType {
        match &self.content {
            Some(ProjectV2ItemContent::PullRequest(_)) => ProjectV2ItemType::PullRequest,
            Some(ProjectV2ItemContent::DraftIssue(_)) => ProjectV2ItemType::DraftIssue,
            _ => ProjectV2ItemType::Issue,
        }
    }
    async fn content(&self) -> Option<ProjectV2ItemContent> {
        self.content.clone()
    }
}
