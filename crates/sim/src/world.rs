//! The simulated GitHub's data: users, an organization, repositories and their contents, the
//! feed's actors and repositories. Generated from a seed; repository contents are generated on
//! first use (so an organization of any size costs little until it is crawled) and then kept,
//! so that mutations stick.

use std::collections::{BTreeMap, HashMap};

use headroom_core::clock::{SignedDuration, Timestamp};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::config::{SimConfig, TokenOwner};
use crate::scenario::Scenario;

/// A user or organization account.
#[derive(Debug, Clone)]
pub struct UserRec {
    /// Database id.
    pub id: u64,
    /// Login.
    pub login: String,
    /// Display name.
    pub name: Option<String>,
    /// `User` or `Organization`.
    pub is_org: bool,
    /// Created.
    pub created_at: Timestamp,
    /// Gone: every read answers 404.
    pub deleted: bool,
}

/// A repository.
#[derive(Debug, Clone)]
pub struct RepoRec {
    /// Database id.
    pub id: u64,
    /// Owner login.
    pub owner: String,
    /// Name.
    pub name: String,
    /// Earlier `owner/name`s, which answer 301 to `/repositories/{id}`.
    pub previous_names: Vec<String>,
    /// Search also finds it by its previous names (an ID-intact rename).
    pub searchable_by_old_name: bool,
    /// Gone: every read answers 404.
    pub deleted: bool,
    /// Private.
    pub private: bool,
    /// Description.
    pub description: Option<String>,
    /// Language.
    pub language: Option<String>,
    /// Default branch.
    pub default_branch: String,
    /// Stars.
    pub stars: u64,
    /// Created.
    pub created_at: Timestamp,
    /// Updated.
    pub updated_at: Timestamp,
    /// Whether contents are generated (seeded) or start empty (created through the API).
    pub generated: bool,
    /// Whether a created repository got an initial commit.
    pub auto_init: bool,
}

impl RepoRec {
    /// `owner/name`.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }
}

/// A team.
#[derive(Debug, Clone)]
pub struct TeamRec {
    /// Database id.
    pub id: u64,
    /// Name.
    pub name: String,
    /// Slug.
    pub slug: String,
    /// Description.
    pub description: String,
    /// Member logins.
    pub members: Vec<String>,
}

/// An issue comment.
#[derive(Debug, Clone)]
pub struct CommentRec {
    /// Database id.
    pub id: u64,
    /// Author login.
    pub user: String,
    /// Body.
    pub body: String,
    /// Created.
    pub created_at: Timestamp,
}

/// An issue, or the issue side of a pull request.
#[derive(Debug, Clone)]
pub struct IssueRec {
    /// Database id.
    pub id: u64,
    /// Number (shared with pull requests).
    pub number: u64,
    /// Title.
    pub title: String,
    /// Body.
    pub body: String,
    /// `open` or `closed`.
    pub open: bool,
    /// Author login.
    pub user: String,
    /// Labels.
    pub labels: Vec<String>,
    /// Created.
    pub created_at: Timestamp,
    /// Updated.
    pub updated_at: Timestamp,
    /// Comments, oldest first.
    pub comments: Vec<CommentRec>,
    /// When this is a pull request: its index in `RepoContent::pulls`.
    pub pull: Option<usize>,
}

/// A changed file.
#[derive(Debug, Clone)]
pub struct FileRec {
    /// Path.
    pub filename: String,
    /// `added`, `modified`, `removed`.
    pub status: &'static str,
    /// Lines added.
    pub additions: u64,
    /// Lines deleted.
    pub deletions: u64,
    /// Blob sha.
    pub sha: String,
}

/// A commit.
#[derive(Debug, Clone)]
pub struct CommitRec {
    /// Sha.
    pub sha: String,
    /// Message.
    pub message: String,
    /// Author login.
    pub author: String,
    /// Date.
    pub date: Timestamp,
    /// Parent shas.
    pub parents: Vec<String>,
    /// Files changed by this commit.
    pub files: Vec<FileRec>,
    /// The whole tree: path → (blob sha, content as base64).
    pub tree: BTreeMap<String, (String, String)>,
}

/// A pull request.
#[derive(Debug, Clone)]
pub struct PullRec {
    /// Database id.
    pub id: u64,
    /// Number.
    pub number: u64,
    /// Head branch.
    pub head: String,
    /// Base branch.
    pub base: String,
    /// Head sha at the time of the last update.
    pub head_sha: String,
    /// Base sha when opened.
    pub base_sha: String,
    /// Commits, oldest first.
    pub commits: Vec<String>,
    /// Merged.
    pub merged: bool,
    /// Merged at.
    pub merged_at: Option<Timestamp>,
    /// Merge commit sha.
    pub merge_sha: Option<String>,
}

/// A branch.
#[derive(Debug, Clone)]
pub struct BranchRec {
    /// Name.
    pub name: String,
    /// Head sha.
    pub sha: String,
    /// Protection settings, as sent to `PUT …/protection`.
    pub protection: Option<serde_json::Value>,
}

/// A workflow job (also a check run).
#[derive(Debug, Clone)]
pub struct JobRec {
    /// Database id (also the check run id).
    pub id: u64,
    /// Name.
    pub name: String,
    /// Conclusion.
    pub conclusion: &'static str,
    /// Started.
    pub started_at: Timestamp,
    /// Completed.
    pub completed_at: Timestamp,
}

/// A workflow run.
#[derive(Debug, Clone)]
pub struct RunRec {
    /// Database id.
    pub id: u64,
    /// Workflow name.
    pub name: String,
    /// Run number.
    pub run_number: u64,
    /// Branch.
    pub head_branch: String,
    /// Sha.
    pub head_sha: String,
    /// Trigger.
    pub event: &'static str,
    /// Conclusion.
    pub conclusion: &'static str,
    /// Created.
    pub created_at: Timestamp,
    /// Jobs.
    pub jobs: Vec<JobRec>,
}

/// What a project item is: an issue or pull request of the project's repository (by number),
/// or a draft that exists only on the board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectItemContent {
    /// Issue or pull request number in the project's repository.
    Issue(u64),
    /// A draft issue's title.
    Draft(String),
}

/// An item of a project (v2).
#[derive(Debug, Clone)]
pub struct ProjectItemRec {
    /// Database id.
    pub id: u64,
    /// What it shows.
    pub content: ProjectItemContent,
}

/// A project (v2).
#[derive(Debug, Clone)]
pub struct ProjectRec {
    /// Database id.
    pub id: u64,
    /// Number, unique per owner (GitHub numbers an owner's projects, not a repository's).
    pub number: u64,
    /// Title.
    pub title: String,
    /// Closed.
    pub closed: bool,
    /// Created.
    pub created_at: Timestamp,
    /// Items on the board, in board order.
    pub items: Vec<ProjectItemRec>,
}

/// Everything inside a repository.
#[derive(Debug, Clone, Default)]
pub struct RepoContent {
    /// Issues and the issue side of pull requests, by number.
    pub issues: Vec<IssueRec>,
    /// Pull requests.
    pub pulls: Vec<PullRec>,
    /// Commits by sha.
    pub commits: HashMap<String, CommitRec>,
    /// Branches.
    pub branches: Vec<BranchRec>,
    /// Workflow runs, newest first.
    pub runs: Vec<RunRec>,
    /// Projects (v2).
    pub projects: Vec<ProjectRec>,
    /// Blobs created through the Git data API (`POST …/git/blobs`): sha → content as base64.
    pub blobs: HashMap<String, String>,
    /// Trees created through the Git data API (`POST …/git/trees`): sha → the whole tree
    /// (path → blob sha, content as base64), as commits hold theirs.
    pub trees: HashMap<String, BTreeMap<String, (String, String)>>,
}

/// A tree's sha: the same for the same paths and blobs, so a tree written through the Git
/// data API and a commit's tree are one object when their contents are.
pub fn tree_sha(tree: &BTreeMap<String, (String, String)>) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (path, (blob, _)) in tree {
        for b in path.bytes().chain([0]).chain(blob.bytes()) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}{:024x}", tree.len())
}

impl RepoContent {
    /// A tree by sha: one written through the Git data API, or a commit's.
    pub fn tree(&self, sha: &str) -> Option<&BTreeMap<String, (String, String)>> {
        self.trees.get(sha).or_else(|| {
            self.commits
                .values()
                .map(|c| &c.tree)
                .find(|t| tree_sha(t) == sha)
        })
    }

    /// A blob's content (base64) by sha: written through the Git data API, or in a commit.
    pub fn blob(&self, sha: &str) -> Option<&str> {
        self.blobs.get(sha).map(String::as_str).or_else(|| {
            self.commits
                .values()
                .flat_map(|c| c.tree.values())
                .find(|(b, _)| b == sha)
                .map(|(_, content)| content.as_str())
        })
    }

    /// The branch called `name`.
    pub fn branch(&self, name: &str) -> Option<&BranchRec> {
        self.branches.iter().find(|b| b.name == name)
    }

    /// The next issue/pull request number.
    pub fn next_number(&self) -> u64 {
        self.issues.iter().map(|i| i.number).max().unwrap_or(0) + 1
    }
}

/// The organization.
#[derive(Debug, Clone)]
pub struct OrgRec {
    /// Its account (login, id).
    pub login: String,
    /// Database id.
    pub id: u64,
    /// Members' logins.
    pub members: Vec<String>,
    /// Admins among them.
    pub admins: Vec<String>,
    /// Teams.
    pub teams: Vec<TeamRec>,
}

/// All data.
#[derive(Debug)]
pub struct World {
    seed: u64,
    /// Accounts.
    pub users: Vec<UserRec>,
    /// Repositories.
    pub repos: Vec<RepoRec>,
    /// The organization.
    pub org: OrgRec,
    user_by_login: HashMap<String, usize>,
    user_by_id: HashMap<u64, usize>,
    repo_by_name: HashMap<String, usize>,
    repo_by_old_name: HashMap<String, usize>,
    repo_by_id: HashMap<u64, usize>,
    contents: HashMap<u64, RepoContent>,
    next_id: u64,
    /// Actor and repository pools of the generated feed (`live_feed`): indices into `users`
    /// and `repos`.
    pub feed_users: Vec<usize>,
    /// See `feed_users`.
    pub feed_repos: Vec<usize>,
    /// The first this many organization repositories get connections deeper than one page
    /// (see [`SimConfig::deep_repos`]).
    deep_repos: usize,
    /// How much each generated repository holds.
    density: crate::config::Density,
}

/// Project numbers reserved per repository: an owner's projects are numbered
/// `ordinal × PROJECT_SLOTS + 1…`, unique per owner whatever order contents are generated in.
const PROJECT_SLOTS: u64 = 4;

/// Sizes of the deep connections of [`SimConfig::deep_repos`]: each beyond one page of 100.
pub mod deep {
    /// Comments on the deep issue.
    pub const COMMENTS: usize = 150;
    /// Commits of the deep pull request.
    pub const COMMITS: usize = 130;
    /// Items of the deep project.
    pub const PROJECT_ITEMS: usize = 120;
}

/// Where generated history starts: a fixed instant, so data does not depend on the wall clock.
pub fn history_anchor() -> Timestamp {
    Timestamp::from_second(1_767_225_600).expect("2026-01-01T00:00:00Z is representable")
}

const FIRST: &[&str] = &[
    "ana", "ben", "cleo", "dara", "eli", "fern", "gus", "hana", "ivo", "jun", "kai", "lena",
    "milo", "nia", "omar", "pia", "quin", "rosa", "sami", "tove", "uma", "vik", "wren", "xia",
    "yuri", "zoe",
];
const ADJ: &[&str] = &[
    "amber", "brisk", "calm", "dusty", "eager", "fuzzy", "gentle", "hollow", "icy", "jolly",
    "keen", "lunar", "mellow", "nimble", "opal", "proud", "quiet", "rapid", "silent", "tidy",
];
const NOUN: &[&str] = &[
    "anchor", "beacon", "cinder", "delta", "ember", "falcon", "garden", "harbor", "island",
    "journal", "kernel", "lantern", "meadow", "nebula", "orbit", "prism", "quarry", "river",
    "summit", "tundra", "vault", "willow",
];
const LANGS: &[&str] = &["Rust", "Go", "Python", "TypeScript", "Ruby", "Java", "C"];
const LABELS: &[&str] = &["bug", "enhancement", "docs", "good first issue", "question"];
const FILES: &[&str] = &[
    "src/main.rs",
    "src/lib.rs",
    "README.md",
    "Cargo.toml",
    "src/api.rs",
    "docs/guide.md",
    "tests/smoke.rs",
    ".github/workflows/ci.yml",
    "src/store.rs",
    "src/config.rs",
];

/// 40 hexadecimal characters.
pub fn random_sha(rng: &mut StdRng) -> String {
    format!(
        "{:016x}{:016x}{:08x}",
        rng.random::<u64>(),
        rng.random::<u64>(),
        rng.random::<u32>()
    )
}

fn pick<'a>(rng: &mut StdRng, list: &[&'a str]) -> &'a str {
    list[rng.random_range(0..list.len())]
}

fn at(secs: i64) -> Timestamp {
    history_anchor() + SignedDuration::from_secs(secs)
}

/// The fixture feed's three actors and three repositories (ids as in the reference corpus).
pub mod fixture {
    /// (id, login)
    pub const ACTORS: [(u64, &str); 3] = [
        (7_700_419, "octo-ana"),
        (7_700_420, "octo-ben"),
        (7_700_421, "octo-gone"),
    ];
    /// (id, owner, name)
    pub const REPOS: [(u64, &str, &str); 3] = [
        (880_001, "octo-ana", "kiln"),
        (880_002, "octo-ben", "loom"),
        (880_003, "octo-gone", "ember"),
    ];
}

impl World {
    /// Generates the world for a configuration.
    pub fn generate(config: &SimConfig) -> World {
        let mut rng = StdRng::seed_from_u64(config.seed);
        let mut w = World {
            seed: config.seed,
            users: Vec::new(),
            repos: Vec::new(),
            org: OrgRec {
                login: config.org.clone(),
                id: 0,
                members: Vec::new(),
                admins: Vec::new(),
                teams: Vec::new(),
            },
            user_by_login: HashMap::new(),
            user_by_id: HashMap::new(),
            repo_by_name: HashMap::new(),
            repo_by_old_name: HashMap::new(),
            repo_by_id: HashMap::new(),
            contents: HashMap::new(),
            next_id: 90_000_000,
            feed_users: Vec::new(),
            feed_repos: Vec::new(),
            deep_repos: config.deep_repos,
            density: config.density,
        };
        let org_id = 9_100_000 + rng.random_range(0..10_000u64);
        w.org.id = org_id;
        w.add_user(UserRec {
            id: org_id,
            login: config.org.clone(),
            name: Some(format!("{} Inc.", config.org)),
            is_org: true,
            created_at: at(-200 * 86_400),
            deleted: false,
        });

        // Token owners first, so their ids do not depend on the organization's size.
        let mut owners: Vec<String> = Vec::new();
        for t in &config.tokens {
            if let TokenOwner::User(login) = &t.owner
                && !owners.iter().any(|o| o.eq_ignore_ascii_case(login))
            {
                owners.push(login.clone());
            }
        }
        for login in &owners {
            if w.user(login).is_none() {
                let id = 1_000 + (w.users.len() as u64) * 17 + rng.random_range(0..10u64);
                w.add_user(UserRec {
                    id,
                    login: login.clone(),
                    name: None,
                    is_org: false,
                    created_at: at(-300 * 86_400),
                    deleted: false,
                });
            }
        }
        // Members: token owners plus generated people.
        let generated_members = (config.repos / 2 + 4).min(5_000);
        let mut members: Vec<String> = owners.clone();
        for i in 0..generated_members {
            let login = format!("{}-{}{}", pick(&mut rng, FIRST), pick(&mut rng, NOUN), i);
            let id = 2_000_000 + (i as u64) * 13 + rng.random_range(0..13u64);
            w.add_user(UserRec {
                id,
                login: login.clone(),
                name: Some(format!(
                    "{} {}",
                    pick(&mut rng, FIRST),
                    pick(&mut rng, NOUN)
                )),
                is_org: false,
                created_at: at(-(rng.random_range(30..900i64)) * 86_400),
                deleted: false,
            });
            members.push(login);
        }
        w.org.admins = members.iter().take(2).cloned().collect();
        let team_count = members.len() / 8 + 1;
        for t in 0..team_count {
            let name = format!("{} {}", pick(&mut rng, ADJ), pick(&mut rng, NOUN));
            let slug = format!("{}-{t}", name.replace(' ', "-"));
            let size = rng.random_range(1..=members.len().clamp(1, 10));
            let mut team_members = Vec::new();
            for _ in 0..size {
                let m = members[rng.random_range(0..members.len())].clone();
                if !team_members.contains(&m) {
                    team_members.push(m);
                }
            }
            w.org.teams.push(TeamRec {
                id: 3_000_000 + t as u64 * 7,
                name,
                slug,
                description: "Generated team".to_owned(),
                members: team_members,
            });
        }
        w.org.members = members;

        for i in 0..config.repos {
            let name = format!("{}-{}-{i}", pick(&mut rng, ADJ), pick(&mut rng, NOUN));
            let id = 500_000_000 + (i as u64) * 11 + rng.random_range(0..11u64);
            let created = -(rng.random_range(10..700i64)) * 86_400;
            let mut rec = RepoRec {
                id,
                owner: config.org.clone(),
                name: name.clone(),
                previous_names: Vec::new(),
                searchable_by_old_name: false,
                deleted: false,
                private: rng.random_bool(0.2),
                description: Some(format!("The {} service", name.replace('-', " "))),
                language: Some(pick(&mut rng, LANGS).to_owned()),
                default_branch: "main".to_owned(),
                stars: rng.random_range(0..500),
                created_at: at(created),
                updated_at: at(created + rng.random_range(0..(-created).max(1))),
                generated: true,
                auto_init: false,
            };
            // Every seventh repository was renamed once: the old name answers 301.
            if i % 7 == 3 {
                rec.previous_names
                    .push(format!("{}/old-{}", config.org, name));
            }
            w.add_repo(rec);
        }

        w.add_fixture(config.scenario);
        if config.scenario == Scenario::LiveFeed {
            w.add_feed_pool(&mut rng, config.feed_pool);
        }
        w
    }

    fn add_fixture(&mut self, scenario: Scenario) {
        use Scenario as S;
        let actor_gone = !matches!(scenario, S::SearchComplete | S::SearchIncompleteResults);
        for (i, (id, login)) in fixture::ACTORS.iter().enumerate() {
            self.add_user(UserRec {
                id: *id,
                login: (*login).to_owned(),
                name: None,
                is_org: false,
                created_at: at(-400 * 86_400),
                deleted: i == 2 && actor_gone,
            });
        }
        for (i, (id, owner, name)) in fixture::REPOS.iter().enumerate() {
            let mut rec = RepoRec {
                id: *id,
                owner: (*owner).to_owned(),
                name: (*name).to_owned(),
                previous_names: Vec::new(),
                searchable_by_old_name: false,
                deleted: false,
                private: false,
                description: Some(format!("{name}, a fixture repository")),
                language: Some("Rust".to_owned()),
                default_branch: "main".to_owned(),
                stars: 3,
                created_at: at(-100 * 86_400),
                updated_at: at(-86_400),
                generated: true,
                auto_init: false,
            };
            match (i, scenario) {
                (0, S::SearchRenamedRepository) => {
                    rec.previous_names.push(rec.full_name());
                    rec.name = "kiln-forge".to_owned();
                    rec.searchable_by_old_name = true;
                }
                (2, S::RedirectingRepository | S::HostileRedirect) => {
                    // Transferred to octo-ben before octo-gone's account was deleted.
                    rec.previous_names.push(rec.full_name());
                    rec.owner = "octo-ben".to_owned();
                }
                (2, S::SearchComplete | S::SearchIncompleteResults) => {}
                (2, _) => rec.deleted = true,
                _ => {}
            }
            self.add_repo(rec);
        }
    }

    fn add_feed_pool(&mut self, rng: &mut StdRng, pool: crate::config::FeedPool) {
        // Every `every`th entity (at offset `at`, as the original fixed pools had it).
        let nth = |i: u64, every: u64, at: u64| every > 0 && i % every == at % every;
        for i in 0..pool.users {
            let login = format!("{}{}-{}", pick(rng, FIRST), pick(rng, NOUN), i);
            let idx = self.add_user(UserRec {
                id: 40_000_000 + i * 31 + rng.random_range(0..31u64),
                login,
                name: None,
                is_org: false,
                created_at: at(-(rng.random_range(30..2000i64)) * 86_400),
                deleted: nth(i, pool.deleted_user_every, 5),
            });
            self.feed_users.push(idx);
        }
        for i in 0..pool.repos {
            let owner_idx = self.feed_users[rng.random_range(0..self.feed_users.len())];
            let owner = self.users[owner_idx].login.clone();
            let name = format!("{}-{}", pick(rng, ADJ), pick(rng, NOUN));
            let mut rec = RepoRec {
                id: 700_000_000 + i * 29 + rng.random_range(0..29u64),
                owner,
                name: format!("{name}-{i}"),
                previous_names: Vec::new(),
                searchable_by_old_name: false,
                deleted: nth(i, pool.deleted_repo_every, 4),
                private: false,
                description: None,
                language: Some(pick(rng, LANGS).to_owned()),
                default_branch: "main".to_owned(),
                stars: rng.random_range(0..50),
                created_at: at(-(rng.random_range(1..900i64)) * 86_400),
                updated_at: at(-86_400),
                generated: true,
                auto_init: false,
            };
            if nth(i, pool.renamed_repo_every, 6) {
                rec.previous_names.push(rec.full_name());
                rec.name = format!("{}-renamed", rec.name);
            }
            let idx = self.add_repo(rec);
            self.feed_repos.push(idx);
        }
    }

    /// Adds an account; returns its index.
    pub fn add_user(&mut self, u: UserRec) -> usize {
        let idx = self.users.len();
        self.user_by_login.insert(u.login.to_ascii_lowercase(), idx);
        self.user_by_id.insert(u.id, idx);
        self.users.push(u);
        idx
    }

    /// Adds a repository; returns its index.
    pub fn add_repo(&mut self, r: RepoRec) -> usize {
        let idx = self.repos.len();
        self.repo_by_name
            .insert(r.full_name().to_ascii_lowercase(), idx);
        for old in &r.previous_names {
            self.repo_by_old_name.insert(old.to_ascii_lowercase(), idx);
        }
        self.repo_by_id.insert(r.id, idx);
        self.repos.push(r);
        idx
    }

    /// A fresh database id.
    pub fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The account with this login (deleted ones included).
    pub fn user(&self, login: &str) -> Option<&UserRec> {
        self.user_by_login
            .get(&login.to_ascii_lowercase())
            .map(|&i| &self.users[i])
    }

    /// The account with this id.
    pub fn user_by_id(&self, id: u64) -> Option<&UserRec> {
        self.user_by_id.get(&id).map(|&i| &self.users[i])
    }

    /// The repository currently called `owner/name`.
    pub fn repo(&self, owner: &str, name: &str) -> Option<&RepoRec> {
        self.repo_by_name
            .get(&format!("{owner}/{name}").to_ascii_lowercase())
            .map(|&i| &self.repos[i])
    }

    /// The repository formerly called `owner/name`.
    pub fn renamed_repo(&self, owner: &str, name: &str) -> Option<&RepoRec> {
        self.repo_by_old_name
            .get(&format!("{owner}/{name}").to_ascii_lowercase())
            .map(|&i| &self.repos[i])
            .filter(|r| {
                !r.full_name()
                    .eq_ignore_ascii_case(&format!("{owner}/{name}"))
            })
    }

    /// The repository with this id.
    pub fn repo_by_id(&self, id: u64) -> Option<&RepoRec> {
        self.repo_by_id.get(&id).map(|&i| &self.repos[i])
    }

    /// The organization's repositories (not deleted), in creation order.
    pub fn org_repos(&self) -> Vec<&RepoRec> {
        self.repos
            .iter()
            .filter(|r| r.owner.eq_ignore_ascii_case(&self.org.login) && !r.deleted)
            .collect()
    }

    /// The organization's projects (v2) linked to none of its repositories: GitHub lists them
    /// only under the organization. Two, each with a few draft items; deterministic (no
    /// random draw, so the generated data is undisturbed), numbered past every repository's
    /// slots.
    pub fn unlinked_org_projects(&self) -> Vec<ProjectRec> {
        if self.org_repos().is_empty() {
            return Vec::new();
        }
        let base = self
            .org
            .id
            .wrapping_mul(1_000)
            .wrapping_add(970_000_000_000);
        let first_number = (self.repos.len() as u64 + 1) * PROJECT_SLOTS + 1;
        (0..2u64)
            .map(|p| ProjectRec {
                id: base + p * 100,
                number: first_number + p,
                title: format!("Roadmap {}", p + 1),
                closed: false,
                created_at: self
                    .org_repos()
                    .first()
                    .map_or(Timestamp::UNIX_EPOCH, |r| r.created_at),
                items: (1..=3u64)
                    .map(|k| ProjectItemRec {
                        id: base + p * 100 + k,
                        content: ProjectItemContent::Draft(format!("Idea {k}")),
                    })
                    .collect(),
            })
            .collect()
    }

    /// A repository's contents, generated on first use.
    pub fn content(&mut self, repo_id: u64) -> &mut RepoContent {
        if !self.contents.contains_key(&repo_id) {
            let mut content = match self.repo_by_id(repo_id) {
                Some(r) if r.generated => self.generate_content(r),
                Some(r) if r.auto_init => self.initial_content(r),
                _ => RepoContent::default(),
            };
            if let Some(r) = self.repo_by_id(repo_id).filter(|r| r.generated).cloned() {
                self.arrange_projects(&r, &mut content);
            }
            self.contents.insert(repo_id, content);
        }
        self.contents
            .get_mut(&repo_id)
            .expect("inserted just above")
    }

    /// Where a repository stands among its owner's repositories (creation order).
    fn ordinal_of_owner(&self, repo: &RepoRec) -> u64 {
        self.repos
            .iter()
            .filter(|r| r.owner.eq_ignore_ascii_case(&repo.owner))
            .position(|r| r.id == repo.id)
            .unwrap_or(0) as u64
    }

    /// Numbers a repository's projects per owner, puts issues on their boards, and for the
    /// first `deep_repos` organization repositories adds one issue, one pull request and
    /// one project each deeper than a page of 100. Deterministic: no random draw, so it
    /// does not disturb the generated data.
    fn arrange_projects(&self, repo: &RepoRec, c: &mut RepoContent) {
        let ordinal = self.ordinal_of_owner(repo);
        let is_org = repo.owner.eq_ignore_ascii_case(&self.org.login);
        if is_org && (ordinal as usize) < self.deep_repos {
            self.deepen(repo, c);
        }
        let numbers: Vec<u64> = c.issues.iter().map(|i| i.number).collect();
        let mut next_item = repo.id.wrapping_mul(1_000).wrapping_add(900_000_000_000);
        for (p, project) in c.projects.iter_mut().enumerate() {
            project.number = ordinal * PROJECT_SLOTS + p as u64 + 1;
            if !project.items.is_empty() {
                continue;
            }
            // Every other issue or pull request, alternating between projects.
            project.items = numbers
                .iter()
                .filter(|n| (**n as usize + p).is_multiple_of(2))
                .map(|n| {
                    next_item += 1;
                    ProjectItemRec {
                        id: next_item,
                        content: ProjectItemContent::Issue(*n),
                    }
                })
                .collect();
        }
    }

    fn deepen(&self, repo: &RepoRec, c: &mut RepoContent) {
        let people = self.people();
        let base = repo.created_at;
        let mut next_id = repo.id.wrapping_mul(1_000).wrapping_add(800_000_000_000);
        let mut fresh = || {
            next_id += 1;
            next_id
        };
        let issue = |number: u64, id: u64, title: &str| IssueRec {
            id,
            number,
            title: title.to_owned(),
            body: "Generated by headroom-sim (deep).".to_owned(),
            open: true,
            user: people[number as usize % people.len()].clone(),
            labels: Vec::new(),
            created_at: base + SignedDuration::from_secs(3_600),
            updated_at: base + SignedDuration::from_secs(7_200),
            comments: Vec::new(),
            pull: None,
        };
        // An issue with more comments than one page.
        let number = c.next_number();
        let mut long = issue(number, fresh(), "A long discussion");
        for k in 0..deep::COMMENTS {
            long.comments.push(CommentRec {
                id: fresh(),
                user: people[k % people.len()].clone(),
                body: format!("Comment {k}."),
                created_at: base + SignedDuration::from_secs(3_600 + 60 * k as i64),
            });
        }
        c.issues.push(long);
        // A pull request with more commits than one page.
        let number = c.next_number();
        let main = c
            .branches
            .first()
            .map(|b| b.sha.clone())
            .unwrap_or_default();
        let mut parent = main.clone();
        let mut commits = Vec::new();
        for k in 0..deep::COMMITS {
            let sha = format!("{:016x}{:016x}{:08x}", repo.id, number, k);
            c.commits.insert(
                sha.clone(),
                CommitRec {
                    sha: sha.clone(),
                    message: format!("Step {k} of #{number}"),
                    author: people[k % people.len()].clone(),
                    date: base + SignedDuration::from_secs(3_600 + 60 * k as i64),
                    parents: vec![parent.clone()],
                    files: vec![FileRec {
                        filename: format!("steps/{k}.md"),
                        status: "added",
                        additions: 1,
                        deletions: 0,
                        sha: format!("{:016x}{:016x}{:08x}", number, repo.id, k),
                    }],
                    tree: BTreeMap::new(),
                },
            );
            commits.push(sha.clone());
            parent = sha;
        }
        let head = format!("feature/long-{number}");
        c.branches.push(BranchRec {
            name: head.clone(),
            sha: parent.clone(),
            protection: None,
        });
        let mut pr_issue = issue(number, fresh(), "A long pull request");
        pr_issue.pull = Some(c.pulls.len());
        c.pulls.push(PullRec {
            id: fresh(),
            number,
            head,
            base: repo.default_branch.clone(),
            head_sha: parent,
            base_sha: main,
            commits,
            merged: false,
            merged_at: None,
            merge_sha: None,
        });
        c.issues.push(pr_issue);
        // A project with more items than one page: every issue and pull request of the
        // repository, then drafts up to the size.
        let mut items: Vec<ProjectItemRec> = c
            .issues
            .iter()
            .map(|i| ProjectItemRec {
                id: fresh(),
                content: ProjectItemContent::Issue(i.number),
            })
            .collect();
        while items.len() < deep::PROJECT_ITEMS {
            let k = items.len();
            items.push(ProjectItemRec {
                id: fresh(),
                content: ProjectItemContent::Draft(format!("Idea {k}")),
            });
        }
        c.projects.push(ProjectRec {
            id: fresh(),
            number: 0,
            title: "Everything board".to_owned(),
            closed: false,
            created_at: base + SignedDuration::from_secs(3_600),
            items,
        });
    }

    fn people(&self) -> Vec<String> {
        if self.org.members.is_empty() {
            vec![self.org.login.clone()]
        } else {
            self.org.members.clone()
        }
    }

    fn initial_content(&self, repo: &RepoRec) -> RepoContent {
        let mut rng = StdRng::seed_from_u64(self.seed ^ repo.id.wrapping_mul(0x9E37_79B9));
        let sha = random_sha(&mut rng);
        let readme = (
            "README.md".to_owned(),
            (random_sha(&mut rng), String::new()),
        );
        let commit = CommitRec {
            sha: sha.clone(),
            message: "Initial commit".to_owned(),
            author: repo.owner.clone(),
            date: repo.created_at,
            parents: Vec::new(),
            files: vec![FileRec {
                filename: "README.md".to_owned(),
                status: "added",
                additions: 1,
                deletions: 0,
                sha: readme.1.0.clone(),
            }],
            tree: BTreeMap::from([readme]),
        };
        let mut c = RepoContent::default();
        c.commits.insert(sha.clone(), commit);
        c.branches.push(BranchRec {
            name: repo.default_branch.clone(),
            sha,
            protection: None,
        });
        c
    }

    fn generate_content(&self, repo: &RepoRec) -> RepoContent {
        let mut rng =
            StdRng::seed_from_u64(self.seed ^ repo.id.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let people = self.people();
        let person = |rng: &mut StdRng| people[rng.random_range(0..people.len())].clone();
        let base = repo.created_at;
        let secs =
            |rng: &mut StdRng, max: i64| SignedDuration::from_secs(rng.random_range(0..max.max(1)));
        let mut c = RepoContent::default();
        let id_base = repo.id.wrapping_mul(1_000);
        let mut next_id = id_base;
        let mut fresh = || {
            next_id += 1;
            next_id
        };

        // Default branch history.
        let mut tree: BTreeMap<String, (String, String)> = BTreeMap::new();
        let mut parent: Option<String> = None;
        let history = rng.random_range(1..=5);
        let mut history_shas: Vec<String> = Vec::new();
        for h in 0..history {
            let sha = random_sha(&mut rng);
            history_shas.push(sha.clone());
            let mut files = Vec::new();
            for _ in 0..rng.random_range(1..=3) {
                let name = pick(&mut rng, FILES).to_owned();
                let blob = random_sha(&mut rng);
                let status = if tree.contains_key(&name) {
                    "modified"
                } else {
                    "added"
                };
                tree.insert(name.clone(), (blob.clone(), String::new()));
                if !files.iter().any(|f: &FileRec| f.filename == name) {
                    files.push(FileRec {
                        filename: name,
                        status,
                        additions: rng.random_range(1..80),
                        deletions: rng.random_range(0..30),
                        sha: blob,
                    });
                }
            }
            c.commits.insert(
                sha.clone(),
                CommitRec {
                    sha: sha.clone(),
                    message: format!(
                        "{} the {}",
                        pick(&mut rng, &["Add", "Fix", "Tidy", "Speed up"]),
                        pick(&mut rng, NOUN)
                    ),
                    author: person(&mut rng),
                    date: base + SignedDuration::from_secs(3_600 * (h as i64 + 1)),
                    parents: parent.iter().cloned().collect(),
                    files,
                    tree: tree.clone(),
                },
            );
            parent = Some(sha);
        }
        let main_sha = parent.expect("history has at least one commit");
        c.branches.push(BranchRec {
            name: repo.default_branch.clone(),
            sha: main_sha.clone(),
            protection: None,
        });

        // Issues and pull requests share one numbering. Issues are many and pull requests
        // few (each pull-request commit costs a REST request for its files), so that a
        // 125-repository organization costs what the reference measured (docs/SIMULATOR.md).
        let issue_count = rng.random_range(0..=self.density.max_issues);
        let pull_count = rng.random_range(0..=self.density.max_pulls);
        let items = issue_count + pull_count;
        let mut pull_numbers = std::collections::BTreeSet::new();
        while (pull_numbers.len() as u64) < pull_count {
            pull_numbers.insert(rng.random_range(1..=items));
        }
        for number in 1..=items {
            let created = base + secs(&mut rng, 200 * 86_400);
            let is_pull = pull_numbers.contains(&number);
            let mut issue = IssueRec {
                id: fresh(),
                number,
                title: format!(
                    "{} {} {}",
                    pick(&mut rng, &["Improve", "Broken", "Support", "Document"]),
                    pick(&mut rng, ADJ),
                    pick(&mut rng, NOUN)
                ),
                body: "Generated by headroom-sim.".to_owned(),
                open: rng.random_bool(0.6),
                user: person(&mut rng),
                labels: if rng.random_bool(0.5) {
                    vec![pick(&mut rng, LABELS).to_owned()]
                } else {
                    Vec::new()
                },
                created_at: created,
                updated_at: created + secs(&mut rng, 10 * 86_400),
                comments: Vec::new(),
                pull: None,
            };
            for _ in 0..rng.random_range(0..=self.density.max_comments) {
                issue.comments.push(CommentRec {
                    id: fresh(),
                    user: person(&mut rng),
                    body: format!(
                        "{} {}.",
                        pick(&mut rng, &["Agreed on", "Not sure about", "Looked at"]),
                        pick(&mut rng, NOUN)
                    ),
                    created_at: created + secs(&mut rng, 5 * 86_400),
                });
            }
            issue.comments.sort_by_key(|cm| cm.created_at);
            if is_pull {
                let head = format!("feature/{}-{number}", pick(&mut rng, NOUN));
                let mut commits = Vec::new();
                let mut parent = main_sha.clone();
                let mut ptree = tree.clone();
                for k in 0..rng.random_range(1..=4) {
                    let sha = random_sha(&mut rng);
                    let mut files = Vec::new();
                    for _ in 0..rng.random_range(1..=4) {
                        let name = pick(&mut rng, FILES).to_owned();
                        if files.iter().any(|f: &FileRec| f.filename == name) {
                            continue;
                        }
                        let blob = random_sha(&mut rng);
                        let status = if ptree.contains_key(&name) {
                            "modified"
                        } else {
                            "added"
                        };
                        ptree.insert(name.clone(), (blob.clone(), String::new()));
                        files.push(FileRec {
                            filename: name,
                            status,
                            additions: rng.random_range(1..60),
                            deletions: rng.random_range(0..20),
                            sha: blob,
                        });
                    }
                    c.commits.insert(
                        sha.clone(),
                        CommitRec {
                            sha: sha.clone(),
                            message: format!("Work on #{number} ({k})"),
                            author: issue.user.clone(),
                            date: created + SignedDuration::from_secs(600 * (k as i64 + 1)),
                            parents: vec![parent.clone()],
                            files,
                            tree: ptree.clone(),
                        },
                    );
                    commits.push(sha.clone());
                    parent = sha;
                }
                let merged = !issue.open && rng.random_bool(0.7);
                c.branches.push(BranchRec {
                    name: head.clone(),
                    sha: parent.clone(),
                    protection: None,
                });
                issue.pull = Some(c.pulls.len());
                c.pulls.push(PullRec {
                    id: fresh(),
                    number,
                    head,
                    base: repo.default_branch.clone(),
                    head_sha: parent,
                    base_sha: main_sha.clone(),
                    commits,
                    merged,
                    merged_at: merged.then_some(issue.updated_at),
                    merge_sha: merged.then(|| random_sha(&mut rng)),
                });
            }
            c.issues.push(issue);
        }

        // Branches nobody deleted: old work left at some commit of the default branch's
        // history (they cost GraphQL pages, no REST).
        for k in 0..rng.random_range(0..=self.density.max_stale_branches) {
            let sha = history_shas[rng.random_range(0..history_shas.len())].clone();
            c.branches.push(BranchRec {
                name: format!("{}-{}-{k}", pick(&mut rng, ADJ), pick(&mut rng, NOUN)),
                sha,
                protection: None,
            });
        }

        // Workflow runs with jobs (the jobs are also the commits' check runs), triggered by
        // pushes to the default branch's history and by pull requests' heads.
        let mut shas: Vec<(String, String)> = history_shas
            .iter()
            .map(|sha| (repo.default_branch.clone(), sha.clone()))
            .collect();
        for p in &c.pulls {
            shas.push((p.head.clone(), p.head_sha.clone()));
        }
        let runs = rng.random_range(0..=self.density.max_runs);
        for n in 0..runs {
            let (branch, sha) = shas[rng.random_range(0..shas.len())].clone();
            let created = base + SignedDuration::from_secs(86_400 * (n as i64 + 1));
            let mut jobs = Vec::new();
            for j in 0..rng.random_range(1..=3) {
                let started = created + SignedDuration::from_secs(5 + 60 * j as i64);
                jobs.push(JobRec {
                    id: fresh(),
                    name: pick(&mut rng, &["build", "test", "lint", "docs"]).to_owned(),
                    conclusion: if rng.random_bool(0.85) {
                        "success"
                    } else {
                        "failure"
                    },
                    started_at: started,
                    completed_at: started + secs(&mut rng, 600),
                });
            }
            let conclusion = if jobs.iter().all(|j| j.conclusion == "success") {
                "success"
            } else {
                "failure"
            };
            c.runs.push(RunRec {
                id: fresh(),
                name: "CI".to_owned(),
                run_number: n + 1,
                head_branch: branch,
                head_sha: sha,
                event: if rng.random_bool(0.5) {
                    "push"
                } else {
                    "pull_request"
                },
                conclusion,
                created_at: created,
                jobs,
            });
        }
        c.runs.reverse();

        for p in 0..rng.random_range(0..=2u64) {
            c.projects.push(ProjectRec {
                id: fresh(),
                number: p + 1,
                title: format!("{} roadmap", pick(&mut rng, ADJ)),
                closed: rng.random_bool(0.2),
                created_at: base + secs(&mut rng, 100 * 86_400),
                items: Vec::new(),
            });
        }
        c
    }
}

/// Changes a test makes between two syncs, as GitHub's users would: each one moves the
/// `updated_at` GitHub would move.
impl World {
    /// Adds a comment to issue `number` of a repository (its `updated_at` moves to `at`).
    /// Returns the comment's id, or `None` when there is no such issue.
    pub fn add_issue_comment(
        &mut self,
        repo_id: u64,
        number: u64,
        user: &str,
        body: &str,
        at: Timestamp,
    ) -> Option<u64> {
        let id = self.fresh_id();
        let issue = self
            .content(repo_id)
            .issues
            .iter_mut()
            .find(|i| i.number == number)?;
        issue.comments.push(CommentRec {
            id,
            user: user.to_owned(),
            body: body.to_owned(),
            created_at: at,
        });
        issue.updated_at = at;
        Some(id)
    }

    /// Retitles issue or pull request `number` (its `updated_at` moves to `at`).
    pub fn retitle_issue(&mut self, repo_id: u64, number: u64, title: &str, at: Timestamp) -> bool {
        let Some(issue) = self
            .content(repo_id)
            .issues
            .iter_mut()
            .find(|i| i.number == number)
        else {
            return false;
        };
        issue.title = title.to_owned();
        issue.updated_at = at;
        true
    }

    /// A new, completed workflow run on the default branch's head, with one job, created at
    /// `at`. Returns its id.
    pub fn add_workflow_run(&mut self, repo_id: u64, at: Timestamp) -> Option<u64> {
        let branch = self.repo_by_id(repo_id)?.default_branch.clone();
        let (run_id, job_id) = (self.fresh_id(), self.fresh_id());
        let c = self.content(repo_id);
        let sha = c.branch(&branch)?.sha.clone();
        let run_number = c.runs.iter().map(|r| r.run_number).max().unwrap_or(0) + 1;
        c.runs.insert(
            0,
            RunRec {
                id: run_id,
                name: "CI".to_owned(),
                run_number,
                head_branch: branch,
                head_sha: sha,
                event: "push",
                conclusion: "success",
                created_at: at,
                jobs: vec![JobRec {
                    id: job_id,
                    name: "test".to_owned(),
                    conclusion: "success",
                    started_at: at + SignedDuration::from_secs(5),
                    completed_at: at + SignedDuration::from_secs(65),
                }],
            },
        );
        Some(run_id)
    }
}
