//! Issues: `Issue`, `IssueComment` and `Label`.

use super::*;

/// `Label`.
#[derive(SimpleObject, Clone, Debug)]
pub struct Label {
    pub(super) name: String,
    pub(super) color: String,
}

/// `Issue`.
#[derive(Clone, Debug)]
pub struct Issue(pub(super) IssueRec);

#[Object]
impl Issue {
    async fn id(&self) -> ID {
        gid("Issue", self.0.id)
    }
    async fn database_id(&self) -> Option<i64> {
        Some(self.0.id as i64)
    }
    async fn number(&self) -> i64 {
        self.0.number as i64
    }
    async fn title(&self) -> &str {
        &self.0.title
    }
    async fn body(&self) -> &str {
        &self.0.body
    }
    #[graphql(name = "bodyHTML")]
    async fn body_html(&self) -> Html {
        Html(format!("<p>{}</p>", self.0.body))
    }
    async fn state(&self) -> IssueState {
        if self.0.open {
            IssueState::Open
        } else {
            IssueState::Closed
        }
    }
    async fn created_at(&self) -> DateTime {
        DateTime::at(self.0.created_at)
    }
    async fn updated_at(&self) -> DateTime {
        DateTime::at(self.0.updated_at)
    }
    async fn author(&self, ctx: &Context<'_>) -> async_graphql::Result<Option<Actor>> {
        let login = self.0.user.clone();
        Ok(with_world(ctx, |w| w.user(&login).cloned())?.map(Actor::of))
    }
    /// Comments.
    async fn comments(
        &self,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<IssueCommentConnection> {
        let all: Vec<IssueComment> = self.0.comments.iter().cloned().map(IssueComment).collect();
        Ok(IssueCommentConnection::from_page(paginate(
            &all, "comments", first, after, last, before,
        )?))
    }
    /// Labels.
    async fn labels(
        &self,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<Option<LabelConnection>> {
        let all: Vec<Label> = self
            .0
            .labels
            .iter()
            .map(|l| Label {
                name: l.clone(),
                color: "ededed".to_owned(),
            })
            .collect();
        Ok(Some(LabelConnection::from_page(paginate(
            &all, "labels", first, after, last, before,
        )?)))
    }
}

/// `IssueComment`.
#[derive(Clone, Debug)]
pub struct IssueComment(pub(super) CommentRec);

#[Object]
impl IssueComment {
    async fn id(&self) -> ID {
        gid("IssueComment", self.0.id)
    }
    async fn database_id(&self) -> Option<i64> {
        Some(self.0.id as i64)
    }
    async fn body(&self) -> &str {
        &self.0.body
    }
    #[graphql(name = "bodyHTML")]
    async fn body_html(&self) -> Html {
        Html(format!("<p>{}</p>", self.0.body))
    }
    async fn created_at(&self) -> DateTime {
        DateTime::at(self.0.created_at)
    }
    async fn author(&self, ctx: &Context<'_>) -> async_graphql::Result<Option<Actor>> {
        let login = self.0.user.clone();
        Ok(with_world(ctx, |w| w.user(&login).cloned())?.map(Actor::of))
    }
}
