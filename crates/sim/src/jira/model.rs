//! The seeded site's data: users, projects, issues with their comments, changelog and
//! worklogs, boards and sprints; and the state the site keeps between requests.

use headroom_core::clock::Timestamp;
use jiff::tz::TimeZone;

use super::limits::Buckets;
use super::spec::JiraSiteSpec;

/// The simulated site's state: its data (when one is seeded) and its limits' buckets.
#[derive(Debug, Default)]
pub(crate) struct JiraState {
    pub(crate) site: Option<Site>,
    pub(crate) buckets: Buckets,
}

/// A user of the site.
#[derive(Debug, Clone)]
pub(crate) struct User {
    pub(crate) account_id: String,
    pub(crate) login: String,
    pub(crate) display_name: String,
}

impl User {
    pub(crate) fn email(&self) -> String {
        format!("{}@example.com", self.login)
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Project {
    pub(crate) id: u64,
    pub(crate) key: String,
    pub(crate) name: String,
    pub(crate) restricted: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Comment {
    pub(crate) id: u64,
    pub(crate) author: usize,
    pub(crate) text: String,
    pub(crate) created: Timestamp,
    pub(crate) updated: Timestamp,
}

/// One changed field of a history.
#[derive(Debug, Clone)]
pub(crate) struct Change {
    pub(crate) field: &'static str,
    pub(crate) field_id: &'static str,
    pub(crate) from: Option<String>,
    pub(crate) from_string: Option<String>,
    pub(crate) to: Option<String>,
    pub(crate) to_string: Option<String>,
}

/// One changelog entry.
#[derive(Debug, Clone)]
pub(crate) struct History {
    pub(crate) id: u64,
    pub(crate) author: usize,
    pub(crate) created: Timestamp,
    pub(crate) items: Vec<Change>,
}

#[derive(Debug, Clone)]
pub(crate) struct Worklog {
    pub(crate) id: u64,
    pub(crate) author: usize,
    pub(crate) started: Timestamp,
    pub(crate) seconds: u64,
    pub(crate) created: Timestamp,
}

#[derive(Debug, Clone)]
pub(crate) struct Issue {
    pub(crate) id: u64,
    pub(crate) key: String,
    pub(crate) project: usize,
    pub(crate) summary: String,
    /// Index into [`super::render::STATUSES`].
    pub(crate) status: usize,
    pub(crate) issuetype: usize,
    pub(crate) priority: usize,
    pub(crate) assignee: Option<usize>,
    pub(crate) reporter: usize,
    pub(crate) created: Timestamp,
    pub(crate) updated: Timestamp,
    pub(crate) resolved: Option<Timestamp>,
    pub(crate) labels: Vec<&'static str>,
    pub(crate) sprint: Option<usize>,
    /// The story-point estimate, when one is set.
    pub(crate) story_points: Option<f64>,
    pub(crate) comments: Vec<Comment>,
    pub(crate) changelog: Vec<History>,
    pub(crate) worklogs: Vec<Worklog>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BoardKind {
    Scrum,
    Kanban,
}

impl BoardKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            BoardKind::Scrum => "scrum",
            BoardKind::Kanban => "kanban",
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Board {
    pub(crate) id: u64,
    pub(crate) name: String,
    pub(crate) kind: BoardKind,
    pub(crate) project: usize,
}

#[derive(Debug, Clone)]
pub(crate) struct Sprint {
    pub(crate) id: u64,
    pub(crate) board: usize,
    pub(crate) name: String,
    /// `closed`, `active` or `future`.
    pub(crate) state: &'static str,
    pub(crate) start: Option<Timestamp>,
    pub(crate) end: Option<Timestamp>,
    pub(crate) complete: Option<Timestamp>,
    pub(crate) created: Timestamp,
}

/// The seeded site.
#[derive(Debug)]
pub(crate) struct Site {
    pub(crate) spec: JiraSiteSpec,
    /// The users' (and the site's) time zone.
    pub(crate) tz: TimeZone,
    pub(crate) users: Vec<User>,
    pub(crate) projects: Vec<Project>,
    pub(crate) issues: Vec<Issue>,
    pub(crate) boards: Vec<Board>,
    pub(crate) sprints: Vec<Sprint>,
    /// The next id of a changelog entry made by a touch.
    pub(crate) next_history_id: u64,
}

impl Site {
    /// The user with this login.
    pub(crate) fn user_by_login(&self, login: &str) -> Option<usize> {
        self.users
            .iter()
            .position(|u| u.login.eq_ignore_ascii_case(login))
    }

    /// The issue with this id or key, if the caller may browse its project.
    pub(crate) fn visible_issue(&self, id_or_key: &str) -> Option<usize> {
        let i = match id_or_key.parse::<u64>() {
            Ok(id) => self.issues.iter().position(|i| i.id == id)?,
            Err(_) => self
                .issues
                .iter()
                .position(|i| i.key.eq_ignore_ascii_case(id_or_key))?,
        };
        (!self.projects[self.issues[i].project].restricted).then_some(i)
    }
}
