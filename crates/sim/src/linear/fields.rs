//! The fields of the workspace's entities (users, teams, memberships, states, labels,
//! projects, cycles, issues, comments, attachments, history entries), as Linear renders them:
//! times in ISO 8601 with milliseconds, numbers as floats where its schema says `Float`.

use apollo_compiler::resolvers::{ObjectValue, ResolveInfo, ResolvedValue};
use serde_json::json;

use super::connection::Ent;
use super::resolve::{Kind, Obj, Resolved, leaf, opt_time, strings, time};

const PRIORITY: [&str; 5] = ["No priority", "Urgent", "High", "Medium", "Low"];

impl<'w> Obj<'w> {
    /// A field of an entity: the common ones, then the type's own.
    pub(crate) fn ent_field(&self, e: Ent, info: &ResolveInfo<'_>) -> Resolved<'w> {
        let ws = self.ws;
        match info.field_name() {
            "id" => return Ok(leaf(json!(e.id(ws)))),
            "createdAt" => return Ok(time(e.created(ws))),
            "updatedAt" => return Ok(time(e.updated(ws))),
            // Nothing is archived; lists leave archived rows out anyway.
            "archivedAt" => return Ok(ResolvedValue::null()),
            _ => {}
        }
        match e {
            Ent::User(i) => self.user_field(i, info),
            Ent::Team(i) => self.team_field(i, info),
            Ent::Issue(i) => self.issue_field(i, info),
            Ent::History(i) => self.history_field(i, info),
            _ => self.small_field(e, info),
        }
    }

    fn url(&self, rest: &str) -> String {
        format!("https://linear.app/{}/{rest}", self.ws.org.url_key)
    }

    fn user_field(&self, i: usize, info: &ResolveInfo<'_>) -> Resolved<'w> {
        let ws = self.ws;
        let u = &ws.users[i];
        let member_of = |t: usize| ws.memberships.iter().any(|m| m.team == t && m.user == i);
        Ok(match info.field_name() {
            "name" => leaf(json!(u.name)),
            "displayName" => leaf(json!(u.login)),
            "email" => leaf(json!(format!("{}@example.com", u.login))),
            "active" => leaf(json!(true)),
            "admin" => leaf(json!(u.admin)),
            "guest" => leaf(json!(false)),
            "url" => leaf(json!(self.url(&format!("profiles/{}", u.login)))),
            "timezone" => leaf(json!("Etc/UTC")),
            "avatarUrl" => ResolvedValue::null(),
            "isMe" => leaf(json!(i == self.cx.viewer)),
            "organization" => self.object(Kind::Org),
            "teamMemberships" => {
                let rows = (0..ws.memberships.len()).filter(|&m| ws.memberships[m].user == i);
                return self.connection(info, rows.map(Ent::Membership).collect());
            }
            "teams" => {
                let rows = (0..ws.teams.len()).filter(|&t| member_of(t));
                return self.connection(info, rows.map(Ent::Team).collect());
            }
            _ => return Err(self.unknown_field_error(info)),
        })
    }

    fn team_field(&self, i: usize, info: &ResolveInfo<'_>) -> Resolved<'w> {
        let ws = self.ws;
        let t = &ws.teams[i];
        let rows = match info.field_name() {
            "key" => return Ok(leaf(json!(t.key))),
            "name" | "displayName" => return Ok(leaf(json!(t.name))),
            "description" => return Ok(ResolvedValue::null()),
            "private" => return Ok(leaf(json!(false))),
            "timezone" => return Ok(leaf(json!("Etc/UTC"))),
            "cyclesEnabled" => return Ok(leaf(json!(true))),
            // Nothing is archived: every issue of the team counts, whatever `includeArchived`.
            "issueCount" => {
                let n = ws.issues.iter().filter(|issue| issue.team == i).count();
                return Ok(leaf(json!(n)));
            }
            "organization" => return Ok(self.object(Kind::Org)),
            "members" => ws
                .memberships
                .iter()
                .filter(|m| m.team == i)
                .map(|m| Ent::User(m.user))
                .collect(),
            "memberships" => (0..ws.memberships.len())
                .filter(|&m| ws.memberships[m].team == i)
                .map(Ent::Membership)
                .collect(),
            "states" => (0..ws.states.len())
                .filter(|&s| ws.states[s].team == i)
                .map(Ent::State)
                .collect(),
            "labels" => (0..ws.labels.len())
                .filter(|&l| ws.labels[l].team == Some(i))
                .map(Ent::Label)
                .collect(),
            "cycles" => (0..ws.cycles.len())
                .filter(|&c| ws.cycles[c].team == i)
                .map(Ent::Cycle)
                .collect(),
            "issues" => (0..ws.issues.len())
                .filter(|&n| ws.issues[n].team == i)
                .map(Ent::Issue)
                .collect(),
            "projects" => (0..ws.projects.len())
                .filter(|&p| ws.projects[p].teams.contains(&i))
                .map(Ent::Project)
                .collect(),
            _ => return Err(self.unknown_field_error(info)),
        };
        self.connection(info, rows)
    }

    fn issue_field(&self, i: usize, info: &ResolveInfo<'_>) -> Resolved<'w> {
        let ws = self.ws;
        let issue = &ws.issues[i];
        let state = &ws.states[issue.state];
        let done_at = |kind: &str| (state.kind == kind).then_some(issue.updated_at);
        Ok(match info.field_name() {
            "identifier" => leaf(json!(ws.identifier(i))),
            "number" => leaf(json!(f64::from(issue.number))),
            "title" => leaf(json!(issue.title)),
            "description" => leaf(json!(format!("{} — seeded.", issue.title))),
            "priority" => leaf(json!(f64::from(issue.priority))),
            "priorityLabel" => leaf(json!(PRIORITY[usize::from(issue.priority.min(4))])),
            "estimate" => leaf(json!(issue.estimate.map(f64::from))),
            "startedAt" => opt_time(done_at("started")),
            "completedAt" => opt_time(done_at("completed")),
            "canceledAt" => opt_time(done_at("canceled")),
            "dueDate" => ResolvedValue::null(),
            "url" => leaf(json!(self.url(&format!("issue/{}", ws.identifier(i))))),
            "branchName" => leaf(json!(ws.identifier(i).to_ascii_lowercase())),
            "state" => self.ent(Ent::State(issue.state)),
            "team" => self.ent(Ent::Team(issue.team)),
            "assignee" => self.opt_ent(issue.assignee.map(Ent::User)),
            "creator" => self.ent(Ent::User(issue.creator)),
            "project" => self.opt_ent(issue.project.map(Ent::Project)),
            "cycle" => self.opt_ent(issue.cycle.map(Ent::Cycle)),
            "parent" => ResolvedValue::null(),
            "labelIds" => strings(
                issue
                    .labels
                    .iter()
                    .map(|l| ws.labels[*l].id.clone())
                    .collect(),
            ),
            "labels" => {
                return self
                    .connection(info, issue.labels.iter().map(|l| Ent::Label(*l)).collect());
            }
            "comments" => {
                let rows = issue.comments.iter().map(|c| Ent::Comment(*c));
                return self.connection(info, rows.collect());
            }
            "attachments" => {
                let rows = issue.attachments.iter().map(|a| Ent::Attachment(*a));
                return self.connection(info, rows.collect());
            }
            "history" => {
                let rows = issue.history.iter().map(|h| Ent::History(*h));
                return self.connection(info, rows.collect());
            }
            _ => return Err(self.unknown_field_error(info)),
        })
    }

    fn history_field(&self, i: usize, info: &ResolveInfo<'_>) -> Resolved<'w> {
        let ws = self.ws;
        let h = &ws.history[i];
        let user_id = |u: Option<usize>| leaf(json!(u.map(|u| ws.users[u].id.clone())));
        let pair = |p: Option<(Option<usize>, Option<usize>)>, from: bool| {
            p.and_then(|(f, t)| if from { f } else { t })
        };
        let state = h.state.map(|(f, t)| (f, Some(t)));
        Ok(match info.field_name() {
            "issue" => self.ent(Ent::Issue(h.issue)),
            "actor" => self.opt_ent(h.actor.map(Ent::User)),
            "actorId" => user_id(h.actor),
            "addedLabelIds" if h.added_labels.is_empty() => ResolvedValue::null(),
            "addedLabelIds" => strings(
                h.added_labels
                    .iter()
                    .map(|l| ws.labels[*l].id.clone())
                    .collect(),
            ),
            "removedLabelIds" | "fromTitle" | "toTitle" | "updatedDescription" => {
                ResolvedValue::null()
            }
            "fromState" => self.opt_ent(pair(state, true).map(Ent::State)),
            "toState" => self.opt_ent(pair(state, false).map(Ent::State)),
            "fromStateId" => leaf(json!(pair(state, true).map(|s| &ws.states[s].id))),
            "toStateId" => leaf(json!(pair(state, false).map(|s| &ws.states[s].id))),
            "fromAssignee" => self.opt_ent(pair(h.assignee, true).map(Ent::User)),
            "toAssignee" => self.opt_ent(pair(h.assignee, false).map(Ent::User)),
            "fromAssigneeId" => user_id(pair(h.assignee, true)),
            "toAssigneeId" => user_id(pair(h.assignee, false)),
            "fromCycle" => self.opt_ent(pair(h.cycle, true).map(Ent::Cycle)),
            "toCycle" => self.opt_ent(pair(h.cycle, false).map(Ent::Cycle)),
            "fromCycleId" => leaf(json!(pair(h.cycle, true).map(|c| &ws.cycles[c].id))),
            "toCycleId" => leaf(json!(pair(h.cycle, false).map(|c| &ws.cycles[c].id))),
            "fromProject" => self.opt_ent(pair(h.project, true).map(Ent::Project)),
            "toProject" => self.opt_ent(pair(h.project, false).map(Ent::Project)),
            "fromProjectId" => leaf(json!(pair(h.project, true).map(|p| &ws.projects[p].id))),
            "toProjectId" => leaf(json!(pair(h.project, false).map(|p| &ws.projects[p].id))),
            "fromEstimate" => leaf(json!(h.estimate.and_then(|e| e.0).map(f64::from))),
            "toEstimate" => leaf(json!(h.estimate.and_then(|e| e.1).map(f64::from))),
            "fromPriority" => leaf(json!(h.priority.map(|p| f64::from(p.0)))),
            "toPriority" => leaf(json!(h.priority.map(|p| f64::from(p.1)))),
            _ => return Err(self.unknown_field_error(info)),
        })
    }

    /// Memberships, states, labels, projects, cycles, comments and attachments.
    fn small_field(&self, e: Ent, info: &ResolveInfo<'_>) -> Resolved<'w> {
        let ws = self.ws;
        let issues_of = |keep: &dyn Fn(usize) -> bool| -> Vec<Ent> {
            (0..ws.issues.len())
                .filter(|&n| keep(n))
                .map(Ent::Issue)
                .collect()
        };
        Ok(match (e, info.field_name()) {
            (Ent::Membership(m), "owner") => leaf(json!(ws.memberships[m].owner)),
            (Ent::Membership(m), "sortOrder") => leaf(json!(m as f64)),
            (Ent::Membership(m), "team") => self.ent(Ent::Team(ws.memberships[m].team)),
            (Ent::Membership(m), "user") => self.ent(Ent::User(ws.memberships[m].user)),
            (Ent::State(s), "color") => leaf(json!(ws.states[s].color)),
            (Ent::State(s), "name") => leaf(json!(ws.states[s].name)),
            (Ent::State(s), "type") => leaf(json!(ws.states[s].kind)),
            (Ent::State(s), "position") => leaf(json!(ws.states[s].position)),
            (Ent::State(s), "team") => self.ent(Ent::Team(ws.states[s].team)),
            (Ent::State(s), "issues") => {
                return self.connection(info, issues_of(&|n| ws.issues[n].state == s));
            }
            (Ent::Label(l), "color") => leaf(json!(ws.labels[l].color)),
            (Ent::Label(l), "name") => leaf(json!(ws.labels[l].name)),
            (Ent::Label(_), "isGroup") => leaf(json!(false)),
            (Ent::Label(l), "team") => self.opt_ent(ws.labels[l].team.map(Ent::Team)),
            (Ent::Project(p), field) => return self.project_field(p, field, info),
            (Ent::Cycle(c), "number") => leaf(json!(f64::from(ws.cycles[c].number))),
            (Ent::Cycle(c), "startsAt") => time(ws.cycles[c].starts_at),
            (Ent::Cycle(c), "endsAt") => time(ws.cycles[c].ends_at),
            (Ent::Cycle(c), "completedAt") => opt_time(ws.cycles[c].completed_at),
            (Ent::Cycle(c), "isActive") => {
                let cy = &ws.cycles[c];
                leaf(json!(
                    cy.starts_at <= self.cx.now && self.cx.now < cy.ends_at
                ))
            }
            (Ent::Cycle(_), "progress") => leaf(json!(0.0)),
            (Ent::Cycle(c), "team") => self.ent(Ent::Team(ws.cycles[c].team)),
            (Ent::Cycle(c), "issues") => {
                return self.connection(info, issues_of(&|n| ws.issues[n].cycle == Some(c)));
            }
            (Ent::Comment(c), "body") => leaf(json!(ws.comments[c].body)),
            (Ent::Comment(c), "issue") => self.ent(Ent::Issue(ws.comments[c].issue)),
            (Ent::Comment(c), "issueId") => leaf(json!(ws.issues[ws.comments[c].issue].id)),
            (Ent::Comment(c), "user") => self.ent(Ent::User(ws.comments[c].user)),
            (Ent::Comment(c), "url") => {
                let issue = ws.identifier(ws.comments[c].issue);
                let id = &ws.comments[c].id;
                leaf(json!(
                    self.url(&format!("issue/{issue}#comment-{}", &id[..8]))
                ))
            }
            (Ent::Attachment(a), "title") => leaf(json!(ws.attachments[a].title)),
            (Ent::Attachment(a), "url") => leaf(json!(ws.attachments[a].url)),
            (Ent::Attachment(_), "sourceType") => leaf(json!("github")),
            (Ent::Attachment(_), "metadata") => leaf(json!({})),
            (Ent::Attachment(a), "issue") => self.ent(Ent::Issue(ws.attachments[a].issue)),
            (Ent::Attachment(a), "creator") => self.ent(Ent::User(ws.attachments[a].creator)),
            (_, "description" | "creator" | "parent" | "editedAt" | "subtitle" | "name") => {
                ResolvedValue::null()
            }
            _ => return Err(self.unknown_field_error(info)),
        })
    }

    fn project_field(&self, p: usize, field: &str, info: &ResolveInfo<'_>) -> Resolved<'w> {
        let ws = self.ws;
        let pr = &ws.projects[p];
        Ok(match field {
            "name" => leaf(json!(pr.name)),
            "description" => leaf(json!("")),
            "slugId" => leaf(json!(pr.slug_id)),
            "url" => leaf(json!(self.url(&format!("project/{}", pr.slug_id)))),
            "color" => leaf(json!("#5e6ad2")),
            "startedAt" => opt_time(pr.started_at),
            "completedAt" | "canceledAt" | "startDate" | "targetDate" => ResolvedValue::null(),
            "progress" => leaf(json!(0.0)),
            "priority" => leaf(json!(0)),
            // Deprecated for `status`, still served: the status type's name.
            "state" => leaf(json!(if pr.started_at.is_some() {
                "started"
            } else {
                "planned"
            })),
            "lead" => self.opt_ent(pr.lead.map(Ent::User)),
            "creator" => self.opt_ent(pr.lead.map(Ent::User)),
            "teams" => {
                return self.connection(info, pr.teams.iter().map(|t| Ent::Team(*t)).collect());
            }
            "issues" => {
                let rows = (0..ws.issues.len()).filter(|&n| ws.issues[n].project == Some(p));
                return self.connection(info, rows.map(Ent::Issue).collect());
            }
            _ => return Err(self.unknown_field_error(info)),
        })
    }
}
