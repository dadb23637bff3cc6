//! The simulated GitLab's data: projects in users' namespaces, each with its commits (a flat
//! file tree per commit), branches, protected branches and merge requests. It starts empty;
//! everything in it was created through the API (or by a test through
//! [`Simulator::with_gitlab`](crate::Simulator::with_gitlab)). A seeded group, when the
//! configuration asks for one, lives beside them ([`super::group`]).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use headroom_core::clock::Timestamp;
use sha2::{Digest, Sha256};

/// One file of a commit's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// The file's bytes.
    pub content: Vec<u8>,
    /// Whether the executable bit is set (mode 100755).
    pub executable: bool,
}

/// A commit's whole tree: path → file. Flat, as GitLab's commit actions address files.
pub type Tree = BTreeMap<String, FileEntry>;

/// A commit.
#[derive(Debug, Clone)]
pub struct Commit {
    /// 40 hexadecimal digits.
    pub id: String,
    /// Parents, first parent first.
    pub parent_ids: Vec<String>,
    /// The whole message.
    pub message: String,
    /// Author's username.
    pub author: String,
    /// Committed.
    pub created_at: Timestamp,
    /// The tree after this commit.
    pub tree: Tree,
}

impl Commit {
    /// The message's first line.
    pub fn title(&self) -> &str {
        self.message.lines().next().unwrap_or("")
    }

    /// The first 8 digits of the id.
    pub fn short_id(&self) -> &str {
        &self.id[..8.min(self.id.len())]
    }
}

/// A protected branch (an exact name; GitLab's wildcards are not modelled).
#[derive(Debug, Clone)]
pub struct ProtectedBranch {
    /// Database id.
    pub id: u64,
    /// The branch name.
    pub name: String,
    /// Who may push: 0 no one, 30 developers, 40 maintainers, 60 admins.
    pub push_access_level: u32,
    /// Who may merge, same levels.
    pub merge_access_level: u32,
    /// Whether force pushes are allowed.
    pub allow_force_push: bool,
}

/// The state of a merge request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MrState {
    /// Open.
    Opened,
    /// Closed without merging.
    Closed,
    /// Merged.
    Merged,
}

impl MrState {
    /// GitLab's name for it.
    pub fn name(self) -> &'static str {
        match self {
            MrState::Opened => "opened",
            MrState::Closed => "closed",
            MrState::Merged => "merged",
        }
    }
}

/// A merge request.
#[derive(Debug, Clone)]
pub struct MergeRequest {
    /// Database id (unique across projects).
    pub id: u64,
    /// Number within the project.
    pub iid: u64,
    /// Title (a `Draft:` prefix makes it a draft).
    pub title: String,
    /// Description.
    pub description: String,
    /// Source branch.
    pub source_branch: String,
    /// Target branch.
    pub target_branch: String,
    /// State.
    pub state: MrState,
    /// Author's username.
    pub author: String,
    /// The source branch's head when the merge request was last seen open (or merged).
    pub sha: String,
    /// The commit the merge created on the target.
    pub merge_commit_sha: Option<String>,
    /// The squash commit, when merged with `squash`.
    pub squash_commit_sha: Option<String>,
    /// Created.
    pub created_at: Timestamp,
    /// Merged.
    pub merged_at: Option<Timestamp>,
}

impl MergeRequest {
    /// Whether the title marks it a draft.
    pub fn is_draft(&self) -> bool {
        let t = self.title.trim_start();
        ["Draft:", "[Draft]", "(Draft)", "Draft -"]
            .iter()
            .any(|p| t.len() >= p.len() && t[..p.len()].eq_ignore_ascii_case(p))
    }
}

/// A project.
#[derive(Debug, Clone)]
pub struct Project {
    /// Database id.
    pub id: u64,
    /// Display name.
    pub name: String,
    /// URL path within the namespace.
    pub path: String,
    /// The owning user's username (the namespace's path).
    pub namespace: String,
    /// The namespace's id (the user's id).
    pub namespace_id: u64,
    /// `private`, `internal` or `public`.
    pub visibility: String,
    /// The default branch, once the repository has one.
    pub default_branch: Option<String>,
    /// The default branch's name to use for the first commit of an empty repository.
    pub initial_branch: String,
    /// Created.
    pub created_at: Timestamp,
    /// Every commit by id.
    pub commits: HashMap<String, Commit>,
    /// Branch → head commit id.
    pub branches: BTreeMap<String, String>,
    /// Protected branches.
    pub protected: Vec<ProtectedBranch>,
    /// Merge requests, by creation.
    pub merge_requests: Vec<MergeRequest>,
}

impl Project {
    /// `namespace/path`.
    pub fn path_with_namespace(&self) -> String {
        format!("{}/{}", self.namespace, self.path)
    }

    /// The protection of `branch`, if any.
    pub fn protection(&self, branch: &str) -> Option<&ProtectedBranch> {
        self.protected.iter().find(|p| p.name == branch)
    }

    /// The head commit of `branch`.
    pub fn head(&self, branch: &str) -> Option<&Commit> {
        self.branches
            .get(branch)
            .and_then(|id| self.commits.get(id))
    }

    /// A branch name, or a commit id (full or an unambiguous prefix of 7 or more), resolved
    /// to a commit id.
    pub fn resolve(&self, reference: &str) -> Option<String> {
        if let Some(id) = self.branches.get(reference) {
            return Some(id.clone());
        }
        if reference.len() >= 7 && reference.chars().all(|c| c.is_ascii_hexdigit()) {
            let mut hits = self.commits.keys().filter(|id| id.starts_with(reference));
            if let (Some(id), None) = (hits.next(), hits.next()) {
                return Some(id.clone());
            }
        }
        None
    }

    /// Every ancestor of `id`, itself included.
    pub fn ancestors(&self, id: &str) -> HashSet<String> {
        let mut seen = HashSet::new();
        let mut stack = vec![id.to_owned()];
        while let Some(c) = stack.pop() {
            if !seen.insert(c.clone()) {
                continue;
            }
            if let Some(commit) = self.commits.get(&c) {
                stack.extend(commit.parent_ids.iter().cloned());
            }
        }
        seen
    }

    /// The nearest common ancestor of two commits (breadth-first from `b`).
    pub fn merge_base(&self, a: &str, b: &str) -> Option<String> {
        let of_a = self.ancestors(a);
        let mut queue = VecDeque::from([b.to_owned()]);
        let mut seen = HashSet::new();
        while let Some(c) = queue.pop_front() {
            if of_a.contains(&c) {
                return Some(c);
            }
            if !seen.insert(c.clone()) {
                continue;
            }
            if let Some(commit) = self.commits.get(&c) {
                queue.extend(commit.parent_ids.iter().cloned());
            }
        }
        None
    }

    /// Whether `branch` holds commits `target` lacks.
    pub fn has_commits_beyond(&self, branch: &str, target: &str) -> bool {
        match (self.branches.get(branch), self.branches.get(target)) {
            (Some(s), Some(t)) => !self.ancestors(t).contains(s),
            _ => false,
        }
    }
}

/// Everything the simulated GitLab holds.
#[derive(Debug, Default)]
pub struct GitlabState {
    /// Projects, by creation.
    pub projects: Vec<Project>,
    pub(crate) last_project_id: u64,
    pub(crate) last_mr_id: u64,
    pub(crate) last_protected_id: u64,
    pub(crate) commit_seq: u64,
    pub(crate) quota: super::quota::GitlabQuota,
    /// The seeded group and the per-endpoint limits' windows.
    pub(crate) group: super::group::GroupState,
}

impl GitlabState {
    /// A project by numeric id or `namespace/path` (case-insensitive, as GitLab resolves paths).
    pub fn project(&self, id_or_path: &str) -> Option<&Project> {
        let i = self.project_index(id_or_path)?;
        self.projects.get(i)
    }

    /// The index of a project by numeric id or `namespace/path`.
    pub fn project_index(&self, id_or_path: &str) -> Option<usize> {
        match id_or_path.parse::<u64>() {
            Ok(id) => self.projects.iter().position(|p| p.id == id),
            Err(_) => self
                .projects
                .iter()
                .position(|p| p.path_with_namespace().eq_ignore_ascii_case(id_or_path)),
        }
    }

    /// A fresh project id.
    pub(crate) fn next_project_id(&mut self) -> u64 {
        self.last_project_id += 1;
        self.last_project_id
    }

    /// A fresh merge request id.
    pub(crate) fn next_mr_id(&mut self) -> u64 {
        self.last_mr_id += 1;
        self.last_mr_id
    }

    /// A fresh protected branch id.
    pub(crate) fn next_protected_id(&mut self) -> u64 {
        self.last_protected_id += 1;
        self.last_protected_id
    }

    /// A commit id that depends on its content and on a counter, so that two commits with the
    /// same content and parents still differ, as their timestamps would make them.
    pub(crate) fn commit_id(&mut self, parents: &[String], message: &str, tree: &Tree) -> String {
        self.commit_seq += 1;
        let mut h = Sha256::new();
        h.update(self.commit_seq.to_be_bytes());
        for p in parents {
            h.update(p.as_bytes());
            h.update([0]);
        }
        h.update(message.as_bytes());
        for (path, f) in tree {
            h.update(path.as_bytes());
            h.update([0, u8::from(f.executable)]);
            h.update(&f.content);
        }
        h.finalize()
            .iter()
            .take(20)
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}
