//! The seeded group's records: groups, projects and everything a project holds, as plain
//! data. Authors are indices into [`GroupWorld::members`]; times are the simulator's clock.

use headroom_core::clock::Timestamp;

use super::limits::EndpointWindows;

/// A person who authors things in the group.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub(crate) id: u64,
    pub(crate) username: String,
    pub(crate) name: String,
    /// Whether a token of the simulator belongs to this person (only they can read).
    pub(crate) has_token: bool,
}

/// A group or subgroup.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    pub(crate) id: u64,
    pub(crate) name: String,
    pub(crate) path: String,
    pub(crate) full_path: String,
    /// Index of the parent group in [`GroupWorld::groups`].
    pub(crate) parent: Option<usize>,
    pub(crate) created_at: Timestamp,
    pub(crate) milestones: Vec<Milestone>,
}

/// A commit of a merge request.
#[derive(Debug, Clone)]
pub(crate) struct Commit {
    pub(crate) id: String,
    pub(crate) parent_id: Option<String>,
    pub(crate) title: String,
    pub(crate) author: usize,
    pub(crate) created_at: Timestamp,
}

/// A note (comment or system note).
#[derive(Debug, Clone)]
pub(crate) struct Note {
    pub(crate) id: u64,
    pub(crate) body: String,
    pub(crate) author: usize,
    pub(crate) system: bool,
    pub(crate) created_at: Timestamp,
    pub(crate) updated_at: Timestamp,
}

/// A merge request.
#[derive(Debug, Clone)]
pub(crate) struct MergeRequest {
    pub(crate) id: u64,
    pub(crate) iid: u64,
    pub(crate) title: String,
    /// `opened`, `closed` or `merged`.
    pub(crate) state: &'static str,
    pub(crate) author: usize,
    pub(crate) source_branch: String,
    pub(crate) target_branch: String,
    pub(crate) merge_commit_sha: Option<String>,
    pub(crate) created_at: Timestamp,
    pub(crate) updated_at: Timestamp,
    pub(crate) merged_at: Option<Timestamp>,
    pub(crate) closed_at: Option<Timestamp>,
    /// Who merged or closed it.
    pub(crate) finished_by: Option<usize>,
    /// Newest last.
    pub(crate) commits: Vec<Commit>,
    pub(crate) approved_by: Vec<usize>,
    pub(crate) notes: Vec<Note>,
    /// Index into the project's milestones.
    pub(crate) milestone: Option<usize>,
}

/// A job of a pipeline.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub(crate) id: u64,
    pub(crate) name: String,
    pub(crate) stage: &'static str,
    pub(crate) status: &'static str,
    pub(crate) created_at: Timestamp,
    pub(crate) started_at: Timestamp,
    pub(crate) finished_at: Timestamp,
}

/// A pipeline.
#[derive(Debug, Clone)]
pub(crate) struct Pipeline {
    pub(crate) id: u64,
    pub(crate) iid: u64,
    pub(crate) sha: String,
    pub(crate) reference: String,
    pub(crate) status: &'static str,
    pub(crate) source: &'static str,
    pub(crate) user: usize,
    pub(crate) created_at: Timestamp,
    pub(crate) updated_at: Timestamp,
    pub(crate) jobs: Vec<Job>,
}

/// An issue.
#[derive(Debug, Clone)]
pub(crate) struct Issue {
    pub(crate) id: u64,
    pub(crate) iid: u64,
    pub(crate) title: String,
    /// `opened` or `closed`.
    pub(crate) state: &'static str,
    pub(crate) author: usize,
    pub(crate) created_at: Timestamp,
    pub(crate) updated_at: Timestamp,
    pub(crate) closed_at: Option<Timestamp>,
    pub(crate) closed_by: Option<usize>,
    pub(crate) notes: Vec<Note>,
    pub(crate) milestone: Option<usize>,
    pub(crate) labels: Vec<&'static str>,
}

/// A milestone (of a project or a group).
#[derive(Debug, Clone)]
pub(crate) struct Milestone {
    pub(crate) id: u64,
    pub(crate) iid: u64,
    pub(crate) title: String,
    /// `active` or `closed`.
    pub(crate) state: &'static str,
    pub(crate) created_at: Timestamp,
    pub(crate) updated_at: Timestamp,
    pub(crate) start_date: Timestamp,
    pub(crate) due_date: Timestamp,
}

/// An environment deployments go to.
#[derive(Debug, Clone)]
pub(crate) struct Environment {
    pub(crate) id: u64,
    pub(crate) name: &'static str,
    pub(crate) created_at: Timestamp,
}

/// A deployment.
#[derive(Debug, Clone)]
pub(crate) struct Deployment {
    pub(crate) id: u64,
    pub(crate) iid: u64,
    pub(crate) reference: String,
    pub(crate) sha: String,
    pub(crate) status: &'static str,
    pub(crate) user: usize,
    /// Index into the project's environments.
    pub(crate) environment: usize,
    pub(crate) created_at: Timestamp,
    pub(crate) updated_at: Timestamp,
    pub(crate) finished_at: Option<Timestamp>,
}

/// A release.
#[derive(Debug, Clone)]
pub(crate) struct Release {
    pub(crate) tag_name: String,
    pub(crate) name: String,
    pub(crate) sha: String,
    pub(crate) author: usize,
    pub(crate) created_at: Timestamp,
    pub(crate) released_at: Timestamp,
    pub(crate) milestone: Option<usize>,
}

/// A feature flag.
#[derive(Debug, Clone)]
pub(crate) struct FeatureFlag {
    pub(crate) name: String,
    pub(crate) active: bool,
    pub(crate) strategy_id: u64,
    pub(crate) scope_id: u64,
    pub(crate) created_at: Timestamp,
    pub(crate) updated_at: Timestamp,
}

/// A project of the group.
#[derive(Debug, Clone)]
pub(crate) struct Project {
    pub(crate) id: u64,
    pub(crate) name: String,
    pub(crate) path: String,
    /// Index of its group.
    pub(crate) group: usize,
    pub(crate) created_at: Timestamp,
    /// Scenario: the feature flags API refuses with 403.
    pub(crate) flags_forbidden: bool,
    /// Scenario: deleted as soon as a listing has served it.
    pub(crate) deleted_after_listing: bool,
    /// Deleted: every read answers 404.
    pub(crate) deleted: bool,
    pub(crate) merge_requests: Vec<MergeRequest>,
    pub(crate) pipelines: Vec<Pipeline>,
    pub(crate) issues: Vec<Issue>,
    pub(crate) milestones: Vec<Milestone>,
    pub(crate) environments: Vec<Environment>,
    pub(crate) deployments: Vec<Deployment>,
    pub(crate) releases: Vec<Release>,
    pub(crate) feature_flags: Vec<FeatureFlag>,
}

impl Project {
    /// The latest change of anything in it.
    pub(crate) fn last_activity_at(&self) -> Timestamp {
        let mrs = self.merge_requests.iter().map(|m| m.updated_at);
        let issues = self.issues.iter().map(|i| i.updated_at);
        let pipelines = self.pipelines.iter().map(|p| p.updated_at);
        mrs.chain(issues)
            .chain(pipelines)
            .fold(self.created_at, Timestamp::max)
    }
}

/// Which id sequence a new record draws from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    Group,
    Project,
    MergeRequest,
    Note,
    Pipeline,
    Job,
    Issue,
    Milestone,
    Environment,
    Deployment,
    Strategy,
}

/// Each table's last id; tables start far apart so that ids never look alike by accident,
/// and projects far above those created through `POST /projects`.
#[derive(Debug, Clone)]
pub(crate) struct Ids([u64; 11]);

impl Default for Ids {
    fn default() -> Self {
        Ids([
            7_000_000,
            50_000_000,
            300_000_000,
            1_500_000_000,
            900_000_000,
            6_000_000_000,
            140_000_000,
            4_000_000,
            20_000_000,
            600_000_000,
            80_000,
        ])
    }
}

impl Ids {
    /// A fresh id of `kind`.
    pub(crate) fn next(&mut self, kind: Kind) -> u64 {
        let slot = &mut self.0[kind as usize];
        *slot += 1;
        *slot
    }
}

/// The seeded group and everything in it.
#[derive(Debug, Default)]
pub(crate) struct GroupWorld {
    /// See [`super::GitlabGroupSpec::stall_page_every`].
    pub(crate) stall_page_every: usize,
    /// See [`super::GitlabGroupSpec::max_offset`].
    pub(crate) max_offset: usize,
    /// The top group first, then subgroups, parents before children.
    pub(crate) groups: Vec<Group>,
    pub(crate) projects: Vec<Project>,
    pub(crate) members: Vec<Member>,
    pub(crate) ids: Ids,
}

impl GroupWorld {
    /// A group by numeric id or full path (case-insensitive).
    pub(crate) fn group_index(&self, id_or_path: &str) -> Option<usize> {
        match id_or_path.parse::<u64>() {
            Ok(id) => self.groups.iter().position(|g| g.id == id),
            Err(_) => self
                .groups
                .iter()
                .position(|g| g.full_path.eq_ignore_ascii_case(id_or_path)),
        }
    }

    /// A project by numeric id or `group/…/path` (deleted ones included).
    pub(crate) fn project_index(&self, id_or_path: &str) -> Option<usize> {
        match id_or_path.parse::<u64>() {
            Ok(id) => self.projects.iter().position(|p| p.id == id),
            Err(_) => self
                .projects
                .iter()
                .position(|p| self.project_full_path(p).eq_ignore_ascii_case(id_or_path)),
        }
    }

    /// `group/sub/path`.
    pub(crate) fn project_full_path(&self, p: &Project) -> String {
        format!("{}/{}", self.groups[p.group].full_path, p.path)
    }

    /// Whether group `g` is `ancestor` or below it.
    pub(crate) fn is_within(&self, g: usize, ancestor: usize) -> bool {
        let mut at = Some(g);
        while let Some(i) = at {
            if i == ancestor {
                return true;
            }
            at = self.groups[i].parent;
        }
        false
    }

    /// Whether `username` is a member (every token owner is; see `seed`).
    pub(crate) fn is_member(&self, username: &str) -> bool {
        self.members
            .iter()
            .any(|m| m.has_token && m.username.eq_ignore_ascii_case(username))
    }

    /// The member index of `username`, if a member.
    pub(crate) fn member_index(&self, username: &str) -> Option<usize> {
        self.members
            .iter()
            .position(|m| m.username.eq_ignore_ascii_case(username))
    }
}

/// The group side of the GitLab state: the seeded group, if any, and the per-endpoint
/// limits' windows (which also apply to projects created through the API).
#[derive(Debug, Default)]
pub(crate) struct GroupState {
    pub(crate) world: Option<GroupWorld>,
    pub(crate) windows: EndpointWindows,
    /// The `stall_page_every` scenario: pages served so far, and whether the answer being
    /// built is to stall.
    pub(crate) pages_served: u64,
    pub(crate) stall_this_answer: bool,
}
