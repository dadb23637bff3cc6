//! Seeds the site from a [`JiraSiteSpec`]: users (every token owner of the simulator, then a
//! few who only author things), projects, boards and sprints, then each issue with its
//! comments, changelog and worklogs. Deterministic from the spec's seed; every time lies in
//! the past of the clock at seeding, and an issue's `updated` is its last change.

use headroom_core::clock::Timestamp;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sha2::{Digest, Sha256};

use super::model::*;
use super::render::{STATUSES, status_id};
use super::spec::JiraSiteSpec;
use crate::config::{SimConfig, TokenOwner};
use crate::world::World;

const WORDS: &[&str] = &[
    "cache", "parser", "login", "billing", "search", "export", "retry", "metrics", "queue",
    "upload", "schema", "session", "report", "webhook", "audit", "render",
];
const LABELS: &[&str] = &["backend", "frontend", "ops", "docs", "customer"];
const DAY: i64 = 86_400;

/// An Atlassian-style account id, stable per login.
pub(crate) fn account_id(login: &str) -> String {
    let digest = Sha256::digest(login.as_bytes());
    let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    format!("712020:{hex}")
}

/// `A`, `B`, … `Z`, `AA`, `AB`, …: the letters of project `i`'s key.
pub(crate) fn letters(i: usize) -> String {
    if i < 26 {
        char::from(b'A' + i as u8).to_string()
    } else {
        let (a, b) = ((i - 26) / 26, (i - 26) % 26);
        format!(
            "{}{}",
            char::from(b'A' + a as u8),
            char::from(b'A' + b as u8)
        )
    }
}

/// The site's people: every token owner (they may read), then four who only author things.
fn users_of(config: &SimConfig, world: &World) -> Vec<User> {
    let mut users: Vec<User> = Vec::new();
    let mut add = |login: &str, name: String| {
        if !users.iter().any(|u| u.login.eq_ignore_ascii_case(login)) {
            users.push(User {
                account_id: account_id(login),
                login: login.to_owned(),
                display_name: name,
            });
        }
    };
    for t in &config.tokens {
        if let TokenOwner::User(login) = &t.owner {
            let name = world
                .user(login)
                .and_then(|u| u.name.clone())
                .unwrap_or_else(|| login.clone());
            add(login, name);
        }
    }
    for n in 1..=4 {
        add(&format!("jira-author-{n}"), format!("Author {n}"));
    }
    users
}

struct Gen {
    rng: StdRng,
    now: Timestamp,
    users: usize,
}

impl Gen {
    /// A time in `[from, to]`, to the millisecond.
    fn between(&mut self, from: Timestamp, to: Timestamp) -> Timestamp {
        let (a, b) = (from.as_millisecond(), to.as_millisecond());
        let b = b.max(a);
        Timestamp::from_millisecond(self.rng.random_range(a..=b)).unwrap_or(from)
    }

    fn ago(&self, secs: i64) -> Timestamp {
        Timestamp::from_second(self.now.as_second() - secs).unwrap_or(self.now)
    }

    fn user(&mut self) -> usize {
        self.rng.random_range(0..self.users.max(1))
    }

    fn word(&mut self) -> &'static str {
        WORDS[self.rng.random_range(0..WORDS.len())]
    }

    /// `n` sorted times in `[from, to]`.
    fn sorted(&mut self, n: usize, from: Timestamp, to: Timestamp) -> Vec<Timestamp> {
        let mut t: Vec<Timestamp> = (0..n).map(|_| self.between(from, to)).collect();
        t.sort();
        t
    }
}

/// Seeds the site `spec` describes, its users from the simulator's token owners.
pub(crate) fn seed(spec: &JiraSiteSpec, config: &SimConfig, world: &World, now: Timestamp) -> Site {
    let users = users_of(config, world);
    let tz = jiff::tz::TimeZone::get(&spec.time_zone).unwrap_or(jiff::tz::TimeZone::UTC);
    let mut g = Gen {
        rng: StdRng::seed_from_u64(spec.seed),
        now,
        users: users.len(),
    };
    let projects: Vec<Project> = (0..spec.projects)
        .map(|i| Project {
            id: 10_000 + i as u64,
            key: format!("P{}", letters(i)),
            name: format!("Project {}", letters(i)),
            restricted: i + spec.restricted_projects >= spec.projects,
        })
        .collect();
    let mut site = Site {
        spec: spec.clone(),
        tz,
        users,
        projects,
        issues: Vec::new(),
        boards: Vec::new(),
        sprints: Vec::new(),
        next_history_id: 0,
    };
    seed_boards(&mut site, &mut g);
    let mut ids = ChildIds::default();
    for p in 0..site.projects.len() {
        for n in 0..spec.issues_per_project {
            let issue = seed_issue(&site, &mut g, &mut ids, p, n);
            site.issues.push(issue);
        }
    }
    site.next_history_id = ids.history;
    site
}

/// Boards of every project and the sprints of each scrum board.
fn seed_boards(site: &mut Site, g: &mut Gen) {
    let spec = &site.spec;
    for p in 0..site.projects.len() {
        for b in 0..spec.boards_per_project {
            let kind = if b % 2 == 0 {
                BoardKind::Scrum
            } else {
                BoardKind::Kanban
            };
            site.boards.push(Board {
                id: site.boards.len() as u64 + 1,
                name: format!("{} board {}", site.projects[p].key, b + 1),
                kind,
                project: p,
            });
        }
    }
    for (bi, board) in site.boards.iter().enumerate() {
        if board.kind != BoardKind::Scrum {
            continue;
        }
        let n = spec.sprints_per_board;
        for s in 0..n {
            // Closed sprints, then the active one, then one in the future.
            let state = match (n - s, n) {
                (1, 1) => "active",
                (1, _) => "future",
                (2, _) => "active",
                _ => "closed",
            };
            // The active sprint began 5 days ago; each closed one 14 days before the next.
            let active = n.saturating_sub(2).min(n - 1);
            let back = 5 * DAY + active.saturating_sub(s) as i64 * 14 * DAY;
            let start = g.ago(back);
            let created = g.between(g.ago(back + 30 * DAY), g.ago(back));
            let (start, end, complete) = match state {
                "future" => (None, None, None),
                "active" => (
                    Some(start),
                    Some(start + jiff::SignedDuration::from_hours(14 * 24)),
                    None,
                ),
                _ => {
                    let end = start + jiff::SignedDuration::from_hours(14 * 24);
                    (Some(start), Some(end), Some(end))
                }
            };
            site.sprints.push(Sprint {
                id: site.sprints.len() as u64 + 1,
                board: bi,
                name: format!("{} Sprint {}", board.name, s + 1),
                state,
                start,
                end,
                complete,
                created,
            });
        }
    }
}

#[derive(Default)]
struct ChildIds {
    comment: u64,
    history: u64,
    worklog: u64,
}

/// The sprints an issue of project `p` may belong to: those of its first scrum board.
fn sprints_of_project(site: &Site, p: usize) -> Vec<usize> {
    let Some(board) = site
        .boards
        .iter()
        .position(|b| b.project == p && b.kind == BoardKind::Scrum)
    else {
        return Vec::new();
    };
    (0..site.sprints.len())
        .filter(|&s| site.sprints[s].board == board)
        .collect()
}

fn seed_issue(site: &Site, g: &mut Gen, ids: &mut ChildIds, p: usize, n: usize) -> Issue {
    let spec = &site.spec;
    let created = g.between(g.ago(i64::from(spec.history_days) * DAY), g.ago(3_600));
    let updated = g.between(created, g.ago(60));
    let status = g.rng.random_range(0..STATUSES.len());
    let resolved = (STATUSES[status].2 == "done").then(|| g.between(created, updated));
    let sprints = sprints_of_project(site, p);
    let sprint = (!sprints.is_empty() && g.rng.random_bool(0.75))
        .then(|| sprints[g.rng.random_range(0..sprints.len())]);
    let label_count = g.rng.random_range(0..=2);
    let labels = (0..label_count)
        .map(|_| LABELS[g.rng.random_range(0..LABELS.len())])
        .collect();
    let mut issue = Issue {
        id: 10_000 + site.issues.len() as u64 + 1,
        key: format!("{}-{}", site.projects[p].key, n + 1),
        project: p,
        summary: format!("{} {} {}", g.word(), g.word(), n + 1),
        status,
        issuetype: g.rng.random_range(0..3),
        priority: g.rng.random_range(0..5),
        assignee: g.rng.random_bool(0.8).then(|| g.user()),
        reporter: g.user(),
        created,
        updated,
        resolved,
        labels,
        sprint,
        story_points: story_points(spec.seed, n as u64, p as u64),
        comments: Vec::new(),
        changelog: Vec::new(),
        worklogs: Vec::new(),
    };
    seed_children(&mut issue, g, ids, spec);
    issue
}

/// An issue's estimate: some issues have none, the others a Fibonacci number. Derived from
/// the seed and the issue's place rather than drawn, so the rest of the site's data is what
/// the seed made it before estimates were seeded.
fn story_points(seed: u64, n: u64, project: u64) -> Option<f64> {
    const POINTS: [Option<f64>; 8] = [
        None,
        Some(1.0),
        Some(2.0),
        Some(3.0),
        Some(5.0),
        Some(8.0),
        Some(13.0),
        None,
    ];
    let mix = (seed ^ (project << 32) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    POINTS[(mix >> 61) as usize]
}

/// Comments, changelog (its last entry at `updated`: the issue's last change) and worklogs.
fn seed_children(issue: &mut Issue, g: &mut Gen, ids: &mut ChildIds, spec: &JiraSiteSpec) {
    let (created, updated) = (issue.created, issue.updated);
    for at in g.sorted(spec.comments_per_issue, created, updated) {
        ids.comment += 1;
        let text = format!("Looked at the {} {}.", g.word(), g.word());
        issue.comments.push(Comment {
            id: 10_000 + ids.comment,
            author: g.user(),
            text,
            created: at,
            updated: at,
        });
    }
    let mut times = g.sorted(spec.changelog_per_issue, created, updated);
    if let Some(last) = times.last_mut() {
        *last = updated;
    }
    let mut from = 0usize;
    for (k, at) in times.into_iter().enumerate() {
        ids.history += 1;
        let last = k + 1 == spec.changelog_per_issue;
        let to = if last {
            issue.status
        } else {
            g.rng.random_range(0..STATUSES.len())
        };
        issue.changelog.push(History {
            id: 10_000 + ids.history,
            author: g.user(),
            created: at,
            items: vec![status_change(from, to)],
        });
        from = to;
    }
    for at in g.sorted(spec.worklogs_per_issue, created, updated) {
        ids.worklog += 1;
        issue.worklogs.push(Worklog {
            id: 10_000 + ids.worklog,
            author: g.user(),
            started: at,
            seconds: 900 * g.rng.random_range(1..=16),
            created: at,
        });
    }
}

/// A status transition, as Jira's changelog writes it.
pub(crate) fn status_change(from: usize, to: usize) -> Change {
    Change {
        field: "status",
        field_id: "status",
        from: Some(status_id(from)),
        from_string: Some(STATUSES[from].0.to_owned()),
        to: Some(status_id(to)),
        to_string: Some(STATUSES[to].0.to_owned()),
    }
}
