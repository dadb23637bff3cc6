//! The resolvers apollo-compiler's executor calls, one field at a time, over the workspace:
//! the root `Query`, connections (`nodes`, `edges`, `pageInfo`), `rateLimitStatus`; the
//! entities' own fields are in [`super::fields`].

use std::rc::Rc;

use apollo_compiler::resolvers::{FieldError, ObjectValue, ResolveInfo, ResolvedValue};
use headroom_core::clock::Timestamp;
use serde_json::{Value, json};

use super::connection::{Ent, Order, Page, page};
use super::limits::{AuthKind, Reading};
use super::model::Workspace;
use crate::sim::ts_millis;

/// What a request's resolvers know besides the data.
#[derive(Debug)]
pub(crate) struct ExecCx {
    /// The viewer (user index).
    pub(crate) viewer: usize,
    /// How the request authenticated.
    pub(crate) kind: AuthKind,
    /// The buckets after this request.
    pub(crate) reading: Reading,
    /// This document's complexity.
    pub(crate) requested: u64,
    /// Now.
    pub(crate) now: Timestamp,
}

/// What an object is.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    Query,
    Org,
    Ent(Ent),
    /// A connection page and its GraphQL type (`IssueConnection`).
    Conn(Rc<Page>, String),
    /// An edge: its row, its order and its type (`IssueEdge`).
    Edge(Ent, Order, String),
    PageInfo(Rc<Page>),
    RateLimit,
    /// `true`: the complexity bucket; `false`: the request bucket.
    RateResult(bool),
}

/// An object the executor resolves fields of.
pub(crate) struct Obj<'w> {
    pub(crate) ws: &'w Workspace,
    pub(crate) cx: &'w ExecCx,
    pub(crate) kind: Kind,
}

pub(crate) type Resolved<'w> = Result<ResolvedValue<'w>, FieldError>;

pub(crate) fn error(message: impl Into<String>) -> FieldError {
    FieldError {
        message: message.into(),
    }
}

pub(crate) fn leaf<'w>(v: Value) -> ResolvedValue<'w> {
    ResolvedValue::leaf(v)
}

pub(crate) fn time<'w>(t: Timestamp) -> ResolvedValue<'w> {
    leaf(json!(ts_millis(t)))
}

pub(crate) fn opt_time<'w>(t: Option<Timestamp>) -> ResolvedValue<'w> {
    t.map_or_else(ResolvedValue::null, time)
}

pub(crate) fn strings<'w>(items: Vec<String>) -> ResolvedValue<'w> {
    ResolvedValue::list(items.into_iter().map(|s| leaf(json!(s))))
}

impl<'w> Obj<'w> {
    pub(crate) fn with(&self, kind: Kind) -> Obj<'w> {
        Obj {
            ws: self.ws,
            cx: self.cx,
            kind,
        }
    }

    pub(crate) fn object(&self, kind: Kind) -> ResolvedValue<'w> {
        ResolvedValue::object(self.with(kind))
    }

    pub(crate) fn ent(&self, e: Ent) -> ResolvedValue<'w> {
        self.object(Kind::Ent(e))
    }

    pub(crate) fn opt_ent(&self, e: Option<Ent>) -> ResolvedValue<'w> {
        e.map_or_else(ResolvedValue::null, |e| self.ent(e))
    }

    /// A connection over `rows`, paged as the field's arguments ask.
    pub(crate) fn connection(&self, info: &ResolveInfo<'_>, rows: Vec<Ent>) -> Resolved<'w> {
        let args = serde_json::to_value(info.arguments()).unwrap_or(Value::Null);
        let p = page(self.ws, rows, &args, self.cx.now).map_err(error)?;
        let ty = info.field_definition().ty.inner_named_type().to_string();
        Ok(self.object(Kind::Conn(Rc::new(p), ty)))
    }

    fn query_field(&self, info: &ResolveInfo<'_>) -> Resolved<'w> {
        let ws = self.ws;
        let all = |n: usize, f: fn(usize) -> Ent| (0..n).map(f).collect::<Vec<_>>();
        let id = || {
            info.arguments()
                .get("id")
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_owned()
        };
        match info.field_name() {
            "viewer" => Ok(self.ent(Ent::User(self.cx.viewer))),
            "organization" => Ok(self.object(Kind::Org)),
            "rateLimitStatus" => Ok(self.object(Kind::RateLimit)),
            "teams" => self.connection(info, all(ws.teams.len(), Ent::Team)),
            "users" => self.connection(info, all(ws.users.len(), Ent::User)),
            "workflowStates" => self.connection(info, all(ws.states.len(), Ent::State)),
            "issueLabels" => self.connection(info, all(ws.labels.len(), Ent::Label)),
            "projects" => self.connection(info, all(ws.projects.len(), Ent::Project)),
            "cycles" => self.connection(info, all(ws.cycles.len(), Ent::Cycle)),
            "issues" => self.connection(info, all(ws.issues.len(), Ent::Issue)),
            "comments" => self.connection(info, all(ws.comments.len(), Ent::Comment)),
            "attachments" => self.connection(info, all(ws.attachments.len(), Ent::Attachment)),
            "teamMemberships" => self.connection(info, all(ws.memberships.len(), Ent::Membership)),
            "team" => {
                let id = id();
                let found = ws.teams.iter().position(|t| t.id == id || t.key == id);
                found
                    .map(|i| self.ent(Ent::Team(i)))
                    .ok_or_else(|| not_found("Team"))
            }
            "user" => {
                let id = id();
                let found = ws.users.iter().position(|u| u.id == id);
                found
                    .map(|i| self.ent(Ent::User(i)))
                    .ok_or_else(|| not_found("User"))
            }
            "project" => {
                let id = id();
                let found = ws
                    .projects
                    .iter()
                    .position(|p| p.id == id || p.slug_id == id);
                found
                    .map(|i| self.ent(Ent::Project(i)))
                    .ok_or_else(|| not_found("Project"))
            }
            "issue" => {
                let id = id();
                let found =
                    (0..ws.issues.len()).find(|&i| ws.issues[i].id == id || ws.identifier(i) == id);
                found
                    .map(|i| self.ent(Ent::Issue(i)))
                    .ok_or_else(|| not_found("Issue"))
            }
            _ => Err(self.unknown_field_error(info)),
        }
    }

    fn connection_field(&self, p: &Rc<Page>, ty: &str, info: &ResolveInfo<'_>) -> Resolved<'w> {
        match info.field_name() {
            "nodes" => {
                let rows: Vec<_> = p.rows.iter().map(|e| self.ent(*e)).collect();
                Ok(ResolvedValue::list(rows))
            }
            "edges" => {
                let edge = ty.replace("Connection", "Edge");
                let rows: Vec<_> = p
                    .rows
                    .iter()
                    .map(|e| self.object(Kind::Edge(*e, p.order, edge.clone())))
                    .collect();
                Ok(ResolvedValue::list(rows))
            }
            "pageInfo" => Ok(self.object(Kind::PageInfo(p.clone()))),
            _ => Err(self.unknown_field_error(info)),
        }
    }

    fn page_info_field(&self, p: &Page, info: &ResolveInfo<'_>) -> Resolved<'w> {
        let cursor =
            |e: Option<&Ent>| e.map_or(Value::Null, |e| json!(p.order.cursor(self.ws, *e)));
        Ok(leaf(match info.field_name() {
            "hasNextPage" => json!(p.has_next),
            "hasPreviousPage" => json!(p.has_previous),
            "startCursor" => cursor(p.rows.first()),
            "endCursor" => cursor(p.rows.last()),
            _ => return Err(self.unknown_field_error(info)),
        }))
    }

    fn rate_field(&self, complexity: Option<bool>, info: &ResolveInfo<'_>) -> Resolved<'w> {
        let cx = self.cx;
        match (complexity, info.field_name()) {
            (None, "identifier") => Ok(leaf(json!(self.ws.users[cx.viewer].id))),
            (None, "kind") => Ok(leaf(json!(cx.kind.name()))),
            (None, "limits") => Ok(ResolvedValue::list([
                self.object(Kind::RateResult(false)),
                self.object(Kind::RateResult(true)),
            ])),
            (Some(c), field) => {
                let (b, requested, ty) = if c {
                    (cx.reading.complexity, cx.requested, "complexity")
                } else {
                    (cx.reading.requests, 1, "requestCount")
                };
                Ok(leaf(match field {
                    "type" => json!(ty),
                    "allowedAmount" => json!(b.limit as f64),
                    "remainingAmount" => json!(b.remaining as f64),
                    "requestedAmount" => json!(requested as f64),
                    "period" => json!(b.period_ms as f64),
                    "reset" => json!(b.reset_ms as f64),
                    _ => return Err(self.unknown_field_error(info)),
                }))
            }
            _ => Err(self.unknown_field_error(info)),
        }
    }

    fn org_field(&self, info: &ResolveInfo<'_>) -> Resolved<'w> {
        let o = &self.ws.org;
        Ok(match info.field_name() {
            "id" => leaf(json!(o.id)),
            "name" => leaf(json!(o.name)),
            "urlKey" => leaf(json!(o.url_key)),
            "createdAt" | "updatedAt" => time(o.created_at),
            "archivedAt" => ResolvedValue::null(),
            _ => return Err(self.unknown_field_error(info)),
        })
    }
}

/// Linear's error for an id that names nothing (its extensions are added to the answer).
pub(crate) fn not_found(entity: &str) -> FieldError {
    error(format!("Entity not found: {entity}"))
}

impl ObjectValue for Obj<'_> {
    fn type_name(&self) -> &str {
        match &self.kind {
            Kind::Query => "Query",
            Kind::Org => "Organization",
            Kind::Ent(e) => e.type_name(),
            Kind::Conn(_, ty) | Kind::Edge(_, _, ty) => ty,
            Kind::PageInfo(_) => "PageInfo",
            Kind::RateLimit => "RateLimitPayload",
            Kind::RateResult(_) => "RateLimitResultPayload",
        }
    }

    fn resolve_field<'a>(&'a self, info: &'a ResolveInfo<'a>) -> Resolved<'a> {
        match &self.kind {
            Kind::Query => self.query_field(info),
            Kind::Org => self.org_field(info),
            Kind::Ent(e) => self.ent_field(*e, info),
            Kind::Conn(p, ty) => self.connection_field(p, ty, info),
            Kind::Edge(e, order, _) => match info.field_name() {
                "node" => Ok(self.ent(*e)),
                "cursor" => Ok(leaf(json!(order.cursor(self.ws, *e)))),
                _ => Err(self.unknown_field_error(info)),
            },
            Kind::PageInfo(p) => self.page_info_field(p, info),
            Kind::RateLimit => self.rate_field(None, info),
            Kind::RateResult(c) => self.rate_field(Some(*c), info),
        }
    }
}
