//! The seeded workspace's data: plain records that point at each other by index. Ids are
//! UUIDs derived from the seed, as Linear's are UUIDs.

use headroom_core::clock::Timestamp;

/// The workspace (Linear's `Organization`).
#[derive(Debug, Clone)]
pub struct Org {
    /// UUID.
    pub id: String,
    /// Display name.
    pub name: String,
    /// URL key.
    pub url_key: String,
    /// Created.
    pub created_at: Timestamp,
}

/// A user.
#[derive(Debug, Clone)]
pub struct User {
    /// UUID.
    pub id: String,
    /// The login of the simulator's token table (`alice`), also the display name.
    pub login: String,
    /// Full name.
    pub name: String,
    /// Whether a token of the simulator belongs to this user.
    pub has_token: bool,
    /// Admin.
    pub admin: bool,
    /// Created.
    pub created_at: Timestamp,
    /// Updated.
    pub updated_at: Timestamp,
}

/// A team.
#[derive(Debug, Clone)]
pub struct Team {
    /// UUID.
    pub id: String,
    /// The issue identifier prefix (`ENG`).
    pub key: String,
    /// Name.
    pub name: String,
    /// Created.
    pub created_at: Timestamp,
    /// Updated.
    pub updated_at: Timestamp,
}

/// A user's membership of a team.
#[derive(Debug, Clone)]
pub struct Membership {
    /// UUID.
    pub id: String,
    /// Team index.
    pub team: usize,
    /// User index.
    pub user: usize,
    /// Team owner.
    pub owner: bool,
    /// Created (and updated).
    pub created_at: Timestamp,
}

/// A workflow state of a team.
#[derive(Debug, Clone)]
pub struct State {
    /// UUID.
    pub id: String,
    /// Team index.
    pub team: usize,
    /// Name (`In Progress`).
    pub name: &'static str,
    /// Linear's state type (`backlog`, `unstarted`, `started`, `completed`, `canceled`).
    pub kind: &'static str,
    /// Color.
    pub color: &'static str,
    /// Position in the team's workflow.
    pub position: f64,
    /// Created (and updated).
    pub created_at: Timestamp,
}

/// A label: of a team, or of the workspace (`team` none).
#[derive(Debug, Clone)]
pub struct Label {
    /// UUID.
    pub id: String,
    /// Team index, or none for a workspace label.
    pub team: Option<usize>,
    /// Name.
    pub name: String,
    /// Color.
    pub color: &'static str,
    /// Created (and updated).
    pub created_at: Timestamp,
}

/// A project.
#[derive(Debug, Clone)]
pub struct Project {
    /// UUID.
    pub id: String,
    /// Name.
    pub name: String,
    /// The slug's id part.
    pub slug_id: String,
    /// Teams (indices).
    pub teams: Vec<usize>,
    /// Lead (user index).
    pub lead: Option<usize>,
    /// Created.
    pub created_at: Timestamp,
    /// Updated.
    pub updated_at: Timestamp,
    /// Started.
    pub started_at: Option<Timestamp>,
}

/// A cycle of a team.
#[derive(Debug, Clone)]
pub struct Cycle {
    /// UUID.
    pub id: String,
    /// Team index.
    pub team: usize,
    /// Number within the team, from 1.
    pub number: u32,
    /// Starts.
    pub starts_at: Timestamp,
    /// Ends.
    pub ends_at: Timestamp,
    /// Completed (past cycles).
    pub completed_at: Option<Timestamp>,
    /// Created.
    pub created_at: Timestamp,
    /// Updated.
    pub updated_at: Timestamp,
}

/// An issue.
#[derive(Debug, Clone)]
pub struct Issue {
    /// UUID.
    pub id: String,
    /// Team index.
    pub team: usize,
    /// Number within the team.
    pub number: u32,
    /// Title.
    pub title: String,
    /// Priority, 0 (none) to 4 (low).
    pub priority: u8,
    /// Estimate.
    pub estimate: Option<u8>,
    /// Workflow state index.
    pub state: usize,
    /// Assignee (user index).
    pub assignee: Option<usize>,
    /// Creator (user index).
    pub creator: usize,
    /// Project index.
    pub project: Option<usize>,
    /// Cycle index.
    pub cycle: Option<usize>,
    /// Label indices.
    pub labels: Vec<usize>,
    /// Created.
    pub created_at: Timestamp,
    /// Last meaningful update (the newest history entry, else creation).
    pub updated_at: Timestamp,
    /// Comment indices.
    pub comments: Vec<usize>,
    /// Attachment indices.
    pub attachments: Vec<usize>,
    /// History entry indices, oldest first.
    pub history: Vec<usize>,
}

/// A comment on an issue.
#[derive(Debug, Clone)]
pub struct Comment {
    /// UUID.
    pub id: String,
    /// Issue index.
    pub issue: usize,
    /// Author (user index).
    pub user: usize,
    /// Body (Markdown).
    pub body: String,
    /// Created.
    pub created_at: Timestamp,
    /// Updated.
    pub updated_at: Timestamp,
}

/// An attachment of an issue.
#[derive(Debug, Clone)]
pub struct Attachment {
    /// UUID.
    pub id: String,
    /// Issue index.
    pub issue: usize,
    /// Creator (user index).
    pub creator: usize,
    /// Title.
    pub title: String,
    /// URL.
    pub url: String,
    /// Created (and updated).
    pub created_at: Timestamp,
}

/// One entry of an issue's history: what one change moved from where to where.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// UUID.
    pub id: String,
    /// Issue index.
    pub issue: usize,
    /// Who made the change (user index).
    pub actor: Option<usize>,
    /// When.
    pub created_at: Timestamp,
    /// State indices, from and to.
    pub state: Option<(Option<usize>, usize)>,
    /// Assignee user indices, from and to.
    pub assignee: Option<(Option<usize>, Option<usize>)>,
    /// Cycle indices, from and to.
    pub cycle: Option<(Option<usize>, Option<usize>)>,
    /// Project indices, from and to.
    pub project: Option<(Option<usize>, Option<usize>)>,
    /// Estimates, from and to.
    pub estimate: Option<(Option<u8>, Option<u8>)>,
    /// Priorities, from and to.
    pub priority: Option<(u8, u8)>,
    /// Labels added (indices).
    pub added_labels: Vec<usize>,
}

/// The whole workspace.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The organization.
    pub org: Org,
    /// Users (token owners first).
    pub users: Vec<User>,
    /// Teams.
    pub teams: Vec<Team>,
    /// Team memberships.
    pub memberships: Vec<Membership>,
    /// Workflow states.
    pub states: Vec<State>,
    /// Labels.
    pub labels: Vec<Label>,
    /// Projects.
    pub projects: Vec<Project>,
    /// Cycles.
    pub cycles: Vec<Cycle>,
    /// Issues.
    pub issues: Vec<Issue>,
    /// Comments.
    pub comments: Vec<Comment>,
    /// Attachments.
    pub attachments: Vec<Attachment>,
    /// History entries.
    pub history: Vec<History>,
    /// Seed of ids made after seeding (touches).
    pub seed: u64,
}

impl Workspace {
    /// The user with this token-table login.
    pub fn user_by_login(&self, login: &str) -> Option<usize> {
        self.users
            .iter()
            .position(|u| u.login.eq_ignore_ascii_case(login))
    }

    /// An issue's identifier (`ENG-12`).
    pub fn identifier(&self, issue: usize) -> String {
        let i = &self.issues[issue];
        format!("{}-{}", self.teams[i.team].key, i.number)
    }
}

/// A UUID (version 4 layout) from the seed, a kind and an index: stable across runs.
pub fn uuid(seed: u64, kind: u64, n: u64) -> String {
    let a = splitmix(seed ^ kind.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ n);
    let b = splitmix(a ^ n.rotate_left(17));
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xFFFF,
        a & 0xFFF,
        0x8000 | ((b >> 48) & 0x3FFF),
        b & 0xFFFF_FFFF_FFFF
    )
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
