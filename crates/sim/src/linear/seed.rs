//! Seeds the workspace from a [`LinearWorkspaceSpec`]: users (the token owners first), teams
//! with their memberships, workflow states, labels and cycles, projects, then each team's
//! issues with their history, comments and attachments. Deterministic from the seed; every
//! time lies in the past of the clock at seeding, and `updatedAt` ≥ `createdAt`.

use headroom_core::clock::{SignedDuration, Timestamp};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::model::*;
use super::spec::LinearWorkspaceSpec;
use crate::config::{SimConfig, TokenOwner};

/// Id kinds, so that two records of different kinds never share a UUID.
pub(crate) mod kind {
    pub(crate) const ORG: u64 = 1;
    pub(crate) const USER: u64 = 2;
    pub(crate) const TEAM: u64 = 3;
    pub(crate) const MEMBERSHIP: u64 = 4;
    pub(crate) const STATE: u64 = 5;
    pub(crate) const LABEL: u64 = 6;
    pub(crate) const PROJECT: u64 = 7;
    pub(crate) const CYCLE: u64 = 8;
    pub(crate) const ISSUE: u64 = 9;
    pub(crate) const COMMENT: u64 = 10;
    pub(crate) const ATTACHMENT: u64 = 11;
    pub(crate) const HISTORY: u64 = 12;
}

const NAMES: &[&str] = &[
    "Ada Lovelace",
    "Grace Hopper",
    "Alan Turing",
    "Edsger Dijkstra",
    "Barbara Liskov",
    "Donald Knuth",
    "Frances Allen",
    "Ken Thompson",
    "Radia Perlman",
    "John Backus",
];
const TEAMS: &[&str] = &[
    "Engineering",
    "Design",
    "Platform",
    "Mobile",
    "Data",
    "Growth",
];
const WORDS: &[&str] = &[
    "login",
    "billing",
    "search",
    "export",
    "sync",
    "cache",
    "onboarding",
    "webhooks",
    "audit",
    "reports",
    "import",
    "settings",
];
const VERBS: &[&str] = &["Fix", "Add", "Improve", "Remove", "Refactor", "Document"];
/// Linear's default workflow: name, type, color.
const WORKFLOW: &[(&str, &str, &str)] = &[
    ("Backlog", "backlog", "#bec2c8"),
    ("Todo", "unstarted", "#e2e2e2"),
    ("In Progress", "started", "#f2c94c"),
    ("In Review", "started", "#0f783c"),
    ("Done", "completed", "#5e6ad2"),
    ("Canceled", "canceled", "#95a2b3"),
];
const COLORS: &[&str] = &[
    "#eb5757", "#f2994a", "#4cb782", "#26b5ce", "#5e6ad2", "#bb87fc",
];
const DAY: i64 = 86_400;

struct Gen {
    rng: StdRng,
    seed: u64,
    now: Timestamp,
    n: u64,
}

impl Gen {
    fn id(&mut self, kind: u64) -> String {
        self.n += 1;
        uuid(self.seed, kind, self.n)
    }

    fn ago(&self, secs: i64) -> Timestamp {
        self.now - SignedDuration::from_secs(secs)
    }

    /// A time in `[from, to]`, to the millisecond.
    fn between(&mut self, from: Timestamp, to: Timestamp) -> Timestamp {
        let a = from.as_millisecond();
        let b = to.as_millisecond().max(a);
        Timestamp::from_millisecond(self.rng.random_range(a..=b)).unwrap_or(from)
    }

    fn pick(&mut self, n: usize) -> usize {
        self.rng.random_range(0..n.max(1))
    }
}

/// The workspace's people: every token owner of the simulator, then `spec.users` others.
fn logins(config: &SimConfig, spec: &LinearWorkspaceSpec) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    for t in &config.tokens {
        if let TokenOwner::User(login) = &t.owner
            && !out.iter().any(|(l, _)| l.eq_ignore_ascii_case(login))
        {
            out.push((login.clone(), true));
        }
    }
    for i in 0..spec.users {
        out.push((format!("member{}", i + 1), false));
    }
    if out.is_empty() {
        // Someone has to create the issues.
        out.push(("member1".to_owned(), false));
    }
    out
}

/// A team key: `ENG`, `DES`, … from the names, then `TAA`, `TAB`, ….
fn team_key(i: usize) -> (String, String) {
    match TEAMS.get(i) {
        Some(name) => (name[..3].to_ascii_uppercase(), (*name).to_owned()),
        None => {
            let a = (b'A' + (i / 26 % 26) as u8) as char;
            let b = (b'A' + (i % 26) as u8) as char;
            (format!("T{a}{b}"), format!("Team {a}{b}"))
        }
    }
}

/// Seeds the workspace as the spec asks, at `now`.
pub(crate) fn seed(config: &SimConfig, spec: &LinearWorkspaceSpec, now: Timestamp) -> Workspace {
    let mut g = Gen {
        rng: StdRng::seed_from_u64(config.seed ^ 0x11AE_A500),
        seed: config.seed,
        now,
        n: 0,
    };
    let start = g.ago(i64::from(spec.history_days) * DAY);
    let org = Org {
        id: g.id(kind::ORG),
        name: format!("{} Inc.", spec.name),
        url_key: spec.name.clone(),
        created_at: start - SignedDuration::from_secs(30 * DAY),
    };
    let mut ws = Workspace {
        org,
        users: Vec::new(),
        teams: Vec::new(),
        memberships: Vec::new(),
        states: Vec::new(),
        labels: Vec::new(),
        projects: Vec::new(),
        cycles: Vec::new(),
        issues: Vec::new(),
        comments: Vec::new(),
        attachments: Vec::new(),
        history: Vec::new(),
        seed: config.seed,
    };
    seed_people(&mut g, &mut ws, config, spec, start);
    seed_teams(&mut g, &mut ws, spec, start);
    seed_projects(&mut g, &mut ws, spec, start);
    for team in 0..ws.teams.len() {
        for number in 1..=spec.issues_per_team {
            seed_issue(&mut g, &mut ws, spec, team, number as u32, start);
        }
    }
    ws
}

fn seed_people(
    g: &mut Gen,
    ws: &mut Workspace,
    config: &SimConfig,
    spec: &LinearWorkspaceSpec,
    start: Timestamp,
) {
    for (i, (login, has_token)) in logins(config, spec).into_iter().enumerate() {
        let created = g.between(start - SignedDuration::from_secs(20 * DAY), start);
        let updated = g.between(created, g.ago(DAY));
        let name = match has_token {
            true => login.clone(),
            false => NAMES[i % NAMES.len()].to_owned(),
        };
        ws.users.push(User {
            id: g.id(kind::USER),
            login,
            name,
            has_token,
            admin: i == 0,
            created_at: created,
            updated_at: updated,
        });
    }
}

fn seed_teams(g: &mut Gen, ws: &mut Workspace, spec: &LinearWorkspaceSpec, start: Timestamp) {
    for l in 0..spec.workspace_labels {
        ws.labels.push(Label {
            id: g.id(kind::LABEL),
            team: None,
            name: ["Bug", "Feature", "Improvement", "Security"]
                .get(l)
                .map_or_else(|| format!("Label {}", l + 1), |s| (*s).to_owned()),
            color: COLORS[l % COLORS.len()],
            created_at: start,
        });
    }
    for t in 0..spec.teams {
        let (key, name) = team_key(t);
        let created = g.between(start - SignedDuration::from_secs(10 * DAY), start);
        ws.teams.push(Team {
            id: g.id(kind::TEAM),
            key,
            name,
            created_at: created,
            updated_at: g.between(created, g.ago(DAY)),
        });
        for (u, user) in ws.users.clone().iter().enumerate() {
            // Token owners belong to every team; the others to every other team.
            if user.has_token || (u + t) % 2 == 0 {
                ws.memberships.push(Membership {
                    id: g.id(kind::MEMBERSHIP),
                    team: t,
                    user: u,
                    owner: u == 0,
                    created_at: created,
                });
            }
        }
        for (p, (name, kind_, color)) in WORKFLOW.iter().enumerate() {
            ws.states.push(State {
                id: g.id(kind::STATE),
                team: t,
                name,
                kind: kind_,
                color,
                position: p as f64,
                created_at: created,
            });
        }
        for l in 0..spec.labels_per_team {
            ws.labels.push(Label {
                id: g.id(kind::LABEL),
                team: Some(t),
                name: format!("{} {}", WORDS[l % WORDS.len()], ws.teams[t].key),
                color: COLORS[(l + t) % COLORS.len()],
                created_at: created,
            });
        }
        seed_cycles(g, ws, spec, t);
    }
}

/// Two-week cycles, the last one current.
fn seed_cycles(g: &mut Gen, ws: &mut Workspace, spec: &LinearWorkspaceSpec, team: usize) {
    let n = spec.cycles_per_team as i64;
    for c in 0..n {
        let starts = g.ago((n - c) * 14 * DAY - 7 * DAY);
        let ends = starts + SignedDuration::from_secs(14 * DAY);
        let created = starts - SignedDuration::from_secs(7 * DAY);
        let completed = (ends < g.now).then_some(ends);
        ws.cycles.push(Cycle {
            id: g.id(kind::CYCLE),
            team,
            number: (c + 1) as u32,
            starts_at: starts,
            ends_at: ends,
            completed_at: completed,
            created_at: created,
            updated_at: completed.unwrap_or(starts),
        });
    }
}

fn seed_projects(g: &mut Gen, ws: &mut Workspace, spec: &LinearWorkspaceSpec, start: Timestamp) {
    for p in 0..spec.projects {
        let first = p % ws.teams.len();
        let mut teams = vec![first];
        if ws.teams.len() > 1 && p % 2 == 1 {
            teams.push((first + 1) % ws.teams.len());
        }
        let created = g.between(start, g.ago(30 * DAY));
        let lead = g.pick(ws.users.len());
        let id = g.id(kind::PROJECT);
        ws.projects.push(Project {
            slug_id: id[..12].replace('-', ""),
            id,
            name: format!("{} revamp", WORDS[p % WORDS.len()]),
            teams,
            lead: (!ws.users.is_empty()).then_some(lead),
            created_at: created,
            updated_at: g.between(created, g.ago(DAY)),
            started_at: Some(created + SignedDuration::from_secs(DAY)),
        });
    }
}

fn seed_issue(
    g: &mut Gen,
    ws: &mut Workspace,
    spec: &LinearWorkspaceSpec,
    team: usize,
    number: u32,
    start: Timestamp,
) {
    let users = ws.users.len();
    let created = g.between(start, g.ago(2 * DAY));
    let states: Vec<usize> = (0..ws.states.len())
        .filter(|&s| ws.states[s].team == team)
        .collect();
    let labels: Vec<usize> = (0..ws.labels.len())
        .filter(|&l| ws.labels[l].team.is_none_or(|t| t == team))
        .collect();
    let cycles: Vec<usize> = (0..ws.cycles.len())
        .filter(|&c| ws.cycles[c].team == team)
        .collect();
    let projects: Vec<usize> = (0..ws.projects.len())
        .filter(|&p| ws.projects[p].teams.contains(&team))
        .collect();
    let index = ws.issues.len();
    let mut issue = Issue {
        id: g.id(kind::ISSUE),
        team,
        number,
        title: format!(
            "{} {}",
            VERBS[g.pick(VERBS.len())],
            WORDS[g.pick(WORDS.len())]
        ),
        priority: g.rng.random_range(0..=4),
        estimate: g.rng.random_bool(0.6).then(|| g.rng.random_range(1..=5)),
        state: states.first().copied().unwrap_or(0),
        assignee: None,
        creator: g.pick(users),
        project: None,
        cycle: None,
        labels: Vec::new(),
        created_at: created,
        updated_at: created,
        comments: Vec::new(),
        attachments: Vec::new(),
        history: Vec::new(),
    };
    // Changes within an issue's first three minutes fold into its creation: history starts later.
    let mut at = created + SignedDuration::from_secs(600);
    let entries = g.rng.random_range(1..=spec.max_history);
    for e in 0..entries {
        let end = g.ago(DAY);
        at = g.between(at, end.max(at));
        let mut h = History {
            id: g.id(kind::HISTORY),
            issue: index,
            actor: Some(g.pick(users)),
            created_at: at,
            ..History::default()
        };
        match e % 4 {
            0 => {
                let to = states[(e / 4 + 1).min(states.len() - 1)];
                h.state = Some((Some(issue.state), to));
                issue.state = to;
                let assignee = Some(g.pick(users));
                h.assignee = Some((issue.assignee, assignee));
                issue.assignee = assignee;
            }
            1 if !labels.is_empty() => {
                let l = labels[g.pick(labels.len())];
                if !issue.labels.contains(&l) {
                    issue.labels.push(l);
                    h.added_labels.push(l);
                }
                if !cycles.is_empty() {
                    let c = Some(cycles[g.pick(cycles.len())]);
                    h.cycle = Some((issue.cycle, c));
                    issue.cycle = c;
                }
            }
            2 if !projects.is_empty() => {
                let p = Some(projects[g.pick(projects.len())]);
                h.project = Some((issue.project, p));
                issue.project = p;
            }
            _ => {
                let to = g.rng.random_range(1..=4);
                h.priority = Some((issue.priority, to));
                issue.priority = to;
                let est = Some(g.rng.random_range(1..=8));
                h.estimate = Some((issue.estimate, est));
                issue.estimate = est;
            }
        }
        issue.updated_at = at;
        issue.history.push(ws.history.len());
        ws.history.push(h);
    }
    seed_children(g, ws, spec, &mut issue, index);
    ws.issues.push(issue);
}

/// An issue's comments and attachments, made between its creation and its last update.
fn seed_children(
    g: &mut Gen,
    ws: &mut Workspace,
    spec: &LinearWorkspaceSpec,
    issue: &mut Issue,
    index: usize,
) {
    let users = ws.users.len();
    let (created, number) = (issue.created_at, issue.number);
    for _ in 0..g.rng.random_range(0..=spec.max_comments) {
        let created_c = g.between(created, issue.updated_at);
        issue.comments.push(ws.comments.len());
        ws.comments.push(Comment {
            id: g.id(kind::COMMENT),
            issue: index,
            user: g.pick(users),
            body: format!("Looked at the {} part.", WORDS[g.pick(WORDS.len())]),
            created_at: created_c,
            updated_at: created_c,
        });
    }
    for a in 0..g.rng.random_range(0..=spec.max_attachments) {
        let created_a = g.between(created, issue.updated_at);
        issue.attachments.push(ws.attachments.len());
        ws.attachments.push(Attachment {
            id: g.id(kind::ATTACHMENT),
            issue: index,
            creator: g.pick(users),
            title: format!("Pull request #{}", number * 10 + a as u32),
            url: format!(
                "https://github.com/acme/app/pull/{}",
                number * 10 + a as u32
            ),
            created_at: created_a,
        });
    }
}
