//! Owners and people: `User`, `Organization`, `Team`, and the `RepositoryOwner` and
//! `Actor` interfaces over them.

use super::*;

/// `User`.
#[derive(Clone, Debug)]
pub struct User(pub(super) UserRec);

/// `RepositoryOwner`: a repository's owner, an organization or a user. Interfaces carry only
/// their own fields: `databaseId` is asked through `... on Organization` / `... on User`.
#[derive(Interface, Clone, Debug)]
#[graphql(
    field(name = "id", ty = "ID"),
    field(name = "login", ty = "String"),
    field(name = "url", ty = "Uri")
)]
pub enum RepositoryOwner {
    /// An organization.
    Organization(Organization),
    /// A user.
    User(User),
}

impl RepositoryOwner {
    pub(super) fn of(rec: UserRec) -> Self {
        if rec.is_org {
            RepositoryOwner::Organization(Organization(rec))
        } else {
            RepositoryOwner::User(User(rec))
        }
    }
}

/// `Actor`: who authored something.
#[derive(Interface, Clone, Debug)]
#[graphql(field(name = "login", ty = "String"), field(name = "url", ty = "Uri"))]
pub enum Actor {
    /// An organization.
    Organization(Organization),
    /// A user.
    User(User),
}

impl Actor {
    pub(super) fn of(rec: UserRec) -> Self {
        if rec.is_org {
            Actor::Organization(Organization(rec))
        } else {
            Actor::User(User(rec))
        }
    }
}

#[Object]
impl User {
    async fn login(&self) -> &str {
        &self.0.login
    }
    async fn id(&self) -> ID {
        gid("User", self.0.id)
    }
    async fn database_id(&self) -> Option<i64> {
        Some(self.0.id as i64)
    }
    async fn name(&self) -> Option<&str> {
        self.0.name.as_deref()
    }
    async fn created_at(&self) -> DateTime {
        DateTime::at(self.0.created_at)
    }
    async fn url(&self) -> Uri {
        Uri(format!("https://github.com/{}", self.0.login))
    }
    /// Repositories the user owns.
    async fn repositories(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<RepositoryConnection> {
        let login = self.0.login.clone();
        let all: Vec<Repository> = with_world(ctx, |w| {
            w.repos
                .iter()
                .filter(|r| r.owner.eq_ignore_ascii_case(&login) && !r.deleted)
                .cloned()
                .map(Repository)
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
    /// Followers (the simulator models none).
    async fn followers(
        &self,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<FollowerConnection> {
        let all: Vec<User> = Vec::new();
        Ok(FollowerConnection::from_page(paginate(
            &all,
            "followers",
            first,
            after,
            last,
            before,
        )?))
    }
}

/// `Organization`.
#[derive(Clone, Debug)]
pub struct Organization(pub(super) UserRec);

impl Organization {
    /// Whether this is the generated organization, the one with members, teams and projects
    /// (other organization accounts only own repositories).
    fn is_generated(&self, w: &World) -> bool {
        w.org.login.eq_ignore_ascii_case(&self.0.login)
    }
}

#[Object]
impl Organization {
    async fn login(&self) -> &str {
        &self.0.login
    }
    async fn id(&self) -> ID {
        gid("Organization", self.0.id)
    }
    async fn database_id(&self) -> Option<i64> {
        Some(self.0.id as i64)
    }
    async fn name(&self) -> Option<&str> {
        self.0.name.as_deref()
    }
    async fn url(&self) -> Uri {
        Uri(format!("https://github.com/{}", self.0.login))
    }
    /// Every project (v2) of the organization, linked to repositories or not, by number.
    async fn projects_v2(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<ProjectV2Connection> {
        let all = with_world(ctx, |w| {
            if self.is_generated(w) {
                org_projects(w)
            } else {
                Vec::new()
            }
        })?;
        projects_page(&all, first, after, last, before)
    }
    /// One of the organization's projects (v2) by its number.
    async fn project_v2(
        &self,
        ctx: &Context<'_>,
        number: i64,
    ) -> async_graphql::Result<Option<ProjectV2>> {
        let all = with_world(ctx, |w| {
            if self.is_generated(w) {
                org_projects(w)
            } else {
                Vec::new()
            }
        })?;
        match all.into_iter().find(|p| p.rec.number as i64 == number) {
            Some(p) => Ok(Some(p)),
            None => Err(not_found(format!(
                "Could not resolve to a ProjectV2 with the number {number}."
            ))),
        }
    }
    /// Members with their role.
    async fn members_with_role(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<OrganizationMemberConnection> {
        refuse_without_read_org(ctx)?;
        let all: Vec<(User, MemberRole)> = with_world(ctx, |w| {
            if !self.is_generated(w) {
                return Vec::new();
            }
            w.org
                .members
                .iter()
                .filter_map(|m| w.user(m).cloned())
                .map(|u| {
                    let role = if w.org.admins.contains(&u.login) {
                        MemberRole::Admin
                    } else {
                        MemberRole::Member
                    };
                    (User(u), role)
                })
                .collect()
        })?;
        let p = paginate(&all, "membersWithRole", first, after, last, before)?;
        Ok(OrganizationMemberConnection {
            total_count: p.total,
            page_info: p.info,
            nodes: Some(p.items.iter().map(|(_, (u, _))| Some(u.clone())).collect()),
            edges: Some(
                p.items
                    .into_iter()
                    .map(|(cursor, (node, role))| {
                        Some(OrganizationMemberEdge {
                            cursor,
                            node: Some(node),
                            role: Some(role),
                        })
                    })
                    .collect(),
            ),
        })
    }
    /// Teams.
    async fn teams(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<TeamConnection> {
        refuse_without_read_org(ctx)?;
        let all: Vec<Team> = with_world(ctx, |w| {
            if !self.is_generated(w) {
                return Vec::new();
            }
            w.org.teams.iter().cloned().map(Team).collect()
        })?;
        Ok(TeamConnection::from_page(paginate(
            &all, "teams", first, after, last, before,
        )?))
    }
    /// Repositories.
    async fn repositories(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<RepositoryConnection> {
        let login = self.0.login.clone();
        let all: Vec<Repository> = with_world(ctx, |w| {
            w.repos
                .iter()
                .filter(|r| r.owner.eq_ignore_ascii_case(&login) && !r.deleted)
                .cloned()
                .map(Repository)
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
}

/// `Team`.
#[derive(Clone, Debug)]
pub struct Team(pub(super) TeamRec);

#[Object]
impl Team {
    async fn id(&self) -> ID {
        gid("Team", self.0.id)
    }
    async fn database_id(&self) -> Option<i64> {
        Some(self.0.id as i64)
    }
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn slug(&self) -> &str {
        &self.0.slug
    }
    async fn description(&self) -> Option<&str> {
        Some(&self.0.description)
    }
    /// Members.
    async fn members(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> async_graphql::Result<TeamMemberConnection> {
        let logins = self.0.members.clone();
        let all: Vec<User> = with_world(ctx, |w| {
            logins
                .iter()
                .filter_map(|l| w.user(l).cloned())
                .map(User)
                .collect()
        })?;
        Ok(TeamMemberConnection::from_page(paginate(
            &all, "members", first, after, last, before,
        )?))
    }
}
