//! A group project and its sub-resources: `GET /projects/:id` and its merge requests
//! (commits, approvals, notes), pipelines (jobs), issues (notes), milestones, deployments,
//! releases and feature flags. Defaults follow GitLab's documentation: merge requests and
//! issues all states, newest created first; pipelines by id descending; deployments by id
//! ascending; releases by `released_at` descending; notes newest first.

use http::StatusCode;

use super::super::paging::paged_by;
use super::super::projects::forbidden;
use super::super::{GlCtx, message, ok, project_not_found};
use super::keyset;
use super::model::{GroupWorld, Issue, Note, Project};
use super::params::{Key, Window, invalid_value, order, q, sort_by};
use super::render;
use crate::sim::Reply;

fn not_found() -> Reply {
    message(StatusCode::NOT_FOUND, "404 Not found")
}

/// Routes `/projects/:id/…` for a project of the group.
pub(super) fn project(ctx: &GlCtx, w: &GroupWorld, id: &str, rest: &[&str]) -> Reply {
    let Some(pi) = w.project_index(id) else {
        return project_not_found();
    };
    let p = &w.projects[pi];
    if p.deleted || !w.is_member(&ctx.user.username) {
        return project_not_found();
    }
    let path = format!("/projects/{}", id.replace('/', "%2F"));
    let lists = Lists { ctx, w, p, path };
    // Of a project's lists only issues offer keyset pagination; single objects ignore it.
    let single = matches!(rest, [] | ["merge_requests", _, "approvals"]);
    if keyset::asked(ctx) && !single && rest != ["issues"] {
        return keyset::unsupported();
    }
    match rest {
        [] => ok(&render::project(&ctx.base, w, p)),
        ["merge_requests"] => lists.merge_requests(),
        ["merge_requests", iid, sub] => lists.merge_request_child(iid, sub),
        ["pipelines"] => lists.pipelines(),
        ["pipelines", pid, "jobs"] => lists.jobs(pid),
        ["issues"] => lists.issues(),
        ["issues", iid, "notes"] => lists.issue_notes(iid),
        ["milestones"] => lists.milestones(),
        ["deployments"] => lists.deployments(),
        ["releases"] => lists.releases(),
        ["feature_flags"] if p.flags_forbidden => forbidden(),
        ["feature_flags"] => lists.feature_flags(),
        _ => Reply::json(
            StatusCode::NOT_FOUND,
            &serde_json::json!({"error": "404 Not Found"}),
        ),
    }
}

struct Lists<'a> {
    ctx: &'a GlCtx,
    w: &'a GroupWorld,
    p: &'a Project,
    path: String,
}

impl Lists<'_> {
    fn base(&self) -> &str {
        &self.ctx.base
    }

    /// `GET /projects/:id/merge_requests`: `state` (default all), `updated_after`/`before`,
    /// `created_after`/`before`, `order_by` created_at|updated_at|title, `sort`.
    fn merge_requests(&self) -> Reply {
        let state = q(self.ctx, "state").unwrap_or("all");
        if !matches!(state, "opened" | "closed" | "merged" | "locked" | "all") {
            return invalid_value("state");
        }
        let (updated, created) = match (
            Window::of(self.ctx, "updated", false),
            Window::of(self.ctx, "created", false),
        ) {
            (Ok(u), Ok(c)) => (u, c),
            (Err(r), _) | (_, Err(r)) => return r,
        };
        let (by, desc) = match order(
            self.ctx,
            &["created_at", "updated_at", "title", "merged_at"],
            "created_at",
            true,
        ) {
            Ok(o) => o,
            Err(r) => return r,
        };
        let mut found: Vec<_> = self
            .p
            .merge_requests
            .iter()
            .filter(|m| state == "all" || m.state == state)
            .filter(|m| updated.admits(m.updated_at) && created.admits(m.created_at))
            .collect();
        sort_by(&mut found, desc, |m| match by {
            "updated_at" => Key::Time(m.updated_at, m.id),
            "merged_at" => Key::Time(m.merged_at.unwrap_or(m.created_at), m.id),
            "title" => Key::Text(m.title.clone(), m.id),
            _ => Key::Time(m.created_at, m.id),
        });
        let path = format!("{}/merge_requests", self.path);
        paged_by(self.ctx, &path, &found, |m| {
            render::merge_request(self.base(), self.w, self.p, m)
        })
    }

    /// `…/merge_requests/:iid/commits`, `…/approvals` and `…/notes`.
    fn merge_request_child(&self, iid: &str, sub: &str) -> Reply {
        let Some(mr) = iid
            .parse::<u64>()
            .ok()
            .and_then(|iid| self.p.merge_requests.iter().find(|m| m.iid == iid))
        else {
            return not_found();
        };
        let path = format!("{}/merge_requests/{iid}/{sub}", self.path);
        match sub {
            "commits" => {
                // Newest first, as GitLab lists a merge request's commits.
                let commits: Vec<_> = mr.commits.iter().rev().collect();
                paged_by(self.ctx, &path, &commits, |c| {
                    render::commit(self.base(), self.w, self.p, c)
                })
            }
            "approvals" => ok(&render::approvals(self.base(), self.w, self.p, mr)),
            "notes" => self.notes(&path, &mr.notes, ("MergeRequest", mr.id, mr.iid)),
            _ => Reply::json(
                StatusCode::NOT_FOUND,
                &serde_json::json!({"error": "404 Not Found"}),
            ),
        }
    }

    /// Notes: `order_by` created_at|updated_at, `sort` (default desc).
    fn notes(&self, path: &str, notes: &[Note], on: (&str, u64, u64)) -> Reply {
        let (by, desc) = match order(self.ctx, &["created_at", "updated_at"], "created_at", true) {
            Ok(o) => o,
            Err(r) => return r,
        };
        let mut found: Vec<_> = notes.iter().collect();
        sort_by(&mut found, desc, |n| match by {
            "updated_at" => Key::Time(n.updated_at, n.id),
            _ => Key::Time(n.created_at, n.id),
        });
        let on = (on.0, on.1, on.2, self.p.id);
        paged_by(self.ctx, path, &found, |n| {
            render::note(self.base(), self.w, on, n)
        })
    }

    /// `GET /projects/:id/pipelines`: `updated_after`/`before` (strictly after), `status`,
    /// `ref`, `order_by` id|status|ref|updated_at|user_id (default id desc).
    fn pipelines(&self) -> Reply {
        let window = match Window::of(self.ctx, "updated", true) {
            Ok(w) => w,
            Err(r) => return r,
        };
        let (by, desc) = match order(
            self.ctx,
            &["id", "status", "ref", "updated_at", "user_id"],
            "id",
            true,
        ) {
            Ok(o) => o,
            Err(r) => return r,
        };
        let status = q(self.ctx, "status");
        let reference = q(self.ctx, "ref");
        let mut found: Vec<_> = self
            .p
            .pipelines
            .iter()
            .filter(|pl| window.admits(pl.updated_at))
            .filter(|pl| status.is_none_or(|s| pl.status == s))
            .filter(|pl| reference.is_none_or(|r| pl.reference == r))
            .collect();
        sort_by(&mut found, desc, |pl| match by {
            "updated_at" => Key::Time(pl.updated_at, pl.id),
            "status" => Key::Text(pl.status.to_owned(), pl.id),
            "ref" => Key::Text(pl.reference.clone(), pl.id),
            _ => Key::Id(pl.id),
        });
        let path = format!("{}/pipelines", self.path);
        paged_by(self.ctx, &path, &found, |pl| {
            render::pipeline(self.base(), self.w, self.p, pl)
        })
    }

    /// `…/pipelines/:pipeline_id/jobs` (newest first; the seeded pipelines retried nothing).
    fn jobs(&self, pid: &str) -> Reply {
        let Some(pl) = pid
            .parse::<u64>()
            .ok()
            .and_then(|id| self.p.pipelines.iter().find(|pl| pl.id == id))
        else {
            return message(StatusCode::NOT_FOUND, "404 Not found");
        };
        let scope = q(self.ctx, "scope");
        let jobs: Vec<_> = pl
            .jobs
            .iter()
            .rev()
            .filter(|j| scope.is_none_or(|s| j.status == s))
            .collect();
        let path = format!("{}/pipelines/{pid}/jobs", self.path);
        paged_by(self.ctx, &path, &jobs, |j| {
            render::job(self.base(), self.w, self.p, pl, j)
        })
    }

    /// `GET /projects/:id/issues`: `state` (default all), `scope` (default all),
    /// `updated_after`/`before`, `created_after`/`before`, `order_by` created_at|updated_at|
    /// title|due_date (default created_at desc; `id` too with keyset). Offset pages stop at
    /// the maximum offset (405); `pagination=keyset` pages by cursor.
    fn issues(&self) -> Reply {
        let keyset = keyset::asked(self.ctx);
        if let Some(refusal) = keyset::beyond_max_offset(self.ctx, self.w.max_offset, "Issue") {
            return refusal;
        }
        let state = q(self.ctx, "state").unwrap_or("all");
        if !matches!(state, "opened" | "closed" | "all") {
            return invalid_value("state");
        }
        let scope = q(self.ctx, "scope").unwrap_or("all");
        if !matches!(scope, "created_by_me" | "assigned_to_me" | "all") {
            return invalid_value("scope");
        }
        let (updated, created) = match (
            Window::of(self.ctx, "updated", false),
            Window::of(self.ctx, "created", false),
        ) {
            (Ok(u), Ok(c)) => (u, c),
            (Err(r), _) | (_, Err(r)) => return r,
        };
        let allowed: &[&'static str] = if keyset {
            &["created_at", "updated_at", "title", "id"]
        } else {
            &["created_at", "updated_at", "title", "due_date"]
        };
        let (by, desc) = match order(self.ctx, allowed, "created_at", true) {
            Ok(o) => o,
            Err(r) => return r,
        };
        let me = self.w.member_index(&self.ctx.user.username);
        let mut found: Vec<_> = self
            .p
            .issues
            .iter()
            .filter(|i| state == "all" || i.state == state)
            .filter(|i| match scope {
                "created_by_me" => Some(i.author) == me,
                // The seeded issues have no assignees.
                "assigned_to_me" => false,
                _ => true,
            })
            .filter(|i| updated.admits(i.updated_at) && created.admits(i.created_at))
            .collect();
        let key = |i: &Issue| match by {
            "updated_at" => Key::Time(i.updated_at, i.id),
            "title" => Key::Text(i.title.clone(), i.id),
            "id" => Key::Id(i.id),
            _ => Key::Time(i.created_at, i.id),
        };
        sort_by(&mut found, desc, key);
        let path = format!("{}/issues", self.path);
        let render = |i: &&Issue| render::issue(self.base(), self.w, self.p, i);
        if keyset {
            keyset::paged_by(self.ctx, &path, (by, desc), &found, |i| key(i), render)
        } else {
            paged_by(self.ctx, &path, &found, render)
        }
    }

    /// `…/issues/:iid/notes`.
    fn issue_notes(&self, iid: &str) -> Reply {
        let Some(issue) = iid
            .parse::<u64>()
            .ok()
            .and_then(|iid| self.p.issues.iter().find(|i| i.iid == iid))
        else {
            return not_found();
        };
        let path = format!("{}/issues/{iid}/notes", self.path);
        self.notes(&path, &issue.notes, ("Issue", issue.id, issue.iid))
    }

    /// `GET /projects/:id/milestones` (`state` active|closed).
    fn milestones(&self) -> Reply {
        let state = q(self.ctx, "state");
        if state.is_some_and(|s| !matches!(s, "active" | "closed")) {
            return invalid_value("state");
        }
        let full = self.w.project_full_path(self.p);
        let found: Vec<_> = self
            .p
            .milestones
            .iter()
            .filter(|m| state.is_none_or(|s| m.state == s))
            .collect();
        let path = format!("{}/milestones", self.path);
        paged_by(self.ctx, &path, &found, |m| {
            render::milestone(self.base(), ("project", self.p.id, &full), m)
        })
    }

    /// `GET /projects/:id/deployments`: `updated_after`/`before`, `finished_after`/`before`,
    /// `environment`, `status`, `order_by` id|iid|created_at|updated_at|finished_at|ref
    /// (default id asc).
    fn deployments(&self) -> Reply {
        let (updated, finished) = match (
            Window::of(self.ctx, "updated", false),
            Window::of(self.ctx, "finished", false),
        ) {
            (Ok(u), Ok(f)) => (u, f),
            (Err(r), _) | (_, Err(r)) => return r,
        };
        let allowed = [
            "id",
            "iid",
            "created_at",
            "updated_at",
            "finished_at",
            "ref",
        ];
        let (by, desc) = match order(self.ctx, &allowed, "id", false) {
            Ok(o) => o,
            Err(r) => return r,
        };
        let environment = q(self.ctx, "environment");
        let status = q(self.ctx, "status");
        let mut found: Vec<_> = self
            .p
            .deployments
            .iter()
            .filter(|d| updated.admits(d.updated_at))
            .filter(|d| {
                d.finished_at.is_some_and(|f| finished.admits(f)) || !finished_given(self.ctx)
            })
            .filter(|d| {
                environment.is_none_or(|e| {
                    self.p
                        .environments
                        .get(d.environment)
                        .is_some_and(|env| env.name == e)
                })
            })
            .filter(|d| status.is_none_or(|s| d.status == s))
            .collect();
        sort_by(&mut found, desc, |d| match by {
            "created_at" => Key::Time(d.created_at, d.id),
            "updated_at" => Key::Time(d.updated_at, d.id),
            "finished_at" => Key::Time(d.finished_at.unwrap_or(d.updated_at), d.id),
            "ref" => Key::Text(d.reference.clone(), d.id),
            _ => Key::Id(d.id),
        });
        let path = format!("{}/deployments", self.path);
        paged_by(self.ctx, &path, &found, |d| {
            render::deployment(self.base(), self.w, self.p, d)
        })
    }

    /// `GET /projects/:id/releases` (`order_by` released_at|created_at, default desc).
    fn releases(&self) -> Reply {
        let (by, desc) = match order(
            self.ctx,
            &["released_at", "created_at"],
            "released_at",
            true,
        ) {
            Ok(o) => o,
            Err(r) => return r,
        };
        let mut found: Vec<_> = self.p.releases.iter().collect();
        sort_by(&mut found, desc, |r| match by {
            "created_at" => Key::Time(r.created_at, 0),
            _ => Key::Time(r.released_at, 0),
        });
        let path = format!("{}/releases", self.path);
        paged_by(self.ctx, &path, &found, |r| {
            render::release(self.base(), self.w, self.p, r)
        })
    }

    /// `GET /projects/:id/feature_flags` (`scope` enabled|disabled).
    fn feature_flags(&self) -> Reply {
        let scope = q(self.ctx, "scope");
        if scope.is_some_and(|s| !matches!(s, "enabled" | "disabled")) {
            return invalid_value("scope");
        }
        let found: Vec<_> = self
            .p
            .feature_flags
            .iter()
            .filter(|f| match scope {
                Some("enabled") => f.active,
                Some("disabled") => !f.active,
                _ => true,
            })
            .collect();
        let path = format!("{}/feature_flags", self.path);
        paged_by(self.ctx, &path, &found, |f| render::feature_flag(f))
    }
}

fn finished_given(ctx: &GlCtx) -> bool {
    q(ctx, "finished_after").is_some() || q(ctx, "finished_before").is_some()
}
