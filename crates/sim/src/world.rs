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

mod content;
mod generate;

use generate::*;
pub use generate::{deep, fixture, history_anchor, random_sha};

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
impl World {
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
